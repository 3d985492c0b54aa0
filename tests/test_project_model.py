"""The project model: module summaries, and names resolved across the modules of a checked tree."""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

import pytest

from mpslint.analysis.project import facts, layout, model
from mpslint.analysis.project.store import SummaryStore
from mpslint.analysis.project.summary import LazyFacts, summarize
from mpslint.analysis.project.view import ProjectView
from mpslint.config import Settings
from mpslint.engine import check_text
from helpers import fresh_project, write_tree  # noqa: F401 (a fixture)


def summary_of(source: str):
    return summarize(ast.parse(textwrap.dedent(source)))


@pytest.fixture(autouse=True)
def _fresh(fresh_project):
    yield


write = write_tree


def view_of(path: Path) -> ProjectView:
    text = path.read_text(encoding="utf-8")
    return ProjectView(ast.parse(text), str(path))


# ---------------------------------------------------------------- summaries


def test_values_of_top_level_names():
    summary = summary_of(
        """
        import numpy as np
        import torch
        if torch.cuda.is_available():
            device = "cuda"
        else:
            device = "cpu"
        HAS_GPU = torch.cuda.is_available()
        WANT_GPU = not NO_GPU and torch.cuda.is_available()
        NO_CUDA = not torch.cuda.is_available()
        RANK_DEVICE = f"cuda:{3}"
        host = torch.device("cpu")
        noise = np.random.randn(3)
        seeded = np.random.RandomState(0).randn(3)
        grid = np.linspace(0, 1, 5)
        loader_kwargs = {"num_workers": 4, "pin_memory": True}
        quiet_kwargs = dict(pin_memory=False)
        small = np.random.randn(3).astype(np.float32)
        """
    )
    assert summary.values == {
        "device": facts.DEVICE,
        "HAS_GPU": facts.CUDA_FLAG,
        "WANT_GPU": facts.CUDA_FLAG,  # true only where CUDA is; NO_CUDA (negated) is no flag
        "RANK_DEVICE": facts.DEVICE,
        "host": facts.CPU,
        "noise": facts.FLOAT64,
        "seeded": facts.FLOAT64,
        "grid": facts.FLOAT64,
        "loader_kwargs": "kwargs:num_workers=4,pin_memory=True",
    }


def test_indexed_cuda_devices_are_devices():
    summary = summary_of(
        """
        import torch
        def by_format(rank):
            return "cuda:{}".format(rank)
        def by_percent(rank):
            return "cuda:%d" % rank
        def by_fstring(rank):
            return f"cuda:{rank}"
        def by_index(rank):
            return torch.device("cuda", rank)
        def not_a_device(rank):
            return f"run-{rank}"
        """
    )
    assert summary.functions == dict.fromkeys(["by_format", "by_percent", "by_fstring", "by_index"], facts.DEVICE)


def test_aliases_are_names_bound_once_to_a_qualified_name():
    summary = summary_of(
        """
        import torch
        from torch.cuda.amp import autocast
        DTYPE = torch.float64
        precision_scope = autocast
        twice = torch.float64
        twice = torch.float32
        def f(param):
            return param
        param = torch.float16
        """
    )
    # `twice` is bound twice and `param` is also a parameter: neither is an alias.
    assert summary.aliases == {"DTYPE": "torch.float64", "precision_scope": "torch.cuda.amp.autocast"}


def test_function_returns_in_terms_of_arguments():
    summary = summary_of(
        """
        import numpy as np
        import torch
        DEVICE = torch.device("cuda")
        def reduce_mean(tensor, n):
            rt = tensor.clone()
            rt /= n
            return rt
        def place(batch):
            batch = batch.to(DEVICE)
            return batch
        def maybe_host(x, flag):
            if flag:
                x = x.cpu()
            return x
        def accuracy(logits, labels):
            return (logits.argmax(1) == labels).float().mean()
        def either(a, b):
            if a is not None:
                return a
            return b
        def loops_forever(x):
            return loops_forever(x)
        def host(x):
            return x.detach().cpu()
        def noise(n):
            return np.random.rand(n)
        def nothing(x):
            print(x)
        class Trainer:
            def gather(self, t):
                return t.mean()
            def run(self, t):
                return self.gather(t)
            @staticmethod
            def first(t, u):
                return t
        """
    )
    assert summary.functions == {
        "reduce_mean": "arg:0",
        "place": facts.DEVICE_TENSOR,
        "maybe_host": "host_copy:0",  # copied on some path: read on the host at the call that takes it
        "accuracy": "arg:0,1",
        "host": "host_copy:0",
        "noise": facts.FLOAT64,
        "Trainer.gather": "arg:0",
        "Trainer.run": "arg:0",
        "Trainer.first": "arg:0",
    }


def test_module_classes_are_those_with_a_module_base_here():
    summary = summary_of("""
        import torch.nn as nn
        from torch.nn import Module
        from .base import Base

        class Net(nn.Module): pass
        class Deeper(Net): pass
        class Other(Module): pass
        class Plain: pass
        class FromElsewhere(Base): pass
        class Mixed(Plain, Deeper): pass
        class Loop(Loop2): pass
        class Loop2(Loop): pass
        """)
    # Base (another module's) is not known here: a checked file that imports it asks that module's summary
    assert summary.modules == ["Deeper", "Mixed", "Net", "Other"]


