"""MPS features that need a newer torch than the project's floor (see ``rules/MPS504.md``).

Features: autocast and GradScaler on ``mps``, ``torch.compile`` in a file that
targets ``mps``, bfloat16 tensors or weights moved to ``mps``, ``Conv3d`` and
``ConvTranspose3d`` in a file that targets ``mps`` (float16/bfloat16
``ConvTranspose3d`` in every release), sparse tensors on ``mps``.

With no floor set (no ``torch-version``, no ``torch>=`` requirement found), the
gates assume torch 2.0, the floor the fixes assume (``cuda_api.ASSUMED_FLOOR``):
a project that declares nothing may be run on any torch with MPS, and the
developer on the newest torch is the one who would never see what breaks for
users on an older one. The message says the floor was assumed and how to set one.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from mpslint.analysis.cuda_context import CudaContext
from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.mps_device import literal_device_type, may_be_mps
from mpslint.analysis.syntax import argument, keyword, method_name, positional, string_value
from mpslint.checks.base import Rule
from mpslint.knowledge import versions

AUTOCAST = frozenset({"torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast"})
GRAD_SCALER = frozenset({"torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler"})
COMPILE = frozenset({"torch.compile"})
BFLOAT16 = "torch.bfloat16"
HALF = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})
CONV3D = frozenset({"torch.nn.Conv3d", "torch.nn.modules.conv.Conv3d", "torch.nn.functional.conv3d", "torch.conv3d"})
CONV_TRANSPOSE3D = frozenset({"torch.nn.ConvTranspose3d", "torch.nn.modules.conv.ConvTranspose3d",
                              "torch.nn.functional.conv_transpose3d", "torch.conv_transpose3d"})
SPARSE_METHODS = frozenset({"to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr",
                            "to_sparse_bsc"})
SPARSE_FACTORIES = frozenset({"torch.sparse_coo_tensor", "torch.sparse_csr_tensor", "torch.sparse_csc_tensor",
                              "torch.sparse_bsr_tensor", "torch.sparse_bsc_tensor", "torch.sparse_compressed_tensor"})
# Calls that load weights in a dtype: `from_pretrained(..., torch_dtype=torch.bfloat16)` (transformers,
# diffusers; `dtype=` in transformers 4.56+).
LOADERS = frozenset({"from_pretrained", "from_single_file"})
_MPS = ("mps",)
# A test on the running torch's version: `is_torch_version(">=", "2.8.0")`, `torch.__version__ >= ...`,
# `version.parse(torch.__version__)`, `is_torch_greater_or_equal("2.5")`, `TORCH_GREATER_EQUAL_2_3`.
_VERSION_TEST = re.compile(r"version|torch_greater|torch_less|TORCH_\w*\d", re.IGNORECASE)


class FeatureNeedsNewerTorch(Rule):
    TRIGGERS = ("autocast", "GradScaler", "compile", "bfloat16", "Accelerator", "Conv3d", "conv3d", "ConvTranspose3d",
                "conv_transpose3d", "sparse")
    # Every path needs "mps" spelled out: a device string, or `_file_uses_mps`.
    REQUIRES = (("mps",),)

    def visit_Call(self, node: ast.Call) -> None:
        floor = self.ctx.settings.torch_version
        name = self.ctx.qualify(node.func)
        if name in CONV_TRANSPOSE3D and self._half_conv_transpose(node):
            return
        if versions.floor_of(floor) >= versions.LATEST_KNOWN:
            return
        if name in AUTOCAST and self._device(node, "device_type") == "mps":
            dtype = keyword(node, "dtype")
            gate = versions.missing("autocast-mps", floor)
            if gate is None and dtype is not None and self.ctx.qualify(dtype) in ("torch.bfloat16",):
                gate = versions.missing("autocast-mps-bfloat16", floor)
            self._report(node, gate, floor)
        elif name in GRAD_SCALER and self._device(node, "device") == "mps":
            self._report(node, versions.missing("grad-scaler-mps", floor), floor)
        elif name in COMPILE and self._targets_mps(node):
            self._report(node, versions.missing("compile-mps", floor), floor)
        elif name in CONV_TRANSPOSE3D and self._file_uses_mps():
            self._report(node, versions.missing("conv-transpose3d-mps", floor), floor)
        elif name in CONV3D and self._file_uses_mps():
            self._report(node, versions.missing("conv3d-mps", floor), floor)
        elif name == "accelerate.Accelerator" and self._file_uses_mps():
            precision = string_value(keyword(node, "mixed_precision"))
            cpu = keyword(node, "cpu")
            if precision in ("fp16", "bf16") and not (cpu is not None and not (type(cpu) is ast.Constant and cpu.value is False)):
                self._report(node, versions.missing(f"accelerate-{precision}-mps", floor), floor)
        elif self._bfloat16_on_mps(node, name):
            self._report(node, versions.missing("bfloat16-mps", floor), floor)
        elif self._sparse_on_mps(node, name):
            self._report(node, versions.missing("sparse-mps", floor), floor)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        floor = self.ctx.settings.torch_version
        if versions.floor_of(floor) >= versions.LATEST_KNOWN:
            return
        for expr in node.decorator_list:
            if self.ctx.qualify(expr) in COMPILE and self._file_uses_mps():
                self._report(expr, versions.missing("compile-mps", floor), floor)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _half_conv_transpose(self, node: ast.Call) -> bool:
        """`nn.ConvTranspose3d(..., dtype=torch.float16)` in a file that targets mps: reported at every floor."""
        dtype = keyword(node, "dtype")
        if dtype is None or self._flow.dtype_value(dtype) not in HALF or not self._file_uses_mps():
            return False
        self.report(node, "ConvTranspose3d in float16/bfloat16 raises on mps in every torch release up to "
                          f"{versions.text(versions.LATEST_KNOWN)} (`ConvTranspose 3D with BF16 or FP16 types is not "
                          "supported on MPS`): keep this layer in float32")
        return True

    # ------------------------------------------------------------ bfloat16

    @property
    def _flow(self) -> DeviceFlow:
        return self.ctx.analysis(DeviceFlow)

    def _bfloat16_on_mps(self, node: ast.Call, name: Optional[str]) -> bool:
        """bfloat16 data placed on mps by this call: a factory, a `.to()`, or a loader's weights moved there."""
        method = method_name(node) if name is None else None
        if name is not None and name.startswith("torch."):
            # torch.zeros(..., dtype=torch.bfloat16, device="mps")
            dtype, device = keyword(node, "dtype"), keyword(node, "device")
            return dtype is not None and device is not None and self._is_bf16(dtype) and self._mps_device(device) \
                and self._unguarded(node)
        if method == "to":
            target = self._flow.to_target(node)
            if target is None or not self._mps_device(target):
                return False
            dtype = keyword(node, "dtype")
            dtypes = [dtype] if dtype is not None else [v for v in positional(node) if v is not target]
            if any(self._is_bf16(d) for d in dtypes):
                return self._unguarded(node)
            return self._bf16_value(node.func.value, node) and self._unguarded(node)  # type: ignore[attr-defined]
        if method == "bfloat16" and not node.args and not node.keywords:
            # model.to("mps").bfloat16()
            receiver = node.func.value  # type: ignore[attr-defined]
            if method_name(receiver) == "to":
                target = self._flow.to_target(receiver)  # type: ignore[arg-type]
                return target is not None and self._mps_device(target) and self._unguarded(node)
            return False
        if method in LOADERS:
            # from_pretrained(..., torch_dtype=torch.bfloat16, device_map="mps")
            device_map = keyword(node, "device_map")
            return device_map is not None and self._mps_device(device_map, literal_only=True) \
                and self._loads_bf16(node) and self._unguarded(node)
        return False

    def _bf16_value(self, value: ast.AST, use: ast.AST, depth: int = 0) -> bool:
        """Weights or tensors known to be bfloat16: a loader call with a bfloat16 dtype, `.bfloat16()`, `.to(bf16)`."""
        if depth > 4:
            return False
        if type(value) is ast.Call:
            method = method_name(value)
            if method in LOADERS:
                return self._loads_bf16(value)
            if method == "bfloat16" and not value.args and not value.keywords:
                return True
            if method == "to" and self._flow.to_target(value) is None:
                return any(self._is_bf16(v) for v in (*positional(value), keyword(value, "dtype")) if v is not None)
            return False
        if type(value) is ast.Name:
            values = [b.value for b in self._flow.visible(value.id, use) if b.how == "assign" and not b.path]
            return bool(values) and all(v is not None and self._bf16_value(v, use, depth + 1) for v in values)
        return False

    def _loads_bf16(self, call: ast.Call) -> bool:
        dtype = keyword(call, "torch_dtype") or keyword(call, "dtype")
        return dtype is not None and (self._is_bf16(dtype) or string_value(dtype) == "bfloat16")

    def _is_bf16(self, node: ast.AST) -> bool:
        return self._flow.dtype_value(node) == BFLOAT16

    # -------------------------------------------------------------- sparse

    def _sparse_on_mps(self, node: ast.Call, name: Optional[str]) -> bool:
        if name in SPARSE_FACTORIES:
            device = keyword(node, "device")
            return device is not None and self._mps_device(device) and self._unguarded(node)
        method = method_name(node) if name is None else None
        if method == "to":
            target = self._flow.to_target(node)
            return target is not None and self._mps_device(target) and self._sparse_value(node.func.value, node) \
                and self._unguarded(node)  # type: ignore[attr-defined]
        if method in SPARSE_METHODS:
            # x.to("mps").to_sparse()
            receiver = node.func.value  # type: ignore[attr-defined]
            if method_name(receiver) == "to":
                target = self._flow.to_target(receiver)  # type: ignore[arg-type]
                return target is not None and self._mps_device(target) and self._unguarded(node)
        return False

    def _sparse_value(self, value: ast.AST, use: ast.AST, depth: int = 0) -> bool:
        if depth > 4:
            return False
        if type(value) is ast.Call:
            return method_name(value) in SPARSE_METHODS or self.ctx.qualify(value.func) in SPARSE_FACTORIES
        if type(value) is ast.Name:
            values = [b.value for b in self._flow.visible(value.id, use) if b.how == "assign" and not b.path]
            return bool(values) and all(v is not None and self._sparse_value(v, use, depth + 1) for v in values)
        return False

    # -------------------------------------------------------------- devices

    def _mps_device(self, node: ast.AST, *, literal_only: bool = False) -> bool:
        """A device this file shows may be mps (``analysis/mps_device.py``)."""
        if literal_only:
            return literal_device_type(self.ctx, node) == "mps"
        # Every path of this rule needs "mps" in the file (REQUIRES): `accelerator.device` alone does not count here.
        return "mps" in self.ctx.source and may_be_mps(self.ctx, node)

    def _unguarded(self, node: ast.AST) -> bool:
        """Not under a CUDA test (`if torch.cuda.is_available():`, `if device.type == "cuda":`), nor a probe.

        A probe tries the feature inside `try:` and catches the failure (transformers'
        `is_torch_bf16_available_on_device`): it is how code asks whether the torch it runs on has it.
        """
        if self.ctx.analysis(CudaContext).guards(node):
            return False
        tree = self.ctx.tree
        child = node
        for parent in tree.ancestors(node):
            if type(parent) is ast.Try and child in parent.body and parent.handlers:  # type: ignore[attr-defined]
                return False
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                break
            child = parent
        return True

    def _device(self, call: ast.Call, name: str) -> Optional[str]:
        value = argument(call, name, 0)
        return string_value(value) if value is not None else None

    def _targets_mps(self, call: ast.Call) -> bool:
        backend = argument(call, "backend", None)
        if backend is not None and string_value(backend) not in (None, "inductor"):
            return False  # aot_eager/eager work on mps in every release
        return self._file_uses_mps()

    def _file_uses_mps(self) -> bool:
        source = self.ctx.source
        return any(s in source for s in ('"mps"', "'mps'", "backends.mps", "torch.mps"))

    def _version_checked(self, node: ast.AST) -> bool:
        """Code that already asks the running torch's version: under `if <version test>:` (either branch), or
        after `if <version test>: raise/return` in the same block (accelerate's `get_grad_scaler`)."""
        ctx = self.ctx
        child = node
        for parent in ctx.tree.ancestors(node):
            cls = type(parent)
            if (cls is ast.If or cls is ast.IfExp) and child is not parent.test:  # type: ignore[attr-defined]
                if _VERSION_TEST.search(ctx.text(parent.test)):  # type: ignore[attr-defined]
                    return True
            for field in ("body", "orelse", "finalbody"):
                block = getattr(parent, field, None)
                if type(block) is list and child in block:
                    for earlier in block[:block.index(child)]:
                        if type(earlier) is ast.If and _VERSION_TEST.search(ctx.text(earlier.test)) and earlier.body \
                                and type(earlier.body[-1]) in (ast.Raise, ast.Return):
                            return True
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                break
            child = parent
        return False

    def _report(self, node: ast.AST, gate, floor) -> None:
        if gate is None or self._version_checked(node):
            return
        since = versions.text(gate.since)
        if floor is None:
            supports = (f"no torch-version is set, so mpslint assumes torch {versions.text(versions.floor_of(floor))} "
                        f"(set torch-version or require torch>={since} if older torch is not supported)")
        else:
            supports = f"the project supports torch {versions.text(versions.floor_of(floor))}"
        self.report(node, f"{gate.what} needs torch >= {since}, but {supports}: {gate.why}")
