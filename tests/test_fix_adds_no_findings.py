"""A fix run never reports more than the check did (issue 25, item 4).

Every finding a fix run reports, fixed or remaining, was a finding of the
check: the code a fix writes (`torch.mps.synchronize()` in a device dispatch,
`.cpu()` before `.numpy()`) is never itself a new finding. Checked per rule on
every fixture, every rule page's Example, and the shapes the issue names.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from mpslint import catalog
from mpslint.config import Settings
from mpslint.config.torch_version import newest_known_torch, parse_torch_version
from mpslint.engine import check_text
from mpslint.fixer import fix_text

ROOT = Path(__file__).resolve().parent.parent

PROBES = {
    "synchronize in a training loop, torch 2.0": (
        """\
        import time
        import torch

        model = torch.nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            t0 = time.time()
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            torch.cuda.synchronize()
            print(time.time() - t0)
        """,
        "2.0",
    ),
    ".numpy() of a device tensor every step": (
        """\
        import torch

        model = torch.nn.Linear(4, 2).cuda()
        for x in loader:
            out = model(x.cuda())
            out.sum().backward()
            arr = out.detach().numpy()
        """,
        "2.0",
    ),
    "a model moved back to the CPU": (
        """\
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 2)
        model.to(device)
        model.cpu()
        probs = model(torch.randn(3, 4)).detach().numpy()
        """,
        "2.0",
    ),
    # Below torch 1.12 (PyTorch-VAE declares 1.6, BasicSR 1.7) the helper asks `hasattr(torch.backends, "mps")`,
    # and below 2.0, where there is no `torch.mps` to import, an MPS branch asks `hasattr(torch, "mps")`.
    "a test setUp moving a model, torch 1.6": (
        """\
        import unittest
        import torch


        class TestVAE(unittest.TestCase):
            def setUp(self):
                self.model = torch.nn.Linear(4, 2).cuda()
        """,
        "1.6",
    ),
    "empty_cache in a validation step, torch 1.7": (
        """\
        import torch


        def validation(model, loader):
            for x in loader:
                out = model(x.cuda())
                del out
                torch.cuda.empty_cache()
        """,
        "1.7",
    ),
    "a timed inference, torch 1.4": (
        """\
        import time
        import torch

        model = torch.nn.Linear(4, 2).cuda()
        start = time.time()
        y = model(torch.ones(3, 4).cuda())
        print(time.time() - start)
        """,
        "1.4",
    ),
}
LOW_FLOORS = ("1.6", "2.0")  # every CUDA fixture again where torch.mps is missing, and where it is not imported


def _texts():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        if path.name.endswith(".fixed.py") or "verify" in path.relative_to(ROOT / "fixtures").parts:
            continue
        yield pytest.param(path.read_text(encoding="utf-8"), newest_known_torch(), id=str(path.relative_to(ROOT)))
    for code, doc in sorted(catalog.load().items()):
        for i, block in enumerate(doc.examples("Example")):
            yield pytest.param(block, newest_known_torch(), id=f"{code}-Example-{i}")
    for name, (source, floor) in PROBES.items():
        yield pytest.param(textwrap.dedent(source), parse_torch_version(floor), id=name)
    for floor in LOW_FLOORS:
        for path in sorted((ROOT / "fixtures" / "cuda").glob("*.py")):
            if not path.name.endswith(".fixed.py"):
                yield pytest.param(path.read_text(encoding="utf-8"), parse_torch_version(floor),
                                   id=f"{path.relative_to(ROOT)}@{floor}")


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("text,floor", list(_texts()))
def test_a_fix_run_reports_at_most_the_checks_findings(text, floor, unsafe):
    settings = replace(Settings(), torch_version=floor)
    before = Counter(d.code for d in check_text(text, "example.py", settings).diagnostics)
    outcome = fix_text(text, "example.py", settings, unsafe=unsafe)
    after = Counter(d.code for d in outcome.diagnostics) + outcome.fixed
    added = after - before
    assert not added, f"the fix run reports more than the check: {dict(added)}\n{outcome.text}"


def test_the_device_dispatch_synchronize_is_one_finding():
    text = textwrap.dedent(PROBES["synchronize in a training loop, torch 2.0"][0])
    settings = Settings(torch_version=parse_torch_version("2.0"))
    outcome = fix_text(text, "example.py", settings)
    assert 'elif DEVICE.type == "mps":\n        torch.mps.synchronize()' in outcome.text
    assert [d.code for d in outcome.diagnostics] == ["MPS203"]  # the per-step wait stays, once


def test_numpy_of_a_model_moved_back_to_the_cpu_gets_no_cpu():
    text = textwrap.dedent(PROBES["a model moved back to the CPU"][0])
    outcome = fix_text(text, "example.py", Settings(torch_version=parse_torch_version("2.0")))
    assert ".cpu().numpy()" not in outcome.text
    assert "MPS301" not in [d.code for d in check_text(text, "example.py", Settings()).diagnostics]


@pytest.mark.parametrize("floor", ["1.7", "2.0", "2.1"])
def test_an_mps_branch_runs_on_the_floor(floor):
    """``import torch.mps`` fails before 2.0 (no such module) and is needed on 2.0 (``import torch`` leaves it out)."""
    text = textwrap.dedent(PROBES["empty_cache in a validation step, torch 1.7"][0])
    fixed = fix_text(text, "example.py", Settings(torch_version=parse_torch_version(floor))).text
    assert ("import torch.mps\n" in fixed) == (floor == "2.0")
    assert ('elif device.type == "mps" and hasattr(torch, "mps"):' in fixed) == (floor == "1.7"), fixed
    assert "torch.mps.empty_cache()" in fixed
    compile(fixed, "example.py", "exec")
