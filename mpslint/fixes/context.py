"""The file in LibCST, for writing fixes.

Rules decide on Python's ``ast``; fixes rewrite code with LibCST, which keeps
every comment, space and parenthesis around an edit. ``FixContext`` is built
once per file, only when some finding has a fix: it parses the file with
LibCST, records every node's source range (the same range ``ast`` gives the
same node), and finds the LibCST node of an ``ast`` node by that range and its
kind.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Tuple

import libcst as cst

from mpslint.fixes.ranges import Range, node_ranges
from mpslint.fixes.walk import syntax_children

# LibCST classes that can stand for an ast class at the same range.
_KINDS: Dict[type, Tuple[type, ...]] = {
    ast.Constant: (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float, cst.Imaginary, cst.Name, cst.Ellipsis),
    ast.JoinedStr: (cst.FormattedString, cst.ConcatenatedString),
    ast.BinOp: (cst.BinaryOperation,),
    ast.BoolOp: (cst.BooleanOperation,),
    ast.UnaryOp: (cst.UnaryOperation,),
    ast.Compare: (cst.Comparison,),
    ast.Starred: (cst.StarredElement, cst.Arg),
    ast.AsyncFunctionDef: (cst.FunctionDef,),
    ast.AsyncFor: (cst.For,),
    ast.AsyncWith: (cst.With,),
    ast.alias: (cst.ImportAlias,),
    ast.keyword: (cst.Arg,),
    ast.ExceptHandler: (cst.ExceptHandler,),
}


class FixContext:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self.module: cst.Module = cst.parse_module(ctx.source)
        self.ranges: Dict[cst.CSTNode, Range] = node_ranges(self.module, everything=True)
        self._by_range: Dict[Range, List[cst.CSTNode]] = {}
        for node, rng in self.ranges.items():
            self._by_range.setdefault(rng, []).append(node)
        self._parent_map: Optional[Dict[cst.CSTNode, cst.CSTNode]] = None

    @property
    def settings(self):
        return self.ctx.settings

    def node(self, node: ast.AST, kind: Optional[type] = None) -> Optional[cst.CSTNode]:
        """The LibCST node for ``node`` (of class ``kind`` when given), or None."""
        tree = self.tree
        try:
            key = (tree.start(node), tree.stop(node))
        except AttributeError:  # a node without a position (an alias on Python 3.9)
            return None
        wanted = (kind,) if kind is not None else _KINDS.get(type(node)) or (getattr(cst, type(node).__name__, None),)
        for candidate in self._by_range.get(key, ()):
            if type(candidate) in wanted:
                return candidate
        if type(node) is ast.Tuple:
            # ast counts a tuple's parentheses in its range, LibCST (as for any expression) does not:
            # its range runs from the first element to the last (or its trailing comma); `()` is empty.
            first = tree.start(node.elts[0]) if node.elts else (key[0][0], key[0][1] + 1)
            for candidate, rng in self._tuples():
                if rng[0] == first and rng[1] <= key[1]:
                    return candidate
        return None

    def _tuples(self):
        tuples = self.__dict__.get("_tuple_ranges")
        if tuples is None:
            tuples = self.__dict__["_tuple_ranges"] = [(n, r) for n, r in self.ranges.items() if type(n) is cst.Tuple]
        return tuples

    @property
    def _parents(self) -> Dict[cst.CSTNode, cst.CSTNode]:
        if self._parent_map is None:
            parents: Dict[cst.CSTNode, cst.CSTNode] = {}
            stack: List[cst.CSTNode] = [self.module]
            while stack:
                node = stack.pop()
                for child in syntax_children(node):
                    parents[child] = node
                    stack.append(child)
            self._parent_map = parents
        return self._parent_map

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parents = self._parents
        parent = parents.get(node)
        while parent is not None:
            yield parent
            parent = parents.get(parent)

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def code(self, node: ast.AST) -> str:
        """The code of an ``ast`` node as LibCST writes it (its own parentheses included)."""
        found = self.node(node)
        return self.code_for(found) if found is not None else self.tree.text(node)

    @property
    def default_indent(self) -> str:
        return self.module.default_indent

    def indent_of(self, node: cst.CSTNode) -> str:
        """The indentation of the block ``node`` sits in."""
        indents: List[str] = []
        for parent in self.ancestors(node):
            if isinstance(parent, cst.IndentedBlock):
                indents.append(parent.indent if parent.indent is not None else self.module.default_indent)
        return "".join(reversed(indents))
