"""Scripts that misbehave are reported like plain Python would report them (issue 29, item 8).

Endless recursion and a failure after ``sys.stderr = None`` are the script's
errors (exit 1 with a report), not a crash of the verifier; ``os._exit(0)``
after valid work is a finished run; a spawn ``Pool`` started by an unguarded
top level is MPS403 at once, not a respawn loop until the timeout.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.utils, "swap_tensors"):
    pytest.skip("--simulate needs torch 2.3", allow_module_level=True)

from clitools import cli_runner

from mpslint.verify import report
from mpslint.verify.command import verify
from mpslint.verify.launcher import Options, Run

# The run's own limit, far above what any of these needs: reaching it is the failure being tested.
TIMEOUT = "300"


def _verify(tmp_path, monkeypatch, name: str, source: str):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(source)
    result = cli_runner().invoke(verify, ["--simulate", "--timeout", TIMEOUT, "--output-format", "json", name],
                                 catch_exceptions=False)
    assert "crashed" not in result.stderr, result.stderr
    return result, json.loads(result.stdout)


def test_endless_recursion_is_the_scripts_recursion_error(tmp_path, monkeypatch):
    source = 'import torch\nx = torch.ones(2, device="mps")\ndef f(n):\n    return f(n + 1)\nf(0)\n'
    result, verdict = _verify(tmp_path, monkeypatch, "rec.py", source)
    assert result.exit_code == 1
    assert [e["type"] for e in verdict["errors"]] == ["RecursionError"]
    assert verdict["script_exit_code"] == 1


def test_a_failure_after_stderr_is_none_is_the_scripts_failure(tmp_path, monkeypatch):
    source = 'import sys\nimport torch\nx = torch.ones(2, device="mps")\nsys.stderr = None\nraise ValueError("boom")\n'
    result, verdict = _verify(tmp_path, monkeypatch, "nostderr.py", source)
    assert result.exit_code == 1
    assert [(e["type"], e["message"], e["location"]["row"]) for e in verdict["errors"]] == [("ValueError", "boom", 5)]


def test_os_exit_0_after_valid_work_is_a_finished_run(tmp_path, monkeypatch):
    source = 'import os\nimport torch\nx = torch.ones(2, device="mps") * 2\nprint(x.sum().item())\nos._exit(0)\n'
    result, verdict = _verify(tmp_path, monkeypatch, "osexit.py", source)
    assert verdict["errors"] == []
    assert verdict["verdict"] == "pass", verdict["reasons"]
    assert verdict["script_exit_code"] == 0
    assert verdict["ops_on_device"] > 0  # what ran before os._exit is in the report
    assert result.exit_code == 0


def test_os_exit_with_a_status_is_the_scripts_exit_status(tmp_path, monkeypatch):
    source = 'import os\nimport torch\nx = torch.ones(2, device="mps") * 2\nos._exit(3)\n'
    result, verdict = _verify(tmp_path, monkeypatch, "osexit3.py", source)
    assert [(e["type"], e["location"]["row"]) for e in verdict["errors"]] == [("SystemExit", 4)]
    assert verdict["script_exit_code"] == 3
    assert result.exit_code == 1


def test_an_unguarded_spawn_pool_is_mps403_at_once(tmp_path, monkeypatch):
    source = (
        "import multiprocessing as mp\nimport torch\n\n\ndef work(i):\n    return i * 2\n\n\n"
        'x = torch.ones(2, device="mps")\n'
        'with mp.get_context("spawn").Pool(2) as pool:\n'
        "    print(pool.map(work, range(4)))\n"
    )
    result, verdict = _verify(tmp_path, monkeypatch, "pool.py", source)
    assert result.exit_code == 1
    assert [(e["type"], e["location"]["row"]) for e in verdict["errors"]] == [("UnguardedWorkers", 10)]
    assert verdict["errors"][0]["message"].startswith("MPS403")


def test_a_guarded_spawn_pool_runs(tmp_path, monkeypatch):
    """The trap: the same pool under the guard is what MPS403 asks for, and it runs."""
    source = (
        "import multiprocessing as mp\nimport torch\n\n\ndef work(i):\n    return i * 2\n\n\n"
        'if __name__ == "__main__":\n'
        '    x = torch.ones(2, device="mps")\n'
        '    with mp.get_context("spawn").Pool(2) as pool:\n'
        "        assert pool.map(work, range(4)) == [0, 2, 4, 6]\n"
    )
    result, verdict = _verify(tmp_path, monkeypatch, "guarded_pool.py", source)
    assert verdict["errors"] == [], verdict["errors"]
    assert result.exit_code == 0


def test_a_run_that_ended_with_status_0_before_its_report_is_not_a_crash(tmp_path):
    """Exit status 0 with the report unfinished (a C extension's exit()): a note, not a FAIL "Crash"."""
    raw = {"status": "running", "errors": [], "events": [], "notes": [], "torch_imported": True, "ops": 3,
           "ops_on_device": 3}
    verdict = report.build(Options(str(tmp_path / "s.py"), [], simulate=True), Run(raw=raw, returncode=0, timed_out=False, duration_s=1.0))
    assert verdict.report["errors"] == []
    assert verdict.exit_code == 0
    assert any("without letting mpslint finish its report" in note for note in verdict.notes)
