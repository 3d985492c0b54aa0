"""``.numpy()`` on a tensor that may live on the accelerator (see ``rules/MPS301.md``)."""

from __future__ import annotations

import ast

from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.syntax import method_name
from mpslint.checks.base import FixSpec, Rule, attribute_dot, insert_before, short


class NumpyOnDeviceTensor(Rule):
    TRIGGERS = (".numpy(",)

    def visit_Call(self, node: ast.Call) -> None:
        if method_name(node) != "numpy" or node.args or node.keywords or self.ctx.qualify(node.func) is not None:
            return
        flow = self.ctx.analysis(DeviceFlow)
        tensor = node.func.value  # type: ignore[attr-defined]
        if not flow.is_device(tensor):
            return
        insert = ".detach().cpu()" if flow.may_require_grad(tensor) else ".cpu()"
        self.report(
            node,
            f"`{short(self.ctx, node)}` fails on an MPS tensor (\"can't convert mps:0 device type tensor to "
            f"numpy\"); copy it to the host first with `{insert}`",
            fix=FixSpec.safe(f"Insert `{insert}` before `.numpy()`", insert_before(attribute_dot(self.ctx, node.func), insert)),
        )