def test_summary_round_trips_through_json_and_digest_follows_content():
    first = summary_of("import torch\nDTYPE = torch.float64\n")
    again = type(first).from_json(first.to_json())
    assert again == first and again.digest == first.digest
    assert summary_of("import torch\nDTYPE = torch.float32\n").digest != first.digest
    # A body edit that changes no fact keeps the digest: importers need no new check.
    assert summary_of("import torch\nDTYPE = torch.float64  # the default\n").digest == first.digest


# ---------------------------------------------------------------- resolution


def test_absolute_relative_and_dotted_imports(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/consts.py": "import torch\nDTYPE = torch.float64\ndevice = torch.device('cuda')\n",
        "pkg/sub/user.py": "from .consts import DTYPE\nfrom ..sub import consts\nimport pkg.sub.consts as c\nfrom pkg.sub.consts import device\n",
    })
    view = view_of(tmp_path / "pkg/sub/user.py")
    assert view.qualified("DTYPE") == "torch.float64"
    assert view.imported("device") == ("value", facts.DEVICE)
    assert view.imported("consts")[0] == "module"
    assert view.module_value("c", "DTYPE") == ("alias", "torch.float64")
    assert str(tmp_path / "pkg/sub/consts.py") in view.depends


def test_star_imports_honour_all_and_order(tmp_path):
    write(tmp_path, {
        "first.py": "import torch\n__all__ = ['DTYPE', 'torch']\nDTYPE = torch.float64\nhidden = torch.float64\n",
        "second.py": "import torch\n__all__ = ['DTYPE']\nDTYPE = torch.float32\n",
        "chain.py": "from first import *\n",
        "one.py": "from first import *\n",
        "two.py": "from first import *\nfrom second import *\n",
        "three.py": "from chain import *\n",
    })
    one = view_of(tmp_path / "one.py")
    assert one.qualified("DTYPE") == "torch.float64"
    assert one.qualified("torch") == "torch"
    assert one.qualified("hidden") is None  # not in __all__
    assert view_of(tmp_path / "two.py").qualified("DTYPE") == "torch.float32"  # the later star wins
    assert view_of(tmp_path / "three.py").qualified("DTYPE") == "torch.float64"  # re-exported by a star


def test_import_cycles_terminate(tmp_path):
    write(tmp_path, {
        "a.py": "from b import *\n",
        "b.py": "from a import *\nfrom a import loop\n",
        "c.py": "from a import *\nfrom b import loop\n",
    })
    view = view_of(tmp_path / "c.py")
    assert view.imported("anything") is None
    assert view.imported("loop") is None


def test_a_module_outside_the_project_is_what_its_name_says(tmp_path):
    write(tmp_path, {"m.py": "from torch import float64 as f64\nfrom os import path\n"})
    from mpslint.analysis.names import ImportTable

    module = ast.parse((tmp_path / "m.py").read_text())
    table = ImportTable(module.body)
    table.resolver = ProjectView(module, str(tmp_path / "m.py")).qualified
    assert table.qualify(ast.Name(id="f64")) == "torch.float64"
    assert table.qualify(ast.Name(id="path")) == "os.path"


def test_summaries_are_computed_once_per_content(tmp_path):
    write(tmp_path, {"util.py": "import torch\nDTYPE = torch.float64\n", "a.py": "from util import DTYPE\n",
                     "b.py": "from util import DTYPE\n"})
    store = SummaryStore(str(tmp_path / "cache"))
    model._SHARED = model.Project(store)
    view_of(tmp_path / "a.py").qualified("DTYPE")
    view_of(tmp_path / "b.py").qualified("DTYPE")
    assert store.computed == 1
    # A fresh process (a new store on the same directory) reads it from disk.
    again = SummaryStore(str(tmp_path / "cache"))
    model._SHARED = model.Project(again)
    assert view_of(tmp_path / "a.py").qualified("DTYPE") == "torch.float64"
    assert again.computed == 0


# ---------------------------------------------------------------- rules see the project


def test_rules_ask_the_project(tmp_path):
    write(tmp_path, {
        "helpers.py": """
            import torch
            def reduce_mean(t, n):
                out = t.clone()
                out /= n
                return out
            def as_number(t):
                return t.item()
            """,
        "train.py": """
            import torch
            from helpers import as_number, reduce_mean
            device = torch.device("mps")
            model = torch.nn.Linear(2, 2).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                opt.step()
                print(reduce_mean(loss, 2).item())
                print(as_number(loss))
            """,
    })
    path = tmp_path / "train.py"
    result = check_text(path.read_text(), str(path), Settings())
    # `as_number(loss)` reads the device tensor on the host inside the helper: the same wait, every step
    assert [(d.location.row, d.code) for d in result.diagnostics] == [(11, "MPS201"), (12, "MPS201")]
    assert "`as_number` does" in result.diagnostics[1].message
    assert result.depends[str(tmp_path / "helpers.py")] != model.ABSENT


