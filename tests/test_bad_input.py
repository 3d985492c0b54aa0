"""Bad input through the real command line: a clear message, the documented exit code, and every other file still checked.

Exit codes (README contract, as Ruff's): 1 for findings, MPS000 (a file that
does not parse) and MPS001 (a path that is missing, unreadable or undecodable,
Ruff's E902) included, reported in the output like any finding; 2 for an
internal error outside the rules. Each test has a normal file with a finding
beside the bad one and asserts the finding is still reported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpslint import files as files_module

from clitools import enter, fake_rules, run  # noqa: F401  (fixture)

TESTS = Path(__file__).resolve().parent
CUDA = "import torch\n\nx = torch.zeros(1)\ny = x.cuda()\n"
GOOD_FINDING = "good.py:4:5: MPS990"


@pytest.fixture
def project(tmp_path, monkeypatch, fake_rules):
    (tmp_path / "good.py").write_text(CUDA)
    return enter(tmp_path, monkeypatch)


def assert_clean_failure(result, code):
    assert result.exit_code == code, result.output
    assert GOOD_FINDING in result.stdout
    assert "Traceback" not in result.output


# --- encodings and odd bytes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, finding",
    [
        (b"# -*- coding: latin-1 -*-\nimport torch\ns = '\xe9'\ny = x.cuda()\n", "bad.py:4:5: MPS990"),
        (b"\xef\xbb\xbfimport torch\ny = x.cuda()\n", "bad.py:2:5: MPS990"),  # the BOM is not a column
        (b"import torch\r\ny = x.cuda()\r\n", "bad.py:2:5: MPS990"),
        (b"import torch\ry = 1\r\nif y:\n\tz = x.cuda()\r", "bad.py:4:6: MPS990"),  # mixed endings and a tab
        (b"import torch\ns = '\xc3\xa9\xe2\x86\x92'; y = x.cuda()\n", "bad.py:2:15: MPS990"),  # columns count characters, not bytes
        (b"import torch\ny = x.cuda()", "bad.py:2:5: MPS990"),  # no final newline
        # classic Mac line endings with a cookie: the cookie is on line 1 although the file has no \n at all
        (b"# coding: cp1252\rimport torch\rs = '\x93'\ry = x.cuda()\r", "bad.py:4:5: MPS990"),
    ],
)
def test_decodable_files_are_checked_with_correct_positions(project, data, finding):
    (project / "bad.py").write_bytes(data)
    result = run(".")
    assert_clean_failure(result, 1)
    assert finding in result.stdout


@pytest.mark.parametrize(
    "data, message",
    [
        (b"import torch\ns = '\xe9'\ny = x.cuda()\n", "cannot decode"),  # latin-1 without a cookie
        (b"import torch\ns = '\xff\xfe\xfa'\n", "cannot decode"),  # bytes that are no encoding at all
        (b"# coding: no-such-codec\nimport torch\n", "cannot decode"),
        (b"\xef\xbb\xbf# coding: latin-1\nimport torch\n", "cannot decode"),  # a BOM contradicting the cookie
        (b"\xff\xfei\x00m\x00p\x00", "cannot decode"),  # UTF-16
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "cannot decode"),  # a binary file named .py
    ],
)
def test_undecodable_files_are_mps001_and_others_still_run(project, data, message):
    (project / "bad.py").write_bytes(data)
    result = run(".")
    assert_clean_failure(result, 1)
    assert f"bad.py:1:1: MPS001 {message}" in result.stdout
    assert result.stdout.count("MPS001") == 1 and result.stderr == ""
    # --fix leaves the undecodable file alone, byte for byte
    fixed = run("--fix", ".")
    assert fixed.exit_code == 1 and "bad.py:1:1: MPS001" in fixed.stdout
    assert (project / "bad.py").read_bytes() == data


@pytest.mark.parametrize(
    "data, needle",
    [
        (b"import torch\nx = 1\x00\ny = x.cuda()\n", "null bytes"),
        (b"import torch\nif True:\n\ty = x.cuda()\n        z = 1\n", "MPS000"),  # tabs and spaces inconsistently
        (b"import torch\ny = x.cuda(\n", "MPS000"),  # truncated
    ],
)
def test_unparsable_files_are_mps000_not_crashes(project, data, needle):
    (project / "bad.py").write_bytes(data)
    result = run(".")
    assert_clean_failure(result, 1)
    assert "bad.py:" in result.stdout and "MPS000" in result.stdout and needle in result.stdout
    assert run("--fix", ".").exit_code == 1
    assert (project / "bad.py").read_bytes() == data


@pytest.mark.parametrize("data", [b"", b"\n", b"\xef\xbb\xbf", b"\r\n\r\n", b"# just a comment"])
def test_empty_and_trivial_files_are_clean(project, data):
    (project / "empty.py").write_bytes(data)
    result = run(".")
    assert_clean_failure(result, 1)
    assert "empty.py" not in result.output
    run("--fix", ".")
    assert (project / "empty.py").read_bytes() == data


def test_a_deeply_nested_file_is_checked(project):
    (project / "deep.py").write_text("import torch\ny = x" + ".cuda()" * 300 + "\n")
    result = run(".")
    assert_clean_failure(result, 1)
    assert result.stdout.count("deep.py:2:5: MPS990") == 300


def test_a_file_nested_deeper_than_python_parses_fails_alone(project):
    # Python 3.11+ gives up on this chain while building its ast (3.9's parser still reads it).
    (project / "deep.py").write_text("import torch\ny = x" + ".cuda()" * 5000 + "\n")
    result = run(".")
    assert_clean_failure(result, 1)
    too_deep = "deep.py:1:1: MPS000 could not parse: the file is nested too deeply" in result.stdout
    assert too_deep or result.stdout.count("deep.py:2:5: MPS990") == 5000


def test_a_very_large_file_completes(project):
    # 300,000 lines. Files without any rule's trigger text are skipped by the prefilter without parsing;
    # the file with a finding at its end is parsed (5,000 lines keeps the test a few seconds long).
    (project / "huge.py").write_text("import torch\n" + "x = torch.zeros(3) + 1  # padding\n" * 300_000)
    (project / "large.py").write_text("import torch\n" + "x = torch.zeros(3) + 1\n" * 5_000 + "y = x.cuda()\n")
    start = time.monotonic()
    result = run(".")
    elapsed = time.monotonic() - start
    assert_clean_failure(result, 1)
    assert "large.py:5002:5: MPS990" in result.stdout
    assert "huge.py" not in result.stdout
    assert elapsed < 120


# --- paths that are not plain files -----------------------------------------------------------


def test_a_directory_named_like_a_python_file_is_walked_not_read(project):
    (project / "pkg.py").mkdir()
    (project / "pkg.py" / "inner.py").write_text(CUDA)
    for args in ([], ["."], ["pkg.py", "good.py"]):
        result = run(*args)
        assert_clean_failure(result, 1)
        assert "pkg.py/inner.py:4:5: MPS990" in result.stdout
        assert "error" not in result.stderr


def test_a_fifo_is_an_error_not_a_hang(tmp_path):
    # In a subprocess with a timeout: before the fix, reading a FIFO named on the command line blocked forever.
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (tmp_path / "good.py").write_text(CUDA)
    driver = (
        f"import sys; sys.path.insert(0, {str(TESTS)!r}); from mpslint import registry; "
        "registry.FAMILIES = ('clitools',); from mpslint.cli import main; main()"
    )
    for args in (["pipe.py", "good.py"], ["--fix", "pipe.py", "good.py"], ["."]):
        done = subprocess.run(
            [sys.executable, "-c", driver, "check", "--no-cache", *args], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert GOOD_FINDING in done.stdout or "(1 fixed" in done.stdout
        assert done.returncode == 1
        if args != ["."]:  # a FIFO met while walking is not a Python file: skipped
            assert "pipe.py:1:1: MPS001 cannot read: not a regular file" in done.stdout
        (tmp_path / "good.py").write_text(CUDA)


def test_a_fifo_among_the_modules_the_project_model_reads_is_not_read(tmp_path):
    # The project model reads imported modules, and the modules next to a helper for its callers; a FIFO named
    # like one (`pipe.py`) must not block those reads either.
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "utils.py").write_text("def accuracy(out):\n    return out.double()\n")
    (tmp_path / "train.py").write_text(
        "import torch\nimport pipe\nfrom pipe import *\nfrom utils import accuracy\n"
        "x = torch.zeros(3).cuda()\nprint(accuracy(x))\n"
    )
    for args, expected in ((["utils.py", "train.py"], "MPS303"), (["--fix", "--diff", "utils.py", "train.py"], "+x = torch.zeros(3).to(")):
        done = subprocess.run([sys.executable, "-m", "mpslint", "check", "--no-cache", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert expected in done.stdout, done.stdout + done.stderr


def test_a_device_named_explicitly_is_an_error(project):
    result = run("/dev/null", "good.py")
    assert_clean_failure(result, 1)
    assert "/dev/null:1:1: MPS001 cannot read: not a regular file" in result.stdout


def test_a_symlink_loop_ends_and_others_still_run(project):
    (project / "loop").mkdir()
    (project / "loop" / "self").symlink_to("..", target_is_directory=True)
    (project / "a.py").symlink_to("b.py")
    (project / "b.py").symlink_to("a.py")  # a file-level loop: neither resolves
    result = run(".")
    assert_clean_failure(result, 1)
    assert "a.py:1:1: MPS001" in result.stdout and "b.py:1:1: MPS001" in result.stdout
    explicit = run("a.py", "good.py")
    assert_clean_failure(explicit, 1)
    assert "a.py:1:1: MPS001" in explicit.stdout


def test_a_dangling_symlink_is_reported(project):
    (project / "gone.py").symlink_to("nowhere.py")
    for args in (["."], ["gone.py", "good.py"]):
        result = run(*args)
        assert_clean_failure(result, 1)
        assert "gone.py:1:1: MPS001" in result.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_and_directory_by_permissions(project):
    (project / "secret.py").write_text(CUDA)
    (project / "closed").mkdir()
    (project / "closed" / "x.py").write_text(CUDA)
    os.chmod(project / "secret.py", 0)
    os.chmod(project / "closed", 0)
    try:
        result = run(".")
        assert_clean_failure(result, 1)
        assert "secret.py:1:1: MPS001 cannot read" in result.stdout
        assert "closed:1:1: MPS001" in result.stdout
    finally:
        os.chmod(project / "secret.py", 0o644)
        os.chmod(project / "closed", 0o755)


def test_unreadable_file_and_directory_whoever_runs(project, monkeypatch):
    # As root chmod cannot make anything unreadable: make the OS calls fail as they would for another user.
    (project / "secret.py").write_text(CUDA)
    (project / "closed").mkdir()
    (project / "closed" / "x.py").write_text(CUDA)
    real_open, real_scandir = os.open, os.scandir

    def deny_open(path, *args, **kwargs):
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    def deny_scandir(path="."):
        if str(path).endswith("closed"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", deny_open)
    monkeypatch.setattr(os, "scandir", deny_scandir)
    for args in (["."], ["--diff", "."], ["--fix", "."]):
        result = run(*args)
        assert result.exit_code == 1, result.output
        report = result.stderr if "--diff" in args else result.stdout  # a diff owns stdout
        assert "secret.py:1:1: MPS001 cannot read: Permission denied" in report
        assert "closed:1:1: MPS001 Permission denied" in report
        assert "All checks passed!" not in result.output
        assert "Traceback" not in result.output
        assert "good.py" in result.stdout or "1 fixed" in result.stdout  # checked, diffed, fixed
    assert (project / "good.py").read_text() == CUDA.replace("x.cuda()", "x.to(DEVICE)")


def test_a_path_that_vanishes_during_the_run(project, monkeypatch):
    (project / "vanishing.py").write_text(CUDA)
    real = files_module.discover

    def discover_then_delete(*args, **kwargs):
        found = real(*args, **kwargs)
        os.unlink(project / "vanishing.py")
        return found

    monkeypatch.setattr(files_module, "discover", discover_then_delete)
    result = run(".")
    assert_clean_failure(result, 1)
    assert "vanishing.py:1:1: MPS001 cannot read: No such file or directory" in result.stdout


def test_a_directory_that_vanishes_during_the_walk(project, monkeypatch):
    (project / "sub").mkdir()
    (project / "sub" / "x.py").write_text(CUDA)
    real_scandir = os.scandir

    def scandir(path="."):
        if str(path).endswith("sub"):
            (project / "sub" / "x.py").unlink()
            (project / "sub").rmdir()
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = run(".")
    assert_clean_failure(result, 1)
    assert "sub:1:1: MPS001 No such file or directory" in result.stdout


def test_missing_paths_are_mps001(project):
    result = run("missing.py", "missing_dir", "good.py")
    assert_clean_failure(result, 1)
    assert "missing.py:1:1: MPS001 No such file or directory" in result.stdout
    assert "missing_dir:1:1: MPS001 No such file or directory" in result.stdout
    assert result.stderr == ""


def test_non_python_files_named_explicitly_are_checked_as_python(project):
    # Like Ruff and like `python notes.txt`: a file named on the command line is Python, whatever its suffix.
    (project / "script").write_text(CUDA)
    (project / "README.md").write_text("# Title\n\nRun it on cuda, *fast*.\n")
    (project / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff")
    (project / "notes.txt").write_text(CUDA)
    result = run("script", "README.md", "logo.png", "good.py")
    assert_clean_failure(result, 1)
    assert "script:4:5: MPS990" in result.stdout
    assert "README.md:3:5: MPS000" in result.stdout  # the prose does not parse
    assert "logo.png:1:1: MPS001 cannot decode" in result.stdout
    walked = run(".")
    assert "notes.txt" not in walked.output and "README.md" not in walked.output and "script" not in walked.output


# --- stdin ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["with space/ü ñ.py", "../outside.py", "no/such/dir/deep.py", "/abs/nonexistent/x.py", "notes.txt", "dir.py", "-"],
)
def test_stdin_filename_with_odd_names(project, name):
    (project / "dir.py").mkdir()
    result = run("--stdin-filename", name, "-", input=CUDA)
    assert result.exit_code == 1, result.output
    assert f"{name}:4:5: MPS990" in result.stdout
    fixed = run("--fix", "--stdin-filename", name, "-", input=CUDA)
    assert fixed.exit_code == 0
    assert fixed.stdout == CUDA.replace("x.cuda()", "x.to(DEVICE)")
    assert not Path(name).is_file()  # nothing written under that name
    assert (project / "good.py").read_text() == CUDA


def test_stdin_filename_naming_an_existing_file_never_writes_it(project):
    fixed = run("--fix", "--stdin-filename", "good.py", "-", input=CUDA.replace("y =", "z ="))
    assert fixed.exit_code == 0
    assert "z = x.to(DEVICE)" in fixed.stdout
    assert (project / "good.py").read_text() == CUDA


def test_stdin_with_undecodable_and_nul_bytes(project):
    bad = run("--stdin-filename", "x.py", "-", input=b"import torch\ns = '\xff'\n")
    assert bad.exit_code == 1 and "x.py:1:1: MPS001 cannot decode" in bad.stdout
    nul = run("--fix", "-", input=b"import torch\x00\ny = x.cuda()\n")
    assert nul.exit_code == 1
    assert nul.stdout.encode() == b"import torch\x00\ny = x.cuda()\n"  # passed through untouched
    assert "MPS000" in nul.stderr


def test_a_syntax_error_is_placed_by_the_text_checked_not_by_a_file_of_that_name(tmp_path, monkeypatch):
    # A notebook cell, an editor's unsaved buffer or stdin is checked under a path whose file on disk
    # holds other text; CPython reads the offending line back from that file for some errors, which
    # gave a notebook cell's MPS000 the column of a line of the .ipynb's JSON.
    import ast

    from mpslint.config import Settings
    from mpslint.engine import check_text

    text = "for x in range(3)\n    print(x)\n"
    try:
        compile(text, "<no such file>", "exec", ast.PyCF_ONLY_AST)
    except SyntaxError as err:
        expected = (err.lineno, err.offset)
    other = tmp_path / "train.ipynb"
    other.write_text('{\n "cells": []\n}\n')
    monkeypatch.chdir(tmp_path)
    for path in ("train.ipynb", str(other)):
        [diagnostic] = check_text(text, path, Settings()).diagnostics
        assert diagnostic.code == "MPS000"
        assert (diagnostic.location.row, diagnostic.location.column) == expected
