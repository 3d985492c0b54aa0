"""What a finding means for a move to MPS: it fails there, it slows MPS down, or neither.

The report's three headline numbers rest on this table, so every rule is
classified here, explicitly, next to the reason (``tests/test_report_impact.py``
fails when a rule page in ``rules/`` has no entry). A code this table does not
know yet (a rule newer than the table) falls back to its family.
"""

from __future__ import annotations

from typing import Dict

FAILS = "fails"
SLOWS = "slows"
OTHER = "other"

LABELS = {
    FAILS: "fails on MPS",
    SLOWS: "slows MPS down",
    OTHER: "other",
}

# code -> impact, with why (the rule pages in rules/ have the details).
IMPACT: Dict[str, str] = {
    "MPS000": OTHER,  # the file does not parse: nothing could be checked
    "MPS001": OTHER,  # the file could not be read: nothing could be checked
    "MPS101": FAILS,  # `.cuda()` raises without CUDA
    "MPS102": FAILS,  # "cuda" placement raises without CUDA
    "MPS103": FAILS,  # picks CUDA or the CPU: the code never reaches MPS
    "MPS104": FAILS,  # torch.cuda.* raises or does nothing without CUDA
    "MPS105": SLOWS,  # CUDA-only AMP disables itself: the model trains in float32
    "MPS106": OTHER,  # cuDNN settings have no effect on MPS, nothing breaks
    "MPS107": FAILS,  # legacy CUDA tensor types need CUDA
    "MPS108": FAILS,  # streams, graphs, NCCL, DataParallel: no MPS equivalent
    "MPS109": FAILS,  # the CUDA-only package cannot be imported or run on a Mac
    "MPS110": FAILS,  # a checkpoint saved on CUDA raises while loading on a Mac
    "MPS111": FAILS,  # is_built() picks mps on Macs where the device does not exist
    "MPS112": FAILS,  # the torch.mps name raises AttributeError in the project's torch
    "MPS201": SLOWS,  # per-step host sync
    "MPS202": SLOWS,  # per-step copy to the host
    "MPS203": SLOWS,  # per-step synchronize
    "MPS204": SLOWS,  # per-step data-dependent branch, print or shape
    "MPS205": SLOWS,  # timing without a synchronize: wrong numbers, no crash
    "MPS113": OTHER,  # CUDA-only empty_cache/statistics: memory stays cached or goes unreported on a Mac, nothing raises
    "MPS301": FAILS,  # `.numpy()` of an mps tensor raises TypeError
    "MPS302": FAILS,  # a host tensor meets device tensors: RuntimeError
    "MPS303": FAILS,  # float64 on mps raises TypeError
    "MPS304": FAILS,  # non_blocking copy to the host: silently wrong data
    "MPS401": SLOWS,  # pinned memory: a no-op or an extra copy on MPS
    "MPS402": FAILS,  # fork crashes Objective-C/Metal processes on macOS
    "MPS403": FAILS,  # spawn re-imports the script: workers fail to start
    "MPS404": FAILS,  # device tensors made in DataLoader workers
    "MPS501": FAILS,  # no MPS kernel: NotImplementedError (or a CPU fallback)
    "MPS502": SLOWS,  # always runs on the CPU: two copies per call
    "MPS503": FAILS,  # complex128, integer GEMM: not supported on mps
    "MPS504": FAILS,  # the feature does not work on mps at the project's torch floor
    "MPS505": FAILS,  # the fallback variable set after import has no effect: ops without a kernel raise
    "MPS900": OTHER,  # mpslint crashed on the file: a bug to report, not a finding about the code
}

# For codes newer than the table: the family's usual impact.
FAMILY: Dict[str, str] = {"MPS1": FAILS, "MPS2": SLOWS, "MPS3": FAILS, "MPS4": FAILS, "MPS5": FAILS}


def impact_of(code: str) -> str:
    if code in IMPACT:
        return IMPACT[code]
    return FAMILY.get(code[:4], OTHER)
