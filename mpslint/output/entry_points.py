"""After a fix run: for each entry point (a script with ``if __name__ == "__main__":``, a notebook), whether it can
now reach MPS or what still blocks it, instead of only "N fixed, M remaining".

Static, from what the run saw: a blocking finding left in the file (``mpslint.blocking``) blocks it; with none,
it can reach MPS when it chooses a device that can be MPS itself (the device picker, an MPS or accelerator test),
and otherwise the line says that it chooses no device itself (it may use one chosen in a module it imports).
``mpslint verify --simulate`` is the proof.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from mpslint.blocking import blocks
from mpslint.diagnostic import Diagnostic

_MAIN = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.MULTILINE)
_CHOOSES_MPS = re.compile(r"pick_device\(|\bmps\b|torch\.accelerator|current_accelerator|\.device\b")
MAX_LISTED = 20
MAX_BLOCKERS = 3

REACHES = "can reach MPS"
NO_DEVICE = "no blocker left; it chooses no device itself"


def is_entry_point(display: str, text: Optional[str]) -> bool:
    if display.endswith(".ipynb"):
        return True
    return text is not None and bool(_MAIN.search(text))


def status(display: str, text: Optional[str], remaining: Sequence[Diagnostic]) -> Tuple[bool, str]:
    """(reaches MPS, what to say) for one entry point."""
    blockers = sorted((d for d in remaining if blocks(d.code)), key=Diagnostic.sort_key)
    if blockers:
        listed = "; ".join(_where(d) for d in blockers[:MAX_BLOCKERS])
        more = f" and {len(blockers) - MAX_BLOCKERS} more" if len(blockers) > MAX_BLOCKERS else ""
        return False, f"blocked by {listed}{more}"
    if text is not None and _CHOOSES_MPS.search(text):
        return True, REACHES
    return False, NO_DEVICE


def entry_point_lines(results: Sequence[Tuple[str, Optional[str], Sequence[Diagnostic]]]) -> List[str]:
    """``Entry points: 2 of 3 can reach MPS.`` and one line per entry point (blocked ones first)."""
    rows = []
    for display, text, remaining in results:
        if is_entry_point(display, text):
            reaches, said = status(display, text, remaining)
            rows.append((reaches, display, said))
    if not rows:
        return []
    reached = sum(1 for reaches, _, _ in rows if reaches)
    lines = [f"Entry points: {reached} of {len(rows)} can reach MPS (static; `mpslint verify --simulate` runs one)."]
    rows.sort(key=lambda row: (row[0], row[1]))
    for _, display, said in rows[:MAX_LISTED]:
        lines.append(f"  {display}: {said}")
    if len(rows) > MAX_LISTED:
        lines.append(f"  ... and {len(rows) - MAX_LISTED} more")
    return lines


def _where(d: Diagnostic) -> str:
    place = f"cell {d.cell} line {d.location.row}" if d.cell else f"line {d.location.row}"
    message = d.message.split(";", 1)[0]
    if len(message) > 70:
        message = message[:69] + "…"
    return f"{d.code} ({place}: {message})"
