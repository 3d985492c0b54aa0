"""``path:line:col: CODE [*] message`` — one line per finding, ``[*]`` when ``--fix`` would fix it.

In a notebook, ``path:cell N:line:col`` (Ruff's form): the line counts from the cell's first line.
"""

from __future__ import annotations

from typing import Sequence

import click

from mpslint.diagnostic import Diagnostic, where
from mpslint.output import Options, fix_applicable


def header(d: Diagnostic, options: Options) -> str:
    marker = " [*]" if fix_applicable(d, options.unsafe) else ""
    if not options.color:
        return f"{where(d)}: {d.code}{marker} {d.message}"
    # Ruff's palette: the path bold, the code red and bold, the fix marker cyan.
    return (
        f"{click.style(where(d), bold=True)}: {click.style(d.code, fg='red', bold=True)}"
        f"{click.style(marker, fg='cyan')} {d.message}"
    )


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    return "".join(header(d, options) + "\n" for d in diagnostics)
