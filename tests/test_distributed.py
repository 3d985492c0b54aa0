"""Launch and distributed code on a Mac (issue 25 item 1, issue 26 "distributed on a Mac").

CUDA-or-exit launchers (MPS103), "nccl" and a missing backend, DDP's device_ids
and DDP around a model on MPS (MPS108), set_device (MPS104), and tensors made
for collectives (MPS101/MPS102 put them on the backend's device): each with
its traps, and a fixed launcher that runs here, on a machine without CUDA.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from helpers import check, fix


def d(source: str) -> str:
    return textwrap.dedent(source)


def found(source, select=None, **kw):
    return [(x.location.row, x.code) for x in check(d(source), select, **kw)]


def fixed(source, select=None, **kw) -> str:
    outcome = fix(d(source), select, **kw)
    assert outcome.error is None
    again = fix(outcome.text, select, **kw)
    assert again.text == outcome.text, "not idempotent"
    return outcome.text


# ------------------------------------------------------------ CUDA or exit (MPS103)

@pytest.mark.parametrize("launcher,expected", [
    ('assert torch.cuda.is_available(), "needs a GPU"',
     'assert torch.cuda.is_available() or torch.backends.mps.is_available(), "needs a GPU"'),
    ("if not torch.cuda.is_available():\n    print('no GPU')\n    sys.exit(1)",
     "if not (torch.cuda.is_available() or torch.backends.mps.is_available()):\n    print('no GPU')\n    sys.exit(1)"),
    ('if not torch.cuda.is_available():\n    raise RuntimeError("CUDA is required")',
     'if not (torch.cuda.is_available() or torch.backends.mps.is_available()):\n    raise RuntimeError("CUDA is required")'),
    ("assert torch.cuda.device_count() > 0",
     "assert torch.cuda.device_count() > 0 or torch.backends.mps.is_available()"),
])
def test_cuda_or_exit_launchers_accept_mps(launcher, expected):
    source = "import sys\n\nimport torch\n\n" + launcher + "\nprint(torch.ones(1))\n"
    assert found(source, ["MPS103"]) == [(5, "MPS103")]
    assert fixed(source, ["MPS103"]) == "import sys\n\nimport torch\n\n" + expected + "\nprint(torch.ones(1))\n"


@pytest.mark.parametrize("trap", [
    "if not torch.cuda.is_available():\n    return",  # a function that does nothing without CUDA
    "if not torch.cuda.is_available():\n    raise unittest.SkipTest('needs CUDA')",
    "if not torch.cuda.is_available():\n    pytest.skip('needs CUDA')",
    "assert torch.cuda.is_available() or torch.backends.mps.is_available()",
    "if args.cuda:\n    assert torch.cuda.is_available()",  # the user asked for CUDA
    "if not torch.cuda.is_available():\n    raise NotImplementedError('a CUDA kernel')",
    "if not torch.cuda.is_available():\n    warnings.warn('slow on the CPU')",
])
def test_guards_that_are_not_launchers(trap):
    body = textwrap.indent(trap, "    ")
    assert found("import torch\n\n\ndef run(args):\n" + body + "\n    return 1\n", ["MPS103"]) == []


def test_a_method_that_raises_without_cuda_states_a_requirement():
    """transformers' quantizers: a CUDA-only backend's validate_environment raises; no Mac run starts there."""
    source = (
        "import torch\n\n\nclass EetqQuantizer:\n    def validate_environment(self):\n"
        "        if not torch.cuda.is_available():\n            raise RuntimeError('A GPU is needed')\n"
    )
    assert found(source, ["MPS103"]) == []


def test_a_file_that_needs_cuda_anyway_is_not_a_launcher():
    source = """\
        import torch

        assert torch.cuda.is_available()
        stream = torch.cuda.Stream()
        """
    assert check(d(source), ["MPS103"]) == []  # a guard of CUDA code, not a launcher to migrate
    # the code it guards needs CUDA (found in torchrl: a checkpoint's CUDA RNG state; an NCCL-only branch)
    rng = "import torch\n\nif not torch.cuda.is_available():\n    raise RuntimeError('no CUDA')\n" \
          "torch.cuda.set_rng_state_all(states)\n"
    assert check(rng, ["MPS103"]) == []
    for after in ("torch.set_default_device('cuda:0')", "device = torch.device('cuda', local_rank)"):
        assert check(rng.replace("torch.cuda.set_rng_state_all(states)", after), ["MPS103"]) == []
    nccl = "import torch\n\nif backend == 'nccl':\n    if not torch.cuda.is_available():\n        raise RuntimeError('x')\n"
    assert check(nccl, ["MPS103"]) == []


def test_after_a_fixable_raise_launcher_the_code_runs_on_a_mac():
    # The early `raise` guarded the CUDA call below; once the launcher accepts MPS, it is the Mac's code:
    # the check reports it, so the fix run fixes nothing the check did not report.
    source = d("""\
        import torch


        def main():
            if not torch.cuda.is_available():
                raise RuntimeError("CUDA is required")
            torch.cuda.empty_cache()
        """)
    assert found(source, ["MPS104", "MPS103"]) == [(5, "MPS103"), (7, "MPS104")]
    assert 'elif device.type == "mps":' in fixed(source, ["MPS104", "MPS103"])
    with_streams = source + "    torch.cuda.Stream()\n"  # needs CUDA: still a guard, nothing after it reported
    assert found(with_streams, ["MPS104", "MPS103"]) == []


# ------------------------------------------------------------ backends (MPS108)

@pytest.mark.parametrize("line,expected", [
    ('dist.init_process_group("nccl")', 'dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")'),
    ("dist.init_process_group(backend='nccl', init_method='env://')",
     "dist.init_process_group(backend='nccl' if torch.cuda.is_available() else 'gloo', init_method='env://')"),
    ('backend = "nccl"', 'backend = "nccl" if torch.cuda.is_available() else "gloo"'),
    ('parser.add_argument("--dist-backend", default="nccl")',
     'parser.add_argument("--dist-backend", default="nccl" if torch.cuda.is_available() else "gloo")'),
    ("dist.init_process_group()", 'dist.init_process_group(backend=None if torch.cuda.is_available() else "gloo")'),
    ("dist.init_process_group(init_method='env://', rank=rank)",
     "dist.init_process_group(init_method='env://', rank=rank, backend=None if torch.cuda.is_available() else \"gloo\")"),
])
def test_nccl_only_where_cuda_is(line, expected):
    prelude = "import torch\nimport torch.distributed as dist\n\n"
    assert [code for _, code in found(prelude + line + "\n", ["MPS108"])] == ["MPS108"]
    assert fixed(prelude + line + "\n", ["MPS108"]) == prelude + expected + "\n"


@pytest.mark.parametrize("trap", [
    'dist.init_process_group("gloo")',
    'dist.init_process_group(backend=args.backend)',
    "dist.init_process_group(**kwargs)",
    "dist.init_process_group(device_id=device)",
    'if torch.cuda.is_available():\n    dist.init_process_group("nccl")',
    "group.init_process_group()",  # not torch.distributed's
])
def test_backend_traps(trap):
    assert found("import torch\nimport torch.distributed as dist\n\n" + trap + "\n", ["MPS108"]) == []


def test_set_device_only_where_cuda_is():
    source = "import torch\n\n\ndef setup(rank):\n    torch.cuda.set_device(rank)\n"
    assert fixed(source, ["MPS104"]) == (
        "import torch\n\n\ndef setup(rank):\n    if torch.cuda.is_available():\n        torch.cuda.set_device(rank)\n")
    assert "torch.accelerator.set_device_index(rank)" in fixed(source, ["MPS104"], torch_version="2.6")


# ------------------------------------------------------------ DDP (MPS108)

DDP_PRELUDE = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

"""


