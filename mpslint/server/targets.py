"""What one check covers, and how its results map back onto the client's documents.

A target is what the engine checks in one go, made of one or more client
documents (``Part``): a ``TextTarget`` is one open ``.py`` file; a
``NotebookTarget`` is a notebook synced through LSP 3.17 notebook document
sync, whose cells are each a text document of their own. A notebook is
checked as the command line checks a ``.ipynb`` (``mpslint.notebook.lint``):
its Python code cells in order, joined into one program by
``mpslint.notebook.program``, so a device chosen in one cell is the device
five cells later. Findings come back located in their cell (a cell number and
rows counted from the cell's first line) and fix edits name the cell they
change; each part is the document of one cell number, so the code actions,
the hover and the published diagnostics work on parts and never on the
joined program.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Tuple
from urllib.parse import unquote, urlparse

from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic, Edit, Location
from mpslint.notebook.ipython import is_python_cell
from mpslint.server.documents import Document, Snapshot
from mpslint.server.noqa import CommentMap
from mpslint.server.notebooks import OpenNotebook

PYTHON_SUFFIXES = (".py", ".pyi")
# Schemes of documents with a text of their own: saved files and buffers never saved. (Not, for instance,
# the `git:` copies an editor opens to show a diff: findings there would be noise.)
CHECKED_SCHEMES = ("file", "untitled")
# The engine's work order: a worker job (see mpslint.server.worker), or None when there is nothing to check.
Request = Optional[Tuple[str, tuple]]


def path_of(uri: str) -> Optional[Path]:
    """The file system path of a ``file:`` URI (None for any other scheme).

    Not ``pygls.uris.to_fs_path``: it leaves %-escapes as they are, so a project in
    ``My Projects/`` would never find its ``pyproject.toml``.
    """
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if os.name == "nt" and len(path) > 2 and path[0] == "/" and path[2] == ":":
        path = path[1:]  # /C:/x -> C:/x
    if parsed.netloc:
        path = f"//{parsed.netloc}{path}"  # a UNC share
    return Path(path)


def same_file(path: str) -> str:
    """One spelling per file, to compare a path the editor gave with one the project model read."""
    return os.path.normcase(os.path.realpath(path))


def is_python(uri: str, language_id: str) -> bool:
    """Whether the server checks this text document: Python source, saved or not."""
    if urlparse(uri).scheme not in CHECKED_SCHEMES:
        return False
    return language_id.lower() == "python" or urlparse(uri).path.endswith(PYTHON_SUFFIXES)


def is_checked_notebook(uri: str) -> bool:
    """Whether the server checks this notebook (the client syncs only Jupyter notebooks, see ``server``)."""
    return urlparse(uri).scheme in CHECKED_SCHEMES


@dataclass(frozen=True)
class Part:
    """One client document of a checked target, as it was checked: the file, or one cell of a notebook."""

    uri: str
    version: int  # the client's version of this document
    snapshot: Snapshot
    cell: Optional[int] = None  # the cell's number in the check (1-based, in the notebook's order)
    python: bool = True  # checked as Python (not markdown, another language, or a cell magic such as %%bash)
    # What the engine read where it differs from the text: IPython escapes replaced by same-length stand-ins.
    engine_text: Optional[str] = None


@dataclass
class Checked:
    """The findings for one snapshot of a target, checked with ``settings`` (None: excluded, not checked)."""

    version: int  # the target's version (a notebook's revision)
    parts: Tuple[Part, ...]
    path: str
    settings: Optional[Settings]
    diagnostics: List[Diagnostic]
    # The project's module files the check read (None: unknown, the check failed): saving one re-checks it.
    reads: Optional[FrozenSet[str]] = frozenset()
    _comments: Dict[str, CommentMap] = field(default_factory=dict, repr=False)
    _by_part: Optional[Dict[str, List[Diagnostic]]] = field(default=None, repr=False)
    _by_uri: Dict[str, Part] = field(default_factory=dict, repr=False)
    _by_cell: Dict[int, Part] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_uri = {part.uri: part for part in self.parts}
        self._by_cell = {part.cell: part for part in self.parts if part.cell is not None}

    def part(self, uri: str) -> Optional[Part]:
        return self._by_uri.get(uri)

    def _part_of_cell(self, cell: Optional[int]) -> Part:
        return self._by_cell.get(cell, self.parts[0]) if cell is not None else self.parts[0]

    def part_of(self, diagnostic: Diagnostic) -> Part:
        return self._part_of_cell(diagnostic.cell)

    def part_of_edit(self, edit: Edit) -> Part:
        return self._part_of_cell(edit.cell)

    def on(self, part: Part) -> List[Diagnostic]:
        """The findings in ``part``."""
        if self._by_part is None:
            self._by_part = {p.uri: [] for p in self.parts}
            for diagnostic in self.diagnostics:
                self._by_part[self.part_of(diagnostic).uri].append(diagnostic)
        return self._by_part.get(part.uri, [])

    def comments(self, part: Part) -> CommentMap:
        found = self._comments.get(part.uri)
        if found is None:
            found = self._comments[part.uri] = CommentMap.scan(part.engine_text or part.snapshot.text)
        return found

    def span(self, diagnostic: Diagnostic) -> Tuple[int, int]:
        """Where ``diagnostic`` is, as offsets into the text of its part."""
        snapshot = self.part_of(diagnostic).snapshot
        return snapshot.location_offset(diagnostic.location), snapshot.location_offset(diagnostic.end_location)


class TextTarget:
    """One Python file open in the editor, checked as it is in the buffer."""

    is_notebook = False

    def __init__(self, document: Document) -> None:
        self.document = document
        self.key = document.uri
        self.path = path_of(document.uri)

    @property
    def engine_path(self) -> str:
        """The file name the engine puts in its findings."""
        return str(self.path) if self.path is not None else self.document.uri

    @property
    def version(self) -> int:
        return self.document.version

    @property
    def uris(self) -> List[str]:
        return [self.document.uri]

    def parts(self) -> Tuple[Part, ...]:
        return (Part(self.document.uri, self.document.version, self.document.snapshot),)

    def check_request(self, parts: Tuple[Part, ...], path: str, settings: Settings) -> Request:
        return ("check", (parts[0].snapshot.text, path, settings))

    def read_check(self, parts: Tuple[Part, ...], value: Any) -> Tuple[List[Diagnostic], Tuple[Part, ...], FrozenSet[str]]:
        diagnostics, _parsed, reads = value
        return list(diagnostics), parts, frozenset(reads)

    def place(self, diagnostics: List[Diagnostic], parts: Tuple[Part, ...]) -> List[Diagnostic]:
        return diagnostics

    def fix_request(self, checked: Checked, unsafe: bool) -> Request:
        snapshot = checked.parts[0].snapshot
        return ("fix", (snapshot.text, checked.path, checked.settings, unsafe, snapshot.newline))

    def read_fix(self, checked: Checked, value: Any) -> Tuple[Dict[str, str], Optional[str]]:
        """The fixed text of each part, and the fixer's warning if it had one."""
        text, _fixed, error = value
        return {checked.parts[0].uri: text}, error


