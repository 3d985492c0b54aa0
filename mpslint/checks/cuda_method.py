"""``.cuda()`` on a tensor or module: it never reaches MPS (see ``rules/MPS101.md``)."""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.cuda_context import DEVICE
from mpslint.checks.base import FixSpec, Rule, attribute_name_start, replace_span
from mpslint.checks.rewriting import combined, cuda, picker

_TENSOR_KEYWORDS = ("device", "non_blocking", "memory_format")


class CudaMethod(Rule):
    TRIGGERS = ("cuda",)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if type(func) is not ast.Attribute or func.attr != "cuda":
            return
        if self.ctx.qualify(func) is not None:  # a module's `cuda` (numba.cuda, cupy.cuda), not a tensor's
            return
        if not _tensor_cuda_signature(node):
            return  # `quantizer.cuda(tensor, meta=...)`: some other object's method
        context = cuda(self.ctx)
        if context.in_cuda_method(node) or DEVICE in context.guards(node):
            return
        if context.in_mps_aware_choice(node, siblings=False):
            return
        self.report(
            node,
            "`.cuda()` moves to CUDA only, so this never runs on MPS (and fails without CUDA); use `.to(device)`",
            fix=self._fix(node),
        )

    def _fix(self, node: ast.Call) -> Optional[FixSpec]:
        if node.args or any(k.arg not in ("non_blocking", "memory_format") for k in node.keywords):
            return None  # `.cuda(0)`, `.cuda(device=rank)`: a chosen GPU is not ours to change
        ref = picker(self.ctx).device_ref(node)
        if ref is None:
            return None
        parts = [ref.text]
        for item in node.keywords:
            if item.arg == "non_blocking":
                # Asynchronous copies between the host and MPS can corrupt data: keep them on CUDA only.
                code = self.ctx.text(item.value)
                parts.append("non_blocking=" + combined(item.value, code, f'{ref.type} == "cuda"'))
        for item in node.keywords:
            if item.arg == "memory_format":
                parts.append("memory_format=" + self.ctx.text(item.value))
        new = f"to({', '.join(parts)})"
        start = attribute_name_start(self.ctx, node.func)  # type: ignore[arg-type]
        return FixSpec.safe(f"Replace `.cuda()` with `.{new}`", replace_span(start, node, new), *ref.edits)


def _tensor_cuda_signature(node: ast.Call) -> bool:
    """``Tensor.cuda(device=None, non_blocking=False, memory_format=...)`` / ``Module.cuda(device=None)``."""
    if len(node.args) > 2 or any(type(a) is ast.Starred for a in node.args):
        return False
    return all(k.arg in _TENSOR_KEYWORDS for k in node.keywords)
