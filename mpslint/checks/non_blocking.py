"""``non_blocking=True`` on a copy between the host and mps (see ``rules/MPS304.md``).

Two directions:

- device to host: ``t.to("cpu", non_blocking=True)``, ``host.copy_(device_tensor, non_blocking=True)``;
- host to a device that may be ``mps``: ``batch.to(device, non_blocking=True)`` where the device is
  may be ``mps`` as ``analysis/mps_device.py`` decides (spelled ``"mps"``, a name or ``self.device``
  assigned a cuda -> mps -> cpu choice, a ``get_device()`` helper that names ``mps``). A copy to a device this file does not show may be ``mps`` (``"cuda"``, a
  parameter, ``args.device``) is not reported, nor one under a CUDA test, nor one whose tensor is
  already on the device.
"""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.cuda_context import CudaContext
from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.mps_device import is_accelerator, literal_device_type, may_be_mps
from mpslint.analysis.syntax import keyword, keyword_node, method_name
from mpslint.checks.base import FixSpec, Rule, replace, short
from mpslint.checks.rewriting import torch_name

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
            if target is None:
                return
            if not flow.is_cpu(target):
                self._to_mps(node, target, receiver, flow)
                return
            if flow.is_host_tensor(receiver):
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

    def _to_mps(self, node: ast.Call, target: ast.AST, receiver: ast.AST, flow: DeviceFlow) -> None:
        literal = literal_device_type(self.ctx, target)
        if not may_be_mps(self.ctx, target):
            return
        if flow.is_device(receiver) or self.ctx.analysis(CudaContext).guards(node):
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` copies to a device that may be mps without waiting: on MPS a non-blocking "
            "copy from the host can read the source after it changes (random values, black images); "
            "keep `non_blocking=True` for CUDA only",
            fix=_drop_flag(node) if literal == "mps" else _cuda_only_flag(node, target),
        )



def _is_device_object(ctx, target: ast.AST, flow: DeviceFlow) -> bool:
    """``target`` holds a ``torch.device`` (so ``.type`` works): every assignment is ``torch.device(...)``/``pick_device()``."""
    if type(target) is not ast.Name:
        return False
    values = [b.value for b in flow.visible(target.id, target) if b.how == "assign" and not b.path]
    if not values:
        return False
    for value in values:
        if type(value) is not ast.Call:
            return False
        name = ctx.qualify(value.func) or (value.func.id if type(value.func) is ast.Name else "")  # type: ignore[attr-defined]
        if name not in ("torch.device", "pick_device"):
            return False
    return True


def _is_accelerator_device(ctx, target: ast.AST) -> bool:
    """``accelerator.device`` of an ``accelerate.Accelerator``: a ``torch.device``."""
    return type(target) is ast.Attribute and target.attr == "device" and type(target.value) is ast.Name \
        and is_accelerator(ctx, target.value)  # type: ignore[attr-defined]


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


def _cuda_only_flag(call: ast.Call, target: ast.AST):
    """``non_blocking=True`` -> ``non_blocking=device.type == "cuda"``, as MPS101's fix writes it."""

    def build(fx) -> Optional[FixSpec]:
        ctx = fx.ctx if hasattr(fx, "ctx") else None
        flag = keyword(call, "non_blocking")
        if ctx is None or flag is None:
            return None
        code = ctx.text(target)
        if _is_device_object(ctx, target, ctx.analysis(DeviceFlow)) or _is_accelerator_device(ctx, target):
            condition = f'{code}.type == "cuda"'
        else:
            torch = torch_name(ctx)
            if torch is None:
                return None
            condition = f'{torch}.device({code}).type == "cuda"'
        return FixSpec.safe("Keep `non_blocking=True` for CUDA only", replace(flag, condition))

    return build
