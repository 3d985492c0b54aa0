"""The lines around the findings: Ruff's summary, ``--statistics`` and ``--show-fixes``."""

from __future__ import annotations

import json
from collections import Counter
from typing import List, Optional, Sequence, Tuple

from mpslint.diagnostic import Applicability, Diagnostic
from mpslint.output import fix_applicable


def plural(n: int, word: str = "finding") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary(remaining: Sequence[Diagnostic], fixed: int, *, unsafe: bool, fixing: bool) -> List[str]:
    """``Found N findings (F fixed, R remaining).`` and what ``--fix``/``--unsafe-fixes`` would add."""
    total = len(remaining) + fixed
    lines = []
    if total == 0:
        return ["All checks passed!"]
    if fixed:
        lines.append(f"Found {plural(total)} ({fixed} fixed, {len(remaining)} remaining).")
    else:
        lines.append(f"Found {plural(total)}.")
    applicable = sum(1 for d in remaining if fix_applicable(d, unsafe))
    hidden = 0 if unsafe else sum(1 for d in remaining if d.fix is not None and d.fix.edits and d.fix.applicability is Applicability.UNSAFE)
    if fixing:
        # What is left fixable after a --fix run can only be the unsafe fixes (or conflicting ones).
        if hidden:
            lines.append(f"No fixes available ({hidden} more with --fix --unsafe-fixes).")
        return lines
    flag = "--fix --unsafe-fixes" if unsafe else "--fix"
    if applicable and hidden:
        lines.append(f"[*] {applicable} fixable with {flag} ({hidden} more with --fix --unsafe-fixes).")
    elif applicable:
        lines.append(f"[*] {applicable} fixable with {flag}.")
    elif hidden:
        lines.append(f"No fixes available ({hidden} more with --fix --unsafe-fixes).")
    return lines


def floor_note(floors: Sequence[Tuple[Optional[Tuple[int, int]], str]], assumed: Tuple[int, int]) -> str:
    """Which torch the fixes were written for, and where that came from: one line.

    ``floors`` holds (floor, origin) for each file fixed or offered a fix; a
    file without a floor got fixes for ``assumed``.
    """
    return _torch_note(floors, assumed, "Fixes target", "no torch-version set and no torch requirement found",
                       "to allow rewrites for a newer torch")


def gate_note(floors: Sequence[Tuple[Optional[Tuple[int, int]], str]], assumed: Tuple[int, int]) -> str:
    """Which torch the version-gated findings were checked against: one line, like ``floor_note``.

    ``floors`` holds (floor, origin) for each file with a version-gated finding;
    a file without a floor was checked against ``assumed``.
    """
    return _torch_note(floors, assumed, "Version gates (MPS504) checked against",
                       "assumed: no torch-version set and no torch requirement found",
                       "to check against the oldest torch you support")


def _torch_note(floors, assumed: Tuple[int, int], lead: str, unset: str, why_set: str) -> str:
    """``lead`` torch X.Y (origin)[; ... for N files]., with advice when a file had no floor."""
    counts: Counter = Counter(floors)
    if not counts:
        return ""

    def one(floor, origin) -> str:
        if floor is None:
            return f"torch {floor_text(assumed)} ({unset})"
        return f"torch {floor_text(floor)} ({origin})" if origin else f"torch {floor_text(floor)}"

    if len(counts) == 1:
        (floor, origin), = counts
        text = f"{lead} {one(floor, origin)}."
    else:
        parts = [f"{one(floor, origin)} for {plural(n, 'file')}" for (floor, origin), n in
                 sorted(counts.items(), key=lambda item: (item[0][0] or (0, 0), item[0][1]))]
        text = f"{lead} " + "; ".join(parts) + "."
    if any(floor is None for floor, _ in counts):
        text += f" Set torch-version (or require torch>=X.Y) {why_set}."
    return text


def floor_text(version: Tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def statistics_rows(diagnostics: Sequence[Diagnostic], unsafe: bool) -> List[Tuple[int, str, str, str, int]]:
    """(count, code, mark, name, fixable count) per code, most frequent first.

    The mark follows Ruff's (https://github.com/astral-sh/ruff/pull/21513):
    ``[*]`` when every finding of the code is fixable with the flags given,
    ``[~]`` when some are, ``[-]`` when none is but ``--unsafe-fixes`` would
    fix some, ``[ ]`` otherwise.
    """
    from mpslint import registry

    counts: Counter = Counter(d.code for d in diagnostics)
    fixable: Counter = Counter(d.code for d in diagnostics if fix_applicable(d, unsafe))
    hidden: Counter = Counter(
        d.code for d in diagnostics
        if not unsafe and d.fix is not None and d.fix.edits and d.fix.applicability is Applicability.UNSAFE
    )
    rows = []
    for code, count in counts.items():
        now = fixable[code]
        if now == count:
            mark = "[*]"
        elif now:
            mark = "[~]"
        elif hidden[code]:
            mark = "[-]"
        else:
            mark = "[ ]"
        rows.append((count, code, mark, registry.name_of(code), now))
    rows.sort(key=lambda r: (-r[0], r[1]))
    return rows


def statistics(diagnostics: Sequence[Diagnostic], *, unsafe: bool, as_json: bool) -> str:
    rows = statistics_rows(diagnostics, unsafe)
    if as_json:
        data = [{"code": c, "name": n, "count": k, "fixable": f == k, "fixable_count": f} for k, c, m, n, f in rows]
        return json.dumps(data, indent=2) + "\n"
    if not rows:
        return ""
    width = max(len(str(r[0])) for r in rows)
    code_width = max(len(r[1]) for r in rows)
    return "".join(f"{k:>{width}}\t{c:<{code_width}}\t{m}\t{n}\n" for k, c, m, n, _ in rows)


def show_fixes(fixed: Sequence[Tuple[str, Counter]]) -> str:
    """``Fixed N findings:`` then, per file, how many of each code."""
    from mpslint import registry

    total = sum(sum(c.values()) for _, c in fixed)
    if not total:
        return "No findings fixed.\n"
    out = [f"Fixed {plural(total)}:"]
    for path, counts in fixed:
        if not counts:
            continue
        out.append(f"- {path}:")
        for code in sorted(counts):
            out.append(f"    {counts[code]} × {code} ({registry.name_of(code)})")
    return "\n".join(out) + "\n"
