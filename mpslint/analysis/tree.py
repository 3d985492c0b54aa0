"""Parents, source order and scopes for every node of a module, from one walk.

The engine only knows a node's parents once the traversal has reached it;
whole-file analyses (which loop is hot, what a name holds at a given use)
need the entire tree up front. ``ctx.analysis(Tree)`` walks the module once
and is shared by them.
"""

from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Union

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
        walker = _Walker(self)
        module.visit(walker)

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


class _Walker(cst.CSTVisitor):
    def __init__(self, tree: Tree) -> None:
        super().__init__()
        self.tree = tree
        self.stack: List[cst.CSTNode] = []
        self.counter = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.tree.parents[node] = self.stack[-1]
        self.tree.start[node] = self.counter
        self.counter += 1
        self.stack.append(node)
        if isinstance(node, cst.FunctionDef):
            self.tree.functions.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.tree.end[original_node] = self.counter - 1
        self.stack.pop()
