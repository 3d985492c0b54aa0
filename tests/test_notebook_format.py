"""Reading notebooks, IPython escapes and the cell <-> program map, on small notebooks built in the tests."""

from __future__ import annotations

import codecs
import json

import pytest

from mpslint.diagnostic import Edit, Location
from mpslint.notebook.document import Notebook, NotebookError
from mpslint.notebook.ipython import as_python, is_python_cell
from mpslint.notebook.program import Program


def notebook_text(*sources, indent=1, minor=5, as_list=True, ensure_ascii=False, metadata=None) -> str:
    cells = []
    for source in sources:
        kind, text = source if isinstance(source, tuple) else ("code", source)
        cell = {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True) if as_list else text}
        if kind == "code":
            cell.update(execution_count=None, outputs=[])
        cells.append(cell)
    nb = {"cells": cells, "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": minor}
    return json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + "\n"


# --- the file ----------------------------------------------------------------------


def test_cells_and_their_sources():
    nb = Notebook.parse(notebook_text(("markdown", "# Title"), "import torch\nx = 1", ""))
    assert [(c.number, c.cell_type, c.source) for c in nb.cells] == [(1, "markdown", "# Title"), (2, "code", "import torch\nx = 1"), (3, "code", "")]
    assert all(c.is_list for c in nb.cells)


@pytest.mark.parametrize("indent", [None, 1, 2, "\t"])
@pytest.mark.parametrize("as_list", [True, False])
def test_new_sources_change_only_their_values(indent, as_list):
    text = notebook_text(("markdown", "Some *text*"), "import torch\nx = torch.ones(2).cuda()\ny = 2", "z = 3", indent=indent, as_list=as_list)
    nb = Notebook.parse(text)
    new = nb.with_sources({2: "import torch\nx = torch.ones(2).to(DEVICE)\ny = 2"})
    expected = json.loads(text)
    value = "import torch\nx = torch.ones(2).to(DEVICE)\ny = 2"
    expected["cells"][1]["source"] = value.splitlines(keepends=True) if as_list else value
    assert json.loads(new) == expected
    # Every byte before and after the changed value is the same.
    start, end = nb.cells[1].span
    assert new.startswith(text[:start]) and new.endswith(text[end:])
    if indent is not None:  # the new value is laid out like the old one: only the changed line differs
        old_lines, new_lines = text.splitlines(), new.splitlines()
        assert len(old_lines) == len(new_lines)
        assert [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b] == [next(i for i, line in enumerate(old_lines) if "cuda" in line)]


def test_unchanged_sources_give_the_same_text():
    text = notebook_text("x = 1", "y = 2")
    nb = Notebook.parse(text)
    assert nb.with_sources({1: "x = 1", 2: "y = 2"}) == text
    assert nb.with_sources({}) == text


def test_lines_added_to_an_empty_cell_follow_the_file_indentation():
    text = notebook_text("import torch", "", indent=2)
    nb = Notebook.parse(text)
    new = nb.with_sources({2: "a = 1\nb = 2"})
    assert json.loads(new)["cells"][1]["source"] == ["a = 1\n", "b = 2"]
    assert '      "source": [\n        "a = 1\\n",\n        "b = 2"\n      ]' in new


def test_escaped_non_ascii_stays_escaped_and_crlf_stays():
    text = notebook_text(("markdown", "café"), "s = 'é'\nx.cuda()", ensure_ascii=True).replace("\n", "\r\n")
    nb = Notebook.parse(text)
    assert nb.cells[1].source == "s = 'é'\nx.cuda()"
    new = nb.with_sources({2: "s = 'é'\nx.to(d)\nr = 'ü'"})
    assert "\\u00fc" in new and "ü" not in new
    assert "\n" not in new.replace("\r\n", "")
    assert json.loads(new)["cells"][1]["source"] == ["s = 'é'\n", "x.to(d)\n", "r = 'ü'"]


@pytest.mark.parametrize(
    "text, needle, row",
    [
        ("", "Unexpected end of file", 1),
        ("[]", "a notebook is a JSON object", 1),
        ('{\n "cells": [\n  {"cell_type": "code" "source": ""}\n ]\n}', "not valid JSON", 3),
        ('{"cells": [], "nbformat": 3}', "nbformat 3 notebooks are not supported", 1),
        ('{"worksheets": [], "nbformat": 2}', "convert it", 1),
        ('{"cells": [], "nbformat": "4"}', 'expected "nbformat": 4, found "4"', 1),
        ('{"nbformat": 4, "metadata": {}}', "no `cells` array", 1),
        ('{"nbformat": 4, "cells": [{"source": "x"}]}', "cell 1 has no `cell_type`", 1),
        ('{"nbformat": 4, "cells": [{"cell_type": "code"}]}', "cell 1 has no `source`", 1),
        ('{"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a", 1]}]}', "not a string or a list of strings", 1),
        ('{"nbformat": 4, "cells": []} x', "Extra data", 1),
    ],
)
def test_what_is_not_a_readable_notebook(text, needle, row):
    with pytest.raises(NotebookError) as info:
        Notebook.parse(text)
    assert needle in str(info.value)
    assert info.value.row == row


def test_language_of_the_kernel():
    assert Notebook.parse(notebook_text("x")).is_python
    r = {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}
    assert not Notebook.parse(notebook_text("x <- 1", metadata=r)).is_python
    assert not Notebook.parse(notebook_text("x", metadata={"kernelspec": {"language": "julia"}})).is_python


