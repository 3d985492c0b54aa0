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
