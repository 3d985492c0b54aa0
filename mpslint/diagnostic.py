"""The data a check produces: diagnostics, fixes and their text edits.

Everything here is plain, immutable and picklable: diagnostics cross process
boundaries (the worker pool) and are stored in the cache.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Tuple


class Applicability(str, enum.Enum):
    """How sure we are that a fix keeps the program's behaviour (Ruff's classes)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, order=True)
class Location:
    """A position in the decoded source: 1-based row, 1-based column (characters)."""

    row: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between ``start`` and ``end`` with ``content``.

    An insertion has ``start == end``. ``content`` uses ``\\n`` line breaks; the
    fixer converts them to the file's own line ending.
    """

    start: Location
    end: Location
    content: str
    # In a notebook: the cell this edit changes (its rows are counted from that cell's first line).
    cell: Optional[int] = None

    def sort_key(self) -> Tuple[int, Location, Location]:
        return (self.cell or 0, self.start, self.end)


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: Applicability
    edits: Tuple[Edit, ...]

    def is_applicable(self, unsafe: bool) -> bool:
        if self.applicability is Applicability.SAFE:
            return True
        return unsafe and self.applicability is Applicability.UNSAFE


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Optional[Fix] = None
    noqa_row: Optional[int] = None
    # Set on findings of the engine itself (MPS900): the rule that crashed.
    detail: Optional[str] = field(default=None, compare=False)
    # In a notebook: the 1-based cell number (every cell counts, as in Jupyter and Ruff); rows are then
    # counted from that cell's first line.
    cell: Optional[int] = None

    def sort_key(self) -> Tuple[str, int, int, int, str]:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code)

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability is not Applicability.DISPLAY_ONLY


IO_ERROR = "MPS001"


def io_error(filename: str, message: str) -> Diagnostic:
    """A path that could not be read or decoded, as a finding (Ruff's E902), so every report format shows it.

    It sits at 1:1: there is no text to point into.
    """
    start = Location(1, 1)
    return Diagnostic(IO_ERROR, message, filename, start, start)


def where(d: Diagnostic) -> str:
    """``path:row:col``, or ``path:cell N:row:col`` in a notebook (Ruff's form)."""
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{d.filename}:{cell}{d.location.row}:{d.location.column}"
