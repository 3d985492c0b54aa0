"""Check, fix, diff and write one notebook: the runner's ``process_bytes`` for ``.ipynb`` files.

Checking goes through the engine's ``check_text`` on the notebook's program
(``program``); findings come back located in their cells. Fixing follows
``mpslint.fixer.fix_text`` (passes until nothing changes; a pass after which
a cell no longer parses is undone), except that each pass applies the fixes
to the cells' own sources, where the IPython escapes still are, and the
program is rebuilt from them. A cell with a syntax error is left as it is
while the others are fixed, as separate files would be: it is not part of
the program the fixes were computed on. The file is
then written with only the changed cells' ``source`` values replaced
(``document``), so outputs, metadata, execution counts, markdown and the
JSON's own layout stay byte for byte; a notebook with nothing to fix is never
rewritten.
"""

from __future__ import annotations

import codecs
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Sequence, Tuple

from mpslint.config import Settings
from mpslint.diagnostic import IO_ERROR, Diagnostic, Location
from mpslint.notebook.document import Notebook, NotebookError
from mpslint.notebook.ipython import is_python_cell
from mpslint.notebook.program import Program, apply_cell_edits

if TYPE_CHECKING:
    from mpslint.results import FileResult, Mode

INTERNAL_ERROR = "MPS900"
# Rules whose premise does not hold in a notebook. MPS403: spawned workers re-import the main *script*;
# a notebook's cells are not re-run by them, so an `if __name__ == "__main__":` guard is not the answer there.
NOT_FOR_NOTEBOOKS = frozenset({"MPS403"})


def notebook_settings(settings: Settings) -> Settings:
    if settings.select & NOT_FOR_NOTEBOOKS:
        return settings.with_codes(settings.select - NOT_FOR_NOTEBOOKS)
    return settings


@dataclass
class NotebookCheck:
    program: Program
    diagnostics: List[Diagnostic]  # located in cells
    in_program: List[Diagnostic]  # the program's own, for fixing
    broken: FrozenSet[int]  # cells left out of the program for a syntax error
    # The project's module files the check read: path -> summary digest (kept with the cache entry).
    depends: Dict[str, str] = field(default_factory=dict)


@dataclass
class NotebookFix:
    sources: Dict[int, str]
    check: NotebookCheck
    fixed: Counter = field(default_factory=Counter)
    error: Optional[str] = None
    passes: int = 0  # passes that changed the cells, as the fixer counts them for a file
    found: List[Diagnostic] = field(default_factory=list)  # the notebook's findings before any fix


def python_sources(notebook: Notebook) -> List[Tuple[int, str]]:
    """(cell number, source) of the code cells that are Python, in order; none if the kernel is not Python."""
    if not notebook.is_python:
        return []
    return [
        (cell.number, cell.source)
        for cell in notebook.cells
        if cell.is_code and cell.language in (None, "python") and is_python_cell(cell.source)
    ]


def check_sources(sources: Sequence[Tuple[int, str]], path: str, settings: Settings) -> NotebookCheck:
    from mpslint.engine import check_text

    # Cells are parsed alone only when the program does not parse as a whole (or may hold IPython escapes):
    # most notebooks then cost one parse of their code, as a script does.
    program, left_out = Program.of(sources, parse=False)
    result = check_text(program.text, path, settings)
    if not result.parsed:
        program, left_out = Program.of(sources)
        result = check_text(program.text, path, settings)
    broken = {number for number, _ in left_out}
    diagnostics: List[Diagnostic] = []
    for number, python in left_out:
        for d in check_text(python.text, path, settings).diagnostics:
            diagnostics.append(replace(d, cell=number, noqa_row=None))
    while not result.parsed and program.cells:
        # Every cell parses alone but the program does not: the cell where it fails is the one to report.
        failure = result.diagnostics[0]
        cell, location = program.in_cell(failure.location)
        if cell is None:
            break
        diagnostics.append(replace(failure, location=location, end_location=location, noqa_row=None, cell=cell.number))
        broken.add(cell.number)
        program = program.without(cell.number)
        result = check_text(program.text, path, settings)
    in_program = result.diagnostics if result.parsed else []
    for d in in_program:
        diagnostics.append(d if d.code == INTERNAL_ERROR else program.to_cells(d))
    diagnostics.sort(key=Diagnostic.sort_key)
    return NotebookCheck(program, diagnostics, in_program, frozenset(broken), dict(result.depends))


