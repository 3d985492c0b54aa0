"""``torch.backends.cudnn.*`` settings, which have no effect on MPS (see ``rules/MPS106.md``)."""

from __future__ import annotations

import ast

from mpslint.checks.base import Rule
from mpslint.checks.rewriting import cuda

_CUDA_MATMUL = ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction")
_HINTS = {
    "cudnn.deterministic": "; for reproducible results on every device use `torch.use_deterministic_algorithms(True)`",
    "cuda.matmul.allow_tf32": "; `torch.set_float32_matmul_precision()` is the device-agnostic setting",
}


class CudnnSetting(Rule):
    TRIGGERS = ("cudnn", "cuda")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check(target, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check(node.target, node)

    def _check(self, target: ast.AST, statement: ast.AST) -> None:
        name = self.ctx.qualify(target) if type(target) is ast.Attribute else None
        if name is None:
            return
        if not name.startswith("torch.backends.cudnn.") and name not in _CUDA_MATMUL:
            return
        setting = name[len("torch.backends."):]
        if not cuda(self.ctx).unguarded(statement):
            return
        hint = _HINTS.get(setting, '; guard it with `if device.type == "cuda":` to say so')
        self.report(target, f"`torch.backends.{setting}` only affects CUDA and has no effect on MPS{hint}")
