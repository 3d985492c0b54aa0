"""`mpslint --fix` through the real command line never loses a byte.

Writes are atomic and keep permissions; encodings, BOMs and every line ending
outside the edits come back byte for byte; a fix that does not re-parse is
dropped and said so; fixing twice changes nothing; files without fixes are
never rewritten; and a run interrupted by SIGINT or SIGTERM in the middle of
fixing leaves each file exactly old or exactly new, with no temp files.
(Runner-level versions of some of these live in test_runner.py; these go
through the CLI, the discovery and the pool.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


from clitools import ctrl_c_as_in_a_terminal, fake_rules, project, run  # noqa: F401  (fixtures)

TESTS = Path(__file__).resolve().parent
CUDA = "import torch\n\nx = torch.zeros(1)\ny = x.cuda()\n"
FIXED = CUDA.replace("x.cuda()", "x.to(DEVICE)")
CLEAN = "import torch\n\nx = torch.zeros(1)\n"


def temp_files(root: Path):
    return sorted(p.name for p in root.rglob("*") if p.name.startswith(".mpslint-"))


# --- bytes outside the edits ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, before, after",
    [
        # CR-only (classic Mac) line endings
        ("cr.py", b"import torch\rx = torch.zeros(1)\ry = x.cuda()\r", b"import torch\rx = torch.zeros(1)\ry = x.to(DEVICE)\r"),
        # mixed endings: each line keeps its own, and the missing final newline stays missing
        (
            "mixed.py",
            b"import torch\r\nif True:\n\ty = x.cuda()  # tab-indented\r\n\tz = 1\rw = 2",
            b"import torch\r\nif True:\n\ty = x.to(DEVICE)  # tab-indented\r\n\tz = 1\rw = 2",
        ),
        # latin-1 with a cookie, BOM-less; the non-ASCII bytes stay single bytes
        (
            "latin.py",
            b"# -*- coding: latin-1 -*-\r\nimport torch\r\nname = '\xe9t\xe9'\r\ny = torch.zeros(1).cuda()\r\n",
            b"# -*- coding: latin-1 -*-\r\nimport torch\r\nname = '\xe9t\xe9'\r\ny = torch.zeros(1).to(DEVICE)\r\n",
        ),
        # a UTF-8 BOM with non-ASCII text and CRLF
        (
            "bom.py",
            b"\xef\xbb\xbfimport torch\r\n# \xc3\xa9l\xc3\xa8ve\r\ny = torch.zeros(1).cuda()\r\n",
            b"\xef\xbb\xbfimport torch\r\n# \xc3\xa9l\xc3\xa8ve\r\ny = torch.zeros(1).to(DEVICE)\r\n",
        ),
        # latin-1 cookie in a file with CR-only line endings
        (
            "crlatin.py",
            b"#!/usr/bin/env python\r# -*- coding: latin-1 -*-\rimport torch\rs = '\xe9'\ry = x.cuda()\r",
            b"#!/usr/bin/env python\r# -*- coding: latin-1 -*-\rimport torch\rs = '\xe9'\ry = x.to(DEVICE)\r",
        ),
        # cp1252 cookie on line 2 after a shebang
        (
            "cp.py",
            b"#!/usr/bin/env python\n# coding: cp1252\nimport torch\nq = '\x93quoted\x94'\ny = torch.ones(2).cuda()\n",
            b"#!/usr/bin/env python\n# coding: cp1252\nimport torch\nq = '\x93quoted\x94'\ny = torch.ones(2).to(DEVICE)\n",
        ),
    ],
)
def test_fix_changes_only_the_edited_bytes(project, name, before, after):
    (project / name).write_bytes(before)
    result = run("--fix", name)
    assert result.exit_code == 0, result.output
    assert (project / name).read_bytes() == after
    assert temp_files(project) == []


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_fix_keeps_the_permission_bits(project, mode):
    path = project / "a.py"
    path.write_text(CUDA)
    os.chmod(path, mode)
    inode = path.stat().st_ino
    assert run("--fix", "a.py").exit_code == 0
    assert path.read_text() == FIXED
    assert path.stat().st_mode & 0o7777 == mode
    assert path.stat().st_ino != inode  # replaced by rename, not truncated and rewritten in place


def test_files_without_fixes_are_never_rewritten(project):
    (project / "clean.py").write_text(CLEAN)
    (project / "unfixable.py").write_text("import torch\ntorch.cuda.synchronize()\n")  # a finding with no fix
    (project / "unsafe_only.py").write_text("import torch\ny = torch.zeros(1).double()\n")  # fix offered, not applied
    (project / "a.py").write_text(CUDA)
    past = time.time_ns() - 10**10
    before = {}
    for p in project.glob("*.py"):
        os.utime(p, ns=(past, past))
        before[p.name] = (p.stat().st_ino, p.stat().st_mtime_ns)
    result = run("--fix", ".")
    assert result.exit_code == 1  # findings without an applied fix remain
    for p in project.glob("*.py"):
        if p.name == "a.py":
            assert p.stat().st_mtime_ns != before[p.name][1]
        else:
            assert (p.stat().st_ino, p.stat().st_mtime_ns) == before[p.name], p.name


def test_a_second_fix_changes_nothing(project):
    for i in range(3):
        (project / f"m{i}.py").write_bytes(b"import torch\r\nx = torch.zeros(1)\r\ny = x.cuda().double()\r\nz = x.cuda()\r\n")
    first = run("--fix", "--unsafe-fixes", ".")
    assert first.exit_code == 0, first.output
    snapshot = {p.name: (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in project.glob("*.py")}
    second = run("--fix", "--unsafe-fixes", ".")
    assert second.exit_code == 0
    assert second.output == "All checks passed!\n"
    assert {p.name: (p.read_bytes(), p.stat().st_ino, p.stat().st_mtime_ns) for p in project.glob("*.py")} == snapshot
    assert run("--diff", "--unsafe-fixes", ".").exit_code == 0


def test_a_fix_that_does_not_reparse_is_dropped_and_reported(project, monkeypatch):
    import mpslint.fixer as fixer

    real = fixer.apply_fixes
    # A fix engine bug: the result of applying fixes no longer parses.
    monkeypatch.setattr(fixer, "apply_fixes", lambda text, fixes, newline="\n": real(text, fixes, newline=newline) + "def (:\n")
    (project / "a.py").write_text(CUDA)
    (project / "b.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    result = run("--fix", ".")
    assert (project / "a.py").read_text() == CUDA
    assert result.exit_code == 1
    assert "warning: a.py:" in result.stderr and "does not parse" in result.stderr
    assert "a.py:4:5: MPS990" in result.stdout  # the finding it could not fix is still reported
    assert "b.py:2:1: MPS992" in result.stdout
    assert temp_files(project) == []


def test_an_unencodable_fix_leaves_the_file_and_says_why(project, monkeypatch):
    from mpslint import registry
    from clitools import CudaCall

    class NonLatin(CudaCall):
        """A fix whose replacement text cannot be written in the file's declared encoding."""

        def visit_Call(self, node):
            import ast

            from mpslint.checks.base import FixSpec, replace

            if type(node.func) is ast.Attribute and node.func.attr == "cuda":
                self.report(node, "cuda", fix=FixSpec.safe("t", replace(node, "x.to('\u2192')")))

    monkeypatch.setattr(registry, "classes_for", lambda codes: (NonLatin,))
    data = b"# coding: latin-1\nimport torch\ns = '\xe9'\ny = x.cuda()\n"
    (project / "a.py").write_bytes(data)
    (project / "b.py").write_text(CUDA)
    result = run("--fix", ".")
    assert (project / "a.py").read_bytes() == data
    assert "error: a.py: cannot write the fixed file" in result.stderr
    assert result.exit_code == 2
    assert "x.to('\u2192')" in (project / "b.py").read_text()
    assert temp_files(project) == []


