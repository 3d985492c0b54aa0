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


def test_a_guard_choosing_a_particular_gpu_gets_an_mps_branch_not_a_new_guard():
    # `if torch.cuda.is_available() and use_gpu: device = torch.device("cuda:" + str(gpu_id))`: rewriting the guard
    # would send a Mac to that CUDA device (found reading the Berkeley deep RL course's pytorch_util.py); an `elif`
    # for MPS keeps the GPU where CUDA is and the user's switch on a Mac
    source = textwrap.dedent('''\
        import torch


        def init_gpu(use_gpu=True, gpu_id=0):
            global device
            if torch.cuda.is_available() and use_gpu:
                device = torch.device("cuda:" + str(gpu_id))
                print("GPU", gpu_id)
            else:
                device = torch.device("cpu")
        ''')
    [diagnostic] = check(source, ["MPS103"])
    assert diagnostic.fix is not None
    assert _fixed(source) == source.replace(
        "    else:\n",
        "    elif torch.backends.mps.is_available() and use_gpu:\n        device = torch.device(\"mps\")\n    else:\n")


@pytest.mark.parametrize("test", [
    "torch.cuda.is_available() and use_cuda",  # use_cuda is availability too: False on a Mac
    "torch.cuda.is_available() and args.distributed",
])
def test_an_indexed_guard_is_not_rewritten_when_more_than_the_user_decides(test):
    source = textwrap.dedent(f'''\
        import torch

        use_cuda = torch.cuda.is_available()


        def init(args, gpu):
            if {test}:
                device = torch.device("cuda", gpu)
            else:
                device = torch.device("cpu")
            return device
        ''')
    found = [d for d in check(source, ["MPS103"]) if d.location.row == 7]
    assert found and all(d.fix is None for d in found)


# ------------------------------------------------ a particular GPU placing work outside any choice (MPS102)

def _fixed102(source: str, **kw) -> str:
    outcome = fix(source, ["MPS102"], **kw)
    assert outcome.error is None
    assert fix(outcome.text, ["MPS102"], **kw).text == outcome.text, "not idempotent"
    assert [d.code for d in outcome.diagnostics] == []
    return outcome.text


@pytest.mark.parametrize("value,expected", [
    ('torch.device("cuda", opts.gpu)',
     'torch.device("cuda", opts.gpu) if torch.cuda.is_available() else pick_device()'),
    ('torch.device("cuda", settings["GPU_INDEX"])',
     'torch.device("cuda", settings["GPU_INDEX"]) if torch.cuda.is_available() else pick_device()'),
    ("torch.device('cuda:%d' % which)", "torch.device('cuda:%d' % which) if torch.cuda.is_available() else pick_device()"),
    ('f"cuda:{opts.gpu}"', 'f"cuda:{opts.gpu}" if torch.cuda.is_available() else pick_device().type'),
    ('"cuda:{}".format(which)', '"cuda:{}".format(which) if torch.cuda.is_available() else pick_device().type'),
])
def test_a_device_variable_naming_one_gpu_keeps_it_where_cuda_is(value, expected):
    source = f"import torch\n\n\ndef run(opts, settings, which):\n    device = {value}\n    return torch.ones(2).to(device)\n"
    [finding] = check(source, ["MPS102"])
    assert finding.location.row == 5 and finding.fix is not None
    assert f"    device = {expected}\n" in _fixed102(source)


def test_in_place_it_is_reported_without_a_fix():
    source = 'import torch\n\n\ndef run(x, gpu):\n    return x.to(f"cuda:{gpu}")\n'
    [finding] = check(source, ["MPS102"])
    assert finding.fix is None and "not fixed" in finding.message


