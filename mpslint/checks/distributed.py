"""Distributed training on a Mac: what MPS108 reports about ``torch.distributed`` and DDP, and its fixes.

On a Mac there is no NCCL and no backend takes MPS tensors (gloo: CPU and
CUDA only). So: ``"nccl"`` only where CUDA is (gloo otherwise), a backend
chosen when ``init_process_group()`` names none, DDP's ``device_ids`` only for
CUDA, and a report for DDP/FSDP wrapping a model that lives on the
accelerator (MPS there). Every fix keeps what CUDA machines ran.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.syntax import keyword_node, string_value
from mpslint.checks.base import FixSpec, Rule, insert_after, insert_before, replace
from mpslint.analysis.distributed_code import distributed_only, in_distributed_class
from mpslint.checks.rewriting import cuda, torch_name

INIT = ("init_process_group", "new_group")
_MPS_REACHABLE = re.compile(r"""\.cuda\(|["']cuda["']|\bmps\b|pick_device|current_accelerator""")
NCCL_MESSAGE = 'the "nccl" backend is CUDA-only; use "gloo" (with CPU tensors) when not on CUDA'


def nccl_fix(rule: Rule, literal: ast.AST) -> Optional[FixSpec]:
    """``"nccl"`` -> ``"nccl" if torch.cuda.is_available() else "gloo"``: unchanged wherever CUDA is."""
    torch = torch_name(rule.ctx)
    if torch is None:
        return None
    quote = rule.ctx.text(literal)[0]
    gloo = f"{quote}gloo{quote}" if quote in "'\"" else '"gloo"'
    text = f"{rule.ctx.text(literal)} if {torch}.cuda.is_available() else {gloo}"
    return FixSpec.safe(f"Use `{text}`", replace(literal, text))


def check_init(rule: Rule, node: ast.Call, last: str) -> None:
    """``init_process_group("nccl")`` and ``init_process_group()`` with no backend."""
    backend = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "backend"), None)
    context = cuda(rule.ctx)
    if string_value(backend) == "nccl":
        if context.unguarded(node):
            rule.report(backend, NCCL_MESSAGE, fix=nccl_fix(rule, backend))  # type: ignore[arg-type]
        return
    if last != "init_process_group" or backend is not None or any(k.arg is None for k in node.keywords):
        return
    if any(type(a) is ast.Starred for a in node.args) or not context.unguarded(node):
        return
    if not (rule.ctx.qualify(node.func) or "").startswith("torch.distributed."):
        return
    if keyword_node(node, "device_id") is not None:
        return  # the device's own backend (nccl for CUDA): reported where the device is placed
    message = ("no backend: on a Mac torch finds none that works (an error before torch 2.8, then gloo bound to "
               "MPS tensors, which it cannot handle); use gloo where CUDA is not available")
    torch = torch_name(rule.ctx)
    if torch is None:
        rule.report(node, message)
        return
    # None on CUDA keeps torch's own choice there (nccl for CUDA tensors, gloo for CPU ones in older torch)
    text = f'backend=None if {torch}.cuda.is_available() else "gloo"'
    if node.args or node.keywords:
        values = [*node.args, *(k.value for k in node.keywords)]
        last_value = max(values, key=lambda v: (v.end_lineno, v.end_col_offset))  # type: ignore[attr-defined]
        edit = insert_after(last_value, f", {text}")
    else:
        row, column = rule.ctx.tree.stop(node)
        if rule.ctx.tree.line_text(row)[column - 1: column] != ")":
            rule.report(node, message)
            return
        edit = insert_before((row, column - 1), text)
    rule.report(node, message, fix=FixSpec.safe(f"Pass `{text}`", edit))


def check_ddp(rule: Rule, node: ast.Call) -> None:
    """DDP/FSDP: ``device_ids`` only for CUDA; a model on the accelerator reaches no backend on a Mac."""
    ctx = rule.ctx
    context = cuda(ctx)
    if not context.unguarded(node):
        return
    torch = torch_name(ctx)
    if distributed_only(ctx, node) or in_distributed_class(ctx, node):
        return  # `if args.distributed:`, a DDP strategy class: a run a Mac does not make
    source = ctx.source
    cuda_code = any(marker in source for marker in (".cuda(", "torch.cuda", '"cuda', "'cuda", "nccl"))
    for name in ("device_ids", "output_device"):
        item = keyword_node(node, name)
        if item is None or not cuda_code or type(item.value) not in (ast.List, ast.Name, ast.Attribute, ast.Subscript):
            continue  # computed ids (`self.determine_device_ids()`) may name any accelerator's devices
        fix = None
        if torch is not None:
            text = f"{ctx.text(item.value)} if {torch}.cuda.is_available() else None"
            fix = FixSpec.safe(f"Use `{text}`", replace(item.value, text))
        rule.report(item.value, f"`{name}` names CUDA GPUs: DistributedDataParallel raises with it for a model on "
                                "MPS or the CPU; pass it only where CUDA is available", fix=fix)
    model = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg in ("module", "model")), None)
    if model is None:
        return
    if _MPS_REACHABLE.search(ctx.source) and ctx.analysis(DeviceFlow).is_placed(model):
        # placed with `.cuda()` / "cuda" (which the fixes turn into the picker) or a choice that knows MPS: on a Mac
        # the model is on MPS; a CUDA-or-CPU choice (left so in such a file) keeps it on the CPU, where gloo works
        rule.report(node, "DistributedDataParallel/FSDP of a model on the accelerator: on a Mac no backend takes "
                          "MPS tensors (gloo: CPU and CUDA only), so this fails there; wrap the model only when "
                          "distributed on CUDA (`if torch.distributed.is_initialized() and device.type == \"cuda\":`)")




