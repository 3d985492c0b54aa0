"""Test-only rules for the CLI, runner and output tests, independent of the real rule families.

MPS990 reports ``x.cuda()`` with a safe fix (``x.to(DEVICE)``), MPS991 reports
``x.double()`` with an unsafe fix (``x.float()``), MPS992 reports
``torch.cuda.synchronize()`` with no fix, MPS993 crashes on ``boom()``, MPS994 reports ``compile_me()`` with the
torch-version floor in its message (to observe settings).
"""

from __future__ import annotations

import ast
import signal

import pytest
from click.testing import CliRunner

from mpslint import catalog, registry
from mpslint.checks.base import FixSpec, Rule, replace
from mpslint.cli import main

# This module is itself the rule family: spawned pool workers import it by name (tests/ is on sys.path).
FAMILY = "clitools"


def _method(node: ast.Call, name: str) -> bool:
    return type(node.func) is ast.Attribute and node.func.attr == name and not node.args and not node.keywords


class CudaCall(Rule):
    CODE = "MPS990"
    NAME = "test-cuda-call"
    TRIGGERS = ("cuda",)

    def visit_Call(self, node: ast.Call) -> None:
        if _method(node, "cuda"):
            fixed = f"{self.ctx.text(node.func.value)}.to(DEVICE)"
            self.report(node, "`.cuda()` only works on CUDA", fix=FixSpec.safe("Replace with `.to(DEVICE)`", replace(node, fixed)))


class DoubleCall(Rule):
    CODE = "MPS991"
    NAME = "test-double-call"
    TRIGGERS = ("double",)

    def visit_Call(self, node: ast.Call) -> None:
        if _method(node, "double"):
            fixed = f"{self.ctx.text(node.func.value)}.float()"
            self.report(node, "float64 is not supported on MPS", fix=FixSpec.unsafe("Use float32", replace(node, fixed)))


class Synchronize(Rule):
    CODE = "MPS992"
    NAME = "test-synchronize"
    TRIGGERS = ("synchronize",)

    def visit_Call(self, node: ast.Call) -> None:
        if self.ctx.qualify(node.func) == "torch.cuda.synchronize":
            self.report(node, "`torch.cuda.synchronize()` is CUDA-only")


class Crash(Rule):
    CODE = "MPS993"
    NAME = "test-crash"
    TRIGGERS = ("boom",)

    def visit_Call(self, node: ast.Call) -> None:
        if type(node.func) is ast.Name and node.func.id == "boom":
            raise RuntimeError("the test rule crashed on purpose")


class VersionProbe(Rule):
    CODE = "MPS994"
    NAME = "test-version-probe"
    TRIGGERS = ("compile_me",)

    def visit_Call(self, node: ast.Call) -> None:
        if type(node.func) is ast.Name and node.func.id == "compile_me":
            version = self.ctx.settings.torch_version
            shown = "unset" if version is None else ".".join(map(str, version))
            self.report(node, f"torch-version floor is {shown}")


RULES = [CudaCall, DoubleCall, Synchronize, Crash, VersionProbe]


def _clear() -> None:
    for cached in (registry.rule_classes, registry.rule_codes, registry.codes_by_name, registry.name_of, catalog.load):
        cached.cache_clear()


@pytest.fixture
def fake_rules(monkeypatch):
    """Replace every rule family by the test rules above (in this process only)."""
    monkeypatch.setattr(registry, "FAMILIES", (FAMILY,))
    _clear()
    yield RULES
    monkeypatch.undo()
    _clear()


def enter(directory, monkeypatch):
    """Work in ``directory``, free of the user's output and cache settings."""
    monkeypatch.chdir(directory)
    monkeypatch.delenv("MPSLINT_OUTPUT_FORMAT", raising=False)
    monkeypatch.delenv("MPSLINT_CACHE_DIR", raising=False)
    return directory


@pytest.fixture
def project(tmp_path, monkeypatch, fake_rules):
    """A working directory with the test rules."""
    return enter(tmp_path, monkeypatch)


def ctrl_c_as_in_a_terminal() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT: Ctrl-C acts as it does from a terminal.

    A test run started in the background by a non-interactive shell (``pytest &``,
    some CI runners) ignores SIGINT, and children inherit that; Python then
    never installs its KeyboardInterrupt handler, and the test would prove nothing.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli_runner() -> CliRunner:
    """A runner that keeps stderr apart from stdout on every click the project supports.

    click 8.2 (Python >= 3.10) always does; click 8.1, the last for Python 3.9,
    mixes stderr into stdout unless told not to, and refuses ``result.stderr``.
    """
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 has no such option
        return CliRunner()


def run(*args, input=None, env=None):
    """The CLI in this process; an exception propagates (a traceback is a failure, not output)."""
    return cli_runner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)