def test_helpers_of_another_module_that_read_their_argument_on_the_host(tmp_path):
    write(tmp_path, {
        "utils/array_tool.py": """
            import numpy as np
            import torch
            def tonumpy(data):
                if isinstance(data, np.ndarray):
                    return data
                if isinstance(data, torch.Tensor):
                    return data.detach().cpu().numpy()
            def to_np(x):
                return tonumpy(x)
            def scalar(t):
                return float(t.mean())
            def shape_of(t):
                return t.shape
            def numel(t):
                return len(t)
            def on_host(t):
                return np.asarray(t)
            """,
        "train.py": """
            import numpy as np
            import torch
            from utils import array_tool as at
            from utils.array_tool import scalar, shape_of, numel, to_np, on_host
            device = torch.device("mps")
            model = torch.nn.Linear(2, 2).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                roi = model(x.to(device))
                loss = roi.sum()
                loss.backward()
                opt.step()
                boxes = at.tonumpy(roi)
                again = to_np(roi)
                value = scalar(loss)
                kept = at.tonumpy(y)
                shape = shape_of(roi)
                count = numel(roi)
                labels = on_host(np.zeros(3))
                host = on_host(roi)
                print(value)
            final = at.tonumpy(roi)
            """,
    })
    path = tmp_path / "train.py"
    result = check_text(path.read_text(), str(path), Settings())
    # Traps: a host batch (`y`), metadata (`.shape`, `len`), a numpy array, and a read after the loop.
    assert [(d.location.row, d.code) for d in result.diagnostics] == [
        (14, "MPS202"), (15, "MPS202"), (16, "MPS201"), (21, "MPS202")]
    assert "`tonumpy` does" in result.diagnostics[0].message


def test_a_helper_of_the_same_file_is_reported_where_it_reads(tmp_path):
    write(tmp_path, {
        "train.py": """
            import torch
            def tonumpy(t):
                return t.detach().cpu().numpy()
            device = torch.device("mps")
            model = torch.nn.Linear(2, 2).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in loader:
                out = model(x.to(device))
                out.sum().backward()
                opt.step()
                preds = tonumpy(out)
            """,
    })
    path = tmp_path / "train.py"
    result = check_text(path.read_text(), str(path), Settings())
    assert [(d.location.row, d.code) for d in result.diagnostics] == [(4, "MPS202")]


def test_what_a_summary_says_a_host_read_is():
    summary = summary_of(
        """
        import numpy as np
        def item(t):
            return t.item()
        def copy(t):
            return t.detach().cpu().numpy()
        def either(t):
            if isinstance(t, np.ndarray):
                return t
            return t.cpu()
        def both(a, b):
            return (a == b).sum().item()
        def passed_on(x):
            return copy(x)
        def metadata(t):
            return t.numel()
        def new_host():
            return torch.zeros(3).cpu()
        def accuracy(preds, target):
            correct = preds.eq(target).cpu().sum()
            return np.float(correct) / len(target)
        def numpy_of_host(n):
            return np.float(n) / 2
        """
    )
    # `np.float(correct)` of a copied tensor: the copy is still the wait at each call
    assert summary.functions["accuracy"] == "host_copy:0"
    assert summary.functions.get("numpy_of_host") in (None, facts.HOST)  # a number: no read of a tensor
    assert summary.functions["item"] == "host_read:0"
    assert summary.functions["copy"] == "host_copy:0"
    assert summary.functions["either"] == "host_copy:0"
    assert summary.functions["both"] == "host_read:0,1"
    assert summary.functions["passed_on"] == "host_copy:0"
    assert summary.functions["metadata"] == facts.HOST
    assert summary.functions.get("new_host") in (None, facts.HOST_TENSOR)


# ---------------------------------------------------------------- the cache re-checks importers only


HELPERS = """
import torch
def reduce_mean(t, n):
    out = t.clone()
    out /= n
    return out
"""
TRAIN = """
import torch
from helpers import reduce_mean
device = torch.device("mps")
model = torch.nn.Linear(2, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x.to(device)).sum()
    loss.backward()
    opt.step()
    print(reduce_mean(loss, 2).item())
"""
OTHER = "import torch\nx = torch.zeros(1)\n"


def test_a_changed_summary_rechecks_its_importers_and_nothing_else(tmp_path):
    from mpslint.runner import Mode, run

    write(tmp_path, {"helpers.py": HELPERS, "train.py": TRAIN, "other.py": OTHER})
    files = [(str(tmp_path / name), name, Settings()) for name in ("helpers.py", "other.py", "train.py")]
    cache_dir = tmp_path / "cache"

    def checked():
        results = run(files, Mode(), cache_dir=cache_dir, jobs=1)
        return {r.display: (r.cached, [d.code for d in r.diagnostics]) for r in results}

    assert checked()["train.py"] == (False, ["MPS201"])
    assert all(cached for cached, _ in checked().values())
    # A comment in the helper: its summary is the same, so its importer's findings still hold.
    (tmp_path / "helpers.py").write_text(HELPERS + "# a note\n")
    after_comment = checked()
    assert after_comment["train.py"][0] and after_comment["other.py"][0] and not after_comment["helpers.py"][0]
    # The helper now returns a tensor it makes on the host: train.py is checked again (and its finding goes),
    # other.py is not.
    (tmp_path / "helpers.py").write_text(HELPERS.replace("return out", "return torch.zeros(1)"))
    after_change = checked()
    assert after_change["train.py"] == (False, [])
    assert after_change["other.py"][0]


