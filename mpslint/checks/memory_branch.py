"""CUDA-only memory management in code that runs on mps (see ``rules/MPS113.md``).

MPS104 reports ``torch.cuda.empty_cache()`` and the memory statistics when they
run unguarded; under a CUDA test (``if torch.cuda.is_available():``,
``if device.type == "cuda":``) it is silent, because the call no longer fails.
On a Mac such a branch does nothing: a model unloaded with ``del model`` keeps
its memory in MPS's cache, and memory statistics print nothing. This rule
reports that branch when the file shows it runs on mps (it names ``mps``, even in
a help text: ``file_names_mps``) and
gives MPS no branch of its own: the ``if`` chain does not mention ``mps``, and
the enclosing function (or module) never calls ``torch.mps``.
"""

from __future__ import annotations

import ast

from mpslint.analysis.mps_device import file_names_mps
from mpslint.checks.base import Rule
from mpslint.checks.rewriting import cuda
from mpslint.checks.torch_cuda_api import cuda_member
from mpslint.knowledge import cuda_api

RELEASE = "empty_cache"
# Memory statistics a script prints or logs (resetting a counter prints nothing, so it is left alone).
STATISTICS = frozenset({"memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                        "memory_stats", "mem_get_info", "memory_summary"})


class MemoryWithoutMpsBranch(Rule):
    TRIGGERS = ("cuda",)
    REQUIRES = (("mps",),)

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node, cuda_member(self.ctx, node.func))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        """``get_max_memory = torch.cuda.max_memory_allocated if device_type == "cuda" else lambda: 0`` (nanochat):
        the function itself, chosen under a CUDA test, reads 0 on a Mac."""
        parent = self.ctx.tree.parent(node)
        if type(parent) is ast.IfExp and parent.body is node:
            member = cuda_member(self.ctx, node)
            if member in STATISTICS:
                self._check(node, member)

    def _check(self, node: ast.AST, member) -> None:
        if member != RELEASE and member not in STATISTICS:
            return
        context = cuda(self.ctx)
        if not context.guards(node) or context.in_mps_aware_choice(node) or context.cuda_only_module:
            return
        if not file_names_mps(self.ctx) or self._calls_torch_mps(node):
            return
        if member == RELEASE:
            self.report(node, "`torch.cuda.empty_cache()` runs only on CUDA here, in code that runs on mps: on a Mac "
                              "the memory of what was freed stays in MPS's cache; give MPS its branch "
                              "(`elif device.type == \"mps\": torch.mps.empty_cache()`)")
        else:
            api = cuda_api.EQUIVALENTS.get(member)
            instead = api.instead if api is not None else "its MPS twin"
            if type(node) is ast.Attribute:
                self.report(node, f"`torch.cuda.{member}` is chosen only on CUDA here, in code that runs on mps: on a "
                                  f"Mac the other branch answers (0 or nothing); give MPS its branch ({instead})")
            else:
                self.report(node, f"`torch.cuda.{member}()` is read only on CUDA here, in code that runs on mps: on a "
                                  f"Mac the memory report is empty; give MPS its branch ({instead})")

    def _calls_torch_mps(self, node: ast.AST) -> bool:
        """The enclosing function (or the module) calls some ``torch.mps`` function: MPS has its own branch."""
        tree = self.ctx.tree
        owner = next((a for a in tree.ancestors(node) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))),
                     tree.module)
        for sub in ast.walk(owner):
            if type(sub) is ast.Call and (self.ctx.qualify(sub.func) or "").startswith("torch.mps."):  # type: ignore[attr-defined]
                return True
        return False
