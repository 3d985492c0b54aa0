"""Static mode never runs the code it reads; the verifier runs it only when asked, and cleans up after it;
a bug in a rule is contained, in this process and in the worker pool.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clitools import ctrl_c_as_in_a_terminal, fake_rules, project, run  # noqa: F401  (fixtures)

# --- static mode never executes -----------------------------------------------------------------


def _booby_trap(marker: Path, name: str) -> str:
    """Torch code that would trip real rules, with top-level side effects that leave a marker if run or imported."""
    return (
        "import torch\n"
        f"open({str(marker / name)!r}, 'w').write('executed')\n"
        f"__import__('pathlib').Path({str(marker / (name + '.eval'))!r}).touch()\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
        "x = torch.zeros(2, dtype=torch.float64).to('cuda')\n"
        "torch.cuda.synchronize()\n"
        "raise SystemExit('executed')\n"
    )


@pytest.fixture
def trapped(tmp_path, monkeypatch):
    project = tmp_path / "project"
    marker = tmp_path / "markers"
    marker.mkdir()
    for rel in ("train.py", "pkg/__init__.py", "pkg/sub/__init__.py", "conftest.py", "setup.py", "tests/conftest.py",
                "sitecustomize.py", "usercustomize.py", "pkg/__main__.py"):
        path = project / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_booby_trap(marker, rel.replace("/", "_")))
    (project / "pyproject.toml").write_text("[tool.mpslint]\ntorch-version = \"2.4\"\n")
    monkeypatch.chdir(project)
    monkeypatch.delenv("MPSLINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.delenv("MPSLINT_CACHE_DIR", raising=False)
    # If anything imported the project, its directory would have to be importable: make it so, to be sure.
    monkeypatch.syspath_prepend(str(project))
    return project, marker


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--no-cache", "--output-format", "json"],
        ["--no-cache", "--output-format", "full"],
        ["--diff", "--unsafe-fixes"],
        ["--fix", "--unsafe-fixes"],
    ],
)
def test_static_mode_never_runs_or_imports_the_code(trapped, args):
    project, marker = trapped
    before = set(sys.modules)
    result = run(*args, ".")
    assert result.exit_code in (0, 1), result.output
    assert list(marker.iterdir()) == []
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] in ("pkg", "conftest", "setup", "train", "tests")}
    if "--fix" in args:
        assert "cuda" not in (project / "train.py").read_text().split("model =")[1].split("\n")[0]
    elif "json" in args:
        reported = {Path(row["filename"]).resolve().relative_to(project.resolve()).as_posix() for row in json.loads(result.stdout)}
        assert reported >= {"train.py", "setup.py", "conftest.py", "pkg/__init__.py", "tests/conftest.py"}


def test_static_mode_never_runs_the_code_in_pool_workers(trapped):
    project, marker = trapped
    for i in range(45):  # above the pool threshold: spawned workers check these
        (project / f"m{i:02}.py").write_text(_booby_trap(marker, f"m{i:02}"))
    result = run("--no-cache", "-j", "2", "--fix", ".")
    assert result.exit_code in (0, 1), result.output
    assert list(marker.iterdir()) == []


def test_stdin_is_never_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _booby_trap(tmp_path, "stdin")
    for args in (["-"], ["--fix", "-"], ["--diff", "-"], ["--stdin-filename", "setup.py", "-"]):
        run(*args, input=code)
    assert [p.name for p in tmp_path.iterdir()] == []


# --- the verifier runs code only when asked, and owns its process group ---------------------------


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="mpslint verify needs torch")


def _verify(*args, timeout=240):
    # Output through files, not pipes: a leftover grandchild holding a pipe open would hang the test instead of failing it.
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        done = subprocess.run([sys.executable, "-m", "mpslint", "verify", *args], stdout=out, stderr=err, timeout=timeout)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(done.args, done.returncode, out.read(), err.read())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie waiting for its reaper is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


@needs_torch
def test_a_crashing_script_is_the_scripts_failure_not_mpslints(tmp_path):
    script = tmp_path / "crash.py"
    script.write_text("import torch\nx = torch.ones(2, device='mps')\nraise ValueError('the script has a bug')\n")
    done = _verify("--simulate", "--output-format", "json", str(script))
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "fail"
    assert any(e["type"] == "ValueError" and "the script has a bug" in e["message"] for e in report["errors"])
    assert "ValueError: the script has a bug" in done.stderr  # the script's own traceback, as Python prints it
    exited = tmp_path / "exit.py"
    exited.write_text("import sys\nsys.exit(3)\n")
    done = _verify("--simulate", str(exited))
    assert done.returncode == 1 and "FAIL" in done.stdout


SPAWNER = """
import os, subprocess, sys, time
# A helper that ignores SIGTERM (as some DataLoader workers and servers do): only SIGKILL ends it.
child = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
plain = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1], "w") as handle:
    handle.write(f"{child.pid} {plain.pid} {os.getpid()}")
