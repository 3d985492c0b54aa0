"""Would this aten op run natively on MPS? The simulated device's decision per op.

The facts come from ``mpslint.knowledge.mps_kernels`` (the installed torch's
``native_functions.yaml``); this module only adds what the yaml cannot say and
the dispatcher of the running torch can: Python-registered MPS kernels (such
as ``linalg_lu_solve.out`` in ``torch/_refs/linalg/__init__.py``), which
composite kernels are really registered, and the CPU-only ops a composite
picks because the emulated tensor is on the CPU underneath while a real MPS
tensor would take the MPS branch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional

import torch

from mpslint.knowledge.mps_kernels import KernelTable, load_table

NATIVE = "native"
MISSING = "missing"  # no kernel: the boxed fallback warns (flag set) or raises
EXPLICIT_FALLBACK = "explicit-fallback"  # MPSFallback.mm runs it on the CPU with a warning, flag or not
COMPOSITE = "composite"  # follow the composite kernel: its ops decide
UNKNOWN = "unknown"  # not an aten op the table knows: assumed native, and said so in the report

# Device-branch artefacts (aten/src/ATen/native/Convolution.cpp _select_conv_backend, and the
# scaled_dot_product_attention dispatch): convolution and attention composites
# pick these because the data is on the CPU; on MPS they pick _mps_convolution,
# _mps_convolution_transpose or _scaled_dot_product_attention_math_for_mps.
_CPU_BRANCH = re.compile(
    r"^(_?slow_conv\w*|_nnpack\w*|_?mkldnn\w*|_scaled_dot_product_flash_attention_for_cpu\w*|_fused_sdp_choice"
    r"|thnn_conv2d\w*)(\.|$)"
)

_KEYS = {
    "CompositeImplicitAutograd": torch._C.DispatchKey.CompositeImplicitAutograd,
    "CompositeExplicitAutograd": torch._C.DispatchKey.CompositeExplicitAutograd,
    "CompositeExplicitAutogradNonFunctional": torch._C.DispatchKey.CompositeExplicitAutogradNonFunctional,
}


@dataclass(frozen=True)
class Decision:
    kind: str
    op: str  # "aten::name.overload", as PyTorch's messages print it
    key: Optional[torch._C.DispatchKey] = None  # the composite kernel to follow


class KernelOracle:
    def __init__(self, table: Optional[KernelTable] = None) -> None:
        self.table = table if table is not None else load_table()
        self._cache: Dict[object, Decision] = {}
        self.unknown: Dict[str, int] = {}

    def decide(self, func: torch._ops.OpOverload) -> Decision:
        decision = self._cache.get(func)
        if decision is None:
            decision = self._cache[func] = self._decide(func)
        if decision.kind == UNKNOWN:
            self.unknown[decision.op] = self.unknown.get(decision.op, 0) + 1
        return decision

    def _decide(self, func: torch._ops.OpOverload) -> Decision:
        qualified = func.name()  # "aten::add.Tensor" / "aten::zeros"
        namespace, _, rest = qualified.partition("::")
        overload = func._overloadname
        name = func._schema.name.split("::", 1)[-1]
        short = name if overload in ("default", "") else f"{name}.{overload}"
        printed = f"{namespace}::{short}"
        if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "MPS"):
            return Decision(NATIVE, printed)  # registered from Python (torch.library on the MPS key)
        if namespace != "aten":
            return Decision(UNKNOWN, printed)
        table = self.table
        if short in table.explicit_cpu_fallbacks:
            return Decision(EXPLICIT_FALLBACK, printed)
        if table.has_mps_kernel(short) or _CPU_BRANCH.match(short):
            return Decision(NATIVE, printed)
        composite = table.is_composite(short)
        if composite and func.is_view:
            return Decision(NATIVE, printed)  # a view computes nothing; its kernel re-enters itself
        if composite:
            key = _KEYS.get(composite)
            if key is not None and torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key):
                return Decision(COMPOSITE, printed, key)
            return Decision(NATIVE, printed)
        if not table.knows(short):
            return Decision(UNKNOWN, printed)
        return Decision(MISSING, printed)
