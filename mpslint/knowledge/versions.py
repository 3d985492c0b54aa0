"""Torch version gates for MPS features.

Sources: MPS autocast landed in 2.5 (https://github.com/pytorch/pytorch/pull/99272)
and took bfloat16 in 2.6 (https://github.com/pytorch/pytorch/pull/139390);
GradScaler.unscale_ stopped going through float64 on MPS in 2.8
(torch/amp/grad_scaler.py); torch.compile on MPS (MPSInductor) is a 2.8
release feature (https://github.com/pytorch/pytorch/issues/157957), a
prototype in 2.7 (https://github.com/pytorch/pytorch/pull/143893).

Dtypes, layouts and layers (read from PyTorch's source and the PRs that changed it):

- bfloat16 on ``mps``: 2.3 ("[MPS] Enable bfloat16 support on MacOS 14",
  https://github.com/pytorch/pytorch/pull/119641, in the 2.3 release notes);
  before it ``TypeError: Trying to convert BFloat16 to the MPS backend``. From
  2.3 it needs macOS 14 (``aten/src/ATen/native/mps/MPSGraphSonomaOps.h``;
  "MPS BFloat16 is only supported on MacOS 14 or newer",
  https://github.com/pytorch/torchchat/issues/616) until the pre-macOS-14
  check was removed (https://github.com/pytorch/pytorch/pull/175804, 2.10).
- ``Conv3d`` on ``mps``: 2.2 (https://github.com/pytorch/pytorch/pull/114183,
  merged 2023-11; before it ``Conv3D is not supported on MPS``).
- ``ConvTranspose3d`` on ``mps``: 2.8 for float32
  (https://github.com/pytorch/pytorch/pull/154696, merged 2025-05; before it
  ``ConvTranspose 3D is not supported on MPS``); float16/bfloat16 still raise
  ``ConvTranspose 3D with BF16 or FP16 types is not supported on MPS`` in 2.13
  (``_mps_convolution_transpose`` in
  ``aten/src/ATen/native/mps/operations/Convolution.mm``;
  https://github.com/pytorch/pytorch/issues/160739).
- ``accelerate.Accelerator(mixed_precision=...)`` on ``mps`` (accelerate 1.15,
  ``accelerator.py`` and ``utils/modeling.py:get_grad_scaler``): "fp16" raises
  below torch 2.5 and its GradScaler raises below 2.8; "bf16" raises below 2.6.
  accelerate 1.9 still rejected fp16 on mps outright
  (https://github.com/huggingface/accelerate/issues/3718).
- sparse tensors on ``mps``: 2.9 (https://github.com/pytorch/pytorch/pull/157238
  adds the SparseMPS backend, 2025-06); the macOS arm64 wheel of 2.8 has no
  ``SparseMPS`` kernel in ``torchgen/packaged/ATen/native/native_functions.yaml``
  and 2.9's has; before it moving a sparse tensor to ``mps`` raises
  ``Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with
  arguments from the 'SparseMPS' backend``
  (https://github.com/pytorch/pytorch/issues/129842).

A gate is the first torch release where a feature works on ``mps``. Rules
compare it with the project's floor (``torch-version``, or inferred from a
``torch>=`` requirement); with no floor declared the floor is
``cuda_api.ASSUMED_FLOOR`` (torch 2.0), the same torch the fixes are written
for (README.md, "Which torch findings and fixes assume").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

Version = Tuple[int, int]

# The newest torch this knowledge was checked against (the bundled op table's version).
LATEST_KNOWN: Version = (2, 13)


@dataclass(frozen=True)
class Gate:
    key: str
    since: Version
    what: str  # how a message names the feature
    why: str  # what happens on an older torch


GATES: Dict[str, Gate] = {
    gate.key: gate
    for gate in (
        Gate("autocast-mps", (2, 5), 'autocast on "mps"',
             "older torch has no MPS autocast and disables it with a warning"),
        Gate("autocast-mps-bfloat16", (2, 6), 'bfloat16 autocast on "mps"',
             "torch 2.5 supports float16 only and disables autocast with a warning"),
        Gate("grad-scaler-mps", (2, 8), 'GradScaler on "mps"',
             "older torch unscales through a float64 tensor, which MPS cannot hold"),
        Gate("compile-mps", (2, 8), "torch.compile on mps",
             "Inductor has no MPS backend before 2.7 and only a prototype in 2.7"),
        Gate("accelerate-fp16-mps", (2, 8), 'Accelerator(mixed_precision="fp16") on mps',
             "accelerate 1.15 raises on mps below torch 2.5 and builds GradScaler(\"mps\"), which it refuses below "
             "2.8; accelerate up to at least 1.9 rejects fp16 on mps at every torch (`fp16 mixed precision requires "
             "a GPU (not 'mps')`, huggingface/accelerate#3718)"),
        Gate("accelerate-bf16-mps", (2, 6), 'Accelerator(mixed_precision="bf16") on mps',
             "accelerate raises `bf16 mixed precision with MPS device requires a Pytorch >= 2.6.0`"),
        Gate("bfloat16-mps", (2, 3), "bfloat16 on mps",
             "older torch raises `TypeError: Trying to convert BFloat16 to the MPS backend`; "
             "torch 2.3 to 2.9 also need macOS 14 for bfloat16 on MPS"),
        Gate("conv3d-mps", (2, 2), "Conv3d on mps",
             "older torch raises `Conv3D is not supported on MPS`"),
        Gate("conv-transpose3d-mps", (2, 8), "ConvTranspose3d on mps",
             "older torch raises `ConvTranspose 3D is not supported on MPS`"),
        Gate("sparse-mps", (2, 9), "a sparse tensor on mps",
             "older torch has no SparseMPS backend: moving or creating a sparse tensor on mps raises"),
    )
}


def floor_of(torch_version: Optional[Tuple[int, ...]]) -> Version:
    """The floor rules use: the configured one, else the assumed floor (torch 2.0)."""
    from mpslint.knowledge.cuda_api import ASSUMED_FLOOR

    return ASSUMED_FLOOR if torch_version is None else (torch_version[0], torch_version[1])


def missing(key: str, torch_version: Optional[Tuple[int, ...]]) -> Optional[Gate]:
    """The gate when the floor is older than the feature, else None."""
    gate = GATES[key]
    return gate if floor_of(torch_version) < gate.since else None


def text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"
