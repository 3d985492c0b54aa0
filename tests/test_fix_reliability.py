"""`mpslint --fix` never changes what a program means outside its edits (issue #29's fixer items).

Each test is a reproducer from the issue: a form feed before an indented
statement, a `pick_device` the file already has, imports after the first
statement, and so on. The property behind all of them (the AST outside the
rewritten nodes is unchanged) is tested on generated and mutated programs in
test_fix_property.py.
"""

from __future__ import annotations

import ast

import pytest

from helpers import fix


def _statement_scopes(text: str):
    """(function name or None, statement source) for each simple statement: where every statement runs."""
    found = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else scope
            if isinstance(child, ast.stmt) and not hasattr(child, "body"):
                found.append((scope, ast.unparse(child)))
            visit(child, inner)

    visit(ast.parse(text), None)
    return found


# --- form feeds ---------------------------------------------------------------------------------


def test_a_form_feed_before_an_indented_statement_keeps_the_fix_in_its_function():
    # Python resets the indentation column at a form feed: the statement's indentation is the four spaces.
    outcome = fix("import torch\n\ndef f():\n\x0c    m = Model().cuda()\n")
    assert outcome.error is None and outcome.fixed["MPS101"] == 1
    scopes = _statement_scopes(outcome.text)
    assert ("f", "device = pick_device()") in scopes
    assert ("f", "m = Model().to(device)") in scopes


def test_a_form_feed_in_a_longer_class_gives_code_that_parses():
    source = (
        "import torch\n\nclass A:\n    def f(self):\n\x0c        m = Model().cuda()\n        return m\n\n"
        "    def g(self):\n        return torch.zeros(1).cuda()\n"
    )
    outcome = fix(source)
    assert outcome.error is None and outcome.fixed["MPS101"] == 2
    scopes = _statement_scopes(outcome.text)
    assert ("f", "m = Model().to(device)") in scopes and ("f", "return m") in scopes
    assert ("g", "return torch.zeros(1).to(device)") in scopes


@pytest.mark.parametrize("leading", ["\x0c    ", "  \x0c    ", "\x0c\x0c    ", "\t\x0c  "])
def test_statement_indentation_counts_from_the_last_form_feed(leading):
    from mpslint.analysis.tree import Tree

    source = f"if x:\n{leading}y = 1\n"
    tree = Tree(ast.parse(source), source)
    assert tree.indentation(2) == leading[leading.rfind("\x0c") + 1:]


# --- the module's own `pick_device` ------------------------------------------------------------


def _runs(text: str) -> None:
    """Execute the fixed module with a stand-in torch and model: it must import without TypeError/NameError."""
    import types

    torch = types.SimpleNamespace(
        device=lambda name: name,
        zeros=lambda *a: types.SimpleNamespace(to=lambda device: device),
        cuda=types.SimpleNamespace(is_available=lambda: False),
        backends=types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: False)),
    )
    model = type("Model", (), {"to": lambda self, device: device, "cuda": lambda self: "cuda"})
    namespace = {"__name__": "fixed", "Model": model}
    compiled = compile(text.replace("import torch\n", "", 1), "fixed.py", "exec")
    exec(compiled, {**namespace, "torch": torch})


def test_a_pick_device_that_needs_an_argument_is_not_called_without_one():
    source = 'import torch\ndef pick_device(idx):\n    return torch.device(f"cuda:{idx}")\nm = Model().cuda()\n'
    outcome = fix(source)
    assert outcome.fixed["MPS101"] == 1
    assert "def pick_device(idx):" in outcome.text and "pick_device()" not in outcome.text
    _runs(outcome.text)


def test_a_pick_device_defined_after_the_cuda_code_is_not_used_before_it_runs():
    source = 'import torch\nm = Model().cuda()\n\n\ndef pick_device():\n    return torch.device("cpu")\n'
    outcome = fix(source)
    assert outcome.fixed["MPS101"] == 1
    _runs(outcome.text)
    assert outcome.text.count("def pick_device():") == 1  # the module's own is kept, and not called early


@pytest.mark.parametrize(
    "definition",
    ["def pick_device(index=0, *, kind='cuda'):", "@functools.lru_cache(maxsize=None)\ndef pick_device():"],
)
def test_a_pick_device_callable_without_arguments_and_defined_first_is_reused(definition):
    source = f'import functools\nimport torch\n\n\n{definition}\n    return torch.device("cpu")\n\n\nm = Model().cuda()\n'
    outcome = fix(source, ["MPS101"])
    assert outcome.fixed["MPS101"] == 1
    assert outcome.text.count("def pick_device") == 1 and "DEVICE = pick_device()" in outcome.text
    _runs(outcome.text)


@pytest.mark.parametrize(
    "other",
    [
        "async def pick_device():\n    return 'cpu'\n",  # a coroutine, not a device
        "@property\ndef pick_device():\n    return 'cpu'\n",  # a decorator that changes what calling it does
        "pick_device = 'cpu'\n",  # not a function
        "def pick_device():\n    return 'cpu'\npick_device = None\n",  # rebound
    ],
)
def test_another_binding_of_the_name_is_left_alone_and_the_helper_gets_a_free_name(other):
    source = f"import torch\n\n{other}\nm = Model().cuda()\n"
    outcome = fix(source, ["MPS101"])
    assert outcome.fixed["MPS101"] == 1
    assert "def pick_torch_device()" in outcome.text and "DEVICE = pick_torch_device()" in outcome.text
    assert other in outcome.text
    again = fix(outcome.text, ["MPS101"])
    assert not again.changed  # the second run reuses the helper the first one wrote


def test_the_helper_name_is_free_in_every_scope():
    source = "import torch\n\ndef f(pick_device, pick_torch_device):\n    return 1\n\nm = Model().cuda()\n"
    outcome = fix(source, ["MPS101"])
    assert "def pick_device_2()" in outcome.text and "DEVICE = pick_device_2()" in outcome.text
    _runs(outcome.text)


def test_a_device_assigned_after_the_code_is_not_used_there():
    source = "import torch\n\n\ndef pick_device():\n    return 'cpu'\n\n\nm = Model().cuda()\nDEVICE = pick_device()\n"
    outcome = fix(source, ["MPS101"])
    _runs(outcome.text)  # not `m = Model().to(DEVICE)` above the assignment (it is left as it was)


# --- imports after the first statement ---------------------------------------------------------


def test_an_import_after_the_cuda_code_does_not_block_the_fix():
    outcome = fix("import torch\nx = torch.zeros(1).cuda()\nimport numpy as np\n")
    assert outcome.fixed["MPS101"] == 1 and not outcome.diagnostics
    text = outcome.text
    assert text.index("import torch") < text.index("def pick_device") < text.index("DEVICE = pick_device()") < text.index("x = ")
    assert text.endswith("import numpy as np\n")


def test_a_notebook_that_imports_in_every_cell_is_fixed_in_every_cell():
    cells = ["import torch\n"] + [f"import numpy as np{i}\nt{i} = torch.zeros(1).cuda()\n" for i in range(60)]
    outcome = fix("".join(cells))
    assert outcome.fixed["MPS101"] == 60 and not outcome.diagnostics
    assert outcome.text.count("def pick_device") == 1
    _runs(outcome.text.replace("import numpy as np", "np = 1 #"))


def test_code_before_the_torch_import_is_still_refused_with_a_reason():
    [diag] = fix("x = 1\ny = x.cuda()\nimport torch\n", ["MPS101"]).diagnostics
    assert diag.fix is None and "torch is not imported at module level before this code" in diag.message
