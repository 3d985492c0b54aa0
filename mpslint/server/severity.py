"""How loudly an editor shows a finding.

An error is code that fails on a Mac, computes wrong results there, or never
reaches the Apple GPU: CUDA-only code (MPS1xx), placement and dtype problems
(MPS3xx), process start-up that crashes (MPS4xx), ops without a kernel
(MPS5xx), and a file that does not parse (MPS000). A warning is code that runs
on a Mac, only slower or with a setting that does nothing: host syncs on every
step (MPS2xx), cuDNN settings (MPS106), pinned memory (MPS401) and ops that
always fall back to the CPU (MPS502); also mpslint's own internal errors
(MPS900), which say nothing about the user's code.
"""

from __future__ import annotations

from typing import Dict

from lsprotocol.types import DiagnosticSeverity

ERROR = DiagnosticSeverity.Error
WARNING = DiagnosticSeverity.Warning

# By family: the hundreds digit of the code.
FAMILIES: Dict[str, DiagnosticSeverity] = {
    "MPS0": ERROR,
    "MPS1": ERROR,
    "MPS2": WARNING,
    "MPS3": ERROR,
    "MPS4": ERROR,
    "MPS5": ERROR,
    "MPS9": WARNING,
}

# Rules whose code runs on a Mac although their family's mostly does not.
EXCEPTIONS: Dict[str, DiagnosticSeverity] = {
    "MPS106": WARNING,  # cudnn settings: no effect on MPS
    "MPS401": WARNING,  # pin_memory: ignored on MPS
    "MPS502": WARNING,  # explicit CPU fallback: runs, with a copy each way
}


def severity(code: str) -> DiagnosticSeverity:
    return EXCEPTIONS.get(code) or FAMILIES.get(code[:4], WARNING)
