"""``mpslint server`` on Jupyter notebooks (LSP 3.17 notebook document sync), end to end.

A real LSP client (``tests/lspclient.py``) drives the real server in a
subprocess, sending notebooks as VS Code's client does: each cell a text
document with a ``vscode-notebook-cell:`` URI and a version of its own, its
text changed through ``notebookDocument/didChange``. What the server shows
in each cell is compared with what ``mpslint`` says about the same ``.ipynb``
on the command line, and what its fixes write with what ``mpslint --fix``
writes into that file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import pytest

pytest.importorskip("pygls")
nbformat = pytest.importorskip("nbformat")

from lsprotocol import types as lsp  # noqa: E402

from mpslint import catalog  # noqa: E402

from lspclient import PLAIN_CAPABILITIES, CellSpec, Session, code, markdown, run_async  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TRAIN = REPO / "fixtures" / "notebooks" / "train_cuda.ipynb"

# Cell 3 needs cell 1: `T` is torch only because cell 1 imports it so. Cells 1 and 3 hold IPython escapes,
# cell 2 is markdown and cell 4 is bash: neither is Python, whatever their text looks like.
CELLS: List[CellSpec] = [
    code("%matplotlib inline\nimport torch as T"),
    markdown("Move the batch with `x.cuda()`, then call `torch.cuda.synchronize()`."),
    code("!pip install -q tqdm\nT.cuda.empty_cache()"),
    code("%%bash\npython -c 'import torch; torch.zeros(1).cuda()'"),
    code("x = T.zeros(2).cuda()"),
]


def at(line: int, character: int) -> lsp.Range:
    return lsp.Range(start=lsp.Position(line, character), end=lsp.Position(line, character))


def found(diagnostics) -> List[tuple]:
    """(code, line, character) of each diagnostic, 1-based as the command line counts them."""
    return [(d.code, d.range.start.line + 1, d.range.start.character + 1) for d in diagnostics]


def write_notebook(path: Path, cells: Sequence[CellSpec]) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["language_info"] = {"name": "python"}
    for kind, language, text in cells:
        if kind == lsp.NotebookCellKind.Markup:
            notebook.cells.append(nbformat.v4.new_markdown_cell(text))
        else:
            cell = nbformat.v4.new_code_cell(text)
            if language != "python":
                cell.metadata["vscode"] = {"languageId": language}
            notebook.cells.append(cell)
    nbformat.write(notebook, str(path))
    return path


def cells_of(path: Path) -> List[CellSpec]:
    """A notebook file's cells as a client sends them."""
    cells = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        text = "".join(cell["source"])
        cells.append(code(text) if cell["cell_type"] == "code" else markdown(text))
    return cells


