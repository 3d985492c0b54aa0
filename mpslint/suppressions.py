"""``# noqa`` comments: per line (``# noqa``, ``# noqa: MPS101,MPS104``) and per
file (``# mpslint: noqa`` or ``# mpslint: noqa: MPS2`` on a line of its own).

Codes in a noqa comment match by prefix, like selectors: ``# noqa: MPS2``
silences the whole MPS2xx family on that line. Comments are found with the
tokenizer, so ``"# noqa"`` inside a string does not count.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

from mpslint.diagnostic import Diagnostic

_CODE = r"[A-Za-z]+[0-9]*"
_INLINE = re.compile(
    rf"#\s*noqa(?::\s*(?P<codes>{_CODE}(?:(?:\s*,\s*|\s+){_CODE})*))?",
    re.IGNORECASE,
)
_FILE = re.compile(
    rf"^#\s*mpslint\s*:\s*noqa(?::\s*(?P<codes>{_CODE}(?:(?:\s*,\s*|\s+){_CODE})*))?\s*$",
    re.IGNORECASE,
)

# A suppression that silences every code.
ALL: FrozenSet[str] = frozenset({"*"})


def _codes(group: Optional[str]) -> FrozenSet[str]:
    if not group:
        return ALL
    return frozenset(c.upper() for c in re.split(r"[\s,]+", group.strip()) if c)


def _matches(code: str, codes: FrozenSet[str]) -> bool:
    return codes is ALL or "*" in codes or any(code.startswith(c) for c in codes)


@dataclass
class Suppressions:
    file_codes: Optional[FrozenSet[str]] = None
    lines: Dict[int, FrozenSet[str]] = field(default_factory=dict)

    @classmethod
    def scan(cls, text: str) -> "Suppressions":
        result = cls()
        for row, column, comment, own_line in _comments(text):
            file_match = _FILE.match(comment) if own_line else None
            if file_match:
                codes = _codes(file_match.group("codes"))
                result.file_codes = codes if result.file_codes is None else result.file_codes | codes
                continue
            inline = _INLINE.search(comment)
            if inline:
                codes = _codes(inline.group("codes"))
                previous = result.lines.get(row)
                result.lines[row] = codes if previous is None else previous | codes
        return result

    def is_suppressed(self, diagnostic: Diagnostic) -> bool:
        if self.file_codes is not None and _matches(diagnostic.code, self.file_codes):
            return True
        rows = {diagnostic.location.row, diagnostic.end_location.row}
        if diagnostic.noqa_row is not None:
            rows.add(diagnostic.noqa_row)
        return any(row in self.lines and _matches(diagnostic.code, self.lines[row]) for row in rows)

    def filter(self, diagnostics: Iterable[Diagnostic]) -> List[Diagnostic]:
        return [d for d in diagnostics if not self.is_suppressed(d)]


def _comments(text: str) -> Iterable[Tuple[int, int, str, bool]]:
    """(row, column, comment text, comment is alone on its line)."""
    if "#" not in text:
        return []
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                row, col = tok.start
                found.append((row, col, tok.string, not tok.line[:col].strip()))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        # Only files that parsed get here, but be robust: fall back to lines.
        found = []
        for row, line in enumerate(text.splitlines(), start=1):
            col = line.find("#")
            if col >= 0:
                found.append((row, col, line[col:], not line[:col].strip()))
    return found
