"""``torch.cuda.X`` and what to use instead, as data.

Sources: the device-agnostic APIs in https://docs.pytorch.org/docs/stable/accelerator.html
and https://docs.pytorch.org/docs/stable/amp.html, their ``torch.mps`` twins in
https://docs.pytorch.org/docs/stable/mps.html; the release each appeared in was
read from that release's wheel.

Each entry says which rule reports the API, how the fixer may rewrite it and
from which torch release the rewrite works. The rules (MPS104, MPS105,
MPS108) read this table; the rewriting itself lives in the rules.

Fix kinds:

- ``rename``: the call keeps its arguments and gets a device-agnostic name
  (``torch.cuda.device_count()`` -> ``torch.accelerator.device_count()``).
  Only used where the new call gives the same result on a machine without
  CUDA, because the original ran there too.
- ``per-device``: an expression statement becomes an ``if``/``elif`` on the
  device type calling the CUDA function on CUDA and its ``torch.mps`` twin on
  MPS, and nothing on CPU.
- ``accelerator-sync``: ``synchronize()`` becomes ``torch.accelerator.synchronize()``
  guarded by ``torch.accelerator.is_available()`` (it raises without an
  accelerator in torch 2.13).
- ``seed``: ``torch.manual_seed`` seeds every device.
- ``none``: report only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

Version = Tuple[int, int]

# Fixes need to know which torch the rewritten code must run on. A project
# that declares no floor may well predate torch.accelerator (2.6) or MPS
# autocast (2.5): rewriting it for a current torch would break it where it
# ran. So fixes assume torch 2.0, the oldest the inline device picker supports,
# and the run summary says so (docs/fixes.md, "Migrating a CUDA script").
ASSUMED_FLOOR: Version = (2, 0)


def floor_of(torch_version: Optional[Tuple[int, ...]]) -> Version:
    return ASSUMED_FLOOR if torch_version is None else (torch_version[0], torch_version[1])


def version_text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


@dataclass(frozen=True)
class CudaApi:
    name: str  # the attribute after ``torch.cuda.``
    instead: str  # what the message recommends
    fix: str = "none"  # rename | per-device | accelerator-sync | seed | none
    target: str = ""  # rename: dotted name after the torch alias; per-device: the torch.mps function
    since: Version = (2, 0)  # first torch where ``target`` works


# MPS104: APIs with a device-agnostic or MPS equivalent.
EQUIVALENTS: Dict[str, CudaApi] = {
    api.name: api
    for api in (
        CudaApi("synchronize", "torch.accelerator.synchronize() (torch 2.6) or torch.mps.synchronize()",
                "accelerator-sync", "accelerator.synchronize", (2, 6)),
        CudaApi("empty_cache", "torch.mps.empty_cache() on MPS", "per-device", "mps.empty_cache"),
        CudaApi("manual_seed", "torch.manual_seed(), which seeds CPU, CUDA and MPS", "seed"),
        CudaApi("manual_seed_all", "torch.manual_seed(), which seeds CPU, CUDA and MPS", "seed"),
        CudaApi("seed", "torch.seed()"),
        CudaApi("seed_all", "torch.seed()"),
        CudaApi("device_count", "torch.accelerator.device_count() (torch 2.6)", "rename",
                "accelerator.device_count", (2, 6)),
        CudaApi("current_device", "torch.accelerator.current_device_index() (torch 2.6)", "rename",
                "accelerator.current_device_index", (2, 6)),
        CudaApi("set_device", "torch.accelerator.set_device_index() (torch 2.6)", "rename",
                "accelerator.set_device_index", (2, 6)),
        CudaApi("device", "torch.accelerator.device_index() (torch 2.8)", "rename",
                "accelerator.device_index", (2, 8)),
        CudaApi("memory_allocated", "torch.mps.current_allocated_memory() on MPS, "
                "or torch.accelerator.memory_allocated() (torch 2.9)"),
        CudaApi("max_memory_allocated", "torch.accelerator.max_memory_allocated() (torch 2.9); "
                "torch.mps has no peak-memory API"),
        CudaApi("memory_reserved", "torch.mps.driver_allocated_memory() on MPS, "
                "or torch.accelerator.memory_reserved() (torch 2.9)"),
        CudaApi("max_memory_reserved", "torch.accelerator.max_memory_reserved() (torch 2.9)"),
        CudaApi("reset_peak_memory_stats", "torch.accelerator.reset_peak_memory_stats() (torch 2.9)"),
        CudaApi("reset_max_memory_allocated", "torch.accelerator.reset_peak_memory_stats() (torch 2.9)"),
        CudaApi("memory_stats", "torch.accelerator.memory_stats() (torch 2.9)"),
        CudaApi("reset_accumulated_memory_stats", "torch.accelerator.reset_accumulated_memory_stats() (torch 2.9)"),
        CudaApi("mem_get_info", "torch.accelerator.get_memory_info() (torch 2.10), "
                "or torch.mps.recommended_max_memory() on MPS"),
        CudaApi("set_per_process_memory_fraction", "torch.mps.set_per_process_memory_fraction() on MPS"),
        CudaApi("get_rng_state", "torch.mps.get_rng_state() on MPS"),
        CudaApi("set_rng_state", "torch.mps.set_rng_state() on MPS"),
        CudaApi("Event", "torch.Event(device=device, enable_timing=True), or torch.mps.Event on MPS"),
        CudaApi("get_device_name", "torch.backends.mps.get_name() on MPS (torch 2.9)"),
        CudaApi("get_device_properties", "torch.accelerator.get_device_capability() (torch 2.10)"),
        CudaApi("get_device_capability", "torch.accelerator.get_device_capability() (torch 2.10)"),
        CudaApi("is_bf16_supported", "bfloat16 support on MPS: macOS 14, always true with torch >= 2.9"),
    )
}

# MPS108: CUDA features with no MPS counterpart. Prefix matches: ``nvtx``
# covers ``torch.cuda.nvtx.range_push``.
CUDA_ONLY: Dict[str, str] = {
    "Stream": "MPS has a single command queue: there are no extra streams",
    "stream": "MPS has a single command queue: there are no extra streams",
    "StreamContext": "MPS has a single command queue: there are no extra streams",
    "current_stream": "use torch.accelerator.current_stream() (torch 2.6); MPS has one stream",
    "default_stream": "MPS has one stream",
    "set_stream": "use torch.accelerator.set_stream() (torch 2.6); MPS has one stream",
    "ExternalStream": "MPS has one stream",
    "CUDAGraph": "CUDA graphs do not exist on MPS",
    "graph": "CUDA graphs do not exist on MPS",
    "graphs": "CUDA graphs do not exist on MPS",
    "make_graphed_callables": "CUDA graphs do not exist on MPS",
    "is_current_stream_capturing": "CUDA graphs do not exist on MPS",
    "nvtx": "use torch.profiler, or torch.mps.profiler on MPS",
    "profiler": "use torch.profiler, or torch.mps.profiler on MPS",
    "set_sync_debug_mode": "MPS has no sync debug mode; use `mpslint verify` to find host syncs",
    "ipc_collect": "CUDA IPC does not exist on MPS",
    "nccl": "NCCL is CUDA-only; use gloo with CPU tensors",
    "jiterator": "jiterator is CUDA-only",
    "tunable": "TunableOp is CUDA-only",
    "cudart": "the CUDA runtime is not available on MPS",
    "get_arch_list": "CUDA-only",
    "get_gencode_flags": "CUDA-only",
    "utilization": "NVML is CUDA-only",
    "temperature": "NVML is CUDA-only",
    "power_draw": "NVML is CUDA-only",
    "clock_rate": "NVML is CUDA-only",
    "list_gpu_processes": "NVML is CUDA-only",
    "memory_summary": "the CUDA caching allocator does not exist on MPS",
    "memory_snapshot": "the CUDA caching allocator does not exist on MPS",
    "caching_allocator_alloc": "the CUDA caching allocator does not exist on MPS",
    "caching_allocator_delete": "the CUDA caching allocator does not exist on MPS",
    "MemPool": "the CUDA caching allocator does not exist on MPS",
    "CUDAPluggableAllocator": "the CUDA caching allocator does not exist on MPS",
    "change_current_allocator": "the CUDA caching allocator does not exist on MPS",
    "GreenContext": "CUDA-only",
}

# torch.cuda functions that raise without CUDA (checked on a CPU-only torch 2.13): as a statement of their
# own they can run under `if torch.cuda.is_available():`, which changes nothing where CUDA is.
RAISES_WITHOUT_CUDA = frozenset({
    "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_accumulated_memory_stats", "set_rng_state",
    "set_per_process_memory_fraction", "ipc_collect", "set_sync_debug_mode", "nvtx", "profiler", "memory_summary",
    "set_stream", "synchronize", "current_device", "get_rng_state", "mem_get_info", "set_device",
})

# torch.cuda functions that return quietly without CUDA (checked on a CPU-only torch 2.13: seeding is queued
# until CUDA starts, the memory figures read 0): code that calls them still runs on a Mac.
QUIET_WITHOUT_CUDA = frozenset({
    "manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache", "device_count", "is_initialized",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
    "memory_cached", "max_memory_cached",
})

# MPS107: legacy typed constructors and the dtype each creates.
LEGACY_TENSOR_TYPES: Dict[str, str] = {
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
    "BoolTensor": "bool",
}

# MPS105: ``torch.cuda.amp`` and where each name went.
AMP_REPLACEMENTS: Dict[str, str] = {
    "autocast": "torch.autocast(device_type=device.type)",
    "GradScaler": "torch.amp.GradScaler(device.type) (torch 2.3)",
    "custom_fwd": "torch.amp.custom_fwd(device_type=...) (torch 2.4)",
    "custom_bwd": "torch.amp.custom_bwd(device_type=...) (torch 2.4)",
}

# First torch releases the MPS105 rewrites need: torch.amp.GradScaler(device) in 2.3; MPS autocast in 2.5
# (https://github.com/pytorch/pytorch/pull/99272), bfloat16 in 2.6 (https://github.com/pytorch/pytorch/pull/139390);
# GradScaler.unscale_ without float64 on MPS in 2.8 (torch/amp/grad_scaler.py).
AMP_GRAD_SCALER: Version = (2, 3)  # torch.amp.GradScaler(device)
AMP_GRAD_SCALER_MPS: Version = (2, 8)  # GradScaler("mps") unscales without float64
AMP_AUTOCAST_MPS: Version = (2, 5)  # torch.autocast("mps"): older torch raises for the device type
AMP_AUTOCAST_MPS_BFLOAT16: Version = (2, 6)
ACCELERATOR_ONE_LINER: Version = (2, 7)  # current_accelerator(check_available=True)
ACCELERATOR_IS_AVAILABLE: Version = (2, 6)  # torch.accelerator.is_available()
