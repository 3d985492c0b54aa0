"""Which findings stop code from running on a Mac (or from reaching its GPU), and which only slow it down.

Blocking: CUDA-only code (MPS1xx), placement and dtype problems (MPS3xx),
process start-up that crashes (MPS4xx), ops without a kernel (MPS5xx), and a
file that does not parse or cannot be read (MPS0xx). Not blocking: host syncs
on every step (MPS2xx), cuDNN settings (MPS106), pinned memory (MPS401), ops
that always fall back to the CPU (MPS502), and mpslint's own internal errors
(MPS900), which say nothing about the user's code. The editor's severities and
the fix run's entry-point summary both read this.
"""

from __future__ import annotations

import re

from mpslint.knowledge.cuda_api import QUIET_WITHOUT_CUDA

BLOCKING_FAMILIES = frozenset({"MPS0", "MPS1", "MPS3", "MPS4", "MPS5"})
# Rules whose code runs on a Mac although their family's mostly does not.
NOT_BLOCKING = frozenset({
    "MPS106",  # cudnn settings: no effect on MPS
    "MPS401",  # pin_memory: ignored on MPS
    "MPS502",  # explicit CPU fallback: runs, with a copy each way
})


def blocks(code: str) -> bool:
    return code[:4] in BLOCKING_FAMILIES and code not in NOT_BLOCKING


def blocks_finding(code: str, message: str) -> bool:
    """``blocks``, for one finding. ``nn.DataParallel`` (MPS108) runs on a Mac: with no CUDA device it calls
    the model it wraps, where that model is; the model's own placement is what decides where it runs. A
    ``torch.cuda`` call that returns quietly without CUDA (MPS104: ``torch.cuda.manual_seed(0)``,
    ``empty_cache()``) does nothing there, and the code goes on."""
    if code == "MPS108" and message.startswith("`nn.DataParallel`"):
        return False
    if code == "MPS104":
        called = _CUDA_CALL.match(message)
        if called is not None and called.group(1) in QUIET_WITHOUT_CUDA:
            return False
    return blocks(code)


# How MPS104's message starts: "`torch.cuda.manual_seed()` only acts on CUDA" (also `cuda.X(...)`).
_CUDA_CALL = re.compile(r"`(?:\w+\.)*cuda\.(\w+)\(")
