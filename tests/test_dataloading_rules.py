"""MPS401-MPS403: pinned memory, the fork start method, workers started at import."""

from __future__ import annotations

import pytest

from tests.helpers import check, codes, fix, rows


# --------------------------------------------------------------------- MPS401


def test_pin_memory_true_in_dataloader_is_fixed_with_cuda_availability():
    src = """
    import torch
    from torch.utils.data import DataLoader
    loader = DataLoader(ds, pin_memory=True)
    """
    assert rows(src, "MPS401") == [4]
    assert 'pin_memory=torch.cuda.is_available()' in fix(src, ["MPS401"]).text


def test_pin_memory_fix_uses_the_device_in_scope():
    src = """
    import torch as th
    from torch.utils.data import DataLoader
    def make(ds):
        device = th.device("cuda")
        return DataLoader(ds, pin_memory=True)
    """
    assert 'pin_memory=device.type == "cuda"' in fix(src, ["MPS401"]).text


@pytest.mark.parametrize("src", [
    # module code runs in order: `device` is not bound yet where the loader is made
    """
    import torch
    from torch.utils.data import DataLoader
    loader = DataLoader(ds, pin_memory=True)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    """,
    # a function that binds `device` after the loader: `device` is its local, unbound at that line
    """
    import torch
    from torch.utils.data import DataLoader
    device = torch.device("cuda")
    def make(ds):
        loader = DataLoader(ds, pin_memory=True)
        device = torch.device("cpu")
        return loader, device
    """,
])
def test_pin_memory_fix_never_reads_a_device_bound_after_the_loader(src):
    fixed = fix(src, ["MPS401"]).text
    assert "pin_memory=torch.cuda.is_available()" in fixed and "device.type" not in fixed


def test_a_function_reads_the_module_device_bound_by_the_time_it_is_called():
    src = """
    import torch
    from torch.utils.data import DataLoader
    def make(ds):
        return DataLoader(ds, pin_memory=True)
    device = torch.device("cuda")
    """
    assert 'pin_memory=device.type == "cuda"' in fix(src, ["MPS401"]).text


def test_string_device_is_not_used_by_the_fix():
    src = """
    import torch
    from torch.utils.data import DataLoader
    device = "cuda"
    loader = DataLoader(ds, pin_memory=True)
    """
    assert "pin_memory=torch.cuda.is_available()" in fix(src, ["MPS401"]).text


@pytest.mark.parametrize("src", [
    "import torch\nfrom torch.utils.data import DataLoader\nDataLoader(ds, pin_memory=torch.cuda.is_available())\n",
    "import torch\nfrom torch.utils.data import DataLoader\nDataLoader(ds, pin_memory=args.pin_memory)\n",
    "import torch\nfrom torch.utils.data import DataLoader\nDataLoader(ds, pin_memory=False)\n",
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "if torch.cuda.is_available():\n    loader = DataLoader(ds, pin_memory=True)\n",
    "import torch\nx = y.pin_memory() if torch.cuda.is_available() else y\n",
    "import torch\nargs = TrainingArguments(dataloader_pin_memory=True)\n",
    "import torch\nflag = self.pin_memory\n",
])
def test_pin_memory_traps(src):
    assert "MPS401" not in codes(src)


def test_pin_memory_method_fix_keeps_behaviour_on_cuda():
    src = """
    import torch
    def to_host(batch):
        pinned = batch.pin_memory()
        return pinned
    """
    out = fix(src, ["MPS401"]).text
    assert "pinned = batch.pin_memory() if torch.cuda.is_available() else batch" in out


def test_pin_memory_method_with_side_effect_receiver_is_reported_without_fix():
    src = """
    import torch
    batch = next(it).pin_memory()
    """
    found = check(src, ["MPS401"])
    assert [d.code for d in found] == ["MPS401"] and found[0].fix is None


# --------------------------------------------------------------------- MPS402


