"""The fork start method crashes Objective-C/Metal processes on macOS (see ``rules/MPS402.md``)."""

from __future__ import annotations

import ast
import re
from typing import Optional

from mpslint.analysis.syntax import argument, keyword, string_value
from mpslint.checks.base import FixSpec, Rule, replace
from mpslint.checks.workers import PLATFORM_WORDS, guarded_by

START_METHOD_CALLS = frozenset({
    "multiprocessing.set_start_method", "multiprocessing.get_context",
    "torch.multiprocessing.set_start_method", "torch.multiprocessing.get_context",
    "multiprocessing.context.BaseContext.get_context",
})


class ForkStartMethod(Rule):
    TRIGGERS = ("fork",)

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        name = ctx.qualify(node.func)
        if name == "os.fork":
            if not guarded_by(ctx, node, PLATFORM_WORDS):
                self.report(node, "`os.fork()` after torch (Metal/Objective-C) has initialised crashes the child on "
                                  "macOS; start workers with the spawn method instead")
            return
        method = argument(node, "method", 0) if name in START_METHOD_CALLS else None
        value = method or keyword(node, "multiprocessing_context") or keyword(node, "mp_context")
        if type(value) is ast.IfExp:
            value = _fork_when_mps(ctx, value)
            if value is not None and not guarded_by(ctx, node, PLATFORM_WORDS):
                self.report(value, "'fork' is chosen exactly when MPS is available, that is on a Mac, where fork crashes "
                                   "Objective-C/Metal runtimes (the default there is 'spawn'); use 'spawn'",
                            fix=FixSpec.unsafe("Use the 'spawn' start method",
                                               replace(value, ctx.text(value).replace("fork", "spawn"))))
            return
        if value is None or string_value(value) != "fork" or guarded_by(ctx, node, PLATFORM_WORDS):
            return
        spawn = ctx.text(value).replace("fork", "spawn")
        self.report(value, "the 'fork' start method crashes Objective-C/Metal runtimes on macOS (the default "
                           "there is 'spawn'); use 'spawn'",
                    fix=FixSpec.unsafe("Use the 'spawn' start method", replace(value, spawn)))


def _fork_when_mps(ctx, choice: ast.IfExp) -> Optional[ast.AST]:
    """The ``"fork"`` of ``"fork" if <MPS test> else ...`` (or ``... if not <MPS test> else "fork"``)."""
    test, negated = choice.test, False
    if type(test) is ast.UnaryOp and type(test.op) is ast.Not:
        test, negated = test.operand, True
    if not _tests_mps(ctx, test):
        return None
    branch = choice.orelse if negated else choice.body
    return branch if string_value(branch) == "fork" else None


def _tests_mps(ctx, test: ast.AST) -> bool:
    """``torch.backends.mps.is_available()``/``is_built()``, ``torch.mps.is_available()``, ``device.type == "mps"``."""
    for node in ast.walk(test):
        if type(node) is ast.Call and re.search(r"(^|\.)mps\.(is_available|is_built)$", ctx.qualify(node.func) or ""):
            return True
        if string_value(node) == "mps":
            return True
    return False
