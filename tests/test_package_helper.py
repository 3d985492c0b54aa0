"""One device helper per package (issue 25 item 3): a file that imports a module of its package whose source
defines a device helper imports that helper instead of getting its own copy; traps keep the inline helper."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpslint.config import Settings
from mpslint.fixer import fix_text

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
    assert "from helpers import get_device" in out and "DEVICE = get_device()" in out and "def pick_device" not in out


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


def test_a_module_the_file_does_not_import_is_not_used(package):
    path = package / "proj" / "train.py"
    path.write_text("import torch\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    assert "def pick_device" in _fix(path)


def test_the_device_helper_setting_wins(package):
    path = package / "proj" / "train.py"
    path.write_text("import torch\nfrom .utils import load\n\nx = torch.ones(1).cuda()\n", encoding="utf-8")
    out = _fix(path, Settings(device_helper="proj.devices:best"))
    assert "from proj.devices import best" in out and "pick_device" not in out
