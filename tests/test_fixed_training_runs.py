"""A fixed training script still runs on the CPU and prints exactly what the original printed.

The MPS3xx fixes (insert `.cpu()`, add `device=`, drop `non_blocking=True`)
claim to be safe: where the original already ran, the program behaves the
same. This runs the original and the fixed fixtures (tiny, seeded) in one
child process (torch is imported once) and compares their output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mpslint.config import Settings
from mpslint.fixer import fix_text

pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "training"
SCRIPTS = ["gan.py", "evaluation.py"]

DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, runpy, sys

    outputs = []
    for path in sys.argv[1:]:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            runpy.run_path(path, run_name="__main__")
        outputs.append(buffer.getvalue())
    print(json.dumps(outputs))
    """
)


def test_fixed_scripts_give_the_same_results(tmp_path):
    paths = []
    for name in SCRIPTS:
        original = FIXTURES / name
        outcome = fix_text(original.read_text(encoding="utf-8"), str(original), Settings())
        assert outcome.error is None and outcome.fixed, f"{name} should exercise at least one fix"
        fixed = tmp_path / name
        fixed.write_text(outcome.text, encoding="utf-8")
        paths += [str(original), str(fixed)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *paths], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    outputs = json.loads(done.stdout)
    for name, before, after in zip(SCRIPTS, outputs[::2], outputs[1::2]):
        assert before.strip(), f"{name} printed nothing"
        assert after == before, name
