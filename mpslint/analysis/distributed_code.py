"""Code written for distributed training: what a device fix must leave to one GPU per process.

Shared by the CUDA rules (MPS102, MPS103), the guard rewrites and MPS108's
distributed checks, which would otherwise import one another.
"""

from __future__ import annotations

import ast

DDP = frozenset({
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard",
})

DISTRIBUTED_WORDS = ("distributed", "world_size", "is_initialized", "ddp", "local_rank", "multiprocessing", "rank",
                     "nodes")


def distributed_only(ctx, node: ast.AST) -> bool:
    """Under a test about distributed training, or in a function whose name says so: one GPU per process by design."""
    child = node
    for parent in ctx.ancestors(node):
        cls = type(parent)
        if cls in (ast.If, ast.IfExp) and child is not parent.test:  # type: ignore[attr-defined]
            if any(word in ctx.text(parent.test).lower() for word in DISTRIBUTED_WORDS):  # type: ignore[attr-defined]
                return True
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef) and any(w in parent.name.lower() for w in ("dist", "ddp", "worker")):  # type: ignore[attr-defined]
            return True
        child = parent
    return False


def in_distributed_class(ctx, node: ast.AST) -> bool:
    """In a class whose name says it is the distributed code path (``DDPStrategy``, ``FSDPWrapper``)."""
    for parent in ctx.ancestors(node):
        if type(parent) is ast.ClassDef:
            name = parent.name.lower()
            return any(word in name for word in ("ddp", "fsdp", "distributed", "parallel"))
    return False


DDP_BLOCKS = "the model goes into DistributedDataParallel/FSDP, which no backend runs on MPS: on a Mac it runs on the CPU"


class UnguardedDdp:
    """Per file: ``ctx.analysis(UnguardedDdp).found``: a DDP/FSDP wrap a Mac run would make.

    In such a file a device choice that falls back to the CPU is not given MPS: on a Mac the original ran on the CPU
    with gloo, and with the model on MPS the wrap would fail (the wrap itself is reported).
    """

    def __init__(self, ctx) -> None:
        self.found = False
        if "DistributedDataParallel" not in ctx.source and "DDP" not in ctx.source and "FSDP" not in ctx.source \
                and "fully_shard" not in ctx.source:
            return
        for node in ctx.tree.of_type(ast.Call):
            if (ctx.qualify(node.func) or "") in DDP and not distributed_only(ctx, node) \
                    and not in_distributed_class(ctx, node):  # type: ignore[attr-defined]
                self.found = True
                return
