"""MPS2xx: host syncs that run on every step of a training or evaluation loop.

On MPS (as on CUDA) kernels are queued and run asynchronously; reading a
device value on the host drains the queue and waits. Once per epoch that is
free; once per step it serialises host and device. Each rule asks two shared
analyses: ``HotLoops`` (does this run every step?) and ``DeviceFlow`` (is this
value on the accelerator?). Code in an interval-guarded branch
(``if step % N == 0``) is reported only with ``report-interval-guarded``.
See ``rules/MPS201.md`` to ``rules/MPS204.md``.
"""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.device_flow import DEVICE_EVIDENCE, DeviceFlow
from mpslint.analysis.loops import LOOP_KEYWORDS, STEP_EVIDENCE, HotLoops, Loop
from mpslint.analysis.project import facts
from mpslint.analysis.syntax import dotted_name, first_argument, last_name, method_name, positional, positional_at
from mpslint.checks.base import Rule, short

SYNCHRONIZE = frozenset(
    ("torch.cuda.synchronize", "torch.mps.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize")
)
DATA_DEPENDENT_FUNCTIONS = frozenset(
    ("torch.nonzero", "torch.masked_select", "torch.unique", "torch.unique_consecutive", "torch.argwhere")
)
DATA_DEPENDENT_METHODS = frozenset(("nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"))
BOOL_METHODS = frozenset(
    "bool isnan isinf isfinite isneginf isposinf logical_and logical_or logical_not logical_xor eq ne gt ge lt le".split()
)


class _HotLoopRule(Rule):
    @property
    def flow(self) -> DeviceFlow:
        return self.ctx.analysis(DeviceFlow)

    def loop(self, node: ast.AST) -> Optional[Loop]:
        return self.ctx.analysis(HotLoops).per_step(node)

    def helper_read(self, node: ast.Call, how: str) -> Optional[Loop]:
        """The loop, when ``node`` calls every step a helper of another module that reads an argument on the
        host (``how``: ``facts.HOST_READ``/``HOST_COPY``) and passes it a device tensor; else None.

        A helper of this file is not asked: the hot loops follow it, and its own read is reported where it is.
        """
        func = node.func
        if type(func) is ast.Name:
            name = func.id  # type: ignore[attr-defined]
        elif type(func) is ast.Attribute and type(func.value) is ast.Name:  # type: ignore[attr-defined]
            name = func.value.id  # type: ignore[attr-defined]
        else:
            return None
        # Only a name imported from the project can be another module's helper: most calls (`torch.zeros`,
        # `np.mean`, `print`) are ruled out without a question.
        project = self.ctx.project
        if project is None or not project.may_be_from_project(name):
            return None
        # Then the loop: only a call made every step is worth reading another module for (and depending on it).
        loop = self.loop(node)
        if loop is None or self.ctx.analysis(HotLoops).local_callees(node):
            return None
        flow = self.flow
        read = facts.host_read_of(flow.returned_fact(node))
        if read is None or read[0] != how:
            return None
        values = [positional_at(node, position) for position in read[1]]
        return loop if any(v is not None and flow.is_device(v) for v in values) else None

    def report_helper_read(self, node: ast.Call, loop: Loop, what: str) -> None:
        helper = dotted_name(node.func) or "the helper"
        self.report(
            node,
            f"`{short(self.ctx, node)}` in the {loop.kind} {what} (`{helper.rsplit('.', 1)[-1]}` does) and waits "
            "for the device every step; keep the values on the device (accumulate there) and read them every N steps",
        )


