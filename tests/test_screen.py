"""The screens (mpslint/screen): never stricter than the analyses they stand for.

A screen rules a file out for a rule without LibCST; it is only allowed to
because its models over-approximate the LibCST analyses the rule asks. Here
that is checked where it can fail, expression by expression:

- every expression ``DeviceFlow`` calls a device tensor, a placed module or a
  device handle has that bit in ``screen.device`` (matched by source range);
- every name DeviceFlow places is placed there;
- a file where ``HotLoops`` finds a hot loop has one for ``screen.loops``;

on every fixture, every rule doc example and a corpus sample. The traps
below are the code the screens exist to rule out (and code that looks like
it but must get through). tests/test_prefilter.py checks that results never
change.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Tuple

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from mpslint import catalog, registry
from mpslint.analysis.device_flow import DeviceFlow, Kind
from mpslint.analysis.loops import HotLoops
from mpslint.checks.base import Context
from mpslint.config import Settings, parse_torch_version
from mpslint.screen import Facts, screen_rules
from mpslint.screen.device import ACCEL, DEVICE, MODULE, device_model
from mpslint.screen.loops import has_hot_loop

from corpus import corpus_dir
from helpers import codes

ROOT = Path(__file__).resolve().parent.parent
ALL = Settings()
BIT = {Kind.DEVICE: DEVICE, Kind.MODULE: MODULE, Kind.ACCEL: ACCEL}
# LibCST expression class -> the ast class of the same source range.
SAME = {
    cst.Name: ast.Name, cst.Attribute: ast.Attribute, cst.Call: ast.Call, cst.Subscript: ast.Subscript,
    cst.BinaryOperation: ast.BinOp, cst.Comparison: ast.Compare, cst.UnaryOperation: ast.UnaryOp,
    cst.BooleanOperation: ast.BoolOp, cst.IfExp: ast.IfExp, cst.Tuple: ast.Tuple, cst.List: ast.List,
    cst.Set: ast.Set, cst.Dict: ast.Dict, cst.ListComp: ast.ListComp, cst.SetComp: ast.SetComp,
    cst.DictComp: ast.DictComp, cst.GeneratorExp: ast.GeneratorExp, cst.NamedExpr: ast.NamedExpr,
    cst.SimpleString: ast.Constant,
}
Span = Tuple[type, Tuple[int, int], Tuple[int, int]]


# ------------------------------------------------------------ the property


def ast_nodes(tree: ast.Module, text: str) -> Dict[Span, Tuple[ast.AST, ast.AST]]:
    """(ast class, start, end) in LibCST's (line, character column) -> (node, its scope), scopes as the index has them."""
    lines = text.encode("utf-8").splitlines(keepends=True)

    def column(line: int, offset: int) -> int:
        return len(lines[line - 1][:offset].decode("utf-8")) if line <= len(lines) else offset

    found: Dict[Span, Tuple[ast.AST, ast.AST]] = {}
    stack = [(tree, tree)]
    while stack:
        node, scope = stack.pop()
        if isinstance(node, ast.expr):
            key = (type(node), (node.lineno, column(node.lineno, node.col_offset)),
                   (node.end_lineno, column(node.end_lineno, node.end_col_offset)))
            found.setdefault(key, (node, scope))
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    return found


def over_approximation_gaps(text: str, settings: Settings = ALL) -> Tuple[List[str], int]:
    """What DeviceFlow/HotLoops know that the screen's models miss, and how many facts were compared."""
    module = cst.parse_module(text)
    ctx = Context(module, text, "example.py", settings)
    flow = ctx.analysis(DeviceFlow)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    facts = Facts(text, settings)
    model = device_model(facts)
    nodes = ast_nodes(facts.index.module, text)
    gaps, compared = [], 0
    for node in flow.tree.start:
        target = SAME.get(type(node))
        if target is None or node not in positions:
            continue
        kind = flow.kind(node)
        if kind not in BIT:
            continue
        rng = positions[node]
        match = nodes.get((target, (rng.start.line, rng.start.column), (rng.end.line, rng.end.column)))
        if match is None:
            continue  # no ast node spans exactly this (a generator expression that is a call's only argument)
        compared += 1
        if not model.bits(*match) & BIT[kind]:
            gaps.append(f"line {rng.start.line}: `{module.code_for_node(node)}` is {kind.value} for DeviceFlow")
    missing = flow.placed - model.placed
    if missing:
        gaps.append(f"placed by DeviceFlow only: {sorted(missing)}")
    if ctx.analysis(HotLoops).hot and not has_hot_loop(facts):
        gaps.append(f"HotLoops finds {len(ctx.analysis(HotLoops).hot)} hot loop(s), the screen none")
    return gaps, compared


def _fixtures():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield pytest.param(path, id=str(path.relative_to(ROOT / "fixtures")))


