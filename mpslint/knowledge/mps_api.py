"""The public names of ``torch.mps`` and ``torch.backends.mps``, and the first torch release with each.

Sources: ``torch/mps/__init__.py`` (``__all__``) and ``torch/backends/mps/__init__.py``
of each release, as summarised with PRs in the team's knowledge base: 2.0 added the
``torch.mps`` module (https://github.com/pytorch/pytorch/pull/94649); 2.1 ``Event``
and ``profiler``; 2.4 ``device_count``; 2.5 ``is_available`` and
``recommended_max_memory``; 2.7 ``compile_shader``; 2.13 ``load_metallib``;
``torch.backends.mps.is_macos_or_newer`` 2.3, ``get_name``/``get_core_count`` 2.9.
The 2.13 lists are ``dir()`` of the installed torch 2.13.0. ``import torch`` did
not import ``torch.mps`` in 2.0 (https://github.com/pytorch/pytorch/issues/100165,
fixed for 2.1 by https://github.com/pytorch/pytorch/pull/98837).
"""

from __future__ import annotations

from typing import Dict, Tuple

Version = Tuple[int, int]

TORCH_MPS: Dict[str, Version] = {
    **dict.fromkeys(("synchronize", "get_rng_state", "set_rng_state", "manual_seed", "seed", "empty_cache",
                     "set_per_process_memory_fraction", "current_allocated_memory", "driver_allocated_memory"),
                    (2, 0)),
    "Event": (2, 1), "event": (2, 1), "profiler": (2, 1),
    "device_count": (2, 4),
    "is_available": (2, 5), "recommended_max_memory": (2, 5),
    "compile_shader": (2, 7),
    "load_metallib": (2, 13),
    "Tensor": (2, 0), "torch": (2, 0),  # names the module imports, not API
}

BACKENDS_MPS: Dict[str, Version] = {
    "is_available": (1, 12), "is_built": (1, 12),
    "is_macos13_or_newer": (2, 0),
    "is_macos_or_newer": (2, 3),
    "get_name": (2, 9), "get_core_count": (2, 9),
    "Optional": (1, 12), "TYPE_CHECKING": (1, 12), "torch": (1, 12),
}

# The release that first imports torch.mps with `import torch`.
TORCH_MPS_IMPORTED_BY_TORCH: Version = (2, 1)

# CUDA-style names people reach for that torch.mps never had: the MPS spelling, or why there is none.
INSTEAD: Dict[str, str] = {
    "manual_seed_all": "`torch.mps.manual_seed(seed)` (there is one MPS device), or `torch.manual_seed(seed)` for every device",
    "current_device": "nothing: there is one MPS device, `torch.device(\"mps\")`",
    "set_device": "nothing: there is one MPS device, `torch.device(\"mps\")`",
    "get_device_name": "`torch.backends.mps.get_name()` (torch >= 2.9)",
    "get_mem_info": "`torch.mps.recommended_max_memory()` and `torch.mps.driver_allocated_memory()` (torch >= 2.5)",
    "mem_get_info": "`torch.mps.recommended_max_memory()` and `torch.mps.driver_allocated_memory()` (torch >= 2.5)",
    "memory_allocated": "`torch.mps.current_allocated_memory()`",
    "memory_reserved": "`torch.mps.driver_allocated_memory()`",
    "max_memory_allocated": "nothing: MPS keeps no peak; sample `torch.mps.current_allocated_memory()`",
    "max_memory_reserved": "nothing: MPS keeps no peak; sample `torch.mps.driver_allocated_memory()`",
    "reset_peak_memory_stats": "nothing: MPS keeps no peak memory statistics",
    "memory_stats": "`torch.mps.current_allocated_memory()` and `torch.mps.driver_allocated_memory()`",
    "memory_summary": "`torch.mps.current_allocated_memory()` and `torch.mps.driver_allocated_memory()`",
    "is_bf16_supported": "`torch.backends.mps.is_macos_or_newer(14, 0)` (bfloat16 needs macOS 14)",
    "Stream": "nothing: MPS has one command queue; `torch.Stream`/`torch.accelerator` where needed",
    "stream": "nothing: MPS has one command queue",
    "current_stream": "`torch.accelerator.current_stream()`",
    "amp": "`torch.amp` with `device_type=\"mps\"`",
}

# Where the name can be rewritten with the same meaning: name -> replacement member of torch.mps.
RENAMES: Dict[str, str] = {
    "manual_seed_all": "manual_seed",
    "memory_allocated": "current_allocated_memory",
}
