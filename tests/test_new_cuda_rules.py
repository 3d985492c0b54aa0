"""MPS109-MPS112: positives from the bug reports' own code, traps, fixes, messages."""

from __future__ import annotations

import textwrap

import pytest

from helpers import check, codes, fix, rows


def dedent(text: str) -> str:
    return textwrap.dedent(text)


# ------------------------------------------------------------------ MPS111

@pytest.mark.parametrize("source, row", [
    ('import torch\ndevice = "mps" if torch.backends.mps.is_built() else "cpu"\n', 2),
    ('import torch\nif torch.has_mps:\n    device = torch.device("mps")\n', 2),
    ('import torch as th\nuse_mps = th.backends.mps.is_built()\n', 2),
    ('from torch.backends import mps\nif mps.is_built():\n    dev = "mps"\n', 2),
    ('import torch\ndef mps_ok():\n    return torch.backends.mps.is_built()\n', 3),
    ('import torch\nhas_mps = getattr(torch, "has_mps", False)\n', 2),
    ('import torch\nif not torch.backends.mps.is_built():\n    device = "cpu"\nelse:\n    device = "mps"\n', 2),
    ('import torch\ndevice = "cuda" if torch.cuda.is_available() else "mps" if torch.has_mps else "cpu"\n', 2),
])
def test_mps111_reports_is_built_deciding_the_device(source, row):
    assert rows(source, "MPS111") == [row]


@pytest.mark.parametrize("source", [
    # PyTorch's docs: explain why MPS is missing
    'import torch\nif not torch.backends.mps.is_available():\n    if not torch.backends.mps.is_built():\n'
    '        print("MPS not available because the current PyTorch install was not built with MPS enabled.")\n',
    'import torch\nif torch.backends.mps.is_available() and torch.backends.mps.is_built():\n    device = "mps"\n',
    'import torch\nprint(f"MPS built: {torch.backends.mps.is_built()}")\n',
    'import torch\ninfo = {"mps_built": torch.backends.mps.is_built()}\n',
    'import torch\nif torch.backends.mps.is_built():\n    print("compiled with MPS")\n',
    'import torch\nif not torch.backends.mps.is_built():\n    raise SystemExit("no MPS in this build")\n',
    'import pytest, torch\n@pytest.mark.skipif(not torch.backends.mps.is_built(), reason="mps")\ndef test_x(): pass\n',
    'import torch\nflag = torch.has_mps == torch.backends.mps.is_available()\n',
    'import torch\nif torch.backends.mps.is_available():\n    x = "mps" if torch.backends.mps.is_built() else "cpu"\n',
])
def test_mps111_traps(source):
    assert rows(source, "MPS111") == []


def test_mps111_fix_keeps_the_alias_and_is_safe():
    out = fix('import torch as th\ndevice = "mps" if th.backends.mps.is_built() else "cpu"\n', ["MPS111"]).text
    assert out == 'import torch as th\ndevice = "mps" if th.backends.mps.is_available() else "cpu"\n'
    out = fix('import torch\nif torch.has_mps:\n    device = "mps"\n', ["MPS111"]).text
    assert out == 'import torch\nif torch.backends.mps.is_available():\n    device = "mps"\n'
    assert codes(out, ["MPS111"]) == []


def test_mps111_message_names_the_cause_and_the_remedy():
    [finding] = check('import torch\ndevice = "mps" if torch.backends.mps.is_built() else "cpu"\n', ["MPS111"])
    assert "Intel" in finding.message and "is_available()" in finding.message


def test_mps111_getattr_is_named_as_has_mps_and_not_fixed():
    source = 'import torch\ndevice = "mps" if getattr(torch, "has_mps", False) else "cpu"\n'
    [finding] = check(source, ["MPS111"])
    assert "`torch.has_mps`" in finding.message and finding.fix is None


# ------------------------------------------------------------------ MPS109

