"""One file as Python's ``ast`` sees it: every node in source order, with its parent, scope and block.

Rules and analyses read the file through this tree, built in one iterative
walk (deep nesting cannot hit the recursion limit):

- ``nodes`` lists every node in source pre-order (a node before its children,
  children left to right as they appear in the text), so "B comes after A
  ends" is ``index(B) > end(A)``; ``of_type(ast.Call)`` lists one class's
  nodes in that order;
- ``parent``, ``ancestors``, ``scope_of`` (the module, function or lambda
  whose names a node sees: a function's decorators and defaults count as
  inside it, as the rules have always treated them), ``block_of`` (the
  statement list a statement sits in, and where);
- ``inherited(...)``: a value that each node takes from its parent (the
  guards around it, the loop that runs it), computed once per node however
  many nodes ask, so that questions about ancestors stay linear in the size
  of the file;
- positions: ``ast`` counts columns in UTF-8 bytes, diagnostics in
  characters; ``start``/``end`` convert, line by line, only for the nodes asked.

Operator and expression-context singletons (``ast.Add``, ``ast.Load``) are not
nodes of the tree.
"""

from __future__ import annotations

import ast
import bisect
import re
import sys
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Type, TypeVar, Union

from mpslint.source import line_starts

Scope = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
Block = Tuple[ast.AST, str]  # the statement list ``getattr(owner, field)``

_SKIPPED = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop, ast.type_ignore)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")

T = TypeVar("T")


