"""Fuzzing: the linter never raises, the fixer never breaks a file that parsed, the prefilter changes nothing.

Two sources of input: programs generated from the Python grammar
(hypothesmith), and mutations of torch-heavy code (every fixture plus the
snippets below): truncation, deleted and duplicated lines, changed
indentation, CRLF line endings, spliced-in torch calls.
"""

from __future__ import annotations

from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from mpslint.config import Settings
from mpslint.engine import INTERNAL_ERROR, check_text
from mpslint.fixer import fix_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

SNIPPETS = [
    """import torch\nmodel = Net().cuda()\nfor x, y in loader:\n    x, y = x.cuda(), y.cuda()\n    loss = crit(model(x), y)\n    loss.backward()\n    opt.step()\n    print(loss.item())\n""",
    """import torch as th\ndev = th.device("cuda" if th.cuda.is_available() else "cpu")\nth.cuda.manual_seed(0)\nwith th.cuda.amp.autocast():\n    out = net(inp.to(dev))\nth.cuda.synchronize()\n""",
    """from torch.utils.data import DataLoader\nimport multiprocessing as mp\nmp.set_start_method("fork")\nloader = DataLoader(ds, num_workers=4, pin_memory=True)\nfor batch in loader:\n    arr = batch.to("cuda").numpy()\n""",
    """import numpy as np, torch\na = np.zeros(3)\nt = torch.from_numpy(a).to("cuda")\nd = torch.linalg.eig(t)\nx = torch.pdist(t)\ntorch.backends.cudnn.benchmark = True\n""",
]

ALL = Settings()


def _corpus():
    texts = list(SNIPPETS)
    for path in sorted(FIXTURES.rglob("*.py")):
        texts.append(path.read_text(encoding="utf-8"))
    return texts


CORPUS = _corpus()


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


def _assert_robust(text: str) -> None:
    result = check_text(text, "fuzz.py", ALL)  # must not raise
    assert not [d for d in result.diagnostics if d.code == INTERNAL_ERROR], [d.detail for d in result.diagnostics]
    _assert_prefilter_invisible(text, result)
    if result.parsed and _parses(text):
        for unsafe in (False, True):
            outcome = fix_text(text, "fuzz.py", ALL, unsafe=unsafe, first_check=result.diagnostics)
            assert _parses(outcome.text), "the fixer turned a parsable file into an unparsable one"


def _assert_prefilter_invisible(text: str, result) -> None:
    """The trigger strings never hide a finding (tests/test_prefilter.py)."""
    full = check_text(text, "fuzz.py", ALL, prefilter=False).diagnostics
    assert [(d.code, d.location) for d in result.diagnostics] == [(d.code, d.location) for d in full]


@st.composite
def mutants(draw):
    text = draw(st.sampled_from(CORPUS))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["truncate", "delete", "duplicate", "indent", "dedent", "splice", "cut-line"]))
        if kind == "truncate":
            lines = lines[:i]
        elif kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "indent":
            lines[i] = "    " + lines[i]
        elif kind == "dedent":
            lines[i] = lines[i].lstrip(" ")
        elif kind == "splice":
            other = draw(st.sampled_from(SNIPPETS)).splitlines(keepends=True)
            lines[i:i] = other[: draw(st.integers(1, len(other)))]
        else:
            line = lines[i]
            lines[i] = line[: draw(st.integers(0, max(len(line) - 1, 0)))] + "\n"
    text = "".join(lines)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    return text


@hsettings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(mutants())
def test_mutated_torch_code_never_crashes_and_fixes_parse(text):
    _assert_robust(text)


@hsettings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(hypothesmith.from_grammar(auto_target=False))
def test_generated_programs_never_crash(source):
    # Prepend torch usage so the prefilter lets the program through to the rules.
    _assert_robust("import torch\nx = torch.ones(1).cuda()\n" + source)


@pytest.mark.parametrize("text", [
    "",
    "\n",
    "\ufeffimport torch\n",
    "import torch\x00\n",
    "import torch\n" + "(" * 200 + ")" * 200 + "\n",
    "import torch\nx = " + "[" * 1000 + "]" * 1000 + "\n",
    "import torch\r\nx = y.cuda()\ry = 2\n",
    "import torch\n\tif x:\n        y.cuda()\n",
])
def test_odd_inputs_never_crash(text):
    _assert_robust(text)
