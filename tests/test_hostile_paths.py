"""Paths that once crashed mpslint are findings instead (issue 29, item 5).

A name that is not UTF-8, a directory nobody may enter, a notebook nested
thousands deep, a file named on the command line that cannot be read: each is
reported (MPS001, or the file's findings under a printable name) and the rest
of the run is still checked.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clitools import enter, run

ROOT = Path(__file__).resolve().parent.parent
CUDA = "import torch\nx = torch.zeros(1).cuda()\n"
BAD_NAME = os.fsdecode(b"bad\xff.py")  # how the OS hands mpslint a name that is not UTF-8
non_utf8_names = pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="the file system only takes Unicode names")


def _mpslint(*args, cwd, env=None):
    environment = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    environment.pop("MPSLINT_OUTPUT_FORMAT", None)
    return subprocess.run([sys.executable, "-m", "mpslint", *args], cwd=cwd, env=environment, capture_output=True, timeout=120)


@non_utf8_names
@pytest.mark.parametrize("fmt", ["concise", "full", "json", "sarif", "github", "junit"])
def test_a_name_that_is_not_utf8_is_shown_with_its_byte_in_every_format_and_file(tmp_path, monkeypatch, fmt):
    enter(tmp_path, monkeypatch)
    (tmp_path / BAD_NAME).write_text(CUDA)
    result = run("--no-cache", "--output-format", fmt, "-o", "out.txt", ".")
    assert result.exit_code == 1, result.output
    written = (tmp_path / "out.txt").read_bytes().decode("utf-8")  # strict: the report is UTF-8
    # SARIF names files by URI, which holds the name's very bytes; the others show the name.
    assert ("bad%FF.py" if fmt == "sarif" else "bad\\xff.py") in written.replace("\\\\", "\\")
    if fmt == "full":
        assert "x = torch.zeros(1).cuda()" in written  # the source is found by the file's real name


@non_utf8_names
def test_a_name_that_is_not_utf8_on_a_strict_utf8_stdout(tmp_path):
    (tmp_path / BAD_NAME).write_text(CUDA)
    result = _mpslint("--no-cache", ".", cwd=tmp_path, env={"PYTHONIOENCODING": "utf-8"})
    assert result.returncode == 1, result.stderr.decode()
    assert b"bad\\xff.py:2:5: MPS101" in result.stdout
    assert b"Traceback" not in result.stderr


@non_utf8_names
def test_a_name_that_is_not_utf8_in_the_report(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / BAD_NAME).write_text(CUDA)
    from mpslint.cli import main
    from clitools import cli_runner

    result = cli_runner().invoke(main, ["report", "--no-cache", "-o", "report.html", "--output-format", "html", "."],
                                 catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "bad\\xff.py" in (tmp_path / "report.html").read_bytes().decode("utf-8")


def test_a_notebook_nested_thousands_deep_is_mps001(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "deep.ipynb").write_text('{"cells": ' + "[" * 5000 + "]" * 5000 + "}")
    (tmp_path / "good.py").write_text(CUDA)
    result = run("--no-cache", "--output-format", "json", ".")
    assert result.exit_code == 1, result.output
    found = {(Path(d["filename"]).name, d["code"]) for d in json.loads(result.stdout)}
    assert found == {("deep.ipynb", "MPS001"), ("good.py", "MPS101")}
    assert "nests too deeply" in result.stdout


# --- permissions: tests run as root, where chmod 000 blocks nothing ----------------------------------


def _closed_tree(tmp_path):
    (tmp_path / "p" / "closed").mkdir(parents=True)
    (tmp_path / "p" / "good.py").write_text(CUDA)
    (tmp_path / "p" / "closed" / "hidden.py").write_text(CUDA)
    (tmp_path / "unreadable.py").write_text(CUDA)
    return tmp_path / "p" / "closed", tmp_path / "unreadable.py"


def test_a_directory_that_cannot_be_entered_is_mps001_and_the_rest_is_checked(tmp_path, monkeypatch):
    """As a user without the permission sees it: stat of anything inside fails, and so does listing it."""
    closed, _ = _closed_tree(tmp_path)
    enter(tmp_path, monkeypatch)
    denied = str(closed.resolve())
    real_stat, real_scandir = os.stat, os.scandir

    def inside(path) -> bool:
        return os.path.abspath(os.fsdecode(path)).startswith(denied + os.sep)

    def stat(path, *args, **kwargs):
        if not isinstance(path, int) and inside(path):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_stat(path, *args, **kwargs)

    def scandir(path="."):
        if not isinstance(path, int) and os.path.abspath(os.fsdecode(path)) == denied:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "stat", stat)
    monkeypatch.setattr(os, "scandir", scandir)
    result = run("--no-cache", "p")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[:2] == [
        "p/closed:1:1: MPS001 Permission denied",
        "p/good.py:2:5: MPS101 [*] `.cuda()` moves to CUDA only, so this never runs on MPS (and fails without CUDA); "
        "use `.to(device)`",
    ]


def _without_root_powers():
    """A command prefix that runs as root but without the capabilities that let root ignore permissions."""
    if os.name != "posix" or shutil.which("setpriv") is None:
        return None
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    if os.geteuid() != 0:
        return []
    return prefix


def _really_denied(prefix, path) -> bool:
    probe = subprocess.run([*prefix, sys.executable, "-c", f"open({str(path)!r}).read()"], capture_output=True)
    return probe.returncode != 0


def test_permissions_for_real(tmp_path):
    """The same with real permissions, where this machine lets a process give them up (Linux: setpriv)."""
    closed, unreadable = _closed_tree(tmp_path)
    prefix = _without_root_powers()
    if prefix is None:
        pytest.skip("no way to run without root's powers here")
    closed.chmod(0)
    unreadable.chmod(0)
    try:
        if not _really_denied(prefix, unreadable):
            pytest.skip("permissions are not enforced for this process")
        environment = dict(os.environ, PYTHONPATH=str(ROOT))
        result = subprocess.run([*prefix, sys.executable, "-m", "mpslint", "--no-cache", "unreadable.py", "p"],
                                cwd=tmp_path, env=environment, capture_output=True, timeout=120, text=True)
    finally:
        closed.chmod(0o755)
        unreadable.chmod(0o644)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "p/closed:1:1: MPS001 Permission denied"
    assert lines[1].startswith("p/good.py:2:5: MPS101")
    assert lines[2] == "unreadable.py:1:1: MPS001 cannot read: Permission denied"
    assert "Traceback" not in result.stderr


def test_an_unreadable_file_on_the_command_line_is_mps001_and_the_others_are_checked(tmp_path, monkeypatch):
    """click's own readability check made it a usage error (exit 2) before anything was checked."""
    _, unreadable = _closed_tree(tmp_path)
    enter(tmp_path, monkeypatch)
    real_access, real_open = os.access, os.open

    def access(path, mode, *args, **kwargs):
        return False if os.path.abspath(os.fsdecode(path)) == str(unreadable) else real_access(path, mode, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if os.path.abspath(os.fsdecode(path)) == str(unreadable):
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(os, "open", open_)
    result = run("--no-cache", "unreadable.py", "p/good.py")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[:2] == [
        "p/good.py:2:5: MPS101 [*] `.cuda()` moves to CUDA only, so this never runs on MPS (and fails without CUDA); "
        "use `.to(device)`",
        "unreadable.py:1:1: MPS001 cannot read: Permission denied",
    ]
    # The report says what it could not read in its own way (its verdict and exit code); what matters
    # here is that it was not refused as a usage error and the other file was checked.
    result = run("report", "--no-cache", "--output-format", "json", "unreadable.py", "p/good.py")
    assert "Usage:" not in result.output and "Invalid value" not in result.output, result.output
    assert "unreadable.py" in result.stdout and "Permission denied" in result.stdout
    assert "good.py" in result.stdout
