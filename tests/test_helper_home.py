"""One helper per fix run where no module has one (issue 25 item 3): two files that would each get pick_device()
and import one module of the run get it from there; traps keep one copy each."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from mpslint.config import Settings
from mpslint.results import Mode
from mpslint.runner import run

UTIL = "import numpy as np\n\n\ndef accuracy(out, target):\n    return (out == target).mean()\n"
LOOPS = "import torch\n\nfrom .util import accuracy\n\n\ndef train(x):\n    return accuracy(x.cuda(), 1)\n"
PRETRAIN = "import torch\n\nfrom . import util\n\n\ndef init(model):\n    return util.accuracy(model.cuda(), 1)\n"


def _write(root: Path, files: Dict[str, str]) -> Dict[str, Path]:
    (root / "helper").mkdir()
    paths = {}
    for name, text in {"__init__.py": "", **files}.items():
        path = root / "helper" / name
        path.write_text(text, encoding="utf-8")
        paths[name] = path
    return paths


def _run(paths, mode=Mode(fix=True)):
    files = sorted(str(p) for p in paths)
    return run([(p, p, Settings()) for p in files], mode, jobs=1)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_two_importers_get_the_helper_from_the_module_they_share(tmp_path):
    paths = _write(tmp_path, {"util.py": UTIL, "loops.py": LOOPS, "pretrain.py": PRETRAIN})
    results = _run(paths.values())
    assert all(r.error is None and r.warning is None for r in results)
    util = _text(paths["util.py"])
    # `import torch` added for the helper's annotation, the helper after the leading imports
    assert util.startswith("import numpy as np\nimport torch\n\n\ndef pick_device() -> torch.device:\n")
    assert util.endswith("\n\n\ndef accuracy(out, target):\n    return (out == target).mean()\n")
    # each in the style of its import of the module
    assert "from .util import accuracy, pick_device\n" in _text(paths["loops.py"])
    assert "device = util.pick_device()" in _text(paths["pretrain.py"])
    assert [n for n, p in paths.items() if "def pick_device" in _text(p)] == ["util.py"]
    again = _run(paths.values())
    assert not any(r.diff or sum(r.fixed.values()) for r in again)
    for path in paths.values():
        compile(_text(path), str(path), "exec")


def test_diff_shows_what_fix_writes(tmp_path):
    (tmp_path / "a").mkdir()
    fixed = _write(tmp_path / "a", {"util.py": UTIL, "loops.py": LOOPS, "pretrain.py": PRETRAIN})
    _run(fixed.values())
    (tmp_path / "b").mkdir()
    shown = _write(tmp_path / "b", {"util.py": UTIL, "loops.py": LOOPS, "pretrain.py": PRETRAIN})
    results = _run(shown.values(), Mode(diff=True))
    assert _text(shown["util.py"]) == UTIL  # --diff writes nothing
    by_name = {Path(r.display).name: r for r in results}
    for name, path in fixed.items():
        result = by_name[name]
        assert (result.text if result.diff else _text(shown[name])) == _text(path), name


@pytest.mark.parametrize("files", [
    # the module imports one of them back: a cycle
    {"util.py": UTIL + "from . import loops\n", "loops.py": LOOPS, "pretrain.py": PRETRAIN},
    # one of the two imports it only under TYPE_CHECKING (or in a try): not where Python surely has it
    {"util.py": UTIL, "loops.py": LOOPS,
     "pretrain.py": "import torch\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import util\n\n\n"
                    "def init(model):\n    return model.cuda()\n"},
    {"util.py": UTIL, "loops.py": LOOPS,
     "pretrain.py": "import torch\ntry:\n    from . import util\nexcept ImportError:\n    util = None\n\n\n"
                    "def init(model):\n    return model.cuda()\n"},
    # they import different modules
    {"util.py": UTIL, "meters.py": UTIL, "loops.py": LOOPS,
     "pretrain.py": PRETRAIN.replace("import util", "import meters").replace("util.", "meters.")},
    # the module already uses the name
    {"util.py": UTIL + "\n\ndef run(pick_device):\n    return pick_device\n", "loops.py": LOOPS, "pretrain.py": PRETRAIN},
    # only one of them needs a helper (the other's fix needs no device)
    {"util.py": UTIL, "loops.py": LOOPS,
     "pretrain.py": "import torch\n\nfrom . import util\n\n\ndef init():\n    return torch.cuda.is_available()\n"},
])
def test_no_shared_home_leaves_one_copy_each(tmp_path, files):
    paths = _write(tmp_path, files)
    before = {n: _text(p) for n, p in paths.items()}
    results = _run(paths.values())
    assert all(r.error is None for r in results)
    assert _text(paths["util.py"]) == before["util.py"]
    assert "pick_device" not in _text(paths["util.py"]).replace(before["util.py"], "")


def test_a_notebook_is_no_home(tmp_path):
    import json

    nb = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                     "source": "import torch\nx = 1"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    paths = _write(tmp_path, {"loops.py": LOOPS.replace(".util", ".nb"), "pretrain.py": PRETRAIN.replace(
        "import util", "import nb").replace("util.", "nb.")})
    (tmp_path / "helper" / "nb.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    _run([*paths.values(), tmp_path / "helper" / "nb.ipynb"])
    assert "def pick_device" in _text(paths["loops.py"]) and "def pick_device" in _text(paths["pretrain.py"])


def test_a_module_outside_the_run_is_not_written(tmp_path):
    paths = _write(tmp_path, {"util.py": UTIL, "loops.py": LOOPS, "pretrain.py": PRETRAIN})
    _run([paths["loops.py"], paths["pretrain.py"]])  # pre-commit with the two staged
    assert _text(paths["util.py"]) == UTIL
    assert "def pick_device" in _text(paths["loops.py"]) and "def pick_device" in _text(paths["pretrain.py"])


def test_a_script_importing_an_importer_reuses_what_it_imported(tmp_path):
    """RepDistiller's driver imports ``helper.loops``, which now imports ``pick_device`` from ``helper.util``."""
    paths = _write(tmp_path, {"util.py": UTIL, "loops.py": LOOPS, "pretrain.py": PRETRAIN})
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom helper.loops import train\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    _run([*paths.values(), script])
    assert "from helper.loops import train, pick_device\n" in _text(script) and "def pick_device" not in _text(script)