@pytest.mark.parametrize("src", [
    'import multiprocessing\nmultiprocessing.set_start_method("fork")\n',
    'import multiprocessing as mp\nmp.set_start_method(method="fork", force=True)\n',
    'import torch.multiprocessing as mp\nmp.set_start_method("fork")\n',
    'from multiprocessing import get_context\nctx = get_context("fork")\n',
    'from torch.utils.data import DataLoader\nDataLoader(ds, num_workers=0, multiprocessing_context="fork")\n',
    'import concurrent.futures as cf\ncf.ProcessPoolExecutor(mp_context="fork")\n',
    'import os\npid = os.fork()\n',
])
def test_fork_spellings(src):
    assert codes(src, ["MPS402"]) == ["MPS402"]


@pytest.mark.parametrize("src", [
    'import multiprocessing\nmultiprocessing.set_start_method("spawn")\n',
    'import multiprocessing\nmultiprocessing.set_start_method("forkserver")\n',
    'import sys, multiprocessing\nif sys.platform == "linux":\n    multiprocessing.set_start_method("fork")\n',
    'import os\nif os.name == "posix" and sys.platform != "darwin":\n    os.fork()\n',
    'ctx = my_lib.get_context("fork")\n',
    'print("fork")\n',
])
def test_fork_traps(src):
    assert "MPS402" not in codes(src, ["MPS402"])


def test_fork_fix_is_unsafe_and_keeps_quotes():
    src = "import multiprocessing as mp\nmp.set_start_method('fork')\n"
    assert fix(src, ["MPS402"]).text == src  # unsafe: not applied by default
    assert fix(src, ["MPS402"], unsafe=True).text == "import multiprocessing as mp\nmp.set_start_method('spawn')\n"


# --------------------------------------------------------------------- MPS403


@pytest.mark.parametrize("src", [
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n",
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=args.workers)\n",
    "import torch\nloader = torch.utils.data.DataLoader(ds, 8, True, None, None, 2)\n",
    "import multiprocessing\nwith multiprocessing.Pool(4) as p:\n    p.map(f, xs)\n",
    "from concurrent.futures import ProcessPoolExecutor\nex = ProcessPoolExecutor()\n",
    "import torch.multiprocessing as mp\nmp.spawn(worker, nprocs=2)\n",
    "from torch.utils.data import DataLoader\ndef main():\n    return DataLoader(ds, num_workers=2)\nmain()\n",
    "from torch.utils.data import DataLoader\ndef inner():\n    return DataLoader(ds, num_workers=2)\n"
    "def main():\n    inner()\nmain()\n",
    # a multiprocessing context's Process and Pool
    "import multiprocessing as mp\nctx = mp.get_context('spawn')\np = ctx.Process(target=f)\np.start()\n",
    "import multiprocessing as mp\nwith mp.get_context('spawn').Pool(4) as pool:\n    pool.map(f, xs)\n",
    "import torch.multiprocessing as mp\ndef main():\n    ctx = mp.get_context('forkserver')\n"
    "    return ctx.Pool(2)\nmain()\n",
    # a name only a library's star import binds
    "from torch.utils.data import *\nloader = DataLoader(ds, num_workers=4)\n",
    "from multiprocessing import *\npool = Pool(4)\n",
])
def test_unguarded_workers(src):
    assert codes(src, ["MPS403"]) == ["MPS403"]


