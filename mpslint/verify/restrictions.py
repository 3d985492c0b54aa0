"""Restrictions inside MPS kernels that exist: checks a kernel makes before it computes, which no op table shows.

The simulated device runs these for ops that reach an MPS kernel (never for
ops on the CPU fallback), the hand-written ones first. Two sources: the dtype
limits generated from PyTorch's own MPS test expectations
(``mpslint/knowledge/build_restrictions.py`` -> ``data/mps_restrictions_*.json``,
from ``common_mps.py``; mpslint's text, ``messages.DTYPE_RESTRICTED``), and the
hand-written checks below, with PyTorch's texts (``messages``). Each check names the PyTorch file it mirrors. Checks that
depend on the macOS version behave as on the oldest macOS the installed torch
supports (14), where they all apply.

Integer matmul, mm, bmm, addbmm and baddbmm are not restricted: since 2.13
``aten/src/ATen/native/mps/operations/LinearAlgebra.mm`` runs integral types
through its own Metal kernels, and ``torch/testing/_internal/common_mps.py``
no longer lists them as failing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import torch

from mpslint.verify import messages

# supportedFloatingOrComplexType in aten/src/ATen/native/mps/OperationUtils.h
_FLOAT_OR_COMPLEX = (torch.float32, torch.float16, torch.bfloat16, torch.complex64, torch.complex32)
_HALF = (torch.float16, torch.bfloat16)
_CONV_LIMIT = 1 << 16


def _on_mps(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "mps"


def linear(input: Any, weight: Any, bias: Optional[Any]) -> None:
    """_mps_linear (aten/src/ATen/native/mps/operations/Linear.mm), reached when any argument is on mps."""
    if not any(_on_mps(t) for t in (input, weight, bias)):
        return
    for name, tensor, kind in (("input", input, "inputs"), ("weight", weight, "weights")):
        if not isinstance(tensor, torch.Tensor):
            return  # the Python wrapper raises its own TypeError
        if tensor.dtype not in _FLOAT_OR_COMPLEX:
            raise RuntimeError(messages.LINEAR_NON_FLOAT.format(arg=kind))
        if not _on_mps(tensor):
            raise RuntimeError(messages.LINEAR_ON.format(arg=name, device=tensor.device))
    if isinstance(bias, torch.Tensor):
        if not _on_mps(bias):
            raise RuntimeError(messages.LINEAR_ON.format(arg="bias", device=bias.device))
        if bias.dtype not in _FLOAT_OR_COMPLEX:
            raise RuntimeError(messages.LINEAR_NON_FLOAT.format(arg="bias"))


_DATA = Path(__file__).resolve().parent.parent / "knowledge" / "data"


def load_table(version: Optional[Tuple[int, int]] = None) -> Dict[str, Dict[str, Any]]:
    """The generated dtype limits for the installed torch, or the newest bundled table older than it (empty if none)."""
    if version is None:
        version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])  # type: ignore[assignment]
    best = None
    for path in _DATA.glob("mps_restrictions_*_*.json"):
        found = tuple(int(p) for p in path.stem.split("_")[-2:])
        if found <= version and (best is None or found > best[0]):
            best = (found, path)
    if best is None:
        return {}
    return json.loads(best[1].read_text(encoding="utf-8"))["ops"]


_TABLE: Optional[Dict[str, Dict[str, Any]]] = None


def _table() -> Dict[str, Dict[str, Any]]:
    global _TABLE
    if _TABLE is None:
        _TABLE = load_table()
    return _TABLE


def dtype_limit(func: Any, args: tuple, kwargs: Dict[str, Any]) -> None:
    """The generated table: the op's first device tensor in a dtype PyTorch's MPS tests expect to fail."""
    name = func._schema.name.split("::", 1)[-1]
    entry = _table().get(name)
    if entry is None:
        return
    for value in (*args, *kwargs.values()):
        if _on_mps(value):
            dtype = str(value.dtype).split(".")[-1]
            if dtype in entry["dtypes"]:
                because = next((b for b in entry["because"] if b.endswith(" " + dtype)), entry["because"][0])
                raise RuntimeError(messages.DTYPE_RESTRICTED.format(op=f"aten::{name}", dtype=dtype, because=because))
            return


def before(func: Any, args: tuple, kwargs: Dict[str, Any]) -> None:
    """Checks a kernel makes on its arguments: the hand-written ones (PyTorch's own texts) before the table's."""
    name = func._schema.name
    if name == "aten::convolution" and len(args) > 6 and _on_mps(args[0]):
        _convolution(args[0], bool(args[6]))
    elif name in ("aten::_adaptive_avg_pool2d", "aten::adaptive_max_pool2d") and len(args) > 1 and _on_mps(args[0]):
        sizes = list(args[1])
        if len(sizes) == 2:
            _adaptive_pool(args[0].size(-2), args[0].size(-1), sizes[0], sizes[1],
                           check_avg=name == "aten::_adaptive_avg_pool2d")
    elif name in ("aten::_adaptive_avg_pool2d_backward", "aten::adaptive_max_pool2d_backward") and len(args) > 1 \
            and _on_mps(args[0]):
        grad, input = args[0], args[1]
        _adaptive_pool(input.size(-2), input.size(-1), grad.size(-2), grad.size(-1),
                       check_avg=name == "aten::_adaptive_avg_pool2d_backward")
    elif name in _SCATTER_REDUCE and len(args) > 3 and _on_mps(args[0]):
        _scatter_reduce(name, args, kwargs)
    elif name == "aten::linalg_qr" and args and _on_mps(args[0]) and args[0].dtype != torch.float32:
        raise RuntimeError(messages.LINALG_QR_FLOAT32)
    elif name in ("aten::addmm", "aten::addmm_") and len(args) > 2 and _on_mps(args[1]):
        _addmm_scalars(args, kwargs)
    dtype_limit(func, args, kwargs)


# scalarToMetalTypeString (aten/src/ATen/native/mps/OperationUtils.mm): the dtype part of a Metal function's name.
_METAL_TYPE = {torch.float32: "float", torch.float16: "half", torch.bfloat16: "bfloat", torch.int64: "long",
               torch.int32: "int", torch.int16: "short", torch.int8: "char", torch.uint8: "uchar", torch.bool: "bool",
               torch.complex64: "float2"}
# ScatterGather.mm (torch 2.13) runs every scatter reduction through atomic Metal kernels named
# scatter_{op}_{dense|strided}_{self type}_{index type}; Metal has no 64-bit atomic multiply, so no prod kernel is
# instantiated for long (common_mps.py: "int64 lacks atomic_binary_op in Metal"; amin/amax on long are emulated).
_NO_METAL_KERNEL = {("prod", "long")}
# The aten ops that reach scatter_reduce_dispatch, and the argument holding the reduction's name.
_SCATTER_REDUCE = {"aten::scatter_reduce": 4, "aten::scatter_reduce_": 4, "aten::scatter": 4, "aten::scatter_": 4}
# reduce_op_to_mps_string and get_operator_enum (TensorAdvancedIndexing.cpp): the user's name -> the kernel's.
_REDUCE_KERNEL = {"sum": "add", "mean": "add", "add": "add", "prod": "prod", "multiply": "prod", "amin": "amin",
                  "amax": "amax"}


def _scatter_reduce(name: str, args: tuple, kwargs: Dict[str, Any]) -> None:
    """scatter_reduce_metal in aten/src/ATen/native/mps/operations/ScatterGather.mm: the Metal function it asks for."""
    self, dim, index = args[0], args[1], args[2]
    reduce = args[_SCATTER_REDUCE[name]] if len(args) > _SCATTER_REDUCE[name] else kwargs.get("reduce")
    src = args[3]
    if not isinstance(reduce, str) or not isinstance(index, torch.Tensor) or _REDUCE_KERNEL.get(reduce) is None:
        return
    op = _REDUCE_KERNEL[reduce]
    if (op, _METAL_TYPE.get(self.dtype)) not in _NO_METAL_KERNEL:
        return
    if not isinstance(src, torch.Tensor):  # scatter.value_reduce: a src of index's shape, made contiguous
        src = torch.empty(index.shape)
    if self.numel() == 0 or index.numel() == 0 or src.numel() == 0:
        return  # scatter_reduce_dispatch returns before any kernel
    dim = dim % max(self.dim(), 1)
    dense = self.is_contiguous() and index.is_contiguous() and src.is_contiguous() \
        and tuple(src.shape) == tuple(index.shape) \
        and all(i == dim or self.size(i) == index.size(i) for i in range(self.dim()))
    layout = "dense" if dense else "strided"
    kernel = f"scatter_{op}_{layout}_{_METAL_TYPE[self.dtype]}_{_METAL_TYPE.get(index.dtype, 'long')}"
    raise RuntimeError(messages.METAL_FUNCTION_MISSING.format(name=kernel))


# use_metal_mm (LinearAlgebra.mm): complex products with a longer inner dimension go to a Metal kernel instead of
# MPSGraph (pytorch/pytorch#167727).
_COMPLEX_METAL_INNER = 2048


def _addmm_scalars(args: tuple, kwargs: Dict[str, Any]) -> None:
    """addmm_out_mps_impl (LinearAlgebra.mm, torch 2.13): the MPSGraph path puts ``beta.toDouble()`` and
    ``alpha.toDouble()`` in its graph's key once the output is not empty; c10's checked conversion refuses a complex
    number with an imaginary part (pytorch/pytorch#194474, after 2.13, sends complex addmm to a Metal kernel)."""
    mat1, mat2 = args[1], args[2]
    beta = args[3] if len(args) > 3 else kwargs.get("beta", 1)
    alpha = args[4] if len(args) > 4 else kwargs.get("alpha", 1)
    if not mat1.is_complex() or mat1.dim() != 2 or not isinstance(mat2, torch.Tensor) or mat2.dim() != 2:
        return
    if mat1.size(0) * mat2.size(1) == 0 or mat1.size(1) > _COMPLEX_METAL_INNER:
        return
    if any(isinstance(s, complex) and s.imag != 0 for s in (beta, alpha)):
        raise RuntimeError(messages.SCALAR_TO_DOUBLE)


def after(func: Any, args: tuple, kwargs: Dict[str, Any], out: Any) -> None:
    """Checks a kernel makes on the output it allocates (here: computed on the CPU, then checked)."""
    if func._schema.name == "aten::convolution" and len(args) > 6 and _on_mps(args[0]) and not args[6] \
            and isinstance(out, torch.Tensor) and out.numel() and any(d > _CONV_LIMIT for d in out.shape):
        raise NotImplementedError(messages.CONV_OUTPUT_SIZE)


def _convolution(input: torch.Tensor, transposed: bool) -> None:
    """aten/src/ATen/native/mps/operations/Convolution.mm: _mps_convolution_impl and _mps_convolution_transpose."""
    if transposed:
        if input.dim() == 5 and input.dtype in _HALF:
            raise RuntimeError(messages.CONV_TRANSPOSE_3D_HALF)
        # mps_convolution_backward_input checks the sizes of what it reads first (macOS < 15.1).
        if any(d > _CONV_LIMIT for d in input.shape):
            raise NotImplementedError(messages.CONV_OUTPUT_SIZE)
    if not input.is_floating_point():
        raise RuntimeError(messages.CONV_NON_FLOAT)


def _adaptive_pool(in_h: int, in_w: int, out_h: int, out_w: int, *, check_avg: bool) -> None:
    """set_kernel_params in aten/src/ATen/native/mps/operations/AdaptivePooling.mm."""
    if not ((in_h >= out_h and in_w >= out_w) or (in_h <= out_h and in_w <= out_w)):
        raise NotImplementedError(messages.ADAPTIVE_POOL_MIXED)
    if not check_avg or 0 in (in_h, in_w, out_h, out_w):
        return
    if in_h >= out_h:
        if in_h % out_h or in_w % out_w:
            raise NotImplementedError(messages.ADAPTIVE_POOL_DIVISIBLE.format(a="input", b="output"))
    elif out_h % in_h or out_w % in_w:
        raise NotImplementedError(messages.ADAPTIVE_POOL_DIVISIBLE.format(a="output", b="input"))
