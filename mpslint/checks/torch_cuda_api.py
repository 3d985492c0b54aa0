"""``torch.cuda.X`` with a device-agnostic or MPS equivalent (see ``rules/MPS104.md``)."""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.device_picker import mps_is_available, mps_module_call
from mpslint.analysis.syntax import dotted_name
from mpslint.checks.base import FixSpec, NodeEdit, Rule, replace
from mpslint.checks.cuda_imports import report_unused_import
from mpslint.checks.rewriting import cuda, cuda_guarded, default_indent, indent_of, lone_statement, picker, torch_name
from mpslint.knowledge import cuda_api
from mpslint.knowledge.cuda_api import RAISES_WITHOUT_CUDA, floor_of


def cuda_member(ctx, node: ast.AST) -> Optional[str]:
    """``X`` for a ``torch.cuda.X`` reference (through any import alias)."""
    name = ctx.qualify(node)
    if name is None or not name.startswith("torch.cuda."):
        return None
    return name[len("torch.cuda."):]


_COMPARISONS = {
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
}


class TorchCudaApi(Rule):
    TRIGGERS = ("cuda",)

    def visit_Call(self, node: ast.Call) -> None:
        member = cuda_member(self.ctx, node.func)
        api = cuda_api.EQUIVALENTS.get(member or "")
        if api is None or not cuda(self.ctx).unguarded(node) or self._same_answer_on_a_mac(node, api):
            return
        self.report(
            node,
            f"`torch.cuda.{api.name}()` only acts on CUDA; use {api.instead}",
            fix=self._fix(node, api),
        )

    def _same_answer_on_a_mac(self, node: ast.Call, api: cuda_api.CudaApi) -> bool:
        """``torch.cuda.device_count() > 1``: a comparison that a Mac answers the same with either API.

        ``torch.cuda.device_count()`` is 0 on a Mac and ``torch.accelerator.device_count()`` is 1:
        a comparison whose answer is the same for 0 and 1 (a multi-GPU test) behaves as it will there.
        """
        if api.name != "device_count":
            return False
        compare = self.ctx.tree.parent(node)
        if type(compare) is not ast.Compare or len(compare.ops) != 1:
            return False
        op = type(compare.ops[0])
        other = compare.comparators[0] if compare.left is node else compare.left
        if type(other) is not ast.Constant or type(other.value) is not int:
            return False
        test = _COMPARISONS.get(op)
        if test is None:
            return False
        if compare.left is node:
            return test(0, other.value) == test(1, other.value)
        return test(other.value, 0) == test(other.value, 1)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        report_unused_import(self, node, lambda base, name: (base, name) == ("torch", "cuda"))

    def _fix(self, node: ast.Call, api: cuda_api.CudaApi) -> Optional[FixSpec]:
        torch = torch_name(self.ctx)
        if torch is None:
            return None
        floor = floor_of(self.ctx.settings.torch_version)
        no_arguments = not node.args and not node.keywords
        if api.fix == "rename":
            if floor < api.since:
                # torch.cuda.set_device(rank) before torch.accelerator: only where CUDA is (it raised elsewhere)
                return cuda_guarded(self.ctx, node) if api.name in RAISES_WITHOUT_CUDA else None
            new = f"{torch}.{api.target}"
            return FixSpec.safe(f"Use `{new}()`", replace(node.func, new))
        if api.fix == "seed":
            return self._fix_seed(node, torch)
        if api.fix == "accelerator-sync" and floor >= api.since and no_arguments:
            statement = lone_statement(self.ctx, node)
            if statement is None:
                return None
            inner = indent_of(self.ctx, statement) + default_indent(self.ctx)
            text = f"if {torch}.accelerator.is_available():\n{inner}{torch}.accelerator.synchronize()"
            return FixSpec.safe("Synchronize the current accelerator, if there is one", replace(statement, text))
        if api.fix in ("accelerator-sync", "per-device"):
            return self._fix_per_device(node, api, torch)
        if api.fix == "none" and api.name in RAISES_WITHOUT_CUDA:
            return cuda_guarded(self.ctx, node)  # reset_peak_memory_stats() next to a migrated synchronize()
        return None

    def _fix_per_device(self, node: ast.Call, api: cuda_api.CudaApi, torch: str) -> Optional[FixSpec]:
        statement = lone_statement(self.ctx, node)
        if statement is None or node.args or node.keywords:
            return None
        ref = picker(self.ctx).device_ref(node)
        if ref is None:
            return None
        # On torch 2.0, `import torch` leaves `torch.mps` out, and before 2.0 there is none: the MPS branch would raise.
        module = mps_module_call(self.ctx, picker(self.ctx).floor)
        if module is None:
            return None
        guard, importing = module
        indent = indent_of(self.ctx, statement)
        step = default_indent(self.ctx)
        mps = "empty_cache" if api.name == "empty_cache" else "synchronize"
        cuda_test, mps_test, edits = f'{ref.type} == "cuda"', f'{ref.type} == "mps"', ref.edits
        if ref.text.endswith("()"):
            # No device name to reuse (`device` is bound to one that may not prefer CUDA): rather than pick the
            # device twice, the CUDA side tests CUDA, as the original ran, and the MPS side follows the device
            # the code holds, or MPS itself.
            devices = picker(self.ctx)
            held = devices.device_in_scope(node)
            cuda_test = f"{torch}.cuda.is_available()"
            mps_test = f'{held.type} == "mps"' if held is not None else mps_is_available(torch, devices.floor)
            edits = ()
        text = (
            f'if {cuda_test}:\n{indent}{step}{self.ctx.text(node)}\n'
            f'{indent}elif {mps_test}{guard}:\n{indent}{step}{torch}.mps.{mps}()'
        )
        return FixSpec.safe(f"Call it on CUDA, and `torch.mps.{mps}()` on MPS", replace(statement, text), *edits,
                            *importing)

    def _fix_seed(self, node: ast.Call, torch: str) -> Optional[FixSpec]:
        if len(node.args) != 1 or node.keywords or type(node.args[0]) is ast.Starred:
            return None
        seed = self.ctx.text(node.args[0])
        statement = lone_statement(self.ctx, node)
        if statement is not None:
            previous = self._seeded_before(statement, seed)
            if previous is not None:
                # torch.manual_seed(s) just before already seeded CUDA (and MPS): this line is redundant.
                return FixSpec.safe(
                    f"Remove it: `{torch}.manual_seed({seed})` already seeds every device",
                    NodeEdit("", (previous, "line_after"), (statement, "line_after")),
                )
        # Also reseeds the CPU generator: the random stream of CPU code changes.
        return FixSpec.unsafe(f"Use `{torch}.manual_seed({seed})`", replace(node.func, f"{torch}.manual_seed"))

    def _seeded_before(self, statement: ast.Expr, seed: str) -> Optional[ast.AST]:
        """The previous statement, when every statement since a ``torch.manual_seed(seed)`` only seeds."""
        place = self.ctx.tree.block_of(statement)
        if place is None:
            return None
        block, index = place
        for earlier in reversed(block[:index]):
            call = earlier.value if type(earlier) is ast.Expr and type(earlier.value) is ast.Call else None
            if call is None or lone_statement(self.ctx, call) is None:
                return None
            name = self.ctx.qualify(call.func) or dotted_name(call.func) or ""
            if not name.endswith("seed") and not name.endswith("seed_all"):
                return None
            if name == "torch.manual_seed" and len(call.args) == 1 and not call.keywords \
                    and self.ctx.text(call.args[0]) == seed:
                return block[index - 1]
        return None