@pytest.mark.skipif(os.name == "nt", reason="Windows: ctime is the creation time, no stat index")
def test_a_file_the_stat_index_says_has_no_finding_is_checked_again_when_its_imports_change(tmp_path, monkeypatch):
    # A warm run serves a file with no finding from the stat index alone (cache.py): it opens no entry,
    # yet the summaries it depends on are still compared.
    import time
    from types import SimpleNamespace

    from mpslint import runner
    from mpslint.runner import Mode, run

    # The files look older than the index's racy window, so the index vouches for them.
    monkeypatch.setattr(runner, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + 10**10))
    write(tmp_path, {"helpers.py": HELPERS.replace("return out", "return torch.zeros(1)"), "train.py": TRAIN})
    files = [(str(tmp_path / name), name, Settings()) for name in ("helpers.py", "train.py")]
    cache_dir = tmp_path / "cache"
    assert [r.diagnostics for r in run(files, Mode(), cache_dir=cache_dir, jobs=1)] == [[], []]
    for entry in cache_dir.glob("v*/??/*.json"):
        entry.unlink()  # what a warm run needs for these two is in the stat index
    assert all(r.cached for r in run(files, Mode(), cache_dir=cache_dir, jobs=1))
    (tmp_path / "helpers.py").write_text(HELPERS)  # now it returns what it computes from a device tensor
    result = run(files, Mode(), cache_dir=cache_dir, jobs=1)[1]
    assert not result.cached and [d.code for d in result.diagnostics] == ["MPS201"]


def test_a_new_module_where_an_import_pointed_rechecks_the_importer(tmp_path):
    from mpslint.runner import Mode, run

    write(tmp_path, {"train.py": TRAIN})
    files = [(str(tmp_path / "train.py"), "train.py", Settings())]
    cache_dir = tmp_path / "cache"
    # Unseen, `reduce_mean` computes from a device tensor what `.item()` reads as a tensor: on the device.
    assert [d.code for d in run(files, Mode(), cache_dir=cache_dir, jobs=1)[0].diagnostics] == ["MPS201"]
    # The module appears and says it returns a host tensor: train.py is checked again, and the finding goes.
    write(tmp_path, {"helpers.py": HELPERS.replace("return out", "return torch.zeros(1)")})
    result = run(files, Mode(), cache_dir=cache_dir, jobs=1)[0]
    assert not result.cached and result.diagnostics == []


# ---------------------------------------------------------------- one file alone, and stdin, see the project


@pytest.mark.parametrize("how", ["one file", "stdin"])
def test_one_file_alone_and_stdin_read_the_modules_they_import(tmp_path, how, monkeypatch):
    from click.testing import CliRunner

    from mpslint.cli import main

    write(tmp_path, {"helpers.py": HELPERS, "train.py": TRAIN})
    monkeypatch.chdir(tmp_path)
    if how == "one file":
        result = CliRunner().invoke(main, ["--no-cache", "train.py"])
    else:
        result = CliRunner().invoke(main, ["--no-cache", "--stdin-filename", "train.py", "-"], input=TRAIN)
    assert "train.py:11:11: MPS201" in result.output, result.output


def test_imports_for_type_checkers_bind_nothing():
    summary = summary_of(
        """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from .heavy import *
            from .models import Model
        else:
            from .light import fast
        """
    )
    assert summary.stars == [] and "Model" not in summary.imports and "fast" in summary.imports


def test_a_star_import_does_not_answer_for_a_name_the_file_binds(tmp_path):
    write(tmp_path, {
        "common.py": "import torch\ndtype = torch.float64\n",
        "user.py": "from common import *\ndef cast(x, dtype):\n    return x.to(dtype)\n",
    })
    view = view_of(tmp_path / "user.py")
    assert view.qualified("dtype") is None  # a parameter here, whatever common.py binds
    assert view.qualified("torch") == "torch"
    assert view.qualified("print") is None



def test_a_name_only_a_library_star_import_can_bind_is_that_librarys(tmp_path):
    write(tmp_path, {
        "loader.py": "from torch.utils.data import *\nimport torch\ndef make(ds, DataLoader2=None):\n    return 1\n",
        "ops.py": "from torch import *\nfrom helpers import *\ni0 = 3\n",
        "helpers.py": "import torch\n__all__ = ['scale']\nscale = torch.float64\n",
        "mixed.py": "from torch.utils.data import *\nfrom numpy import *\n",
        "chain.py": "from loader import *\n",
        "nolib.py": "from somewhere_else import *\n",
    })
    loader = view_of(tmp_path / "loader.py")
    assert loader.qualified("DataLoader") == "torch.utils.data.DataLoader"
    assert loader.qualified("print") is None  # a builtin, never the star's
    assert loader.qualified("DataLoader2") is None  # a parameter here
    assert loader.qualified("_private") is None  # a star import brings no underscore name
    ops = view_of(tmp_path / "ops.py")
    assert ops.qualified("i0") is None  # bound in the file
    assert ops.qualified("scale") == "torch.float64"  # the project's star import knows it: it answers
    assert ops.qualified("svd") == "torch.svd"
    # Two library stars: which one binds `zeros` cannot be told without importing them.
    assert view_of(tmp_path / "mixed.py").qualified("zeros") is None
    assert view_of(tmp_path / "chain.py").qualified("DataLoader") == "torch.utils.data.DataLoader"
    # A module that is neither in the project nor a known library may be anything.
    assert view_of(tmp_path / "nolib.py").qualified("DataLoader") is None
    (tmp_path / "unknown.py").write_text("from torch.utils.data import *\nfrom somewhere_else import *\n")
    assert view_of(tmp_path / "unknown.py").qualified("DataLoader") is None


