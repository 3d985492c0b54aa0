"""``.cuda()`` on a tensor or module: it never reaches MPS (see ``rules/MPS101.md``)."""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.cuda_context import DEVICE
from mpslint.analysis.device_picker import NO_PICKER
from mpslint.checks.base import FixSpec, Rule, replace
from mpslint.checks.guard_rewrite import guarded_outcome
from mpslint.analysis.device_picker import STR_KIND, DeviceRef
from mpslint.checks.rewriting import alone, cuda, for_collective, movable, picker, to_device

_TENSOR_KEYWORDS = ("device", "non_blocking", "memory_format")


class CudaMethod(Rule):
    TRIGGERS = ("cuda",)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if type(func) is not ast.Attribute or func.attr != "cuda":
            return
        if not tensor_cuda_call(self.ctx, node):
            return
        context = cuda(self.ctx)
        follow = _follows_is_cuda(self.ctx, node)
        if follow is not None:
            guard, owner = follow
            where = self.ctx.text(owner)
            lines = [_moved_where(self.ctx, statement, where) for statement in guard.body]
            text = ("\n" + self.ctx.tree.indentation(guard.lineno)).join(lines)
            self.report(node, f"`.cuda()` under `if {where}.is_cuda:` never follows `{where}` to MPS (`is_cuda` is "
                              f"False there), so this stays on the CPU while `{where}` is on mps; use "
                              f"`.to({where}.device)`",
                        fix=FixSpec.safe(f"Use `{'; '.join(lines)}`", replace(guard, text)))
            return
        if context.in_cuda_method(node) or DEVICE in context.guards(node):
            return
        if context.in_mps_aware_choice(node, siblings=False):
            return
        message = "`.cuda()` moves to CUDA only, so this never runs on MPS (and fails without CUDA); use `.to(device)`"
        guarded = guarded_outcome(self.ctx, node)
        if guarded is None:
            fix = self._fix(node)
            if fix is None:
                message += "; not fixed: " + (
                    "it chooses a particular GPU" if not movable(node)
                    else NO_PICKER)
        else:
            # Under `if use_cuda:` (use_cuda = torch.cuda.is_available()) `.to(device)` alone would still never run on a Mac.
            fix = guarded.fix
            if fix is None:
                message += f"; not fixed: a CUDA availability test decides whether it runs, and {guarded.reason}"
        self.report(node, message, fix=fix)

    def _fix(self, node: ast.Call) -> Optional[FixSpec]:
        if not movable(node):
            return None  # `.cuda(0)`, `.cuda(device=rank)`: a chosen GPU is not ours to change
        device = for_collective(self.ctx, node)
        if device is not None:
            # made for all_reduce/all_gather: NCCL needs CUDA, gloo (a Mac) the CPU; MPS tensors reach no backend
            if node.keywords:
                return None
            edit, new = to_device(self.ctx, node, DeviceRef(device, (), STR_KIND))
            return FixSpec.safe(f"Replace `.cuda()` with `.{new}`: the collective's backend decides", edit)
        ref = picker(self.ctx).device_ref(node)
        if ref is None:
            return None
        edit, new = to_device(self.ctx, node, ref)
        return FixSpec.safe(f"Replace `.cuda()` with `.{new}`", edit, *ref.edits)


def _follows_is_cuda(ctx, node: ast.Call):
    """``if t.is_cuda: y = y.cuda()`` (the ``if`` holds nothing but such moves, ``a, b = a.cuda(), b.cuda()``
    too): (the ``if``, ``t``).

    The author meant "put y where t is": ``y = y.to(t.device)`` says so on every device. Where t is on the CPU,
    y (a new host tensor) stays there; where t is on CUDA, y goes to t's GPU, the current one in such code.
    """
    if node.args or node.keywords:
        return None
    statement = ctx.parent(node)
    if type(statement) is ast.Tuple:
        statement = ctx.parent(statement)
    guard = ctx.parent(statement)
    if type(guard) is not ast.If or statement not in guard.body or guard.orelse:
        return None
    test = guard.test
    if type(test) is not ast.Attribute or test.attr != "is_cuda" or not alone(ctx, guard) or "#" in ctx.text(guard):
        return None
    if not all(_moves(each) for each in guard.body):
        return None
    return guard, test.value


def _moves(statement: ast.AST) -> bool:
    """``y = y.cuda()`` or ``a, b = a.cuda(), b.cuda()``: each name moved to CUDA in its own place."""
    if type(statement) is not ast.Assign or len(statement.targets) != 1:
        return False
    target, value = statement.targets[0], statement.value
    if type(target) is ast.Tuple and type(value) is ast.Tuple and len(target.elts) == len(value.elts):
        pairs = list(zip(target.elts, value.elts))
    else:
        pairs = [(target, value)]
    return all(type(name) is ast.Name and type(move) is ast.Call and type(move.func) is ast.Attribute
               and move.func.attr == "cuda" and not move.args and not move.keywords
               and type(move.func.value) is ast.Name and move.func.value.id == name.id for name, move in pairs)


def _moved_where(ctx, statement: ast.Assign, where: str) -> str:
    """The statement with each ``n.cuda()`` written ``n.to(<where>.device)``."""
    target, value = statement.targets[0], statement.value
    moves = value.elts if type(value) is ast.Tuple else [value]
    moved = ", ".join(f"{ctx.text(m.func.value)}.to({where}.device)" for m in moves)
    return f"{ctx.text(target)} = {moved}"


def tensor_cuda_call(ctx, node: ast.Call) -> bool:
    """``x.cuda(...)`` of a tensor or module: not a module's ``cuda`` (numba.cuda, cupy.cuda), and not some other
    object's method (``quantizer.cuda(tensor, meta=...)``)."""
    return ctx.qualify(node.func) is None and _tensor_cuda_signature(node)


def _tensor_cuda_signature(node: ast.Call) -> bool:
    """``Tensor.cuda(device=None, non_blocking=False, memory_format=...)`` / ``Module.cuda(device=None)``."""
    if len(node.args) > 2 or any(type(a) is ast.Starred for a in node.args):
        return False
    return all(k.arg in _TENSOR_KEYWORDS for k in node.keywords)
