"""``mpslint verify`` on a notebook: its cells run in order as one script, and the report points at cells."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpslint.notebook.script import NotebookScript

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "notebooks"
NOTEBOOK = FIXTURES / "verify_item.ipynb"


def test_the_script_is_the_python_cells_after_one_line():
    script = NotebookScript.of(str(NOTEBOOK))
    lines = script.text.splitlines()
    assert lines[0].startswith("display = ")
    assert lines[1] == "...            "  # `!echo preparing`, same length
    assert "%%bash" not in script.text and "echo a shell cell" not in script.text
    assert script.cell_of(1) is None
    assert script.cell_of(2) == (2, 1)
    row = lines.index("    history.append(loss.item())") + 1
    assert script.cell_of(row) == (6, 9)
    assert [note.split(": ", 1)[1] for note in script.notes] == [
        "not Python (a cell magic, an automagic or another language), not run",
        "IPython's `!echo preparing` skipped",
        "IPython's `%matplotlib inline` skipped",
        "IPython's `%%time` skipped",
    ]


def test_the_report_is_relabelled_to_cells():
    script = NotebookScript.of(str(NOTEBOOK))
    row = script.text.splitlines().index("    history.append(loss.item())") + 1
    report = {"script": "/tmp/x.py", "syncs": [{"kind": "item", "location": {"filename": "/tmp/x.py", "row": row}}],
              "static": [{"code": "MPS201", "row": row, "status": "confirmed"}, {"code": "MPS403", "row": 3, "status": "x"}],
              "errors": [{"location": {"filename": "other.py", "row": row}}]}
    notes = ["/tmp/x.py:%d: a note" % row]
    out, out_notes = script.relabel([report, notes], "/tmp/x.py")
    assert out["script"] == str(NOTEBOOK)
    assert out["syncs"][0]["location"] == {"filename": str(NOTEBOOK), "cell": 6, "row": 9}
    assert out["static"] == [{"code": "MPS201", "row": 9, "status": "confirmed", "cell": 6}]
    assert out["errors"][0]["location"] == {"filename": "other.py", "row": row}
    assert out_notes == [f"{NOTEBOOK}:cell 6:9: a note"]


def test_verify_simulate_runs_the_cells_and_reports_by_cell(tmp_path):
    pytest.importorskip("torch")
    from clitools import cli_runner
    from mpslint.verify.command import verify

    notebook = tmp_path / "train.ipynb"
    notebook.write_bytes(NOTEBOOK.read_bytes())
    result = cli_runner().invoke(verify, ["--simulate", "--output-format", "json", str(notebook)], catch_exceptions=False)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["script"] == str(notebook)
    assert report["script_exit_code"] == 0
    assert [(s["kind"], s["hot"], s["location"]) for s in report["syncs"]] == [
        ("item", True, {"filename": str(notebook), "cell": 6, "row": 9})
    ]
    assert report["static"] == [{"code": "MPS201", "row": 9, "status": "confirmed", "cell": 6}]
    assert "IPython's `%matplotlib inline` skipped" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.ipynb"]  # the script was removed
