"""``torch.cuda.FloatTensor`` and the other legacy CUDA tensor types (see ``rules/MPS107.md``)."""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.checks.base import FixSpec, Rule, replace
from mpslint.checks.rewriting import cuda, picker, torch_name
from mpslint.checks.torch_cuda_api import cuda_member
from mpslint.knowledge import cuda_api


class LegacyCudaTensorType(Rule):
    TRIGGERS = ("cuda",)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in cuda_api.LEGACY_TENSOR_TYPES:
            self._check(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        """``torch.set_default_tensor_type("torch.cuda.FloatTensor")``: the type named by a string."""
        value = node.value
        if type(value) is not str or not value.startswith("torch.cuda.") or cuda(self.ctx).cuda_only_module:
            return
        dtype = cuda_api.LEGACY_TENSOR_TYPES.get(value[len("torch.cuda."):])
        call = self.ctx.parent(node)
        if dtype is None or type(call) is not ast.Call or node not in call.args:  # type: ignore[attr-defined]
            return
        if self.ctx.qualify(call.func) not in ("torch.set_default_tensor_type", "torch.Tensor.type") \
                and not (type(call.func) is ast.Attribute and call.func.attr == "type"):  # type: ignore[attr-defined]
            return
        self.report(node, f"`{value}` makes CUDA tensors only; use `dtype=torch.{dtype}` and a device chosen at run "
                          "time (`torch.set_default_dtype`, `torch.set_default_device`)")

    def visit_Name(self, node: ast.Name) -> None:
        if not self.ctx.imports.bindings.get(node.id, "").startswith("torch.cuda."):
            return
        if type(self.ctx.parent(node)) is ast.Attribute:
            return
        self._check(node)

    def _check(self, node: ast.AST) -> None:
        member = cuda_member(self.ctx, node)
        dtype = cuda_api.LEGACY_TENSOR_TYPES.get(member or "")
        if dtype is None or cuda(self.ctx).cuda_only_module:
            return
        self.report(
            node,
            f"`torch.cuda.{member}` creates CUDA tensors only; use `torch.tensor(..., dtype=torch.{dtype}, device=device)`",
            fix=self._fix(node, dtype),
        )

    def _fix(self, node: ast.AST, dtype: str) -> Optional[FixSpec]:
        call = self.ctx.parent(node)
        torch = torch_name(self.ctx)
        if type(call) is not ast.Call or call.func is not node or torch is None or not call.args:
            return None
        if call.keywords or any(type(a) is ast.Starred for a in call.args):
            return None
        values = call.args
        if len(values) == 1 and type(values[0]) in (ast.List, ast.Tuple):
            factory = "tensor"
        elif all(type(v) is ast.Constant and type(v.value) is int for v in values):
            factory = "empty"
        else:
            return None  # a name could be data or a size
        ref = picker(self.ctx).device_ref(call)
        if ref is None:
            return None
        args = ", ".join(self.ctx.text(v) for v in values)
        text = f"{torch}.{factory}({args}, dtype={torch}.{dtype}, device={ref.text})"
        return FixSpec.unsafe(f"Use `{text}`", replace(call, text), *ref.edits)
