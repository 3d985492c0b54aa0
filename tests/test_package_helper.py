"""One device helper per package (issue 25 item 3): a file that imports a module of its package whose source
defines a device helper imports that helper instead of getting its own copy; traps keep the inline helper."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from mpslint.config import Settings
from mpslint.fixer import fix_text
from mpslint.results import Mode
from mpslint.runner import run

HELPER = '''\
import torch


def pick_device() -> torch.device:
    """CUDA if available, then Apple's MPS, then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def load(path):
    return path
'''


def _fix(path: Path, settings: Settings = Settings()) -> str:
    outcome = fix_text(path.read_text(encoding="utf-8"), str(path), settings)
    assert outcome.error is None and outcome.diagnostics == []
    return outcome.text


@pytest.fixture
def package(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "proj" / "utils.py").write_text(HELPER, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("imports,expected", [
    ("from .utils import load", "from .utils import load, pick_device"),
    ("from proj.utils import load", "from proj.utils import load, pick_device"),
    ("from proj.utils import load  # data", "from proj.utils import load, pick_device  # data"),
    ("from proj.utils import (\n    load,\n)", "from proj.utils import (\n    load,\n)\nfrom proj.utils import pick_device"),
])
def test_a_helper_of_an_imported_module_is_imported(package, imports, expected):
    path = package / "proj" / "train.py"
    path.write_text(f"import torch\n{imports}\n\n\ndef run():\n    return torch.ones(1).cuda()\n", encoding="utf-8")
    out = _fix(path)
    assert "def pick_device" not in out and expected in out
    assert out.endswith("    device = pick_device()\n    return torch.ones(1).to(device)\n")


def test_a_script_next_to_a_module_with_a_helper_of_its_own_name(tmp_path):
    (tmp_path / "helpers.py").write_text(
        "import torch\n\n\ndef get_device(prefer_gpu=True):\n    if torch.cuda.is_available():\n"
        "        return torch.device('cuda')\n    if torch.backends.mps.is_available():\n"
        "        return torch.device('mps')\n    return torch.device('cpu')\n", encoding="utf-8")
    path = tmp_path / "train.py"
    path.write_text("import torch\nimport helpers\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    out = _fix(path)
    # called through the module the file already imports: no second import of it
    assert out == "import torch\nimport helpers\n\nDEVICE = helpers.get_device()\n\nx = torch.ones(1).to(DEVICE)\n"


def test_a_module_imported_under_another_name_is_called_by_that_name(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPER, encoding="utf-8")
    path = tmp_path / "train.py"
    path.write_text("import torch\nimport helpers as h\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    out = _fix(path)
    assert "DEVICE = h.pick_device()" in out and "def pick_device" not in out and "from helpers" not in out


def test_a_module_imported_after_the_code_is_imported_from_where_the_helper_goes(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPER, encoding="utf-8")
    path = tmp_path / "train.py"
    path.write_text("import torch\n\nx = torch.ones(1).cuda()\nimport helpers\n", encoding="utf-8")
    out = _fix(path)
    assert "from helpers import pick_device\n" in out and "helpers.pick_device" not in out


@pytest.mark.parametrize("module", [
    # a helper returning a string, or needing arguments, or never MPS: not one the fix can call as pick_device()
    "import torch\n\n\ndef get_device():\n    return 'cuda' if torch.cuda.is_available() else 'mps'\n",
    "import torch\n\n\ndef get_device(rank):\n    return torch.device('mps' if torch.backends.mps.is_available() else f'cuda:{rank}')\n",
    "import torch\n\n\ndef get_device():\n    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
    "def (:\n",  # unparsable: ignored
])
def test_modules_without_a_usable_helper_leave_the_inline_one(tmp_path, module):
    (tmp_path / "helpers.py").write_text(module, encoding="utf-8")
    path = tmp_path / "train.py"
    path.write_text("import torch\nimport helpers\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    assert "def pick_device" in _fix(path)


@pytest.mark.parametrize("body", [
    "def run(pick_device):\n    return torch.ones(1).cuda(), pick_device\n",
    "def run():\n    pick_device = 3\n    return torch.ones(1).cuda(), pick_device\n",
])
def test_a_file_that_uses_the_helpers_name_for_something_else_keeps_its_own(package, body):
    """Importing ``pick_device`` would make ``pick_device()`` call the file's own name (a parameter, a local)."""
    path = package / "proj" / "train.py"
    path.write_text(f"import torch\nfrom .utils import load\n\n\n{body}", encoding="utf-8")
    out = _fix(path)
    assert "from .utils import load\n" in out and "def pick_torch_device" in out
    assert "device = pick_torch_device()" in out


def test_a_module_the_file_does_not_import_is_not_used(package):
    path = package / "proj" / "train.py"
    path.write_text("import torch\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    assert "def pick_device" in _fix(path)


def test_the_device_helper_setting_wins(package):
    path = package / "proj" / "train.py"
    path.write_text("import torch\nfrom .utils import load\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    out = _fix(path, Settings(device_helper="proj.devices:best"))
    assert "from proj.devices import best" in out and "pick_device" not in out


# --- one `--fix` run over a package (fixtures/one_helper) ------------------------------------------------------

PROJECT = Path(__file__).resolve().parent.parent / "fixtures" / "one_helper"


def _copy_project(into: Path) -> List[Path]:
    """The fixture package as published (no goldens), under ``into``; its files in a run's order (sorted)."""
    package = into / "one_helper"
    package.mkdir()
    for source in PROJECT.glob("*.py"):
        if not source.name.endswith(".fixed.py"):
            (package / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    return sorted(package.glob("*.py"))


def _run(files: List[Path], mode: Mode):
    from mpslint.config.torch_version import newest_known_torch

    settings = Settings(torch_version=newest_known_torch())  # as tests/test_fixtures.py fixes each file alone
    return run([(str(p), str(p), settings) for p in files], mode, jobs=1)


def _expected(name: str) -> str:
    """Fixed in one run with its package (``name.together``), else as when fixed alone (``name.fixed.py``)."""
    for golden in (PROJECT / f"{name}.together", PROJECT / f"{name[:-3]}.fixed.py", PROJECT / name):
        if golden.exists():
            return golden.read_text(encoding="utf-8")
    raise AssertionError(name)


def test_one_run_fixes_the_helper_home_first_and_its_importers_reuse_it(tmp_path):
    files = _copy_project(tmp_path)
    # the importers first on the command line: the run, not the order given, puts model.py before them
    files.sort(key=lambda p: p.name != "train.py")
    results = _run(files, Mode(fix=True))
    assert all(r.error is None and r.warning is None for r in results)
    for path in files:
        assert path.read_text(encoding="utf-8") == _expected(path.name), path.name
    texts = {p.name: p.read_text(encoding="utf-8") for p in files}
    # one definition for model.py and the two files importing it; the TYPE_CHECKING-only importer and the two
    # modules of an import cycle keep their own (a helper imported across a cycle may not exist yet)
    assert sorted(n for n, t in texts.items() if "def pick_device" in t) == [
        "cycle_a.py", "cycle_b.py", "model.py", "typed.py"]
    assert "from .model import build, pick_device" in texts["train.py"]
    assert "model.pick_device()" in texts["evaluate.py"] and "import pick_device" not in texts["evaluate.py"]
    again = _run(files, Mode(fix=True))
    assert not any(sum(r.fixed.values()) for r in again)
    assert [p.read_text(encoding="utf-8") for p in files] == list(texts.values())
    for path in files:
        compile(texts[path.name], str(path), "exec")
    # the package imports (each module first: a cycle must not fail whichever side Python meets first); the
    # modules import torch, which a lint-only environment need not have
    if importlib.util.find_spec("torch") is None:
        return
    for module in ("train", "evaluate", "typed", "cycle_a", "cycle_b"):
        code = f"import one_helper.{module}"
        done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, (module, done.stderr[-2000:])


def test_diff_shows_exactly_what_fix_writes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fixed = _copy_project(tmp_path / "a")
    _run(fixed, Mode(fix=True))
    shown = _copy_project(tmp_path / "b")
    before = {p.name: p.read_text(encoding="utf-8") for p in shown}
    results = _run(shown, Mode(diff=True))
    assert {p.name: p.read_text(encoding="utf-8") for p in shown} == before  # --diff writes nothing
    for path, result in zip(shown, results):
        want = (tmp_path / "a" / "one_helper" / path.name).read_text(encoding="utf-8")
        assert (result.text if result.diff else before[path.name]) == want, path.name


def test_a_file_fixed_alone_imports_no_helper_its_module_does_not_have_yet(tmp_path):
    files = {p.name: p for p in _copy_project(tmp_path)}
    _run([files["train.py"]], Mode(fix=True))  # pre-commit with train.py staged, model.py unchanged on disk
    assert files["train.py"].read_text(encoding="utf-8") == (PROJECT / "train.fixed.py").read_text(encoding="utf-8")
    # once model.py has its helper on disk, a file fixed alone reuses it
    _run([files["model.py"]], Mode(fix=True))
    _run([files["evaluate.py"]], Mode(fix=True))
    assert files["evaluate.py"].read_text(encoding="utf-8") == _expected("evaluate.py")


def test_a_notebook_in_the_run_keeps_its_picker_after_its_first_torch_import(tmp_path):
    import json

    files = {p.name: p for p in _copy_project(tmp_path)}
    cells = ["import numpy as np", "import torch\nfrom one_helper.model import build", "x = torch.zeros(1).cuda()"]
    notebook = tmp_path / "explore.ipynb"
    notebook.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c}
                  for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    results = _run([notebook, files["model.py"]], Mode(fix=True))
    assert all(r.error is None for r in results)
    sources = ["".join(c["source"]) for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]]
    assert sources[0] == cells[0]
    assert sources[1].startswith(cells[1] + "\n\n\ndef pick_device()"), sources[1]
    assert "def pick_device" in files["model.py"].read_text(encoding="utf-8")
