"""MPS2xx: host syncs that run on every step of a training or evaluation loop.

On MPS (as on CUDA) kernels are queued and run asynchronously; reading a
device value on the host drains the queue and waits. Once per epoch that is
free; once per step it serialises host and device (measured: ``loss.item()``
per batch took an MNIST CNN from 4.1 s to 11.2 s on MPS). Each rule asks two
shared analyses: ``HotLoops`` (does this run every step?) and ``DeviceFlow``
(is this value on the accelerator?). Code in an interval-guarded branch
(``if step % N == 0``) is reported only with ``report-interval-guarded``.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.loops import HotLoops, Loop
from mpslint.analysis.names import dotted_name
from mpslint.checks.base import Rule
from mpslint.screen.loops import has_hot_loop

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


# Prefilter groups (Rule.REQUIRES), each a necessary condition read off the analyses.
# A hot loop (analysis/loops.py) is a `for`/`while` whose body runs a step or that
# iterates a loader: `.backward()`, `<optimizer>.step()`, a placed module's forward
# (placed only by `.to(`/`.cuda(`/`.to_empty(`/`prepare(`), or a loader name
# (LOADER matches "loader"/"dl" in any case, hence every casing; "DataLoader" contains "oader").
LOOP_KEYWORDS = ("for", "while")
STEP_EVIDENCE = ("backward", "step", "to(", "to_empty", "cuda", "prepare") + tuple(
    "".join(c.upper() if mask >> i & 1 else c for i, c in enumerate(word)) for word in ("oader", "dl")
    for mask in range(2 ** len(word))
)
# A value is on the accelerator (analysis/device_flow.py) only through `.to(`, `.cuda(`,
# a placed module, a `.backward()` graph, `device=`/`.device`/names like `dev`,
# `*_device`, or a string literal starting with a device type ("cuda:0", 'mps', "xla").
DEVICE_EVIDENCE = ("backward", "to(", "to_empty", "cuda", "prepare", "dev") + tuple(
    quote + device for device in ("mps", "xpu", "npu", "hpu", "xla", "meta") for quote in "\"'"
)


def short(ctx, node: cst.CSTNode, limit: int = 48) -> str:
    text = " ".join(ctx.code_for(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _HotLoopRule(Rule):
    OPTIONS = ("report_interval_guarded",)
    # Every finding here runs per step of a hot loop: no hot loop, no finding.
    screen = staticmethod(has_hot_loop)

    @property
    def flow(self) -> DeviceFlow:
        return self.ctx.analysis(DeviceFlow)

    def loop(self, node: cst.CSTNode) -> Optional[Loop]:
        return self.ctx.analysis(HotLoops).per_step(node)


def _method(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


class ItemInHotLoop(_HotLoopRule):
    CODE = "MPS201"
    NAME = "item-in-hot-loop"
    TRIGGERS = ("item", "tolist", "float", "int")
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE, DEVICE_EVIDENCE)

    def visit_Call(self, node: cst.Call) -> None:
        method = _method(node)
        if method in ("item", "tolist") and not node.args and self.ctx.qualify(node.func) is None:
            tensor = node.func.value
        elif isinstance(node.func, cst.Name) and node.func.value in ("float", "int") and len(node.args) == 1:
            tensor = node.args[0].value
        else:
            return
        if not self.flow.is_device(tensor):
            return
        loop = self.loop(node)
        if loop is None:
            return
        what = "copies the tensor to the host and " if method == "tolist" else ""
        self.report(
            node,
            f"`{short(self.ctx, node)}` in the {loop.kind} {what}waits for the device every step; "
            "accumulate on the device and read it every N steps",
        )


class HostCopyInHotLoop(_HotLoopRule):
    CODE = "MPS202"
    NAME = "host-copy-in-hot-loop"
    TRIGGERS = ("cpu", "numpy", "array", "device")  # `.to(t.device)` of a host tensor is a move to the CPU
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE, DEVICE_EVIDENCE)

    def visit_Call(self, node: cst.Call) -> None:
        method = _method(node)
        flow = self.flow
        if method in ("cpu", "numpy") and self.ctx.qualify(node.func) is None:
            tensor = node.func.value
        elif method == "to" and self.ctx.qualify(node.func) is None:
            target = flow._to_target(node)
            if target is None or not flow.is_cpu(target):
                return
            tensor = node.func.value
        elif (self.ctx.qualify(node.func) or "") in ("numpy.array", "numpy.asarray") and node.args:
            tensor = node.args[0].value
        else:
            return
        if not flow.is_device(tensor):
            return
        loop = self.loop(node)
        if loop is None:
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` in the {loop.kind} copies to the host and waits for the device every step; "
            "keep the values on the device (accumulate there) and copy them every N steps or after the loop",
        )


class SynchronizeInHotLoop(_HotLoopRule):
    CODE = "MPS203"
    NAME = "synchronize-in-hot-loop"
    TRIGGERS = ("synchronize",)
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._is_synchronize(node):
            return
        loop = self.loop(node)
        if loop is None:
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` in the {loop.kind} waits for all queued device work every step; "
            "synchronize only where you read a timer, every N steps or after the loop",
        )

    def _is_synchronize(self, node: cst.Call) -> bool:
        qualified = self.ctx.qualify(node.func)
        if qualified in SYNCHRONIZE:
            return True
        if _method(node) != "synchronize" or qualified is not None:
            return False
        receiver = node.func.value
        if isinstance(receiver, cst.Call):  # torch.cuda.current_stream().synchronize()
            return (self.ctx.qualify(receiver.func) or "").startswith("torch.")
        name = (dotted_name(receiver) or "").lower()
        return "stream" in name or "event" in name


class TensorConditionInHotLoop(_HotLoopRule):
    CODE = "MPS204"
    NAME = "tensor-condition-in-hot-loop"
    TRIGGERS = ("if", "assert", "while", "print", "format", "%", "str", "repr", "bool", "{", "nonzero", "masked_select", "unique", "argwhere", "where", "[")
    REQUIRES = (LOOP_KEYWORDS, STEP_EVIDENCE, DEVICE_EVIDENCE)

    # -- implicit bool() of a device tensor

    def visit_If(self, node: cst.If) -> None:
        self._condition(node.test)

    def visit_While(self, node: cst.While) -> None:
        self._condition(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._condition(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._condition(node.test)

    def _needs_bool(self, test: cst.CSTNode) -> bool:
        if isinstance(test, cst.BooleanOperation):
            return self._needs_bool(test.left) or self._needs_bool(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._needs_bool(test.expression)
        return self.flow.is_device(test)

    def _condition(self, test: cst.CSTNode) -> None:
        if not self._needs_bool(test):
            return
        loop = self.loop(test)
        if loop is None:
            return
        self.report(
            test,
            f"`{short(self.ctx, test)}` reads a device tensor on the host to decide a branch, so the {loop.kind} "
            "waits for the device every step; keep the check on the device (`torch.where`, masks) or test it every N steps",
        )

    # -- printing and formatting device tensors; data-dependent shapes

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted_name(node.func)
        flow = self.flow
        if name in ("print", "str", "repr", "bool") and any(
            flow.is_device(a.value) for a in node.args if a.keyword is None
        ):
            self._formatting(node)
            return
        if _method(node) == "format" and isinstance(node.func.value, (cst.SimpleString, cst.ConcatenatedString)):
            if any(flow.is_device(a.value) for a in node.args):
                self._formatting(node)
            return
        qualified = self.ctx.qualify(node.func) or ""
        data_dependent = False
        if qualified in DATA_DEPENDENT_FUNCTIONS and node.args:
            data_dependent = flow.is_device(node.args[0].value)
        elif qualified == "torch.where" and len(node.args) == 1:
            data_dependent = flow.is_device(node.args[0].value)
        elif not qualified and _method(node) in DATA_DEPENDENT_METHODS:
            data_dependent = flow.is_device(node.func.value)
        if data_dependent:
            self._data_dependent(node)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        if any(
            isinstance(part, cst.FormattedStringExpression) and self.flow.is_device(part.expression)
            for part in node.parts
        ):
            self._formatting(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            if self.flow.is_device(node.right):
                self._formatting(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return
        index = node.slice[0].slice.value
        if self._is_device_mask(index) and self.flow.is_device(node.value):
            self._data_dependent(node)

    def _is_device_mask(self, index: cst.CSTNode, depth: int = 0) -> bool:
        flow = self.flow
        if depth > 3 or not flow.is_device(index):
            return False
        if isinstance(index, cst.Comparison):
            return not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in index.comparisons)
        if isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.BitInvert):
            return self._is_device_mask(index.expression, depth + 1)
        if isinstance(index, cst.BinaryOperation) and isinstance(index.operator, (cst.BitAnd, cst.BitOr)):
            return self._is_device_mask(index.left, depth + 1) or self._is_device_mask(index.right, depth + 1)
        if isinstance(index, cst.Call):
            method = _method(index) or (self.ctx.qualify(index.func) or "").rsplit(".", 1)[-1]
            return method in BOOL_METHODS
        if isinstance(index, cst.Name):
            bindings = flow._visible(index.value, index)
            return len(bindings) == 1 and bindings[0].how == "assign" and not bindings[0].path and self._is_device_mask(
                bindings[0].value, depth + 1
            )
        return False

    def _formatting(self, node: cst.CSTNode) -> None:
        loop = self.loop(node)
        if loop is None:
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` formats a device tensor, so the {loop.kind} copies it to the host and waits "
            "for the device every step; log values accumulated on the device every N steps",
        )

    def _data_dependent(self, node: cst.CSTNode) -> None:
        loop = self.loop(node)
        if loop is None:
            return
        self.report(
            node,
            f"`{short(self.ctx, node)}` has a data-dependent shape, so the {loop.kind} waits for the device every "
            "step to learn its size; use a fixed-shape form (`torch.where`, multiplying by the mask) where you can",
        )


RULES = [ItemInHotLoop, HostCopyInHotLoop, SynchronizeInHotLoop, TensorConditionInHotLoop]
