"""A wall-clock interval around device work that never waits for the device (see ``rules/MPS205.md``).

MPS, like CUDA, queues kernels and returns to Python at once: a clock read
after device work, with nothing in between that waits for the device,
measures how long the work took to enqueue. An interval is found where it is
used, ``end - start``, each side a clock read or a name (or ``self.x``)
assigned one earlier in the same function; what runs between the two reads is
the code between them in that function, in execution order (a call completes
after its arguments). Each function's code is summarized once as events,
device work or waiting for the device, so each interval costs a bisection.
"""

from __future__ import annotations

import ast
import bisect
from typing import Dict, List, Optional, Tuple

from mpslint.analysis.cuda_context import CudaContext
from mpslint.analysis.device_picker import mps_is_available, mps_module_call
from mpslint.analysis.device_flow import DEVICE_EVIDENCE, DeviceFlow, Kind
from mpslint.analysis.loops import HotLoops
from mpslint.analysis.syntax import dotted_name, positional
from mpslint.analysis.tree import Scope, Tree
from mpslint.checks.base import FixSpec, NodeEdit, Rule, insert_before, short
from mpslint.checks.hot_loop_syncs import is_synchronize
from mpslint.checks.rewriting import default_indent, indent_of, starts_line, torch_name
from mpslint.knowledge.cuda_api import floor_of

CLOCKS = frozenset({
    "time.time", "time.perf_counter", "time.monotonic",
    "time.time_ns", "time.perf_counter_ns", "time.monotonic_ns",
    "timeit.default_timer",
})
# Reading a device value on the host waits for everything queued before it.
HOST_READS = frozenset({"item", "tolist", "cpu", "numpy"})
HOST_READ_BUILTINS = frozenset({"float", "int", "bool", "print", "str", "repr", "format"})
HOST_READ_FUNCTIONS = frozenset({
    "torch.equal", "torch.allclose", "torch.is_nonzero", "torch.save", "numpy.array", "numpy.asarray",
})
# Methods that store a device value without reading it.
CONTAINER_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "setdefault", "put", "put_nowait"})
# Tensor methods that launch real kernels. Other methods of values the device
# flow calls "device" (``outputs.items()``, ``model.modules()``) are not device work.
TENSOR_OPS = frozenset(
    "matmul mm bmm addmm baddbmm mv dot einsum softmax log_softmax sum mean std var norm exp log sqrt pow "
    "cumsum cumprod prod sort argsort topk max min argmax argmin abs clamp relu sigmoid tanh".split()
)
ACCELERATOR_SYNC = (2, 6)  # torch.accelerator.synchronize()

WORK = "work"
SYNC = "sync"
CUDA_SYNC = "cuda-sync"  # a synchronize that runs only on CUDA

Event = Tuple[int, int, str, ast.AST]  # (end index, -start index, kind, node): sorted in execution order


