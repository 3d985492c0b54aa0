"""A CUDA feature with no MPS equivalent: streams, graphs, NVTX, NCCL, DataParallel, NVML (see ``rules/MPS108.md``)."""

from __future__ import annotations

import ast

from mpslint.analysis.syntax import dotted_name, string_value
from mpslint.checks.base import Rule
from mpslint.analysis.distributed_code import DDP
from mpslint.checks.distributed import INIT, NCCL_MESSAGE, check_ddp, check_init, nccl_fix
from mpslint.checks.rewriting import cuda, cuda_guarded
from mpslint.checks.torch_cuda_api import cuda_member
from mpslint.knowledge import cuda_api

_DATA_PARALLEL = ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel")
_NVML = ("pynvml", "nvidia_smi", "py3nvml")


class CudaOnlyFeature(Rule):
    TRIGGERS = ("cuda", "DataParallel", "CUDA_VISIBLE_DEVICES", "pynvml", "nvidia_smi", "py3nvml", "nccl",
                "init_process_group", "fully_shard", "FullyShardedDataParallel")

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        context = cuda(ctx)
        name = ctx.qualify(node.func) or ""
        member = cuda_member(ctx, node.func)
        if member is not None:
            first = member.split(".", 1)[0]
            why = cuda_api.CUDA_ONLY.get(first)
            if why is not None and context.unguarded(node):
                fix = cuda_guarded(ctx, node) if first in cuda_api.RAISES_WITHOUT_CUDA else None
                self.report(node, f"`torch.cuda.{member}` has no MPS equivalent ({why}); guard it with a CUDA check", fix=fix)
            return
        if name in _DATA_PARALLEL and context.unguarded(node):
            self.report(node, "`nn.DataParallel` is CUDA-only: on MPS it does not even move the model; use `model.to(device)`")
            return
        last = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if last == "add_argument":
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            flags = " ".join(string_value(a) or "" for a in node.args)
            if string_value(default) == "nccl" and "backend" in flags and context.unguarded(node):
                self.report(default, 'the "nccl" backend is CUDA-only: a script run on one Mac fails to start with '
                                     'this default; default to "gloo" when CUDA is not available',
                            fix=nccl_fix(self, default))  # type: ignore[arg-type]
        if last in INIT:
            check_init(self, node, last)
        if name in DDP:
            check_ddp(self, node)
        if last in ("setdefault", "putenv"):
            first = node.args[0] if node.args else (node.keywords[0].value if node.keywords else None)
            if string_value(first) == "CUDA_VISIBLE_DEVICES" and context.unguarded(node):
                self.report(node, "`CUDA_VISIBLE_DEVICES` has no effect on MPS")

    def visit_Assign(self, node: ast.Assign) -> None:
        if string_value(node.value) == "nccl" and any(_backend_name(t) for t in node.targets) \
                and cuda(self.ctx).unguarded(node):
            # `backend = "nccl"`: the default a script later passes to init_process_group
            self.report(node.value, NCCL_MESSAGE, fix=nccl_fix(self, node.value))
        for target in node.targets:
            if type(target) is ast.Subscript and string_value(target.slice) == "CUDA_VISIBLE_DEVICES":
                owner = self.ctx.qualify(target.value) or dotted_name(target.value) or ""
                if owner.endswith("environ") and cuda(self.ctx).unguarded(node):
                    self.report(target, "`CUDA_VISIBLE_DEVICES` has no effect on MPS")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".", 1)[0] in _NVML and cuda(self.ctx).unguarded(node):
                self.report(alias, "NVML (`pynvml`) only sees NVIDIA GPUs; it fails on a Mac")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module if node.module and not node.level else None
        if module and module.split(".", 1)[0] in _NVML and cuda(self.ctx).unguarded(node):
            self.report(node, "NVML (`pynvml`) only sees NVIDIA GPUs; it fails on a Mac")


def _backend_name(target: ast.AST) -> bool:
    name = target.id if type(target) is ast.Name else target.attr if type(target) is ast.Attribute else ""  # type: ignore[attr-defined]
    return "backend" in name.lower()