def test_ddp_device_ids_only_for_cuda():
    source = DDP_PRELUDE + "def wrap(model, rank):\n    return DDP(model, device_ids=[rank], output_device=rank)\n"
    assert found(source, ["MPS108"]) == []  # nothing says CUDA: ids of another accelerator, maybe
    source = source.replace("    return DDP", "    torch.cuda.set_device(rank)\n    return DDP")
    assert found(source, ["MPS108"]) == [(6, "MPS108"), (6, "MPS108")]
    assert fixed(source, ["MPS108"]).endswith(
        "return DDP(model, device_ids=[rank] if torch.cuda.is_available() else None, "
        "output_device=rank if torch.cuda.is_available() else None)\n")


def test_ddp_around_a_model_on_the_accelerator_is_reported():
    source = DDP_PRELUDE + "model = torch.nn.Linear(2, 2).cuda()\nmodel = DDP(model)\n"
    [diagnostic] = check(d(source), ["MPS108"])
    assert diagnostic.location.row == 5 and "no backend takes MPS tensors" in diagnostic.message
    fsdp = "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n" \
           "model = FSDP(torch.nn.Linear(2, 2).to('cuda'))\n"
    assert [code for _, code in found(fsdp, ["MPS108"])] == ["MPS108"]


@pytest.mark.parametrize("trap", [
    "model = DDP(torch.nn.Linear(2, 2))",  # on the CPU: gloo takes it
    "if args.distributed:\n    model = DDP(torch.nn.Linear(2, 2).cuda())",  # a Mac run is not distributed
    "if torch.cuda.is_available():\n    model = DDP(torch.nn.Linear(2, 2).cuda(), device_ids=[0])",
    "model = DDP(torch.nn.Linear(2, 2), device_ids=None)",
])
def test_ddp_traps(trap):
    assert found(DDP_PRELUDE + trap + "\n", ["MPS108"]) == []


