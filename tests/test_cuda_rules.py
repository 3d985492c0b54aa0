"""MPS101-MPS108: positives, traps, import aliases, version floors, fixes, messages."""

from __future__ import annotations

import importlib.util

import textwrap

import libcst as cst
import pytest

from helpers import check, codes, fix, rows

HELPER_2_0 = '''

def pick_device() -> torch.device:
    """CUDA if available, then Apple's MPS, then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
'''


def fixed(source, select=None, **kw):
    outcome = fix(source, select, **kw)
    assert outcome.error is None
    cst.parse_module(outcome.text)
    again = fix(outcome.text, select, **kw)
    assert again.text == outcome.text, "not idempotent"
    return outcome.text


def d(source: str) -> str:
    return textwrap.dedent(source)


# --------------------------------------------------------------------- MPS101


def test_cuda_method_on_modules_and_tensors():
    src = """
    import torch
    model = torch.nn.Linear(2, 2).cuda()
    x = torch.ones(2).cuda(non_blocking=True)
    y = x.cuda(0)
    """
    assert rows(src, "MPS101") == [3, 4, 5]


def test_cuda_method_message():
    [diag] = check("import torch\nx = torch.ones(1).cuda()\n", ["MPS101"])
    assert "`.cuda()`" in diag.message and "`.to(device)`" in diag.message


def test_user_flag_does_not_silence_placement():
    src = """
    import torch
    model = torch.nn.Linear(2, 2)
    if args.cuda:
        model.cuda()
    if torch.cuda.is_available():
        model = model.cuda()
    """
    assert rows(src, "MPS101") == [5, 7]


@pytest.mark.parametrize(
    "src",
    [
        # a test on the chosen device: already device-aware
        "import torch\nif x.device.type == 'cuda':\n    y = y.cuda()\n",
        "import torch\nif x.is_cuda:\n    y = y.cuda()\n    torch.cuda.synchronize()\n",  # (a lone move: see below)
        # a branch of a cuda -> mps -> cpu chain
        "import torch\nif torch.cuda.is_available():\n    m.cuda()\nelif torch.backends.mps.is_available():\n    m.to('mps')\n",
        # implementing .cuda() is not calling it
        "import torch\nclass W(torch.nn.Module):\n    def cuda(self, device=None):\n        return super().cuda(device)\n",
        # a module's `cuda`, not a tensor's
        "import numba\nimport torch\nnumba.cuda()\n",
    ],
)
def test_cuda_method_traps(src):
    assert "MPS101" not in codes(src, ["MPS101"])


def test_a_module_name_rebound_to_a_value_is_that_value():
    # awd-lstm-lm and word_language_model: `import model` then `model = model.RNNModel(...)`; `import data`,
    # then `data = source[i]` in a function
    src = d("""\
        import torch
        import model
        import data
        import numba

        corpus = data.Corpus("x")
        numba.cuda()
        model = model.RNNModel(3)
        model.cuda()


        def train():
            model.cuda()


        def get_batch(source, i):
            data = source[i]
            return data.cuda()


        def keep(x):
            return data.cuda(x)
        """)
    assert rows(src, "MPS101") == [9, 13, 18]


def test_a_module_name_bound_by_a_loop_a_with_or_a_comprehension_is_that_value_there():
    src = d("""\
        import torch
        import data
        import model

        xs = [data.cuda() for data in batches]
        data.cuda()
        for model in models:
            model.cuda()
        with open_model() as model:
            model.cuda()
        """)
    assert rows(src, "MPS101") == [5, 8, 10]  # line 6: module `data`'s `cuda` (the comprehension's is its own)


def test_an_optional_import_stays_the_module():
    src = d("""\
        import torch
        try:
            import model
        except ImportError:
            model = None
        try:
            import data
        except ImportError:
            data = make_stub()
        model.cuda()
        data.cuda()
        """)
    assert rows(src, "MPS101") == []  # `cuda` of modules `model` and `data` (numba-like), not a tensor's


def test_cuda_method_reuses_a_cuda_device_variable():
    src = """
    import torch
    device = torch.device("cuda")
    x = torch.ones(1).cuda()
    """
    out = fixed(src, ["MPS101"])
    assert "x = torch.ones(1).to(device)" in out
    assert "pick_device" not in out


def test_cuda_method_hoists_device_in_a_script():
    src = """
    import torch

    model = torch.nn.Linear(2, 2).cuda()


    def f(x):
        return x.cuda()
    """
    out = fixed(src, ["MPS101"])
    assert out == (
        "\nimport torch\n" + HELPER_2_0 + "\n\nDEVICE = pick_device()\n\nmodel = torch.nn.Linear(2, 2).to(DEVICE)\n"
        "\n\ndef f(x):\n    return x.to(DEVICE)\n"
    )


def test_a_module_that_places_nothing_on_import_picks_the_device_where_it_is_used():
    src = '''
    import torch


    def f(x):
        """Doc."""
        y = x.cuda()
        return y.cuda()


    if __name__ == "__main__":
        m = torch.nn.Linear(2, 2).cuda()
    '''
    out = fixed(src, ["MPS101"])
    assert "DEVICE" not in out
    assert '    """Doc."""\n    device = pick_device()\n    y = x.to(device)\n    return y.to(device)\n' in out
    assert 'if __name__ == "__main__":\n    device = pick_device()\n    m = torch.nn.Linear(2, 2).to(device)\n' in out


