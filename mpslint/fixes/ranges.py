"""Source ranges of LibCST nodes, without LibCST's metadata machinery.

LibCST's ``PositionProvider`` regenerates the whole module's code and records
a range for every node through its metadata framework. Fixes need ranges to
find the LibCST node of an ``ast`` node and to place their edits, so this runs
the same code generation with the same range rules (``PositionProvider``'s
syntactic ranges, which are ``ast``'s ranges too) with cheaper bookkeeping,
and can stop as soon as every wanted node has been generated.
``tests/test_traversal.py`` compares it with ``PositionProvider``.
"""

from __future__ import annotations

import re
import sys
from typing import Dict, Iterable, List, Set, Tuple

import libcst as cst
from libcst._nodes.internal import CodegenState

_DEEP_RECURSION = 10_000

Point = Tuple[int, int]  # (line, column): 1-based line, 0-based column, like LibCST
Range = Tuple[Point, Point]

_NEWLINE = re.compile(r"\r\n?|\n")


class _Finished(Exception):
    """Every wanted node has its final range: the rest of the code need not be generated."""


class _Syntactic:
    """``with state.record_syntactic_position(node, start_node=, end_node=)``: a node's range without its whitespace."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: "_State", node, start_node, end_node) -> None:
        self.state = state
        self.node = node
        self.start_node = start_node
        self.end_node = end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:  # stopped early (or failed): the range is not complete
            return
        state = self.state
        ranges = state.ranges
        start = ranges[self.start_node][0] if self.start_node is not None else self.start
        end = ranges[self.end_node][1] if self.end_node is not None else (state.line, state.column)
        ranges[self.node] = (start, end)


class _State(CodegenState):
    def __init__(self, module: cst.Module, wanted: Set[cst.CSTNode]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.line = 1
        self.column = 0
        self.stack: List[Point] = []
        self.ranges: Dict[cst.CSTNode, Range] = {}
        self.wanted = wanted
        self.left = len(wanted)

    def add_indent_tokens(self) -> None:
        self.tokens.extend(self.indent_tokens)
        for token in self.indent_tokens:
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def _advance(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        if node not in self.ranges:  # a syntactic range recorded inside the node wins
            self.ranges[node] = (start, (self.line, self.column))
        if node in self.wanted:
            self.left -= 1
            if self.left <= 0:
                raise _Finished

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
        return _Syntactic(self, node, start_node, end_node)


def node_ranges(module: cst.Module, nodes: Iterable[cst.CSTNode] = (), *, everything: bool = False) -> Dict[cst.CSTNode, Range]:
    """Ranges of ``nodes`` (those in ``module``'s tree; others are absent), as ``PositionProvider`` gives them.

    With ``everything``, the ranges of every node of the module.
    """
    wanted = set(nodes)
    state = _State(module, wanted)
    if wanted or everything:
        # LibCST's code generation recurses once per nesting level, a few
        # frames each: code the parser accepted must not overflow here.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _DEEP_RECURSION))
        try:
            module._codegen(state)
        except _Finished:
            pass
        finally:
            sys.setrecursionlimit(limit)
    return state.ranges
