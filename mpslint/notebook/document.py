"""A notebook file as JSON text: its cells, where each cell's ``source`` sits in the text, and writing new sources back.

Why not nbformat's reader and writer: a fix must leave every byte outside the
changed ``source`` values as it was (indentation, key order, escapes, the
final newline, outputs), and nbformat's writer re-serializes the whole file
while its reader keeps no positions. So the file is read with the standard
library's JSON decoder, walking the top-level object and the cells array
ourselves to note the text span of each ``source`` value, and a fix replaces
exactly those spans. The format is described at
https://nbformat.readthedocs.io/en/latest/format_description.html.

What mpslint needs of a notebook, and checks (anything else in the file is
left alone, as Jupyter does with fields it does not know): a JSON object with
``"nbformat": 4``, a ``cells`` array of objects, each with a string
``cell_type`` and a ``source`` that is a string or an array of strings.
nbformat 4.0 to 4.5 share that shape. Notebooks of nbformat 3 and older
(``worksheets``) are refused with a hint to convert them, as Ruff does.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from mpslint.source import line_starts

SUFFIX = ".ipynb"
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class NotebookError(ValueError):
    """The file is not a notebook mpslint can read; ``row``/``column`` locate the problem in the JSON text."""

    def __init__(self, message: str, row: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.row = row
        self.column = column


@dataclass
class Cell:
    """One cell. ``number`` is its 1-based position among all cells, as Jupyter shows them and Ruff counts them."""

    number: int
    cell_type: str
    source: str
    # The ``source`` value in the file: its span, and the spans of its strings (one for a plain string).
    span: Tuple[int, int]
    parts: List[Tuple[int, int]]
    is_list: bool
    metadata: Dict[str, Any] = field(default_factory=dict)

    @property
    def is_code(self) -> bool:
        return self.cell_type == "code"

    @property
    def language(self) -> Optional[str]:
        """The cell's own language where an editor records one (VS Code's ``languageId``)."""
        vscode = self.metadata.get("vscode") if isinstance(self.metadata, dict) else None
        language = vscode.get("languageId") if isinstance(vscode, dict) else None
        return language if isinstance(language, str) else None


@dataclass
class Notebook:
    text: str
    cells: List[Cell]
    metadata: Dict[str, Any]
    nbformat_minor: Optional[int]

    @classmethod
    def parse(cls, text: str) -> "Notebook":
        return _Reader(text).notebook()

    @property
    def language(self) -> Optional[str]:
        """The kernel's language (``language_info.name``, else ``kernelspec.language``), lower case, if declared."""
        for key, inner in (("language_info", "name"), ("kernelspec", "language")):
            table = self.metadata.get(key)
            value = table.get(inner) if isinstance(table, dict) else None
            if isinstance(value, str) and value:
                return value.lower()
        return None

    @property
    def is_python(self) -> bool:
        return self.language in (None, "python", "python3", "ipython", "ipython3")

    def with_sources(self, sources: Dict[int, str]) -> str:
        """The file's text with the ``source`` of the cells numbered in ``sources`` replaced, every other byte kept."""
        style = _Style.of(self.text)
        pieces: List[str] = []
        cursor = 0
        for cell in self.cells:
            if cell.number not in sources or sources[cell.number] == cell.source:
                continue
            start, end = cell.span
            pieces.append(self.text[cursor:start])
            pieces.append(style.source_value(self.text, cell, sources[cell.number]))
            cursor = end
        pieces.append(self.text[cursor:])
        return "".join(pieces)

    def file_position(self, cell_number: int, row: int, column: int) -> Tuple[int, int]:
        """The (row, column) in the JSON text of a 1-based (row, column) in a cell's source.

        Used where a report must point into the file itself (SARIF, GitHub
        annotations, JUnit): the line of the ``source`` array holding that line
        of code, and the column of that character inside the JSON string.
        """
        cell = self.cells[cell_number - 1]
        starts = line_starts(cell.source)
        row = min(max(row, 1), len(starts))
        offset = min(starts[row - 1] + max(column, 1) - 1, len(cell.source))
        raw = _raw_offset(self.text, cell, offset)
        file_starts = self._file_starts()
        file_row = bisect.bisect_right(file_starts, raw)
        return file_row, raw - file_starts[file_row - 1] + 1

    def _file_starts(self) -> List[int]:
        starts = getattr(self, "_starts", None)
        if starts is None:
            starts = self._starts = line_starts(self.text)
        return starts