class NotebookTarget:
    """A Jupyter notebook open in the editor, checked as ``mpslint`` checks the ``.ipynb``, from its unsaved cells.

    A cell is checked when it is a code cell in Python that IPython runs as
    Python: not markdown, not a cell of another language, not a cell magic such
    as ``%%bash`` (``mpslint.notebook.ipython``). Rules that do not apply to
    notebooks stay off, as on the command line (``mpslint.notebook.lint``).
    """

    is_notebook = True

    def __init__(self, notebook: OpenNotebook) -> None:
        self.notebook = notebook
        self.key = notebook.uri
        self.path = path_of(notebook.uri)

    @property
    def engine_path(self) -> str:
        return str(self.path) if self.path is not None else self.notebook.uri

    @property
    def version(self) -> int:
        return self.notebook.revision

    @property
    def uris(self) -> List[str]:
        return self.notebook.uris

    def parts(self) -> Tuple[Part, ...]:
        parts = []
        for number, cell in enumerate(self.notebook.cells, start=1):
            document = cell.document
            python = cell.is_code and document.language_id.lower() == "python" and is_python_cell(document.text)
            parts.append(Part(cell.uri, document.version, document.snapshot, cell=number, python=python))
        return tuple(parts)

    def check_request(self, parts: Tuple[Part, ...], path: str, settings: Settings) -> Request:
        sources = [(p.cell, p.snapshot.text) for p in parts if p.python]
        return ("check_notebook", (sources, path, settings)) if sources else None

    def read_check(self, parts: Tuple[Part, ...], value: Any) -> Tuple[List[Diagnostic], Tuple[Part, ...], FrozenSet[str]]:
        diagnostics, engine_texts, reads = value
        parts = tuple(replace(p, engine_text=engine_texts[p.cell]) if p.cell in engine_texts else p for p in parts)
        return self.place(list(diagnostics), parts), parts, frozenset(reads)

    def place(self, diagnostics: List[Diagnostic], parts: Tuple[Part, ...]) -> List[Diagnostic]:
        """Findings about no cell in particular (mpslint's own failure, MPS900) go to the top of the first code cell."""
        first = next((p.cell for p in parts if p.python), parts[0].cell if parts else None)
        start = Location(1, 1)
        return [
            d if d.cell is not None else replace(d, cell=first, location=start, end_location=start, noqa_row=None, fix=None)
            for d in diagnostics
        ]

    def fix_request(self, checked: Checked, unsafe: bool) -> Request:
        sources = [(p.cell, p.snapshot.text) for p in checked.parts if p.python]
        return ("fix_notebook", (sources, checked.path, checked.settings, unsafe)) if sources else None

    def read_fix(self, checked: Checked, value: Any) -> Tuple[Dict[str, str], Optional[str]]:
        sources, _fixed, error = value
        return {p.uri: sources[p.cell] for p in checked.parts if p.cell in sources}, error