@pytest.mark.parametrize("path", list(_fixtures()))
def test_the_screen_models_over_approximate_the_analyses_on_every_fixture(path):
    gaps, compared = over_approximation_gaps(path.read_text(encoding="utf-8"))
    assert not gaps, "\n".join(gaps)


def test_the_comparison_covers_the_fixtures():
    # The property above is only as good as the matching of LibCST and ast nodes. What stays unmatched
    # are LibCST Names that are not expressions in ast (keywords, attribute names) and bare tuples.
    total = sum(over_approximation_gaps(p.read_text(encoding="utf-8"))[1] for p in (ROOT / "fixtures").rglob("*.py"))
    assert total > 1000


def test_the_screen_models_over_approximate_the_analyses_on_every_rule_example():
    gaps = []
    for code, doc in sorted(catalog.load().items()):
        for title in ("Example", "Use instead"):
            for block in doc.examples(title):
                try:
                    ast.parse(block)
                except SyntaxError:
                    continue  # MPS000's example: not screened
                gaps += [f"{code} {title}: {gap}" for gap in over_approximation_gaps(block)[0]]
    assert not gaps, "\n".join(gaps)


@pytest.mark.corpus
def test_the_screen_models_over_approximate_the_analyses_on_real_code():
    files = sorted(corpus_dir().rglob("*.py"))
    # Files with training loops, placement and host syncs, and a spread-out sample of the rest.
    sample = [f for f in files if f.name in ("trainer.py", "cache_utils.py", "candidate_generator.py")]
    sample += files[:: max(1, len(files) // 60)]
    gaps = []
    for path in sample:
        found, _ = over_approximation_gaps(path.read_text(encoding="utf-8"))
        gaps += [f"{path.name}: {gap}" for gap in found]
    assert not gaps, "\n".join(gaps[:20])


# ------------------------------------------------------------------ traps


def admitted(source: str, select, **settings_kw) -> List[str]:
    settings = replace(ALL, select=frozenset(select), **settings_kw)
    classes = registry.classes_for(settings.select)
    return [cls.CODE for cls in screen_rules(textwrap.dedent(source), classes, settings)]


MODEL_FILE = """
import torch
from torch import nn

class Rotary(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x, position_ids):
        freqs = self.inv_freq[None, :, None].to(x.device) @ position_ids[:, None, :].float()
        return freqs.cos().to(x.dtype)

class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.n)])
        self.embed = nn.Embedding(config.vocab, 4)

    def forward(self, hidden, mask=None):
        for layer in self.layers:
            hidden = layer(hidden)
            if mask is not None:
                hidden = hidden * mask.to(hidden.device)
        return hidden.float()
"""


def test_a_model_file_is_ruled_out_for_the_loop_placement_and_op_rules():
    # It has loops, .to(, devices, torch ops and an Embedding: the byte prefilter admits it for all of these.
    assert admitted(MODEL_FILE, ["MPS201", "MPS202", "MPS204", "MPS302", "MPS501", "MPS502", "MPS503"]) == []
    assert codes(MODEL_FILE) == []


def test_a_hot_loop_gets_through():
    source = """
    import torch
    model = Net().to(device)
    for x, y in loader:
        loss = model(x.to(device)).sum()
        print(loss.item())
    """
    assert admitted(source, ["MPS201"]) == ["MPS201"]
    assert codes(source, ["MPS201"]) == ["MPS201"]


def test_a_step_in_a_function_called_from_a_loop_gets_through():
    source = """
    import torch
    def train_step(batch):
        loss = model(batch)
        loss.backward()
        return loss.item()

    def fit(batches):
        for batch in batches:
            train_step(batch)
    """
    assert admitted(source, ["MPS201"]) == ["MPS201"]


@pytest.mark.parametrize("source,expected", [
    ("import torch\nx = torch.arange(0, n, 2) / n\n", []),  # a host tensor with a Python number
    ("import torch\nx = torch.zeros(3) - 1\n", []),
    ("import torch\nx = batch.to(device)\ny = x + torch.ones(3)\n", ["MPS302"]),
    ("import torch\nx = batch.to(device)\nnoise = torch.randn(4, 4)\ny = x + noise\n", ["MPS302"]),
    ("import torch\nx = batch.to(device)\ny = x + 0.1 * torch.randn(4, 4)\n", ["MPS302"]),
    ("import torch\nx = batch.to(device)\nx += torch.randn(x.size())\n", ["MPS302"]),
    ("import torch\nx = batch.to(device)\ny = x + torch.ones(1)\n", []),  # scalar-like: fine on MPS
    ("import torch\nx = batch.to(device)\ny = x + torch.ones(0x1)\n", ["MPS302"]),  # not the literal 1
    ("import torch\nmodel = Net().to(device)\nout = model(batch)\n", ["MPS302"]),  # a placed forward
])
def test_placement_screen(source, expected):
    assert admitted(source, ["MPS302"]) == expected


@pytest.mark.parametrize("source,expected", [
    ("import torch.nn as nn\ne = nn.Embedding(10, 3)\n", []),
    ("import torch.nn as nn\ne = nn.Embedding(10, 3, max_norm=1.0)\n", ["MPS502"]),
    ("import torch.nn as nn\ne = nn.Embedding(10, 3, None, 1.0)\n", ["MPS502"]),  # max_norm by position
    ("import torch.nn as nn\ne = nn.Embedding(10, 3, max_norm=None)\n", []),
    ("import torch.nn.functional as F\ndef f(x, w, max_norm=None):\n    return F.embedding(x, w, max_norm=max_norm)\n", []),
    ("import torch\nu, s, v = torch.linalg.svd(a)\n", ["MPS502"]),
    ("import torch\ndef f(self):\n    return self.svd(a)\n", []),  # not a tensor's method
    ("import numpy as np\nu, s, v = np.linalg.svd(a)\n", []),
])
def test_op_screen_for_fallbacks(source, expected):
    assert admitted(source, ["MPS502"]) == expected


def test_op_screen_follows_the_torch_floor():
    source = "import torch\ny = torch.roll(x, 1)\n"  # an MPS kernel since torch 2.1 (mps.md §2.5)
    assert admitted(source, ["MPS501"]) == []
    assert admitted(source, ["MPS501"], torch_version=parse_torch_version("2.0")) == ["MPS501"]


@pytest.mark.parametrize("source,expected", [
    ("import torch\ny = x.long() @ w\n", ["MPS503"]),
    ("import torch\ny = torch.matmul(x, w.to(torch.int64))\n", ["MPS503"]),
    ("import torch\ny = (x @ w).long()\n", []),
    ("import torch\ny = torch.matmul(x.float(), w)\nidx = ids.long()\n", []),
    ("import torch\nz = torch.zeros(3, dtype=torch.complex128)\n", ["MPS503"]),
])
def test_integer_gemm_screen(source, expected):
    assert admitted(source, ["MPS503"]) == expected


@pytest.mark.parametrize("source,expected", [
    ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=4)\n", ["MPS403"]),
    ("from torch.utils.data import DataLoader\ndef main():\n    loader = DataLoader(ds, num_workers=4)\n", ["MPS403"]),
    ("from torch.utils.data import DataLoader\nclass T:\n    def get(self):\n        return DataLoader(ds, num_workers=4)\n", []),
    ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, num_workers=0)\n", []),
    ("from torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8)\n", []),
    ("import multiprocessing as mp\ndef main():\n    def inner():\n        mp.Pool(4)\n", []),
])
def test_worker_screen(source, expected):
    assert admitted(source, ["MPS403"]) == expected