def _raw_offset(text: str, cell: Cell, offset: int) -> int:
    """The offset in the file of the character at ``offset`` in the cell's decoded source."""
    remaining = offset
    for start, end in cell.parts:
        length = len(json.loads(text[start:end]))
        if remaining < length or (start, end) == cell.parts[-1]:
            return _walk_string(text, start, min(remaining, length))
        remaining -= length
    return cell.span[0]


def _walk_string(text: str, start: int, count: int) -> int:
    """The raw offset of the ``count``-th decoded character of the JSON string literal at ``start``."""
    i = start + 1  # past the opening quote
    for _ in range(count):
        if text[i] != "\\":
            i += 1
        elif text[i + 1] != "u":
            i += 2
        elif 0xD800 <= int(text[i + 2:i + 6], 16) < 0xDC00 and text[i + 6:i + 8] == "\\u":
            i += 12  # a surrogate pair is one character
        else:
            i += 6
    return i


class _Reader:
    """Decodes the file, noting where each cell's ``source`` is; values mpslint does not need are decoded whole."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def notebook(self) -> Notebook:
        top: Dict[str, Any] = {}
        cells: Optional[List[Cell]] = None
        self._expect("{", "a notebook is a JSON object")
        for key in self._members():
            if key == "cells" and self._peek() == "[":
                cells = self._cells()
                top[key] = cells
            else:
                top[key] = self._value()
        self._space()
        if self.position != len(self.text):
            raise self._error("Extra data after the notebook's JSON object")
        version = top.get("nbformat")
        if version != 4:
            if isinstance(version, int) and not isinstance(version, bool) and version < 4:
                raise NotebookError(
                    f"nbformat {version} notebooks are not supported (mpslint reads nbformat 4); "
                    "convert it with `jupyter nbconvert --to notebook --inplace` or open and save it in Jupyter"
                )
            raise NotebookError(f"not a Jupyter notebook: expected \"nbformat\": 4, found {json.dumps(version)}")
        if cells is None:
            raise NotebookError("not a Jupyter notebook: no `cells` array")
        metadata = top.get("metadata")
        minor = top.get("nbformat_minor")
        return Notebook(self.text, cells, metadata if isinstance(metadata, dict) else {}, minor if isinstance(minor, int) else None)

    def _cells(self) -> List[Cell]:
        cells: List[Cell] = []
        self.position += 1  # [
        for number in self._items():
            cells.append(self._cell(number))
        return cells

    def _cell(self, number: int) -> Cell:
        where = f"cell {number}"
        self._expect("{", f"{where} is not a JSON object")
        cell_type: Any = None
        source: Any = None
        span = (0, 0)
        parts: List[Tuple[int, int]] = []
        metadata: Any = {}
        for key in self._members():
            start = self.position
            if key == "source":
                source, parts = self._source(where)
                span = (start, self.position)
            elif key == "cell_type":
                cell_type = self._value()
            elif key == "metadata":
                metadata = self._value()
            else:
                self._value()
        if not isinstance(cell_type, str):
            raise NotebookError(f"not a Jupyter notebook: {where} has no `cell_type`")
        if source is None:
            raise NotebookError(f"not a Jupyter notebook: {where} has no `source`")
        return Cell(number, cell_type, source, span, parts, span[1] > span[0] and self.text[span[0]] == "[",
                    metadata if isinstance(metadata, dict) else {})

    def _source(self, where: str) -> Tuple[str, List[Tuple[int, int]]]:
        bad = NotebookError(f"not a Jupyter notebook: the `source` of {where} is not a string or a list of strings")
        if self._peek() == '"':
            start = self.position
            value = self._value()
            return value, [(start, self.position)]
        if self._peek() != "[":
            raise bad
        self.position += 1
        pieces: List[str] = []
        parts: List[Tuple[int, int]] = []
        for _ in self._items():
            if self._peek() != '"':
                raise bad
            start = self.position
            pieces.append(self._value())
            parts.append((start, self.position))
        return "".join(pieces), parts

    # --- the JSON walk -------------------------------------------------------

    def _members(self):
        """Yields each key of the object whose ``{`` was just read, leaving the position at its value."""
        self._space()
        if self._peek() == "}":
            self.position += 1
            return
        while True:
            self._space()
            if self._peek() != '"':
                raise self._error("Expecting property name enclosed in double quotes")
            key = self._value()
            self._space()
            self._expect(":", None)
            self._space()
            yield key
            self._space()
            if self._peek() == ",":
                self.position += 1
                continue
            self._expect("}", None)
            return

    def _items(self):
        """Yields 1, 2, ... for each element of the array whose ``[`` was just read, leaving the position at it."""
        self._space()
        if self._peek() == "]":
            self.position += 1
            return
        number = 0
        while True:
            self._space()
            number += 1
            yield number
            self._space()
            if self._peek() == ",":
                self.position += 1
                continue
            self._expect("]", None)
            return

    def _value(self) -> Any:
        try:
            value, self.position = _DECODER.raw_decode(self.text, self.position)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", exc.lineno, exc.colno) from None
        except RecursionError:
            # Python's JSON decoder recurses per level; no notebook nests thousands of arrays deep.
            raise self._error("its JSON nests too deeply to read", prefix="") from None
        return value

    def _space(self) -> None:
        self.position = _SPACE.match(self.text, self.position).end()  # type: ignore[union-attr]

    def _peek(self) -> str:
        self._space()
        return self.text[self.position:self.position + 1]

    def _expect(self, char: str, message: Optional[str]) -> None:
        self._space()
        if self.text[self.position:self.position + 1] != char:
            if message is not None and self.position < len(self.text):
                self._value()  # not JSON at all (a merge conflict marker): say where
                raise NotebookError(f"not a Jupyter notebook: {message}")
            raise self._error(f"Expecting '{char}'" if self.position < len(self.text) else "Unexpected end of file")
        self.position += 1

    def _error(self, message: str, prefix: str = "not valid JSON: ") -> NotebookError:
        starts = line_starts(self.text)
        row = bisect.bisect_right(starts, self.position)
        column = self.position - starts[row - 1] + 1
        return NotebookError(f"{prefix}{message} (line {row}, column {column})", row, column)


@dataclass(frozen=True)
class _Style:
    """How the file writes JSON, so a new ``source`` value reads like the ones around it."""

    ensure_ascii: bool
    newline: str
    unit: str  # one level of indentation ("" in a file on one line)

    @classmethod
    def of(cls, text: str) -> "_Style":
        newline = "\r\n" if "\r\n" in text else "\n"
        match = re.search(r"\n([ \t]+)\S", text)
        unit = match.group(1) if match else ""
        # Jupyter writes non-ASCII text as is; a file that escapes it (\u00e9) gets escapes.
        ensure_ascii = not any(ord(ch) > 127 for ch in text) and re.search(r"\\u(?!00[0-7])[0-9a-fA-F]{4}", text) is not None
        return cls(ensure_ascii, newline, unit)

    def string(self, value: str) -> str:
        return json.dumps(value, ensure_ascii=self.ensure_ascii)

    def source_value(self, text: str, cell: Cell, source: str) -> str:
        """The new ``source`` value: a string stays a string; in an array, unchanged lines keep their exact text."""
        if not cell.is_list:
            return self.string(source)
        known: Dict[str, str] = {}
        for start, end in cell.parts:
            known.setdefault(json.loads(text[start:end]), text[start:end])
        lines = source.splitlines(keepends=True)
        items = [known.get(line) or self.string(line) for line in lines]
        if not items:
            return "[]"
        opening, separator, closing = self._layout(text, cell)
        return "[" + opening + separator.join(items) + closing + "]"

    def _layout(self, text: str, cell: Cell) -> Tuple[str, str, str]:
        """(after ``[``, between items, before ``]``) as the cell's old array had them, or as the file indents."""
        start, end = cell.span
        parts = cell.parts
        if parts:
            opening = text[start + 1:parts[0][0]]
            closing = text[parts[-1][1]:end - 1]
            if len(parts) > 1:
                separator = text[parts[0][1]:parts[1][0]]
            else:
                separator = "," + opening
            return opening, separator, closing
        if not self.unit:
            return "", ", ", ""
        line_start = text.rfind("\n", 0, start) + 1
        indent = re.match(r"[ \t]*", text[line_start:]).group()  # type: ignore[union-attr]
        opening = self.newline + indent + self.unit
        return opening, "," + opening, self.newline + indent


def cell_lines(text: str, cell_number: int) -> Optional[Sequence[str]]:
    """The lines of one cell of a notebook's text (for the ``full`` format), or None if it cannot be read."""
    try:
        notebook = Notebook.parse(text)
    except NotebookError:
        return None
    if not 1 <= cell_number <= len(notebook.cells):
        return None
    return notebook.cells[cell_number - 1].source.splitlines()