@pytest.mark.parametrize(
    "signature, body, expected",
    [
        # the caller's device: a half-migrated function
        ("def f(x, device):", "return x.cuda()", "return x.to(device)"),
        ("def f(x, device: torch.device):", "return x.cuda(non_blocking=True)",
         'return x.to(device, non_blocking=device.type == "cuda")'),
        ("def f(x, device):", "return x.cuda(non_blocking=True)",
         'return x.to(device, non_blocking=torch.device(device).type == "cuda")'),
        ('def f(x, device="cuda"):', "return x.cuda()", "return x.to(device)"),
    ],
)
def test_the_device_parameter_is_the_device(signature, body, expected):
    out = fixed(f"import torch\n\n\n{signature}\n    {body}\n", ["MPS101"])
    assert f"    {expected}\n" in out and "pick_device" not in out


@pytest.mark.parametrize("signature", ['def f(x, device="cpu"):', "def f(x, device=None):", "def f(x, cpu_device):"])
def test_a_parameter_that_may_not_be_the_cuda_device_is_not_used(signature):
    out = fixed(f"import torch\n\n\n{signature}\n    return x.cuda()\n", ["MPS101"])
    assert "return x.to(pick_device())" in out or "    device = pick_device()\n    return x.to(device)\n" in out


def test_self_device_and_accelerator_device_are_the_device():
    src = """
    import torch
    from accelerate import Accelerator


    class Trainer:
        def __init__(self, model, device):
            self.model = model.cuda()
            self.device = device

        def step(self, x):
            return self.model(x.cuda())


    def evaluate(model, batches):
        accelerator = Accelerator()
        for x in batches:
            model(x.cuda())
    """
    out = fixed(src, ["MPS101"])
    assert "return self.model(x.to(self.device))" in out
    assert "model(x.to(accelerator.device))" in out
    # in __init__ before `self.device` is set, the parameter is the device
    assert "self.model = model.to(device)" in out


def test_a_class_that_keeps_the_cpu_is_not_its_device():
    src = "import torch\n\n\nclass A:\n    def __init__(self):\n        self.device = 'cpu'\n\n    def f(self, x):\n        return x.cuda()\n"
    assert "self.device)" not in fixed(src, ["MPS101"])


def test_device_defined_after_the_use_is_not_reused():
    src = """
    import torch
    x = torch.ones(1).cuda()
    device = torch.device("cuda")
    """
    assert "x = torch.ones(1).to(DEVICE)" in fixed(src, ["MPS101"])


def test_non_blocking_kept_on_cuda_only():
    src = "import torch\ndevice = torch.device('cuda')\nx = torch.ones(1).cuda(non_blocking=True)\n"
    assert 'x = torch.ones(1).to(device, non_blocking=device.type == "cuda")' in fixed(src, ["MPS101"])


def test_string_device_variable_is_compared_as_a_string():
    src = "import torch\ndevice = 'cuda'\nx = torch.ones(1).cuda(non_blocking=True)\n"
    assert 'x = torch.ones(1).to(device, non_blocking=device == "cuda")' in fixed(src, ["MPS101"])


def test_explicit_gpu_index_has_no_fix():
    [diag] = check("import torch\nx = torch.ones(1).cuda(rank)\n", ["MPS101"])
    assert diag.fix is None


def test_helper_after_docstring_future_and_imports():
    src = '''
    """Doc."""
    from __future__ import annotations

    import os
    import torch

    x = torch.ones(1).cuda()
    '''
    out = fixed(src, ["MPS101"])
    assert out.index("import torch") < out.index("def pick_device") < out.index("DEVICE = pick_device()") < out.index("x = ")


def test_project_helper_is_imported_per_setting():
    src = "import torch\n\nx = torch.ones(1).cuda()\n"
    out = fixed(src, ["MPS101"], device_helper="myproj.devices:best_device")
    assert out == (
        "import torch\nfrom myproj.devices import best_device\n\n\nDEVICE = best_device()\n\nx = torch.ones(1).to(DEVICE)\n"
    )


def test_floor_2_7_uses_the_accelerator_one_liner():
    out = fixed("import torch\nx = torch.ones(1).cuda()\n", ["MPS101"], torch_version="2.7")
    assert 'return torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")' in out
    assert "torch.backends.mps" not in out


@pytest.mark.parametrize("floor", ["1.4", "1.11"])
def test_below_torch_1_12_the_helper_still_runs(floor):
    # torch < 1.12 has no torch.backends.mps: the helper must not raise there (issue 25)
    out = fixed("import torch\nx = torch.ones(1).cuda()\n", ["MPS101"], torch_version=floor)
    assert 'if hasattr(torch.backends, "mps") and torch.backends.mps.is_available():' in out
    compile(out, "fixed.py", "exec")
    if importlib.util.find_spec("torch") is not None:  # the Python 3.9 job runs without torch
        namespace = {}
        exec(compile(out.replace("x = torch.ones(1).to(DEVICE)\n", ""), "fixed.py", "exec"), namespace)
        assert namespace["DEVICE"].type in ("cuda", "mps", "cpu")
    helper = d('''\
        import torch


        def get_device():
            if torch.cuda.is_available():
                return torch.device("cuda")
            return torch.device("cpu")
        ''')
    assert 'if hasattr(torch.backends, "mps") and torch.backends.mps.is_available():' in fixed(helper, ["MPS103"], torch_version=floor)
    assert "hasattr" not in fixed(helper, ["MPS103"], torch_version="1.12")


def test_existing_helper_and_device_are_reused():
    src = "import torch\n" + HELPER_2_0 + "\n\nDEVICE = pick_device()\nx = torch.ones(1).cuda()\n"
    out = fixed(src, ["MPS101"])
    assert out.count("def pick_device") == 1 and out.count("DEVICE = pick_device()") == 1
    assert out.endswith("x = torch.ones(1).to(DEVICE)\n")


def test_no_fix_without_a_module_level_torch_import():
    src = "def f(x):\n    import torch\n    return x.cuda()\n"
    [diag] = check(src, ["MPS101"])
    assert diag.fix is None


# --------------------------------------------------------------------- MPS102


