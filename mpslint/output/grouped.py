"""Findings grouped under their file's name, ``row:col CODE [*] message`` indented below it (Ruff's ``grouped``)."""

from __future__ import annotations

from itertools import groupby
from typing import List, Sequence

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options, fix_applicable


def _position(d: Diagnostic) -> str:
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{cell}{d.location.row}:{d.location.column}"


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    blocks: List[str] = []
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        findings = list(group)
        width = max(len(_position(d)) for d in findings)
        lines = [f"{filename}:"]
        for d in findings:
            marker = " [*]" if fix_applicable(d, options.unsafe) else ""
            lines.append(f"  {_position(d).ljust(width)} {d.code}{marker} {d.message}")
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)