@pytest.mark.parametrize("trap", [
    # a process's GPU: distributed code by design
    'device = torch.device("cuda", local_rank)',
    'device = torch.device("cuda", args.rank % torch.cuda.device_count())',
    # the branch of a test that already asked about CUDA
    'if backend_name == "CUDAExecutionProvider":\n        device = torch.device("cuda", opts.device_id)',
    # a comparison places nothing
    'same = x.device == torch.device("cuda", opts.gpu)',
    # already a choice with MPS
    'device = torch.device("cuda", opts.gpu) if torch.cuda.is_available() else torch.device("mps")',
    # a literal GPU number is the plain literal rule's business (reported there, not twice)
])
def test_indexed_traps(trap):
    source = f"import torch\n\n\ndef run(x, opts, args, local_rank, backend_name):\n    {trap}\n"
    assert check(source, ["MPS102"]) == []


def test_a_helper_named_for_cuda_is_not_reported():
    source = 'import torch\n\n\ndef as_cuda_device(i):\n    return torch.device("cuda", i)\n'
    assert check(source, ["MPS102"]) == []


def test_with_ddp_in_the_file_it_is_not_fixed():
    source = textwrap.dedent('''\
        import torch
        from torch.nn.parallel import DistributedDataParallel


        def run(model, opts):
            device = torch.device("cuda", opts.gpu)
            return DistributedDataParallel(model.to(device))
        ''')
    [finding] = check(source, ["MPS102"])
    assert finding.fix is None and "DistributedDataParallel" in finding.message


def test_to_an_index_from_a_gpu_list_is_reported_without_a_fix():
    source = textwrap.dedent('''\
        import torch


        def place(net, gpu_ids, opt):
            net.to(gpu_ids[0])
            buffer = torch.zeros(3).to(opt.gpu_ids[-1])
            mask = torch.ones(3, device=opt.gpus[0])
            return net, buffer, mask
        ''')
    found = check(source, ["MPS102"])
    assert [(d.location.row, d.fix) for d in found] == [(5, None), (6, None), (7, None)]


@pytest.mark.parametrize("trap", [
    "x.to(devices[0])",  # a list of devices of any kind
    "x.to(dtypes[0])",
    "x.to(gpu_ids[0], non_blocking=True) if x.device.type == 'cuda' else x",  # a device test guards it
    "x.to(f(gpu_ids))",
])
def test_gpu_list_traps(trap):
    source = f"import torch\n\n\ndef place(x, devices, dtypes, gpu_ids, f):\n    return {trap}\n"
    assert check(source, ["MPS102"]) == []


def test_a_distributed_function_keeps_its_gpu_list():
    source = "import torch\n\n\ndef setup_ddp(net, gpu_ids):\n    return net.to(gpu_ids[0])\n"
    assert check(source, ["MPS102"]) == []


def test_a_configuration_fallback_becomes_the_picked_type():
    source = 'import torch\n\n\ndef place(model, args):\n    return model.to(getattr(args, "device", "cuda"))\n'
    out = _fixed102(source)
    assert 'return model.to(getattr(args, "device", pick_device().type))' in out


def test_the_users_gpu_number_gets_mps_where_cuda_is_missing():
    source = textwrap.dedent('''\
        import torch


        class Settings:
            DEVICE = None


        def select_device(gpu_id):
            if gpu_id >= 0:
                Settings.DEVICE = torch.device('cuda:%d' % gpu_id)
            else:
                Settings.DEVICE = torch.device('cpu')
        ''')
    assert _fixed(source) == source.replace(
        "Settings.DEVICE = torch.device('cuda:%d' % gpu_id)\n",
        "Settings.DEVICE = torch.device('cuda:%d' % gpu_id) if torch.cuda.is_available() else torch.device('mps')\n")


@pytest.mark.parametrize("test", [
    "n_gpu > 0",  # n_gpu = torch.cuda.device_count() > 0: availability, not the user's number
    "torch.cuda.device_count() > 1",
    "args.local_rank >= 0",  # a process's GPU
])
def test_an_index_test_that_is_not_the_users_number_is_not_rewritten(test):
    source = textwrap.dedent(f'''\
        import torch

        n_gpu = torch.cuda.device_count() > 0


        def select_device(args, gpu_id):
            if {test}:
                device = torch.device("cuda:%d" % gpu_id)
            else:
                device = torch.device("cpu")
            return device
        ''')
    assert all(d.fix is None for d in check(source, ["MPS103"]))
