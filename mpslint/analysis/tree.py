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

from mpslint import walk

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
        # Each walked node's scope, recorded on the way down: ``scope_of`` is asked
        # for nearly every name an analysis looks at.
        self.scopes: Dict[cst.CSTNode, Scope] = {}
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
        # A node outside the walk has no recorded ancestors: the module's names.
        return self.scopes.get(node, self.module)

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
    """Pre-order over the syntax nodes (not tokens or whitespace), without LibCST's visitor machinery.

    Node classes are tested by exact type (``walk.IS_NODE``): ``isinstance`` against
    LibCST's abstract bases goes through ``ABCMeta`` and used to dominate this walk.
    """
    counter = 0
    parents, start, end, functions, scopes = tree.parents, tree.start, tree.end, tree.functions, tree.scopes
    fields_of, node_types, is_node_type = _FIELDS, walk.IS_NODE, walk.is_node_type
    function_def, lambda_ = cst.FunctionDef, cst.Lambda
    scopes[module] = module
    # (node, None) leaves ``node`` (records its end); (node, scope) enters it, ``scope``
    # being the scope its children see.
    stack: List[Tuple[cst.CSTNode, Optional[Scope]]] = [(module, module)]
    pop, push = stack.pop, stack.append
    while stack:
        node, scope = pop()
        if scope is None:
            end[node] = counter - 1
            continue
        start[node] = counter
        counter += 1
        cls = type(node)
        if cls is function_def:
            functions.append(node)
        fields = fields_of[cls] if cls in fields_of else _fields(cls)
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
            end[node] = start[node]  # a leaf ends where it starts
            continue
        push((node, None))
        inner = node if (cls is function_def or cls is lambda_) else scope
        for child in reversed(children):
            parents[child] = node
            scopes[child] = inner
            push((child, inner))