class Tree:
    def __init__(self, module: ast.Module, source: str) -> None:
        self.module = module
        self.source = source
        self.nodes: List[ast.AST] = []
        self._index: Dict[ast.AST, int] = {}
        self._ends: List[int] = []
        self._parents: List[Optional[ast.AST]] = []
        self._scopes: List[Scope] = []
        self._blocks: Dict[ast.AST, Tuple[ast.AST, str, int]] = {}  # statement -> (owner, field, position)
        self._types: Dict[type, List[ast.AST]] = {}
        self._inherited: Dict[object, List[object]] = {}
        self._line_starts: Optional[List[int]] = None
        _walk(self)
        if _ALIASES_UNPLACED:
            for statement in self.of_type(ast.Import, ast.ImportFrom):
                _place_aliases(self, statement)

    # ------------------------------------------------------------- structure

    def index(self, node: ast.AST) -> int:
        """The node's place in source pre-order (-1 for a node outside the tree)."""
        return self._index.get(node, -1)

    def end(self, node: ast.AST) -> int:
        """The index of the last node inside ``node`` (itself, for a leaf)."""
        index = self._index.get(node)
        return -1 if index is None else self._ends[index]

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        index = self._index.get(node)
        return None if index is None else self._parents[index]

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        parents, index = self._parents, self._index
        parent = self.parent(node)
        while parent is not None:
            yield parent
            parent = parents[index[parent]]

    def scope_of(self, node: ast.AST) -> Scope:
        index = self._index.get(node)
        return self.module if index is None else self._scopes[index]

    def contains(self, outer: ast.AST, inner: ast.AST) -> bool:
        first = self._index.get(outer)
        position = self._index.get(inner)
        return first is not None and position is not None and first <= position <= self._ends[first]

    def of_type(self, *classes: Type[ast.AST]) -> List[ast.AST]:
        """The nodes of these classes, in source order."""
        if len(classes) == 1:
            return self._types.get(classes[0], [])
        found = [node for cls in classes for node in self._types.get(cls, ())]
        found.sort(key=self._index.__getitem__)
        return found

    def block_of(self, statement: ast.AST) -> Optional[Tuple[List[ast.stmt], int]]:
        """The statement list ``statement`` is in, and its position there."""
        place = self._blocks.get(statement)
        if place is None:
            return None
        owner, field, position = place
        return getattr(owner, field), position

    def block_owner(self, statement: ast.AST) -> Optional[Block]:
        place = self._blocks.get(statement)
        return None if place is None else (place[0], place[1])

    def statement_of(self, node: ast.AST) -> Optional[ast.stmt]:
        """The innermost statement containing ``node`` (itself, for a statement)."""
        if isinstance(node, ast.stmt):
            return node
        return self.inherited("statement", node, _statement_step, None)

    def inherited(self, key: object, node: ast.AST, compute: Callable[[ast.AST, ast.AST, object], T], root: T) -> T:
        """A value each node derives from its parent's: ``compute(parent, child, parent_value)``.

        The module has ``root``. Values are memoized per (key, computation, node), so asking
        for every node of the file costs one step per node, whatever the depth.
        """
        # Two analyses that happen to pick the same key must not read each other's values: what one
        # rule found would then depend on which other rule asked first, so on the selection.
        key = (key, getattr(compute, "__code__", compute), id(getattr(compute, "__self__", None)), root)
        memo = self._inherited.get(key)
        if memo is None:
            memo = self._inherited[key] = [_UNSET] * len(self.nodes)
        index = self._index.get(node)
        if index is None:
            return root
        value = memo[index]
        if value is not _UNSET:
            return value  # type: ignore[return-value]
        chain = []
        parents, positions = self._parents, self._index
        while index is not None and memo[index] is _UNSET:
            chain.append(index)
            parent = parents[index]
            index = None if parent is None else positions[parent]
        value = root if index is None else memo[index]
        nodes = self.nodes
        for position in reversed(chain):
            child = nodes[position]
            parent = parents[position]
            value = root if parent is None else compute(parent, child, value)
            memo[position] = value
        return value  # type: ignore[return-value]

    # ------------------------------------------------------------- positions

    @property
    def line_starts(self) -> List[int]:
        if self._line_starts is None:
            self._line_starts = line_starts(self.source)
        return self._line_starts

    def line_text(self, row: int) -> str:
        starts = self.line_starts
        if row < 1 or row > len(starts):
            return ""
        end = starts[row] if row < len(starts) else len(self.source)
        return self.source[starts[row - 1]:end]

    def indentation(self, row: int) -> str:
        """The indentation of line ``row`` as Python counts it, to copy onto a new line of the same block.

        Python's tokenizer reads spaces, tabs and form feeds before a statement, and a form feed
        sets the column back to zero: only what follows the last one is the statement's indentation
        (``\\f    m = 1`` is indented four spaces; copying ``\\f    `` whole onto a new line is fine, but
        copying the spaces before a form feed, or stopping at it, would move the new line out of the block).
        """
        line = self.line_text(row)
        leading = line[: len(line) - len(line.lstrip(" \t\f"))]
        return leading[leading.rfind("\f") + 1:]

    def _column(self, row: int, byte_column: int) -> int:
        """A 0-based character column from ``ast``'s UTF-8 byte column."""
        line = self.line_text(row)
        if line.isascii():
            return byte_column
        return len(line.encode("utf-8")[:byte_column].decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> Tuple[int, int]:
        """(1-based row, 0-based character column) where ``node`` starts."""
        return node.lineno, self._column(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def stop(self, node: ast.AST) -> Tuple[int, int]:
        """(1-based row, 0-based character column) just after ``node`` ends."""
        return node.end_lineno, self._column(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def offset(self, point: Tuple[int, int]) -> int:
        return self.line_starts[point[0] - 1] + point[1]

    def text_at(self, node: ast.AST, length: int) -> str:
        """The first ``length`` characters of the source where ``node`` starts."""
        start = self.offset(self.start(node))
        return self.source[start:start + length]

    def text(self, node: ast.AST) -> str:
        """The source text of ``node`` (without parentheses around it)."""
        return self.source[self.offset(self.start(node)):self.offset(self.stop(node))]


_UNSET = object()


def _statement_step(parent: ast.AST, child: ast.AST, above):
    return child if isinstance(child, ast.stmt) else above

# Python 3.9's ast gives import aliases no position; the tree gives them one (Python 3.10's).
_ALIASES_UNPLACED = sys.version_info < (3, 10)
_ALIAS_PART = re.compile(r"[^\W\d]\w*(?:\s*\.\s*[^\W\d]\w*)*(?:\s+as\s+[^\W\d]\w*)?|\*")


def _place_aliases(tree: Tree, statement: ast.AST) -> None:
    """Find each alias of an import in its text, in order, after the ``import`` keyword."""
    start = tree.offset(tree.start(statement))
    text = tree.source[start:tree.offset(tree.stop(statement))]
    keyword = re.search(r"\bimport\b", text)
    if keyword is None:
        return
    position = keyword.end()
    for alias in statement.names:  # type: ignore[attr-defined]
        match = _ALIAS_PART.search(text, position)
        if match is None:
            return
        position = match.end()
        first = start + match.start()
        last = start + match.end()
        starts = tree.line_starts
        row = bisect.bisect_right(starts, first)
        end_row = bisect.bisect_right(starts, last)
        alias.lineno, alias.end_lineno = row, end_row
        # Columns in UTF-8 bytes, as ast counts them.
        alias.col_offset = len(tree.source[starts[row - 1]:first].encode("utf-8"))
        alias.end_col_offset = len(tree.source[starts[end_row - 1]:last].encode("utf-8"))


_NOT_NODES = frozenset({"identifier", "string", "constant", "int", "object", "expr_context", "boolop", "operator",
                        "unaryop", "cmpop", "type_ignore"})
_ASDL = re.compile(r"^\w+\((.*)\)$", re.DOTALL)


def _field_kinds(cls: type) -> Optional[List[Tuple[str, str]]]:
    """(field, "" | "*" | "?") for the fields of ``cls`` that hold nodes, read from its ASDL signature (its docstring)."""
    match = _ASDL.match((cls.__doc__ or "").strip())
    if match is None:
        return None
    kinds = []
    for part in match.group(1).split(","):
        part = part.strip()
        if not part:
            continue
        kind, _, name = part.rpartition(" ")
        if kind.rstrip("*?") in _NOT_NODES or name not in cls._fields:
            continue
        kinds.append((name, kind[-1] if kind[-1] in "*?" else ""))
    return kinds


def _compile_children(cls: type) -> Callable[[ast.AST], List[ast.AST]]:
    """A function returning ``cls``'s children in field order, generated from its ASDL signature."""
    kinds = _field_kinds(cls)
    if kinds is None:
        return _generic_children
    if not kinds:
        return _no_children
    lines = ["def children(n):", "    out = []"]
    for name, kind in kinds:
        if kind == "*":
            lines.append(f"    out.extend(n.{name})")
        elif kind == "?":
            lines.append(f"    v = n.{name}\n    if v is not None: out.append(v)")
        else:
            lines.append(f"    out.append(n.{name})")
    lines.append("    return out")
    namespace: Dict[str, object] = {}
    exec("\n".join(lines), namespace)  # noqa: S102 - code generated from ast's own field list
    return namespace["children"]  # type: ignore[return-value]


def _no_children(node: ast.AST) -> List[ast.AST]:
    return []


def _generic_children(node: ast.AST) -> List[ast.AST]:
    children: List[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if type(value) is list:
            children.extend(item for item in value if isinstance(item, ast.AST) and not isinstance(item, _SKIPPED))
        elif isinstance(value, ast.AST) and not isinstance(value, _SKIPPED):
            children.append(value)
    return children


def _block_fields(cls: type) -> Tuple[str, ...]:
    """The fields of ``cls`` that hold statement lists (``body``, ``orelse``, ...)."""
    kinds = _field_kinds(cls)
    if kinds is None:
        return tuple(f for f in _BLOCK_FIELDS if f in cls._fields)
    return tuple(name for name, kind in kinds if kind == "*" and name in _BLOCK_FIELDS and name != "cases")


_SPECS: Dict[type, Tuple[Callable[[ast.AST], List[ast.AST]], Tuple[str, ...]]] = {}


def _spec(cls: type) -> Tuple[Callable[[ast.AST], List[ast.AST]], Tuple[str, ...]]:
    spec = _SPECS.get(cls)
    if spec is None:
        spec = _SPECS[cls] = (_ORDER.get(cls) or _compile_children(cls), _block_fields(cls))
    return spec


def _present(*values) -> List[ast.AST]:
    found: List[ast.AST] = []
    for value in values:
        if type(value) is list:
            found.extend(v for v in value if v is not None)
        elif value is not None:
            found.append(value)
    return found


def _function_children(node) -> List[ast.AST]:
    return _present(node.decorator_list, getattr(node, "type_params", None), node.args, node.returns, node.body)


def _class_children(node: ast.ClassDef) -> List[ast.AST]:
    return _present(node.decorator_list, getattr(node, "type_params", None), node.bases, node.keywords, node.body)


def _arguments_children(node: ast.arguments) -> List[ast.AST]:
    positional = [*node.posonlyargs, *node.args]
    defaults = [None] * (len(positional) - len(node.defaults)) + list(node.defaults)
    found: List[ast.AST] = []
    for arg, default in zip(positional, defaults):
        found.append(arg)
        if default is not None:
            found.append(default)
    if node.vararg is not None:
        found.append(node.vararg)
    for arg, default in zip(node.kwonlyargs, node.kw_defaults):
        found.append(arg)
        if default is not None:
            found.append(default)
    if node.kwarg is not None:
        found.append(node.kwarg)
    return found


def _dict_children(node: ast.Dict) -> List[ast.AST]:
    found: List[ast.AST] = []
    for key, value in zip(node.keys, node.values):
        if key is not None:
            found.append(key)
        found.append(value)
    return found


def _call_children(node: ast.Call) -> List[ast.AST]:
    args, keywords = node.args, node.keywords
    if args and keywords and _position(args[-1]) > _position(keywords[0]):
        # `f(a=1, *rest)`: a starred argument after a keyword
        return [node.func, *sorted([*args, *keywords], key=_position)]
    return [node.func, *args, *keywords]


def _position(node: ast.AST) -> Tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _if_exp_children(node: ast.IfExp) -> List[ast.AST]:
    return [node.body, node.test, node.orelse]


_ORDER: Dict[type, Callable[[ast.AST], List[ast.AST]]] = {
    ast.FunctionDef: _function_children,
    ast.AsyncFunctionDef: _function_children,
    ast.ClassDef: _class_children,
    ast.arguments: _arguments_children,
    ast.Dict: _dict_children,
    ast.Call: _call_children,
    ast.IfExp: _if_exp_children,
}


def _walk(tree: Tree) -> None:
    nodes, index_of, ends, parents, scopes = tree.nodes, tree._index, tree._ends, tree._parents, tree._scopes
    types, blocks = tree._types, tree._blocks
    module = tree.module
    # (node, parent, scope) enters a node; (index, None, None) closes the node with that index.
    stack: List[Tuple[object, Optional[ast.AST], Optional[Scope]]] = [(module, None, module)]
    pop, push = stack.pop, stack.append
    specs = _SPECS
    append_node, append_end, append_parent, append_scope = nodes.append, ends.append, parents.append, scopes.append
    no_children, scope_types = _no_children, _SCOPE_TYPES
    while stack:
        node, parent, scope = pop()
        if scope is None:
            ends[node] = len(nodes) - 1  # type: ignore[index]
            continue
        index = len(nodes)
        append_node(node)  # type: ignore[arg-type]
        index_of[node] = index  # type: ignore[index]
        append_end(index)
        append_parent(parent)
        append_scope(scope)
        cls = type(node)
        bucket = types.get(cls)
        if bucket is None:
            types[cls] = [node]  # type: ignore[list-item]
        else:
            bucket.append(node)  # type: ignore[arg-type]
        spec = specs.get(cls) or _spec(cls)
        children_of, fields = spec
        if children_of is no_children:
            continue  # a name, a constant: most nodes are leaves
        for field in fields:
            for position, child in enumerate(getattr(node, field)):
                blocks[child] = (node, field, position)  # type: ignore[assignment]
        children = children_of(node)  # type: ignore[arg-type]
        if not children:
            continue
        push((index, None, None))
        inner = node if cls in scope_types else scope
        for child in reversed(children):
            push((child, node, inner))  # type: ignore[arg-type]


_SCOPE_TYPES = frozenset(_SCOPES)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node``, itself first, as ``ast.walk`` finds them (but depth first, in source order,
    and without the expression-context singletons): for a whole module or function, where ``ast.walk``'s
    generators cost several times the step itself."""
    stack = [node]
    pop, extend, specs = stack.pop, stack.extend, _SPECS
    while stack:
        current = pop()
        yield current
        cls = type(current)
        children = (specs.get(cls) or _spec(cls))[0](current)
        if children:
            extend(reversed(children))
