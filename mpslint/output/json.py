"""A JSON array with Ruff's field names, so tools that read ``ruff --output-format json`` read this too.

``cell`` is the 1-based notebook cell (``null`` outside notebooks), as in
Ruff; rows then count from the cell's first line. A fix's edits in a notebook
also name their cell, since a fix may add the device helper to another cell.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Sequence

from mpslint.diagnostic import Diagnostic, Edit, Location
from mpslint.output import Options


def _location(location: Location) -> Dict[str, int]:
    return {"row": location.row, "column": location.column}


def as_dict(d: Diagnostic) -> Dict[str, Any]:
    from mpslint import catalog, registry

    fix = None
    if d.fix is not None:
        fix = {
            "applicability": d.fix.applicability.value,
            "message": d.fix.message,
            "edits": [_edit(e) for e in d.fix.edits],
        }
    return {
        "cell": d.cell,
        "code": d.code,
        "name": registry.name_of(d.code),
        # Ruff's field: every finding fails the run (exit 1), so each is an error.
        "severity": "error",
        "message": d.message,
        "filename": os.path.abspath(d.filename) if d.filename != "-" else d.filename,
        "location": _location(d.location),
        "end_location": _location(d.end_location),
        "noqa_row": d.noqa_row,
        "url": catalog.DOCS_URL.format(code=d.code),
        "fix": fix,
    }


def _edit(e: Edit) -> Dict[str, Any]:
    edit: Dict[str, Any] = {"content": e.content, "location": _location(e.start), "end_location": _location(e.end)}
    if e.cell is not None:
        edit["cell"] = e.cell
    return edit


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    return json.dumps([as_dict(d) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
