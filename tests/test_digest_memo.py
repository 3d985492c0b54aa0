"""A warm run checks the dependencies of cached results without reading the files they came from while
their ``stat`` is unchanged (``mpslint/analysis/project/digest_memo.py``), and never serves a stale one."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

import pytest

from mpslint import runner
from mpslint.analysis.project import callers, model
from mpslint.config import Settings
from mpslint.runner import Mode, run
from helpers import fresh_project, write_tree  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows: ctime is the creation time, nothing is vouched for")

# utils.py's finding comes from what train.py passes it (callers.py), and train.py's from utils.py's summary.
UTILS = """
import torch


def accuracy(output, labels):
    correct = output.max(1)[1].eq(labels).double()
    return correct.sum() / len(labels)
"""
TRAIN = """
import torch
from utils import accuracy

model = torch.nn.Linear(4, 3).to("cuda")
features = torch.randn(10, 4).to("cuda")
labels = torch.randint(0, 3, (10,)).to("cuda")
print(accuracy({output}, {labels}))
"""


@pytest.fixture(autouse=True)
def _fresh(fresh_project):
    yield


def _files(tmp_path):
    return [(str(tmp_path / name), name, Settings()) for name in ("train.py", "utils.py")]


def _later(monkeypatch, seconds: float = 10) -> None:
    """The runner's clock runs ahead: the files the test writes look older than the racy window."""
    monkeypatch.setattr(runner, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + int(seconds * 1e9)))


def _reads(monkeypatch):
    """The modules ``callers.py`` reads to compute a digest, during the next run."""
    read = []
    real = callers._text
    monkeypatch.setattr(callers, "_text", lambda project, path: read.append(path) or real(project, path))
    return read


def _results(tmp_path):
    results = run(_files(tmp_path), Mode(), cache_dir=tmp_path / "cache", jobs=1)
    return {r.display: (r.cached, [d.code for d in r.diagnostics]) for r in results}


def test_a_warm_run_reads_no_module_its_cached_results_depend_on(tmp_path, monkeypatch):
    write_tree(tmp_path, {"utils.py": UTILS, "train.py": TRAIN.format(output="model(features)", labels="labels")})
    _later(monkeypatch)
    assert _results(tmp_path)["utils.py"] == (False, ["MPS303"])
    read = _reads(monkeypatch)
    warm = _results(tmp_path)
    assert warm["utils.py"] == (True, ["MPS303"]) and warm["train.py"][0]
    assert read == [] and model.shared().memo.served > 0


def test_a_changed_caller_is_read_again_and_the_callee_checked_again(tmp_path, monkeypatch):
    write_tree(tmp_path, {"utils.py": UTILS, "train.py": TRAIN.format(output="model(features)", labels="labels")})
    _later(monkeypatch)
    _results(tmp_path)
    _results(tmp_path)
    time.sleep(0.01)
    write_tree(tmp_path, {"train.py": TRAIN.format(output="model(features).cpu()", labels="labels.cpu()")})
    read = _reads(monkeypatch)
    assert _results(tmp_path)["utils.py"] == (False, [])
    assert str(tmp_path / "train.py") in read


def test_a_file_changed_just_before_its_digest_was_computed_is_not_vouched_for(tmp_path, monkeypatch):
    # No clock ahead: the files are younger than the racy window, so every run reads them again.
    write_tree(tmp_path, {"utils.py": UTILS, "train.py": TRAIN.format(output="model(features)", labels="labels")})
    _results(tmp_path)
    read = _reads(monkeypatch)
    assert _results(tmp_path)["utils.py"] == (True, ["MPS303"])
    assert read and model.shared().memo.served == 0


def test_a_corrupt_memo_costs_reading_never_a_wrong_result(tmp_path, monkeypatch):
    write_tree(tmp_path, {"utils.py": UTILS, "train.py": TRAIN.format(output="model(features)", labels="labels")})
    _later(monkeypatch)
    _results(tmp_path)
    (memo,) = (tmp_path / "cache").glob("v*/digest-memo")
    memo.write_text("{not json")
    assert _results(tmp_path)["utils.py"] == (True, ["MPS303"])
    memo.write_text('{"%s": ["a stat no file has", "a digest"]}' % (str(tmp_path / "train.py")))
    assert _results(tmp_path)["utils.py"] == (True, ["MPS303"])


def test_a_warm_run_does_not_even_import_the_summaries(tmp_path, monkeypatch):
    """Checking digests needs no summary: ``summary.py`` and the analyses it asks are a fifth of a warm
    run's time on transformers when imported."""
    import subprocess
    import sys
    import textwrap

    write_tree(tmp_path, {"utils.py": UTILS, "train.py": TRAIN.format(output="model(features)", labels="labels")})
    _later(monkeypatch)
    assert _results(tmp_path)["utils.py"] == (False, ["MPS303"])
    code = textwrap.dedent(
        f"""\
        import sys
        from mpslint.config import Settings
        from mpslint.runner import Mode, run
        files = [({str(tmp_path / "train.py")!r}, "train.py", Settings()), ({str(tmp_path / "utils.py")!r}, "utils.py", Settings())]
        results = run(files, Mode(), cache_dir={str(tmp_path / "cache")!r}, jobs=1)
        print([(r.cached, [d.code for d in r.diagnostics]) for r in results])
        print(sorted(m for m in sys.modules if m.startswith(("mpslint.analysis.project.summary", "mpslint.checks"))))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    warm, imported = done.stdout.strip().splitlines()[-2:]
    assert warm.startswith("[(True, ") and "(True, ['MPS303'])" in warm
    assert imported == "[]"
