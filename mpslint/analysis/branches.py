"""Which branch of which statement each node runs in, and which assignments of a name can reach a use.

A *branching statement* runs one of several alternatives: an ``if``/``elif``/``else``
chain (taken as one statement with a branch per arm, so a 2,000-arm dispatch is
as shallow as a two-arm one), a ``try`` (its body, or a handler), a loop (its
body, or nothing). ``region(node)`` is the innermost (statement, branch) a node
runs in; regions reset at function boundaries, where a name's scope does.

``reaching`` answers the question name resolution needs: of a name's
assignments before a use, which can hold there. The latest one, unless it is in
a branch the use is not in: a branch that excludes the use (the ``if`` body for
a use in the ``else``) cannot hold; a branch of a statement that ended before
the use joins the other branches' last assignments, and what held before the
statement when a branch assigns nothing. Every answer is computed once.
"""

from __future__ import annotations

import ast
import bisect
from typing import Dict, List, Optional, Sequence, Tuple

from mpslint.analysis.tree import Tree

Region = Tuple[ast.AST, int]  # (branching statement, branch number)

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_TRIES = (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class Branches:
    """Per file: ``ctx.analysis(Branches)``."""

    def __init__(self, ctx) -> None:
        self.tree: Tree = ctx.tree
        self._chains: Dict[ast.AST, Tuple[ast.AST, int]] = {}  # if -> (the first if of its chain, its arm)
        self._ranges: Dict[ast.AST, Tuple[List[Tuple[int, int]], bool]] = {}
        self._joins: Dict[Tuple[int, ast.AST], Tuple[list, bool]] = {}

    # ------------------------------------------------------------ structure

    def region(self, node: ast.AST) -> Optional[Region]:
        """The innermost branch ``node`` runs in, within its function; None outside any."""
        return self.tree.inherited(("region", id(self)), node, self._region_step, None)

    def regions(self, node: ast.AST) -> List[Region]:
        """Every branch ``node`` runs in, innermost first (as deep as branching statements nest, not deeper)."""
        found = []
        region = self.region(node)
        while region is not None:
            found.append(region)
            region = self.region(region[0])
        return found

    def chain(self, node: ast.If) -> Tuple[ast.AST, int]:
        """(the first ``if`` of ``node``'s ``if``/``elif`` chain, which arm ``node`` is)."""
        known = self._chains.get(node)
        if known is not None:
            return known
        pending = []
        current: ast.AST = node
        while current not in self._chains:
            parent = self.tree.parent(current)
            if not _is_elif(self.tree, current, parent):
                self._chains[current] = (current, 0)
                break
            pending.append(current)
            current = parent  # type: ignore[assignment]
        top, arm = self._chains[current]
        for member in reversed(pending):
            arm += 1
            self._chains[member] = (top, arm)
        return self._chains[node]

    def branch_ranges(self, statement: ast.AST) -> Tuple[List[Tuple[int, int]], bool]:
        """The tree-index range of each branch of a branching statement, and whether it may run none of them."""
        known = self._ranges.get(statement)
        if known is not None:
            return known
        tree = self.tree
        lists: List[Sequence[ast.stmt]] = []
        falls_through = False
        if type(statement) is ast.If:
            arm: Optional[ast.If] = statement
            while arm is not None:
                lists.append(arm.body)
                orelse = arm.orelse
                if len(orelse) == 1 and _is_elif(tree, orelse[0], arm):
                    arm = orelse[0]  # type: ignore[assignment]
                else:
                    if orelse:
                        lists.append(orelse)
                    else:
                        falls_through = True
                    arm = None
        elif type(statement) in _LOOPS:
            lists.append(statement.body)  # type: ignore[attr-defined]
            falls_through = True
        else:
            lists.append(statement.body + statement.orelse)  # type: ignore[attr-defined]
            lists.extend(h.body for h in statement.handlers)  # type: ignore[attr-defined]
        ranges = [(tree.index(s[0]), tree.end(s[-1])) for s in lists if s]
        known = self._ranges[statement] = (ranges, falls_through)
        return known

    def _region_step(self, parent: ast.AST, child: ast.AST, above: Optional[Region]) -> Optional[Region]:
        cls = type(parent)
        if cls in _FUNCTIONS:
            return None
        tree = self.tree
        if cls is ast.If:
            place = tree.block_owner(child)
            if place is None or place[0] is not parent:
                return above  # the test, or the elif that continues the chain
            top, arm = self.chain(parent)
            if place[1] == "body":
                return top, arm
            if len(parent.orelse) == 1 and _is_elif(tree, child, parent):  # type: ignore[attr-defined]
                return above
            return top, arm + 1  # the final else
        if cls in _LOOPS:
            place = tree.block_owner(child)
            return (parent, 0) if place is not None and place[0] is parent and place[1] == "body" else above
        if cls in _TRIES:
            if type(child) is ast.ExceptHandler:
                return parent, 1 + parent.handlers.index(child)  # type: ignore[attr-defined]
            place = tree.block_owner(child)
            if place is not None and place[0] is parent and place[1] in ("body", "orelse"):
                return parent, 0
            return above
        return above

    # ------------------------------------------------------------- reaching

    def reaching(self, found: list, ends: List[int], use: ast.AST, skip=lambda statement: False) -> Optional[list]:
        """The bindings in ``found`` (sorted by ``ends``, each with a ``site``) that can hold at ``use``.

        ``skip(statement)``: a branching statement whose branches are not joined (its latest binding wins).
        None when no binding comes before the use.
        """
        return self._reaching(found, ends, self.tree.index(use), self.regions(use), 0, skip)

    def _reaching(self, found, ends, pos: int, at: List[Region], lo: int, skip) -> Optional[list]:
        tree = self.tree
        while True:
            first, last = bisect.bisect_left(ends, lo), bisect.bisect_left(ends, pos)
            if last <= first:
                return None
            latest = found[last - 1]
            site = latest.site
            statement = tree.statement_of(site) if site is not None and latest.how != "param" else None
            if statement is None:
                return [latest]
            where = dict(at)
            outer = None
            excluded: Optional[Region] = None
            for region in self.regions(statement):
                branch = where.get(region[0])
                if branch is not None:
                    if branch != region[1]:
                        excluded = (region[0], branch)
                    break
                outer = region[0]
            if excluded is not None:
                # Another branch of a statement the use is in: only the use's own branch, then what came before.
                # Each step moves ``pos`` down or ``lo`` up, so the loop ends.
                ranges = self.branch_ranges(excluded[0])[0]
                own_first = ranges[excluded[1]][0]
                other_first = ranges[region[1]][0]
                if own_first < other_first:
                    # The other branch lies inside the span of the use's own, as the handlers of a ``try``
                    # lie between its body and its ``else`` (one branch): look before that branch.
                    pos = other_first
                elif lo < own_first and bisect.bisect_left(ends, pos) > bisect.bisect_left(ends, own_first):
                    lo = own_first
                else:
                    pos, at = tree.index(excluded[0]), self.regions(excluded[0])
                continue
            if outer is None or skip(outer):
                return [latest]
            result, falls_through = self._join(found, ends, outer, skip)
            if falls_through:
                before = self._reaching(found, ends, tree.index(outer), self.regions(outer), lo, skip)
                if before:
                    result = result + before
            return result or [latest]

    def _join(self, found, ends, statement: ast.AST, skip) -> Tuple[list, bool]:
        """The last bindings of each branch of ``statement``, and whether some path through it binds nothing."""
        key = (id(found), statement)
        known = self._joins.get(key)
        if known is not None:
            return known
        ranges, falls_through = self.branch_ranges(statement)
        outside = self.regions(statement)
        result: list = []
        for number, (first, last) in enumerate(ranges):
            inner = self._reaching(found, ends, last + 1, [(statement, number)] + outside, first, skip)
            if inner is None:
                falls_through = True
            else:
                result.extend(b for b in inner if b not in result)
        known = self._joins[key] = (result, falls_through)
        return known


def _is_elif(tree: Tree, node: ast.AST, parent: Optional[ast.AST]) -> bool:
    """``node`` continues ``parent``'s chain as an ``elif`` (not an ``if`` nested in an ``else:``)."""
    if type(node) is not ast.If or type(parent) is not ast.If:
        return False
    orelse = parent.orelse  # type: ignore[attr-defined]
    return len(orelse) == 1 and orelse[0] is node and tree.text_at(node, 4) == "elif"
