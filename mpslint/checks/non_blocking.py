"""``non_blocking=True`` on a copy from the device to the host (see ``rules/MPS304.md``)."""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.syntax import keyword_node, method_name
from mpslint.checks.base import FixSpec, Rule, replace, short


class NonBlockingToHost(Rule):
    TRIGGERS = ("non_blocking",)

    def visit_Call(self, node: ast.Call) -> None:
        flag = keyword_node(node, "non_blocking")
        if flag is None or not (type(flag.value) is ast.Constant and flag.value.value is True):
            return
        method = method_name(node)
        if method is None or self.ctx.qualify(node.func) is not None:
            return
        flow = self.ctx.analysis(DeviceFlow)
        receiver = node.func.value  # type: ignore[attr-defined]
        if method == "to":
            target = flow.to_target(node)
            if target is None or not flow.is_cpu(target) or flow.is_host_tensor(receiver):
                return
        elif method == "copy_":
            source = node.args[0] if node.args and type(node.args[0]) is not ast.Starred else None
            if source is None or not flow.is_device(source) or not flow.is_host_tensor(receiver):
                return
        else:
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` copies from the device to the host without waiting: on MPS the host can read "
            "the memory before the data arrives (silent garbage); drop `non_blocking=True`",
            fix=_drop_flag(node),
        )


def _drop_flag(call: ast.Call):
    """The call without its ``non_blocking=True``, with LibCST keeping the rest of the argument list's layout."""

    def build(fx) -> Optional[FixSpec]:
        import libcst as cst

        node = fx.node(call)
        if node is None:
            return None
        args = [a for a in node.args if not (a.keyword is not None and a.keyword.value == "non_blocking")]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return FixSpec.safe("Drop `non_blocking=True`", replace(node, node.with_changes(args=args)))

    return build
