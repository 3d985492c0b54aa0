"""Which loops run a step, and which code runs on every step.

A loop is *hot* when its own body (not a nested loop's) runs a training or
inference step: ``.backward()``, ``optimizer.step()``, the forward call of a
placed module, or a call to a function of this module that does one of these
outside its own loops; or when it iterates a data loader (``loader``,
``enumerate(loader)``, ``tqdm(loader)``, ``zip(loader, ...)``). An epoch loop
whose body only contains the batch loop is not hot: its own statements run
once per epoch.

Code runs *per step* when it is in a hot loop's body (or in a plain loop
nested in it), or in a function called per step from a hot loop in this file.
A branch guarded by ``step % N == 0`` (and the like: ``(step + 1) % N == 0``,
``i % args.log_interval == 0 or last``, ``step == 0``, a name assigned such
a test) is *interval-guarded*: it runs every N steps, not every step.
``except`` handlers and a loop's ``else`` do not run per step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.names import dotted_name
from mpslint.analysis.tree import Tree

LoopNode = Union[cst.For, cst.While]

LOADER = re.compile(r"(loader|_dl|^dl)s?$|^loader_|_loader_", re.IGNORECASE)
WRAPPERS = frozenset("enumerate tqdm zip iter islice trange progress track chain".split())
OPTIMIZER = re.compile(r"optim|^opt$|^opt_|_opt$|^opt[A-Z_]|scaler", re.IGNORECASE)


@dataclass(frozen=True)
class Loop:
    node: LoopNode = field(repr=False)
    kind: str  # "training loop" | "evaluation loop" | "loop over batches"


@dataclass(frozen=True)
class StepPosition:
    """Where a node runs relative to the hot loop around it."""

    loop: Loop
    guarded: bool  # inside an interval-guarded branch: every N steps, not every step


class HotLoops:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree: Tree = ctx.analysis(Tree)
        self.flow: DeviceFlow = ctx.analysis(DeviceFlow)
        self.defs: Dict[str, List[cst.FunctionDef]] = {}
        for function in self.tree.functions:
            self.defs.setdefault(function.name.value, []).append(function)
        self.hot: Dict[LoopNode, Loop] = {}
        self.callers: Dict[cst.FunctionDef, StepPosition] = {}
        self._find_hot_loops()
        self._find_per_step_functions()

    # ---------------------------------------------------------------- queries

    def position(self, node: cst.CSTNode) -> Optional[StepPosition]:
        """The hot loop that runs ``node`` on every step (or every N steps, ``guarded``); None if none."""
        guarded = False
        child = node
        for parent in self.tree.ancestors(node):
            if isinstance(parent, cst.For):
                if child is parent.body:
                    loop = self.hot.get(parent)
                    if loop is not None:
                        return StepPosition(loop, guarded)
            elif isinstance(parent, cst.While):
                if child is parent.body or child is parent.test:
                    loop = self.hot.get(parent)
                    if loop is not None:
                        return StepPosition(loop, guarded)
            elif isinstance(parent, cst.If):
                if child is parent.body and self.is_guard(parent.test):
                    guarded = True
            elif isinstance(parent, cst.ExceptHandler):
                return None
            elif isinstance(parent, cst.FunctionDef):
                caller = self.callers.get(parent)
                if caller is None:
                    return None
                return StepPosition(caller.loop, guarded or caller.guarded)
            elif isinstance(parent, (cst.Lambda, cst.ClassDef)):
                return None
            child = parent
        return None

    def per_step(self, node: cst.CSTNode) -> Optional[Loop]:
        """The hot loop that runs ``node`` every step, honouring ``report_interval_guarded``."""
        position = self.position(node)
        if position is None:
            return None
        if position.guarded and not self.ctx.settings.report_interval_guarded:
            return None
        return position.loop

    def is_guard(self, test: cst.CSTNode, depth: int = 0) -> bool:
        """``step % N == 0``-like tests: the branch runs every N steps or once."""
        if depth > 4:
            return False
        if isinstance(test, cst.Comparison):
            if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
                return False
            sides = (test.left, test.comparisons[0].comparator)
            if any(_is_modulo(side) for side in sides):
                return True
            # `step == 0`, `i == len(loader) - 1`, `step == args.max_steps`: once per loop.
            return any(isinstance(side, cst.Integer) or _mentions_len(side) for side in sides)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return _is_modulo(test.expression)
        if isinstance(test, cst.BooleanOperation):
            left, right = test.left, test.right
            if isinstance(test.operator, cst.And):
                return self.is_guard(left, depth + 1) or self.is_guard(right, depth + 1)
            sides = (left, right)
            guards = [self.is_guard(s, depth + 1) for s in sides]
            # `i % log_interval == 0 or last`: the other side is a plain flag.
            return any(guards) and all(g or _is_flag(s) for g, s in zip(guards, sides))
        if isinstance(test, cst.Name):
            scope = self.tree.scope_of(test)
            bindings = self.flow.bindings.get(scope, {}).get(test.value, [])
            values = [b.value for b in bindings if b.how == "assign" and not b.path]
            return bool(values) and len(values) == len(bindings) and all(self.is_guard(v, depth + 1) for v in values)
        return False

    # -------------------------------------------------------------- detection

    def _innermost(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The loop whose iteration runs ``node`` directly, or the function it is in (else None)."""
        child = node
        for parent in self.tree.ancestors(node):
            if isinstance(parent, cst.For) and child is parent.body:
                return parent
            if isinstance(parent, cst.While) and (child is parent.body or child is parent.test):
                return parent
            if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return parent if isinstance(parent, cst.FunctionDef) else None
            child = parent
        return None

    def _step_kind(self, call: cst.Call) -> Optional[str]:
        """"train" for backward/optimizer steps, "forward" for a placed module's forward."""
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "backward":
                return "train"
            if method == "step":
                owner = dotted_name(func.value) or ""
                if OPTIMIZER.search(owner.rsplit(".", 1)[-1]):
                    return "train"
            if method in ("forward", "generate") and self.flow.is_placed_name(dotted_name(func.value) or "", call):
                return "forward"
        name = dotted_name(func)
        if name is not None and self.flow.is_placed_name(name, call):
            return "forward"
        return None

    def _local_callee(self, call: cst.Call) -> List[cst.FunctionDef]:
        func = call.func
        if isinstance(func, cst.Name):
            return self.defs.get(func.value, [])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
            return self.defs.get(func.attr.value, [])
        return []

    def _find_hot_loops(self) -> None:
        calls = [n for n in self.tree.start if isinstance(n, cst.Call)]
        steps: Dict[cst.CSTNode, Set[str]] = {}  # loop or function -> step kinds run directly in it
        local_calls: List[Tuple[cst.CSTNode, List[cst.FunctionDef]]] = []
        for call in calls:
            owner = None
            kind = self._step_kind(call)
            callees = self._local_callee(call)
            if kind is None and not callees:
                continue
            owner = self._innermost(call)
            if owner is None:
                continue
            if kind is not None:
                steps.setdefault(owner, set()).add(kind)
            if callees:
                local_calls.append((owner, callees))
        # A call to a function that runs a step (outside its own loops) runs that step.
        changed = True
        rounds = 0
        while changed and rounds < 8:
            changed = False
            rounds += 1
            for owner, callees in local_calls:
                for callee in callees:
                    inherited = steps.get(callee, set()) - steps.get(owner, set())
                    if inherited and callee is not owner:
                        steps.setdefault(owner, set()).update(inherited)
                        changed = True
        for node in self.tree.start:
            if not isinstance(node, (cst.For, cst.While)):
                continue
            kinds = steps.get(node, set())
            loader = isinstance(node, cst.For) and self._iterates_loader(node.iter)
            if not kinds and not loader:
                continue
            if "train" in kinds:
                label = "training loop"
            elif "forward" in kinds or self.flow.under_no_grad(node):
                label = "evaluation loop"
            else:
                label = "loop over batches"
            self.hot[node] = Loop(node, label)
        # An epoch loop runs the batch loop; its own forward calls (a sample
        # generated per epoch) run once per epoch, not per step.
        for node in list(self.hot):
            if isinstance(node, cst.For) and self._iterates_loader(node.iter):
                continue
            if any(inner is not node and self._directly_nested(node, inner) for inner in self.hot):
                del self.hot[node]

    def _directly_nested(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        """``inner`` is inside ``outer``'s body, in the same function."""
        if not self.tree.contains(outer, inner):
            return False
        for parent in self.tree.ancestors(inner):
            if parent is outer:
                return True
            if isinstance(parent, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
        return False

    def _iterates_loader(self, iterable: cst.CSTNode, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if isinstance(iterable, cst.Call):
            name = dotted_name(iterable.func) or ""
            last = name.rsplit(".", 1)[-1]
            if last == "DataLoader":
                return True
            if last in WRAPPERS:
                return any(self._iterates_loader(a.value, depth + 1) for a in iterable.args if a.keyword is None)
            return False
        name = dotted_name(iterable)
        if name is None:
            return False
        return bool(LOADER.search(name.rsplit(".", 1)[-1]))

    def _find_per_step_functions(self) -> None:
        calls = [n for n in self.tree.start if isinstance(n, cst.Call) and self._local_callee(n)]
        for _ in range(6):
            changed = False
            for call in calls:
                position = self.position(call)
                if position is None:
                    continue
                for callee in self._local_callee(call):
                    known = self.callers.get(callee)
                    if self.tree.contains(callee, call):
                        continue  # recursion
                    if known is None or (known.guarded and not position.guarded):
                        self.callers[callee] = position
                        changed = True
            if not changed:
                break


def _is_modulo(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo)


def _mentions_len(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Call):
        return dotted_name(node.func) == "len"
    if isinstance(node, cst.BinaryOperation):
        return _mentions_len(node.left) or _mentions_len(node.right)
    name = dotted_name(node) or ""
    last = name.rsplit(".", 1)[-1].lower()
    return any(word in last for word in ("last", "total", "max_", "num_", "final"))


def _is_flag(node: cst.CSTNode) -> bool:
    """A plain condition that is not computed by a call: ``last``, ``args.debug``, ``i == n - 1``."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        return True
    if isinstance(node, cst.Comparison):
        return not any(isinstance(n, cst.Call) for n in (node.left, *(c.comparator for c in node.comparisons)))
    return False