@pytest.mark.parametrize("source, expected", [
    ("import triton\nimport triton.language as tl\n", [1]),
    ("import torch\nfrom flash_attn import flash_attn_func\n", [2]),
    ("import xformers.ops\nimport apex\n", [1, 2]),
    ("from mamba_ssm.ops.selective_scan_interface import selective_scan_fn\n", [1]),
    # a guard that raises again is no guard: the decorator runs at import time without triton
    ("try:\n    import triton\nexcept ImportError:\n    triton = None\n\n@triton.jit\ndef k(x):\n    pass\n", [6]),
    ("import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit(params, lr=1e-3)\n", [2]),
    ("import bitsandbytes as bnb\ndef build(p):\n    return bnb.optim.PagedAdamW(p)\n", [3]),
    ("from torch.utils.cpp_extension import load\nops = load(name='ops', sources=['ops.cpp', 'ops_kernel.cu'])\n", [2]),
    ("import torch.utils.cpp_extension as ce\nm = ce.load_inline('m', cpp_sources=[s], cuda_sources=[c])\n", [2]),
])
def test_mps109_reports_unguarded_cuda_only_packages(source, expected):
    assert rows(source, "MPS109") == expected


@pytest.mark.parametrize("source", [
    "try:\n    import triton\nexcept ImportError:\n    triton = None\n",
    "try:\n    import xformers.ops\n    HAS_XFORMERS = True\nexcept Exception:\n    HAS_XFORMERS = False\n",
    "import importlib.util\nif importlib.util.find_spec('flash_attn'):\n    from flash_attn import flash_attn_func\n",
    "import torch\nif torch.cuda.is_available():\n    import triton\n",
    "import sys\nif sys.platform == 'linux':\n    import triton\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import apex\n",
    "def attention(q, k, v):\n    from flash_attn import flash_attn_func\n    return flash_attn_func(q, k, v)\n",
    "from utils import is_triton_available\nif is_triton_available():\n    import triton\n\n    @triton.jit\n"
    "    def k(x):\n        pass\n",
    # the decorated kernel file imports triton unconditionally: the import is the one finding
    "import bitsandbytes as bnb\nif args.optim == 'adamw8bit':\n    opt = bnb.optim.AdamW8bit(params)\n",
    "import bitsandbytes as bnb\nopt = bnb.optim.AdamW8bit(params) if use_8bit else torch.optim.AdamW(params)\n",
    "import bitsandbytes as bnb\nopt = bnb.optim.AdamW(params)\n",
    "import torch\nfrom torch.utils.cpp_extension import load\nif torch.cuda.is_available():\n"
    "    ops = load(name='ops', sources=['ops.cu'])\n",
    "from torch.utils.cpp_extension import load\nops = load(name='ops', sources=['ops.cpp'])\n",
    "import tritonclient\nimport apexpy\nimport xformers_like\n",
])
def test_mps109_traps(source):
    assert rows(source, "MPS109") == []


def test_mps109_one_finding_per_package_and_the_decorators_stay_silent_when_the_import_is_reported():
    source = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x):\n    pass\n"
    [finding] = check(source, ["MPS109"])
    assert finding.location.row == 1 and "no macOS build" in finding.message


def test_mps109_a_guard_that_raises_is_no_guard():
    source = ("try:\n    import triton\nexcept ImportError:\n    raise ImportError('pip install triton')\n\n"
              "@triton.jit\ndef k(x):\n    pass\n")
    assert rows(source, "MPS109") == [2]  # the import fails all the same, with a better message; the decorator adds nothing


# ------------------------------------------------------------------ MPS110

@pytest.mark.parametrize("source, expected", [
    ("import torch\nmodel = Net().to(device)\nmodel.load_state_dict(torch.load(path))\n", [3]),
    ("import torch\nckpt = torch.load(args.ckpt, weights_only=True)\nmodel.cuda()\n", [2]),
    ("import torch as th\nm = M().to(dev)\nsd = th.load(f=path)\n", [3]),
    # the else branch of a CUDA test runs on a Mac
    ("import torch\nif torch.cuda.is_available():\n    sd = torch.load(p)\nelse:\n    sd = torch.load(p)\n"
     "x = x.to('mps')\n", [5]),
])
def test_mps110_reports_load_without_map_location(source, expected):
    assert rows(source, "MPS110") == expected