# --- interrupted runs -------------------------------------------------------------------------

# Runs the CLI with the test rules in a fresh interpreter (so a signal hits a real process).
DRIVER = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from mpslint import registry
registry.FAMILIES = ("clitools",)
from mpslint.cli import main
main()
"""
# Many `.cuda()` calls per file, so fixing each file takes a while (several fixer passes).
BIG = "import torch\n\n" + "".join(f"t{i} = torch.zeros({i}).cuda()\n" for i in range(150))
BIG_FIXED = BIG.replace(".cuda()", ".to(DEVICE)")


@pytest.mark.parametrize("sig, jobs", [(signal.SIGTERM, "1"), (signal.SIGTERM, "2"), (signal.SIGINT, "2")])
def test_an_interrupted_fix_leaves_every_file_old_or_new(tmp_path, sig, jobs):
    files = [tmp_path / f"m{i:03}.py" for i in range(300)]
    for f in files:
        f.write_text(BIG)
    old, new = BIG.encode(), BIG_FIXED.encode()
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, "check", "--fix", "-j", jobs, "."],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # the signal goes to mpslint (and, for SIGINT, its workers) like a terminal's would
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not any(f.read_bytes() == new for f in files):
            assert process.poll() is None, "mpslint finished before it could be interrupted"
            assert time.monotonic() < deadline
            time.sleep(0.01)
        if sig == signal.SIGINT:
            os.killpg(process.pid, sig)  # Ctrl-C reaches the whole foreground process group
        else:
            process.send_signal(sig)  # `kill PID` reaches the main process only
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    contents = [f.read_bytes() for f in files]
    assert all(c in (old, new) for c in contents)
    assert new in contents
    assert old in contents, "the run finished before the signal: the test proves nothing"
    assert process.returncode != 0
    assert b"Traceback" not in stderr
    assert temp_files(tmp_path) == []


def test_sigterm_while_a_temp_file_is_open_removes_it(tmp_path):
    """Deterministic: SIGTERM lands between writing the temp file and renaming it over the original."""
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text(CUDA)
    driver = DRIVER.replace(
        "from mpslint.cli import main",
        "import os, signal\n"
        "real, calls = os.replace, []\n"
        "def replace(src, dst):\n"
        "    calls.append(dst)\n"
        "    if len(calls) == 3:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "    real(src, dst)\n"
        "os.replace = replace\n"
        "from mpslint.cli import main",
    )
    done = subprocess.run(
        [sys.executable, "-c", driver, "check", "--fix", "-j", "1", "."], cwd=tmp_path, capture_output=True, timeout=120
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    contents = [(tmp_path / f"m{i}.py").read_text() for i in range(5)]
    assert contents == [FIXED, FIXED, CUDA, CUDA, CUDA]
    assert temp_files(tmp_path) == []
    assert b"Traceback" not in done.stderr


# --- fuzzing the on-disk layer: real rules, real files, odd encodings and line endings --------------

def _children(pid: int):
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to see the workers start")
@pytest.mark.parametrize("delay", [0.1, 0.25, 0.4])
def test_ctrl_c_while_workers_start_is_not_a_traceback(tmp_path, delay):
    """Ctrl-C reaches the whole process group, workers included, even while they still import.

    A worker is importing for a few tenths of a second after it appears; each delay lands the
    signal at another point of that (a traceback from a worker's imports broke this before).
    """
    files = [tmp_path / f"m{i:03}.py" for i in range(60)]
    for f in files:
        f.write_text(BIG)
    process = subprocess.Popen(
        [sys.executable, "-c", DRIVER, "check", "--fix", "-j", "2", "."],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 60
        while not _children(process.pid):  # a worker was spawned: it is starting up now
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.001)
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0
    assert b"Traceback" not in stderr, stderr.decode(errors="replace")
    assert all(f.read_bytes() in (BIG.encode(), BIG_FIXED.encode()) for f in files)
    assert temp_files(tmp_path) == []


from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

from test_fuzz import mutants  # noqa: E402  (torch-heavy mutants of every fixture and snippet)

COOKIES = {"utf-8": b"", "latin-1": b"# -*- coding: latin-1 -*-\n", "cp1252": b"# coding: cp1252\n"}
FUZZ_RUNS = {"examples": 0, "rewritten": 0}


def _newlines(data: bytes) -> set:
    import re

    return set(re.findall(rb"\r\n|\r|\n", data))


def _parses_bytes(data: bytes) -> bool:
    import libcst as cst

    from mpslint.source import DecodeError, SourceText

    try:
        cst.parse_module(SourceText.decode(data).text)
    except (DecodeError, Exception):
        return False
    return True


@hsettings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    text=mutants(),
    encoding=st.sampled_from(sorted(COOKIES)),
    bom=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    accent=st.booleans(),
)
def test_fix_on_disk_keeps_encoding_bom_newlines_and_parsability(tmp_path_factory, text, encoding, bom, newline, accent):
    FUZZ_RUNS["examples"] += 1
    root = tmp_path_factory.mktemp("fuzz")
    if accent:
        text = "name = 'caf\u00e9'\n" + text
    body = text.replace("\r\n", "\n").replace("\n", newline)
    try:
        payload = body.encode(encoding)
    except UnicodeEncodeError:
        payload = body.encode("utf-8")
        encoding = "utf-8"
    bom = bom and encoding == "utf-8"
    data = (b"\xef\xbb\xbf" if bom else b"") + COOKIES[encoding].replace(b"\n", newline.encode()) + payload
    path = root / "fuzz.py"
    path.write_bytes(data)
    os.chmod(path, 0o640)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        first = run("--fix", "--unsafe-fixes", "--select", "MPS", "fuzz.py")
        after = path.read_bytes()
        second = run("--fix", "--unsafe-fixes", "--select", "MPS", "fuzz.py")
    finally:
        os.chdir(cwd)
    for result in (first, second):
        assert result.exit_code in (0, 1), result.output
        assert "Traceback" not in result.output and "MPS900" not in result.output
    assert temp_files(root) == []
    assert path.stat().st_mode & 0o777 == 0o640
    if after != data:
        FUZZ_RUNS["rewritten"] += 1
        assert after.startswith(b"\xef\xbb\xbf") == bom
        assert after.startswith(b"\xef\xbb\xbf" * bom + COOKIES[encoding].replace(b"\n", newline.encode()))
        after.decode(encoding)  # still in the file's own encoding
        assert _newlines(after) <= _newlines(data) | {newline.encode()}
        if _parses_bytes(data):
            assert _parses_bytes(after), "the fixer turned a parsable file into an unparsable one"
    assert path.read_bytes() == after, "a second --fix changed the file again"


def test_a_file_edited_during_the_fix_is_not_overwritten(project, monkeypatch):
    import mpslint.fixer as fixer

    (project / "a.py").write_text(CUDA)
    (project / "b.py").write_text(CUDA)
    real = fixer.fix_text
    edited = CUDA + "z = 'saved in the editor meanwhile'\n"

    def fix_while_someone_saves(text, path, *args, **kwargs):
        outcome = real(text, path, *args, **kwargs)
        if path == "a.py":
            (project / "a.py").write_text(edited)
        return outcome

    monkeypatch.setattr(fixer, "fix_text", fix_while_someone_saves)
    result = run("--fix", ".")
    assert (project / "a.py").read_text() == edited
    assert (project / "b.py").read_text() == FIXED
    assert result.exit_code == 2
    assert "error: a.py: cannot write the fixed file: the file changed on disk while it was being fixed" in result.stderr
    assert temp_files(project) == []
