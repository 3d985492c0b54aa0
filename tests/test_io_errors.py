"""Paths mpslint could not read are MPS001 findings; a run that checked nothing never says it passed.

MPS001 follows Ruff's E902: a finding in every output format, exit 1 (2 with
--strict, 0 with --exit-zero), the rest of the run still checked, and no
"All checks passed!" after it. Paths that hold no Python file warn, as Ruff
does, and exit 0.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mpslint import catalog

from clitools import enter, fake_rules, run  # noqa: F401  (fixture)

CUDA = "import torch\n\nx = torch.zeros(1)\ny = x.cuda()\n"
LATIN1 = b"# caf\xe9\nimport torch\n"  # Latin-1 bytes, no coding cookie
TESTS = Path(__file__).resolve().parent
NO_FILES = "warning: No Python files found under the given path(s)\n"


@pytest.fixture
def project(tmp_path, monkeypatch, fake_rules):
    (tmp_path / "good.py").write_text(CUDA)
    (tmp_path / "latin1.py").write_bytes(LATIN1)
    return enter(tmp_path, monkeypatch)


@pytest.mark.parametrize("fmt", ["concise", "full", "json", "sarif", "github", "junit"])
def test_every_format_reports_the_unreadable_paths_and_the_rest(project, fmt):
    result = run("--output-format", fmt, "nope.py", "latin1.py", "good.py")
    assert result.exit_code == 1, result.output
    assert result.stderr == ""
    out = result.stdout
    if fmt == "json":
        found = {(Path(d["filename"]).name, d["code"], d["name"]) for d in json.loads(out)}
        assert found == {("nope.py", "MPS001", "io-error"), ("latin1.py", "MPS001", "io-error"), ("good.py", "MPS990", "test-cuda-call")}
        assert [d["url"] for d in json.loads(out) if d["code"] == "MPS001"][0].endswith("rules/MPS001.md")
    elif fmt == "sarif":
        run_ = json.loads(out)["runs"][0]
        found = {(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1], r["ruleId"]) for r in run_["results"]}
        assert found == {("nope.py", "MPS001"), ("latin1.py", "MPS001"), ("good.py", "MPS990")}
        rules = [rule["id"] for rule in run_["tool"]["driver"]["rules"]]
        assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in run_["results"] if r["ruleId"] == "MPS001")
    elif fmt == "github":
        assert "::error title=mpslint (MPS001),file=nope.py,line=1,col=1," in out
        assert "::error title=mpslint (MPS001),file=latin1.py,line=1,col=1," in out
        assert "file=good.py,line=4" in out
    elif fmt == "junit":
        cases = ET.fromstring(out).findall("./testsuite/testcase")
        found = {(case.get("file"), case.find("failure").get("type")) for case in cases}
        assert found == {("nope.py", "MPS001"), ("latin1.py", "MPS001"), ("good.py", "MPS990")}
    else:
        assert "nope.py:1:1: MPS001 No such file or directory\n" in out
        assert "latin1.py:1:1: MPS001 cannot decode: " in out
        assert "good.py:4:5: MPS990" in out
        assert "Found 3 findings." in out and "All checks passed!" not in out


@pytest.mark.parametrize(
    "flags, code",
    [((), 1), (("--strict",), 2), (("--exit-zero",), 0), (("--statistics",), 1), (("--fix",), 1), (("--diff",), 1)],
)
def test_exit_status_of_an_unreadable_path(project, flags, code):
    (project / "good.py").write_text("import torch\n")  # nothing else to report or fix
    result = run(*flags, "nope.py", "good.py")
    assert result.exit_code == code, result.output
    assert "All checks passed!" not in result.output
    if "--diff" in flags:
        assert result.stderr.startswith("nope.py:1:1: MPS001 No such file or directory\n")
    elif "--statistics" in flags:
        assert result.stdout.startswith("1\tMPS001\t[ ]\tio-error\n")
    else:
        assert "nope.py:1:1: MPS001" in result.stdout


def test_an_unreadable_path_cannot_be_deselected(project):
    # Like MPS000 and MPS900: accepted by name or code (suppression lists may name them), never dropped.
    for flags in (("--ignore", "MPS001"), ("--ignore", "io-error"), ("--select", "MPS990")):
        result = run(*flags, "nope.py")
        assert result.exit_code == 1 and "nope.py:1:1: MPS001" in result.stdout


def test_fix_still_fixes_the_readable_files(project):
    result = run("--fix", "nope.py", "latin1.py", "good.py")
    assert result.exit_code == 1
    assert "x.to(DEVICE)" in (project / "good.py").read_text()
    assert (project / "latin1.py").read_bytes() == LATIN1
    assert "Found 3 findings (1 fixed, 2 remaining)." in result.stdout


def test_unreadable_paths_are_never_cached(project, tmp_path):
    cache = tmp_path / "cache"
    for _ in range(2):
        result = run("--cache-dir", str(cache), "latin1.py")
        assert result.exit_code == 1 and "latin1.py:1:1: MPS001" in result.stdout
    (project / "latin1.py").write_bytes(b"# -*- coding: latin-1 -*-\n" + LATIN1)
    assert run("--cache-dir", str(cache), "latin1.py").stdout == "All checks passed!\n"


def test_the_rule_page_examples_are_what_mpslint_prints(project):
    """rules/MPS001.md shows console sessions; run each command and compare, so the page cannot drift."""
    page = catalog.load()["MPS001"].section("Example")
    sessions = re.findall(r"```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", page, re.DOTALL)
    assert len(sessions) == 2
    for command, output in sessions:
        args = command.split()
        assert args[0] == "mpslint"
        assert run(*args[1:]).stdout == output


# --- nothing to check ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["concise", "full", "json", "github"])
def test_paths_without_python_files_warn_and_exit_0(project, fmt):
    (project / "empty").mkdir()
    (project / "docs").mkdir()
    (project / "docs" / "index.md").write_text("# docs\n")
    result = run("--output-format", fmt, "empty", "docs")
    assert result.exit_code == 0
    assert result.stderr == NO_FILES
    assert "All checks passed!" not in result.stdout
    assert result.stdout == ("[]\n" if fmt == "json" else "")


def test_the_no_files_warning_respects_quiet(project):
    (project / "empty").mkdir()
    result = run("-q", "empty")
    assert result.exit_code == 0 and result.output == ""


def test_everything_excluded_is_no_files_too(project):
    # pre-commit passes staged files by name; with --force-exclude they may all be excluded.
    (project / "pyproject.toml").write_text("[tool.mpslint]\nextend-exclude = ['good.py']\n")
    result = run("--force-exclude", "good.py")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == NO_FILES


def test_an_unreadable_path_alone_is_not_also_no_files(project):
    result = run("nope.py")
    assert "No Python files" not in result.output


def test_no_success_summary_after_an_internal_error(project, monkeypatch):
    from mpslint import engine

    def crash(text, path, settings, **kw):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(engine, "check_text", crash)
    result = run("--no-cache", "good.py")
    assert result.exit_code == 2
    assert "error: good.py: internal error: RecursionError" in result.stderr
    assert result.stdout == ""


def test_a_fifo_is_reported_in_machine_formats_too(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe.py")
    driver = (
        f"import sys; sys.path.insert(0, {str(TESTS)!r}); from mpslint import registry; "
        "registry.FAMILIES = ('clitools',); from mpslint.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", driver, "--no-cache", "--output-format", "json", "pipe.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1
    [finding] = json.loads(done.stdout)
    assert (finding["code"], finding["message"]) == ("MPS001", "cannot read: not a regular file")
