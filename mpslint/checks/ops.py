"""Op coverage, dtypes and version-gated features on MPS (MPS501-MPS504).

The floor is ``settings.torch_version``. Op findings come from the MPS kernel
table (``knowledge/mps_kernels``) through the Python-surface map
(``knowledge/surface``). With no floor set, the table is the installed torch's
own yaml when torch is installed (read from disk, never imported), else the
newest bundled table; feature gates (MPS504) then assume the newest known torch
and stay silent, because a project that states no floor runs whatever is current.
"""

from __future__ import annotations

import ast
from typing import Iterator, Optional, Tuple

import libcst as cst

from mpslint.checks.base import Rule
from mpslint.checks.dataloading import keyword, positional, string_value
from mpslint.knowledge import mps_kernels, surface, versions
from mpslint.knowledge.mps_kernels import KernelTable, version_text, version_tuple
from mpslint.screen import facts as pyast

FALSY = ("None", "False")


def _argument(call: cst.Call, name: str, position: Optional[int]) -> Optional[cst.CSTNode]:
    arg = keyword(call, name) or (positional(call, position) if position is not None else None)
    return arg.value if arg is not None else None


def _given(call: cst.Call, name: str, position: Optional[int]) -> bool:
    """Passed with a value that may be set; a forwarded ``max_norm=self.max_norm`` is unknown, so not."""
    value = _argument(call, name, position)
    if value is None or (isinstance(value, cst.Name) and value.value in FALSY):
        return False
    forwarded = (isinstance(value, cst.Name) and value.value == name) or (
        isinstance(value, cst.Attribute) and value.attr.value == name)
    return not forwarded


def _is_one(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Integer):
        return int(node.value, 0) == 1
    if isinstance(node, (cst.Tuple, cst.List)):
        return bool(node.elements) and all(_is_one(e.value) for e in node.elements)
    return False


def condition_holds(call: cst.Call, when) -> bool:
    if when is None:
        return True
    kind = when[0]
    if kind in ("kwarg", "kwarg-true"):
        return _given(call, when[1], when[2])
    if kind == "not-kwarg":
        return not _given(call, when[1], when[2])
    if kind == "not-output-size-1":
        value = _argument(call, when[1], when[2])
        return value is not None and not _is_one(value)
    if kind in ("mode", "mode-antialias"):
        mode = _argument(call, "mode", None)
        if mode is None or string_value(mode) != when[1]:
            return False
        if kind == "mode":
            return True
        antialias = _argument(call, "antialias", None)
        return isinstance(antialias, cst.Name) and antialias.value == "True"
    raise ValueError(f"unknown surface condition {when!r}")


def table_for(rule: Rule) -> KernelTable:
    return mps_kernels.load_table(rule.ctx.settings.torch_version)


def reached_ops(rule: Rule, call: cst.Call) -> Iterator[Tuple[str, str]]:
    """(display name, aten op) for every op this call reaches under its arguments."""
    ctx = rule.ctx
    name = ctx.qualify(call.func)
    if name is not None:
        reaches = surface.lookup(name)
        display = ctx.code_for(call.func)
    elif isinstance(call.func, cst.Attribute) and not (
        isinstance(call.func.value, cst.Name) and call.func.value.value in ("self", "cls", "np", "numpy")
    ):
        reaches = surface.method(call.func.attr.value)
        display = f".{call.func.attr.value}()"
    else:
        return
    if reaches and _on_cpu(call):
        return
    for reach in reaches:
        if condition_holds(call, reach.when):
            for op in reach.ops:
                yield display, op


def _on_cpu(call: cst.Call) -> bool:
    """The input is explicitly a host tensor: ``torch.linalg.svd(w.cpu())`` runs on the CPU anyway."""
    first = positional(call, 0)
    value = first.value if first is not None else None
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return False
    method = value.func.attr.value
    if method == "cpu":
        return True
    if method == "to" and value.args:
        return string_value(value.args[0].value) == "cpu"
    return False


