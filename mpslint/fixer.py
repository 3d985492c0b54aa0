"""Apply fixes to a fixpoint, and never return code that does not parse.

Each pass checks the text, takes the applicable fixes in source order,
keeps those whose edits do not overlap an edit already taken (identical edits,
such as two fixes inserting the same helper, are merged), applies them, and
checks again. It stops when no applicable fix is left, or after
``MAX_PASSES``. If a pass produces text that does not parse, that pass is
undone and the fixing stops: the result is always the last text that parsed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import libcst as cst

from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic, Edit, Fix
from mpslint.engine import INVALID_SYNTAX, check_text
from mpslint.source import line_starts, offset_of

MAX_PASSES = 20


@dataclass
class FixOutcome:
    text: str
    fixed: Counter = field(default_factory=Counter)  # code -> number of fixes applied
    diagnostics: List[Diagnostic] = field(default_factory=list)  # what remains
    error: Optional[str] = None  # why fixing stopped early, if it did
    passes: int = 0

    @property
    def changed(self) -> bool:
        return sum(self.fixed.values()) > 0


def fix_text(
    text: str,
    path: str,
    settings: Settings,
    *,
    unsafe: bool = False,
    newline: str = "\n",
    first_check: Optional[List[Diagnostic]] = None,
) -> FixOutcome:
    """Fix ``text`` to a fixpoint. ``first_check`` reuses diagnostics already computed for ``text``."""
    outcome = FixOutcome(text=text)
    diagnostics = first_check if first_check is not None else check_text(text, path, settings).diagnostics
    if any(d.code == INVALID_SYNTAX for d in diagnostics):
        outcome.diagnostics = diagnostics
        return outcome
    # `fixed` counts the check's findings that were fixed: a later pass may fix what earlier fixes left
    # behind (an import nothing uses any more), which was no finding of the check and is not counted.
    budget = Counter(d.code for d in diagnostics)
    for _ in range(MAX_PASSES):
        chosen = choose_fixes(diagnostics, unsafe=unsafe)
        if not chosen:
            break
        candidate = apply_fixes(outcome.text, [d.fix for d in chosen], newline=newline)
        if candidate == outcome.text:
            break
        result = check_text(candidate, path, settings)
        if not result.parsed or (result.skipped and not _parses(candidate)):
            outcome.error = (
                "a fix produced code that does not parse; those fixes were not applied "
                f"({', '.join(sorted({d.code for d in chosen}))}). Please report this as a bug."
            )
            break
        outcome.passes += 1
        outcome.text = candidate
        tally(outcome.fixed, budget, chosen)
        diagnostics = result.diagnostics
    else:
        outcome.error = f"fixes did not converge after {MAX_PASSES} passes"
    outcome.diagnostics = diagnostics
    return outcome


def tally(fixed: Counter, budget: Counter, chosen: Sequence[Diagnostic]) -> None:
    """Count the fixes of a pass as fixed findings of the check, at most as many per code as it reported."""
    for diagnostic in chosen:
        if budget[diagnostic.code] > 0:
            budget[diagnostic.code] -= 1
            fixed[diagnostic.code] += 1


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


def choose_fixes(diagnostics: Sequence[Diagnostic], *, unsafe: bool) -> List[Diagnostic]:
    """Applicable fixes in source order whose edits do not conflict with earlier ones."""
    taken: List[Edit] = []
    chosen: List[Diagnostic] = []
    for diagnostic in sorted(diagnostics, key=_fix_order):
        fix = diagnostic.fix
        if fix is None or not fix.is_applicable(unsafe) or not fix.edits:
            continue
        if any(_conflicts(edit, other) for edit in fix.edits for other in taken):
            continue
        taken.extend(e for e in fix.edits if e not in taken)
        chosen.append(diagnostic)
    return chosen


def _fix_order(diagnostic: Diagnostic) -> Tuple:
    first = diagnostic.fix.edits[0].start if diagnostic.fix and diagnostic.fix.edits else diagnostic.location
    return (first, diagnostic.location, diagnostic.code)


def _conflicts(a: Edit, b: Edit) -> bool:
    if a == b:
        return False  # the same edit from two fixes is applied once
    if a.start == a.end and b.start == b.end:
        return a.start == b.start  # two different insertions at one point: order would be arbitrary
    # Touching ranges are fine; overlapping ones (or an insertion inside a replacement) are not.
    return a.start < b.end and b.start < a.end or (a.start == a.end and b.start < a.start < b.end) or (
        b.start == b.end and a.start < b.start < a.end
    )


def apply_fixes(text: str, fixes: Sequence[Fix], *, newline: str = "\n") -> str:
    edits = sorted({edit for fix in fixes for edit in fix.edits}, key=Edit.sort_key)
    starts = line_starts(text)
    pieces: List[str] = []
    cursor = 0
    for edit in edits:
        begin = offset_of(starts, edit.start.row, edit.start.column)
        end = offset_of(starts, edit.end.row, edit.end.column)
        if begin < cursor:  # overlapping edits never reach here; be safe anyway
            continue
        pieces.append(text[cursor:begin])
        content = edit.content
        if newline != "\n":
            content = content.replace("\n", newline)
        pieces.append(content)
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)
