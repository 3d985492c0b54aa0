"""Which functions and classes of a module start worker processes when they are called.

What MPS403 needs to see across modules: ``envs = SubprocVecEnv(fns)`` at the top level of a script is a
process start when ``SubprocVecEnv.__init__``, in another module of the project, starts
``multiprocessing.Process`` workers. A summary lists such names (``ModuleSummary.starts``).

A body starts processes when it (not a nested function or lambda)

- calls something that starts workers by being called (``STARTS_WHEN_CALLED``: a ``Pool``,
  ``torch.multiprocessing.spawn``);
- makes a ``Process`` and calls ``.start()`` on something, or a ``ProcessPoolExecutor`` and
  ``.submit()``/``.map()`` (both start nothing until then: a class that only keeps a ``Process`` to
  start later does not start it when made);
- calls a function of the same module, ``self.method()``, ``super().__init__()`` or a class of the
  same module that does; a ``Process`` subclass whose ``__init__`` calls ``self.start()`` does too.

A class starts processes when its ``__init__`` does (or, without one, a base class of the same module
does). Only modules that import ``multiprocessing``, ``torch.multiprocessing`` or ``concurrent`` by
name are read: the others cannot spell a start that a qualified name shows.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, List, Optional, Set

from mpslint.analysis.memo import CycleMemo
from mpslint.analysis.syntax import calls_in

STARTS_WHEN_CALLED = frozenset({
    "multiprocessing.Pool", "multiprocessing.pool.Pool", "multiprocessing.context.SpawnContext.Pool",
    "torch.multiprocessing.Pool", "torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
})
PROCESSES = frozenset({"multiprocessing.Process", "torch.multiprocessing.Process"})
EXECUTORS = frozenset({"concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor"})
# `mp.get_context("spawn")`: a context's Process and Pool are the module's, with its start method.
CONTEXTS = frozenset({"multiprocessing.get_context", "torch.multiprocessing.get_context"})
_MODULES = ("multiprocessing", "torch.multiprocessing", "concurrent")


def may_start(bindings: Dict[str, str]) -> bool:
    """Whether a module with these import bindings can name a process start at all."""
    return any(value == m or value.startswith(m + ".") for value in bindings.values() for m in _MODULES)


def starting(functions: Dict[str, ast.AST], classes: Dict[str, ast.ClassDef],
             qualify: Callable[[ast.AST], Optional[str]]) -> List[str]:
    """The top-level functions and classes (names, sorted) whose call starts worker processes.

    ``functions``: top-level functions by name and methods by ``Class.method``; ``classes``: top-level
    classes by name; ``qualify``: the qualified name of a Name/Attribute through the module's imports.
    """
    return _Starts(functions, classes, qualify).names()


class _Starts:
    def __init__(self, functions, classes, qualify) -> None:
        self.functions: Dict[str, ast.AST] = functions
        self.classes: Dict[str, ast.ClassDef] = classes
        self.qualify = qualify
        # A cycle of calls starts nothing by itself: what it starts is found through its other calls.
        self.memo: CycleMemo[bool] = CycleMemo(False)

    def names(self) -> List[str]:
        found = [key for key in self.functions if "." not in key and self.function(key)]
        found += [name for name in self.classes if self.cls(name)]
        return sorted(found)

    def cls(self, name: str) -> bool:
        return self.memo.get("class " + name, lambda: self._cls(name))

    def _cls(self, name: str) -> bool:
        init = f"{name}.__init__"
        if init in self.functions:
            return self.function(init)
        return any(self.cls(base) for base in self._bases(name))

    def _bases(self, name: str) -> List[str]:
        node = self.classes.get(name)
        if node is None:
            return []
        return [b.id for b in node.bases if type(b) is ast.Name and b.id in self.classes]  # type: ignore[attr-defined]

    def _is_process_class(self, name: str) -> bool:
        node = self.classes.get(name)
        return node is not None and any(self.qualify(b) in PROCESSES for b in node.bases)

    def function(self, key: str) -> bool:
        return self.memo.get(key, lambda: self._function(key))

    def _function(self, key: str) -> bool:
        owner = key.split(".", 1)[0] if "." in key else None
        made: Set[str] = set()  # what the body makes that starts only when told to
        told: Set[str] = set()  # the methods it calls that tell: start, submit, map
        callees: List[Callable[[], bool]] = []
        body = self.functions[key].body  # type: ignore[attr-defined]
        calls = list(calls_in(body))
        # Names the body assigns a context are read only where it makes one.
        contexts = _contexts_named(body, self.qualify) if any(self.qualify(c.func) in CONTEXTS for c in calls) \
            else set()
        for call in calls:
            func = call.func
            name = self.qualify(func) or context_starter(func, self.qualify, lambda n: n.id in contexts)
            if name in STARTS_WHEN_CALLED:
                return True
            if name in PROCESSES:
                made.add("process")
            elif name in EXECUTORS:
                made.add("executor")
            if type(func) is ast.Name:
                callee = func.id  # type: ignore[attr-defined]
                if callee in self.functions:
                    callees.append(lambda c=callee: self.function(c))
                elif callee in self.classes:
                    callees.append(lambda c=callee: self.cls(c))
            elif type(func) is ast.Attribute:
                method = func.attr  # type: ignore[attr-defined]
                receiver = func.value  # type: ignore[attr-defined]
                if method in ("start", "submit", "map"):
                    told.add(method)
                if owner is None:
                    continue
                if type(receiver) is ast.Name and receiver.id == "self":  # type: ignore[attr-defined]
                    if method == "start" and self._is_process_class(owner):
                        return True  # a Process subclass that starts itself
                    if f"{owner}.{method}" in self.functions:
                        callees.append(lambda c=f"{owner}.{method}": self.function(c))
                elif method == "__init__" and _is_super(receiver):
                    callees.extend(lambda c=b: self.cls(c) for b in self._bases(owner))
                elif method == "__init__" and type(receiver) is ast.Name and receiver.id in self._bases(owner):  # type: ignore[attr-defined]
                    callees.append(lambda c=receiver.id: self.cls(c))  # type: ignore[attr-defined]
        if ("process" in made and "start" in told) or ("executor" in made and told & {"submit", "map"}):
            return True
        return any(callee() for callee in callees)


def context_starter(func: ast.AST, qualify: Callable[[ast.AST], Optional[str]],
                    is_context: Callable[[ast.Name], bool]) -> Optional[str]:
    """``ctx.Process`` / ``mp.get_context("spawn").Pool``: the module's ``Process`` or ``Pool`` that a start
    method's context makes (``multiprocessing.Process``), made in place or held by a name ``is_context``
    says holds one; else None."""
    if type(func) is not ast.Attribute or func.attr not in ("Process", "Pool"):  # type: ignore[attr-defined]
        return None
    receiver = func.value  # type: ignore[attr-defined]
    if (type(receiver) is ast.Name and is_context(receiver)) or (  # type: ignore[arg-type]
            type(receiver) is ast.Call and qualify(receiver.func) in CONTEXTS):  # type: ignore[attr-defined]
        return f"multiprocessing.{func.attr}"  # type: ignore[attr-defined]
    return None


def _contexts_named(body: List[ast.stmt], qualify: Callable[[ast.AST], Optional[str]]) -> Set[str]:
    """The names this body assigns a multiprocessing context (``ctx = mp.get_context("spawn")``) and nothing
    else (not nested functions, classes or lambdas)."""
    found: Set[str] = set()
    other: Set[str] = set()
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if type(node) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
            continue
        if type(node) is ast.Assign:
            value = node.value  # type: ignore[attr-defined]
            is_context = type(value) is ast.Call and qualify(value.func) in CONTEXTS  # type: ignore[attr-defined]
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target) is ast.Name:
                    (found if is_context else other).add(target.id)  # type: ignore[attr-defined]
                else:
                    stack.append(target)
            stack.append(value)
            continue
        if type(node) is ast.Name and type(node.ctx) is ast.Store:  # type: ignore[attr-defined]
            other.add(node.id)  # type: ignore[attr-defined]  # a loop target, `with ... as`, a walrus
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found - other


def _is_super(node: ast.AST) -> bool:
    return type(node) is ast.Call and type(node.func) is ast.Name and node.func.id == "super"  # type: ignore[attr-defined]


