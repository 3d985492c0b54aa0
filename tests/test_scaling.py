"""The work of checking a file grows linearly with its size, for every generated shape of
``benchmarks/scaling.py``: counted in steps up the tree, not timed.

Walking up from a node to its ancestors is how a question about "what is this inside" turns
quadratic: in a long ``elif`` chain every arm is nested in the one before, so a walk per node
costs the chain's length. Facts about ancestors are inherited instead (``Tree.inherited``);
this test counts every step of every ancestor walk and every inherited value computed, at a
size and at four times that size.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from mpslint.analysis.tree import Tree
from mpslint.config import Settings
from mpslint.engine import check_text


def _benchmark_shapes():
    # Loaded from its file, so that benchmarks/ never joins sys.path for the other tests.
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "scaling.py"
    spec = importlib.util.spec_from_file_location("mpslint_benchmark_scaling", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.SHAPES


SHAPES = _benchmark_shapes()

# Smaller than the benchmark's sizes: steps are counted, so small inputs show the growth as well.
SIZES = {"module_calls": 200, "rebound_device": 100, "device_functions": 100, "elif_dispatch": 100,
         "training_loop": 100, "deep_nesting": 4, "long_expression": 100, "long_literal": 2_000, "try_else": 100}


def steps(text: str, monkeypatch) -> int:
    count = [0]
    ancestors, inherited = Tree.ancestors, Tree.inherited

    def counted_ancestors(self, node):
        for parent in ancestors(self, node):
            count[0] += 1
            yield parent

    def counted_inherited(self, key, node, compute, root):
        def step(parent, child, above):
            count[0] += 1
            return compute(parent, child, above)
        return inherited(self, key, node, step, root)

    with monkeypatch.context() as patch:
        patch.setattr(Tree, "ancestors", counted_ancestors)
        patch.setattr(Tree, "inherited", counted_inherited)
        result = check_text(text, "generated.py", Settings())
    assert result.parsed
    return count[0]


# --------------------------------------------------------------- import graphs


def chain(n: int) -> dict:
    """m0 star-imports m1, which star-imports m2, ...: the dtype is defined at the far end."""
    files = {"pkg/__init__.py": ""}
    for i in range(n):
        head = f"from .m{i + 1} import *\n" if i < n - 1 else "import torch\nDTYPE = torch.float64\n"
        files[f"pkg/m{i}.py"] = head + f"x{i} = torch.zeros(3, dtype=DTYPE, device='cuda')\n"
    return files


def star(n: int) -> dict:
    """One hub star-imports n leaves; n users star-import the hub, each using one leaf's dtype."""
    files = {"pkg/__init__.py": "", "pkg/hub.py": "".join(f"from .leaf{i} import *\n" for i in range(n))}
    for i in range(n):
        files[f"pkg/leaf{i}.py"] = f"import torch\nVALUE_{i} = torch.float64\n"
        files[f"pkg/user{i}.py"] = f"from .hub import *\nx = torch.zeros(1, dtype=VALUE_{i}, device='cuda')\n"
    return files


def callers(n: int) -> dict:
    """n modules in one package, each calling the previous one's helper with a tensor on the device: every
    module asks who calls its own helper (analysis/project/callers.py) about the same directory."""
    files = {"pkg/__init__.py": ""}
    for i in range(n):
        head = "import torch\n" + (f"from .m{i - 1} import f{i - 1}\n" if i else "")
        call = f"def step(x):\n    return f{i - 1}(model(x))\n" if i else ""
        files[f"pkg/m{i}.py"] = head + f"model = Net().cuda()\ndef f{i}(x):\n    return x.double()\n" + call
    return files


GRAPHS = {"chain": (chain, 12), "star": (star, 12), "callers": (callers, 12)}


def project_steps(root: Path, files: dict) -> int:
    """Resolutions made or reused plus summaries computed, checking every module of the project once."""
    from mpslint.analysis.project import model
    from mpslint.runner import Mode, run

    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    tasks = [(str(root / name), name, Settings()) for name in sorted(files)]
    results = run(tasks, Mode(), jobs=1)
    assert not any(r.error for r in results)
    project = model.shared()
    return project.steps + project.store.computed


@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_an_import_graph_costs_linear_steps(graph, tmp_path):
    make, size = GRAPHS[graph]
    small = project_steps(tmp_path / "small", make(size))
    large = project_steps(tmp_path / "large", make(4 * size))
    assert small > size  # the counter counts: every module asked the model something
    assert large <= 5 * small, (small, large)


def test_every_benchmark_shape_is_counted():
    assert set(SIZES) == set(SHAPES)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_steps_up_the_tree_grow_linearly(shape, monkeypatch):
    make, _ = SHAPES[shape]
    small, large = steps(make(SIZES[shape]), monkeypatch), steps(make(4 * SIZES[shape]), monkeypatch)
    # The memo of an inherited fact is per analysis object, so the count is exact: linear is 4.
    assert large <= 5 * max(small, 1), (small, large)


# --- fixing: conflict checks grow with the number of fixes, not its square ---------------------


@pytest.mark.parametrize("shape", ["module_calls", "elif_dispatch"])
def test_conflict_checks_between_fixes_grow_linearly(shape, monkeypatch):
    """Every edit was compared with every edit taken before it: 8,000 `.cuda()` fixes took 90 s (#29)."""
    from mpslint import fixer

    make, _ = SHAPES[shape]
    compared = [0]
    real = fixer._conflicts

    def counted(a, b):
        compared[0] += 1
        return real(a, b)

    def comparisons(text: str) -> int:
        compared[0] = 0
        diagnostics = check_text(text, "generated.py", Settings()).diagnostics
        chosen = fixer.choose_fixes(diagnostics, unsafe=False)
        assert len(chosen) >= SIZES[shape] // 2, len(chosen)  # the shape's fixes are taken, not refused
        return compared[0]

    monkeypatch.setattr(fixer, "_conflicts", counted)
    small, large = comparisons(make(SIZES[shape])), comparisons(make(4 * SIZES[shape]))
    assert large <= 5 * max(small, 1), (small, large)
