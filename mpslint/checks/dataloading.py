"""Data loading and multiprocessing on macOS (MPS401-MPS403).

macOS starts worker processes with ``spawn`` (Python >= 3.8): workers re-import
the main script, ``fork`` crashes Objective-C/Metal runtimes, and pinned host
memory is a CUDA concept (knowledge/mps.md §1.5, §3.6).
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional

import libcst as cst

from mpslint.analysis.names import dotted_name
from mpslint.checks.base import Context, FixSpec, Rule, replace
from mpslint.screen import facts as pyast

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

POOLS = frozenset({
    "multiprocessing.Pool", "multiprocessing.pool.Pool", "multiprocessing.Process",
    "multiprocessing.context.SpawnContext.Pool",
    "torch.multiprocessing.Pool", "torch.multiprocessing.Process",
    "torch.multiprocessing.spawn", "torch.multiprocessing.start_processes",
    "concurrent.futures.ProcessPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor",
})

START_METHOD_CALLS = frozenset({
    "multiprocessing.set_start_method", "multiprocessing.get_context",
    "torch.multiprocessing.set_start_method", "torch.multiprocessing.get_context",
    "multiprocessing.context.BaseContext.get_context",
})


# --------------------------------------------------------------------- helpers


def keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> Optional[cst.Arg]:
    args = [a for a in call.args if a.keyword is None and not a.star]
    return args[index] if index < len(args) and not any(a.star for a in call.args[: index + 1]) else None


def string_value(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # pragma: no cover - unusual prefixes
            return None
        return value if isinstance(value, str) else None
    return None


def is_true(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def provably_zero(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Integer) and int(node.value, 0) == 0


def is_main_guard(node: cst.CSTNode) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if not isinstance(node, cst.If) or not isinstance(node.test, cst.Comparison):
        return False
    test = node.test
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if string_value(s) == "__main__"]
    return bool(names) and bool(strings)


def _mentions(node: cst.CSTNode, ctx: Context, words) -> bool:
    code = ctx.code_for(node)
    return any(w in code for w in words)


def guarded_by(ctx: Context, node: cst.CSTNode, words) -> bool:
    """Inside an ``if``/conditional expression whose test mentions one of ``words``."""
    child = node
    for parent in ctx.ancestors(node):
        if isinstance(parent, (cst.If, cst.IfExp, cst.While)) and child is not parent.test:
            if _mentions(parent.test, ctx, words):
                return True
        if isinstance(parent, cst.BooleanOperation) and child is parent.right and _mentions(parent.left, ctx, words):
            return True
        child = parent
    return False


PLATFORM_WORDS = ("darwin", "platform", "linux", "win32", "os.name", "macos", "is_mac")
CUDA_WORDS = ("cuda",)


# --------------------------------------------------------------------- MPS401


def _torch_local_name(ctx: Context) -> Optional[str]:
    for local, target in ctx.imports.bindings.items():
        if target == "torch":
            return local
    return None


DEVICE_FACTORIES = ("torch.device", "torch.accelerator.current_accelerator")


def _device_in_scope(ctx: Context, node: cst.CSTNode) -> bool:
    """A name ``device`` that holds a ``torch.device`` where ``node`` runs.

    Only assignments from ``torch.device(...)``/``pick_device()`` (what
    mpslint's own device fix writes) and parameters annotated ``torch.device``
    count: ``device = "cuda"`` is a string, and ``device.type`` would fail.
    """
    for scope in [p for p in ctx.ancestors(node) if isinstance(p, (cst.FunctionDef, cst.Module))]:
        if isinstance(scope, cst.FunctionDef):
            for param in scope.params.params + scope.params.kwonly_params:
                if param.name.value == "device" and param.annotation is not None:
                    if ctx.qualify(param.annotation.annotation) == "torch.device":
                        return True
        body = scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body
        for stmt in body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)
                        and small.targets[0].target.value == "device"
                        and isinstance(small.value, cst.Call)):
                    func = small.value.func
                    if ctx.qualify(func) in DEVICE_FACTORIES or dotted_name(func) == "pick_device":
                        return True
    return False


class PinMemory(Rule):
    CODE = "MPS401"
    NAME = "pin-memory"
    TRIGGERS = ("pin_memory",)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "pin_memory":
            if ctx.qualify(node.func) is not None or guarded_by(ctx, node, CUDA_WORDS):
                return
            self.report(node, "`.pin_memory()` pins host memory for CUDA transfers: MPS has no pinned memory, "
                              "and on a Mac it fails or does nothing; pin only when CUDA is in use",
                        fix=self._method_fix(node))
            return
        if ctx.qualify(node.func) not in DATALOADERS:
            return
        arg = keyword(node, "pin_memory")
        if arg is None or not is_true(arg.value) or guarded_by(ctx, node, CUDA_WORDS):
            return
        condition = self._cuda_condition(node)
        fix = FixSpec.safe(f"Pin memory only on CUDA: `pin_memory={condition}`",
                           replace(arg.value, condition)) if condition else None
        self.report(arg, "`pin_memory=True` has no effect on MPS (the DataLoader warns and ignores it); "
                         "pin only when the batches go to CUDA", fix=fix)

    def _cuda_condition(self, node: cst.CSTNode) -> Optional[str]:
        if _device_in_scope(self.ctx, node):
            return 'device.type == "cuda"'
        torch = _torch_local_name(self.ctx)
        return f"{torch}.cuda.is_available()" if torch else None

    def _method_fix(self, node: cst.Call) -> Optional[FixSpec]:
        receiver = node.func.value
        parent = self.ctx.parent(node)
        if node.args or dotted_name(receiver) is None:
            return None  # re-evaluating the receiver must be free of side effects
        if not (isinstance(parent, (cst.Assign, cst.Return, cst.AnnAssign))
                or (isinstance(parent, cst.Arg) and parent.value is node)):
            return None
        condition = self._cuda_condition(node)
        if condition is None:
            return None
        source = self.ctx.code_for(receiver)
        text = f"{source}.pin_memory() if {condition} else {source}"
        return FixSpec.safe("Pin memory only on CUDA", replace(node, text))


# --------------------------------------------------------------------- MPS402


class ForkStartMethod(Rule):
    CODE = "MPS402"
    NAME = "fork-start-method"
    TRIGGERS = ("fork",)

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = ctx.qualify(node.func)
        if name == "os.fork":
            if not guarded_by(ctx, node, PLATFORM_WORDS):
                self.report(node, "`os.fork()` after torch (Metal/Objective-C) has initialised crashes the child on "
                                  "macOS; start workers with the spawn method instead")
            return
        method = None
        if name in START_METHOD_CALLS:
            method = keyword(node, "method") or positional(node, 0)
        arg = method or keyword(node, "multiprocessing_context") or keyword(node, "mp_context")
        if arg is None or string_value(arg.value) != "fork" or guarded_by(ctx, node, PLATFORM_WORDS):
            return
        quote = ctx.code_for(arg.value)
        spawn = quote.replace("fork", "spawn")
        self.report(arg.value, "the 'fork' start method crashes Objective-C/Metal runtimes on macOS (the default "
                               "there is 'spawn'); use 'spawn'",
                    fix=FixSpec.unsafe("Use the 'spawn' start method", replace(arg.value, spawn)))


# --------------------------------------------------------------------- MPS403


class _Reachable:
    """Module-level functions that run when the module is imported (spawn re-imports ``__main__``).

    Seeds are plain-name calls in unguarded top-level code (class bodies
    included); a function called from a reached function is reached too.
    """

    def __init__(self, ctx: Context) -> None:
        module = ctx.module
        self.functions: Dict[str, cst.FunctionDef] = {
            stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.FunctionDef)
        }
        self.reached: Dict[str, str] = {}  # function -> the top-level function through which it is reached
        pending: List[tuple] = []
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef) or is_main_guard(stmt):
                continue
            for called in _called_names(stmt, skip_functions=True):
                if called in self.functions and called not in self.reached:
                    self.reached[called] = called
                    pending.append(called)
        while pending:
            current = pending.pop()
            for called in _called_names(self.functions[current].body, skip_functions=False):
                if called in self.functions and called not in self.reached:
                    self.reached[called] = self.reached[current]
                    pending.append(called)


def _called_names(node: cst.CSTNode, *, skip_functions: bool) -> Iterator[str]:
    collector = _CallNames(skip_functions)
    node.visit(collector)
    return iter(collector.names)


class _CallNames(cst.CSTVisitor):
    def __init__(self, skip_functions: bool) -> None:
        super().__init__()
        self.skip_functions = skip_functions
        self.names: List[str] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return not self.skip_functions

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_If(self, node: cst.If) -> bool:
        return not is_main_guard(node)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.names.append(node.func.value)


class UnguardedWorkers(Rule):
    CODE = "MPS403"
    NAME = "unguarded-workers"
    # multiprocessing.Process, spawn and start_processes qualify only through a "multiprocessing" import.
    TRIGGERS = ("DataLoader", "Pool", "multiprocessing")
    REQUIRES = (("torch", "multiprocessing", "concurrent"),)

    @staticmethod
    def screen(facts) -> bool:
        """A worker-starting call that may run at import: at the top level or in a top-level function."""
        index = facts.index
        for call, scope in facts.calls_to(DATALOADERS | POOLS):
            if facts.qualify(call.func) in DATALOADERS:
                workers = pyast.keyword(call, "num_workers")
                plain = [a for a in call.args if type(a) is not ast.Starred]
                if workers is None and len(plain) < 6:
                    continue
                if workers is not None and type(workers) is ast.Constant and type(workers.value) is int \
                        and workers.value == 0:
                    continue
            if type(scope) is ast.Module or id(scope) in index.top_level_functions:
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = ctx.qualify(node.func)
        if name in DATALOADERS:
            workers = keyword(node, "num_workers") or positional(node, 5)
            if workers is None or provably_zero(workers.value) or self._platform_aware(workers.value):
                return
            what = "a DataLoader with worker processes"
        elif name in POOLS:
            what = f"`{name.rsplit('.', 1)[-1]}`"
        else:
            return
        where = self._runs_at_import(node)
        if where is None:
            return
        self.report(node, f"{what} is created {where} with no `if __name__ == \"__main__\":` guard: macOS spawns "
                          "workers, which re-import the script and start it again; put the entry point under the guard")

    def _platform_aware(self, value: cst.CSTNode) -> bool:
        return _mentions(value, self.ctx, PLATFORM_WORDS)

    def _runs_at_import(self, node: cst.CSTNode) -> Optional[str]:
        function = None
        for parent in self.ctx.ancestors(node):
            if is_main_guard(parent):
                return None
            if isinstance(parent, cst.Lambda):
                return None
            if isinstance(parent, cst.FunctionDef):
                if function is not None:
                    return None  # a nested function: whether it runs is not known
                function = parent
        if function is None:
            return "at the top level of the script"
        if not isinstance(self.ctx.parent(function), cst.Module):
            return None  # a method, or a function defined under a condition
        reachable = self.ctx.analysis(_Reachable)
        entry = reachable.reached.get(function.name.value)
        if entry is None:
            return None
        return f"in `{function.name.value}()`, called at the top level of the script" if entry == function.name.value \
            else f"in `{function.name.value}()`, reached from `{entry}()` at the top level of the script"


RULES = [PinMemory, ForkStartMethod, UnguardedWorkers]