def test_device_literals_that_place():
    src = """
    import argparse
    import torch
    device = torch.device("cuda")
    x = torch.zeros(3, device="cuda:0")
    y = x.to("cuda")
    state = torch.load("w.pt", map_location="cuda")
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")


    def run(model, device="cuda"):
        pass
    """
    assert rows(src, "MPS102") == [4, 5, 6, 7, 9, 12]


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nok = device.type == 'cuda'\n",
        "import torch\nok = 'cuda' in str(dev)\n",
        "import torch\nok = str(dev).startswith('cuda')\n",
        "import torch\nparser.add_argument('--device', choices=['cuda', 'cpu'])\n",
        "import torch\nBACKENDS = {'cuda': 'nccl', 'cpu': 'gloo'}\n",
        "import torch\nprint('moving to cuda')\n",
        "import torch\nbackend = 'cuda'\n",
        "import torch\nwith torch.autocast('cuda'):\n    pass\n",
        "import torch\nif device.type == 'cuda':\n    x = x.to('cuda')\n",
        "import torch\nd = 'cuda' if torch.cuda.is_available() else 'mps' if torch.backends.mps.is_available() else 'cpu'\n",
        "import torch\ndef get():\n    if torch.cuda.is_available():\n        return 'cuda'\n    if torch.backends.mps.is_available():\n        return 'mps'\n    return 'cpu'\n",
    ],
)
def test_device_literal_traps(src):
    assert "MPS102" not in codes(src, ["MPS102"])


def test_cuda_or_cpu_choice_is_one_finding():
    src = 'import torch\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    assert codes(src) == ["MPS103"]


def test_device_literal_fixes():
    src = """
    import torch
    device = "cuda"
    x = torch.zeros(3, device="cuda")
    """
    out = fixed(src, ["MPS102"])
    assert 'device = pick_device().type' in out
    assert 'x = torch.zeros(3, device=device)' in out


def test_indexed_device_literal_has_no_fix():
    [diag] = check("import torch\nd = torch.device('cuda:1')\n", ["MPS102"])
    assert diag.fix is None and '"cuda:1"' in diag.message


def test_argparse_default_with_choices_without_mps_has_no_fix():
    src = "import torch\nparser.add_argument('--device', default='cuda', choices=['cuda', 'cpu'])\n"
    [diag] = check(src, ["MPS102"])
    assert diag.fix is None


# --------------------------------------------------------------------- MPS103


def test_cuda_only_choices():
    src = """
    import torch
    a = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    b = "cuda" if use_cuda else "cpu"
    if torch.cuda.is_available():
        c = torch.device("cuda")
    else:
        c = torch.device("cpu")
    """
    assert rows(src, "MPS103") == [3, 4, 5]


def test_cuda_only_choice_fixes():
    src = """
    import torch
    a = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    b = "cuda" if torch.cuda.is_available() else "cpu"
    if torch.cuda.is_available():
        c = torch.device("cuda")
    else:
        c = torch.device("cpu")
    """
    out = fixed(src, ["MPS103"])
    assert "a = pick_device()\nb = pick_device().type\nc = pick_device()\n" in out


def test_a_user_flag_in_the_choice_is_kept():
    src = 'import torch\nd = "cuda" if args.cuda and torch.cuda.is_available() else "cpu"\n'
    out = fixed(src, ["MPS103"], torch_version="2.6")
    assert out.endswith('d = pick_device().type if args.cuda and torch.accelerator.is_available() else "cpu"\n')
    out = fixed('import torch\nd = torch.device("cuda" if opt.cuda else "cpu")\n', ["MPS103"])
    assert out.endswith('d = pick_device() if opt.cuda else torch.device("cpu")\n')


def test_an_unfixed_choice_says_why():
    # a particular GPU keeps its place on CUDA and gets MPS before the CPU (issue 25)
    src = 'import torch\nd = "cuda:1" if torch.cuda.is_available() else "cpu"\n'
    assert fixed(src, ["MPS103"]) == (
        'import torch\nd = "cuda:1" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"\n')
    [diag] = check('import torch\nd = "cuda" if n_gpu > 0 else "cpu"\n', ["MPS103"])
    assert diag.fix is None and "not fixed: `n_gpu > 0` decides it" in diag.message


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nd = 'cuda' if torch.cuda.is_available() else 'mps'\n",
        "import torch\nd = 'cuda' if torch.cuda.is_available() else 'cpu'\nif torch.backends.mps.is_available():\n    d = 'mps'\n",
        "import torch\nif torch.cuda.is_available():\n    d = 'cuda'\nelif torch.backends.mps.is_available():\n    d = 'mps'\nelse:\n    d = 'cpu'\n",
        "import torch\nif torch.cuda.is_available():\n    torch.cuda.manual_seed_all(0)\n",
        "import torch\nbackend = 'nccl' if torch.cuda.is_available() else 'gloo'\n",
    ],
)
def test_cuda_only_choice_traps(src):
    assert "MPS103" not in codes(src, ["MPS103"])


def test_the_inserted_helper_is_silent():
    src = "import torch\nx = torch.ones(1).cuda()\n"
    assert codes(fixed(src)) == []


# --------------------------------------------------------------------- MPS104


def test_torch_cuda_apis():
    src = """
    import torch
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    n = torch.cuda.device_count()
    m = torch.cuda.memory_allocated()
    e = torch.cuda.Event(enable_timing=True)
    """
    assert rows(src, "MPS104") == [3, 4, 5, 6, 7]


