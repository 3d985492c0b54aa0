"""A helper's parameter is on the device when the callers in other modules pass device tensors
(``mpslint/analysis/project/callers.py``): tkipf/pygcn's and Diego999/pyGAT's ``accuracy`` in utils.py,
whose ``.double()`` was the next failure after ``--fix`` in the migration benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpslint.analysis.project import layout, model
from mpslint.config import Settings
from mpslint.engine import check_text
from mpslint.fixer import fix_text
from helpers import fresh_project, write_tree  # noqa: F401 (a fixture)

METRICS = """
import torch


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    return correct.sum() / len(labels)
"""

TRAIN = """
import torch
from {module} import {imported}

model = torch.nn.Linear(4, 3).to("cuda")
features = torch.randn(10, 4).to("cuda")
labels = torch.randint(0, 3, (10,)).to("cuda")
output = model(features)
print({call})
"""


@pytest.fixture(autouse=True)
def _fresh(fresh_project):
    yield


write = write_tree


def findings(path: Path):
    result = check_text(path.read_text(encoding="utf-8"), str(path), Settings())
    return [(d.location.row, d.code) for d in result.diagnostics]


def train(module="utils", imported="accuracy", call="accuracy(output, labels)") -> str:
    return TRAIN.format(module=module, imported=imported, call=call)


def test_a_script_next_to_the_helper_passes_device_tensors(tmp_path):
    write(tmp_path, {"utils.py": METRICS, "train.py": train()})
    assert findings(tmp_path / "utils.py") == [(7, "MPS303")]


def test_a_package_module_imports_it_by_its_dotted_name(tmp_path):
    write(tmp_path, {"pygcn/__init__.py": "", "pygcn/utils.py": METRICS,
                     "pygcn/train.py": train(module="pygcn.utils")})
    assert findings(tmp_path / "pygcn" / "utils.py") == [(7, "MPS303")]


@pytest.mark.parametrize("files", [
    {"train.py": train(module="utils", imported="accuracy as acc", call="acc(output, labels)")},
    {"train.py": train(module="utils", imported="*")},
    {"pkg/__init__.py": "", "pkg/train.py": train(module=".utils")},
], ids=["alias", "star", "relative"])
def test_other_ways_to_import_it(tmp_path, files):
    package = "pkg/" if "pkg/__init__.py" in files else ""
    write(tmp_path, {package + "utils.py": METRICS, **files})
    assert findings(tmp_path / (package + "utils.py")) == [(7, "MPS303")]


@pytest.mark.parametrize("files", [
    {},  # nobody calls it
    {"train.py": train(call="accuracy(output.cpu(), labels.cpu())")},  # host tensors
    {"train.py": train(call="accuracy(*pair, labels)")},  # an argument it cannot read
    {"train.py": train(module="other", call="accuracy(output, labels)"), "other.py": METRICS},  # another accuracy
    {"train.py": train(imported="*") + "def accuracy(a, b):\n    return a\n"},  # its own accuracy
    {"train.py": train(imported="*"), "utils.py": METRICS + "__all__ = ['other']\n"},  # not exported
    {"elsewhere/train.py": train()},  # not where `import utils` finds this file
], ids=["no-caller", "host", "starred-argument", "another-module", "shadowed", "not-in-all", "other-directory"])
def test_traps(tmp_path, files):
    write(tmp_path, {"utils.py": METRICS, "other.py": "", **files})
    assert findings(tmp_path / "utils.py") == []


def test_unsafe_fix_makes_it_float32(tmp_path):
    write(tmp_path, {"utils.py": METRICS, "train.py": train()})
    path = tmp_path / "utils.py"
    fixed = fix_text(path.read_text(encoding="utf-8"), str(path), Settings(), unsafe=True)
    assert "correct = preds.eq(labels).float()" in fixed.text
    safe = fix_text(path.read_text(encoding="utf-8"), str(path), Settings())
    assert ".double()" in safe.text


def test_a_result_read_from_callers_is_not_cached(tmp_path):
    """The callers' calls are not in their summaries: a cached result could not see them change."""
    from mpslint.runner import Mode, run

    write(tmp_path, {"utils.py": METRICS, "train.py": train()})
    files = [(str(tmp_path / "utils.py"), "utils.py", Settings())]
    cache_dir = tmp_path / "cache"
    first = run(files, Mode(), cache_dir=cache_dir, jobs=1)[0]
    assert [d.code for d in first.diagnostics] == ["MPS303"]
    write(tmp_path, {"train.py": train(call="accuracy(output.cpu(), labels.cpu())")})
    second = run(files, Mode(), cache_dir=cache_dir, jobs=1)[0]
    assert not second.cached and second.diagnostics == []


TWO_HELPERS = """
import torch


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().sum() / len(labels)


def precision(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().mean()
"""


def test_a_caller_asked_about_several_functions_is_parsed_once(tmp_path, monkeypatch):
    from mpslint.analysis.project import callers

    parsed = []

    def counting_compile(source, *args, **kwargs):
        parsed.append(args[0] if args else "")
        return compile(source, *args, **kwargs)

    monkeypatch.setattr(callers, "compile", counting_compile, raising=False)
    script = train(imported="accuracy, precision", call="accuracy(output, labels), precision(output, labels)")
    write(tmp_path, {"utils.py": TWO_HELPERS, "train.py": script})
    assert findings(tmp_path / "utils.py") == [(7, "MPS303"), (12, "MPS303")]
    assert parsed == [str(tmp_path / "train.py")]  # one parse answers both functions, and says what it imports


def test_a_helper_called_in_its_own_file_does_not_ask_other_modules(tmp_path):
    # Its calls here say what its parameters are: what other modules pass is not read, so editing them does not
    # re-check this file (no callers' dependency is recorded).
    own = METRICS + "\nout = torch.zeros(3, 2)\nprint(accuracy(out, torch.zeros(3)))\n"
    write(tmp_path, {"utils.py": own, "train.py": train()})
    result = check_text(own, str(tmp_path / "utils.py"), Settings())
    assert [d.code for d in result.diagnostics] == []
    assert not [key for key in result.depends if "callers" in key]