def _short(table: KernelTable) -> str:
    return version_text(version_tuple(table.version))


# ------------------------------------------------------------- the screens


def _no_kernel(table: KernelTable, op: str) -> bool:  # what MPS501 reports
    return not (table.has_mps_kernel(op) or op in table.explicit_cpu_fallbacks or table.is_composite(op))


def _cpu_fallback(table: KernelTable, op: str) -> bool:  # what MPS502 reports
    return op in table.explicit_cpu_fallbacks and not table.has_mps_kernel(op)


def _screen_ops(facts, finding) -> bool:
    """A call ``reached_ops`` may resolve to an op ``finding`` reports, under a condition that may hold.

    The op table (``load_table``) is only consulted for calls that reach some op at all.
    """
    lasts = _SURFACE_LASTS
    imports = facts.index.imports
    reached = set()
    for call, _ in facts.index.calls:
        func = call.func
        kind = type(func)
        if kind is ast.Attribute:
            last = func.attr
        elif kind is ast.Name:
            last = func.id
        else:
            continue
        if last not in lasts and last not in imports:
            continue
        qualified = facts.qualify(func)
        if qualified is not None:
            reaches = surface.lookup(qualified)
        elif kind is ast.Attribute and not (type(func.value) is ast.Name and func.value.id in ("self", "cls", "np", "numpy")):
            reaches = surface.method(last)
        else:
            continue
        reached.update(op for reach in reaches if _condition_may_hold(call, reach.when) for op in reach.ops)
    if not reached:
        return False
    table = mps_kernels.load_table(facts.settings.torch_version)
    return any(finding(table, op) for op in reached)


_SURFACE_LASTS = frozenset(name.rsplit(".", 1)[-1] for name in surface.SURFACE)


def _condition_may_hold(call: ast.Call, when) -> bool:
    """``condition_holds`` on the ast, True wherever it may be."""
    if when is None or when[0] in ("not-kwarg", "not-output-size-1"):
        return True
    if when[0] in ("kwarg", "kwarg-true"):
        name, position = when[1], when[2]
        value = pyast.keyword(call, name)
        if value is None and position is not None:
            if any(type(a) is ast.Starred for a in call.args[: position + 1]):
                return True
            value = call.args[position] if position < len(call.args) else None
        if value is None or (type(value) is ast.Constant and (value.value is None or value.value is False)):
            return False
        forwarded = (type(value) is ast.Name and value.id == name) or (type(value) is ast.Attribute and value.attr == name)
        return not forwarded
    mode = pyast.keyword(call, "mode")
    if not (type(mode) is ast.Constant and mode.value == when[1]):
        return False
    if when[0] == "mode":
        return True
    antialias = pyast.keyword(call, "antialias")
    return type(antialias) is ast.Constant and antialias.value is True