class ItemInHotLoop(_HotLoopRule):
    TRIGGERS = ("item", "tolist", "float", "int")
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE, DEVICE_EVIDENCE)

    def visit_Call(self, node: ast.Call) -> None:
        method = method_name(node)
        func = node.func
        if method in ("item", "tolist") and not node.args and not node.keywords and self.ctx.qualify(func) is None:
            tensor = func.value  # type: ignore[attr-defined]
        elif type(func) is ast.Name and func.id in ("float", "int") and len(node.args) + len(node.keywords) == 1:
            tensor = first_argument(node)
        else:
            loop = self.helper_read(node, facts.HOST_READ)
            if loop is not None:
                self.report_helper_read(node, loop, "reads a device tensor on the host")
            return
        loop = self.loop(node)
        if loop is None:
            return
        flow = self.flow
        # `.item()` / `.tolist()` say their receiver is a tensor: an unseen helper's result counts
        if not (flow.read_as_device_tensor(tensor) if method else flow.is_device(tensor)):
            return
        what = "copies the tensor to the host and " if method == "tolist" else ""
        self.report(
            node,
            f"`{short(self.ctx, node)}` in the {loop.kind} {what}waits for the device every step; "
            "accumulate on the device and read it every N steps",
        )


class HostCopyInHotLoop(_HotLoopRule):
    TRIGGERS = ("cpu", "array", "device", "numpy")  # `.to(t.device)` of a host tensor is a move to the CPU
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE, DEVICE_EVIDENCE)

    def visit_Call(self, node: ast.Call) -> None:
        method = method_name(node)
        if method not in ("cpu", "to", "numpy") and last_name(node.func) not in ("array", "asarray"):
            loop = self.helper_read(node, facts.HOST_COPY)
            if loop is not None:
                self.report_helper_read(node, loop, "copies a device tensor to the host")
            return
        loop = self.loop(node)
        if loop is None:
            return
        flow = self.flow
        qualified = self.ctx.qualify(node.func)
        if method == "cpu" and qualified is None:
            tensor = node.func.value  # type: ignore[attr-defined]
            if type(tensor) is ast.Call and method_name(tensor) == "detach" and flow.read_as_device_tensor(tensor):
                self._report_copy(node, loop)  # `metric_fn(y_pred, y).detach().cpu()`: a tensor, as `.detach()` says
                return
        elif method == "numpy" and qualified is None and not node.args and not node.keywords:
            # `.numpy()` of a device tensor raises on MPS (MPS301); the `.cpu()` it needs, which MPS301's
            # fix inserts, is a copy every step: reported here too, so the fixed code reports no new finding
            tensor = node.func.value  # type: ignore[attr-defined]
            if flow.is_device(tensor):
                self.report(
                    node,
                    f"`{short(self.ctx, node)}` in the {loop.kind} needs a copy to the host, which waits for the "
                    "device every step; keep the values on the device (accumulate there) and copy them every N "
                    "steps or after the loop",
                )
            return
        elif method == "to" and qualified is None:
            target = flow.to_target(node)
            if target is None or not flow.is_cpu(target):
                return
            tensor = node.func.value  # type: ignore[attr-defined]
        elif (qualified or "") in ("numpy.array", "numpy.asarray") and (node.args or node.keywords):
            tensor = first_argument(node)
        else:
            return
        if not flow.is_device(tensor):
            return
        self._report_copy(node, loop)

    def _report_copy(self, node: ast.Call, loop: Loop) -> None:
        self.report(
            node,
            f"`{short(self.ctx, node)}` in the {loop.kind} copies to the host and waits for the device every step; "
            "keep the values on the device (accumulate there) and copy them every N steps or after the loop",
        )


