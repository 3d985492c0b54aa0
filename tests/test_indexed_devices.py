"""Indexed and listed CUDA devices (issue 25 item 2): `f"cuda:{i}"`, `torch.device("cuda", i)`, `"cuda:%d"`,
`.format`, a `gpu_ids` list. A choice between such a GPU and the CPU is reported (MPS103) and keeps its GPU where
CUDA is, with MPS added where the CPU was chosen; traps stay silent."""

from __future__ import annotations

import textwrap

import pytest

from helpers import check, fix

HELPER = '''\
import torch


def get_device(rank, n):
    if torch.cuda.is_available():
        return torch.device(f"cuda:{rank % n}")
    return torch.device("cpu")
'''


def _fixed(source: str, **kw) -> str:
    outcome = fix(source, ["MPS103"], **kw)
    assert outcome.error is None
    assert fix(outcome.text, ["MPS103"], **kw).text == outcome.text, "not idempotent"
    assert [d.code for d in outcome.diagnostics] == []
    return outcome.text


def test_an_indexed_helper_gets_its_mps_branch():
    assert [d.location.row for d in check(HELPER, ["MPS103"])] == [5]
    assert _fixed(HELPER) == HELPER.replace(
        '    return torch.device("cpu")',
        '    if torch.backends.mps.is_available():\n        return torch.device("mps")\n    return torch.device("cpu")')


@pytest.mark.parametrize("choice,expected", [
    ('torch.device(f"cuda:{i}" if torch.cuda.is_available() else "cpu")',
     'torch.device(f"cuda:{i}" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")'),
    ('torch.device("cuda", i) if torch.cuda.is_available() else torch.device("cpu")',
     'torch.device("cuda", i) if torch.cuda.is_available() else torch.device("mps") if torch.backends.mps.is_available() '
     'else torch.device("cpu")'),
    ('"cuda:%d" % i if torch.cuda.is_available() else "cpu"',
     '"cuda:%d" % i if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"'),
    ('"cuda:" + str(i) if torch.cuda.is_available() else "cpu"',
     '"cuda:" + str(i) if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"'),
    ("torch.device('cuda:{}'.format(gpu_ids[0])) if gpu_ids else torch.device('cpu')",
     "(torch.device('cuda:{}'.format(gpu_ids[0])) if torch.cuda.is_available() else torch.device('mps')) "
     "if gpu_ids else torch.device('cpu')"),
])
def test_indexed_choices_keep_their_gpu_and_add_mps(choice, expected):
    source = f"import torch\n\n\ndef device_for(i, gpu_ids):\n    return {choice}\n"
    assert [d.code for d in check(source, ["MPS103"])] == ["MPS103"]
    assert _fixed(source) == source.replace(choice, expected)


def test_below_torch_1_12_the_mps_branch_still_runs():
    source = 'import torch\n\n\ndef device_for(i):\n    return f"cuda:{i}" if torch.cuda.is_available() else "cpu"\n'
    out = _fixed(source, torch_version="1.4")
    assert 'else "mps" if hasattr(torch.backends, "mps") and torch.backends.mps.is_available() else "cpu"' in out


@pytest.mark.parametrize("trap", [
    # already MPS-aware
    'f"cuda:{i}" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"',
    # a name, not a device choice between a GPU and the CPU
    'f"cuda:{i}" if torch.cuda.is_available() else "none"',
    'f"cuda-{i}" if torch.cuda.is_available() else "cpu"',
])
def test_traps(trap):
    source = f"import torch\n\n\ndef device_for(i):\n    return {trap}\n"
    assert check(source, ["MPS103"]) == []


def test_a_distributed_flag_is_reported_not_rewritten():
    source = textwrap.dedent('''\
        import torch


        def device_for(args):
            return torch.device("cuda", args.local_rank) if args.distributed else torch.device("cpu")
        ''')
    [diagnostic] = check(source, ["MPS103"])
    assert diagnostic.fix is None and "not fixed" in diagnostic.message


def test_a_guard_choosing_a_particular_gpu_is_not_rewritten():
    # `if torch.cuda.is_available() and use_gpu: device = torch.device("cuda:" + str(gpu_id))`: rewriting the guard
    # alone would send a Mac to that CUDA device (found reading the Berkeley deep RL course's pytorch_util.py)
    source = textwrap.dedent('''\
        import torch


        def init_gpu(use_gpu=True, gpu_id=0):
            global device
            if torch.cuda.is_available() and use_gpu:
                device = torch.device("cuda:" + str(gpu_id))
            else:
                device = torch.device("cpu")
        ''')
    [diagnostic] = check(source, ["MPS103"])
    assert diagnostic.fix is None and diagnostic.message.endswith("not fixed: it names a particular GPU")
