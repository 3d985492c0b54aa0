"""After a fix run: for each entry point (a script with ``if __name__ == "__main__":``, a notebook), whether it can
now reach MPS or what still blocks it, instead of only "N fixed, M remaining".

The facts and their wording come from ``mpslint.entry_points`` (which follows the project's imports), as in
``mpslint report``; this module lays them out as the summary's lines.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from mpslint.diagnostic import Diagnostic
from mpslint.entry_points import NO_DEVICE, REACHES, Unit, entry_points, is_entry_point, said  # noqa: F401  (API)

MAX_LISTED = 20


def entry_point_lines(results: Sequence[Tuple[str, Optional[str], Sequence[Diagnostic]]]) -> List[str]:
    """``Entry points: 2 of 3 can reach MPS.`` and one line per entry point (blocked ones first)."""
    found = entry_points([Unit(display, text, remaining) for display, text, remaining in results])
    if not found:
        return []
    reached = sum(1 for e in found if e.reaches)
    lines = [f"Entry points: {reached} of {len(found)} can reach MPS (static; `mpslint verify --simulate` runs one)."]
    rows = sorted(found, key=lambda e: (e.reaches, e.display))
    for entry in rows[:MAX_LISTED]:
        lines.append(f"  {entry.display}: {said(entry)}")
    if len(rows) > MAX_LISTED:
        lines.append(f"  ... and {len(rows) - MAX_LISTED} more")
    return lines
