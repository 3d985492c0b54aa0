"""The edit that silences one finding with ``# noqa: CODE`` (the grammar of ``mpslint.suppressions``).

The comment goes on the first line of the finding, or its last when the first
cannot end with a comment (it ends inside a triple-quoted string, or with a
backslash continuation). An existing ``# noqa: X`` there gets the code
appended (``# noqa: X, CODE``); another comment keeps its text and gets
``  # noqa: CODE`` after it. A line with a blanket ``# noqa`` needs nothing.
Which lines can take a comment comes from Python's tokenizer: a line can
when a NEWLINE, NL or COMMENT token sits on it.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Dict, Optional, Set, Tuple

from mpslint.diagnostic import Diagnostic, Edit, Location

_CODE = r"[A-Za-z]+[0-9]*"
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODE}(?:(?:\s*,\s*|\s+){_CODE})*))?", re.IGNORECASE)


@dataclass
class CommentMap:
    """Per line: its comment (column, text), and whether a comment may end it."""

    comments: Dict[int, Tuple[int, str]] = field(default_factory=dict)
    open_rows: Set[int] = field(default_factory=set)

    @classmethod
    def scan(cls, text: str) -> "CommentMap":
        found = cls()
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    found.comments[tok.start[0]] = (tok.start[1], tok.string)
                    found.open_rows.add(tok.start[0])
                elif tok.type in (tokenize.NEWLINE, tokenize.NL):
                    found.open_rows.add(tok.start[0])
        except (tokenize.TokenError, IndentationError, SyntaxError):
            return cls()  # no suppression is offered for text the tokenizer rejects
        return found


def noqa_edit(diagnostic: Diagnostic, comments: CommentMap, line_of) -> Optional[Edit]:
    """The edit adding ``diagnostic``'s code to a noqa comment, or None if none is needed or possible.

    ``line_of(row)`` gives line ``row`` (1-based) without its line break.
    """
    code = diagnostic.code
    rows = []
    for row in (diagnostic.noqa_row or diagnostic.location.row, diagnostic.location.row, diagnostic.end_location.row):
        if row not in rows:
            rows.append(row)
    for row in rows:
        if row not in comments.open_rows:
            continue
        comment = comments.comments.get(row)
        if comment is None:
            line = line_of(row)
            code_end = len(line.rstrip())
            return Edit(Location(row, code_end + 1), Location(row, len(line) + 1), f"  # noqa: {code}")
        column, text = comment
        match = _NOQA.search(text)
        if match is None:
            end = Location(row, column + len(text.rstrip()) + 1)
            return Edit(end, end, f"  # noqa: {code}")
        if match.group("codes") is None:
            return None  # a blanket noqa already covers every code
        after = Location(row, column + match.end("codes") + 1)
        return Edit(after, after, f", {code}")
    return None