def test_torch_cuda_api_message():
    [diag] = check("import torch\ntorch.cuda.synchronize()\n", ["MPS104"])
    assert diag.message.startswith("`torch.cuda.synchronize()` only acts on CUDA")


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
        "import torch\nif device.type == 'cuda':\n    torch.cuda.empty_cache()\n",
        "import torch\nif args.cuda:\n    torch.cuda.manual_seed(1)\n",
        "import torch\ndef f():\n    if not torch.cuda.is_available():\n        return\n    torch.cuda.synchronize()\n",
        "import torch\nn = torch.cuda.device_count() if torch.cuda.is_available() else 0\n",
        "import torch\nok = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8\n",
        "import torch\nok = torch.cuda.is_available()\n",
    ],
)
def test_torch_cuda_api_traps(src):
    assert "MPS104" not in codes(src, ["MPS104"])


def test_aliases_resolve():
    src = """
    import torch as th
    from torch import cuda
    from torch.cuda import synchronize
    th.cuda.synchronize()
    cuda.synchronize()
    synchronize()
    """
    assert rows(src, "MPS104") == [5, 6, 7]


def test_synchronize_fix_is_guarded_for_machines_without_accelerator():
    out = fixed("import torch\nfor _ in range(2):\n    torch.cuda.synchronize()\n", ["MPS104"], torch_version="2.6")
    assert out == (
        "import torch\nfor _ in range(2):\n    if torch.accelerator.is_available():\n        torch.accelerator.synchronize()\n"
    )


def test_synchronize_before_torch_2_6_switches_on_the_device():
    out = fixed("import torch\ndevice = torch.device('cuda')\ntorch.cuda.synchronize()\n", ["MPS104"], torch_version="2.5")
    assert out.endswith(
        'if device.type == "cuda":\n    torch.cuda.synchronize()\nelif device.type == "mps":\n    torch.mps.synchronize()\n'
    )


def test_synchronize_inside_an_expression_has_no_fix():
    [diag] = check("import torch\ncallback = lambda: torch.cuda.synchronize()\n", ["MPS104"])
    assert diag.fix is None


def test_renames_are_version_gated():
    src = "import torch\nn = torch.cuda.device_count()\n"
    assert fixed(src, ["MPS104"], torch_version="2.6") == "import torch\nn = torch.accelerator.device_count()\n"
    assert fixed(src, ["MPS104"], torch_version="2.5") == src


def test_seed_after_torch_manual_seed_is_removed_safely():
    src = "import torch\ntorch.manual_seed(7)\nrandom.seed(7)\ntorch.cuda.manual_seed_all(7)\nx = 1\n"
    [diag] = check(src, ["MPS104"])
    assert diag.fix.applicability.value == "safe"
    assert fixed(src, ["MPS104"]) == "import torch\ntorch.manual_seed(7)\nrandom.seed(7)\nx = 1\n"


def test_lone_cuda_seed_fix_is_unsafe():
    src = "import torch\ntorch.cuda.manual_seed(7)\n"
    [diag] = check(src, ["MPS104"])
    assert diag.fix.applicability.value == "unsafe"
    assert fix(src, ["MPS104"]).text == src
    assert fix(src, ["MPS104"], unsafe=True).text == "import torch\ntorch.manual_seed(7)\n"


def test_seed_with_other_work_in_between_is_not_removed():
    src = "import torch\ntorch.manual_seed(7)\nx = torch.rand(1, device='cuda')\ntorch.cuda.manual_seed(7)\n"
    [diag] = check(src, ["MPS104"])
    assert diag.fix.applicability.value == "unsafe"


def test_memory_statistics_have_no_fix():
    [diag] = check("import torch\nm = torch.cuda.max_memory_allocated()\n", ["MPS104"])
    assert diag.fix is None


def test_unused_torch_cuda_import_is_removed_after_the_fix():
    src = "import torch\nfrom torch import cuda\ncuda.synchronize()\n"
    assert fixed(src, ["MPS104"], torch_version="2.6") == (
        "import torch\nif torch.accelerator.is_available():\n    torch.accelerator.synchronize()\n"
    )


# --------------------------------------------------------------------- MPS105


def test_amp_findings():
    src = """
    import torch
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast():
        pass
    with torch.autocast("cuda", dtype=torch.bfloat16):
        pass
    s2 = torch.amp.GradScaler("cuda")
    s3 = torch.amp.GradScaler()
    """
    assert rows(src, "MPS105") == [3, 4, 6, 8, 9]


@pytest.mark.parametrize(
    "src",
    [
        "import torch\nwith torch.autocast(device_type=device.type):\n    pass\n",
        "import torch\ns = torch.amp.GradScaler(device.type)\n",
        "import torch\nif torch.cuda.is_available():\n    s = torch.cuda.amp.GradScaler()\n",
        "import torch\nwith torch.autocast('cpu'):\n    pass\n",
    ],
)
def test_amp_traps(src):
    assert "MPS105" not in codes(src, ["MPS105"])


def test_amp_aliases():
    src = """
    import torch
    from torch.cuda import amp
    from torch.cuda.amp import autocast, GradScaler
    a = amp.GradScaler()
    b = GradScaler()
    with autocast():
        pass
    """
    assert rows(src, "MPS105") == [5, 6, 7]


def test_amp_fix_keeps_cpu_behaviour_and_user_flags():
    src = """
    import torch
    device = torch.device("cuda")
    scaler = torch.cuda.amp.GradScaler(init_scale=1024, enabled=args.amp)
    with torch.cuda.amp.autocast(enabled=args.amp, dtype=torch.float16):
        pass
    """
    out = fixed(src, ["MPS105"], torch_version="2.8")
    assert 'scaler = torch.amp.GradScaler(device.type, init_scale=1024, enabled=args.amp and device.type != "cpu")' in out
    assert 'with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=args.amp and device.type != "cpu"):' in out


