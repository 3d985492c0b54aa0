"""``path:row: [CODE] message``: pylint's parseable format, which editors and CI parsers of pylint read."""

from __future__ import annotations

from typing import Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options, file_region


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    lines = []
    for d in diagnostics:
        # Tools that read this format open the file itself: a notebook's row is its JSON line.
        start, _ = file_region(d, options)
        lines.append(f"{d.filename}:{start.row}: [{d.code}] {d.message}\n")
    return "".join(lines)