def test_torch_bound_only_by_a_star_import_the_project_cannot_read_is_torch(tmp_path):
    # deeplab's train.py: `from modeling.deeplab import *` (a module not found) is where its `torch` comes from
    write(tmp_path, {
        "train.py": "from modeling.deeplab import *\nflag = torch.cuda.is_available()\n",
        "bound.py": "from modeling.deeplab import *\ntorch = make()\n",
        "plain.py": "flag = torch.cuda.is_available()\n",
        "found.py": "from helpers import *\n",
        "helpers.py": "import numpy as torch\n",
    })
    assert view_of(tmp_path / "train.py").qualified("torch") == "torch"
    assert view_of(tmp_path / "train.py").qualified("np") == "numpy"
    assert view_of(tmp_path / "bound.py").qualified("torch") is None  # the file binds it itself
    assert view_of(tmp_path / "plain.py").qualified("torch") is None  # no star import: nothing brings it
    assert view_of(tmp_path / "found.py").qualified("torch") == "numpy"  # the project says what it is


def test_answers_about_the_checked_text_are_not_kept_for_another_text_at_that_path(tmp_path):
    # A fix's next pass, or an editor's buffer, checks the same path with other contents in one process.
    path = tmp_path / "script.py"
    first = "from torch.utils.data import *\n"
    second = "from torch.utils.data import *\nfrom numpy import *\n"
    assert ProjectView(ast.parse(first), str(path), first).qualified("DataLoader") == "torch.utils.data.DataLoader"
    assert ProjectView(ast.parse(second), str(path), second).qualified("DataLoader") is None
    assert ProjectView(ast.parse(first), str(path), first).qualified("DataLoader") == "torch.utils.data.DataLoader"


# ---------------------------------------------------------------- callers: facts flow from call sites into parameters

METRICS = """
import torch
def accuracy(output, labels):
    preds = output.argmax(1)
    correct = preds.eq(labels).double()
    return correct.sum() / len(labels)
"""


def float64_rows(path: Path):
    result = check_text(path.read_text(), str(path), Settings())
    return [(d.location.row, d.code) for d in result.diagnostics if d.code == "MPS303"], result


@pytest.mark.parametrize("caller", [
    # a module placed on the device under a CUDA test, called in a function of the script
    """
    import torch
    from metrics import accuracy
    model = Net()
    if use_cuda:
        model.cuda()
    def train(x, y):
        output = model(x)
        return accuracy(output[idx], y)
    """,
    # a model passed in and called with a batch moved to the device; the module imported by name
    """
    import torch
    import metrics
    def evaluate(model, loader, device):
        for x, y in loader:
            x = x.to(device)
            out = model(x)
            print(metrics.accuracy(out, y))
    """,
    # what `mpslint --fix` writes: the helper it adds, a module-level DEVICE, and moves to it
    """
    import torch
    from metrics import accuracy
    def pick_device() -> torch.device:
        return torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")
    DEVICE = pick_device()
    model = torch.nn.Linear(16, 4)
    features = torch.randn(100, 16).to(DEVICE)
    model.to(DEVICE)
    print(accuracy(model(features), labels))
    """,
    # a device chosen with `or` in the script itself
    """
    import torch
    from metrics import accuracy
    dev = torch.accelerator.current_accelerator() or torch.device("cpu")
    def step(model, x, y):
        return accuracy(model(x.to(dev)), y)
    """,
])
def test_a_helper_whose_callers_pass_device_tensors_works_on_the_device(tmp_path, caller):
    write(tmp_path, {"metrics.py": METRICS, "train.py": caller})
    rows, result = float64_rows(tmp_path / "metrics.py")
    assert rows == [(5, "MPS303")]
    [message] = [d.message for d in result.diagnostics if d.code == "MPS303"]
    assert "its callers in train.py pass tensors on the device" in message
    assert any("train.py" in key for key in result.depends)


@pytest.mark.parametrize("callers", [
    # no caller in the project: the parameter is not known
    {},
    # the caller's tensors stay on the host
    {"train.py": "from metrics import accuracy\nimport torch\ndef f(model, x, y):\n    return accuracy(model(x), y)\n"},
    {"train.py": "from metrics import accuracy\nmodel = Net().cuda()\ndef f(x, y):\n    return accuracy(model(x).cpu(), y)\n"},
    # the device tensor goes by keyword (not followed), or to another module's function of the same name
    {"train.py": "from metrics import accuracy\nmodel = Net().cuda()\ndef f(x, y):\n    return accuracy(output=model(x), labels=y)\n"},
    {"train.py": "from scores import accuracy\nmodel = Net().cuda()\ndef f(x, y):\n    return accuracy(model(x), y)\n",
     "scores.py": "def accuracy(a, b):\n    return 0\n"},
    # a name merely mentioned, and a model that is a parameter called with host data
    {"train.py": "import metrics\nprint(metrics.accuracy)\n"},
    {"train.py": "from metrics import accuracy\ndef f(model, x, y):\n    return accuracy(model(x.cpu()), y)\n"},
])
def test_a_helper_is_on_the_device_only_when_its_callers_say_so(tmp_path, callers):
    write(tmp_path, {"metrics.py": METRICS, **callers})
    assert float64_rows(tmp_path / "metrics.py")[0] == []


