"""SARIF 2.1.0 for code-scanning services, with rule metadata taken from the catalog (``rules/*.md``).

A notebook finding's region is in the ``.ipynb`` file's JSON text (where a
code-scanning view opens the file); the message starts with ``cell N, line
L:`` and the result's properties hold ``cell``, ``cellLine`` and
``cellColumn``. Its fix is left out: an edit of a cell is not a replacement
of the file's text.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Sequence

from mpslint.diagnostic import Diagnostic, Location
from mpslint.files import real_name
from mpslint.output import Options, file_region

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(filename: str) -> str:
    # A name shown with \\xNN for bytes that are not UTF-8 is a URI of the file with those bytes (%NN).
    return Path(os.path.abspath(real_name(filename))).as_uri() if filename != "-" else filename


def _region(start: Location, end: Location) -> Dict[str, int]:
    return {"startLine": start.row, "startColumn": start.column, "endLine": end.row, "endColumn": end.column}


def _rules() -> List[Dict[str, Any]]:
    from mpslint import catalog

    rules = []
    for doc in catalog.load().values():
        rules.append(
            {
                "id": doc.code,
                "name": doc.name,
                "shortDescription": {"text": doc.summary},
                "fullDescription": {"text": doc.text, "markdown": doc.text},
                "help": {"text": doc.summary, "markdown": doc.text},
                "helpUri": doc.url,
                "properties": {"fix": doc.fix, "since": doc.since},
            }
        )
    return rules


def _result(d: Diagnostic, index: Dict[str, int], options: Options) -> Dict[str, Any]:
    uri = _uri(d.filename)
    start, end = file_region(d, options)
    message = d.message if d.cell is None else f"cell {d.cell}, line {d.location.row}: {d.message}"
    result: Dict[str, Any] = {
        "ruleId": d.code,
        "level": "error",
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}, "region": _region(start, end)}}],
    }
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    if d.cell is not None:
        result["properties"] = {"cell": d.cell, "cellLine": d.location.row, "cellColumn": d.location.column}
    elif d.fix is not None and d.fix.edits:
        result["fixes"] = [
            {
                "description": {"text": d.fix.message},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": uri},
                        "replacements": [
                            {"deletedRegion": _region(e.start, e.end), "insertedContent": {"text": e.content}}
                            for e in d.fix.edits
                        ],
                    }
                ],
                "properties": {"applicability": d.fix.applicability.value},
            }
        ]
    return result


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    from mpslint import __version__

    from mpslint import catalog

    rules = _rules()
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mpslint",
                        "version": __version__,
                        "informationUri": catalog.HOME_URL,
                        "rules": rules,
                    }
                },
                # Our columns count characters, not SARIF's default UTF-16 code units.
                "columnKind": "unicodeCodePoints",
                "results": [_result(d, index, options) for d in diagnostics],
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