def test_the_rules_asked_whether_a_file_gets_a_helper_are_all_that_insert_one():
    """HELPER_CODES gives the same answer as every rule, on every fixture."""
    from mpslint.helper_home import _inserts_helper

    root = Path(__file__).resolve().parent.parent / "fixtures"
    settings = Settings()
    inserting = 0
    for path in sorted(root.rglob("*.py")):
        if path.name.endswith(".fixed.py"):
            continue
        full = _inserts_helper(str(path), settings, select=settings.select)
        assert _inserts_helper(str(path), settings) == full, path
        inserting += full
    assert inserting > 10


def test_the_fixture_package_fixed_in_one_run(tmp_path):
    """fixtures/shared_home: the goldens of one run (``X.py.together``); each file alone gets ``X.fixed.py``."""
    import importlib.util
    import subprocess
    import sys

    from mpslint.config.torch_version import newest_known_torch

    project = Path(__file__).resolve().parent.parent / "fixtures" / "shared_home"
    package = tmp_path / "shared_home"
    package.mkdir()
    for source in project.glob("*.py"):
        if not source.name.endswith(".fixed.py"):
            (package / source.name).write_text(_text(source), encoding="utf-8")
    files = sorted(str(p) for p in package.glob("*.py"))
    settings = Settings(torch_version=newest_known_torch())
    results = run([(p, p, settings) for p in files], Mode(fix=True), jobs=1)
    assert all(r.error is None and r.warning is None for r in results)
    for path in package.glob("*.py"):
        golden = project / (path.name + ".together")
        assert _text(path) == _text(golden if golden.exists() else project / path.name), path.name
    assert not any(sum(r.fixed.values()) for r in run([(p, p, settings) for p in files], Mode(fix=True), jobs=1))
    if importlib.util.find_spec("torch") is None:
        return
    code = "import shared_home.loops as l, shared_home.pretrain as p; l.train(); p.init()"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
