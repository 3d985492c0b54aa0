"""``torch.backends.cudnn.deterministic = True``: determinism asked of cuDNN, which MPS does not have (see ``rules/MPS106.md``).

The other cuDNN and CUDA matmul settings (``benchmark``, ``enabled``,
``allow_tf32``) tune CUDA and change nothing on MPS: they are harmless there,
so they are not findings (on real CUDA repositories they were most of this
rule's noise).
"""

from __future__ import annotations

import ast

from mpslint.checks.base import Rule
from mpslint.checks.rewriting import cuda

_SETTINGS = ("torch.backends.cudnn.deterministic",)


class CudnnSetting(Rule):
    TRIGGERS = ("deterministic",)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check(target, node)

    def _check(self, target: ast.AST, statement: ast.Assign) -> None:
        name = self.ctx.qualify(target) if type(target) is ast.Attribute else None
        if name not in _SETTINGS:
            return
        value = statement.value
        if not (type(value) is ast.Constant and value.value is True) and type(value) in (ast.Constant,):
            return  # `= False`: nothing is promised
        if not cuda(self.ctx).unguarded(statement):
            return
        self.report(target, "`torch.backends.cudnn.deterministic` only makes cuDNN deterministic; on MPS the run is not "
                            "made deterministic: use `torch.use_deterministic_algorithms(True, warn_only=True)`, which covers every "
                            "device (without `warn_only`, ops with no deterministic MPS kernel raise, pytorch/pytorch#185061)")
