"""Read ``mpslint verify --output-format json`` reports and tie them to the checked files.

A verify report names its script as it was given on the command line, and
marks each static finding of that script ``confirmed``, ``not-observed`` or
``not-reached`` (see ``mpslint/verify/report.py``). A report is tied to the
checked file that is the same file on disk, or else whose path ends with the
script's path, so a report made from another directory still finds its file.
The script's exit status is ``script_exit_code`` (older reports: ``exit_code``).
"""

from __future__ import annotations

import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

from mpslint.report.model import FileRow, RuntimeRun
from mpslint.verify.report import memory_lines as _verify_memory_lines

Statuses = Dict[str, Dict[Tuple[str, int], str]]  # display path -> (code, row) -> status

REQUIRED = ("script", "verdict")


class RuntimeReportError(Exception):
    """A --verify-report file that is missing, not JSON, or not a verify report."""


def load(paths: Sequence[str], displays: Sequence[str]) -> Tuple[Statuses, List[RuntimeRun]]:
    statuses: Statuses = {}
    runs = []
    for path in paths:
        for data in read(path):
            display = _match(data["script"], path, displays)
            run = RuntimeRun(
                source=path,
                script=str(data["script"]),
                verdict=str(data["verdict"]),
                simulated=bool(data.get("simulated", False)),
                torch_version=str(data.get("torch_version", "")),
                script_exit_code=data.get("script_exit_code", data.get("exit_code")),
                ops_on_device=data.get("ops_on_device"),
                duration_s=data.get("duration_s"),
                file_anchor=display,  # replaced by the file's anchor in link()
                fallbacks=_records(data, "fallbacks"),
                syncs=_records(data, "syncs"),
                errors=_records(data, "errors"),
                static=_records(data, "static"),
                known_wrong=_records(data, "known_wrong"),
                memory=data["memory"] if isinstance(data.get("memory"), dict) else None,
            )
            runs.append(run)
            if display is not None:
                seen = statuses.setdefault(display, {})
                for entry in run.static:
                    key = (str(entry.get("code")), _int(entry.get("row")))
                    # Two runs of one script: a finding confirmed by either is confirmed.
                    if seen.get(key) != "confirmed":
                        seen[key] = str(entry.get("status"))
    return statuses, runs


def link(runs: Sequence[RuntimeRun], files: Sequence[FileRow]) -> None:
    """Point each run at its file's section (a file without findings has none)."""
    anchors = {f.path: f.anchor for f in files}
    for run in runs:
        run.file_anchor = anchors.get(run.file_anchor) if run.file_anchor else None


def read(path: str) -> List[dict]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise RuntimeReportError(f"cannot read verify report {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise RuntimeReportError(f"{path} is not JSON ({exc}); write it with "
                                 f"`mpslint verify --output-format json SCRIPT > {path}`") from None
    reports = data if isinstance(data, list) else [data]
    for report in reports:
        if not isinstance(report, dict) or any(key not in report for key in REQUIRED):
            raise RuntimeReportError(f"{path} is not an `mpslint verify --output-format json` report "
                                     f"(it needs the fields {', '.join(REQUIRED)})")
    return reports


def memory_lines(run: RuntimeRun) -> List[str]:
    """What ``mpslint verify`` printed about device memory for this run (a real Mac measures it; the
    simulator cannot); empty when it measured nothing or the entry is not verify's shape."""
    found = run.memory
    if not found or not found.get("measured"):
        return []
    try:
        return [line.strip() for line in _verify_memory_lines(found, found.get("clock"))]
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):  # edited by hand, or another version's
        return []


def _records(data: dict, key: str) -> List[dict]:
    value = data.get(key) or []
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _match(script: str, report_path: str, displays: Sequence[str]) -> Optional[str]:
    script = str(script)
    candidates = [script]
    if not os.path.isabs(script):
        candidates.append(os.path.join(os.path.dirname(report_path), script))
    real = set()
    for candidate in candidates:
        try:
            real.add(os.path.realpath(candidate))
        except OSError:
            pass
    for display in displays:
        if os.path.realpath(display) in real:
            return display
    parts = _parts(script)
    best = None
    for display in displays:
        mine = _parts(display)
        common = 0
        while common < min(len(parts), len(mine)) and parts[-1 - common] == mine[-1 - common]:
            common += 1
        if common == len(parts) or common == len(mine):
            if best is None or common > best[0]:
                best = (common, display)
    return best[1] if best else None


def _parts(path: str) -> List[str]:
    return [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
