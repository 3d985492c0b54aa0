"""MPS features that need a newer torch than the project's floor (see ``rules/MPS504.md``).

With no floor set, the gates assume the newest known torch and stay silent:
a project that states no floor runs whatever is current.
"""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.syntax import argument, keyword, string_value
from mpslint.checks.base import Rule
from mpslint.knowledge import versions

AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
GRAD_SCALER = frozenset({"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"})
COMPILE = frozenset({"torch.compile"})


class FeatureNeedsNewerTorch(Rule):
    TRIGGERS = ("autocast", "GradScaler", "compile")
    # Every path needs "mps" spelled out: a device string, or `_file_uses_mps`.
    REQUIRES = (("mps",),)

    def visit_Call(self, node: ast.Call) -> None:
        floor = self.ctx.settings.torch_version
        if versions.floor_of(floor) >= versions.LATEST_KNOWN:
            return
        name = self.ctx.qualify(node.func)
        if name in AUTOCAST and self._device(node, "device_type") == "mps":
            dtype = keyword(node, "dtype")
            gate = versions.missing("autocast-mps", floor)
            if gate is None and dtype is not None and self.ctx.qualify(dtype) in ("torch.bfloat16",):
                gate = versions.missing("autocast-mps-bfloat16", floor)
            self._report(node, gate, floor)
        elif name in GRAD_SCALER and self._device(node, "device") == "mps":
            self._report(node, versions.missing("grad-scaler-mps", floor), floor)
        elif name in COMPILE and self._targets_mps(node):
            self._report(node, versions.missing("compile-mps", floor), floor)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        floor = self.ctx.settings.torch_version
        if versions.floor_of(floor) >= versions.LATEST_KNOWN:
            return
        for expr in node.decorator_list:
            if self.ctx.qualify(expr) in COMPILE and self._file_uses_mps():
                self._report(expr, versions.missing("compile-mps", floor), floor)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _device(self, call: ast.Call, name: str) -> Optional[str]:
        value = argument(call, name, 0)
        return string_value(value) if value is not None else None

    def _targets_mps(self, call: ast.Call) -> bool:
        backend = argument(call, "backend", None)
        if backend is not None and string_value(backend) not in (None, "inductor"):
            return False  # aot_eager/eager work on mps in every release
        return self._file_uses_mps()

    def _file_uses_mps(self) -> bool:
        source = self.ctx.source
        return any(s in source for s in ('"mps"', "'mps'", "backends.mps", "torch.mps"))

    def _report(self, node: ast.AST, gate, floor) -> None:
        if gate is None:
            return
        self.report(node, f"{gate.what} needs torch >= {versions.text(gate.since)}, but the project supports torch "
                          f"{versions.text(versions.floor_of(floor))}: {gate.why}")
