"""Open documents as the client sees them: LSP lines, positions in the client's encoding, edits.

The server keeps its own copy of each buffer instead of pygls' workspace
copy, because LSP and Python disagree on what a line is. LSP breaks lines at
``\\n``, ``\\r\\n`` and ``\\r`` only; ``str.splitlines`` (which pygls' documents
use) also breaks at form feeds, vertical tabs, ``\\x1c``-``\\x1e``, ``\\x85``,
U+2028 and U+2029. A form feed is an ordinary page break in Python source;
with the wrong line table an incremental change lands in the wrong place,
the copy drifts from the editor's buffer, and a later fix would be applied
to text the user never wrote. The line table here is the engine's own
(``mpslint.source.line_starts``), so engine positions and LSP positions
count the same lines.

Positions: the engine counts columns in characters (code points); the client
counts them in the position encoding agreed at initialization: UTF-16 code
units by default, UTF-8 bytes or UTF-32 (code points) when the client
prefers them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from lsprotocol import types as lsp

from mpslint.diagnostic import Edit, Location
from mpslint.source import dominant_newline, line_starts

UTF8 = lsp.PositionEncodingKind.Utf8
UTF16 = lsp.PositionEncodingKind.Utf16
UTF32 = lsp.PositionEncodingKind.Utf32

_LINE_BREAKS = ("\r\n", "\n", "\r")


def _units(text: str, encoding: str) -> int:
    """How many code units of ``encoding`` ``text`` takes."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _chars_for_units(line: str, units: int, encoding: str) -> int:
    """How many characters of ``line`` the first ``units`` code units cover (clamped to the line)."""
    if encoding == UTF32 or line.isascii():
        return min(units, len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        seen += _units(char, encoding)
    return len(line)


@dataclass(frozen=True)
class Snapshot:
    """One version of a document's text, with its line table."""

    text: str
    starts: Tuple[int, ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, text: str) -> "Snapshot":
        return cls(text, tuple(line_starts(text)))

    @property
    def newline(self) -> str:
        return dominant_newline(self.text)

    def line(self, index: int) -> str:
        """Line ``index`` (0-based) without its line break."""
        begin = self.starts[index]
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)
        content = self.text[begin:end]
        for brk in _LINE_BREAKS:
            if content.endswith(brk):
                return content[: -len(brk)]
        return content

    # -- client positions <-> offsets -------------------------------------------------------

    def offset(self, position: lsp.Position, encoding: str) -> int:
        """The offset of a client position; past the end of a line means its end, past the last line the end of text."""
        if position.line >= len(self.starts):
            return len(self.text)
        line = self.line(position.line)
        return self.starts[position.line] + _chars_for_units(line, position.character, encoding)

    def position(self, offset: int, encoding: str) -> lsp.Position:
        offset = max(0, min(offset, len(self.text)))
        row = bisect.bisect_right(self.starts, offset) - 1
        prefix = self.text[self.starts[row]:offset]
        return lsp.Position(line=row, character=_units(prefix, encoding))

    # -- engine locations <-> offsets -------------------------------------------------------

    def location_offset(self, location: Location) -> int:
        """The offset of an engine location (1-based row and character column), clamped to its line."""
        if location.row > len(self.starts):
            return len(self.text)
        row = max(location.row, 1) - 1
        return self.starts[row] + min(max(location.column, 1) - 1, len(self.line(row)))

    def range(self, start: Location, end: Location, encoding: str) -> lsp.Range:
        """An engine range in the client's positions."""
        return lsp.Range(
            start=self.position(self.location_offset(start), encoding),
            end=self.position(self.location_offset(end), encoding),
        )

    def change(self, edit: Edit) -> "Change":
        """An engine edit in offsets; its line breaks become the document's own."""
        content = edit.content
        newline = self.newline
        if newline != "\n":
            content = content.replace("\n", newline)
        return Change(self.location_offset(edit.start), self.location_offset(edit.end), content)

    def difference(self, new_text: str) -> Optional["Change"]:
        """One change that turns this text into ``new_text``: the span between their common prefix and suffix."""
        old = self.text
        if old == new_text:
            return None
        limit = min(len(old), len(new_text))
        prefix = 0
        while prefix < limit and old[prefix] == new_text[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and old[-1 - suffix] == new_text[-1 - suffix]:
            suffix += 1
        # Never split a \r\n pair: the client would see a lone \r.
        if 0 < prefix < len(old) and old[prefix - 1] == "\r" and old[prefix] == "\n":
            prefix -= 1
        end = len(old) - suffix
        if 0 < end < len(old) and old[end - 1] == "\r" and old[end] == "\n":
            end += 1
            suffix -= 1
        return Change(prefix, end, new_text[prefix:len(new_text) - suffix])


@dataclass(frozen=True)
class Change:
    """Replace ``[start, end)`` of a text with ``text`` (offsets in characters)."""

    start: int
    end: int
    text: str


@dataclass
class Document:
    """An open text document: the client's buffer, kept in step with its changes."""

    uri: str
    language_id: str
    version: int
    snapshot: Snapshot

    @property
    def text(self) -> str:
        return self.snapshot.text

    def apply(self, changes: List[lsp.TextDocumentContentChangeEvent], version: int, encoding: str) -> None:
        text = self.snapshot.text
        snapshot = self.snapshot
        for change in changes:
            if isinstance(change, lsp.TextDocumentContentChangePartial):
                begin = snapshot.offset(change.range.start, encoding)
                end = max(begin, snapshot.offset(change.range.end, encoding))
                text = text[:begin] + change.text + text[end:]
            else:
                text = change.text
            snapshot = Snapshot.of(text)
        self.snapshot = snapshot
        self.version = version
