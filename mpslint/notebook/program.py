"""A notebook as one program: its Python code cells in order, and positions mapped between the program and the cells.

The cells run one after the other in one namespace, so the engine checks
them as one module: a device chosen in cell 2 is the device in cell 7, and
the device picker is defined once. Each cell contributes its source (IPython
escapes replaced, same length: ``ipython``) and a line break, as in Ruff, so
a position in the program is a cell, a line of that cell and the same column.

A cell with a real syntax error is left out of the program (it is reported as
MPS000 in that cell) and the other cells are still checked.

Edits from the engine are mapped back to cells: an edit must stay inside one
cell and must not touch an IPython escape. A line inserted where one cell
ends and the next begins (the helper placed after the imports that end a
cell) goes to the end of the earlier cell: that is the code it follows.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

from mpslint.diagnostic import Diagnostic, Edit, Fix, Location
from mpslint.notebook.ipython import PythonCell, as_python
from mpslint.source import line_starts, location_of, offset_of

_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")  # how rule messages name another line of the file

# A cell-level edit: (cell number, start offset, end offset, content), offsets into the cell's source.
CellEdit = Tuple[int, int, int, str]


@dataclass
class ProgramCell:
    number: int
    source: str  # as in the notebook
    python: PythonCell
    offset: int = 0  # where it starts in the program

    @property
    def text(self) -> str:
        """What the cell contributes to the program."""
        return self.python.text + "\n"


class Program:
    def __init__(self, cells: Sequence[ProgramCell]) -> None:
        self.cells = list(cells)
        offset = 0
        for cell in self.cells:
            cell.offset = offset
            offset += len(cell.text)
        self.text = "".join(cell.text for cell in self.cells)
        self._offsets = [cell.offset for cell in self.cells]
        self._starts = line_starts(self.text)

    @classmethod
    def of(cls, sources: Sequence[Tuple[int, str]], *, parse: bool = True) -> Tuple["Program", List[Tuple[int, PythonCell]]]:
        """The program of ``(cell number, source)`` pairs, and the cells left out for a syntax error.

        With ``parse=False`` only cells with escape-like text are parsed alone; the
        program's own parse then tells whether any cell has a syntax error.
        """
        cells: List[ProgramCell] = []
        broken: List[Tuple[int, PythonCell]] = []
        for number, source in sources:
            python = as_python(source, parse=parse)
            if python.error is not None:
                broken.append((number, python))
            else:
                cells.append(ProgramCell(number, source, python))
        return cls(cells), broken

    def without(self, number: int) -> "Program":
        return Program([c for c in self.cells if c.number != number])

    # --- positions -------------------------------------------------------------

    def offset(self, location: Location) -> int:
        if location.row > len(self._starts):
            return len(self.text)
        return min(offset_of(self._starts, location.row, location.column), len(self.text))

    def cell_at(self, offset: int, *, end: bool = False) -> Optional[ProgramCell]:
        """The cell holding ``offset``; an end offset at a boundary belongs to the cell before it."""
        if not self.cells:
            return None
        if end:
            index = bisect.bisect_left(self._offsets, offset) - 1
        else:
            index = bisect.bisect_right(self._offsets, offset) - 1
        return self.cells[max(index, 0)]

    def in_cell(self, location: Location, *, end: bool = False) -> Tuple[Optional[ProgramCell], Location]:
        """A program location as (cell, location in the cell's source)."""
        offset = self.offset(location)
        cell = self.cell_at(offset, end=end)
        if cell is None:
            return None, location
        local = min(offset - cell.offset, len(cell.source))
        row, column = location_of(line_starts(cell.source), local)
        return cell, Location(row, column)

    def cell_edit(self, edit: Edit) -> Optional[CellEdit]:
        """The edit in one cell's source, or None if it spans cells or touches an IPython escape."""
        start, end = self.offset(edit.start), self.offset(edit.end)
        content = edit.content
        if start == end:
            cell = self.cell_at(start)
            before = self.cell_at(start, end=True)
            if before is not None and cell is not None and before is not cell and content.endswith("\n"):
                cell = before  # whole lines inserted where a cell ends: they follow that cell's code
            elif cell is not None and start - cell.offset == len(cell.text) and not content.endswith("\n"):
                return None
        else:
            cell = self.cell_at(start)
            if cell is None or self.cell_at(end, end=True) is not cell:
                return None
        if cell is None:
            return None
        local_start, local_end = start - cell.offset, end - cell.offset
        if cell.python.touches_escape(local_start, min(local_end, len(cell.source))):
            return None
        return _on_source(cell, local_start, local_end, content)

    # --- diagnostics -----------------------------------------------------------

    def to_cells(self, diagnostic: Diagnostic) -> Diagnostic:
        """A diagnostic of the program, located in its cell (``cell`` set, rows counted from the cell's first line)."""
        cell, start = self.in_cell(diagnostic.location)
        if cell is None:
            return diagnostic
        end_cell, end = self.in_cell(diagnostic.end_location, end=True)
        if end_cell is not cell:
            last = line_starts(cell.source)
            end = Location(*location_of(last, len(cell.source)))
        noqa_row = None
        if diagnostic.noqa_row is not None:
            noqa_cell, noqa = self.in_cell(Location(diagnostic.noqa_row, 1))
            noqa_row = noqa.row if noqa_cell is cell else start.row
        fix = diagnostic.fix
        if fix is not None:
            fix = self.fix_in_cells(fix)
        message = self.message_in_cells(diagnostic.message)
        return replace(diagnostic, message=message, location=start, end_location=end, noqa_row=noqa_row, fix=fix,
                       cell=cell.number)

    def message_in_cells(self, message: str) -> str:
        """``line 195`` of the program, in a message, becomes ``cell 8, line 3``: nobody sees the program's lines."""

        def in_cell(match: "re.Match[str]") -> str:
            cell, location = self.in_cell(Location(int(match.group(1)), 1))
            return match.group(0) if cell is None else f"cell {cell.number}, line {location.row}"

        return _LINE_REFERENCE.sub(in_cell, message) if "line " in message else message

    def fix_in_cells(self, fix: Fix) -> Optional[Fix]:
        """The fix with its edits in cell coordinates (each edit names its cell), or None if it cannot be mapped."""
        edits = []
        sources = {cell.number: cell.source for cell in self.cells}
        for edit in fix.edits:
            mapped = self.cell_edit(edit)
            if mapped is None:
                return None
            number, start, end, content = mapped
            starts = line_starts(sources[number])
            edits.append(Edit(Location(*location_of(starts, start)), Location(*location_of(starts, end)), content, cell=number))
        edits.sort(key=Edit.sort_key)
        return replace(fix, edits=tuple(edits))


def _on_source(cell: ProgramCell, start: int, end: int, content: str) -> CellEdit:
    """An edit of the cell's program text (its source and the line break after it) as an edit of its source."""
    size = len(cell.source)
    if end <= size:
        return cell.number, start, end, content
    # The edit reaches the line break that joins this cell to the next: the source ends where the edited text
    # ends, less that line break.
    if start > size:  # lines inserted after this cell's code
        return cell.number, size, size, "\n" + content[:-1] if content.endswith("\n") else content
    if content.endswith("\n"):
        return cell.number, start, size, content[:-1]
    if not content and start > 0 and cell.source[start - 1] == "\n":
        return cell.number, start - 1, size, ""  # the deleted line was the last: its line break goes too
    return cell.number, start, size, content


def apply_cell_edits(sources: Dict[int, str], edits: Sequence[CellEdit], newline_of) -> Dict[int, str]:
    """New sources for the cells the edits touch (edits do not overlap)."""
    by_cell: Dict[int, List[CellEdit]] = {}
    for edit in edits:
        by_cell.setdefault(edit[0], []).append(edit)
    changed: Dict[int, str] = {}
    for number, cell_edits in by_cell.items():
        text = sources[number]
        newline = newline_of(text)
        pieces: List[str] = []
        cursor = 0
        for _, start, end, content in sorted(set(cell_edits), key=lambda e: (e[1], e[2])):
            if start < cursor:
                continue
            pieces.append(text[cursor:start])
            pieces.append(content.replace("\n", newline) if newline != "\n" else content)
            cursor = end
        pieces.append(text[cursor:])
        changed[number] = "".join(pieces)
    return changed
