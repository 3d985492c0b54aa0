"""Notebooks through the command line: discovery, locations in every format, fixes, suppressions, cache, stdin.

The fixtures in ``fixtures/notebooks`` are shaped like published notebooks;
every notebook mpslint writes is checked against nbformat's official schema.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from clitools import enter, run

nbformat = pytest.importorskip("nbformat")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"
TRAIN = FIXTURES / "train_cuda.ipynb"
EXPECTED = [
    "train.ipynb:cell 4:1:10: MPS103",
    "train.ipynb:cell 7:5:16: MPS101",
    "train.ipynb:cell 7:5:26: MPS101",
    "train.ipynb:cell 7:10:23: MPS201",
    "train.ipynb:cell 9:1:1: MPS104",
    "train.ipynb:cell 9:2:1: MPS106",
]


@pytest.fixture
def work(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / ".git").mkdir()  # a project root of its own, with no config above it
    return tmp_path


def copy(name: str, work: Path, as_name: str = None) -> Path:
    target = work / (as_name or name)
    shutil.copyfile(FIXTURES / name, target)
    return target


def heads(output: str):
    """``path:cell N:row:col: CODE`` of each finding line."""
    return [re.match(r".*?: MPS\d{3}", line).group() for line in output.splitlines() if ": MPS" in line]


def valid(path: Path) -> None:
    nbformat.validate(nbformat.read(str(path), as_version=nbformat.NO_CONVERT))


def test_fixtures_are_valid_notebooks():
    for path in sorted(FIXTURES.glob("*.ipynb")):
        valid(path)


def test_cells_are_reported_like_ruff(work):
    copy("train_cuda.ipynb", work, "train.ipynb")
    result = run("--no-cache", "train.ipynb")
    assert result.exit_code == 1
    assert heads(result.stdout) == EXPECTED
    assert "Found 6 findings." in result.stdout


def test_a_folder_of_notebooks_is_checked(work):
    (work / "nbs").mkdir()
    copy("train_cuda.ipynb", work / "nbs", "train.ipynb")
    (work / "nbs" / ".ipynb_checkpoints").mkdir()
    copy("train_cuda.ipynb", work / "nbs" / ".ipynb_checkpoints", "train-checkpoint.ipynb")
    result = run("--no-cache", ".")
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines() if ": MPS" in line] == ["nbs/train.ipynb"] * 6


def test_include_and_extend_include(work):
    copy("train_cuda.ipynb", work, "train.ipynb")
    (work / "script.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (work / "notes.pyw").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (work / "pyproject.toml").write_text('[tool.mpslint]\ninclude = ["*.py"]\nextend-include = ["*.pyw"]\n')
    result = run("--no-cache", ".")
    files = {line.split(":")[0] for line in result.stdout.splitlines() if ": MPS" in line}
    assert files == {"script.py", "notes.pyw"}
    (work / "pyproject.toml").write_text('[tool.mpslint]\ninclude = "*.py"\n')
    bad = run("--no-cache", ".")
    assert bad.exit_code == 2 and "`include` must be a list of strings" in bad.stderr


def test_json_has_ruff_cell_field(work):
    copy("train_cuda.ipynb", work, "train.ipynb")
    data = json.loads(run("--no-cache", "--output-format", "json", "train.ipynb").stdout)
    first = data[0]
    assert (first["cell"], first["code"], first["location"], first["noqa_row"]) == (4, "MPS103", {"row": 1, "column": 10}, 1)
    # The fix adds the helper to the cell that imports torch (cell 3) and rewrites cell 4: each edit names its cell.
    assert sorted({e["cell"] for e in first["fix"]["edits"]}) == [3, 4]


@pytest.mark.parametrize("fmt", ["sarif", "github", "junit"])
def test_file_formats_point_at_the_line_of_the_notebook(work, fmt):
    copy("train_cuda.ipynb", work, "train.ipynb")
    text = (work / "train.ipynb").read_text()
    lines = text.splitlines()
    output = run("--no-cache", "--output-format", fmt, "train.ipynb").stdout
    if fmt == "sarif":
        results = json.loads(output)["runs"][0]["results"]
        cuda = [r for r in results if r["ruleId"] == "MPS101"][0]
        region = cuda["locations"][0]["physicalLocation"]["region"]
        row, column = region["startLine"], region["startColumn"]
        assert cuda["properties"] == {"cell": 7, "cellLine": 5, "cellColumn": 16}
        assert cuda["message"]["text"].startswith("cell 7, line 5: ")
        assert "fixes" not in cuda
    elif fmt == "github":
        line = [entry for entry in output.splitlines() if "MPS101" in entry][0]
        props = dict(p.split("=", 1) for p in line.split(" ", 1)[1].split("::")[0].split(","))
        row, column = int(props["line"]), int(props["col"])
        assert "train.ipynb:cell 7:5:16: MPS101" in line
    else:
        case = [c for c in ET.fromstring(output).iter("testcase") if c.get("name") == "org.mpslint.MPS101"][0]
        row, column = int(case.get("line")), int(case.get("column"))
        assert case.find("failure").text.startswith("cell 7, line 5, col 16, ")
    assert lines[row - 1][column - 1:].startswith("x.cuda(), y.cuda()")


def test_full_shows_the_cell_line(work):
    copy("train_cuda.ipynb", work, "train.ipynb")
    output = run("--no-cache", "--output-format", "full", "--select", "MPS201", "train.ipynb").stdout
    assert output.splitlines()[:4] == [
        "train.ipynb:cell 7:10:23: MPS201 `loss.item()` in the training loop waits for the device every step; "
        "accumulate on the device and read it every N steps",
        "   |",
        "10 |         losses.append(loss.item())",
        "   |                       ^^^^^^^^^^^ MPS201",
    ]


def test_fix_round_trip_matches_the_golden_notebook_and_is_idempotent(work):
    path = copy("train_cuda.ipynb", work, "train.ipynb")
    result = run("--no-cache", "--fix", "train.ipynb")
    assert result.exit_code == 1  # MPS201 and MPS106 have no fix
    assert "Found 6 findings (4 fixed, 2 remaining)." in result.stdout
    assert heads(result.stdout) == ["train.ipynb:cell 7:10:23: MPS201", "train.ipynb:cell 9:5:1: MPS106"]
    assert path.read_bytes() == (FIXTURES / "train_cuda.fixed.ipynb").read_bytes()
    valid(path)
    again = run("--no-cache", "--fix", "train.ipynb")
    assert "Found 2 findings." in again.stdout
    assert path.read_bytes() == (FIXTURES / "train_cuda.fixed.ipynb").read_bytes()


def test_fix_changes_nothing_but_code_sources(work):
    path = copy("train_cuda.ipynb", work, "train.ipynb")
    run("--no-cache", "--fix", "train.ipynb")
    before, after = json.loads(TRAIN.read_text()), json.loads(path.read_text())
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {k: v for k, v in new.items() if k != "source"}
        if old["cell_type"] != "code":
            assert old["source"] == new["source"]
    assert before["metadata"] == after["metadata"]
    assert after["cells"][7]["outputs"][1]["data"]["image/png"] == before["cells"][7]["outputs"][1]["data"]["image/png"]
    # The helper is defined once, in the cell that imports torch, before the magic that ends it.
    sources = ["".join(c["source"]) for c in after["cells"]]
    assert sum(s.count("def pick_device") for s in sources) == 1
    assert "def pick_device" in sources[2] and sources[2].endswith("%matplotlib inline")
    assert len(after["cells"]) == len(before["cells"])


def test_a_notebook_with_no_findings_is_byte_identical(work):
    path = copy("clean_v40.ipynb", work)
    before = path.read_bytes()
    assert not before.endswith(b"\n")
    stat = path.stat()
    for args in (("--fix",), ("--fix", "--unsafe-fixes"), ("--diff",), ()):
        result = run("--no-cache", *args, "clean_v40.ipynb")
        assert result.exit_code == 0, result.stdout
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == stat.st_mtime_ns


def test_diff_shows_which_cell_changes(work):
    path = copy("train_cuda.ipynb", work, "train.ipynb")
    before = path.read_bytes()
    result = run("--no-cache", "--diff", "train.ipynb")
    assert result.exit_code == 1
    headers = [line for line in result.stdout.splitlines() if line.startswith(("---", "+++"))]
    assert headers == [f"{sign} train.ipynb:cell {n}" for n in (3, 4, 7, 9) for sign in ("---", "+++")]
    assert "-device = \"cuda\" if torch.cuda.is_available() else \"cpu\"" in result.stdout
    assert "+device = pick_device().type" in result.stdout
    assert path.read_bytes() == before


def test_a_cell_with_a_syntax_error_leaves_the_rest_checked_and_fixed(work):
    path = copy("syntax_error.ipynb", work)
    result = run("--no-cache", "syntax_error.ipynb")
    syntax = re.compile(r"syntax_error\.ipynb:cell 2:1:\d+: MPS000")  # the column is the running Python's
    first, second = heads(result.stdout)
    assert syntax.fullmatch(first) and second == "syntax_error.ipynb:cell 3:1:5: MPS101"
    fixed = run("--no-cache", "--fix", "syntax_error.ipynb")
    assert [h for h in heads(fixed.stdout) if not syntax.fullmatch(h)] == []
    assert len(heads(fixed.stdout)) == 1
    cells = json.loads(path.read_text())["cells"]
    assert cells[1]["source"] == ['print "a Python 2 cell"']
    assert "".join(cells[2]["source"]).startswith("y = x.to(DEVICE)")
    valid(path)


def test_noqa_file_noqa_and_per_file_ignores(work):
    path = copy("train_cuda.ipynb", work, "train.ipynb")
    data = json.loads(path.read_text())
    loop = data["cells"][6]["source"]
    loop[4] = loop[4].replace("\n", "  # noqa: MPS101\n")
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    codes = [line.split(": ")[1].split()[0] for line in run("--no-cache", "train.ipynb").stdout.splitlines() if ": MPS" in line]
    assert codes == ["MPS103", "MPS201", "MPS104", "MPS106"]

    data["cells"][8]["source"].insert(0, "# mpslint: noqa: MPS1\n")
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    codes = [line.split(": ")[1].split()[0] for line in run("--no-cache", "train.ipynb").stdout.splitlines() if ": MPS" in line]
    assert codes == ["MPS201"]

    (work / "pyproject.toml").write_text('[tool.mpslint.per-file-ignores]\n"*.ipynb" = ["MPS2"]\n')
    assert run("--no-cache", "train.ipynb").exit_code == 0


def test_the_cache_serves_notebooks(work):
    copy("train_cuda.ipynb", work, "train.ipynb")
    first = run("train.ipynb")
    cached = run("train.ipynb")
    assert cached.stdout == first.stdout
    assert heads(cached.stdout) == EXPECTED
    entries = list((work / ".mpslint_cache").rglob("*.json"))
    assert len(entries) == 1 and '"cell":4' in entries[0].read_text()


def test_stdin_with_a_notebook_filename(work):
    text = TRAIN.read_text()
    checked = run("-", "--stdin-filename", "train.ipynb", input=text)
    assert heads(checked.stdout) == EXPECTED
    fixed = run("--fix", "-", "--stdin-filename", "train.ipynb", input=text)
    assert fixed.stdout == (FIXTURES / "train_cuda.fixed.ipynb").read_text()
    assert "train.ipynb:cell 7:10:23: MPS201" in fixed.stderr


@pytest.mark.parametrize(
    "content, needle, location",
    [
        ('{\n "cells": [\n<<<<<<< HEAD\n', "cannot read notebook: not valid JSON", "3:1"),
        ('{"nbformat": 3, "worksheets": []}', "cannot read notebook: nbformat 3 notebooks are not supported", "1:1"),
    ],
)
def test_a_file_that_is_not_a_notebook_is_mps001(work, content, needle, location):
    (work / "broken.ipynb").write_text(content)
    result = run("--no-cache", "broken.ipynb")
    assert result.exit_code == 1
    assert result.stdout.startswith(f"broken.ipynb:{location}: MPS001 {needle}")
    assert "All checks passed" not in result.stdout
    assert run("--no-cache", "--fix", "broken.ipynb").exit_code == 1
    assert (work / "broken.ipynb").read_text() == content


def test_notebooks_of_another_language_are_skipped(work):
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": ["x <- 1\n", "x.cuda()"]}],
          "metadata": {"kernelspec": {"language": "R", "name": "ir", "display_name": "R"}}, "nbformat": 4, "nbformat_minor": 4}
    (work / "r.ipynb").write_text(json.dumps(nb))
    assert run("--no-cache", "r.ipynb").exit_code == 0


def test_checking_python_files_does_not_import_the_notebook_code(work):
    (work / "a.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    probe = (
        "import sys\n"
        "from mpslint.cli import main\n"
        "try:\n"
        "    main(['--no-cache', 'a.py'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('mpslint.notebook.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=work, capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_pre_commit_hooks_pass_notebooks():
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert hooks.count("types_or: [python, pyi, jupyter]") == 2


def test_unguarded_workers_are_not_reported_in_notebooks(work):
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": ["import torch\n", "from torch.utils.data import DataLoader\n", "loader = DataLoader(range(8), num_workers=2)"]}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 4}
    (work / "w.ipynb").write_text(json.dumps(nb))
    (work / "w.py").write_text("".join(nb["cells"][0]["source"]) + "\n")
    output = run("--no-cache", "w.ipynb", "w.py").stdout
    assert [line.split(":")[0] for line in output.splitlines() if "MPS403" in line] == ["w.py"]


def _notebook(path: Path, cells) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, str(path))
    return path


def test_messages_name_cells_and_their_lines_not_the_programs(work):
    """A message that points at another line says the cell and the line in it, never "line 195" of the joined program."""
    _notebook(work / "env.ipynb", ["import torch\n", "x = 1\n", 'import os\nos.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"\n'])
    out = run("--select", "MPS505", "env.ipynb").stdout
    assert "env.ipynb:cell 3:2:" in out
    assert "(cell 1, line 1)" in out, out
    assert "(line 1)" not in out


def test_report_places_notebook_findings_in_their_cells(work):
    _notebook(work / "nb.ipynb", ["import torch\nx = torch.zeros(1).cuda()\n", "y = torch.zeros(1).cuda()\n"])
    markdown = run("report", "nb.ipynb").stdout
    assert "- cell 1:2:5 " in markdown and "- cell 2:1:5 " in markdown
    html = run("report", "--output-format", "html", "nb.ipynb").stdout
    assert '<span class="loc">cell 1:2:5</span>' in html and '<span class="loc">cell 2:1:5</span>' in html
    data = json.loads(run("report", "--output-format", "json", "nb.ipynb").stdout)
    assert sorted((f["cell"], f["row"]) for f in data["files"][0]["findings"]) == [(1, 2), (2, 1)]


# Where the device picker goes in a notebook (issue 25 item 3): right after the first torch import, in that cell,
# before the first use, whatever cells come before it.
PICKER_CASES = {
    "torch imported in the cell that chooses the device": (
        ["import numpy as np\nx = np.zeros(3)", "print(x)\nfor i in range(2):\n    pass",
         "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
         "model = torch.nn.Linear(2, 2).to(device)"],
        3, "device = pick_device()",
    ),
    "an import in a later cell": (
        ["import torch", "x = torch.ones(1).cuda()", "import matplotlib.pyplot as plt\nplt.plot([1])"],
        1, "x = torch.ones(1).to(DEVICE)",
    ),
    "torch imported after code cells": (
        ["!pip install torch", "import os\nprint(os.getcwd())\nif True:\n    pass",
         "import torch\nimport torch.nn as nn", "class Net(nn.Module):\n    pass", "net = Net().cuda()"],
        3, "net = Net().to(DEVICE)",
    ),
}


@pytest.mark.parametrize("name", list(PICKER_CASES))
def test_the_picker_goes_after_the_first_torch_import_in_that_cell(name):
    from mpslint.config import Settings
    from mpslint.notebook.lint import fix_sources

    cells, helper_cell, use = PICKER_CASES[name]
    out = fix_sources(list(enumerate(cells, 1)), "nb.ipynb", Settings(), unsafe=False)
    assert out.error is None and out.check.diagnostics == [] and sum(out.fixed.values()) == 1
    sources = [out.sources[n] for n in sorted(out.sources)]
    assert [n for n, text in enumerate(sources, 1) if "def pick_device" in text] == [helper_cell]
    assert sources[helper_cell - 1].startswith(cells[helper_cell - 1].split("\n")[0])  # after the import, in its cell
    first_use = next(n for n, text in enumerate(sources, 1) if "pick_device()" in text or "DEVICE)" in text)
    assert first_use == helper_cell and any(use in text for text in sources[helper_cell - 1:])