time.sleep(600)
"""


@needs_torch
def test_timeout_kills_the_whole_process_group(tmp_path):
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    pids = tmp_path / "pids"
    started = time.monotonic()
    done = _verify("--simulate", "--timeout", "12", str(script), str(pids))
    assert time.monotonic() - started < 120
    assert done.returncode == 1
    assert "did not finish within 12 s" in done.stdout
    children = [int(p) for p in pids.read_text().split()]
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert not any(_alive(p) for p in children), "a process the script started outlived the timeout"
    finally:
        for p in children:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


@needs_torch
def test_ctrl_c_on_verify_ends_the_script_too(tmp_path):
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    pids = tmp_path / "pids"
    process = subprocess.Popen(
        [sys.executable, "-m", "mpslint", "verify", "--simulate", str(script), str(pids)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    children = []
    try:
        deadline = time.monotonic() + 120
        while not (pids.exists() and len(pids.read_text().split()) == 3):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        children = [int(p) for p in pids.read_text().split()]
        os.killpg(process.pid, signal.SIGINT)  # the terminal's Ctrl-C: mpslint's group, not the script's session
        process.wait(timeout=60)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in children) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_alive(p) for p in children), "the script kept running after mpslint verify was interrupted"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        for p in children:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --- a bug in a rule --------------------------------------------------------------------------------

CRASHY = "import torch\n\nx = torch.zeros(1).cuda()\nboom()\ntorch.cuda.synchronize()\n"


@pytest.mark.parametrize("count, jobs", [(3, "1"), (45, "2")])  # 45 files run in spawned pool workers
def test_a_crashing_rule_is_contained_in_process_and_in_the_pool(project, count, jobs):
    for i in range(count):
        (project / f"m{i:02}.py").write_text(CRASHY)
    (project / "zz_clean_of_boom.py").write_text("import torch\ny = torch.ones(1).cuda()\n")
    result = run("--no-cache", "-j", jobs, ".")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    for i in range(count):
        name = f"m{i:02}.py"
        assert f"{name}:1:1: MPS900 internal error in rule MPS993 (test-crash)" in result.stdout
        assert f"{name}:3:5: MPS990" in result.stdout  # other rules still ran on the file
        assert f"{name}:5:1: MPS992" in result.stdout
    assert "zz_clean_of_boom.py:2:5: MPS990" in result.stdout
    assert sum("MPS900" in line for line in lines) == count
    assert "Please report this" in result.stdout
    assert "Traceback" not in result.output
    strict = run("--no-cache", "-j", jobs, "--strict", ".")
    assert strict.exit_code == 2
    assert "zz_clean_of_boom.py:2:5: MPS990" in strict.stdout
    verbose = run("--no-cache", "-j", jobs, "--verbose", ".")
    assert verbose.exit_code == 1
    assert verbose.stderr.count("Traceback (most recent call last)") == count
    assert 'raise RuntimeError("the test rule crashed on purpose")' in verbose.stderr


def test_a_crashing_rule_never_blocks_the_fixes_of_the_others(project):
    (project / "a.py").write_text(CRASHY)
    result = run("--fix", "a.py")
    assert result.exit_code == 1
    assert "x = torch.zeros(1).to(DEVICE)" in (project / "a.py").read_text()
    assert "MPS900" in result.stdout
    json_result = run("--no-cache", "--output-format", "json", "a.py")
    rows = json.loads(json_result.stdout)
    assert [r["code"] for r in rows] == ["MPS900", "MPS992"]
    assert "MPS993" in rows[0]["message"]
