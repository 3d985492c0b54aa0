"""Ops with no MPS kernel, and ops MPS always runs on the CPU (see ``rules/MPS501.md``, ``rules/MPS502.md``).

The floor is ``settings.torch_version``. Findings come from the MPS kernel
table (``knowledge/mps_kernels``) through the Python-surface map
(``knowledge/surface``). With no floor set, the table is the installed torch's
own yaml when torch is installed (read from disk, never imported), else the
newest bundled table.
"""

from __future__ import annotations

import ast
from typing import Optional, Sequence, Tuple

from mpslint.analysis.syntax import argument, positional_at, string_value
from mpslint.checks.base import Rule
from mpslint.knowledge import mps_kernels, surface
from mpslint.knowledge.mps_kernels import KernelTable, version_text, version_tuple

_SURFACE_LASTS = frozenset(name.rsplit(".", 1)[-1] for name in surface.SURFACE)


def _given(call: ast.Call, name: str, position: Optional[int]) -> bool:
    """Passed with a value that may be set; a forwarded ``max_norm=self.max_norm`` is unknown, so not."""
    value = argument(call, name, position)
    if value is None or (type(value) is ast.Constant and (value.value is None or value.value is False)):  # type: ignore[attr-defined]
        return False
    forwarded = (type(value) is ast.Name and value.id == name) or (type(value) is ast.Attribute and value.attr == name)  # type: ignore[attr-defined]
    return not forwarded


def _is_one(node: ast.AST) -> bool:
    if type(node) is ast.Constant:
        return type(node.value) is int and node.value == 1  # type: ignore[attr-defined]
    if type(node) in (ast.Tuple, ast.List):
        return bool(node.elts) and all(_is_one(e) for e in node.elts)  # type: ignore[attr-defined]
    return False


def condition_holds(call: ast.Call, when) -> bool:
    if when is None:
        return True
    kind = when[0]
    if kind in ("kwarg", "kwarg-true"):
        return _given(call, when[1], when[2])
    if kind == "not-kwarg":
        return not _given(call, when[1], when[2])
    if kind == "not-output-size-1":
        value = argument(call, when[1], when[2])
        return value is not None and not _is_one(value)
    if kind in ("mode", "mode-antialias"):
        mode = argument(call, "mode", None)
        if mode is None or string_value(mode) != when[1]:
            return False
        if kind == "mode":
            return True
        antialias = argument(call, "antialias", None)
        return type(antialias) is ast.Constant and antialias.value is True  # type: ignore[attr-defined]
    raise ValueError(f"unknown surface condition {when!r}")


def reached_ops(rule: Rule, call: ast.Call) -> Sequence[Tuple[bool, str]]:
    """(whether matched as a method, aten op) for every op this call reaches under its arguments; ``display``
    names the call in a finding (asked only then: reading a node's text costs the file's line table).

    Not a generator: two rules ask it of every call, and nearly every answer is empty.
    """
    func = call.func
    if type(func) is ast.Attribute:
        last = func.attr
    elif type(func) is ast.Name:
        last = func.id
    else:
        return _NONE
    ctx = rule.ctx
    if last not in _SURFACE_LASTS and last not in ctx.imports.bindings:
        return _NONE  # the usual answer, without qualifying the name
    name = ctx.qualify(func)
    if name is not None:
        reaches = surface.lookup(name)
        as_method = False
    elif type(func) is ast.Attribute and not (type(func.value) is ast.Name and func.value.id in ("self", "cls", "np", "numpy")):
        reaches = surface.method(last)
        as_method = True
    else:
        return _NONE
    if reaches and _on_cpu(call):
        return _NONE
    return [(as_method, op) for reach in reaches if condition_holds(call, reach.when) for op in reach.ops]


_NONE: Tuple[Tuple[bool, str], ...] = ()


def display(rule: Rule, call: ast.Call, as_method: bool) -> str:
    """How a finding names the call ``reached_ops`` matched: its text, or ``.name()`` for a method."""
    func = call.func
    return f".{func.attr}()" if as_method else rule.ctx.text(func)  # type: ignore[attr-defined]


def _on_cpu(call: ast.Call) -> bool:
    """The input is explicitly a host tensor: ``torch.linalg.svd(w.cpu())`` runs on the CPU anyway."""
    value = positional_at(call, 0)
    if not (type(value) is ast.Call and type(value.func) is ast.Attribute):  # type: ignore[attr-defined]
        return False
    method = value.func.attr  # type: ignore[attr-defined]
    if method == "cpu":
        return True
    if method == "to" and value.args:  # type: ignore[attr-defined]
        return string_value(value.args[0]) == "cpu"  # type: ignore[attr-defined]
    return False


def table_for(rule: Rule) -> KernelTable:
    return mps_kernels.load_table(rule.ctx.settings.torch_version)


def _short(table: KernelTable) -> str:
    return version_text(version_tuple(table.version))


def _which(rule: Rule, table: KernelTable) -> str:
    """``2.13 (the installed torch; no torch-version set)``: the torch a finding is about, and why that one."""
    settings = rule.ctx.settings
    if settings.torch_version is None:
        where = "the newest torch mpslint knows" if str(table.source).startswith("bundled") else "the installed torch"
        return f"{_short(table)} ({where}; no torch-version set)"
    return f"{_short(table)} ({settings.torch_version_origin})" if settings.torch_version_origin else _short(table)


class OpWithoutMpsKernel(Rule):
    TRIGGERS = tuple(sorted(_SURFACE_LASTS))
    # A qualified torch name, or a method matched on its name alone (surface.method), after its dot.
    REQUIRES = (("torch",) + tuple(sorted("." + k.split(".", 1)[1] for k, v in surface.SURFACE.items()
                                          if k.startswith("Tensor.") and any(r.method_safe for r in v))),)

    def visit_Call(self, node: ast.Call) -> None:
        table = None
        for as_method, op in reached_ops(self, node):
            table = table or table_for(self)
            if table.has_mps_kernel(op) or op in table.explicit_cpu_fallbacks or table.is_composite(op):
                continue
            self.report(node, f"`{display(self, node, as_method)}` runs aten::{op}, which has no MPS kernel in torch {_which(self, table)}: "
                              f"on mps it raises NotImplementedError unless PYTORCH_ENABLE_MPS_FALLBACK=1 sends it "
                              f"to the CPU{self._since(table, op)}")
            return

    @staticmethod
    def _since(table: KernelTable, op: str) -> str:
        first = table.first_mps_version(op)
        if first is not None and first > version_tuple(table.version):
            return f"; torch {version_text(first)} adds the MPS kernel"
        latest = mps_kernels.load_table(None)
        if latest.has_mps_kernel(op):
            return f"; torch {_short(latest)} has the MPS kernel"
        return f"; no torch release up to {_short(latest)} has one"


class OpCpuFallback(Rule):
    TRIGGERS = OpWithoutMpsKernel.TRIGGERS
    REQUIRES = OpWithoutMpsKernel.REQUIRES

    def visit_Call(self, node: ast.Call) -> None:
        for as_method, op in reached_ops(self, node):
            table = table_for(self)
            if op in table.explicit_cpu_fallbacks and not table.has_mps_kernel(op):
                self.report(node, f"`{display(self, node, as_method)}` runs aten::{op}, which torch {_which(self, table)} always runs on the CPU "
                                  "on mps (an explicit fallback): every call copies its tensors to the host and back")
                return
