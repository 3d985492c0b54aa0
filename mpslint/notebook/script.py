"""``mpslint verify notebook.ipynb``: the notebook as a script the verifier runs, and its report mapped back to cells.

The script is the notebook's program (``program``): its Python cells in order,
IPython's escapes replaced by ``...`` (so ``%matplotlib inline`` and ``!pip
install`` do not run; the report says which were skipped), after one line
that gives ``display()`` a plain meaning outside IPython. It is written next
to the notebook, so that the notebook's folder is first on ``sys.path`` as in
Jupyter, under a hidden name, and removed when the command ends. Every
``filename``/``row`` location of the report that points into it is rewritten
as the notebook, a ``cell`` and the row in that cell.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

from mpslint.diagnostic import Location
from mpslint.notebook.document import Notebook
from mpslint.notebook.ipython import is_python_cell
from mpslint.notebook.lint import NOT_FOR_NOTEBOOKS, decode, python_sources
from mpslint.notebook.program import Program
from mpslint.source import line_starts, location_of

# IPython's display() prints in a plain interpreter; notebooks call it as a builtin.
PRELUDE = 'display = getattr(__import__("builtins"), "display", print)  # added by mpslint verify\n'


@dataclass
class NotebookScript:
    notebook: str  # the path the user gave
    text: str
    program: Program
    notes: List[str] = field(default_factory=list)
    script: Optional[str] = None  # where the text was written

    @classmethod
    def of(cls, path: str) -> "NotebookScript":
        with open(path, "rb") as handle:
            text, _ = decode(handle.read())
        notebook = Notebook.parse(text)
        program, broken = Program.of(python_sources(notebook))
        notes = []
        if not notebook.is_python:
            notes.append(f"{path}: the notebook's kernel is {notebook.language}, not Python: nothing was run")
        for cell in notebook.cells:
            if cell.is_code and cell.source.strip() and not (cell.language in (None, "python") and is_python_cell(cell.source)):
                notes.append(f"{path}:cell {cell.number}: not Python (a cell magic, an automagic or another language), not run")
        for number, python in broken:
            error = python.error
            where = f"{number}:{getattr(error, 'lineno', None) or 1}"
            notes.append(f"{path}:cell {where}: a syntax error ({getattr(error, 'msg', error)}), not run")
        for cell in program.cells:
            for start, end in cell.python.escapes:
                row = location_of(line_starts(cell.source), start)[0]
                escape = cell.source[start:end].splitlines()[0]
                notes.append(f"{path}:cell {cell.number}:{row}: IPython's `{escape}` skipped")
        return cls(path, PRELUDE + program.text, program, notes)

    def write(self) -> str:
        """Write the script next to the notebook (or in a temporary folder if that fails); its path."""
        folder = os.path.dirname(os.path.abspath(self.notebook))
        stem = os.path.splitext(os.path.basename(self.notebook))[0]
        try:
            fd, path = tempfile.mkstemp(prefix=f".{stem}.", suffix=".mpslint-verify.py", dir=folder)
        except OSError:
            fd, path = tempfile.mkstemp(prefix=f"{stem}.", suffix=".mpslint-verify.py")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(self.text)
        self.script = path
        return path

    def remove(self) -> None:
        if self.script is not None:
            try:
                os.unlink(self.script)
            except OSError:
                pass
            self.script = None

    def cell_of(self, row: int) -> Optional[Tuple[int, int]]:
        """(cell, row in the cell) of a row of the script, or None for the prelude."""
        if row < 2:
            return None
        cell, location = self.program.in_cell(Location(row - 1, 1))
        return (cell.number, location.row) if cell is not None else None

    def relabel(self, report: Any, script: str) -> Any:
        """The verifier's report (dicts, lists, strings) with locations in ``script`` moved to the notebook's cells."""
        if isinstance(report, dict):
            out = {key: self.relabel(value, script) for key, value in report.items()}
            if isinstance(out.get("static"), list):
                out["static"] = [s for s in out["static"] if not (isinstance(s, dict) and s.get("code") in NOT_FOR_NOTEBOOKS)]
            if isinstance(report.get("row"), int) and report.get("filename", script) == script:
                mapped = self.cell_of(out["row"])
                if mapped is not None:
                    if "filename" in out:
                        out["filename"] = self.notebook
                    out["cell"], out["row"] = mapped
            return out
        if isinstance(report, list):
            return [self.relabel(item, script) for item in report]
        if isinstance(report, str) and script in report:
            return re.sub(re.escape(script) + r"(?::(\d+))?", lambda m: self._where(m.group(1)), report)
        return report

    def _where(self, row: Optional[str]) -> str:
        mapped = self.cell_of(int(row)) if row else None
        return f"{self.notebook}:cell {mapped[0]}:{mapped[1]}" if mapped else self.notebook