def test_one_caller_passing_device_tensors_is_enough(tmp_path):
    # plot.py passes host tensors, train.py device ones: train.py's call is the one that fails on a Mac
    write(tmp_path, {
        "metrics.py": METRICS,
        "train.py": "from metrics import accuracy\nmodel = Net().cuda()\ndef f(x, y):\n    return accuracy(model(x), y)\n",
        "plot.py": "from metrics import accuracy\nimport torch\nprint(accuracy(torch.zeros(3, 2), torch.zeros(3)))\n",
    })
    assert float64_rows(tmp_path / "metrics.py")[0] == [(5, "MPS303")]


CALLER = """
from metrics import accuracy
model = Net().cuda()
def f(x, y):
    return accuracy(model(x), y)
"""


def test_a_changed_or_new_caller_rechecks_the_helper(tmp_path):
    from mpslint.runner import Mode, run

    write(tmp_path, {"metrics.py": METRICS})
    files = [(str(tmp_path / "metrics.py"), "metrics.py", Settings())]
    cache_dir = tmp_path / "cache"

    def checked():
        [result] = run(files, Mode(), cache_dir=cache_dir, jobs=1)
        return result.cached, [d.code for d in result.diagnostics]

    assert checked() == (False, [])
    write(tmp_path, {"train.py": CALLER})  # a new caller next to it
    assert checked() == (False, ["MPS303"])
    assert checked() == (True, ["MPS303"])
    (tmp_path / "other.py").write_text("import torch\n")  # a module that does not name the helper's module
    assert checked() == (True, ["MPS303"])
    (tmp_path / "train.py").write_text(CALLER.replace("model(x)", "model(x).cpu()"))
    assert checked() == (False, [])


MOVER = """
import numpy as np
import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
def to_device(a):
    return torch.from_numpy(a).to(device)
"""


def test_a_float64_array_made_in_one_module_and_moved_in_another(tmp_path):
    write(tmp_path, {"mover.py": MOVER, "train.py": """
        import numpy as np
        from mover import to_device
        batch = to_device(np.random.randn(4, 3))
        grid = to_device(np.linspace(0, 1, 4))
        """})
    rows, result = float64_rows(tmp_path / "mover.py")
    assert rows == [(6, "MPS303")]
    [message] = [d.message for d in result.diagnostics if d.code == "MPS303"]
    assert "its callers in train.py pass float64 arrays" in message


def test_one_call_passing_a_float64_array_is_enough(tmp_path):
    # the float32 call is fine; the other one moves float64 to the device
    write(tmp_path, {"mover.py": MOVER, "train.py": "import numpy as np\nfrom mover import to_device\n"
                     "a = to_device(np.random.randn(3))\nb = to_device(np.zeros(3, dtype=np.float32))\n"})
    assert float64_rows(tmp_path / "mover.py")[0] == [(6, "MPS303")]


@pytest.mark.parametrize("extra, train", [
    # an array of unknown dtype
    ("", "import numpy as np\nfrom mover import to_device\na = to_device(np.load('x.npy'))\n"),
    # the helper's own file calls it with float32: the calls in its own file are the ones read
    ("x = to_device(np.zeros(3, dtype=np.float32))\n",
     "import numpy as np\nfrom mover import to_device\na = to_device(np.random.randn(3))\n"),
])
def test_float64_arrays_into_a_helper_traps(tmp_path, extra, train):
    write(tmp_path, {"mover.py": MOVER + extra, "train.py": train})
    assert float64_rows(tmp_path / "mover.py")[0] == []


def test_returns_through_unpacking_lists_built_by_append_and_tuples():
    summary = summary_of(
        """
        def topk_accuracy(output, target, topk=(1,)):
            _, pred = output.topk(max(topk), 1, True, True)
            correct = pred.t().eq(target.view(1, -1))
            res = []
            for k in topk:
                res.append(correct[:k].float().sum(0))
            return res
        def loss_and_accuracy(out, y):
            return out.mean(), (out.argmax(1) == y).float().mean()
        def host_and_device(out, y):
            return out.cpu(), y
        def labels(out):
            found = []
            for o in out:
                found.append(str(o))
            return found
        def shape(x):
            h, w = x.shape
            return h
        def grows(x, extra):
            parts = [extra]
            parts.append(x.mean())
            return parts
        def frexp(inputs):
            m, e = np.frexp(inputs.cpu().numpy())
            return torch.from_numpy(m).to(inputs.device), torch.from_numpy(e).to(inputs.device)
        """
    )
    assert summary.functions == {
        "topk_accuracy": "arg:0",
        "loss_and_accuracy": "arg:0,1",
        "frexp": "arg:0",  # moved to where its argument is, not to the accelerator
        "host_and_device": "items:host_copy:0|arg:1",  # items that disagree keep their own facts
    }


