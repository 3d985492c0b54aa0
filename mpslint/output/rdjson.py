"""reviewdog's Diagnostic Format (rdjson): findings and their fixes as review comments and suggestions.

The format is reviewdog's ``DiagnosticResult`` (proto/rdf/reviewdog.proto in
reviewdog/reviewdog); ``reviewdog -f=rdjson`` reads it. Lines and columns are
1-based, columns count UTF-8 bytes and ranges end before their end position, as
that format says; a fix's edits become suggestions. A notebook's findings point
at the ``.ipynb`` file's own lines, as in the other formats read by tools that
open the file.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Sequence

from mpslint import catalog
from mpslint.diagnostic import Diagnostic, Location
from mpslint.output import Options, file_region

Position = Callable[[Location], Dict[str, int]]


def _positions(lines: Optional[List[str]]) -> Position:
    """Our columns count characters; reviewdog's count UTF-8 bytes."""

    def position(location: Location) -> Dict[str, int]:
        column = location.column
        if lines is not None and 1 <= location.row <= len(lines):
            column = len(lines[location.row - 1][: column - 1].encode("utf-8", "surrogatepass")) + 1
        return {"line": location.row, "column": column}

    return position


def _diagnostic(d: Diagnostic, options: Options) -> Dict[str, Any]:
    text = options.source(d.filename)
    _position = _positions(text.splitlines() if text is not None else None)
    start, end = file_region(d, options)
    entry: Dict[str, Any] = {
        "message": d.message,
        "location": {
            "path": d.filename,
            "range": {"start": _position(start), "end": _position(end)},
        },
        "severity": "ERROR",
        "code": {"value": d.code, "url": catalog.DOCS_URL.format(code=d.code)},
    }
    # A notebook's edits are in cells that reviewdog cannot address: no suggestions there.
    if d.fix is not None and d.fix.edits and d.cell is None:
        entry["suggestions"] = [
            {"range": {"start": _position(e.start), "end": _position(e.end)}, "text": e.content} for e in d.fix.edits
        ]
    return entry


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    result = {
        "source": {"name": "mpslint", "url": catalog.HOME_URL},
        "severity": "ERROR",
        "diagnostics": [_diagnostic(d, options) for d in diagnostics],
    }
    return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