class Timing:
    """Per file: the device events of each function, in execution order, and what each local function ends with."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree: Tree = ctx.tree
        self.flow: DeviceFlow = ctx.analysis(DeviceFlow)
        self.functions: Dict[str, List[ast.AST]] = {}  # plain functions (module-level or nested) by name
        self.methods: Dict[str, List[ast.AST]] = {}
        for function in self.tree.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            owner = self.methods if type(self.tree.parent(function)) is ast.ClassDef else self.functions
            owner.setdefault(function.name, []).append(function)  # type: ignore[attr-defined]
        self.events: Dict[Scope, List[Event]] = {}
        self._ends: Dict[Scope, List[int]] = {}
        self._syncs: Dict[Scope, List[Tuple[int, int]]] = {}  # (end, start) of each SYNC event, in execution order
        self._summary: Dict[ast.AST, Optional[str]] = {}
        self._local_calls: Dict[Scope, List[Tuple[ast.Call, List[ast.AST]]]] = {}  # decided once all else is known
        tree = self.tree
        for node in tree.of_type(ast.Call, ast.BinOp, ast.AugAssign, ast.JoinedStr):
            scope = tree.scope_of(node)
            cls = type(node)
            if cls is ast.Call:
                callees = self._local_callees(node)  # type: ignore[arg-type]
                if callees:
                    self._local_calls.setdefault(scope, []).append((node, callees))  # type: ignore[arg-type]
                    continue
                kind = self._call_kind(node)  # type: ignore[arg-type]
            elif cls is ast.JoinedStr:
                kind = SYNC if self._formats_device_value(node) else None  # f"{loss}" reads it
            else:
                kind = self._operator_kind(node)
            if kind is not None:
                self._add(scope, node, kind)
        for scope, calls in self._local_calls.items():
            for node, callees in calls:
                kind = self._callees_kind(node, callees)
                if kind is not None:
                    self._add(scope, node, kind)
        for scope, events in self.events.items():
            events.sort(key=lambda e: (e[0], e[1]))
            self._ends[scope] = [e[0] for e in events]
            self._syncs[scope] = [(e[0], -e[1]) for e in events if e[2] == SYNC]

    # ---------------------------------------------------------------- queries

    def last_event(self, scope: Scope, after: ast.AST, before: ast.AST) -> Optional[Tuple[str, ast.AST]]:
        """The last event that runs after ``after`` completes and before ``before`` starts."""
        events = self.events.get(scope)
        if not events:
            return None
        tree = self.tree
        begin, stop = tree.end(after), tree.index(before)
        position = bisect.bisect_left(self._ends[scope], stop) - 1
        while position >= 0 and events[position][0] > begin:
            end, negative_start, kind, node = events[position]
            if -negative_start > begin:
                return kind, node
            position -= 1  # an event around ``after``: it started before the interval
        return None

    def waits_between(self, scope: Scope, after: ast.AST, before: ast.AST) -> bool:
        """Something in the interval waits for the device (not only the last event).

        A synchronize before the last work leaves that work's tail unmeasured,
        but in a loop it is waited for in the next iteration's interval (the
        classic ``batch_time.update(time.time() - end)`` after a
        ``loss.item()``), and a function that reads a device value after every
        token (``generate``) is timed right but for a last ``torch.cat``. Only
        an interval that never waits measures enqueueing alone.
        """
        tree = self.tree
        begin, stop = tree.end(after), tree.index(before)
        syncs = self._syncs.get(scope, [])
        position = bisect.bisect_left(syncs, (stop,)) - 1
        while position >= 0 and syncs[position][0] > begin:
            if syncs[position][1] > begin:
                return True
            position -= 1
        return False

    # ----------------------------------------------------------- collection

    def _add(self, scope: Scope, node: ast.AST, kind: str) -> None:
        tree = self.tree
        self.events.setdefault(scope, []).append((tree.end(node), -tree.index(node), kind, node))

    def _local_callees(self, call: ast.Call) -> List[ast.AST]:
        """The functions of this file that ``f(...)`` or ``self.f(...)`` runs (none for a parameter ``f``)."""
        func = call.func
        if type(func) is ast.Name:
            found = self.functions.get(func.id, [])
            if found and any(b.how != "other" for b in self.flow.visible(func.id, call)):
                return []  # a parameter or variable of that name: not the function
            return found
        if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id in ("self", "cls"):
            methods = self.methods.get(func.attr, [])
            own = [m for m in methods if self.tree.contains(self.tree.parent(m), call)]  # type: ignore[arg-type]
            return own or methods
        return []

    def _callees_kind(self, call: ast.Call, callees: List[ast.AST]) -> Optional[str]:
        """A call of a function of this file ends the way that function ends (all of its definitions agreeing)."""
        kinds = {self._summary_of(callee) for callee in callees}
        if len(kinds) == 1:
            kind = kinds.pop()
            if kind is not None:
                return kind
        elif SYNC in kinds:
            return SYNC  # one definition synchronizes: do not claim the interval is unsynchronized
        return WORK if self.flow.is_device(call) else None

    def _summary_of(self, function: ast.AST) -> Optional[str]:
        """SYNC when ``function`` waits for the device anywhere (its local calls included), else its last event's kind."""
        if function in self._summary:
            return self._summary[function]
        self._summary[function] = None  # recursion: no event
        tree = self.tree
        last: Optional[Tuple[Tuple[int, int], str]] = None
        found = [((end, negative_start), kind) for end, negative_start, kind, _ in self.events.get(function, ())]  # type: ignore[arg-type]
        for node, callees in self._local_calls.get(function, ()):  # type: ignore[arg-type]
            kind = self._callees_kind(node, callees)
            if kind is not None:
                found.append(((tree.end(node), -tree.index(node)), kind))
        for key, kind in found:
            if kind == SYNC:
                last = (key, SYNC)
                break
            if last is None or key > last[0]:
                last = (key, kind)
        result = None if last is None else last[1]
        self._summary[function] = result
        return result

    def _operator_kind(self, node: ast.AST) -> Optional[str]:
        flow = self.flow
        if type(node) is ast.AugAssign:
            return WORK if flow.is_device(node.value) or flow.is_device(node.target) else None  # type: ignore[attr-defined]
        if type(node.op) is ast.Mod and type(node.left) in (ast.Constant, ast.JoinedStr):  # type: ignore[attr-defined]
            return SYNC if flow.is_device(node.right) else None  # "%.3f" % loss reads it  # type: ignore[attr-defined]
        return WORK if flow.is_device(node) else None

    def _formats_device_value(self, node: ast.JoinedStr) -> bool:
        return any(type(part) is ast.FormattedValue and self.flow.is_device(part.value) for part in node.values)

    def _call_kind(self, call: ast.Call) -> Optional[str]:
        """WORK for what surely runs on the device, SYNC for what waits for it (or may), else None.

        Uploads (``.to(device)``) are neither: they are not what a timer is put
        around, and a copy from pageable host memory already waits.
        """
        ctx, flow = self.ctx, self.flow
        func = call.func
        qualified = ctx.qualify(func)
        if qualified in CLOCKS:
            return None
        if is_synchronize(ctx, call):
            if (qualified or "").startswith("torch.cuda.") and ctx.analysis(CudaContext).guards(call):
                return CUDA_SYNC
            return SYNC
        arguments = [*positional(call), *(k.value for k in call.keywords if k.arg)]
        if qualified is None and type(func) is ast.Attribute:
            method, receiver = func.attr, func.value
            if method in HOST_READS:
                return None if flow.kind(receiver) in (Kind.HOST, Kind.HOST_TENSOR) else SYNC
            if method == "to":
                target = flow.to_target(call)
                return SYNC if flow.is_device(receiver) and target is not None and flow.is_cpu(target) else None
            if method == "backward":
                return WORK
            if method in ("forward", "generate") and flow.is_placed(receiver):
                return WORK
            if method in TENSOR_OPS and flow.is_device(receiver):
                return WORK  # x.matmul(w), out.softmax(-1)
            if method in CONTAINER_METHODS:
                return None
        if qualified in HOST_READ_FUNCTIONS:
            return SYNC if any(flow.is_device(v) for v in arguments) else None
        if type(func) is ast.Name and func.id in HOST_READ_BUILTINS:
            return SYNC if any(flow.is_device(v) for v in arguments) else None
        if qualified is not None and qualified.startswith("torch."):
            return WORK if flow.is_device(call) else None  # an op: torch.matmul(x, w), F.softmax(out)
        if flow.kind(func) is Kind.MODULE and (type(func) is ast.Name or dotted_name(func) in flow.placed):
            return WORK  # model(x), self.model(x); not model.modules() nor a placed module's own methods
        if any(flow.is_device(v) for v in arguments):
            if dotted_name(func) in flow.nn_objects:
                return WORK  # criterion(out, y), with criterion = nn.CrossEntropyLoss()
            # Handed to code outside this file (a logger, a metric, a tokenizer's decode): it may read the value.
            return SYNC
        return None


