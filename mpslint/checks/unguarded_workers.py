"""Worker processes started when the script is imported: spawn re-runs it (see ``rules/MPS403.md``)."""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional

from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.processes import CONTEXTS, context_starter
from mpslint.analysis.syntax import integer_value, is_main_guard, keyword, positional_at
from mpslint.checks.base import Context, Rule
from mpslint.checks.workers import DATALOADERS, PLATFORM_WORDS, mentions

POOLS = frozenset({
    "multiprocessing.Pool", "multiprocessing.pool.Pool", "multiprocessing.Process",
    "multiprocessing.context.SpawnContext.Pool",
    "torch.multiprocessing.Pool", "torch.multiprocessing.Process",
    "torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
    "concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor",
})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class _Reachable:
    """Module-level functions that run when the module is imported (spawn re-imports ``__main__``).

    Seeds are plain-name calls in unguarded top-level code (class bodies
    included); a function called from a reached function is reached too.
    """

    def __init__(self, ctx: Context) -> None:
        module = ctx.module
        self.functions: Dict[str, ast.AST] = {stmt.name: stmt for stmt in module.body if type(stmt) in _FUNCTIONS}  # type: ignore[attr-defined]
        self.reached: Dict[str, str] = {}  # function -> the top-level function through which it is reached
        pending: List[str] = []
        for stmt in module.body:
            if type(stmt) in _FUNCTIONS or is_main_guard(stmt):
                continue
            for called in _called_names(stmt, skip_functions=True):
                if called in self.functions and called not in self.reached:
                    self.reached[called] = called
                    pending.append(called)
        while pending:
            current = pending.pop()
            for statement in self.functions[current].body:  # type: ignore[attr-defined]
                for called in _called_names(statement, skip_functions=False):
                    if called in self.functions and called not in self.reached:
                        self.reached[called] = self.reached[current]
                        pending.append(called)


def _called_names(node: ast.AST, *, skip_functions: bool) -> Iterator[str]:
    """Names called as ``f(...)`` in ``node``, not inside lambdas, ``__main__`` guards or (optionally) functions."""
    stack = [node]
    while stack:
        current = stack.pop()
        cls = type(current)
        if cls is ast.Lambda or (skip_functions and cls in _FUNCTIONS) or is_main_guard(current):
            continue
        if cls is ast.Call and type(current.func) is ast.Name:  # type: ignore[attr-defined]
            yield current.func.id  # type: ignore[attr-defined]
        stack.extend(ast.iter_child_nodes(current))


_NEVER = object()


def _import_time_step(parent: ast.AST, child: ast.AST, above):
    """The function a node runs in (None at the top level), or _NEVER where it does not run at import."""
    if above is _NEVER or is_main_guard(parent) or type(parent) is ast.Lambda:
        return _NEVER
    if type(parent) in _FUNCTIONS:
        return parent if above is None else _NEVER
    return above


class UnguardedWorkers(Rule):
    # multiprocessing.Process, spawn and start_processes qualify only through a "multiprocessing" import.
    TRIGGERS = ("DataLoader", "Pool", "multiprocessing")
    REQUIRES = (("torch", "multiprocessing", "concurrent"),)

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        name = ctx.qualify(node.func) or context_starter(node.func, ctx.qualify, self._holds_a_context)
        if name in DATALOADERS:
            workers = keyword(node, "num_workers") or positional_at(node, 5)
            if workers is None or integer_value(workers) == 0 or mentions(ctx, workers, PLATFORM_WORDS):
                return
            what = "a DataLoader with worker processes"
        elif name in POOLS:
            what = f"`{name.rsplit('.', 1)[-1]}`"
        else:
            # Only a plain name can be a starter; where the call runs is asked next: it is cheaper than the
            # project, and most calls run later.
            what = self._starter(node) if type(node.func) is ast.Name and self._runs_at_import(node) is not None \
                else None
            if what is None:
                return
        where = self._runs_at_import(node)
        if where is None:
            return
        if any(is_main_guard(statement) for statement in self.ctx.module.body):
            # The script has a guard, but this runs outside it: each worker re-runs it (and all the unguarded
            # code around it: loading checkpoints, building models) when it re-imports the script.
            self.report(node, f"{what} is created {where}, outside the script's `if __name__ == \"__main__\":` "
                              "guard: macOS spawns workers, which re-import the script and run everything outside "
                              "the guard again in each worker; move it under the guard")
            return
        self.report(node, f"{what} is created {where} with no `if __name__ == \"__main__\":` guard: macOS spawns "
                          "workers, which re-import the script and start it again; put the entry point under the guard")

    def _holds_a_context(self, name: ast.Name) -> bool:
        """``ctx`` assigned once, where it is used, a start method's context (``mp.get_context("spawn")``)."""
        value = self.ctx.analysis(DeviceFlow).assigned_value(name)
        return type(value) is ast.Call and self.ctx.qualify(value.func) in CONTEXTS  # type: ignore[union-attr]

    def _starter(self, node: ast.Call) -> Optional[str]:
        """``SubprocVecEnv(fns)``: a class (of this file or imported from the project) or an imported function
        whose call starts worker processes (``analysis/processes.py``)."""
        func = node.func
        if type(func) is not ast.Name or not self.ctx.project.starts_processes(func.id):  # type: ignore[attr-defined]
            return None
        return f"`{func.id}`, which starts worker processes,"  # type: ignore[attr-defined]

    def _runs_at_import(self, node: ast.AST) -> Optional[str]:
        where = self.ctx.tree.inherited("import-time", node, _import_time_step, None)
        if where is _NEVER:
            return None  # under the main guard, in a lambda, or in a nested function (whether it runs is not known)
        function = where
        if function is None:
            return "at the top level of the script"
        if type(self.ctx.parent(function)) is not ast.Module:
            return None  # a method, or a function defined under a condition
        entry = self.ctx.analysis(_Reachable).reached.get(function.name)  # type: ignore[attr-defined]
        if entry is None:
            return None
        name = function.name  # type: ignore[attr-defined]
        return f"in `{name}()`, called at the top level of the script" if entry == name \
            else f"in `{name}()`, reached from `{entry}()` at the top level of the script"