def test_amp_fix_removes_the_imports_it_made_unused():
    src = """
    import torch
    from torch.cuda.amp import autocast, GradScaler
    device = torch.device("cuda")
    scaler = GradScaler()
    with autocast():
        pass
    """
    out = fixed(src, ["MPS105"], torch_version="2.8")
    assert "torch.cuda.amp" not in out
    assert "import torch\ndevice" in out


@pytest.mark.parametrize(
    "floor,scaler,autocast",
    [
        ("2.2", None, None),
        ("2.4", 'enabled=device.type == "cuda"', None),
        ("2.5", 'enabled=device.type == "cuda"', 'enabled=device.type != "cpu"'),
        ("2.8", 'enabled=device.type != "cpu"', 'enabled=device.type != "cpu"'),
    ],
)
def test_amp_fixes_follow_the_torch_floor(floor, scaler, autocast):
    src = "import torch\ndevice = torch.device('cuda')\ns = torch.cuda.amp.GradScaler()\nwith torch.cuda.amp.autocast():\n    pass\n"
    diags = {d.location.row: d for d in check(src, ["MPS105"], torch_version=floor)}
    assert (diags[3].fix is None) == (scaler is None)
    assert (diags[4].fix is None) == (autocast is None)
    if scaler:
        assert scaler in diags[3].fix.message
    if autocast:
        assert autocast in diags[4].fix.message


def test_bfloat16_autocast_needs_2_6_on_mps():
    src = "import torch\ndevice = torch.device('cuda')\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n"
    assert check(src, ["MPS105"], torch_version="2.5")[0].fix is None
    assert check(src, ["MPS105"], torch_version="2.6")[0].fix is not None


def test_custom_fwd_is_reported_without_fix():
    src = "import torch\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n"
    [diag] = check(src, ["MPS105"])
    assert diag.fix is None and "custom_fwd" in diag.message


# --------------------------------------------------------------------- MPS106-MPS108


def test_cudnn_settings():
    src = """
    import torch
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.deterministic = False
    if torch.cuda.is_available():
        torch.backends.cudnn.deterministic = True
    print(torch.backends.cudnn.deterministic)
    """
    # issue 18: benchmark and allow_tf32 change nothing on MPS: they are not findings
    assert rows(src, "MPS106") == [4]
    assert "use_deterministic_algorithms" in check(src, ["MPS106"])[0].message
    assert "use_deterministic_algorithms(True, warn_only=True)" in check(src, ["MPS106"])[0].message


def test_legacy_tensor_types():
    src = """
    import torch
    from torch.cuda import LongTensor
    a = torch.cuda.FloatTensor([1.0])
    b = LongTensor(2, 3)
    c = torch.FloatTensor([1.0])
    T = torch.cuda.HalfTensor if cuda else torch.HalfTensor
    """
    assert rows(src, "MPS107") == [4, 5, 7]


def test_legacy_tensor_fix_is_unsafe_and_literal_only():
    src = "import torch\ndevice = torch.device('cuda')\na = torch.cuda.FloatTensor([1.0])\nb = torch.cuda.LongTensor(2, 3)\nc = torch.cuda.FloatTensor(data)\n"
    assert fix(src, ["MPS107"]).text == src
    out = fix(src, ["MPS107"], unsafe=True).text
    assert "a = torch.tensor([1.0], dtype=torch.float32, device=device)" in out
    assert "b = torch.empty(2, 3, dtype=torch.int64, device=device)" in out
    assert "c = torch.cuda.FloatTensor(data)" in out


def test_cuda_only_features():
    src = """
    import os
    import pynvml
    import torch
    import torch.distributed as dist
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    torch.cuda.nvtx.range_push("x")
    m = torch.nn.DataParallel(model)
    dist.init_process_group(backend="nccl")
    """
    assert rows(src, "MPS108") == [3, 6, 7, 8, 9, 10, 11]


@pytest.mark.parametrize(
    "src",
    [
        "import os\nimport torch\nv = os.environ.get('CUDA_VISIBLE_DEVICES')\n",
        "import torch\nif torch.cuda.is_available():\n    s = torch.cuda.Stream()\n",
        "import torch\nimport torch.distributed as dist\ndist.init_process_group('nccl' if torch.cuda.is_available() else 'gloo')\n",
        "import torch\nif torch.cuda.device_count() > 1:\n    model = torch.nn.DataParallel(model)\n",
        "import torch\ndef f(s: torch.cuda.Stream):\n    pass\n",
    ],
)
def test_cuda_only_feature_traps(src):
    assert "MPS108" not in codes(src, ["MPS108"])


# --------------------------------------------------------------------- prefilter


@pytest.mark.parametrize(
    "path",
    sorted(p for p in __import__("pathlib").Path(__file__).resolve().parent.parent.glob("fixtures/cuda/*.py")),
    ids=lambda p: p.name,
)
def test_prefilter_never_changes_results(path):
    from mpslint.config import Settings
    from mpslint.engine import check_text

    text = path.read_text(encoding="utf-8")
    settings = Settings(select=frozenset(c for c in Settings().select if c.startswith("MPS1")))
    with_filter = check_text(text, str(path), settings).diagnostics
    without = check_text(text, str(path), settings, prefilter=False).diagnostics
    assert with_filter == without


# --------------------------------------------------------------------- traps found on the transformers corpus