class OpWithoutMpsKernel(Rule):
    CODE = "MPS501"
    NAME = "op-without-mps-kernel"
    TRIGGERS = tuple(sorted({key.rsplit(".", 1)[-1] for key in surface.SURFACE}))
    # A qualified torch name, or a method matched on its name alone (surface.method), after its dot.
    REQUIRES = (("torch",) + tuple(sorted("." + k.split(".", 1)[1] for k, v in surface.SURFACE.items()
                                          if k.startswith("Tensor.") and any(r.method_safe for r in v))),)
    OPTIONS = ("torch-version",)

    @staticmethod
    def screen(facts) -> bool:
        return _screen_ops(facts, _no_kernel)

    def visit_Call(self, node: cst.Call) -> None:
        table = None
        for display, op in reached_ops(self, node):
            table = table or table_for(self)
            if table.has_mps_kernel(op) or op in table.explicit_cpu_fallbacks or table.is_composite(op):
                continue
            self.report(node, f"`{display}` runs aten::{op}, which has no MPS kernel in torch {_short(table)}: "
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
    CODE = "MPS502"
    NAME = "op-cpu-fallback"
    TRIGGERS = OpWithoutMpsKernel.TRIGGERS
    REQUIRES = OpWithoutMpsKernel.REQUIRES
    OPTIONS = ("torch-version",)

    @staticmethod
    def screen(facts) -> bool:
        return _screen_ops(facts, _cpu_fallback)

    def visit_Call(self, node: cst.Call) -> None:
        for display, op in reached_ops(self, node):
            table = table_for(self)
            if op in table.explicit_cpu_fallbacks and not table.has_mps_kernel(op):
                self.report(node, f"`{display}` runs aten::{op}, which torch {_short(table)} always runs on the CPU "
                                  "on mps (an explicit fallback): every call copies its tensors to the host and back")
                return


# --------------------------------------------------------------------- MPS503

COMPLEX128 = frozenset({"torch.complex128", "torch.cdouble"})
INTEGER_DTYPES = frozenset({"torch.int64", "torch.long", "torch.int32", "torch.int", "torch.int16", "torch.short",
                            "torch.int8", "torch.uint8"})
INTEGER_CASTS = frozenset({"long", "int", "short"})
GEMM = frozenset({"torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "torch.baddbmm", "torch.addbmm",
                  "torch.nn.functional.linear", "torch.nn.functional.conv1d", "torch.nn.functional.conv2d",
                  "torch.nn.functional.conv3d"})


class UnsupportedDtypeOnMps(Rule):
    CODE = "MPS503"
    NAME = "unsupported-dtype-on-mps"
    TRIGGERS = ("complex128", "cdouble", "matmul", "mm", "linear", "conv", "@")
    # complex128, or an integer cast into a GEMM: `.long()`, `.int()`, `.short()`, `.to(torch.int64)`
    # (every integer dtype name is spelled after a dot or imported from torch).
    REQUIRES = (("complex128", "cdouble", ".int", "int8", "int16", "int32", "int64", ".long", ".short", "from torch import"),)

    @staticmethod
    def screen(facts) -> bool:
        """complex128 named anywhere, or an explicit integer cast fed to a GEMM (``@``, ``torch.matmul``, ...)."""
        if facts.refers_to(COMPLEX128):
            return True
        for node, _ in facts.index.binary:
            if type(node.op) is ast.MatMult and (_may_be_integer(facts, node.left) or _may_be_integer(facts, node.right)):
                return True
        for call, _ in facts.calls_to(GEMM):
            if any(_may_be_integer(facts, value) for value in pyast.argument_values(call)):
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        dtype = keyword(node, "dtype")
        device = keyword(node, "device")
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and ctx.qualify(func) is None:
            positional_dtypes = [a for a in node.args if a.keyword is None and ctx.qualify(a.value) in COMPLEX128]
            dtype = dtype or (positional_dtypes[0] if positional_dtypes else None)
            others = [a for a in node.args if a.keyword is None and a is not dtype]
            device = device or (others[0] if others else None)
        if dtype is not None and ctx.qualify(dtype.value) in COMPLEX128 and device is not None \
                and string_value(device.value) != "cpu" and not _is_none(device.value):
            self.report(dtype, "complex128 cannot live on mps (MPS has no 64-bit floating types): creating or "
                               "moving it there raises; use torch.complex64")
            return
        if ctx.qualify(func) in GEMM and any(self._integer(a.value) for a in node.args[:2]):
            self.report(node, "integer matrix multiply/convolution is not supported on mps (\"GEMM on MPS is not "
                              "supported for integral types\"); compute in float32 and cast back")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.MatrixMultiply) and (self._integer(node.left) or self._integer(node.right)):
            self.report(node, "integer matrix multiply is not supported on mps (\"GEMM on MPS is not supported for "
                              "integral types\"); compute in float32 and cast back")

    def _integer(self, node: cst.CSTNode) -> bool:
        """An explicit integer cast: ``x.long()``, ``x.int()``, ``x.to(torch.int64)``."""
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return False
        if self.ctx.qualify(node.func) is not None:
            return False
        method = node.func.attr.value
        if method in INTEGER_CASTS and not node.args:
            return True
        if method == "to":
            return any(self.ctx.qualify(a.value) in INTEGER_DTYPES for a in node.args)
        return False


