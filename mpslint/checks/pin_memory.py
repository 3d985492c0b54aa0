"""Pinned host memory is a CUDA feature: pin only when the data goes to CUDA (see ``rules/MPS401.md``)."""

from __future__ import annotations

import ast
from typing import Dict, Optional

from mpslint.analysis.syntax import dotted_name, keyword_node
from mpslint.checks.base import Context, FixSpec, Rule, replace
from mpslint.checks.workers import CUDA_WORDS, DATALOADERS, guarded_by

DEVICE_FACTORIES = ("torch.device", "torch.accelerator.current_accelerator")


def _torch_local_name(ctx: Context) -> Optional[str]:
    for local, target in ctx.imports.bindings.items():
        if target == "torch":
            return local
    return None


def _device_in_scope(ctx: Context, node: ast.AST) -> bool:
    """A name ``device`` that holds a ``torch.device`` when ``node`` runs.

    Only assignments from ``torch.device(...)``/``pick_device()`` (what
    mpslint's own device fix writes) and parameters annotated ``torch.device``
    count: ``device = "cuda"`` is a string, and ``device.type`` would fail.
    Code of the module itself, and of a function that binds ``device``, runs
    in order: there the assignment must come before ``node``. A function that
    does not bind it reads the module's (or an enclosing function's), which
    is bound by the time it is called.
    """
    scopes = ctx.analysis(_TorchDeviceScopes)
    scope = ctx.tree.scope_of(node)
    if scope is ctx.module or scopes.binds_name(scope):
        return scopes.binds_before(scope, ctx.tree.index(node))
    return scopes.binds_before(ctx.module, None) or ctx.tree.inherited("torch-device-in-scope", node, scopes.step, False)


class _TorchDeviceScopes:
    """Per file: where functions (and the module) bind ``device`` to a ``torch.device``, each looked at once."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.known: Dict[ast.AST, Optional[int]] = {}
        self.named: Dict[ast.AST, bool] = {}

    def binds_before(self, scope: ast.AST, index: Optional[int]) -> bool:
        """Whether ``scope`` binds ``device`` to a torch.device before the node at ``index`` (None: anywhere)."""
        if scope not in self.known:
            self.known[scope] = _torch_device_binding(self.ctx, scope)
        where = self.known[scope]
        return where is not None and (index is None or where < index)

    def binds_name(self, scope: ast.AST) -> bool:
        """Whether ``device`` is a local name of the function ``scope`` (any binding, anywhere in it)."""
        found = self.named.get(scope)
        if found is None:
            found = self.named[scope] = _binds_name(self.ctx, scope, "device")
        return found

    def step(self, parent: ast.AST, child: ast.AST, above: bool) -> bool:
        return above or (type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef) and self.binds_before(parent, None))


def _torch_device_binding(ctx: Context, scope: ast.AST) -> Optional[int]:
    """The tree index where ``scope`` first binds ``device`` to a torch.device (a parameter: its function's)."""
    if type(scope) in (ast.FunctionDef, ast.AsyncFunctionDef):
        for param in [*scope.args.args, *scope.args.kwonlyargs]:  # type: ignore[attr-defined]
            if param.arg == "device" and param.annotation is not None:
                if ctx.qualify(param.annotation) == "torch.device":
                    return ctx.tree.index(scope)
    elif type(scope) is not ast.Module:
        return None
    for stmt in scope.body:  # type: ignore[attr-defined]
        if (type(stmt) is ast.Assign and len(stmt.targets) == 1
                and type(stmt.targets[0]) is ast.Name and stmt.targets[0].id == "device"
                and type(stmt.value) is ast.Call):
            func = stmt.value.func
            if ctx.qualify(func) in DEVICE_FACTORIES or dotted_name(func) == "pick_device":
                return ctx.tree.end(stmt)  # bound once the whole statement has run
    return None


def _binds_name(ctx: Context, scope: ast.AST, name: str) -> bool:
    if type(scope) not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
        return False
    arguments = scope.args  # type: ignore[attr-defined]
    if any(a.arg == name for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                   *filter(None, (arguments.vararg, arguments.kwarg))]):
        return True
    tree = ctx.tree
    for index in range(tree.index(scope) + 1, tree.end(scope) + 1):
        node = tree.nodes[index]
        if tree.scope_of(node) is scope and type(node) is ast.Name and node.id == name \
                and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            return True
    return False


def _literal_kwargs(node: Optional[ast.AST]):
    """The (key, value) pairs of ``{"pin_memory": True, ...}`` or ``dict(pin_memory=True, ...)``; None for
    anything else (a dict built another way says nothing sure about its keys)."""
    if type(node) is ast.Dict:
        return [(k.value, v) for k, v in zip(node.keys, node.values)  # type: ignore[attr-defined]
                if type(k) is ast.Constant and isinstance(k.value, str)]
    if type(node) is ast.Call and dotted_name(node.func) == "dict" and not node.args:  # type: ignore[attr-defined]
        return [(k.arg, k.value) for k in node.keywords if k.arg is not None]  # type: ignore[attr-defined]
    return None


