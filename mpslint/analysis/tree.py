"""Parents, source order and scopes for every node of a module, from one walk.

The engine only knows a node's parents once the traversal has reached it;
whole-file analyses (which loop is hot, what a name holds at a given use)
need the entire tree up front. ``ctx.analysis(Tree)`` walks the module once
and is shared by them.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Optional, Tuple, Union

import libcst as cst

Scope = Union[cst.Module, cst.FunctionDef, cst.Lambda]


class Tree:
    def __init__(self, ctx_or_module) -> None:
        module = ctx_or_module if isinstance(ctx_or_module, cst.Module) else ctx_or_module.module
        self.module = module
        self.parents: Dict[cst.CSTNode, cst.CSTNode] = {}
        # Pre-order index of every node, and the last index inside it: a node
        # B comes after node A ends when start[B] > end[A].
        self.start: Dict[cst.CSTNode, int] = {}
        self.end: Dict[cst.CSTNode, int] = {}
        self.functions: List[cst.FunctionDef] = []
        _walk(self, module)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def scope_of(self, node: cst.CSTNode) -> Scope:
        """The function (or lambda, or the module) whose local names ``node`` sees."""
        for parent in self.ancestors(node):
            if isinstance(parent, (cst.FunctionDef, cst.Lambda)):
                return parent
        return self.module

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        return self.start.get(outer, 0) <= self.start.get(inner, -1) <= self.end.get(outer, -1)


# Fields that only hold tokens and whitespace: never needed by an analysis.
_SKIP_PREFIXES = ("whitespace", "lpar", "rpar", "lbrace", "rbrace", "lbracket", "rbracket", "leading_lines",
                  "lines_after", "trailing_whitespace", "header", "footer", "newline", "comma", "equal", "colon",
                  "semicolon", "dot", "star", "asynchronous", "operator", "indent")
# Fields listed in source order where the dataclass order differs.
_ORDER = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
}
_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _fields(kind: type) -> Tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        if kind in _ORDER:
            names = _ORDER[kind]
        else:
            names = tuple(f.name for f in dataclasses.fields(kind) if not f.name.startswith(_SKIP_PREFIXES))
        _FIELDS[kind] = names
    return names


def _walk(tree: Tree, module: cst.Module) -> None:
    """Pre-order over the syntax nodes (not tokens or whitespace), without LibCST's visitor machinery."""
    counter = 0
    parents, start, end, functions = tree.parents, tree.start, tree.end, tree.functions
    stack: List[Tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            end[node] = counter - 1
            continue
        start[node] = counter
        counter += 1
        if type(node) is cst.FunctionDef:
            functions.append(node)
        stack.append((node, True))
        children: List[cst.CSTNode] = []
        for name in _fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif type(value) in (tuple, list):
                children.extend(v for v in value if isinstance(v, cst.CSTNode))
        for child in reversed(children):
            parents[child] = node
            stack.append((child, False))
