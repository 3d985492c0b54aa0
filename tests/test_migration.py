"""Issue 2's "Done means": `mpslint --fix` migrates a CUDA training script.

The realistic script fails on this CPU-only machine because CUDA is missing;
after the fix it runs to completion, a second fix changes nothing, and the
placement/AMP rules report nothing on it. A script that already ran on the
CPU ("cuda if available else cpu") prints exactly the same before and after
the fix (fixed seeds), which is what "safe" means.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mpslint.config import Settings, select_codes
from mpslint.config.torch_version import newest_known_torch
from mpslint.engine import check_text
from mpslint.fixer import fix_text

pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "cuda"
# What `mpslint --fix fixtures/cuda/train_cuda.py` uses in this repository: its config sets the newest torch.
LATEST = Settings(torch_version=newest_known_torch())
TRAIN = FIXTURES / "train_cuda.py"
CPU_OR_CUDA = FIXTURES / "train_cuda_or_cpu.py"


def _torch_has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


pytestmark = pytest.mark.skipif(_torch_has_cuda(), reason="these tests are about a machine without CUDA")


def _run(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=path.parent,
    )


def _fixed(path: Path, tmp_path: Path, settings: Settings = Settings()) -> Path:
    outcome = fix_text(path.read_text(encoding="utf-8"), str(path), settings)
    assert outcome.error is None
    target = tmp_path / path.name
    target.write_text(outcome.text, encoding="utf-8")
    return target


def test_the_cuda_script_fails_without_cuda():
    result = _run(TRAIN, "--steps", "3")
    assert result.returncode != 0
    assert "Torch not compiled with CUDA enabled" in result.stderr


def test_the_fixed_script_runs_to_completion_on_cpu(tmp_path):
    fixed = _fixed(TRAIN, tmp_path, LATEST)
    result = _run(fixed, "--steps", "20")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("final loss ")
    # The rewritten AMP stays off on the CPU, as the CUDA-only original's did: no warnings.
    assert "Warning" not in result.stderr


def test_the_fix_is_the_golden_and_a_second_fix_changes_nothing():
    text = TRAIN.read_text(encoding="utf-8")
    first = fix_text(text, str(TRAIN), LATEST)
    assert first.text == TRAIN.with_name("train_cuda.fixed.py").read_text(encoding="utf-8")
    second = fix_text(first.text, str(TRAIN), LATEST)
    assert second.text == first.text
    assert not second.changed


def test_placement_and_amp_rules_are_silent_on_the_fixed_script():
    fixed = fix_text(TRAIN.read_text(encoding="utf-8"), str(TRAIN), LATEST).text
    settings = Settings(select=select_codes(["MPS101", "MPS102", "MPS103", "MPS105"]), torch_version=LATEST.torch_version)
    assert check_text(fixed, "train_cuda.py", settings).diagnostics == []


@pytest.fixture(scope="module")
def original_cpu_output() -> str:
    before = _run(CPU_OR_CUDA)
    assert before.returncode == 0, before.stderr
    assert before.stdout.count("epoch") == 3
    return before.stdout


@pytest.mark.parametrize("torch_version", [None, (2, 4)], ids=["no-floor", "floor-2.4"])
def test_a_script_that_ran_on_cpu_prints_the_same_after_the_fix(tmp_path, original_cpu_output, torch_version):
    after = _run(_fixed(CPU_OR_CUDA, tmp_path, Settings(torch_version=torch_version)))
    assert after.returncode == 0, after.stderr
    assert after.stdout == original_cpu_output
