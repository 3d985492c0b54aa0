"""CUDA-only mixed precision: ``torch.cuda.amp`` or ``autocast("cuda")`` (see ``rules/MPS105.md``)."""

from __future__ import annotations

import ast
from typing import Dict, Optional, Tuple

from mpslint.analysis.cuda_context import is_cuda_literal
from mpslint.analysis.syntax import has_star, keyword, positional, string_value
from mpslint.checks.base import FixSpec, Rule, insert_line_after, replace
from mpslint.checks.cuda_imports import report_unused_import
from mpslint.checks.rewriting import combined, cuda, picker, torch_name
from mpslint.knowledge import cuda_api
from mpslint.knowledge.cuda_api import floor_of

_AUTOCAST_CUDA = ("torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast")
_AUTOCAST = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast")
_SCALER_CUDA = ("torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler")
_SCALER = ("torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler")
_CUSTOM = ("torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd")


_AMP = frozenset(_AUTOCAST_CUDA + _AUTOCAST + _SCALER_CUDA + _SCALER)  # the calls visit_Call reports


class CudaAmp(Rule):
    TRIGGERS = ("cuda", "GradScaler")

    def visit_Call(self, node: ast.Call) -> None:
        name = self.ctx.qualify(node.func)
        if name is None:
            self._aliased_autocast(node)
            return
        if name not in _AMP or not cuda(self.ctx).unguarded(node):
            return
        if (name in _AUTOCAST_CUDA or name in _AUTOCAST and self._device_arg_is_cuda(node, "device_type")) \
                and self._decorates(node):
            self._decorator(node)
        elif name in _AUTOCAST_CUDA:
            self.report(node, "`torch.cuda.amp.autocast` only casts on CUDA; use `torch.autocast(device_type=device.type)`",
                        fix=self._fix_autocast(node, ("enabled", "dtype", "cache_enabled"), skip=0))
        elif name in _AUTOCAST and self._device_arg_is_cuda(node, "device_type"):
            self.report(node, 'autocast with device_type "cuda" does nothing on MPS; use `device_type=device.type`',
                        fix=self._fix_autocast(node, ("device_type", "dtype", "enabled", "cache_enabled"), skip=1))
        elif name in _SCALER_CUDA:
            self.report(node, "`torch.cuda.amp.GradScaler` disables itself without CUDA; use `torch.amp.GradScaler(device.type)`",
                        fix=self._fix_scaler(node, skip=0))
        elif name in _SCALER and (self._device_arg_is_cuda(node, "device") or self._no_device(node)):
            self.report(node, 'GradScaler for "cuda" disables itself on MPS; use `torch.amp.GradScaler(device.type)`',
                        fix=self._fix_scaler(node, skip=1 if not self._no_device(node) else 0))

    def _aliased_autocast(self, node: ast.Call) -> None:
        """``precision_scope = autocast if opt.precision == "autocast" else nullcontext`` (in the function or the
        module), then ``with precision_scope("cuda"):``: autocast for CUDA only, through a local name.

        Not fixed: the name may be another context manager (``nullcontext``) that takes the argument as is.
        """
        func = node.func
        if type(func) is not ast.Name or not self._device_arg_is_cuda(node, "device_type"):
            return
        if not cuda(self.ctx).unguarded(node):
            return
        scope = self.ctx.tree.scope_of(node)
        value = self._binding(scope, func.id)
        if value is None and scope is not self.ctx.tree.module:
            value = self._binding(self.ctx.tree.module, func.id)
        sides = [value.body, value.orelse] if type(value) is ast.IfExp else [value]  # type: ignore[attr-defined]
        if value is not None and any(self.ctx.qualify(side) in _AUTOCAST for side in sides):
            self.report(node, f'`{func.id}` is autocast here, and device_type "cuda" does nothing on MPS; use '
                              "`device_type=device.type`; not fixed: it is reached through a name")

    def _binding(self, scope: ast.AST, name: str) -> Optional[ast.AST]:
        cache = self.__dict__.setdefault("_bindings", {})
        key = (id(scope), name)
        if key not in cache:
            cache[key] = _single_binding(scope, name)
        return cache[key]

    def _decorates(self, node: ast.Call) -> bool:
        parent = self.ctx.parent(node)
        return type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef) and node in parent.decorator_list  # type: ignore[attr-defined]

    def _decorator(self, node: ast.Call) -> None:
        """``@autocast("cuda", enabled=False)``: it runs when the function is defined, before any device exists."""
        function = self.ctx.parent(node)
        enabled = keyword(node, "enabled")
        disabling = type(enabled) is ast.Constant and enabled.value is False  # type: ignore[attr-defined]
        if not disabling:
            self.report(node, "autocast for CUDA only, as a decorator, which runs before any device exists; "
                              "use `with torch.autocast(device_type=x.device.type):` inside the function")
            return
        for other in function.decorator_list:  # type: ignore[attr-defined]
            if other is not node and type(other) is ast.Call and self.ctx.qualify(other.func) in _AUTOCAST \
                    and string_value(positional(other)[0] if positional(other) else keyword(other, "device_type")) == "mps":
                return  # already disabled for MPS as well
        torch = torch_name(self.ctx)
        fix = None
        if torch is not None and floor_of(self.ctx.settings.torch_version) >= cuda_api.AMP_AUTOCAST_MPS:
            indent = self.ctx.tree.line_text(node.lineno)[: self.ctx.tree.start(node)[1] - 1]
            if not indent.strip():
                line = f'{indent}@{torch}.autocast("mps", enabled=False)\n'
                fix = FixSpec.safe("Disable autocast on MPS too", insert_line_after(node, line))
        self.report(node, "this decorator keeps the function out of autocast on CUDA only; on MPS the caller's "
                          'autocast still applies: stack `@torch.autocast("mps", enabled=False)` (torch 2.5)', fix=fix)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for expr in node.decorator_list:
            name = self.ctx.qualify(expr.func if type(expr) is ast.Call else expr)
            if name in _CUSTOM and cuda(self.ctx).unguarded(expr):
                what = name.rsplit(".", 1)[-1]
                self.report(expr, f"`torch.cuda.amp.{what}` is CUDA-only; use `torch.amp.{what}(device_type=...)` (torch 2.4)")

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        report_unused_import(self, node, lambda base, name: base == "torch.cuda.amp" or (base, name) == ("torch.cuda", "amp"))

    def _device_arg_is_cuda(self, node: ast.Call, name: str) -> bool:
        if node.args:
            return is_cuda_literal(node.args[0])
        value = keyword(node, name)
        return value is not None and is_cuda_literal(value)

    def _no_device(self, node: ast.Call) -> bool:
        values = positional(node)
        if values and string_value(values[0]) is None:
            # torch.amp.GradScaler(2.0**16): the first positional is init_scale only in torch.cuda.amp
            return False
        return not values and keyword(node, "device") is None

    def _arguments(self, node: ast.Call, order: Tuple[str, ...], skip: int) -> Optional[Dict[str, ast.AST]]:
        """Keyword name -> value node, mapping positional arguments by ``order``."""
        if has_star(node):
            return None
        found: Dict[str, ast.AST] = {}
        for i, value in enumerate(node.args):
            key = order[i] if i < len(order) else None
            if key is None:
                return None
            found[key] = value
        for item in node.keywords:
            if item.arg not in order:
                return None
            found[item.arg] = item.value  # type: ignore[index]
        for key in order[:skip]:
            found.pop(key, None)
        return found

    def _fix_autocast(self, node: ast.Call, order: Tuple[str, ...], skip: int) -> Optional[FixSpec]:
        floor = floor_of(self.ctx.settings.torch_version)
        if floor < cuda_api.AMP_AUTOCAST_MPS:
            return None  # torch.autocast("mps") raises before 2.5, even disabled
        args = self._arguments(node, order, skip)
        torch = torch_name(self.ctx)
        if args is None or torch is None:
            return None
        text_of = self.ctx.text
        dtype = args.get("dtype")
        if dtype is not None and "bfloat16" in text_of(dtype) and floor < cuda_api.AMP_AUTOCAST_MPS_BFLOAT16:
            return None
        ref = picker(self.ctx).device_ref(node)
        if ref is None:
            return None
        # Without CUDA, torch.cuda.amp.autocast disabled itself: keep the CPU in float32.
        cond = f'{ref.type} != "cpu"'
        parts = [f"device_type={ref.type}"]
        for key in ("dtype", "cache_enabled"):
            if key in args:
                parts.append(f"{key}={text_of(args[key])}")
        enabled = args.get("enabled")
        parts.append("enabled=" + (cond if enabled is None else combined(enabled, text_of(enabled), cond)))
        text = f"{torch}.autocast({', '.join(parts)})"
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *ref.edits)

    def _fix_scaler(self, node: ast.Call, skip: int) -> Optional[FixSpec]:
        floor = floor_of(self.ctx.settings.torch_version)
        if floor < cuda_api.AMP_GRAD_SCALER:
            return None
        order: Tuple[str, ...] = ("init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled")
        if skip:
            order = ("device",) + order
        args = self._arguments(node, order, skip)
        torch = torch_name(self.ctx)
        if args is None or torch is None:
            return None
        ref = picker(self.ctx).device_ref(node)
        if ref is None:
            return None
        # The CUDA scaler disabled itself on CPU; GradScaler("mps") needs torch 2.8 (float64 in unscale_ before).
        if floor >= cuda_api.AMP_GRAD_SCALER_MPS:
            cond = f'{ref.type} != "cpu"'
        else:
            cond = f'{ref.type} == "cuda"'
        text_of = self.ctx.text
        parts = [ref.type]
        for key in order[skip:]:
            if key in args and key != "enabled":
                parts.append(f"{key}={text_of(args[key])}")
        enabled = args.get("enabled")
        parts.append("enabled=" + (cond if enabled is None else combined(enabled, text_of(enabled), cond)))
        text = f"{torch}.amp.GradScaler({', '.join(parts)})"
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *ref.edits)


def _single_binding(scope: ast.AST, name: str) -> Optional[ast.AST]:
    """The value of the only binding of ``name`` directly in ``scope`` (not in functions or classes inside it),
    when that binding is a plain ``name = value``."""
    stores = 0
    value: Optional[ast.AST] = None
    stack = list(getattr(scope, "body", []))
    while stack:
        node = stack.pop()
        cls = type(node)
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
            stores += node.name == name if cls is not ast.Lambda else 0  # type: ignore[attr-defined]
            continue
        if cls is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name \
                and node.targets[0].id == name:  # type: ignore[attr-defined]
            value = node.value  # type: ignore[attr-defined]
        elif cls is ast.Name and node.id == name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
            stores += 1
        elif cls in (ast.Import, ast.ImportFrom):
            stores += any((a.asname or a.name).split(".")[0] == name for a in node.names)  # type: ignore[attr-defined]
        stack.extend(ast.iter_child_nodes(node))
    return value if stores == 1 else None
