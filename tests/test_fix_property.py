"""`--fix` changes a program only where it edits it, in every encoding and line ending (issue #29).

The property and the programs are benchmarks/fix_property.py's (which runs them for
minutes); here they run with fixed seeds and a budget of a few seconds: mutated
fixtures and snippets, programs generated from the grammar, and the issue's
reproducers. The last tests show the property catches what it must.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings as hsettings

from mpslint.diagnostic import Edit, Location


def _benchmark():
    # Loaded from its file, so that benchmarks/ never joins sys.path for the other tests.
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "fix_property.py"
    spec = importlib.util.spec_from_file_location("mpslint_benchmark_fix_property", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


PROPERTY = _benchmark()

REPRODUCERS = [
    b"import torch\n\ndef f():\n\x0c    m = Model().cuda()\n",
    b"import torch\n\nclass A:\n    def f(self):\n\x0c        m = Model().cuda()\n        return m\n\n"
    b"    def g(self):\n        return torch.zeros(1).cuda()\n",
    b'import torch\ndef pick_device(idx):\n    return torch.device(f"cuda:{idx}")\nm = Model().cuda()\n',
    b"import torch\nm = Model().cuda()\ndef pick_device():\n    return torch.device('cpu')\n",
    b"import torch\nx = torch.zeros(1).cuda()\nimport numpy as np\n",
    b"import torch\rx = torch.zeros(1).cuda()\ny = 1\n",
    b"\xef\xbb\xbfimport torch\r\n\r\ndef f():\r\n\x0c\tm = Model().cuda()  # caf\xc3\xa9\r\n",
    b"# -*- coding: latin-1 -*-\rimport torch\rs = '\xe9'\rdef f():\r\x0c    return Model().cuda()\r",
]


@pytest.mark.parametrize("data", REPRODUCERS)
def test_the_issues_reproducers_are_fixed_without_changing_anything_else(data, tmp_path):
    checked = PROPERTY.check_file(data, str(tmp_path))
    assert checked.changed and not checked.violations


def test_mutated_programs_in_every_encoding_and_line_ending(tmp_path):
    tally = PROPERTY.run([PROPERTY.mutated_programs], seed=0, count=40)
    assert not tally.violations, tally.violations[:3]
    assert tally.changed >= 20  # the budget goes to programs the fixer changes


@hsettings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(hypothesmith.from_grammar(auto_target=False))
def test_generated_programs_in_every_encoding_and_line_ending(tmp_path_factory, source):
    data, _, _ = PROPERTY.encode(PROPERTY.with_cuda_code(source), random.Random(len(source)))
    checked = PROPERTY.check_file(data, str(tmp_path_factory.mktemp("generated")))
    assert not checked.violations, checked.violations


# --- the property catches what it must -----------------------------------------------------------


def _edit(row: int, column: int, content: str, end=None) -> Edit:
    start = Location(row, column)
    return Edit(start, Location(*end) if end else start, content)


def test_a_statement_moved_out_of_its_function_is_caught():
    before = "def f():\n\x0c    m = Model().cuda()\n"
    edits = [_edit(2, 6, "device = pick_device()\n"), _edit(2, 18, "to(device)", (2, 24))]
    after = "def f():\n\x0c    device = pick_device()\nm = Model().to(device)\n"
    [found] = PROPERTY.pass_violations(before, edits, after)
    assert "moved from FunctionDef f" in found and "to module" in found


def test_a_call_its_def_does_not_accept_and_a_name_used_before_it_is_bound_are_caught():
    before = "def pick_device(idx):\n    return idx\nm = Model().cuda()\n"
    after = "def pick_device(idx):\n    return idx\nm = Model().to(DEVICE)\nDEVICE = pick_device()\n"
    edits = [_edit(3, 13, "to(DEVICE)", (3, 19)), _edit(4, 1, "DEVICE = pick_device()\n")]
    found = PROPERTY.pass_violations(before, edits, after)
    assert any("calls pick_device() with 0 positional" in f for f in found)
    assert any("uses DEVICE at import time" in f for f in found)


def test_a_lost_comment_and_a_changed_statement_outside_the_edits_are_caught():
    before = "x = 1  # keep\ny = x.cuda()\n"
    after = "x = 2\ny = x.to(DEVICE)\n"
    found = PROPERTY.pass_violations(before, [_edit(2, 7, "to(DEVICE)", (2, 13))], after)
    assert any("comment outside the edits was lost: '# keep'" in f for f in found)
    assert any("outside the edits moved or changed" in f for f in found)


def test_a_new_kind_of_line_ending_is_caught(tmp_path):
    from mpslint.source import SourceText

    data = b"import torch\rx = 1\n"
    written = b"import torch\r\nx = 1\n"
    assert PROPERTY.bytes_violations(data, SourceText.decode(data), written) == ["new kinds of line ending: [b'\\r\\n']"]