class UnsynchronizedTiming(Rule):
    TRIGGERS = ("time",)  # time.*, timeit.default_timer, and any name imported from either
    REQUIRES = (DEVICE_EVIDENCE,)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: Dict[ast.AST, bool] = {}
        self._attributes: Optional[Dict[Tuple[Scope, str], List[Tuple[int, ast.AST]]]] = None

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) is not ast.Sub or not self._reads_a_clock() or self._is_a_test(node):
            return
        end = self._clock(node.left)
        if end is None:
            return
        start = self._clock(node.right)
        tree = self.ctx.tree
        if start is None or end in self._reported or tree.index(start) >= tree.index(end):
            return
        scope = tree.scope_of(end)
        if tree.scope_of(start) is not scope:
            return
        timing = self.ctx.analysis(Timing)
        last = timing.last_event(scope, start, end)
        if last is None or last[0] == SYNC:
            return
        if timing.waits_between(scope, start, end):
            return
        self._reported[end] = True
        kind, event = last
        work = f"`{short(self.ctx, event)}` (line {event.lineno})"  # type: ignore[attr-defined]
        if kind == WORK:
            why = f"closes a timed interval after device work ({work}) with no synchronize in between"
        else:
            why = f"closes a timed interval whose only synchronize ({work}) runs on CUDA alone"
        self.report(
            end,
            f"`{short(self.ctx, end)}` {why}: MPS (like CUDA) runs kernels asynchronously, so this measures how long "
            "they took to enqueue, not to run; synchronize before reading the clock (`torch.mps.synchronize()`, "
            "`torch.accelerator.synchronize()`) or time with `torch.mps.Event(enable_timing=True)`",
            fix=self._fix(end),
        )

    # ----------------------------------------------------------- intervals

    def _reads_a_clock(self) -> bool:
        """The file calls a clock somewhere: else no subtraction can be a timed interval (``_clock`` ends at
        such a call), and the names in every ``a - b`` of the model code need not be followed."""
        found = self.__dict__.get("_clock_read")
        if found is None:
            qualify = self.ctx.qualify
            found = self.__dict__["_clock_read"] = any(
                not call.args and not call.keywords and qualify(call.func) in CLOCKS  # type: ignore[attr-defined]
                for call in self.ctx.tree.of_type(ast.Call))
        return found

    def _clock(self, expr: ast.AST) -> Optional[ast.Call]:
        """The clock read ``expr`` is, or that the name (``t0``, ``self.t0``) holds where it is used."""
        ctx = self.ctx
        if type(expr) is ast.Call:
            if not expr.args and not expr.keywords and ctx.qualify(expr.func) in CLOCKS:  # type: ignore[attr-defined]
                return expr  # type: ignore[return-value]
            return None
        tree = ctx.tree
        scope = tree.scope_of(expr)
        if type(expr) is ast.Name:
            bindings = ctx.analysis(DeviceFlow).visible(expr.id, expr)  # type: ignore[attr-defined]
            if not bindings:
                return None
            latest = bindings[0]
            if latest.how != "assign" or latest.path or latest.scope is not scope or latest.end >= tree.index(expr):
                return None
            return self._clock(latest.value) if type(latest.value) is ast.Call else None
        if type(expr) is ast.Attribute:
            name = dotted_name(expr)
            if name is None:
                return None
            assigned = self._attribute_assignments().get((scope, name))
            if not assigned:
                return None
            position = bisect.bisect_left(assigned, (tree.index(expr),)) - 1
            if position < 0:
                return None
            value = assigned[position][1]
            return self._clock(value) if type(value) is ast.Call else None
        return None

    def _attribute_assignments(self) -> Dict[Tuple[Scope, str], List[Tuple[int, ast.AST]]]:
        """(scope, ``self.t0``) -> [(index after the assignment, value)], in source order."""
        if self._attributes is None:
            found: Dict[Tuple[Scope, str], List[Tuple[int, ast.AST]]] = {}
            tree = self.ctx.tree
            for node in tree.of_type(ast.Assign):
                for target in node.targets:  # type: ignore[attr-defined]
                    if type(target) is ast.Attribute:
                        name = dotted_name(target)
                        if name is not None:
                            found.setdefault((tree.scope_of(node), name), []).append((tree.end(node), node.value))  # type: ignore[attr-defined]
            for assigned in found.values():
                assigned.sort(key=lambda item: item[0])
            self._attributes = found
        return self._attributes

    def _is_a_test(self, node: ast.AST) -> bool:
        """``time.time() - start > timeout``: a time budget, not a measurement."""
        for parent in self.ctx.ancestors(node):
            if type(parent) is ast.Compare:
                return True
            if isinstance(parent, ast.stmt):
                return False
        return False

    # ----------------------------------------------------------------- fix

    def _fix(self, end: ast.Call) -> Optional[FixSpec]:
        """Synchronize on the line before the clock read, where an accelerator exists.

        Not in a loop that runs every step: a synchronize there is what
        synchronize-in-hot-loop reports; time such loops with events, or every N steps.
        """
        ctx = self.ctx
        torch = torch_name(ctx)
        statement = ctx.tree.statement_of(end)
        if torch is None or statement is None or not starts_line(ctx, statement) or ctx.tree.block_of(statement) is None:
            return None
        if ctx.tree.scope_of(statement) is not ctx.tree.scope_of(end):
            return None  # the read is in a lambda: it runs later
        if ctx.analysis(HotLoops).per_step(end) is not None:
            return None
        indent = indent_of(ctx, statement)
        step = default_indent(ctx)
        floor = floor_of(ctx.settings.torch_version)
        importing: Tuple[NodeEdit, ...] = ()
        if floor >= ACCELERATOR_SYNC:
            lines = [f"if {torch}.accelerator.is_available():", f"{step}{torch}.accelerator.synchronize()"]
        else:
            module = mps_module_call(ctx, floor)  # torch.mps: imported by `import torch` from 2.1, none before 2.0
            if module is None:
                return None
            guard, importing = module
            lines = [
                f"if {torch}.cuda.is_available():", f"{step}{torch}.cuda.synchronize()",
                f"elif {mps_is_available(torch, floor)}{guard}:", f"{step}{torch}.mps.synchronize()",
            ]
        text = "".join(f"{line}\n{indent}" for line in lines)
        return FixSpec.unsafe("Synchronize the accelerator before reading the clock", insert_before(statement, text),
                              *importing)
