"""``path:line:col: CODE [*] message`` — one line per finding, ``[*]`` when ``--fix`` would fix it."""

from __future__ import annotations

from typing import Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options, fix_applicable


def header(d: Diagnostic, options: Options) -> str:
    marker = " [*]" if fix_applicable(d, options.unsafe) else ""
    return f"{d.filename}:{d.location.row}:{d.location.column}: {d.code}{marker} {d.message}"


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    return "".join(header(d, options) + "\n" for d in diagnostics)
