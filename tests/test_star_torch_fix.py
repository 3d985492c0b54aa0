"""MPS103's fix where ``torch`` comes only from a star import of a project module (issue 24, star imports).

The analysis sees ``torch`` through ``from utils import *``; the fix writes a device picker that uses the
same name, so it is offered only where that star import is a plain top-level statement before the picker
and resolves to a project module that binds ``torch`` itself. The fixed script must import and run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import fresh_project, write_tree  # noqa: F401 (a fixture)
from mpslint.config import Settings
from mpslint.engine import check_text
from mpslint.fixer import fix_text

CHOICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
USE = "x = torch.zeros(2).to(device)\nprint(x.device.type)\n"


@pytest.fixture(autouse=True)
def _fresh(fresh_project):
    yield


def _findings(path: Path):
    return check_text(path.read_text(encoding="utf-8"), str(path), Settings()).diagnostics


def _fixed(path: Path) -> str:
    outcome = fix_text(path.read_text(encoding="utf-8"), str(path), Settings())
    assert outcome.error is None
    return outcome.text


def test_a_star_imported_torch_gets_the_device_picker_and_the_script_still_runs(tmp_path):
    pytest.importorskip("torch")  # the fixed script runs
    write_tree(tmp_path, {
        "utils.py": "import os\nimport torch\n\n\ndef helper():\n    return os.sep\n",
        "train.py": "from utils import *\n\n" + CHOICE + USE,
    })
    script = tmp_path / "train.py"
    [finding] = [d for d in _findings(script) if d.code == "MPS103"]
    assert finding.fix is not None
    fixed = _fixed(script)
    assert "def pick_device() -> torch.device:" in fixed and "device = pick_device()" in fixed
    assert fixed.index("from utils import *") < fixed.index("def pick_device")
    script.write_text(fixed, encoding="utf-8")
    assert [d.code for d in _findings(script) if d.code == "MPS103"] == []
    run = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() in ("cpu", "cuda", "mps")


def test_a_star_import_through_a_package_star_chain_counts(tmp_path):
    # `from common import *` where common re-exports utils' names with its own star import
    write_tree(tmp_path, {
        "utils.py": "import torch\n",
        "common.py": "from utils import *\n",
        "train.py": "from common import *\n\n" + CHOICE + USE,
    })
    assert "device = pick_device()" in _fixed(tmp_path / "train.py")


@pytest.mark.parametrize("files", [
    # the star import may not run: it sits under `try`
    {"utils.py": "import torch\n",
     "train.py": "try:\n    from utils import *\nexcept ImportError:\n    pass\n\n" + CHOICE + USE},
    # torch is bound only after a definition: the picker would go above the star import
    {"utils.py": "import torch\n",
     "train.py": "def helper():\n    return 1\n\n\nfrom utils import *\n" + CHOICE + USE},
    # code other than imports before the star import: code a fix writes `torch` into may run before it binds torch
    {"utils.py": "import torch\n",
     "train.py": "import os\nos.environ.setdefault('X', '1')\nfrom utils import *\n" + CHOICE + USE},
])
def test_no_fix_where_the_star_import_may_not_bind_torch_before_the_picker(tmp_path, files):
    write_tree(tmp_path, files)
    script = tmp_path / "train.py"
    found = [d for d in _findings(script) if d.code == "MPS103"]
    assert found and all(d.fix is None for d in found)
    assert _fixed(script) == textwrap.dedent(files["train.py"])


@pytest.mark.parametrize("files", [
    # the module's `__all__` leaves torch out: the star import does not bind it
    {"utils.py": "import torch\n__all__ = ['helper']\n\n\ndef helper():\n    return 1\n",
     "train.py": "from utils import *\n\n" + CHOICE + USE},
    # a module that does not bind torch at all
    {"utils.py": "import numpy\n",
     "train.py": "from utils import *\n\n" + CHOICE + USE},
    # a module outside the project: what it binds is not known
    {"train.py": "from some_installed_library import *\n\n" + CHOICE + USE},
])
def test_no_fix_where_no_project_module_binds_torch(tmp_path, files):
    write_tree(tmp_path, files)
    script = tmp_path / "train.py"
    assert all(d.fix is None for d in _findings(script) if d.code == "MPS103")
    assert _fixed(script) == textwrap.dedent(files["train.py"])
