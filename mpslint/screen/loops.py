"""Whether a file may have a hot loop: an over-approximation of ``analysis.loops.HotLoops``.

``HotLoops`` calls a loop hot when its own body runs a step (``.backward()``,
``<optimizer>.step()``, a placed module's forward), calls a function of the
file that does, or iterates a data loader. Here a loop counts when a step or
a call of a stepping function occurs anywhere inside it, nested loops and
functions included, and a function steps when one occurs anywhere inside it.
Every hot-loop rule reports only code that runs per step of a hot loop, so a
file without one is clean for all of them.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from mpslint.analysis.loops import LOADER, OPTIMIZER, WRAPPERS
from mpslint.screen.device import device_model
from mpslint.screen.facts import Facts, dotted_name, positional


def has_hot_loop(facts: Facts) -> bool:
    return facts.memo(has_hot_loop, _has_hot_loop)


def _has_hot_loop(facts: Facts) -> bool:
    index = facts.index
    if not index.loops:
        return False
    for loop in index.loops:
        if type(loop) is not ast.While and _iterates_loader(loop.iter):
            return True
    placed = device_model(facts).placed
    stepping = _stepping_functions(facts, placed)
    steps = [call for call, _ in index.calls if _is_step(call, placed) or (_local_callee(call) or "") in stepping]
    return any(_inside(call, loop) for call in steps for loop in index.loops)


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    """``node`` is within ``outer``'s source span, so (in one tree) one of its descendants."""
    return (outer.lineno, outer.col_offset) <= (node.lineno, node.col_offset) and (
        node.end_lineno, node.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)


def _is_step(call: ast.Call, placed: Set[str]) -> bool:
    """``HotLoops._step_kind`` is not None, with placement in any scope and order."""
    func = call.func
    if type(func) is ast.Attribute:
        method = func.attr
        if method == "backward":
            return True
        if method == "step":
            owner = dotted_name(func.value) or ""
            if OPTIMIZER.search(owner.rsplit(".", 1)[-1]):
                return True
        if method in ("forward", "generate") and (dotted_name(func.value) or "") in placed:
            return True
    name = dotted_name(func)
    return name is not None and name in placed


def _local_callee(call: ast.Call) -> Optional[str]:
    """The name ``HotLoops._local_callee`` looks a call up by: ``f(...)``, ``self.f(...)``, ``cls.f(...)``."""
    func = call.func
    if type(func) is ast.Name:
        return func.id
    if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id in ("self", "cls"):
        return func.attr
    return None


def _stepping_functions(facts: Facts, placed: Set[str]) -> Set[str]:
    """Names of the file's functions that run a step anywhere inside, directly or through each other."""
    index = facts.index
    calls: Dict[str, Set[str]] = {}
    stepping: Set[str] = set()
    for call, scope in index.calls:
        step = _is_step(call, placed)
        callee = _local_callee(call)
        if callee is not None and callee not in index.functions:
            callee = None
        if not step and callee is None:
            continue
        for outer in index.scopes_from(scope):  # every function the call is inside
            if type(outer) in (ast.FunctionDef, ast.AsyncFunctionDef):
                if step:
                    stepping.add(outer.name)
                if callee is not None:
                    calls.setdefault(outer.name, set()).add(callee)
    grown = True
    while grown:
        grown = False
        for name, callees in calls.items():
            if name not in stepping and callees & stepping:
                stepping.add(name)
                grown = True
    return stepping


def _iterates_loader(iterable: ast.AST, depth: int = 0) -> bool:  # HotLoops._iterates_loader
    if depth > 4:
        return False
    if type(iterable) is ast.Call:
        name = dotted_name(iterable.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last == "DataLoader":
            return True
        if last in WRAPPERS:
            return any(_iterates_loader(a, depth + 1) for a in positional(iterable))
        return False
    name = dotted_name(iterable)
    return name is not None and bool(LOADER.search(name.rsplit(".", 1)[-1]))
