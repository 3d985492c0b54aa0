"""Output formats: one module per format, imported only when a run uses it.

Every format module has ``render(diagnostics, options) -> str``. ``concise``,
``full`` and ``grouped`` are for people (the CLI adds summary lines); the others
are for machines and the CLI prints nothing else on stdout with them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from mpslint.diagnostic import Diagnostic, Location

FORMATS = ("concise", "full", "grouped", "json", "json-lines", "sarif", "github", "gitlab", "azure", "rdjson", "pylint", "junit")
TEXT_FORMATS = frozenset({"concise", "full", "grouped"})  # for people: the CLI adds summary lines


@dataclass
class Options:
    unsafe: bool = False  # whether unsafe fixes count as applicable (the `[*]` marker)
    color: bool = False  # ANSI colours in the formats for people (concise, grouped, full)
    # display path -> the file's current text (for `full`), or None when unavailable
    source: Callable[[str], Optional[str]] = field(default=lambda path: None)
    _notebooks: Dict[str, Any] = field(default_factory=dict, repr=False)

    def notebook(self, path: str):
        """The notebook at ``path`` (``mpslint.notebook.document.Notebook``), or None when it cannot be read."""
        if path not in self._notebooks:
            from mpslint.notebook.document import Notebook, NotebookError

            text = self.source(path)
            try:
                self._notebooks[path] = Notebook.parse(text) if text is not None else None
            except NotebookError:
                self._notebooks[path] = None
        return self._notebooks[path]


def file_region(d: Diagnostic, options: Options) -> Tuple[Location, Location]:
    """Where a finding is in the file itself: in a notebook, the line and column of the JSON text.

    Formats read by tools that open the file (SARIF, GitHub annotations,
    JUnit) need this; a cell's own rows would point at unrelated JSON lines.
    A notebook that cannot be read back points at its first line.
    """
    if d.cell is None:
        return d.location, d.end_location
    notebook = options.notebook(d.filename)
    if notebook is None or not 1 <= d.cell <= len(notebook.cells):
        return Location(1, 1), Location(1, 1)
    start = notebook.file_position(d.cell, d.location.row, d.location.column)
    end = notebook.file_position(d.cell, d.end_location.row, d.end_location.column)
    return Location(*start), Location(*end)


def fix_applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.fix is not None and bool(diagnostic.fix.edits) and diagnostic.fix.is_applicable(unsafe)


def render(name: str, diagnostics: Sequence[Diagnostic], options: Options) -> str:
    if name not in FORMATS:
        raise ValueError(f"unknown output format {name!r}")
    module = importlib.import_module(f"mpslint.output.{name.replace('-', '_')}")
    return module.render(diagnostics, options)