@pytest.mark.parametrize("source", [
    "import torch\nmodel = Net().to(device)\nsd = torch.load(path, map_location='cpu')\n",
    "import torch\nmodel = Net().to(device)\nsd = torch.load(path, device)\n",
    "import torch\nmodel = Net().to(device)\nsd = torch.load(path, **kwargs)\n",
    "import torch\nmodel = Net().to(device)\nif torch.cuda.is_available():\n    sd = torch.load(path)\n",
    # a CPU-only script: what it saved are CPU tensors
    "import torch\nmodel = Net()\nmodel.load_state_dict(torch.load(path))\n",
    # a round trip in one module
    "import io, torch\ndef test_roundtrip():\n    x = torch.ones(2, device=device)\n    buf = io.BytesIO()\n"
    "    torch.save(x, buf)\n    buf.seek(0)\n    y = torch.load(buf)\n",
    "import numpy as np\nx = np.load(path)\ny = x.to(device)\n",
])
def test_mps110_traps(source):
    assert rows(source, "MPS110") == []


@pytest.mark.parametrize("before, after", [
    ("import torch\nmodel = Net().to(device)\nmodel.load_state_dict(torch.load(path))\n",
     "import torch\nmodel = Net().to(device)\nmodel.load_state_dict(torch.load(path, map_location=\"cpu\"))\n"),
    ("import torch\nmodel = Net().to(device)\nmodel.load_state_dict(torch.load(path, weights_only=True)['model'])\n",
     "import torch\nmodel = Net().to(device)\nmodel.load_state_dict(torch.load(path, weights_only=True, "
     "map_location=\"cpu\")['model'])\n"),
    ("import torch\nmodel = Net().to(device)\nsd = torch.load(path)\nmodel.load_state_dict(sd)\n",
     "import torch\nmodel = Net().to(device)\nsd = torch.load(path, map_location=\"cpu\")\nmodel.load_state_dict(sd)\n"),
])
def test_mps110_fix_where_the_result_goes_into_load_state_dict(before, after):
    assert fix(before, ["MPS110"]).text == after
    assert codes(after, ["MPS110"]) == []


@pytest.mark.parametrize("source", [
    "import torch\nmodel = Net().to(device)\nsd = torch.load(path)\nmodel.load_state_dict(sd)\nprint(sd.keys())\n",
    "import torch\nmodel = Net().to(device)\noptimizer.load_state_dict(torch.load(path))\n",
    "import torch\nmodel = Net().to(device)\nckpt = torch.load(path)\nstep = ckpt['step']\n",
])
def test_mps110_no_fix_where_the_loaded_tensors_are_used_as_they_come(source):
    [finding] = check(source, ["MPS110"])
    assert finding.fix is None


def test_mps109_a_package_importing_its_own_submodules_is_not_reported():
    source = "from mamba_ssm.ops.selective_scan_interface import selective_scan_fn\n"
    assert rows(source, "MPS109", path="mamba_ssm/modules/mamba_simple.py") == []
    assert rows("import triton\n", "MPS109", path="tests/ops/triton/test_ssd.py") == [1]


# ------------------------------------------------------------------ MPS112

@pytest.mark.parametrize("source, floor, expected", [
    ("import torch\ntorch.mps.manual_seed_all(0)\n", None, [2]),
    ("import torch\ni = torch.mps.current_device()\n", None, [2]),
    ("from torch import mps\nfree, total = mps.get_mem_info()\n", None, [2]),
    ("from torch.mps import current_device\n", None, [1]),
    ("import torch\nok = torch.backends.mps.is_macos14_or_newer()\n", None, [2]),
    ("import torch\nok = torch.mps.is_available()\n", "2.4", [2]),
    ("import torch\nn = torch.mps.device_count()\n", "2.3", [2]),
    ("import torch\nname = torch.backends.mps.get_name()\n", "2.8", [2]),
    # a hasattr about another object or name is no guard of torch.backends.mps
    ("import torch\nok = hasattr(torch, 'backends') and torch.backends.mps.is_available()\n", "1.6", [2]),
    ("import torch\nok = hasattr(x, 'mps') and torch.backends.mps.is_available()\n", "1.6", [2]),
    # 2.0: `import torch` does not import torch.mps (once per file)
    ("import torch\ntorch.mps.synchronize()\ntorch.mps.empty_cache()\n", "2.0", [2]),
])
def test_mps112_reports_names_the_floor_lacks(source, floor, expected):
    assert rows(source, "MPS112", torch_version=floor) == expected