# ------------------------------------------------------------ collectives

COLLECTIVES = """\
import torch
import torch.distributed as dist


def evaluate(model, loader, device):
    correct = torch.tensor([0.0], device="cuda")
    for x, y in loader:
        correct += (model(x.to(device)).argmax(-1) == y.to(device)).sum()
    count = torch.zeros(1).cuda()
    dist.all_reduce(count)
    gathered = [torch.zeros(1).cuda() for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, count)
    dist.broadcast(torch.tensor([1.0], device="cuda"), 0)
    return correct
"""


def test_tensors_made_for_collectives_follow_the_backend():
    out = fixed(COLLECTIVES, ["MPS101", "MPS102", "MPS103"])
    assert 'correct = torch.tensor([0.0], device=device)' in out  # computed with the model: the picked device
    assert 'count = torch.zeros(1).to("cuda" if torch.cuda.is_available() else "cpu")' in out
    assert '[torch.zeros(1).to("cuda" if torch.cuda.is_available() else "cpu") for _ in' in out
    assert 'torch.tensor([1.0], device="cuda" if torch.cuda.is_available() else "cpu"), 0)' in out
    assert "pick_device" not in out
    # what was right to begin with is not reported
    assert found(out, ["MPS101", "MPS102", "MPS103"]) == []


# ------------------------------------------------------------ it runs

LAUNCHER = '''\
import os
import sys
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup(rank, world_size, path):
    if not torch.cuda.is_available():
        print("CUDA is required")
        sys.exit(1)
    dist.init_process_group("nccl", init_method="file://" + path, rank=rank, world_size=world_size)
    torch.cuda.set_device(rank)


def main():
    torch.manual_seed(0)
    path = os.path.join(tempfile.mkdtemp(), "rendezvous")
    world_size = 1
    setup(0, world_size, path)
    model = torch.nn.Linear(4, 2).cuda()
    if world_size > 1:
        model = DDP(model, device_ids=[0])
    loss = model(torch.randn(3, 4).cuda()).sum()
    loss.backward()
    count = torch.tensor([3.0], device="cuda")
    dist.all_reduce(count)
    print("loss", round(loss.item(), 4), "on", loss.device.type, "count", count.item(), "on", count.device.type)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


def _run(path):
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)


def test_a_fixed_distributed_launcher_runs_on_simulated_mps(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or not torch.distributed.is_available():
        pytest.skip("about a machine without CUDA, with torch.distributed")
    from clitools import cli_runner

    from mpslint.verify.command import verify

    original = tmp_path / "original.py"
    original.write_text(LAUNCHER, encoding="utf-8")
    result = _run(original)
    assert result.returncode == 1 and "CUDA is required" in result.stdout  # as on a Mac
    outcome = fix(LAUNCHER)
    assert outcome.error is None and outcome.diagnostics == []
    migrated = tmp_path / "migrated.py"
    migrated.write_text(outcome.text, encoding="utf-8")
    run = cli_runner().invoke(verify, ["--simulate", "--output-format", "json", str(migrated)], catch_exceptions=False)
    report = json.loads(run.stdout)
    assert (report["verdict"], report["script_exit_code"]) == ("pass", 0), run.stderr
    # the model's work on mps; the collective's counter on the CPU, where gloo takes it
    assert "on mps count 3.0 on cpu" in run.stderr + run.stdout