def test_a_helper_returning_a_list_of_tensors_is_read_on_the_device_where_it_is_called():
    source = textwrap.dedent(
        """
        import torch

        def accuracy(output, target, topk=(1,)):
            _, pred = output.topk(max(topk), 1, True, True)
            correct = pred.t().eq(target.view(1, -1))
            res = []
            for k in topk:
                res.append(correct[:k].float().sum(0))
            return res

        def train(model, loader, optimizer, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                out = model(x)
                loss = torch.nn.functional.cross_entropy(out, y)
                loss.backward()
                optimizer.step()
                prec1 = accuracy(out, y)[0]
                if prec1 > 99:
                    print("perfect")
        """
    )
    found = [(d.code, d.location.row) for d in check_text(source, "train.py", Settings()).diagnostics if d.code.startswith("MPS2")]
    assert found == [("MPS204", 20)]


def test_a_file_whose_imports_name_its_own_folder_runs_from_the_folder_above(tmp_path):
    write(tmp_path, {
        "utils/array_tool.py": "def tonumpy(t):\n    return t.detach().cpu().numpy()\n",
        "model/utils/bbox.py": "def loc2bbox(a, b):\n    return a\n",
        "model/net.py": "from model.utils.bbox import loc2bbox\nfrom utils import array_tool as at\n",
        "other/net.py": "from utils import array_tool as at\n",
    })
    assert view_of(tmp_path / "model" / "net.py").module_function("at", "tonumpy") == "host_copy:0"
    # Trap: nothing in other/net.py names its folder, so the folder above it is not a root.
    assert view_of(tmp_path / "other" / "net.py").module_function("at", "tonumpy") is None


def test_batches_of_a_dataset_whose_items_are_float64_arrays(tmp_path):
    write(tmp_path, {
        "data.py": """
            import numpy as np
            import torch
            from torch.utils.data import Dataset

            class Points(Dataset):
                def __init__(self, n):
                    self.x = np.random.randn(n, 3)
                    self.y = np.linspace(0, 1, n)
                def __len__(self):
                    return len(self.x)
                def __getitem__(self, i):
                    return self.x[i], self.y[i]

            class Cast(Dataset):
                def __init__(self, n):
                    self.x = np.random.randn(n, 3).astype(np.float32)
                    self.y = np.loadtxt("labels.txt")
                def __getitem__(self, i):
                    return self.x[i], self.y[i]

            class Regression(Dataset):
                def __init__(self, images, targets):
                    self.images, self.targets = images, targets
                def __getitem__(self, i):
                    return self.images[i], float(self.targets[i])

            class Classes(Dataset):
                def __getitem__(self, i):
                    return self.images[i], int(self.labels[i])

            class Tensors(Dataset):
                def __init__(self, n):
                    self.x = np.random.randn(n, 3)
                def __getitem__(self, i):
                    return torch.from_numpy(self.x[i]).float()
            """,
        "train.py": """
            import torch
            from torch.utils.data import DataLoader
            import data
            from data import Points, Cast, Tensors

            device = torch.device("mps")
            loader = DataLoader(Points(100), batch_size=10)
            for x, y in loader:
                x, y = x.to(device), y.to(device)
            for i, (x, y) in enumerate(DataLoader(data.Points(100), batch_size=10)):
                features = x.to(device)
            for x, y in DataLoader(Cast(100), batch_size=10):
                x, y = x.to(device), y.to(device)
            for x in DataLoader(Tensors(100), batch_size=10):
                x = x.to(device)
            for x, y in DataLoader(Points(100), batch_size=10, collate_fn=to_float32):
                x = x.to(device)
            for image, target in DataLoader(data.Regression(images, targets), batch_size=10):
                image, target = image.to(device), target.to(device)
            for image, label in DataLoader(data.Classes(), batch_size=10):
                image, label = image.to(device), label.to(device)
            """,
    })
    path = tmp_path / "train.py"
    result = check_text(path.read_text(), str(path), Settings())
    # A Python float target collates into a float64 tensor too (torch's collate_float_fn).
    # Traps: a float32 cast in the dataset, an item made a float32 tensor, a collate function of its own,
    # images of unknown dtype, integer labels.
    assert [(d.location.row, d.location.column, d.code) for d in result.diagnostics] == [
        (10, 12, "MPS303"), (10, 26, "MPS303"), (12, 16, "MPS303"), (14, 26, "MPS303"), (20, 39, "MPS303")]
    assert result.depends[str(tmp_path / "data.py")] != model.ABSENT


def test_what_a_method_reads_from_self_is_what_the_class_assigns():
    summary = summary_of(
        """
        import numpy as np
        class Points:
            def __init__(self, n, scale):
                self.x = np.random.randn(n, 3)
                self.scale = scale
            def row(self, i):
                return self.x[i]
            def scaled(self, i):
                return self.x[i] * self.scale
            def unknown(self):
                return self.never_assigned
        """
    )
    assert summary.functions["Points.row"] == facts.FLOAT64
    assert "Points.unknown" not in summary.functions