@pytest.mark.parametrize("src", [
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n",
    "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=0)\n",
    "from torch.utils.data import DataLoader\nif __name__ == '__main__':\n    loader = DataLoader(ds, num_workers=4)\n",
    "from torch.utils.data import DataLoader\ndef main():\n    return DataLoader(ds, num_workers=2)\n"
    "if __name__ == '__main__':\n    main()\n",
    "from torch.utils.data import DataLoader\ndef make(ds):\n    return DataLoader(ds, num_workers=8)\n",
    "from torch.utils.data import DataLoader\nclass T:\n    def loader(self):\n        return DataLoader(ds, num_workers=8)\n"
    "T().loader()\n",
    "import sys\nfrom torch.utils.data import DataLoader\n"
    "loader = DataLoader(ds, num_workers=0 if sys.platform == 'darwin' else 4)\n",
    "from torch.utils.data import DataLoader\nmake = lambda: DataLoader(ds, num_workers=4)\n",
    "from mylib import DataLoader\nloader = DataLoader(ds, num_workers=4)\n",
    # contexts: under the guard, a context of something else, a name bound twice, a Process never made here
    "import multiprocessing as mp\nctx = mp.get_context('spawn')\nif __name__ == '__main__':\n"
    "    ctx.Process(target=f).start()\n",
    "import decimal\nctx = decimal.getcontext()\np = ctx.Process(target=f)\n",
    "import multiprocessing as mp\nctx = mp.get_context('spawn')\nctx = make_other()\np = ctx.Process(target=f)\n",
    "import multiprocessing as mp\nctx = mp.get_context('spawn')\ndef later():\n    return ctx.Pool(2)\n",
    # two library star imports: which one binds the name is not known
    "from torch.utils.data import *\nfrom mylib import *\nloader = DataLoader(ds, num_workers=4)\n",
    "from torch.utils.data import *\nDataLoader = make_loader\nloader = DataLoader(ds, num_workers=4)\n",
])
def test_unguarded_workers_traps(src):
    assert "MPS403" not in codes(src, ["MPS403"])


def test_unguarded_finding_sits_on_the_call_and_names_the_entry():
    src = """
    from torch.utils.data import DataLoader
    def inner():
        return DataLoader(ds, num_workers=2)
    def main():
        inner()
    main()
    """
    [diag] = check(src, ["MPS403"])
    assert diag.location.row == 4
    assert "`inner()`" in diag.message and "`main()`" in diag.message


def test_unguarded_message_says_whether_the_script_has_a_guard():
    # no guard at all: the message says so
    bare = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\nrun(loader)\n"
    [diag] = check(bare, ["MPS403"])
    assert "with no `if __name__ == \"__main__\":` guard" in diag.message
    # a guard the loader is built outside of (eval.py builds its loader at the top level, then
    # `if __name__ == '__main__': evaluate(test_loader, model)`): still reported, and the message does not
    # deny the guard
    outside = bare.replace("run(loader)\n", "if __name__ == '__main__':\n    run(loader)\n")
    [diag] = check(outside, ["MPS403"])
    assert diag.location.row == 2
    assert "with no" not in diag.message
    assert "outside the script's `if __name__ == \"__main__\":` guard" in diag.message
    # the same for a function the unguarded top level calls
    called = ("from torch.utils.data import DataLoader\ndef make():\n    return DataLoader(ds, num_workers=2)\n"
              "loader = make()\nif __name__ == '__main__':\n    run(loader)\n")
    [diag] = check(called, ["MPS403"])
    assert "`make()`, called at the top level of the script, outside the script's" in diag.message
    # trap: the loader under the guard is not reported
    inside = ("from torch.utils.data import DataLoader\nmodel = build()\nif __name__ == '__main__':\n"
              "    loader = DataLoader(ds, num_workers=4)\n    run(loader)\n")
    assert check(inside, ["MPS403"]) == []


@pytest.mark.parametrize("src", [
    "from torch.utils.data import *\nloader = DataLoader(ds, pin_memory=True)\n",
    "import torch\nfrom torch.utils.data import *\ndef make(ds):\n    return DataLoader(ds, batch_size=8, pin_memory=True)\n",
])
def test_pin_memory_through_a_library_star_import(src):
    assert codes(src, ["MPS401"]) == ["MPS401"]


@pytest.mark.parametrize("src", [
    "from torch.utils.data import *\nfrom numpy import *\nloader = DataLoader(ds, pin_memory=True)\n",
    "from torch.utils.data import *\ndef make(DataLoader):\n    return DataLoader(ds, pin_memory=True)\n",
])
def test_pin_memory_star_import_traps(src):
    assert codes(src, ["MPS401"]) == []