def test_mps112_with_no_floor_assumes_torch_2_0_and_says_so(tmp_path):
    """The policy MPS504 follows (README: Which torch findings and fixes assume): no floor declared, 2.0 assumed."""
    from mpslint.config import Settings
    from mpslint.engine import check_text

    found = check_text("import torch\nok = torch.mps.is_available()\n", "a.py", Settings(select=frozenset({"MPS112"})))
    (d,) = found.diagnostics
    assert "no torch-version is set, so mpslint assumes torch 2.0" in d.message
    # `torch.mps` without `import torch.mps` (torch 2.0.x only) is said only to projects that declare 2.0.
    assert check_text("import torch\ntorch.mps.synchronize()\n", "a.py", Settings(select=frozenset({"MPS112"}))).diagnostics == []


@pytest.mark.parametrize("source, floor", [
    ("import torch\nok = torch.mps.is_available()\n", "2.13"),  # a floor that has it
    ("import torch\nok = torch.mps.is_available()\n", "2.5"),
    ("import torch\nimport torch.mps\ntorch.mps.synchronize()\n", "2.0"),
    ("import torch\nfrom torch import mps\nmps.synchronize()\n", "2.0"),
    ("import torch\ntorch.mps.synchronize()\n", "2.1"),
    ("import torch\nif hasattr(torch.mps, 'current_device'):\n    i = torch.mps.current_device()\n", None),
    ("import torch\ni = hasattr(torch.mps, 'is_available') and torch.mps.is_available()\n", "2.2"),
    ("import torch\ntry:\n    torch.mps.manual_seed_all(0)\nexcept AttributeError:\n    pass\n", None),
    # the module itself asked for: the helper and the MPS branches a fix writes below torch 1.12 and 2.0
    ("import torch\nok = hasattr(torch.backends, 'mps') and torch.backends.mps.is_available()\n", "1.6"),
    ("import torch\nif d.type == 'mps' and hasattr(torch, 'mps'):\n    torch.mps.empty_cache()\n", "1.7"),
    ("import torch\ntorch.mps.current_device = lambda: 0\n", None),
    ("import torch\nm = torch.mps._is_in_bad_fork()\n", None),
    ("import torch\ntorch.mps.profiler.start()\nx = torch.mps.recommended_max_memory()\n", "2.13"),
    # the file defines the name itself (a shim for libraries that call it)
    ("import torch\ntorch.mps.current_device = lambda: 0\ndef dev():\n    return torch.mps.current_device()\n", None),
    ("import torch\nsetattr(torch.mps, 'current_device', lambda: 0)\ni = torch.mps.current_device()\n", None),
    # not PyTorch
    ("from dragon.vm import torch\ntorch.mps.set_device(0)\n", None),
    # picked by torch's version
    ("import torch\n@implement_for('torch', '2.5')\ndef has_mps():\n    return torch.mps.is_available()\n", "2.1"),
    ("import torch\nif is_torch_greater_or_equal('2.5'):\n    ok = torch.mps.is_available()\n", "2.1"),
    ("import torch\nfrom packaging import version\nif version.parse(torch.__version__) >= version.parse('2.4'):\n"
     "    n = torch.mps.device_count()\n", "2.1"),
])
def test_mps112_traps(source, floor):
    assert rows(source, "MPS112", torch_version=floor) == []


@pytest.mark.parametrize("before, after, floor", [
    ("import torch as th\nth.mps.manual_seed_all(0)\n", "import torch as th\nth.mps.manual_seed(0)\n", None),
    ("import torch\nm = torch.mps.memory_allocated()\n", "import torch\nm = torch.mps.current_allocated_memory()\n", None),
    ("import torch\nok = torch.mps.is_available()\n", "import torch\nok = torch.backends.mps.is_available()\n", "2.3"),
])
def test_mps112_fixes(before, after, floor):
    assert fix(before, ["MPS112"], torch_version=floor).text == after


def test_mps112_messages_say_what_to_use():
    [finding] = check("import torch\ni = torch.mps.current_device()\n", ["MPS112"])
    assert "does not exist in any torch release" in finding.message and "one MPS device" in finding.message
    assert finding.fix is None
    [finding] = check("import torch\nok = torch.mps.is_available()\n", ["MPS112"], torch_version="2.4")
    assert "needs torch >= 2.5" in finding.message and "2.4" in finding.message