class SynchronizeInHotLoop(_HotLoopRule):
    TRIGGERS = ("synchronize",)
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE)

    def visit_Call(self, node: ast.Call) -> None:
        if not self._is_synchronize(node) or _another_branch_synchronizes(self.ctx, node):
            return
        loop = self.loop(node)
        if loop is None:
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` in the {loop.kind} waits for all queued device work every step; "
            "synchronize only where you read a timer, every N steps or after the loop",
        )

    def _is_synchronize(self, node: ast.Call) -> bool:
        return is_synchronize(self.ctx, node)


def _another_branch_synchronizes(ctx, node: ast.Call) -> bool:
    """``node`` is in the ``elif``/``else`` of an if-chain whose first branch synchronizes.

    ``if device.type == "cuda": torch.cuda.synchronize()`` /
    ``elif device.type == "mps": torch.mps.synchronize()`` is one wait per step
    (the one MPS104's fix writes): it is reported once, at its first branch.
    """
    statement = ctx.tree.statement_of(node)
    place = ctx.tree.block_owner(statement) if statement is not None else None
    while place is not None and type(place[0]) is ast.If:
        branch, field = place
        if field == "orelse":
            return any(_synchronizes(ctx, s) for s in branch.body)
        # the body of an `elif`: its If is the only statement of the outer If's orelse
        outer = ctx.tree.block_owner(branch)
        if outer is None or type(outer[0]) is not ast.If or outer[1] != "orelse" or len(outer[0].orelse) != 1:
            return False
        place = outer
    return False


def _synchronizes(ctx, statement: ast.stmt) -> bool:
    return type(statement) is ast.Expr and type(statement.value) is ast.Call and is_synchronize(ctx, statement.value)


def is_synchronize(ctx, node: ast.Call) -> bool:
    """A call that waits for the device: ``torch.*.synchronize()``, a stream's or an event's ``.synchronize()``."""
    qualified = ctx.qualify(node.func)
    if qualified in SYNCHRONIZE:
        return True
    if method_name(node) != "synchronize" or qualified is not None:
        return False
    receiver = node.func.value  # type: ignore[attr-defined]
    if type(receiver) is ast.Call:  # torch.cuda.current_stream().synchronize()
        return (ctx.qualify(receiver.func) or "").startswith("torch.")
    name = (dotted_name(receiver) or "").lower()
    return "stream" in name or "event" in name


class TensorConditionInHotLoop(_HotLoopRule):
    TRIGGERS = ("if", "assert", "while", "print", "format", "%", "str", "repr", "bool", "{", "nonzero", "masked_select", "unique", "argwhere", "where", "[")
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE, DEVICE_EVIDENCE)

    # -- implicit bool() of a device tensor

    def visit_If(self, node: ast.If) -> None:
        self._condition(node.test)

    def visit_While(self, node: ast.While) -> None:
        self._condition(node.test)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._condition(node.test)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._condition(node.test)

    def _needs_bool(self, test: ast.AST) -> bool:
        if type(test) is ast.BoolOp:
            return any(self._needs_bool(v) for v in test.values)  # type: ignore[attr-defined]
        if type(test) is ast.UnaryOp and type(test.op) is ast.Not:  # type: ignore[attr-defined]
            return self._needs_bool(test.operand)  # type: ignore[attr-defined]
        return self.flow.is_device(test)

    def _condition(self, test: ast.AST) -> None:
        loop = self.loop(test)
        if loop is None or not self._needs_bool(test):
            return
        self.report(
            test,
            f"`{short(self.ctx, test)}` reads a device tensor on the host to decide a branch, so the {loop.kind} "
            "waits for the device every step; keep the check on the device (`torch.where`, masks) or test it every N steps",
        )

    # -- printing and formatting device tensors; data-dependent shapes

    def visit_Call(self, node: ast.Call) -> None:
        # What the call is decides first: asking for the loop costs more, and most calls are none of these.
        name = dotted_name(node.func)
        if name in ("print", "str", "repr", "bool"):
            values = positional(node)
            if values and self.loop(node) is not None and any(self.flow.is_device(v) for v in values):
                self._formatting(node)
            return
        method = method_name(node)
        if method == "format" and _is_string(node.func.value):  # type: ignore[attr-defined]
            values = (*positional(node), *(k.value for k in node.keywords if k.arg))
            if values and self.loop(node) is not None and any(self.flow.is_device(v) for v in values):
                self._formatting(node)
            return
        qualified = self.ctx.qualify(node.func) or ""
        if qualified in DATA_DEPENDENT_FUNCTIONS and (node.args or node.keywords):
            tested = first_argument(node)
        elif qualified == "torch.where" and len(node.args) + len(node.keywords) == 1:
            tested = first_argument(node)
        elif not qualified and method in DATA_DEPENDENT_METHODS:
            tested = node.func.value  # type: ignore[attr-defined]
        else:
            return
        if self.loop(node) is not None and self.flow.is_device(tested):
            self._data_dependent(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        values = [part.value for part in node.values if type(part) is ast.FormattedValue]
        if values and self.loop(node) is not None and any(self.flow.is_device(v) for v in values):
            self._formatting(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) is ast.Mod and _is_string(node.left) and self.loop(node) is not None:
            if self.flow.is_device(node.right):
                self._formatting(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        index = node.slice
        if type(index) not in _MASK_SHAPES or self.loop(node) is None:
            return
        if self._is_device_mask(index) and self.flow.is_device(node.value):
            self._data_dependent(node)

    def _is_device_mask(self, index: ast.AST, depth: int = 0) -> bool:
        flow = self.flow
        if depth > 3 or not flow.is_device(index):
            return False
        cls = type(index)
        if cls is ast.Compare:
            return not any(type(op) in (ast.Is, ast.IsNot, ast.In, ast.NotIn) for op in index.ops)  # type: ignore[attr-defined]
        if cls is ast.UnaryOp and type(index.op) is ast.Invert:  # type: ignore[attr-defined]
            return self._is_device_mask(index.operand, depth + 1)  # type: ignore[attr-defined]
        if cls is ast.BinOp and type(index.op) in (ast.BitAnd, ast.BitOr):  # type: ignore[attr-defined]
            return self._is_device_mask(index.left, depth + 1) or self._is_device_mask(index.right, depth + 1)  # type: ignore[attr-defined]
        if cls is ast.Call:
            method = method_name(index) or (self.ctx.qualify(index.func) or "").rsplit(".", 1)[-1]  # type: ignore[attr-defined]
            return method in BOOL_METHODS
        if cls is ast.Name:
            value = flow.assigned_value(index)
            return value is not None and self._is_device_mask(value, depth + 1)
        return False

    def _formatting(self, node: ast.AST) -> None:
        loop = self.loop(node)
        if loop is None:
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` formats a device tensor, so the {loop.kind} copies it to the host and waits "
            "for the device every step; log values accumulated on the device every N steps",
        )

    def _data_dependent(self, node: ast.AST) -> None:
        loop = self.loop(node)
        if loop is None or _read_on_the_host(self.ctx, node):
            return  # `x.nonzero().item()`: the read of the result is the one sync (MPS201 reports it)
        self.report(
            node,
            f"`{short(self.ctx, node)}` has a data-dependent shape, so the {loop.kind} waits for the device every "
            "step to learn its size; use a fixed-shape form (`torch.where`, multiplying by the mask) where you can",
        )


HOST_READS = frozenset(("item", "tolist", "cpu", "numpy"))


def _read_on_the_host(ctx, node: ast.AST) -> bool:
    """``node``'s value is read on the host right away: ``node.item()``, ``int(node)``, ``node.cpu()``."""
    parent = ctx.parent(node)
    if type(parent) is ast.Attribute and parent.attr in HOST_READS:  # type: ignore[attr-defined]
        return type(ctx.parent(parent)) is ast.Call
    if type(parent) is ast.Call and type(parent.func) is ast.Name and parent.func.id in ("int", "float", "bool"):  # type: ignore[attr-defined]
        return node in parent.args  # type: ignore[attr-defined]
    return False


# The index expressions ``_is_device_mask`` can accept; any other is not a mask, loop or not.
_MASK_SHAPES = (ast.Compare, ast.UnaryOp, ast.BinOp, ast.Call, ast.Name)


def _is_string(node: ast.AST) -> bool:
    return type(node) is ast.Constant and isinstance(node.value, (str, bytes))  # type: ignore[attr-defined]