def test_the_version_gate_screen_needs_no_parse():
    source = 'import torch\nwith torch.autocast("mps"):\n    pass\n'
    facts = Facts(source, ALL)
    rule = next(cls for cls in registry.rule_classes() if cls.CODE == "MPS504")
    assert rule.screen(facts) is False and facts._index is None  # no floor: the newest torch, nothing gated
    old = replace(ALL, torch_version=parse_torch_version("2.4"))
    assert rule.screen(Facts(source, old)) is True


@pytest.mark.parametrize("source,expected", [
    ("import torch\nx = batch.to(device)\nprint(x.numpy())\n", ["MPS301"]),
    ("import torch\nx = torch.from_numpy(a)\nprint(x.numpy())\n", []),
    ("import torch\ndef f(t):\n    return t.numpy()\nf(batch.to(device))\n", ["MPS301"]),  # through a parameter
    ("import torch\ndef f(t):\n    return t.numpy()\nf(batch)\n", []),
])
def test_numpy_screen(source, expected):
    assert admitted(source, ["MPS301"]) == expected


def test_a_file_python_cannot_parse_is_not_screened():
    # LibCST decides: here it reports MPS000.
    source = "import torch\nfor x in loader:\n    loss.backward(x.item()\n"
    assert admitted(source, ["MPS201", "MPS302"]) == ["MPS201", "MPS302"]
    assert codes(source, ["MPS201"]) == ["MPS000"]


def test_a_failing_screen_lets_its_rule_run():
    deep = "import torch\nx = batch.to(device)\ny = " + " + ".join(["x"] * 3000) + " + torch.ones(3)\n"
    assert admitted(deep, ["MPS302"]) == ["MPS302"]  # RecursionError in the model: the rule runs


def test_names_depending_on_each_other_reach_a_fixpoint():
    source = textwrap.dedent("""
    import torch
    a = torch.zeros(3)
    for step in range(10):
        b = a * 2
        a = b + c
        c = batch.to(device)
    """)
    facts = Facts(source, ALL)
    model = device_model(facts)
    module = facts.index.module
    assert model.may_be_device(ast.Name("a", ast.Load()), module)
    assert model.may_be_device(ast.Name("b", ast.Load()), module)
