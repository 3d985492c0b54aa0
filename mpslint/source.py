"""Bytes on disk <-> text we lint, keeping what the fixer must write back.

Decoding follows PEP 263 (coding cookie) and a UTF-8 BOM, as Python does; the
encoding, the BOM and the dominant line ending are remembered so a fixed file
is written back byte-for-byte alike except where an edit changed it.
"""

from __future__ import annotations

import codecs
from itertools import accumulate
import re
import tokenize
from dataclasses import dataclass

_NEWLINE = re.compile(r"\r\n|\r|\n")


class DecodeError(ValueError):
    """The bytes are not text in the encoding the file declares."""


@dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"

    @classmethod
    def decode(cls, data: bytes) -> "SourceText":
        try:
            encoding, _ = tokenize.detect_encoding(_first_lines(data))
        except SyntaxError as exc:  # bad cookie, or a cookie contradicting the BOM
            raise DecodeError(str(exc)) from None
        bom = data.startswith(codecs.BOM_UTF8)
        if bom:
            data = data[len(codecs.BOM_UTF8):]
            encoding = "utf-8"
        elif encoding == "utf-8-sig":
            encoding = "utf-8"
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise DecodeError(f"cannot decode as {encoding}: {exc}") from None
        return cls(text=text, encoding=encoding, bom=bom, newline=dominant_newline(text))

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data


_BYTES_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?")


def _first_lines(data: bytes):
    """A ``readline`` over the first two lines, ending lines at \\r too, as Python's own tokenizer does.

    ``tokenize.detect_encoding`` splits on \\n only: in a file with classic Mac (\\r) line endings it would
    read the whole file as the first line and miss the coding cookie.
    """
    lines = []
    position = 0
    for _ in range(2):
        match = _BYTES_LINE.match(data, position)
        if not match.group():
            break
        lines.append(match.group())
        position = match.end()
    return iter(lines).__next__


def dominant_newline(text: str) -> str:
    # Counted in C (str.count), not match by match: every file checked is decoded through here.
    crlf = text.count("\r\n")
    counts = {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}
    best = max(counts, key=lambda k: counts[k])
    return best if counts[best] else "\n"


def line_starts(text: str) -> list:
    """Offsets where each line starts, splitting on \\r\\n, \\r and \\n like LibCST."""
    if "\r" not in text:
        # The usual text: each line's length plus its newline, summed in C rather than a match per line.
        lines = text.split("\n")
        lines.pop()  # the text after the last newline starts a line but ends none
        starts = [0]
        starts.extend(accumulate(map((1).__add__, map(len, lines))))
        return starts
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(text))
    return starts


def offset_of(starts: list, row: int, column: int) -> int:
    """Offset of a 1-based (row, column) position."""
    return starts[row - 1] + column - 1


def location_of(starts: list, offset: int):
    """1-based (row, column) of an offset."""
    import bisect

    row = bisect.bisect_right(starts, offset)
    return row, offset - starts[row - 1] + 1


_BRACKETS = re.compile(r"[()\[\]{}]")
# Python's tokenizer refuses more than 200 nested brackets; LibCST's native
# parser has no such limit and overflows its stack (a segfault) near 2,000.
MAX_NESTING = 200


def brackets_too_deep(text: str) -> bool:
    """True if bracket nesting (counted roughly, strings included) may exceed Python's limit."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_NESTING:
                    return True
        elif depth:
            depth -= 1
    return False