@pytest.mark.parametrize(
    "src,code",
    [
        # cache_utils.py: a quantizer's own `cuda` method, not Tensor.cuda
        ("import torch\nself.quantizer.cuda(qtensor, meta=meta, device=dev)\n", "MPS101"),
        # runner_onnx.py: the GPU of the CUDA execution provider the session already runs on (the test names CUDA)
        ("import torch\ndef device(self):\n    if provider in ('CUDAExecutionProvider', 'TensorrtExecutionProvider'):\n"
         "        return torch.device('cuda', int(options[provider]['device_id']))\n    return torch.device('cpu')\n",
         "MPS102"),
        # training_args.py: a process's GPU in a model-parallel launch
        ("import torch\nif is_sagemaker_mp_enabled():\n    device = torch.device('cuda', smp.local_rank())\n", "MPS102"),
        # modeling_bark.py: CUDA only as the fallback when no accelerator was found
        ("import torch\nt = (get_current_accelerator() or torch.device('cuda')).type\n", "MPS102"),
        # trainer.py: DataParallel under `n_gpu > 1`
        ("import torch\nif args.n_gpu > 1:\n    model = torch.nn.DataParallel(model)\n", "MPS108"),
        # modeling_reformer.py: a test that reads torch.cuda state is a CUDA guard
        ("import torch\nif len(torch.cuda.default_generators) > 0:\n    i = torch.cuda.current_device()\n", "MPS104"),
        # testing_utils.py: skip decorators about CUDA GPUs
        ("import torch\nd = unittest.skipUnless(torch.cuda.device_count() > 1, 'needs 2 GPUs')\n", "MPS104"),
        # testing_utils.py / import_utils.py: helpers whose name says they are about CUDA
        ("import torch\ndef get_gpu_count():\n    return torch.cuda.device_count()\n", "MPS104"),
        ("import torch\ndef is_cuda_stream_capturing():\n    return torch.cuda.is_current_stream_capturing()\n", "MPS108"),
        ("import torch\ndef _as_cuda_device(i):\n    return torch.device('cuda', 0)\n", "MPS102"),
        # import_utils.py: early exit with `not torch.cuda.is_available() or ...`
        (
            "import torch\ndef tf32():\n    if not torch.cuda.is_available() or torch.version.cuda is None:\n"
            "        return False\n    return torch.cuda.get_device_properties(0).major >= 8\n",
            "MPS104",
        ),
        # modeling_blip_2.py / modeling_instructblip.py: a multi-GPU test is False on a Mac whichever API asks
        ("import torch\nif len(device_map) > 1 and torch.cuda.device_count() > 1:\n    hooks = True\n", "MPS104"),
        ("import torch\nmany = 1 < torch.cuda.device_count()\n", "MPS104"),
        ("import torch\nmany = torch.cuda.device_count() >= 2\n", "MPS104"),
        ("import torch\nsingle = torch.cuda.device_count() < 2\n", "MPS104"),
        # msa_attention.py: the right side of `or` only runs on CUDA
        ("import torch\nok = q.device.type != 'cuda' or torch.cuda.get_device_capability(q.device)[0] != 10\n", "MPS104"),
    ],
)
def test_corpus_traps(src, code):
    assert code not in codes(src, [code])


def test_no_helper_before_a_guarded_torch_import():
    # testing_utils.py: torch comes from `if is_torch_available(): import torch`
    src = "from .utils import is_torch_available\n\nif is_torch_available():\n    import torch\n\nx = torch.ones(1).cuda()\n"
    out = fixed(src, ["MPS101"])
    assert out.index("import torch") < out.index("def pick_device")


def test_no_helper_when_torch_is_imported_after_other_code():
    src = "import os\n\n\ndef f(x):\n    return x.cuda()\n\n\nimport torch\n"
    [diag] = check(src, ["MPS101"])
    assert diag.fix is None


@pytest.mark.parametrize(
    "src,code",
    [
        # accelerate: the CUDA branch of a dispatch over several accelerators
        (
            "import torch\nif is_xpu_available():\n    n = torch.xpu.device_count()\nelif is_hpu_available():\n"
            "    n = torch.hpu.device_count()\nelse:\n    n = torch.cuda.device_count()\n",
            "MPS104",
        ),
        ("import torch\nif device == 'hpu':\n    d = 1\nelse:\n    if device == 'gpu':\n        device = 'cuda'\n", "MPS102"),
        # accelerate: an enum that names CUDA
        ("import torch\nif rng_type == RNGType.CUDA:\n    s = torch.cuda.get_rng_state()\n", "MPS104"),
        ("import torch\nif state.distributed_type == DistributedType.MULTI_GPU:\n    s = torch.cuda.get_rng_state()\n", "MPS104"),
        # accelerate: not a CUDA-or-CPU choice
        ("import torch\nt = 'cuda' if xla_gpu else state.device.type\n", "MPS103"),
        # timm: early exit on a device test joined with `or`
        (
            "import torch\ndef f(device):\n    if device.type != 'cuda' or not HAS:\n        return None\n"
            "    return torch.cuda.get_device_properties(device).L2_cache_size\n",
            "MPS104",
        ),
        # timm: the fallback for an older torch
        (
            "import torch\ntry:\n    s = torch.amp.GradScaler(device=device)\nexcept (AttributeError, TypeError):\n"
            "    s = torch.cuda.amp.GradScaler()\n",
            "MPS105",
        ),
    ],
)
def test_more_corpus_traps(src, code):
    assert code not in codes(src, [code])


def test_a_broad_except_is_not_a_compat_fallback():
    src = "import torch\ntry:\n    x = 1\nexcept Exception:\n    torch.cuda.synchronize()\n"
    assert codes(src, ["MPS104"]) == ["MPS104"]


def test_modules_built_on_cuda_only_libraries_are_cuda_code():
    # accelerate/utils/megatron_lm.py
    src = "import torch\nif ok:\n    from megatron.core import mpu\nloss = torch.tensor(0.0, device=torch.cuda.current_device())\nt = torch.cuda.FloatTensor([0.0])\n"
    assert codes(src, ["MPS104", "MPS107"]) == []
    assert codes(src.replace("megatron", "mylib"), ["MPS104", "MPS107"]) == ["MPS104", "MPS107"]


# --------------------------------------------------------------------- issue 18: where the device is picked