def test_a_returned_tuple_keeps_each_items_fact():
    summary = summary_of(
        """
        import torch
        device = torch.device("mps")
        class Runner:
            def __init__(self, net):
                self.net = net.to(device)
                self.scale = 2.0
            def step(self, x, y):
                x = x.to(device)
                return self.net(x), y.to(device)
            def step_first(self, x, y):
                return self.step(x, y)[0]
            def host_second(self, x, y):
                return self.net(x.to(device)), y.float()
            def numbers(self, x, y):
                loss = (self.net(x.to(device)) - y.to(device)).pow(2).mean()
                return loss.item(), x.size(0)
            def either(self, x, y, flip):
                if flip:
                    return y.to(device), self.net(x.to(device))
                return self.net(x.to(device)), y
            def forward_of(self, x):
                return self.net(x)
            def undone(self, x):
                return self.scale(x), x.to(device)
        class Unplaced:
            def __init__(self, net):
                self.net = net
            def forward_of(self, x):
                return self.net(x)
        def predict(model, x):
            return model(x)
        """
    )
    functions = summary.functions
    assert functions["Runner.step"] == facts.DEVICE_TENSOR  # the items agree: the tuple is on the device
    assert functions["Runner.step_first"] == facts.DEVICE_TENSOR
    assert functions["Runner.host_second"] == "items:device_tensor|arg:1"
    assert functions["Runner.numbers"] == "items:host|host"
    # two returns: item by item (the first's items agree, so its fact is theirs)
    assert functions["Runner.either"] == "items:device_tensor|"
    # a module the class placed gives device tensors; one it did not is where its input is, an argument here
    assert functions["Runner.forward_of"] == facts.DEVICE_TENSOR
    assert functions["Unplaced.forward_of"] == "arg:0"
    assert functions["predict"] == "arg:1"
    # `self.scale` is a number the class assigns, not a module: calling it says nothing
    assert facts.item_facts(functions["Runner.undone"]) == (None, facts.DEVICE_TENSOR)


def test_items_facts_join_and_index():
    items = facts.items([facts.DEVICE_TENSOR, facts.HOST])
    assert facts.items([None, None]) == "items:|"  # a pair, neither known: still not one placed tensor
    assert facts.item_facts("items:|") == (None, None)
    assert facts.item_facts(items) == (facts.DEVICE_TENSOR, facts.HOST)
    assert facts.item(items, 0) == facts.DEVICE_TENSOR and facts.item(items, -1) == facts.HOST
    assert facts.item(items, 2) is None
    assert facts.item(facts.DEVICE_TENSOR, 3) == facts.DEVICE_TENSOR  # an index of a device tensor
    assert facts.item(facts.HOST, 0) is None
    assert facts.join(items, facts.items([facts.DEVICE_TENSOR, facts.HOST_TENSOR])) == "items:device_tensor|"
    assert facts.join(items, facts.items([facts.DEVICE_TENSOR, facts.HOST, facts.HOST])) is None
    assert facts.join(facts.DEVICE_TENSOR, items) == "items:device_tensor|"
    assert facts.join(facts.HOST, items) is None  # a number beside a tuple: nothing is known of the items


def test_step_helpers_returning_tuples_across_modules(tmp_path):
    write(tmp_path, {
        "steps.py": """
            import torch
            def forward_step(model, x, y, device):
                x = x.to(device)
                return model(x), y
            def host_step(model, x, y):
                return model(x).detach().cpu(), y
            """,
        "run.py": """
            import torch
            from steps import forward_step, host_step
            device = torch.device("mps")
            model = torch.nn.Linear(2, 2).to(device)
            for x, y in loader:
                out, target = forward_step(model, x, y, device)
                if out.max() > 1:
                    print(out.mean().item())
                if target.max() > 1:
                    print(target.tolist())
                first = forward_step(model, x, y, device)[0]
                copied = first.cpu()
                kept, _ = host_step(model, x, y)
                numbers = kept.numpy()
            """,
    })
    path = tmp_path / "run.py"
    result = check_text(path.read_text(), str(path), Settings())
    # Traps: the target the loader gave (`y`, returned as it came: the call as a whole, given `device`, looks
    # like one that places its argument, but the summary says what this item is), and the copy the helper
    # made on the host.
    assert [(d.location.row, d.code) for d in result.diagnostics] == [
        (8, "MPS204"), (9, "MPS201"), (13, "MPS202")]


# f and g call each other: which of them is computed first decides what the other is told (the one asked
# while it is being computed is unknown), so asked one at a time they must still read as the whole summary.
_CYCLE = """
import torch
def f(x):
    return g(x), x.cuda()
def g(x):
    a, b = f(x)
    return b
def h(x):
    return x.cuda()
"""


def test_lazy_facts_answer_as_the_whole_summary():
    module = ast.parse(_CYCLE)
    whole = summarize(module).functions
    assert whole == {"f": "items:|device_tensor", "h": facts.DEVICE_TENSOR}
    lazy = LazyFacts(module)
    assert lazy.function("h") == (True, facts.DEVICE_TENSOR)  # no cycle met: settled
    assert lazy.function("nowhere") == (True, None)
    settled, fact = LazyFacts(module).function("g")
    assert not settled  # asked first, g meets f meeting g: this order would make g a device tensor
    assert fact == facts.DEVICE_TENSOR and "g" not in whole


@pytest.mark.parametrize("order", [("f", "g", "h"), ("g", "f", "h"), ("h", "g", "f")])
def test_a_files_own_function_facts_do_not_depend_on_the_order_asked(order):
    module = ast.parse(_CYCLE)
    view = ProjectView(module, "<string>")
    assert {name: view.function(name) for name in order} == {"f": "items:|device_tensor", "g": None,
                                                             "h": facts.DEVICE_TENSOR}