def _may_be_integer(facts, node) -> bool:
    """``UnsupportedDtypeOnMps._integer`` on the ast."""
    if type(node) is not ast.Call or type(node.func) is not ast.Attribute or facts.qualify(node.func) is not None:
        return False
    method = node.func.attr
    if method in INTEGER_CASTS and not node.args and not node.keywords:
        return True
    return method == "to" and any(facts.qualify(v) in INTEGER_DTYPES for v in pyast.argument_values(node))


def _is_none(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


# --------------------------------------------------------------------- MPS504

AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
GRAD_SCALER = frozenset({"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"})
COMPILE = frozenset({"torch.compile"})


class FeatureNeedsNewerTorch(Rule):
    CODE = "MPS504"
    NAME = "feature-needs-newer-torch"
    TRIGGERS = ("autocast", "GradScaler", "compile")
    # Every path needs "mps" spelled out: a device string, or `_file_uses_mps`.
    REQUIRES = (("mps",),)
    OPTIONS = ("torch-version",)

    @staticmethod
    def screen(facts) -> bool:
        """Only a floor older than the newest known torch gates anything (no parse needed to know)."""
        return versions.floor_of(facts.settings.torch_version) < versions.LATEST_KNOWN

    def visit_Call(self, node: cst.Call) -> None:
        floor = self.ctx.settings.torch_version
        if versions.floor_of(floor) >= versions.LATEST_KNOWN:
            return
        name = self.ctx.qualify(node.func)
        if name in AUTOCAST and self._device(node, "device_type") == "mps":
            dtype = keyword(node, "dtype")
            gate = versions.missing("autocast-mps", floor)
            if gate is None and dtype is not None and self.ctx.qualify(dtype.value) in ("torch.bfloat16",):
                gate = versions.missing("autocast-mps-bfloat16", floor)
            self._report(node, gate, floor)
        elif name in GRAD_SCALER and self._device(node, "device") == "mps":
            self._report(node, versions.missing("grad-scaler-mps", floor), floor)
        elif name in COMPILE and self._targets_mps(node):
            self._report(node, versions.missing("compile-mps", floor), floor)

    def visit_Decorator(self, node: cst.Decorator) -> None:
        floor = self.ctx.settings.torch_version
        if versions.floor_of(floor) >= versions.LATEST_KNOWN:
            return
        if self.ctx.qualify(node.decorator) in COMPILE and self._file_uses_mps():
            self._report(node.decorator, versions.missing("compile-mps", floor), floor)

    def _device(self, call: cst.Call, name: str) -> Optional[str]:
        value = _argument(call, name, 0)
        return string_value(value) if value is not None else None

    def _targets_mps(self, call: cst.Call) -> bool:
        backend = _argument(call, "backend", None)
        if backend is not None and string_value(backend) not in (None, "inductor"):
            return False  # aot_eager/eager work on mps in every release
        return self._file_uses_mps()

    def _file_uses_mps(self) -> bool:
        source = self.ctx.source
        return any(s in source for s in ('"mps"', "'mps'", "backends.mps", "torch.mps"))

    def _report(self, node: cst.CSTNode, gate, floor) -> None:
        if gate is None:
            return
        self.report(node, f"{gate.what} needs torch >= {versions.text(gate.since)}, but the project supports torch "
                          f"{versions.text(versions.floor_of(floor))}: {gate.why}")


RULES = [OpWithoutMpsKernel, OpCpuFallback, UnsupportedDtypeOnMps, FeatureNeedsNewerTorch]