def test_file_position_points_into_the_json_string():
    text = notebook_text(("markdown", "# T"), 'a = "q\\"é"\nb = x.cuda()')
    nb = Notebook.parse(text)
    row, column = nb.file_position(2, 2, 5)  # the `x` of `x.cuda()`
    assert text.splitlines()[row - 1][column - 1:].startswith("x.cuda()")
    row, column = nb.file_position(2, 1, 9)  # after an escaped backslash and quote: `é`, then `\"` in JSON
    assert text.splitlines()[row - 1][column - 1:].startswith('\u00e9\\"')


def test_file_position_in_a_source_kept_as_one_string():
    text = notebook_text("import torch\ny = x.cuda()", as_list=False)
    nb = Notebook.parse(text)
    row, column = nb.file_position(1, 2, 5)
    line = text.splitlines()[row - 1]
    assert line[column - 1:].startswith("x.cuda()")


def test_a_byte_order_mark_is_kept(tmp_path):
    from mpslint.notebook.lint import decode

    data = codecs.BOM_UTF8 + notebook_text("x = 1").encode()
    text, bom = decode(data)
    assert bom and text.startswith("{")


# --- IPython ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, python",
    [
        ("x = 1", True),
        ("%%time\nx = f()", True),
        ("%%capture out\nx = f()", True),
        ("\n%%timeit -n 3\nf()", True),
        ("%%bash\necho hi", False),
        ("%%writefile train.py\nimport torch", False),
        ("pip install torch", False),
        ("cd data", False),
        ("time = 5", True),  # an automagic name assigned to is Python
        ("run(model)", True),
    ],
)
def test_which_cells_are_python(source, python):
    assert is_python_cell(source) is python


@pytest.mark.parametrize(
    "source",
    [
        "%matplotlib inline\nimport torch",
        "!pip install torch\nimport torch",
        "files = !ls *.pt\nprint(files)",
        "a, b = %sx echo 1 2",
        "torch.cuda.is_available?",
        "?torch.cuda",
        "for f in files:\n    !wget {f}\n",
        "%%time\nx = 1",
        "!pip install \\\n    torch\nimport torch",
        "x = f(1)  # why?\n%who",
        "%ls",
        "!",
    ],
)
def test_escapes_become_same_length_python(source):
    cell = as_python(source)
    assert cell.error is None
    assert len(cell.text) == len(source)
    assert cell.text.count("\n") == source.count("\n")
    compile(cell.text, "<cell>", "exec")
    # Outside the escapes, nothing changed.
    kept = list(source)
    for start, end in cell.escapes:
        kept[start:end] = cell.text[start:end]
    assert "".join(kept) == cell.text


def test_percent_and_bang_inside_strings_and_comments_are_not_escapes():
    source = 's = """\n%not a magic\n!nor a shell\nwhat?\n"""\n# %comment\nx = 1'
    cell = as_python(source)
    assert cell.error is None and cell.text == source and cell.escapes == ()


def test_a_real_syntax_error_is_reported_where_python_reports_it():
    cell = as_python("%matplotlib inline\nimport torch\ndef f(:\n    pass")
    assert cell.error is not None and cell.error.lineno == 3
    assert cell.text.startswith("...")  # the escape before it was replaced


def test_edits_touching_an_escape_are_refused():
    cell = as_python("x = 1\nfiles = !ls\ny = 2")
    start = cell.text.index("...")
    assert cell.touches_escape(start, start + 2)
    assert not cell.touches_escape(0, 5)
    assert not cell.touches_escape(start - 8, start - 8)


# --- the program -------------------------------------------------------------------------


def test_rows_map_to_cells():
    program, broken = Program.of([(2, "import torch\nx = 1"), (4, "def f(:\n  pass"), (5, "%time g()\ny = x.cuda()")])
    assert [n for n, _ in broken] == [4]
    assert program.text == "import torch\nx = 1\n" + "...      \ny = x.cuda()\n"
    cell, location = program.in_cell(Location(4, 5))
    assert cell.number == 5 and location == Location(2, 5)


def test_lines_inserted_where_a_cell_ends_go_to_that_cell():
    program, _ = Program.of([(1, "import torch"), (2, "x = 1")])
    insertion = Edit(Location(2, 1), Location(2, 1), "\nDEVICE = 1\n")
    assert program.cell_edit(insertion) == (1, len("import torch"), len("import torch"), "\n\nDEVICE = 1")
    # A replacement at the start of the next cell stays there.
    assert program.cell_edit(Edit(Location(2, 1), Location(2, 2), "y")) == (2, 0, 1, "y")
    # An edit across cells is not mapped.
    assert program.cell_edit(Edit(Location(1, 1), Location(2, 2), "")) is None


def test_deleting_the_last_line_of_a_cell_takes_its_line_break():
    program, _ = Program.of([(1, "a = 1\nb = 2"), (2, "c = 3")])
    assert program.cell_edit(Edit(Location(2, 1), Location(3, 1), "")) == (1, 5, 11, "")


def test_an_unclosed_bracket_is_reported_in_its_own_cell():
    from mpslint.config import Settings
    from mpslint.notebook.lint import check_sources

    checked = check_sources([(1, "import torch\nx = torch.ones(2, (3,"), (2, "y = 1"), (3, "z = torch.ones(2).cuda()")], "nb.ipynb", Settings())
    assert [(d.code, d.cell) for d in checked.diagnostics] == [("MPS000", 1), ("MPS101", 3)]
    assert checked.broken == {1}
