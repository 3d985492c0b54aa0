"""Findings grouped under their file's name, ``row:col CODE [*] message`` indented below it (Ruff's ``grouped``)."""

from __future__ import annotations

from itertools import groupby
from typing import List, Sequence

import click

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options, fix_applicable


def _position(d: Diagnostic) -> str:
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{cell}{d.location.row}:{d.location.column}"


def _style(text: str, options: Options, **style) -> str:
    return click.style(text, **style) if options.color else text


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    blocks: List[str] = []
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        findings = list(group)
        width = max(len(_position(d)) for d in findings)
        lines = [_style(f"{filename}:", options, bold=True, underline=True)]
        for d in findings:
            marker = _style(" [*]", options, fg="cyan") if fix_applicable(d, options.unsafe) else ""
            code = _style(d.code, options, fg="red", bold=True)
            lines.append(f"  {_position(d).ljust(width)} {code}{marker} {d.message}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