def cli_findings(path: Path, root: Path) -> Dict[int, List[tuple]]:
    """``mpslint --output-format json`` on the notebook: (code, row, column) by cell number."""
    done = subprocess.run(
        [sys.executable, "-m", "mpslint", "--no-cache", "--exit-zero", "--output-format", "json", str(path)],
        cwd=root, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    by_cell: Dict[int, List[tuple]] = {}
    for d in json.loads(done.stdout):
        by_cell.setdefault(d["cell"], []).append((d["code"], d["location"]["row"], d["location"]["column"]))
    return by_cell


def cli_fixed_sources(path: Path, root: Path) -> List[str]:
    """The cells' sources after ``mpslint --fix`` on a copy of the notebook."""
    copy = root / "cli" / path.name
    copy.parent.mkdir(exist_ok=True)
    copy.write_bytes(path.read_bytes())
    done = subprocess.run([sys.executable, "-m", "mpslint", "--fix", "--no-cache", "--exit-zero", str(copy)],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return ["".join(cell["source"]) for cell in json.loads(copy.read_text(encoding="utf-8"))["cells"]]


def apply_workspace_edit(session: Session, edit: lsp.WorkspaceEdit) -> Dict[str, str]:
    """The new text of each document the edit touches, as the client applies it (versions checked)."""
    uris = [change.text_document.uri for change in edit.document_changes or []] + list(edit.changes or {})
    return {uri: session.applied(uri, edit) for uri in uris}


# -- capabilities --------------------------------------------------------------------------------------------


@run_async
async def test_notebook_sync_is_offered_to_clients_that_have_it(tmp_path):
    async with Session(tmp_path) as session:
        capabilities = session.initialize_result.capabilities
        (selector,) = capabilities.notebook_document_sync.notebook_selector
        assert selector.notebook == "jupyter-notebook"
        assert [cell.language for cell in selector.cells] == ["python"]
        assert capabilities.notebook_document_sync.save
        assert "notebook.source.fixAll.mpslint" in capabilities.code_action_provider.code_action_kinds
    async with Session(tmp_path, capabilities=PLAIN_CAPABILITIES) as session:  # no notebooks in that client
        assert session.initialize_result.capabilities.notebook_document_sync is None


# -- diagnostics ----------------------------------------------------------------------------------------------


@run_async
async def test_each_cell_shows_what_the_command_line_reports_for_it(tmp_path):
    # Shaped like a published notebook: shell escapes, line and cell magics, help syntax, markdown, a device
    # chosen in one cell and a training loop over a loader and a model built in other cells.
    path = tmp_path / "train.ipynb"
    path.write_bytes(TRAIN.read_bytes())
    expected = cli_findings(path, tmp_path)
    assert sorted(expected) == [4, 7, 9]
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(path, cells_of(path))  # every cell, markdown too: the CLI's numbering
        for number, uri in enumerate(uris, start=1):
            published = await session.diagnostics(uri)
            assert found(published) == expected.get(number, []), f"cell {number}"
            for diagnostic in published:
                assert diagnostic.source == "mpslint"
                assert diagnostic.code_description.href == catalog.load()[diagnostic.code].url


@run_async
async def test_findings_land_in_their_cell_and_follow_cell_edits(tmp_path):
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(tmp_path / "a.ipynb", CELLS)
        published = {uri: found(await session.diagnostics(uri)) for uri in uris}
        assert list(published.values()) == [[], [], [("MPS104", 2, 1)], [], [("MPS101", 1, 5)]]

        # The import goes: `T` is no longer torch, so cell 3's call is no longer torch's (cell 3 unchanged).
        count = session.publications(uris[2])
        session.edit_cell(uris[0], (1, 0), (1, 17), "T = object()")
        assert await session.diagnostics(uris[2], after=count) == []
        # ... and it comes back.
        count = session.publications(uris[2])
        session.edit_cell(uris[0], (1, 0), (1, 12), "import torch as T")
        assert found(await session.diagnostics(uris[2], after=count)) == [("MPS104", 2, 1)]

        # A change in one cell, reported in that cell at its new place.
        version = session.edit_cell(uris[4], (0, 0), (0, 0), "# moved to the device\n")
        assert found(await session.diagnostics(uris[4], version)) == [("MPS101", 2, 5)]
        version = session.replace_cell(uris[4], "x = T.zeros(2)")
        assert await session.diagnostics(uris[4], version) == []


@run_async
async def test_inserted_deleted_and_moved_cells(tmp_path):
    async with Session(tmp_path) as session:
        notebook, uris = session.open_notebook(tmp_path / "a.ipynb", CELLS)
        await session.diagnostics(uris[4])
        count = session.publications(uris[2])
        (inserted,) = session.insert_cells(notebook, 1, [code("y = 1\nT.cuda.synchronize()")])
        assert found(await session.diagnostics(inserted)) == [("MPS104", 2, 1)]
        # The cells after it keep their findings, rows counted from their own first line.
        assert found(await session.diagnostics(uris[2], after=count)) == [("MPS104", 2, 1)]

        # Deleting the import cell: the findings that needed it go, and the deleted cell is cleared.
        count = {uri: session.publications(uri) for uri in uris}
        session.delete_cells(notebook, 0)
        assert await session.diagnostics(uris[2], after=count[uris[2]]) == []
        await session.wait_until(lambda: session.publications(uris[0]) > count[uris[0]], "the deleted cell cleared")
        assert list(session.published[uris[0]][-1].diagnostics) == []

        # A moved cell keeps its text document (no didOpen): its findings follow it.
        order = session.notebooks[notebook]
        count = session.publications(uris[4])
        session.move_cell(notebook, order.index(uris[4]), 0)
        assert found(await session.diagnostics(uris[4], after=count)) == [("MPS101", 1, 5)]


@run_async
async def test_a_cell_that_does_not_parse_is_MPS000_and_the_others_are_still_checked(tmp_path):
    cells = CELLS + [code("for x in range(3)\n    print(x)")]
    path = write_notebook(tmp_path / "broken.ipynb", cells)
    expected = cli_findings(path, tmp_path)
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(path, cells)
        (broken,) = await session.diagnostics(uris[5])
        assert broken.code == "MPS000" and broken.severity == lsp.DiagnosticSeverity.Error
        assert found([broken]) == expected[6]
        assert found(await session.diagnostics(uris[2])) == expected[3] == [("MPS104", 2, 1)]
        assert found(await session.diagnostics(uris[4])) == expected[5]
        # No fix and no noqa for text that does not parse; the other cells are still fixed, as by `--fix`.
        assert await session.code_actions(uris[5], broken.range) == []
        actions = await session.code_actions(uris[5], broken.range, only=["notebook.source.fixAll"])
        assert [a.kind for a in actions] == ["notebook.source.fixAll.mpslint"]
        version = session.edit_cell(uris[5], (0, 17), (0, 17), ":")
        assert await session.diagnostics(uris[5], version) == []


@run_async
async def test_rules_the_command_line_leaves_out_of_notebooks_stay_off(tmp_path):
    # MPS403 (an unguarded worker start) is about scripts that spawned workers re-import; notebooks are not.
    workers = "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(range(8), num_workers=2)\n"
    async with Session(tmp_path) as session:
        script = session.open(tmp_path / "w.py", workers)
        assert "MPS403" in [d.code for d in await session.diagnostics(script)]
        _, (cell,) = session.open_notebook(tmp_path / "w.ipynb", [code(workers)])
        assert "MPS403" not in [d.code for d in await session.diagnostics(cell)]


@run_async
async def test_a_cell_edited_before_the_first_check_is_checked_as_edited(tmp_path):
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(tmp_path / "a.ipynb", CELLS)
        version = session.replace_cell(uris[4], "y = T.ones(3)\nx = T.zeros(2).cuda()")  # right after the open
        assert found(await session.diagnostics(uris[4], version)) == [("MPS101", 2, 5)]
        # Nothing was ever published for this version of the cell but findings for its text.
        for params in session.published[uris[4]]:
            if params.version == version:
                assert found(params.diagnostics) == [("MPS101", 2, 5)]


@run_async
async def test_running_a_cell_is_not_a_change(tmp_path):
    async with Session(tmp_path) as session:
        notebook, uris = session.open_notebook(tmp_path / "a.ipynb", CELLS)
        await session.diagnostics(uris[4])
        (before,) = await session.code_actions(uris[4], at(0, 0), only=["notebook.source.fixAll"])
        session.run_cell(uris[2], 1)  # a new execution summary, cell metadata and notebook metadata
        (after,) = await session.code_actions(uris[4], at(0, 0), only=["notebook.source.fixAll"])
        assert after.data["version"] == before.data["version"]  # the same checked text, not re-checked
        session.edit_cell(uris[4], (0, 0), (0, 0), "\n")
        (edited,) = await session.code_actions(uris[4], at(1, 0), only=["notebook.source.fixAll"])
        assert edited.data["version"] != before.data["version"]


@run_async
async def test_an_empty_notebook_and_one_without_python(tmp_path):
    async with Session(tmp_path) as session:
        empty, none = session.open_notebook(tmp_path / "empty.ipynb", [])
        assert none == []
        _, others = session.open_notebook(
            tmp_path / "r.ipynb", [markdown("x.cuda()"), code("x <- torch$cuda()", language="r"), code("%%bash\nnvidia-smi")]
        )
        for uri in others:
            assert await session.diagnostics(uri) == []
        (cell,) = session.insert_cells(empty, 0, [code("import torch\ntorch.zeros(1).cuda()")])
        assert found(await session.diagnostics(cell)) == [("MPS101", 2, 1)]


# -- code actions ---------------------------------------------------------------------------------------------


@run_async
async def test_a_fix_in_a_cell_writes_what_mpslint_fix_writes_into_the_ipynb(tmp_path):
    # One fixable finding, whose fix also defines the device picker after the imports of the first cell.
    cells = [code("%matplotlib inline\nimport torch"), markdown("# Data"), code("x = torch.zeros(2).cuda()\nprint(x)")]
    path = write_notebook(tmp_path / "one.ipynb", cells)
    expected = cli_fixed_sources(path, tmp_path)
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(path, cells)
        (finding,) = await session.diagnostics(uris[2])
        actions = await session.code_actions(uris[2], finding.range)
        fix = actions[0]
        assert fix.title.startswith("mpslint (MPS101): ") and fix.kind == lsp.CodeActionKind.QuickFix
        assert fix.diagnostics[0].range == finding.range
        changed = apply_workspace_edit(session, fix.edit)
        assert sorted(changed) == sorted([uris[0], uris[2]])  # two cells, each with its version
        assert [changed.get(uri, session.texts[uri]) for uri in uris] == expected
        assert expected[0] != cells[0][2] and expected[2] != cells[2][2]
        versions = [session.replace_cell(uri, text) for uri, text in changed.items()]
        assert await session.diagnostics(uris[2], versions[-1]) == []


@run_async
async def test_fix_all_in_a_notebook_is_what_mpslint_fix_writes(tmp_path):
    path = tmp_path / "train.ipynb"
    path.write_bytes(TRAIN.read_bytes())
    expected = cli_fixed_sources(path, tmp_path)
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(path, cells_of(path))
        await session.diagnostics(uris[6])
        # VS Code asks for source.fixAll of every cell at once on save: a whole-notebook edit would be
        # applied once per cell. Fix-all is the notebook's own kind, asked for once per notebook.
        assert await session.code_actions(uris[6], at(0, 0), only=["source.fixAll"]) == []
        (fix_all,) = await session.code_actions(uris[6], at(0, 0), only=["notebook.source.fixAll"])
        assert fix_all.kind == "notebook.source.fixAll.mpslint" and fix_all.edit is None
        changed = apply_workspace_edit(session, (await session.resolve(fix_all)).edit)
        assert [changed.get(uri, session.texts[uri]) for uri in uris] == expected
        versions = {uri: session.replace_cell(uri, text) for uri, text in changed.items()}
        remaining = {i: found(await session.diagnostics(uri)) for i, uri in enumerate(uris, 1) if uri in versions}
        assert sum(len(v) for v in remaining.values()) == 2  # MPS201 and MPS106 have no fix
    async with Session(tmp_path, capabilities=PLAIN_CAPABILITIES) as session:  # plain `changes`, right away
        _, uris = session.open_notebook(path, cells_of(path))
        await session.diagnostics(uris[6])
        fix_alls = [a for a in await session.code_actions(uris[6], at(4, 16)) if a.title.startswith("mpslint: Fix all")]
        assert [a.kind for a in fix_alls] == [lsp.CodeActionKind.QuickFix]
        edit = fix_alls[0].edit
        assert edit.document_changes is None
        assert [session.applied(uri, edit) for uri in uris] == expected


@run_async
async def test_noqa_in_a_cell_with_ipython_escapes(tmp_path):
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(tmp_path / "a.ipynb", CELLS)
        (finding,) = await session.diagnostics(uris[2])
        actions = await session.code_actions(uris[2], finding.range)
        (noqa,) = [a for a in actions if a.title == "mpslint (MPS104): Disable for this line"]
        text = session.applied(uris[2], noqa.edit)
        assert text == "!pip install -q tqdm\nT.cuda.empty_cache()  # noqa: MPS104"
        version = session.replace_cell(uris[2], text)
        assert await session.diagnostics(uris[2], version) == []


@run_async
async def test_hover_on_a_cell_finding(tmp_path):
    async with Session(tmp_path) as session:
        _, uris = session.open_notebook(tmp_path / "a.ipynb", CELLS)
        await session.diagnostics(uris[4])
        hover = await session.hover(uris[4], 0, 16)
        assert hover.contents.value.startswith("**MPS101** `cuda-method`")
        assert catalog.load()["MPS101"].url in hover.contents.value
        assert await session.hover(uris[2], 0, 3) is None  # on the shell escape: nothing there


@run_async
async def test_closing_a_notebook_clears_every_cell(tmp_path):
    async with Session(tmp_path) as session:
        notebook, uris = session.open_notebook(tmp_path / "a.ipynb", CELLS)
        for uri in uris:
            await session.diagnostics(uri)
        count = {uri: session.publications(uri) for uri in uris}
        session.close_notebook(notebook)
        for uri in uris:
            await session.wait_until(lambda: session.publications(uri) > count[uri], f"{uri} cleared")
            assert list(session.published[uri][-1].diagnostics) == []
