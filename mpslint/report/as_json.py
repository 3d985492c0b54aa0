"""The report as JSON for dashboards: the same numbers the HTML and Markdown show, field for field."""

from __future__ import annotations

import dataclasses
import json

from mpslint import __version__
from mpslint.report.impact import LABELS
from mpslint.report.model import Report

SCHEMA_VERSION = 1


def render(report: Report) -> str:
    data = dataclasses.asdict(report)
    data["errors"] = [{"path": path, "message": message} for path, message in report.errors]
    document = {"tool": "mpslint", "version": __version__, "schema": SCHEMA_VERSION, "impacts": LABELS, **data}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
