"""A fix as edits anchored on nodes, turned into text edits by the engine.

An anchor is an ``ast`` node (its range is ``ast``'s), a LibCST node (its range
is LibCST's, from ``FixContext``), or a (row, 0-based column) point.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional, Tuple, Union

from mpslint.diagnostic import Applicability

if TYPE_CHECKING:
    import libcst as cst

    from mpslint.fixes.context import FixContext

Anchor = Union[ast.AST, "cst.CSTNode", Tuple[int, int]]


@dataclass(frozen=True)
class NodeEdit:
    """An edit anchored on nodes; resolved to a text ``Edit`` by the engine.

    ``start``/``end`` are (anchor, side) with side ``"start"`` or ``"end"`` of the
    anchor's range, or ``"line_after"``: the first column of the line after the
    anchor ends (for inserting whole statements). A point anchor is its own range.
    """

    content: Union[str, "cst.CSTNode"]
    start: Tuple[Anchor, str]
    end: Tuple[Anchor, str]


def replace(node: Anchor, new: Union[str, "cst.CSTNode"]) -> NodeEdit:
    return NodeEdit(new, (node, "start"), (node, "end"))


def replace_span(first: Anchor, last: Anchor, new: Union[str, "cst.CSTNode"]) -> NodeEdit:
    return NodeEdit(new, (first, "start"), (last, "end"))


def delete_span(first: Anchor, last: Anchor) -> NodeEdit:
    return NodeEdit("", (first, "start"), (last, "end"))


def insert_before(node: Anchor, text: str) -> NodeEdit:
    return NodeEdit(text, (node, "start"), (node, "start"))


def insert_after(node: Anchor, text: str) -> NodeEdit:
    return NodeEdit(text, (node, "end"), (node, "end"))


def insert_line_after(node: Anchor, text: str) -> NodeEdit:
    """Insert ``text`` (whole lines, ending in ``\\n``) after the line ``node`` ends on."""
    return NodeEdit(text, (node, "line_after"), (node, "line_after"))


@dataclass(frozen=True)
class FixSpec:
    message: str
    applicability: Applicability
    edits: Tuple[NodeEdit, ...]

    @classmethod
    def safe(cls, message: str, *edits: NodeEdit) -> "FixSpec":
        return cls(message, Applicability.SAFE, tuple(edits))

    @classmethod
    def unsafe(cls, message: str, *edits: NodeEdit) -> "FixSpec":
        return cls(message, Applicability.UNSAFE, tuple(edits))

    @classmethod
    def display_only(cls, message: str, *edits: NodeEdit) -> "FixSpec":
        return cls(message, Applicability.DISPLAY_ONLY, tuple(edits))


# A fix: ready-made (anchored on ast nodes), or built with LibCST once the rules are done.
FixLike = Union[FixSpec, Callable[["FixContext"], Optional[FixSpec]]]