def test_a_device_parameter_default_is_picked_when_the_function_runs():
    src = '''
    import torch


    class Trainer:
        def __init__(self, model, device="cuda"):
            """Doc."""
            self.device = device
            self.model = model.cuda()
    '''
    out = fixed(src, ["MPS101", "MPS102"])
    assert (
        '    def __init__(self, model, device=None):\n        """Doc."""\n        if device is None:\n'
        "            device = pick_device().type\n        self.device = device\n        self.model = model.to(device)\n"
    ) in out
    assert "DEVICE" not in out


def test_without_a_torch_floor_fixes_assume_torch_2_0():
    # A repository that declares no torch may be older than torch.accelerator (2.6) or MPS autocast (2.5).
    src = "import torch\ndevice = torch.device('cuda')\ntorch.cuda.synchronize()\nwith torch.cuda.amp.autocast():\n    n = torch.cuda.device_count()\n"
    out = fixed(src, ["MPS104", "MPS105"])
    assert "accelerator" not in out and "torch.mps.synchronize()" in out
    assert "torch.cuda.amp.autocast()" in out and "torch.cuda.device_count()" in out


def test_cuda_only_statements_are_guarded_where_they_stand():
    # issue 18: a half-migrated function kept torch.cuda.ipc_collect() and reset_peak_memory_stats(), which raise without CUDA
    src = "import torch\n\n\ndef bench():\n    torch.cuda.ipc_collect()\n    torch.cuda.reset_peak_memory_stats()\n    start = torch.cuda.Event(enable_timing=True)\n"
    out = fixed(src, ["MPS104", "MPS108"])
    assert out == (
        "import torch\n\n\ndef bench():\n    if torch.cuda.is_available():\n        torch.cuda.ipc_collect()\n"
        "    if torch.cuda.is_available():\n        torch.cuda.reset_peak_memory_stats()\n"
        "    start = torch.cuda.Event(enable_timing=True)\n"
    )
    [event] = check(out, ["MPS104"])
    assert event.fix is None  # a value later code uses: guarding it would leave the name unbound


def test_an_autocast_decorator_that_disables_cuda_autocast_disables_mps_too():
    src = "import torch\n\n\n@torch.cuda.amp.autocast(enabled=False)\ndef f(x):\n    return x\n"
    [diag] = check(src, ["MPS105"])
    assert "decorator" in diag.message and "device.type" not in diag.message
    assert check(src, ["MPS105"], torch_version="2.4")[0].fix is None  # autocast("mps") raises before 2.5
    out = fixed(src, ["MPS105"], torch_version="2.5")
    assert '@torch.cuda.amp.autocast(enabled=False)\n@torch.autocast("mps", enabled=False)\ndef f(x):' in out
    [enabling] = check("import torch\n\n\n@torch.autocast('cuda')\ndef f(x):\n    return x\n", ["MPS105"])
    assert enabling.fix is None and "x.device.type" in enabling.message


@pytest.mark.parametrize(
    "body, added",
    [
        ("    if torch.cuda.is_available():\n        return torch.device('cuda')\n    return torch.device('cpu')\n",
         '    if torch.backends.mps.is_available():\n        return torch.device("mps")\n'),
        ("    if torch.cuda.is_available():\n        return 'cuda'\n    else:\n        return 'cpu'\n",
         '    elif torch.backends.mps.is_available():\n        return "mps"\n'),
    ],
)
def test_a_device_helper_gets_its_mps_branch(body, added):
    out = fixed("import torch\n\n\ndef dev():\n" + body, ["MPS103"])
    assert added in out and out.index("cuda") < out.index("mps") < out.rindex("cpu")


# --------------------------------------------------------------------- issue 14: device choices in other shapes


@pytest.mark.parametrize(
    "src, code, row",
    [
        # .is_cuda as the device test picks the CPU on a Mac
        ("import torch\ndevice = 'cuda' if next(model.parameters()).is_cuda else 'cpu'\n", "MPS103", 2),
        # index form
        ("import torch\nd = torch.device('cuda', index=args.gpu) if torch.cuda.is_available() else torch.device('cpu')\n",
         "MPS103", 2),
        # device_count() feeding a device choice
        ("import torch\nd = 'cuda' if torch.cuda.device_count() > 0 else 'cpu'\n", "MPS103", 2),
        # rank-indexed strings outside distributed-only branches
        ("import torch\nx = x.to('cuda:{}'.format(local_rank))\n", "MPS102", 2),
        ("import torch\nx = torch.zeros(1, device=f'cuda:{rank}')\n", "MPS102", 2),
        # NCCL as a default backend
        ("import torch\nbackend = 'nccl'\n", "MPS108", 2),
        ("import torch\nparser.add_argument('--dist-backend', default='nccl', type=str)\n", "MPS108", 2),
    ],
)
def test_device_choices_in_other_shapes(src, code, row):
    assert rows(src, code) == [row]


@pytest.mark.parametrize(
    "src, code",
    [
        # comparisons ask where something is; they place nothing
        ("import torch\nif x.device != torch.device('cuda'):\n    x = x.to(dev)\n", "MPS102"),
        ("import torch\nsame = x.device == torch.device('cuda:0')\n", "MPS102"),
        # one GPU per process, in a distributed-only branch
        ("import torch\nif args.distributed:\n    x = x.to('cuda:{}'.format(args.local_rank))\n", "MPS102"),
        ("import torch\nbackend = 'nccl' if torch.cuda.is_available() else 'gloo'\n", "MPS108"),
    ],
)
def test_other_shapes_traps(src, code):
    assert code not in codes(src, [code])


