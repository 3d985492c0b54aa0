"""`mpslint --fix` never changes what a program means outside its edits (issue #29's fixer items).

Each test is a reproducer from the issue: a form feed before an indented
statement, a `pick_device` the file already has, imports after the first
statement, and so on. The property behind all of them (the AST outside the
rewritten nodes is unchanged) is tested on generated and mutated programs in
test_fix_property.py.
"""

from __future__ import annotations

import ast
import errno
import os

import pytest

from clitools import enter, run
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


# --- what --fix writes, and what it says when it does not ----------------------------------------

CUDA = "import torch\nx = torch.zeros(1).cuda()\n"


def test_a_fixed_file_that_cannot_be_written_counts_as_not_fixed(tmp_path, monkeypatch):
    from mpslint import writing

    enter(tmp_path, monkeypatch)
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(CUDA)
    real = writing.write_atomic

    def disk_full_for_b(path, data, **kw):
        if path.endswith("b.py"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, **kw)

    monkeypatch.setattr(writing, "write_atomic", disk_full_for_b)
    result = run("--fix", "--no-cache", "-j", "1", ".")
    assert result.exit_code == 2
    assert "error: b.py: cannot write the fixed file: No space left on device" in result.stderr
    assert "Found 3 findings (2 fixed, 1 remaining)." in result.output
    assert "b.py:2:5: MPS101" in result.output
    assert (tmp_path / "b.py").read_text() == CUDA


def test_a_read_only_file_is_not_rewritten(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    os.chmod(path, 0o444)
    inode = path.stat().st_ino
    result = run("--fix", "--no-cache", "a.py")
    assert result.exit_code == 1
    assert "a.py:1:1: MPS001 not fixed: the file is read-only" in result.output
    assert "a.py:2:5: MPS101" in result.output
    assert path.read_text() == CUDA and path.stat().st_ino == inode and path.stat().st_mode & 0o777 == 0o444


def test_a_read_only_notebook_is_not_rewritten(tmp_path, monkeypatch):
    import json

    enter(tmp_path, monkeypatch)
    cell = {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": CUDA}
    notebook = {"cells": [cell], "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "a.ipynb"
    path.write_text(json.dumps(notebook))
    os.chmod(path, 0o444)
    before = path.read_bytes()
    result = run("--fix", "--no-cache", "a.ipynb")
    assert result.exit_code == 1 and "MPS001 not fixed: the file is read-only" in result.output
    assert path.read_bytes() == before


@pytest.fixture
def linked_out(tmp_path, monkeypatch):
    """proj/link.py -> outside/t.py, and proj/ok.py, with the working directory above both."""
    (tmp_path / "proj").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "t.py").write_text(CUDA)
    (tmp_path / "proj" / "ok.py").write_text(CUDA)
    os.symlink(os.path.join("..", "outside", "t.py"), tmp_path / "proj" / "link.py")
    enter(tmp_path, monkeypatch)
    return tmp_path


def test_fix_does_not_write_through_a_link_out_of_the_paths_checked(linked_out):
    result = run("--fix", "--no-cache", "proj")
    assert result.exit_code == 1
    assert "proj/link.py:1:1: MPS001 not fixed: a symbolic link leads to" in result.output
    assert (linked_out / "outside" / "t.py").read_text() == CUDA
    assert "DEVICE" in (linked_out / "proj" / "ok.py").read_text()
    assert os.path.islink(linked_out / "proj" / "link.py")


def test_follow_symlinks_writes_through_the_link(linked_out):
    assert run("--fix", "--no-cache", "--follow-symlinks", "proj").exit_code == 0
    assert "DEVICE" in (linked_out / "outside" / "t.py").read_text()
    assert os.path.islink(linked_out / "proj" / "link.py")


def test_the_follow_symlinks_config_key_writes_through_the_link(linked_out):
    (linked_out / "proj" / "pyproject.toml").write_text("[tool.mpslint]\nfollow-symlinks = true\n")
    assert run("--fix", "--no-cache", "proj").exit_code == 0
    assert "DEVICE" in (linked_out / "outside" / "t.py").read_text()


def test_a_link_inside_the_paths_checked_and_a_link_named_on_the_command_line_are_written(linked_out):
    os.symlink("ok.py", linked_out / "proj" / "inner.py")
    assert run("--fix", "--no-cache", "proj/inner.py", "proj/link.py").exit_code == 0
    assert "DEVICE" in (linked_out / "outside" / "t.py").read_text()
    assert "DEVICE" in (linked_out / "proj" / "ok.py").read_text()


# --- line endings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        b"import torch\rx = torch.zeros(1).cuda()\ny = 1\n",  # the helper goes after a CR line, in a mostly-LF file
        b"import torch\nimport os\rx = torch.zeros(1).cuda()\ny = 1\n",
        b"import torch\r\nx = torch.zeros(1).cuda()\ry = 1\rz = 2\r",
    ],
)
def test_a_file_mixing_line_endings_gains_no_new_kind_of_ending(tmp_path, monkeypatch, source):
    import re

    enter(tmp_path, monkeypatch)
    (tmp_path / "m.py").write_bytes(source)
    assert run("--fix", "--no-cache", "m.py").exit_code == 0
    after = (tmp_path / "m.py").read_bytes()
    endings = lambda data: set(re.findall(rb"\r\n|\r|\n", data))  # noqa: E731
    assert b"DEVICE" in after and endings(after) <= endings(source)  # no CR and LF joined into a new CRLF
    assert after.replace(b"\r\n", b"\n").replace(b"\r", b"\n").startswith(b"import torch\n")