def test_pin_memory_through_a_kwargs_dict():
    # issue 14: `{'num_workers': 1, 'pin_memory': True}` passed as **kwargs
    src = "import torch\nkwargs = {'num_workers': 1, 'pin_memory': True}\nloader = torch.utils.data.DataLoader(ds, **kwargs)\n"
    [diag] = check(src, ["MPS401"])
    assert diag.location.row == 2 and diag.fix is not None
    assert fix(src, ["MPS401"]).text.endswith("kwargs = {'num_workers': 1, 'pin_memory': torch.cuda.is_available()}\nloader = torch.utils.data.DataLoader(ds, **kwargs)\n")
    guarded = "import torch\nkwargs = {'num_workers': 1, 'pin_memory': True} if use_cuda else {}\nloader = torch.utils.data.DataLoader(ds, **kwargs)\n"
    assert check(guarded, ["MPS401"]) == []


def test_pin_memory_through_a_dict_call_in_a_function():
    # issue 24 item 3: `dict(...)` spells the same keyword arguments, shared by two loaders
    src = """
    import os
    import torch
    from torch.utils.data import DataLoader

    def build(train_set, val_set, batch_size):
        opts = dict(batch_size=batch_size, num_workers=os.cpu_count(), pin_memory=True)
        train = DataLoader(train_set, shuffle=True, **opts)
        val = DataLoader(val_set, shuffle=False, **opts)
        return train, val
    """
    [diag] = check(src, ["MPS401"])
    assert diag.location.row == 7
    assert "pin_memory=torch.cuda.is_available()" in fix(src, ["MPS401"]).text


@pytest.mark.parametrize("src", [
    # pinned only when CUDA is in use, spelled three ways
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "def f(ds, cuda):\n    opts = dict(num_workers=2, pin_memory=cuda)\n    return DataLoader(ds, **opts)\n",
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "def f(ds, use_cuda):\n    opts = {}\n    if use_cuda:\n        opts = dict(num_workers=2, pin_memory=True)\n"
    "    return DataLoader(ds, **opts)\n",
    # `dict(base, ...)` copies another dict: not read; and a dict passed to something that is not a DataLoader
    "import torch\nfrom torch.utils.data import DataLoader\n"
    "def f(ds, base):\n    opts = dict(base, pin_memory=False)\n    return DataLoader(ds, **opts)\n",
    "import torch\n"
    "def f(ds):\n    opts = dict(num_workers=2, pin_memory=True)\n    return make_loader(ds, **opts)\n",
])
def test_pin_memory_dict_call_traps(src):
    assert check(src, ["MPS401"]) == []


@pytest.mark.parametrize("source, expected", [
    ('import torch\nfrom torch.utils.data import DataLoader\n'
     'loader = DataLoader(ds, num_workers=2, multiprocessing_context="fork" if torch.backends.mps.is_available() else None)\n',
     'import torch\nfrom torch.utils.data import DataLoader\n'
     'loader = DataLoader(ds, num_workers=2, multiprocessing_context="spawn" if torch.backends.mps.is_available() else None)\n'),
    ('import torch\nfrom torch.utils.data import DataLoader\n'
     'loader = DataLoader(ds, multiprocessing_context=None if device.type != "mps" and 0 else "fork")\n', None),
    ('import torch\nfrom torch.utils.data import DataLoader\n'
     'loader = DataLoader(ds, multiprocessing_context=None if not torch.backends.mps.is_available() else "fork")\n',
     'import torch\nfrom torch.utils.data import DataLoader\n'
     'loader = DataLoader(ds, multiprocessing_context=None if not torch.backends.mps.is_available() else "spawn")\n'),
])
def test_mps402_fork_chosen_exactly_when_mps_is_available(source, expected):
    found = rows(source, "MPS402")
    if expected is None:
        assert found == []
        return
    assert found == [3]
    assert fix(source, ["MPS402"], unsafe=True).text == expected


def test_mps402_fork_chosen_by_a_platform_or_cuda_test_is_left_alone():
    for test in ('sys.platform == "linux"', "torch.cuda.is_available()"):
        src = f'import sys, torch\nfrom torch.utils.data import DataLoader\nl = DataLoader(ds, multiprocessing_context="fork" if {test} else None)\n'
        assert rows(src, "MPS402") == []