class PinMemory(Rule):
    TRIGGERS = ("pin_memory",)

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if type(node.func) is ast.Attribute and node.func.attr == "pin_memory":
            if ctx.qualify(node.func) is not None or guarded_by(ctx, node, CUDA_WORDS):
                return
            self.report(node, "`.pin_memory()` pins host memory for CUDA transfers: MPS has no pinned memory, "
                              "and on a Mac it fails or does nothing; pin only when CUDA is in use",
                        fix=self._method_fix(node))
            return
        if ctx.qualify(node.func) not in DATALOADERS:
            return
        for item in node.keywords:
            if item.arg is None and type(item.value) is ast.Name:
                self._pinned_through(item.value, node)
        arg = keyword_node(node, "pin_memory")
        if arg is None or not (type(arg.value) is ast.Constant and arg.value.value is True) or guarded_by(ctx, node, CUDA_WORDS):
            return
        condition = self._cuda_condition(node)
        fix = FixSpec.safe(f"Pin memory only on CUDA: `pin_memory={condition}`",
                           replace(arg.value, condition)) if condition else None
        self.report(arg, "`pin_memory=True` has no effect on MPS (the DataLoader warns and ignores it); "
                         "pin only when the batches go to CUDA", fix=fix)

    def _pinned_through(self, name: ast.Name, loader: ast.Call) -> None:
        """``DataLoader(ds, **kwargs)`` with ``kwargs = {"num_workers": 1, "pin_memory": True}`` before it."""
        ctx = self.ctx
        scope = ctx.tree.scope_of(loader)
        before = ctx.tree.index(loader)
        found = None
        for assign in ctx.tree.of_type(ast.Assign):
            if ctx.tree.index(assign) >= before or ctx.tree.scope_of(assign) is not scope:
                continue
            if any(type(t) is ast.Name and t.id == name.id for t in assign.targets):  # type: ignore[attr-defined]
                found = assign.value  # type: ignore[attr-defined]
        if found is None and not guarded_by(ctx, loader, CUDA_WORDS):
            self._pinned_elsewhere(name)
            return
        pairs = _literal_kwargs(found)
        if pairs is None or guarded_by(ctx, found, CUDA_WORDS):
            return  # `{"pin_memory": True} if use_cuda else {}` pins for CUDA only
        for key, value in pairs:
            if key == "pin_memory" and type(value) is ast.Constant and value.value is True:
                condition = self._cuda_condition(value)
                fix = FixSpec.safe(f"Pin memory only on CUDA: `{condition}`", replace(value, condition)) if condition else None
                self.report(value, "`pin_memory` set to True in keyword arguments for a DataLoader has no effect on MPS "
                                   "(the DataLoader warns and ignores it); pin only when the batches go to CUDA", fix=fix)

    def _pinned_elsewhere(self, name: ast.Name) -> None:
        """``DataLoader(ds, **loader_kwargs)`` with the dict imported from another module of the project, which
        sets ``pin_memory=True`` unconditionally (the fix belongs there, so none is offered here)."""
        fact = self.ctx.project.imported(name.id)
        if fact is not None and fact[0] == "value" and "pin_memory=True" in str(fact[1]).split(":", 1)[-1].split(","):
            self.report(name, f"`{name.id}` (imported) sets `pin_memory=True` for this DataLoader, which has no "
                              "effect on MPS (the DataLoader warns and ignores it); pin only when the batches go to CUDA")

    def _cuda_condition(self, node: ast.AST) -> Optional[str]:
        if _device_in_scope(self.ctx, node):
            return 'device.type == "cuda"'
        torch = _torch_local_name(self.ctx)
        return f"{torch}.cuda.is_available()" if torch else None

    def _method_fix(self, node: ast.Call) -> Optional[FixSpec]:
        receiver = node.func.value  # type: ignore[attr-defined]
        parent = self.ctx.parent(node)
        if node.args or node.keywords or dotted_name(receiver) is None:
            return None  # re-evaluating the receiver must be free of side effects
        in_call = type(parent) is ast.Call and node is not parent.func and node in parent.args  # type: ignore[attr-defined]
        if not (type(parent) in (ast.Assign, ast.Return, ast.AnnAssign) or type(parent) is ast.keyword or in_call):
            return None
        condition = self._cuda_condition(node)
        if condition is None:
            return None
        source = self.ctx.text(receiver)
        text = f"{source}.pin_memory() if {condition} else {source}"
        return FixSpec.safe("Pin memory only on CUDA", replace(node, text))
