"""Dtypes MPS cannot hold or compute with: complex128, integer matmul/conv, an autocast dtype MPS
autocast cannot use (see ``rules/MPS503.md``)."""

from __future__ import annotations

import ast

from mpslint.analysis.mps_device import may_be_mps
from mpslint.analysis.syntax import argument, keyword, keyword_node, string_value
from mpslint.checks.base import Rule

COMPLEX128 = frozenset({"torch.complex128", "torch.cdouble"})
INTEGER_DTYPES = frozenset({"torch.int64", "torch.long", "torch.int32", "torch.int", "torch.int16", "torch.short",
                            "torch.int8", "torch.uint8"})
INTEGER_CASTS = frozenset({"long", "int", "short"})
AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
# What MPS autocast accepts (torch/amp/autocast_mode.py: "MPS Autocast only supports dtypes of torch.bfloat16,
# torch.float16"); any other torch dtype disables autocast with a warning.
AUTOCAST_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})
GEMM = frozenset({"torch.matmul", "torch.mm", "torch.bmm", "torch.addmm", "torch.baddbmm", "torch.addbmm",
                  "torch.nn.functional.linear", "torch.nn.functional.conv1d", "torch.nn.functional.conv2d",
                  "torch.nn.functional.conv3d"})


class UnsupportedDtypeOnMps(Rule):
    TRIGGERS = ("complex128", "cdouble", "matmul", "mm", "linear", "conv", "@", "autocast")
    # complex128, or an integer cast into a GEMM: `.long()`, `.int()`, `.short()`, `.to(torch.int64)`
    # (every integer dtype name is spelled after a dot or imported from torch).
    # Or an autocast with a dtype.
    REQUIRES = (("complex128", "cdouble", ".int", "int8", "int16", "int32", "int64", ".long", ".short", "from torch import",
                 "autocast"),)

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        dtype_keyword = keyword_node(node, "dtype")
        dtype = dtype_keyword.value if dtype_keyword is not None else None
        device = keyword(node, "device")
        func = node.func
        if type(func) is ast.Attribute and func.attr == "to" and ctx.qualify(func) is None:
            plain = [a for a in node.args if type(a) is not ast.Starred]
            complex_dtypes = [a for a in plain if ctx.qualify(a) in COMPLEX128]
            dtype = dtype or (complex_dtypes[0] if complex_dtypes else None)
            others = [a for a in plain if a is not dtype]
            device = device or (others[0] if others else None)
        if dtype is not None and ctx.qualify(dtype) in COMPLEX128 and device is not None \
                and string_value(device) != "cpu" and not (type(device) is ast.Constant and device.value is None):
            self.report(dtype_keyword if dtype_keyword is not None else dtype, "complex128 cannot live on mps (MPS has no 64-bit floating types): creating or "
                               "moving it there raises; use torch.complex64")
            return
        if ctx.qualify(func) in AUTOCAST:
            self._autocast(node)
            return
        if ctx.qualify(func) in GEMM and any(self._integer(v) for v in [*node.args, *(k.value for k in node.keywords)][:2]):
            self.report(node, "integer matrix multiply/convolution is not supported on mps (\"GEMM on MPS is not "
                              "supported for integral types\"); compute in float32 and cast back")

    def _autocast(self, node: ast.Call) -> None:
        """`torch.autocast("mps", dtype=torch.float32)`: MPS autocast turns itself off with a warning."""
        dtype = keyword(node, "dtype")
        name = self.ctx.qualify(dtype) if dtype is not None else None
        if name is None or not name.startswith("torch.") or name in AUTOCAST_DTYPES:
            return
        device = argument(node, "device_type", 0)
        if device is None or keyword(node, "enabled") is not None:
            return
        literal = string_value(device)
        on_mps = literal == "mps" if literal is not None else (
            type(device) is ast.Attribute and device.attr == "type" and may_be_mps(self.ctx, device.value))
        if on_mps:
            self.report(dtype, f"MPS autocast supports float16 and bfloat16 only: with dtype={name} it is disabled "
                               "with a warning (\"In MPS autocast, but the target dtype is not supported. Disabling "
                               "autocast.\") and everything runs in float32; use torch.float16 or torch.bfloat16")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) is ast.MatMult and (self._integer(node.left) or self._integer(node.right)):
            self.report(node, "integer matrix multiply is not supported on mps (\"GEMM on MPS is not supported for "
                              "integral types\"); compute in float32 and cast back")

    def _integer(self, node: ast.AST) -> bool:
        """An explicit integer cast: ``x.long()``, ``x.int()``, ``x.to(torch.int64)``."""
        if type(node) is not ast.Call or type(node.func) is not ast.Attribute:  # type: ignore[attr-defined]
            return False
        if self.ctx.qualify(node.func) is not None:  # type: ignore[attr-defined]
            return False
        method = node.func.attr  # type: ignore[attr-defined]
        if method in INTEGER_CASTS and not node.args and not node.keywords:  # type: ignore[attr-defined]
            return True
        if method == "to":
            return any(self.ctx.qualify(v) in INTEGER_DTYPES for v in [*node.args, *(k.value for k in node.keywords)])  # type: ignore[attr-defined]
        return False
