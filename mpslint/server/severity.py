"""How loudly an editor shows a finding.

An error is code that fails on a Mac, computes wrong results there, or never
reaches the Apple GPU: CUDA-only code (MPS1xx), placement and dtype problems
(MPS3xx), process start-up that crashes (MPS4xx), ops without a kernel
(MPS5xx), and a file that does not parse (MPS000). A warning is code that runs
on a Mac, only slower or with a setting that does nothing: host syncs on every
step (MPS2xx), cuDNN settings (MPS106), pinned memory (MPS401) and ops that
always fall back to the CPU (MPS502); also mpslint's own internal errors
(MPS900), which say nothing about the user's code. The classification is
``mpslint.blocking``'s.
"""

from __future__ import annotations

from lsprotocol.types import DiagnosticSeverity

from mpslint.blocking import blocks

ERROR = DiagnosticSeverity.Error
WARNING = DiagnosticSeverity.Warning


def severity(code: str) -> DiagnosticSeverity:
    return ERROR if blocks(code) else WARNING
