"""The concise line, then the source line with the span underlined and the fix's title::

    train.py:12:5: MPS101 [*] `.cuda()` ties this tensor to CUDA
       |
    12 |     batch = batch.cuda()
       |             ^^^^^^^^^^^^ MPS101
       |
       = help: Replace with `.to(device)`
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import click

from mpslint.diagnostic import Diagnostic
from mpslint.output import Options
from mpslint.output.concise import header


def render(diagnostics: Sequence[Diagnostic], options: Options) -> str:
    lines_of: Dict[Tuple[str, Optional[int]], Optional[List[str]]] = {}
    blocks = []
    for d in diagnostics:
        key = (d.filename, d.cell)
        if key not in lines_of:
            lines_of[key] = _lines(d, options)
        blocks.append(_block(d, lines_of[key], options))
    return "\n".join(blocks)


def _lines(d: Diagnostic, options: Options) -> Optional[List[str]]:
    """The lines a finding's rows count: the file's, or in a notebook its cell's."""
    if d.cell is None:
        text = options.source(d.filename)
        return text.splitlines() if text is not None else None
    notebook = options.notebook(d.filename)
    if notebook is None or not 1 <= d.cell <= len(notebook.cells):
        return None
    return notebook.cells[d.cell - 1].source.splitlines()


def _block(d: Diagnostic, lines: Optional[List[str]], options: Options) -> str:
    out = [header(d, options)]
    row = d.location.row
    if lines is not None and 1 <= row <= len(lines):
        line = lines[row - 1]
        gutter = " " * len(str(row))
        start = max(d.location.column - 1, 0)
        end = d.end_location.column - 1 if d.end_location.row == row else len(line)
        width = max(end - start, 1)
        # Keep the line's own tabs so the carets line up however the terminal renders them.
        pad = "".join(ch if ch == "\t" else " " for ch in line[:start])
        out.append(f"{gutter} |")
        out.append(f"{row} | {line}")
        carets = f"{'^' * width} {d.code}"
        out.append(f"{gutter} | {pad}{click.style(carets, fg='red', bold=True) if options.color else carets}")
        out.append(f"{gutter} |")
        if d.fix is not None and d.fix.message:
            out.append(f"{gutter} = help: {d.fix.message}")
        if d.code == "MPS900" and d.detail:
            out.append(f"{gutter} = note: run with --verbose for the traceback")
    elif d.fix is not None and d.fix.message:
        out.append(f"  = help: {d.fix.message}")
    return "\n".join(out) + "\n"