def test_is_cuda_choice_becomes_the_device_it_tests():
    out = fixed("import torch\ndevice = 'cuda' if next(model.parameters()).is_cuda else 'cpu'\n", ["MPS103"])
    assert out == "import torch\ndevice = next(model.parameters()).device.type\n"
    out = fixed("import torch\nd = torch.device('cuda' if x.is_cuda else 'cpu')\n", ["MPS103"])
    assert out == "import torch\nd = torch.device(x.device.type)\n"


def test_device_count_choice_is_fixed_like_is_available():
    out = fixed("import torch\nd = 'cuda' if torch.cuda.device_count() > 0 else 'cpu'\n", ["MPS103"])
    assert out.endswith("d = pick_device().type\n")


# --------------------------------------------------------------------- issue 18: say which torch the fixes assumed


@pytest.mark.parametrize(
    "requirement, note",
    [
        (None, "Fixes target torch 2.0 (no torch-version set and no torch requirement found). Set torch-version"),
        ("torch>=2.4\n", "Fixes target torch 2.4 (torch>=2.4 in requirements.txt)."),
    ],
)
def test_the_run_says_which_torch_the_fixes_target(tmp_path, monkeypatch, requirement, note):
    from clitools import cli_runner

    from mpslint.cli import main

    (tmp_path / ".git").mkdir()
    if requirement:
        (tmp_path / "requirements.txt").write_text(requirement)
    (tmp_path / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    monkeypatch.chdir(tmp_path)
    for args in (["--no-cache", "train.py"], ["--diff", "train.py"], ["--fix", "train.py"]):
        result = cli_runner().invoke(main, args)
        said = result.output + result.stderr  # with --diff the diff is stdout and the note goes to stderr
        assert note in said, (args, said)


def test_unfixed_cuda_calls_say_why():
    [diag] = check("import torch\nx = torch.ones(1).cuda(args.gpu)\n", ["MPS101"])
    assert diag.fix is None and diag.message.endswith("; not fixed: it chooses a particular GPU")
    [diag] = check("def f(x):\n    import torch\n    return x.cuda()\n", ["MPS101"])
    assert diag.message.endswith("; not fixed: torch is not imported at module level before this code, where the device picker would go")


def test_the_first_gpu_is_the_gpu_unless_the_code_changes_the_current_one():
    out = fixed("import torch\nd = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\n", ["MPS103"])
    assert out.endswith("d = pick_device()\n")
    src = "import torch\ntorch.cuda.set_device(1)\nd = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\n"
    assert fixed(src, ["MPS103"]).endswith(  # cuda:0 stays where CUDA is: only MPS is added
        "d = torch.device('cuda:0' if torch.cuda.is_available() else 'mps' if torch.backends.mps.is_available() else 'cpu')\n")


@pytest.mark.parametrize("test", ["torch.cuda.device_count() == 1", "torch.cuda.device_count() < 1",
                                  "1 <= torch.cuda.device_count()", "torch.cuda.device_count() != 1"])
def test_device_count_compared_where_a_mac_answers_differently_is_reported(test):
    # 0 CUDA devices against the Mac's 1 accelerator: these answers change with the API, `> 1` does not.
    assert rows(f"import torch\nsingle = {test}\n", "MPS104") == [2]


# `.cuda()` that follows another tensor's `is_cuda` (issue 25: a batched seq2seq loss's mask stayed on the CPU)

def test_cuda_under_is_cuda_follows_that_tensor():
    src = d("""\
        import torch


        def mask(lengths, n):
            r = torch.arange(n)
            if lengths.is_cuda:
                r = r.cuda()
            return r < lengths.unsqueeze(1)
        """)
    assert rows(src, "MPS101") == [7]
    assert fixed(src, ["MPS101"]) == src.replace("    if lengths.is_cuda:\n        r = r.cuda()\n",
                                                 "    r = r.to(lengths.device)\n")


def test_cuda_moves_under_is_cuda_follow_that_tensor_together():
    # NRI's decoder: two buffers moved where the input is, one statement or one per buffer.
    src = d("""\
        import torch


        def diag(x):
            mask = torch.ones(3)
            inverse = torch.zeros(3)
            if x.is_cuda:
                mask, inverse = mask.cuda(), inverse.cuda()
            edges = torch.zeros(4)
            if x.is_cuda:
                edges = edges.cuda()
                inverse = inverse.cuda()
            return mask + inverse * x + edges
        """)
    assert rows(src, "MPS101") == [8, 8, 11, 12]
    assert fixed(src, ["MPS101"]) == src.replace(
        "    if x.is_cuda:\n        mask, inverse = mask.cuda(), inverse.cuda()\n",
        "    mask, inverse = mask.to(x.device), inverse.to(x.device)\n").replace(
        "    if x.is_cuda:\n        edges = edges.cuda()\n        inverse = inverse.cuda()\n",
        "    edges = edges.to(x.device)\n    inverse = inverse.to(x.device)\n")


@pytest.mark.parametrize("body", [
    "if x.is_cuda:\n    y = y.cuda()\n    z = 1",  # more than the move: the author's CUDA-only branch
    "if x.is_cuda:\n    y, z = y.cuda(), z",  # one side is no move
    "if x.is_cuda:\n    y, z = z.cuda(), y.cuda()",  # the names change places
    "if x.is_cuda:\n    y = y.cuda()\n    z = y.cuda()",
    "if x.is_cuda:\n    y = y.cuda()\nelse:\n    y = y.cpu()",
    "if x.is_cuda:\n    y = z.cuda()",
    "if x.is_cuda:\n    y = y.cuda(0)",
    "if x.is_cuda:\n    # keep on the same GPU\n    y = y.cuda()",
])
def test_is_cuda_traps_are_not_rewritten(body):
    src = "import torch\n\n\ndef f(x, y, z):\n" + "".join(f"    {line}\n" for line in body.split("\n")) + "    return y\n"
    out = fix(src, ["MPS101"]).text
    assert ".to(x.device)" not in out
