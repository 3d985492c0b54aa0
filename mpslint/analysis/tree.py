"""Parents, source order and scopes for every syntax node of a module, from one walk.

Whole-file analyses (which loop is hot, what a name holds at a given use)
need the entire tree up front, and the engine feeds rules from the same walk:
``Tree.start`` lists the syntax nodes (everything but tokens, whitespace and
comments) in LibCST's visiting order. ``ctx.analysis(Tree)`` returns the
engine's tree.
"""

from __future__ import annotations

import dataclasses
from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Union

import libcst as cst

from mpslint import walk

Scope = Union[cst.Module, cst.FunctionDef, cst.Lambda]


class Tree:
    def __init__(self, ctx_or_module) -> None:
        module = ctx_or_module if isinstance(ctx_or_module, cst.Module) else ctx_or_module.module
        self.module = module
        # Pre-order index of every node, and the last index inside it: a node
        # B comes after node A ends when start[B] > end[A].
        self.start: Dict[cst.CSTNode, int] = {}
        self.functions: List[cst.FunctionDef] = []
        # Per pre-order index: the node's last index, parent and scope. Lists, not
        # dicts keyed by node: a LibCST node's ``__hash__`` is a Python call, and
        # filling four dicts per node cost more than the walk itself.
        self._ends: List[int] = []
        self._parents: List[Optional[cst.CSTNode]] = []
        self._scopes: List[Scope] = []
        _walk(self, module)
        self.end: Mapping[cst.CSTNode, int] = _ByIndex(self.start, self._ends)
        self.parents: Mapping[cst.CSTNode, Optional[cst.CSTNode]] = _ByIndex(self.start, self._parents)

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        index = self.start.get(node)
        return None if index is None else self._parents[index]

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        start, parents = self.start, self._parents
        index = start.get(node)
        parent = None if index is None else parents[index]
        while parent is not None:
            yield parent
            parent = parents[start[parent]]

    def scope_of(self, node: cst.CSTNode) -> Scope:
        """The function (or lambda, or the module) whose local names ``node`` sees."""
        index = self.start.get(node)
        # A node outside the walk has no recorded ancestors: the module's names.
        return self.module if index is None else self._scopes[index]

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        return self.start.get(outer, 0) <= self.start.get(inner, -1) <= self.end.get(outer, -1)


class _ByIndex(Mapping):
    """A read-only node -> value mapping over a list indexed by pre-order index."""

    def __init__(self, start: Dict[cst.CSTNode, int], values: list) -> None:
        self._start = start
        self._values = values

    def __getitem__(self, node: cst.CSTNode):
        return self._values[self._start[node]]

    def get(self, node, default=None):
        index = self._start.get(node)
        return default if index is None else self._values[index]

    def __contains__(self, node) -> bool:
        return node in self._start

    def __iter__(self):
        return iter(self._start)

    def __len__(self) -> int:
        return len(self._start)


# Fields that only hold tokens, whitespace and comments: no rule or analysis looks
# inside them, and skipping them leaves about a third of a module's nodes to walk.
# ``star_arg``/``star_kwarg`` (``*args``, ``**kw``) share a prefix but hold parameters.
_SKIP_PREFIXES = ("whitespace", "lpar", "rpar", "lbrace", "rbrace", "lbracket", "rbracket", "leading_lines",
                  "lines_after", "trailing_whitespace", "header", "footer", "newline", "comma", "equal", "colon",
                  "semicolon", "dot", "asynchronous", "operator", "indent")
_SKIP_EXACT = frozenset({"star"})
_FIELDS: Dict[type, Tuple[str, ...]] = {}


def syntax_fields(kind: type) -> Tuple[str, ...]:
    """``kind``'s fields that can hold syntax nodes, in LibCST's visiting order."""
    names = _FIELDS.get(kind)
    if names is None:
        ordered = walk.child_fields(kind)
        if ordered is None:  # a node class whose visiting code we cannot read: declaration order
            ordered = tuple(f.name for f in dataclasses.fields(kind))
        names = tuple(n for n in ordered if not (n.startswith(_SKIP_PREFIXES) or n in _SKIP_EXACT))
        _FIELDS[kind] = names
    return names


def _walk(tree: Tree, module: cst.Module) -> None:
    """Pre-order over the syntax nodes (not tokens or whitespace), without LibCST's visitor machinery.

    Node classes are tested by exact type (``walk.IS_NODE``): ``isinstance`` against
    LibCST's abstract bases goes through ``ABCMeta`` and used to dominate this walk.
    """
    start, functions = tree.start, tree.functions
    ends, parents, scopes = tree._ends, tree._parents, tree._scopes
    fields_of, node_types, is_node_type = _FIELDS, walk.IS_NODE, walk.is_node_type
    function_def, lambda_ = cst.FunctionDef, cst.Lambda
    # (node, parent, scope it sees) enters a node; (index, None, None) leaves the node
    # with that index, whose last descendant is the last node entered so far.
    stack: List[Tuple[object, Optional[cst.CSTNode], Optional[Scope]]] = [(module, None, module)]
    pop, push = stack.pop, stack.append
    while stack:
        node, parent, scope = pop()
        if scope is None:
            ends[node] = len(ends) - 1  # type: ignore[index]
            continue
        index = len(ends)
        start[node] = index
        ends.append(index)  # a leaf ends where it starts
        parents.append(parent)
        scopes.append(scope)
        cls = type(node)
        if cls is function_def:
            functions.append(node)
        fields = fields_of[cls] if cls in fields_of else syntax_fields(cls)
        children: List[cst.CSTNode] = []
        for name in fields:
            value = getattr(node, name)
            kind = type(value)
            if kind is tuple or kind is list:
                for item in value:
                    item_kind = type(item)
                    if node_types[item_kind] if item_kind in node_types else is_node_type(item_kind):
                        children.append(item)
            elif node_types[kind] if kind in node_types else is_node_type(kind):
                children.append(value)
        if not children:
            continue
        push((index, None, None))
        inner = node if (cls is function_def or cls is lambda_) else scope
        for child in reversed(children):
            push((child, node, inner))
