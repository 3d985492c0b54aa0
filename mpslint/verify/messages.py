"""PyTorch's own MPS message texts, and the patterns that recognise them.

Each text names the PyTorch source file that raises it (paths in
https://github.com/pytorch/pytorch, as of torch 2.13).

The simulated device raises and warns with exactly these texts, and the probe
recognises them with the same patterns on a real Mac, so both paths share one
vocabulary.
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

# aten/src/ATen/mps/MPSFallback.mm, mps_fallback (the "(Triggered internally at ...)" suffix is added by c10).
FALLBACK_WARNING = (
    "The operator '{op}' is not currently supported on the MPS backend and will fall back to run on the CPU."
    " This may have performance implications."
)

# MPSFallback.mm, mps_error_fallback: variant A (torch <= 2.5) and variant B (torch >= 2.6).
NOT_IMPLEMENTED_A = (
    "The operator '{op}' is not currently implemented for the MPS device. If you want this op to be added in "
    "priority during the prototype phase of this feature, please comment on "
    "https://github.com/pytorch/pytorch/issues/77764. As a temporary fix, you can set the environment variable "
    "`PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this will be slower than "
    "running natively on MPS."
)
NOT_IMPLEMENTED_B = (
    "The operator '{op}' is not currently implemented for the MPS device. If you want this op to be considered "
    "for addition please comment on https://github.com/pytorch/pytorch/issues/141287 and mention use-case, that "
    "resulted in missing op as well as commit hash {sha}. As a temporary fix, you can set the environment variable "
    "`PYTORCH_ENABLE_MPS_FALLBACK=1` to use the CPU as a fallback for this op. WARNING: this will be slower than "
    "running natively on MPS."
)

# TypeError, raised by empty_mps (aten/src/ATen/mps/EmptyTensor.cpp) when a float64 tensor is allocated on the device.
FLOAT64 = (
    "Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64. "
    "Please use float32 instead."
)

# RuntimeError: which one appears depends on the first kernel that sees both devices
# (aten/src/ATen/native/mps/OperationUtils.mm Placeholder, aten/src/ATen/TensorIterator.cpp,
# aten/src/ATen/native/mps/operations/Linear.mm, MPSFallback.mm slow_conv2d_forward_mps).
PLACEHOLDER = "Placeholder storage has not been allocated on MPS device!"
SAME_DEVICE = "Expected all tensors to be on the same device, but found at least two devices, {first} and {second}!"
LINEAR_INPUT = "Tensor for argument input is on cpu but expected on mps"
LINEAR_ON = "Tensor for argument {arg} is on {device} but expected on mps"
SLOW_CONV2D = (
    "slow_conv2d_forward_mps: input(device='cpu') and weight(device=mps:0')  must be on the same device"
)

# TypeError, torch/csrc/utils/tensor_numpy.cpp.
NUMPY = (
    "can't convert mps:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
)

# TypeError from getMPSDataType (aten/src/ATen/native/mps/OperationUtils.mm) for a dtype MPS cannot hold.
UNSUPPORTED_DTYPE = "Trying to convert {dtype} to the MPS backend but it does not have support for that dtype."

# Restrictions inside MPS kernels that exist (the fallback switch does not help).
# aten/src/ATen/native/mps/operations/Linear.mm, _mps_linear: dtype checks come before the device checks.
LINEAR_NON_FLOAT = "MPS device does not support linear for non-float {arg}"  # inputs / weights / bias
# aten/src/ATen/native/mps/operations/Convolution.mm, _mps_convolution_impl (RuntimeError).
CONV_NON_FLOAT = "Convolution is supported only for Floating types"
# Same file (NotImplementedError): every output dimension, on macOS < 15.1.
CONV_OUTPUT_SIZE = "Output channels > 65536 not supported at the MPS device. "
# Same file, _mps_convolution_transpose (RuntimeError); https://github.com/pytorch/pytorch/issues/160332.
CONV_TRANSPOSE_3D_HALF = "ConvTranspose 3D with BF16 or FP16 types is not supported on MPS"
# aten/src/ATen/native/mps/operations/AdaptivePooling.mm, set_kernel_params (NotImplementedError).
ADAPTIVE_POOL_MIXED = (
    "Adaptive pool MPS: Input height and width must both be greater than, or equal to, or lesser than output "
    "height and width"
)
ADAPTIVE_POOL_DIVISIBLE = (
    "Adaptive pool MPS: {a} sizes must be divisible by {b} sizes. Non-divisible input sizes are not implemented on "
    "MPS device yet. For now, you can manually transfer tensor to cpu in this case. Please refer to "
    "[this issue](https://github.com/pytorch/pytorch/issues/96056)"
)
# RuntimeError, aten/src/ATen/native/mps/MetalShaderLibrary.mm, getLibraryPipelineState: a kernel asks the bundled
# Metal library for a function specialised on its dtypes, and none was instantiated for them.
METAL_FUNCTION_MISSING = "Failed to create function state object for: {name}"
# RuntimeError, aten/src/ATen/native/mps/operations/LinearAlgebra.mm, linalg_qr_out_impl_mps (torch 2.13).
LINALG_QR_FLOAT32 = "linalg_qr: MPS currently supports float32 only"
# RuntimeError, c10/core/Scalar.h's checked_convert: Scalar::toDouble() of a complex number with an imaginary part,
# which addmm_out_mps_impl (aten/src/ATen/native/mps/operations/LinearAlgebra.mm, torch 2.13) calls on alpha and beta.
SCALAR_TO_DOUBLE = "value cannot be converted to type double without overflow"
# RuntimeError, c10d ProcessGroup::getBackend (torch/csrc/distributed/c10d/ProcessGroup.hpp): a collective on
# tensors of a device the process group has no backend for (gloo registers cpu and cuda, never mps).
NO_BACKEND = "No backend type associated with device type {device}"
# RuntimeError, aten/src/ATen/mps/MPSProfiler.mm, MPSProfiler::startCapture: Metal refuses a GPU trace document
# unless MTL_CAPTURE_ENABLED=1 is in the environment. The text after "error" is Metal's NSError description,
# which is not emulated.
CAPTURE_FAILED = "Failed to start capture of {fname} error {error}"
# A dtype limit from the generated table (mpslint/knowledge/data/mps_restrictions_*.json): PyTorch's own MPS tests
# expect the op to fail in this dtype. The kernels' texts differ per op and are not in the table: this one is mpslint's.
DTYPE_RESTRICTED = "MPS: {op} does not support {dtype} inputs on the MPS device (expected by PyTorch's tests: {because})"

# UserWarning, torch/amp/autocast_mode.py, autocast.__init__ (stacklevel=2: the warning names the line that built the
# autocast). 2.13 ("In {device_name} autocast, but the target dtype is not supported. Disabling autocast.\n{device_name}
# Autocast only supports dtypes of torch.bfloat16, torch.float16 currently."); 2.6-2.8 have an MPS branch with
# "MPS Autocast only supports dtype of torch.bfloat16 and torch.float16 currently." and, below macOS 14,
# "In MPS autocast, but the target dtype torch.bfloat16 is not supported on macOS versions below 14. Disabling autocast."
AUTOCAST_DISABLED = (
    "In MPS autocast, but the target dtype is not supported. Disabling autocast.\n"
    "MPS Autocast only supports dtypes of torch.bfloat16, torch.float16 currently."
)
AUTOCAST_DISABLED_RE = re.compile(r"In MPS autocast, but the target dtype (?:torch\.\w+ )?is not supported")

FALLBACK_RE = re.compile(
    r"The operator '(?P<op>[\w:.]+)' is not currently supported on the MPS backend and will fall back to run on the CPU"
)
NOT_IMPLEMENTED_RE = re.compile(r"The operator '(?P<op>[\w:.]+)' is not currently implemented for the MPS device")
FLOAT64_RE = re.compile(r"float64|MPS framework doesn't support float64")
DTYPE_RE = re.compile(r"to the MPS backend but it does not have support for that dtype|"
                      r"MPS device does not support \w+ for non-float|supported only for Floating types|"
                      r"with BF16 or FP16 types is not supported on MPS|does not support \w+ inputs on the MPS device|"
                      r"Failed to create function state object for: |MPS currently supports \w+ only")
RESTRICTION_RE = re.compile(r"not supported at the MPS device|Adaptive pool MPS:")
BACKEND_RE = re.compile(r"No backend type associated with device type mps")
CAPTURE_RE = re.compile(r"Failed to start capture of \S+\.gputrace error ")
DEVICE_MISMATCH_RE = re.compile(
    r"Placeholder storage has not been allocated on MPS device|Expected all tensors to be on the same device"
    r"|but expected on mps|must be on the same device|Passed CPU tensor to MPS op"
)
NUMPY_RE = re.compile(r"can't convert mps(:\d+)? device type tensor to numpy")


def not_implemented(op: str, torch_version: Tuple[int, int], sha: str) -> str:
    if torch_version >= (2, 6):
        return NOT_IMPLEMENTED_B.format(op=op, sha=sha)
    return NOT_IMPLEMENTED_A.format(op=op)


def fallback_op(message: str) -> Optional[str]:
    """The op named by a CPU-fallback warning, or None for any other warning."""
    match = FALLBACK_RE.search(message)
    return match.group("op") if match else None


def autocast_disabled(message: str) -> bool:
    """A warning that MPS autocast turned itself off because of its dtype."""
    return AUTOCAST_DISABLED_RE.search(message) is not None


def unimplemented_op(message: str) -> Optional[str]:
    """The op named by a missing-kernel NotImplementedError, or None for any other error."""
    match = NOT_IMPLEMENTED_RE.search(message)
    return match.group("op") if match else None


def error_kind(type_name: str, message: str) -> Optional[str]:
    """Which MPS problem an exception is: "unimplemented", "float64", "dtype", "restriction", "device-mismatch",
    "numpy", "backend", "capture" or None."""
    if NOT_IMPLEMENTED_RE.search(message):
        return "unimplemented"
    if type_name == "TypeError" and FLOAT64_RE.search(message):
        return "float64"
    if DTYPE_RE.search(message):
        return "dtype"
    if RESTRICTION_RE.search(message):
        return "restriction"
    if type_name == "TypeError" and NUMPY_RE.search(message):
        return "numpy"
    if type_name == "RuntimeError" and DEVICE_MISMATCH_RE.search(message):
        return "device-mismatch"
    if type_name == "RuntimeError" and BACKEND_RE.search(message):
        return "backend"
    if type_name == "RuntimeError" and CAPTURE_RE.search(message):
        return "capture"
    return None