@pytest.mark.parametrize("source", [
    # save/resume utilities: the module reads back what it wrote
    "import torch\ndef save(m, p):\n    torch.save(m.state_dict(), p)\ndef resume(m, p):\n    m.to(device)\n"
    "    m.load_state_dict(torch.load(p))\n",
    "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel\nm = M().to(device)\nsd = torch.load(p)\n",
    "import torch\nimport torch_xla.core.xla_model as xm\nm = M().to(device)\nsd = torch.load(p)\n",
])
def test_mps110_modules_that_save_or_only_run_distributed_are_left_alone(source):
    assert rows(source, "MPS110") == []


# ------------------------------------------------------------ MPS103 helper gap

@pytest.mark.parametrize("source, expected", [
    ("import torch\ndef get_device(device: str):\n    if device.startswith('cuda') and torch.cuda.is_available():\n"
     "        return torch.device(device)\n    return torch.device('cpu')\n", [3]),
    ("import torch\ndef pick(device):\n    if device == 'cuda' and torch.cuda.is_available():\n        return 'cuda'\n"
     "    else:\n        return 'cpu'\n", [3]),
    ("import torch\ndef to_device(device_str):\n    return torch.device(device_str if torch.cuda.is_available() else 'cpu')\n",
     [3]),
])
def test_mps103_reports_a_helper_that_turns_a_requested_device_into_cuda_or_cpu(source, expected):
    assert rows(source, "MPS103") == expected


@pytest.mark.parametrize("source", [
    # the helper lets "mps" through
    "import torch\ndef get_device(device):\n    if device == 'cuda' and not torch.cuda.is_available():\n"
    "        return 'cpu'\n    return device\n",
    "import torch\ndef get_device(device):\n    if device.startswith('cuda') and torch.cuda.is_available():\n"
    "        return torch.device(device)\n    if device == 'mps' and torch.backends.mps.is_available():\n"
    "        return torch.device('mps')\n    return torch.device('cpu')\n",
    # a boolean flag is the user's choice of the GPU, which the device-choice check already judges
    "import torch\ndef get_device(gpu):\n    if gpu and torch.cuda.is_available():\n        return torch.device(0)\n"
    "    return torch.device('cpu')\n",
    # returns something else too
    "import torch\ndef get_device(device):\n    if device.startswith('cuda') and torch.cuda.is_available():\n"
    "        return torch.device(device)\n    if device == 'xla':\n        return xm.xla_device()\n    return 'cpu'\n",
    # no parameter: the plain CUDA-or-CPU choice, reported once by the existing check (row 3 only)
])
def test_mps103_helper_traps(source):
    assert rows(source, "MPS103") == []


def test_mps103_the_plain_helper_is_reported_once():
    source = "import torch\ndef dev():\n    if torch.cuda.is_available():\n        return 'cuda'\n    return 'cpu'\n"
    assert rows(source, "MPS103") == [3]


@pytest.mark.parametrize("source, path", [
    # data, not a model checkpoint
    ("import torch\nx = x.to(device)\ndata, targets = torch.load(path_data)\n", "demo.py"),
    ("import torch\nx = x.to(device)\ndef load_init_states(path):\n    return torch.load(path, weights_only=False)\n",
     "env.py"),
    # a test reads back what the code under test wrote
    ("import torch\nm = M().to(device)\nckpt = torch.load(file)\n", "tests/test_trainer.py"),
])
def test_mps110_data_files_and_tests_are_left_alone(source, path):
    assert rows(source, "MPS110", path=path) == []


def test_mps110_a_load_into_load_state_dict_needs_no_checkpoint_name():
    assert rows("import torch\nx.to(device)\nnet.load_state_dict(torch.load(p))\n", "MPS110") == [3]


def test_mps110_a_load_beside_an_mps_device_choice_is_still_reported():
    # tortoise-tts: the device choice knows MPS, but the checkpoints were saved on CUDA (neonbjb/tortoise-tts#855)
    source = ("import torch\nclass TTS:\n    def __init__(self):\n        if torch.backends.mps.is_available():\n"
              "            self.device = torch.device('mps')\n        self.clvp = CLVP().cpu().eval()\n"
              "        self.clvp.load_state_dict(torch.load(get_model_path('clvp2.pth')))\n")
    assert rows(source, "MPS110") == [7]
