"""GitLab Code Quality JSON: findings shown on merge requests (Ruff's ``gitlab``).

The report format is documented at
https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format. Paths
are relative to the project folder (``CI_PROJECT_DIR`` in a GitLab job, else the
working directory). A fingerprint must identify one finding across pipelines, so
it hashes the path, code and message, not the line, which moves with every edit
above it; equal findings in one file are told apart by their order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from typing import Any, Dict, Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options, file_region


def _relative(path: str) -> str:
    if path == "-":
        return path
    root = os.environ.get("CI_PROJECT_DIR") or os.getcwd()
    try:
        relative = os.path.relpath(os.path.abspath(path), root)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith("..") else relative.replace(os.sep, "/")


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    seen: Counter = Counter()
    issues = []
    for d in diagnostics:
        path = _relative(d.filename)
        identity = (path, d.code, d.message)
        seen[identity] += 1
        digest = hashlib.sha256("\0".join((*identity, str(seen[identity]))).encode("utf-8", "surrogateescape"))
        start, end = file_region(d, options)
        issue: Dict[str, Any] = {
            "check_name": d.code,
            "description": f"{d.code}: {d.message}",
            "severity": "major",
            "fingerprint": digest.hexdigest(),
            "location": {
                "path": path,
                "positions": {
                    "begin": {"line": start.row, "column": start.column},
                    "end": {"line": end.row, "column": end.column},
                },
            },
        }
        issues.append(issue)
    return json.dumps(issues, indent=2, ensure_ascii=False) + "\n"