def fix_sources(sources: Sequence[Tuple[int, str]], path: str, settings: Settings, *, unsafe: bool) -> NotebookFix:
    from mpslint.fixer import MAX_PASSES, choose_fixes, tally
    from mpslint.source import dominant_newline

    order = [number for number, _ in sources]
    current = dict(sources)
    checked = check_sources(sources, path, settings)
    outcome = NotebookFix(dict(current), checked, found=checked.diagnostics)
    budget = Counter(d.code for d in checked.in_program)  # see fixer.fix_text: fixes of leftovers are not counted
    for _ in range(MAX_PASSES):
        program = checked.program
        mappable = [d for d in checked.in_program if d.fix is not None and all(program.cell_edit(e) for e in d.fix.edits)]
        chosen = choose_fixes(mappable, unsafe=unsafe)
        if not chosen:
            break
        edits = [program.cell_edit(e) for d in chosen for e in d.fix.edits]  # type: ignore[union-attr]
        changed = apply_cell_edits(current, [e for e in edits if e is not None], dominant_newline)
        if all(current[number] == text for number, text in changed.items()):
            break
        candidate = {**current, **changed}
        result = check_sources([(n, candidate[n]) for n in order], path, settings)
        if result.broken - checked.broken:
            outcome.error = (
                "a fix produced code that does not parse; those fixes were not applied "
                f"({', '.join(sorted({d.code for d in chosen}))}). Please report this as a bug."
            )
            break
        current = candidate
        checked = result
        outcome.passes += 1
        tally(outcome.fixed, budget, chosen)
    else:
        outcome.error = f"fixes did not converge after {MAX_PASSES} passes"
    outcome.sources = current
    outcome.check = checked
    return outcome


def decode(data: bytes) -> Tuple[str, bool]:
    """The notebook's text (UTF-8, as nbformat requires) and whether it had a byte order mark."""
    bom = data.startswith(codecs.BOM_UTF8)
    if bom:
        data = data[len(codecs.BOM_UTF8):]
    return data.decode("utf-8"), bom


def unreadable(display: str, exc: NotebookError) -> Diagnostic:
    location = Location(exc.row, exc.column)
    return Diagnostic(IO_ERROR, f"cannot read notebook: {exc}", display, location, location)


def fix_notebook(data: bytes, display: str, settings: Settings, *, unsafe: bool) -> NotebookFix:
    """The fix run ``mpslint --fix`` makes on a notebook's bytes, without writing anything.

    Raises UnicodeDecodeError or NotebookError for a notebook that cannot be read (the check reports those).
    """
    text, _ = decode(data)
    sources = python_sources(Notebook.parse(text))
    return fix_sources(sources, display, notebook_settings(settings), unsafe=unsafe)


def process_notebook(data: bytes, display: str, settings: Settings, mode: "Mode", *, target: Optional[str] = None) -> "FileResult":
    """Check or fix one notebook's bytes; with ``mode.fix`` and a ``target``, write the fixed notebook there."""
    from mpslint.diagnostic import io_error
    from mpslint.results import FileResult
    from mpslint.writing import write_fixed

    try:
        text, bom = decode(data)
    except UnicodeDecodeError as exc:
        return FileResult(display, [io_error(display, f"cannot decode: cannot decode as utf-8: {exc}")])
    try:
        notebook = Notebook.parse(text)
    except NotebookError as exc:
        return FileResult(display, [unreadable(display, exc)])
    sources = python_sources(notebook)
    settings = notebook_settings(settings)
    if not mode.fixing:
        checked = check_sources(sources, display, settings)
        return FileResult(display, checked.diagnostics, depends=checked.depends)

    outcome = fix_sources(sources, display, settings, unsafe=mode.unsafe)
    new_text = notebook.with_sources(outcome.sources) if outcome.fixed else text
    result = FileResult(display, outcome.check.diagnostics, fixed=outcome.fixed, warning=outcome.error, text=new_text)
    if new_text == text:
        return result
    if mode.diff:
        result.diff = cell_diff(notebook, outcome.sources, display)
    elif target is not None:
        encoded = (codecs.BOM_UTF8 if bom else b"") + new_text.encode("utf-8")
        return write_fixed(target, encoded, data, result, outcome.found, settings, mode)
    return result


def cell_diff(notebook: Notebook, sources: Dict[int, str], display: str) -> str:
    """A unified diff per changed cell, headed ``path:cell N`` (as Ruff's ``--diff`` shows notebooks)."""
    from mpslint.writing import unified_diff

    pieces = []
    for cell in notebook.cells:
        new = sources.get(cell.number)
        if new is not None and new != cell.source:
            pieces.append(unified_diff(_ended(cell.source), _ended(new), f"{display}:cell {cell.number}"))
    return "".join(pieces)


def _ended(source: str) -> str:
    """A cell's source with a final line break: a cell's last line has none, and that is not a change to show."""
    return source if not source or source.endswith(("\n", "\r")) else source + "\n"
