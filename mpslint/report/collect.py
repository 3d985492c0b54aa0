"""Collect a report's numbers with the same discovery, config, selection and cache as ``mpslint check``.

The fix numbers are not estimated from the findings' fix markers: the fixer
really runs, in memory (``fixer.fix_text`` writes nothing), once with safe
fixes and once with unsafe ones too, so they are the numbers ``mpslint --fix``
and ``mpslint --fix --unsafe-fixes`` print (fixes can enable other fixes, or
be dropped when they conflict). Only files with an applicable fix go through
the fixer: on any other file it changes nothing, so the check's own results
stand for them and a report costs a check run plus the fixer's work on the
files it would touch.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from mpslint.config import ConfigResolver, Settings
from mpslint.diagnostic import IO_ERROR, Applicability, Diagnostic, io_error
from mpslint.notebook import is_notebook
from mpslint.report import impact as impacts
from mpslint.report.model import (Counts, DirectoryRow, EntryBlocker, EntryPointRow, FileRow, Finding, FixOutcome,
                                  Report, RuleRow)

DEFAULT_MAX_FINDINGS = 20

FileSpec = Tuple[str, str, Settings]  # (path, display path, settings), as runner.run takes them


def collect(
    paths: Sequence[str],
    resolver: ConfigResolver,
    *,
    force_exclude: bool = False,
    jobs: Optional[int] = None,
    cache_dir: Optional[Path] = None,
    verify_reports: Sequence[str] = (),
    max_findings: int = DEFAULT_MAX_FINDINGS,
    flags: Sequence[str] = (),
) -> Report:
    """Check ``paths`` (and fix them in memory) and summarise; ``cache_dir`` None means no cache.

    ``flags`` are the selection and config options to repeat in the suggested commands.
    """
    from mpslint.files import discover, shown
    from mpslint.runner import Mode, run

    found = discover(list(paths), resolver, force_exclude=force_exclude)
    files: List[FileSpec] = [(path, shown(path), config.settings_for(path)) for path, config in found.files]
    results = run(files, Mode(), jobs=jobs, cache_dir=cache_dir)
    # As under `mpslint check`: a path that cannot be read is an MPS001 finding, a file the run could
    # not finish (interrupted, crashed outside the rules) is an error.
    errors = [(r.display, r.error) for r in results if r.error]
    diagnostics: Dict[str, List[Diagnostic]] = {r.display: r.diagnostics for r in results if r.error is None}
    for path, message in found.errors:
        diagnostics.setdefault(shown(path), []).append(io_error(shown(path), message))

    fix_cache = None
    if cache_dir is not None:
        from mpslint.report.fixcache import FixCache

        fix_cache = FixCache(cache_dir)
    safe, unsafe, chooses = _fix_runs(files, diagnostics, fix_cache)

    checked = sum(1 for r in results if r.error is None and not any(d.code == IO_ERROR for d in r.diagnostics))
    report = Report(paths=list(paths), files_checked=checked, errors=sorted(errors))
    report.max_findings_per_file = max_findings
    report.floors = _floors(files)
    report.fix_floors = _fix_floors(files)
    report.fix = _outcome("mpslint --fix", diagnostics, safe)
    report.fix_unsafe = _outcome("mpslint --fix --unsafe-fixes", diagnostics, unsafe)
    settings_of = {display: settings for _, display, settings in files}

    from mpslint.report import ops, runtime, verdict

    statuses, report.runtime = runtime.load(verify_reports, [display for _, display, _ in files])
    report.files = _file_rows(diagnostics, safe, unsafe, statuses, max_findings)
    report.files_with_findings = len(report.files)
    for row in report.files:
        report.counts.add(row.counts)
    report.directories = _directory_rows(report.files)
    report.rules = _rule_rows(diagnostics, safe, unsafe)
    report.ops = ops.rows(diagnostics, settings_of)
    report.entry_points = _entry_points(files, diagnostics, safe, chooses)
    runtime.link(report.runtime, report.files)
    report.verdict, report.verdict_text = verdict.verdict(report)
    report.next_steps = verdict.next_steps(report, diagnostics, flags)
    return report


def _fix_runs(files: Sequence[FileSpec], diagnostics: Dict[str, List[Diagnostic]], fix_cache=None):
    """Two maps display -> (fixes per code, remaining diagnostics), for --fix and for --fix --unsafe-fixes, and
    one display -> what the text --fix leaves does about the device (for the entry points).

    Only files with an applicable fix go through the fixer. It starts from the check's diagnostics
    (``first_check``) instead of checking each file again, which is all ``mpslint --fix`` does in
    its first pass. A file's unsafe run is its safe run whenever the safe run never saw an unsafe
    fix: the fixer picks the same fixes in every pass then. That is known for sure when the safe
    run took at most one pass (its first and last diagnostics are then every set it picked from).
    With a ``fix_cache``, unchanged files are not fixed again.
    """
    from mpslint.output import fix_applicable

    safe: Dict[str, FixResult] = {}
    unsafe: Dict[str, FixResult] = {}
    chooses: Dict[str, int] = {}  # what the text `--fix` leaves does about the device (entry_points.device_choice)
    for path, display, settings in files:
        found = diagnostics.get(display, ())
        if any(fix_applicable(d, False) for d in found):
            outcome = _fix(path, display, settings, found, unsafe=False, fix_cache=fix_cache)
            if outcome is None:
                continue  # as under `mpslint --fix`, a file the fixer fails on is not fixed
            safe[display] = (outcome.fixed, outcome.diagnostics)
            chooses[display] = outcome.device_choice
            if outcome.passes <= 1 and outcome.error is None and not _has_unsafe_fix(found) \
                    and not _has_unsafe_fix(outcome.diagnostics):
                unsafe[display] = safe[display]
                continue
        if any(fix_applicable(d, True) for d in found):
            outcome = _fix(path, display, settings, found, unsafe=True, fix_cache=fix_cache)
            if outcome is not None:
                unsafe[display] = (outcome.fixed, outcome.diagnostics)
    return safe, unsafe, chooses


FixResult = Tuple[Counter, List[Diagnostic]]


def _has_unsafe_fix(found: Sequence[Diagnostic]) -> bool:
    return any(d.fix is not None and d.fix.edits and d.fix.applicability is Applicability.UNSAFE for d in found)


def _fix(path: str, display: str, settings: Settings, found: Sequence[Diagnostic], *, unsafe: bool, fix_cache):
    from mpslint.entry_points import device_choice
    from mpslint.report.fixcache import Outcome
    from mpslint.runner import read_file

    try:
        data = read_file(path)
        key = fix_cache.key(data, display, settings, unsafe=unsafe) if fix_cache is not None else None
        outcome = fix_cache.get(key) if key is not None else None
        if outcome is not None:
            return outcome
        if is_notebook(path):
            from mpslint.notebook.lint import fix_notebook

            fixed_cells = fix_notebook(data, display, settings, unsafe=unsafe)  # cell by cell, as `--fix` does
            outcome = Outcome(fixed_cells.fixed, fixed_cells.check.diagnostics, fixed_cells.error, fixed_cells.passes,
                              device_choice("\n".join(fixed_cells.sources.values())))
        else:
            from mpslint.fixer import fix_text
            from mpslint.source import SourceText

            source = SourceText.decode(data)
            fixed = fix_text(source.text, display, settings, unsafe=unsafe, newline=source.newline,
                             first_check=list(found))
            outcome = Outcome(fixed.fixed, fixed.diagnostics, fixed.error, fixed.passes, device_choice(fixed.text))
        if key is not None:
            fix_cache.put(key, outcome)
        return outcome
    except Exception:  # noqa: BLE001 - the check already read this file; a crash here leaves it unfixed
        return None


def _outcome(command: str, diagnostics, fixes) -> FixOutcome:
    outcome = FixOutcome(command)
    for display, found in diagnostics.items():
        fixed, remaining = fixes.get(display, (Counter(), found))
        outcome.fixed += sum(fixed.values())
        outcome.remaining += len(remaining)
        outcome.files_changed += 1 if sum(fixed.values()) else 0
        for d in remaining:
            kind = impacts.impact_of(d.code)
            outcome.remaining_fails += kind == impacts.FAILS
            outcome.remaining_slows += kind == impacts.SLOWS
    return outcome


def _floors(files: Sequence[FileSpec]) -> List[str]:
    """The torch versions the op rules compared against: the configured floors, else the installed or bundled torch."""
    floors = set()
    default = None
    for _, _, settings in files:
        if settings.torch_version is not None:
            floors.add("%d.%d" % settings.torch_version)
        elif default is None:
            from mpslint.knowledge import mps_kernels

            table = mps_kernels.load_table(None)
            default = "%d.%d" % mps_kernels.version_tuple(table.version)
            floors.add(default)
    return sorted(floors, key=lambda v: tuple(int(p) for p in v.split(".")))


def _entry_points(files: Sequence[FileSpec], diagnostics, safe, chooses) -> List[EntryPointRow]:
    """Each entry point as `mpslint --fix` leaves it, as its summary says (one implementation: entry_points)."""
    from mpslint.entry_points import Unit, entry_points, said

    units = [Unit(display, None, safe.get(display, (None, diagnostics.get(display, [])))[1], chooses.get(display),
                  path) for path, display, _ in files]
    rows = []
    for entry in entry_points(units):
        blockers = [EntryBlocker(b.code, b.module, b.row, b.cell, b.message, b.imported_at) for b in entry.blockers]
        rows.append(EntryPointRow(entry.display, entry.reaches, said(entry), entry.device_from, blockers,
                                  entry.blocker_count))
    rows.sort(key=lambda r: (r.reaches, r.path))
    return rows


def _fix_floors(files: Sequence[FileSpec]) -> List[str]:
    """The torch the fixes and the version gates assume: the declared floors, else the assumed one (as `check` says)."""
    from mpslint.knowledge.cuda_api import ASSUMED_FLOOR

    floors = set()
    for _, _, settings in files:
        version = settings.torch_version[:2] if settings.torch_version is not None else None
        floors.add(("%d.%d" % version, "") if version else ("%d.%d" % ASSUMED_FLOOR, " (assumed: no floor declared)"))
    ordered = sorted(floors, key=lambda v: (tuple(int(p) for p in v[0].split(".")), v[1]))
    return [version + note for version, note in ordered]


def _fix_kind(d: Diagnostic) -> Optional[str]:
    if d.fix is None or not d.fix.edits:
        return None
    if d.fix.applicability is Applicability.SAFE:
        return "safe"
    if d.fix.applicability is Applicability.UNSAFE:
        return "unsafe"
    return None


def _file_rows(diagnostics, safe, unsafe, statuses, max_findings: int) -> List[FileRow]:
    rows = []
    for display, found in diagnostics.items():
        if not found:
            continue
        row = FileRow(display, anchor="")
        fixed = safe.get(display, (Counter(), found))[0]
        fixed_unsafe = unsafe.get(display, (Counter(), found))[0]
        row.counts = _counts(found, sum(fixed.values()), sum(fixed_unsafe.values()))
        row.codes = dict(sorted(Counter(d.code for d in found).items()))
        seen = statuses.get(display, {})
        ordered = sorted(found, key=Diagnostic.sort_key)
        for d in ordered:
            status = seen.get((d.code, d.location.row))
            row.confirmed += status == "confirmed"
        for d in ordered[:max_findings]:
            row.findings.append(Finding(d.code, d.location.row, d.location.column, d.message,
                                        impacts.impact_of(d.code), _fix_kind(d), seen.get((d.code, d.location.row)),
                                        d.cell))
        row.omitted = max(0, len(ordered) - max_findings)
        rows.append(row)
    rows.sort(key=lambda r: (r.counts.blocking_key(), r.path))
    for i, row in enumerate(rows, 1):
        row.anchor = f"file-{i}"
    return rows


def _counts(found: Sequence[Diagnostic], fixed: int, fixed_unsafe: int) -> Counts:
    counts = Counts(findings=len(found), fixed=fixed, fixed_unsafe=fixed_unsafe)
    for d in found:
        kind = impacts.impact_of(d.code)
        if kind == impacts.FAILS:
            counts.fails += 1
        elif kind == impacts.SLOWS:
            counts.slows += 1
        else:
            counts.other += 1
    return counts


def _directory_rows(files: Sequence[FileRow]) -> List[DirectoryRow]:
    rows: Dict[str, DirectoryRow] = {}
    for f in files:
        parent = os.path.dirname(f.path) or "."
        row = rows.setdefault(parent, DirectoryRow(parent))
        row.counts.add(f.counts)
        row.files += 1
    return sorted(rows.values(), key=lambda r: (r.counts.blocking_key(), r.path))


def _rule_rows(diagnostics, safe, unsafe) -> List[RuleRow]:
    from mpslint import catalog, registry
    from mpslint.output.summary import statistics_rows

    everything = [d for found in diagnostics.values() for d in found]
    files: Counter = Counter()
    for found in diagnostics.values():
        files.update({d.code for d in found})
    fixed: Counter = Counter()
    for counts, _ in safe.values():
        fixed.update(counts)
    fixed_unsafe: Counter = Counter()
    for counts, _ in unsafe.values():
        fixed_unsafe.update(counts)
    rows = []
    # The counts and marks are `mpslint --statistics`'s own, in its order.
    for count, code, mark, name, _ in statistics_rows(everything, unsafe=False):
        doc = catalog.find(code)
        rows.append(RuleRow(code, name or registry.name_of(code), doc.summary if doc else "", impacts.impact_of(code),
                            count=count, files=files[code], fixed=fixed[code], fixed_unsafe=fixed_unsafe[code],
                            mark=mark))
    return rows
