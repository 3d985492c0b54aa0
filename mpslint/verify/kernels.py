"""Would this aten op run natively on MPS? The simulated device's decision per op.

The facts come from ``mpslint.knowledge.mps_kernels`` (the installed torch's
``native_functions.yaml``); this module only adds what the yaml cannot say and
the dispatcher of the running torch can: Python-registered MPS kernels (such
as ``linalg_lu_solve.out`` in ``torch/_refs/linalg/__init__.py``), which
composite kernels are really registered, and the CPU-only ops a composite
picks because the emulated tensor is on the CPU underneath while a real MPS
tensor would take the MPS branch. On a Mac the dispatcher also says which ops
run on the CPU by design (``registered_as_cpu_fallback``: the kernel on the MPS
key is MPSFallback.mm's boxed fallback), before the question "has a kernel",
which those ops would answer yes; the table's hand-kept list of them is used
only where the dispatcher cannot say (a CPU build, under ``--simulate``).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Dict, Optional, Set, Tuple

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


# The file whose kernels on the MPS key are PyTorch's CPU fallback by design (``m.impl(op, mps_fallback)``).
FALLBACK_FILE = "MPSFallback.mm"
_REGISTERED = re.compile(r"^MPS: registered at (?P<file>.*?):\d+ :: (?P<schema>.*) \[ (?P<how>[a-z ]+) \]$", re.M)


def mps_registration(qualified: str) -> Optional[Tuple[str, bool]]:
    """(file, boxed only) of ``qualified``'s kernel on the MPS key, as the running torch's dispatcher records it.

    ``torch._C._dispatch_dump`` names the file that registered each kernel.
    MPSFallback.mm registers its CPU fallbacks as boxed-only functions
    (``makeFromBoxedFunction<&mps_fallback>``: no schema, ``[ boxed ]``), and
    also one typed kernel that is no fallback (``_slow_conv2d_forward``'s
    device-mismatch error). None when nothing is registered on the MPS key.
    """
    try:
        dump = torch._C._dispatch_dump(qualified)
    except RuntimeError:
        return None
    return parse_mps_registration(dump)


def parse_mps_registration(dump: str) -> Optional[Tuple[str, bool]]:
    """``mps_registration`` from the text of ``torch._C._dispatch_dump``."""
    found = _REGISTERED.search(dump)
    if found is None:
        return None
    return found.group("file"), found.group("how").split() == ["boxed"]


def registered_as_cpu_fallback(qualified: str) -> bool:
    """Whether the running torch runs ``qualified`` on the CPU by design: MPSFallback.mm's boxed fallback kernel."""
    return _is_cpu_fallback(mps_registration(qualified))


def _is_cpu_fallback(found: Optional[Tuple[str, bool]]) -> bool:
    return found is not None and found[1] and found[0].replace("\\", "/").endswith("/" + FALLBACK_FILE)


class KernelOracle:
    """Decisions per op. ``dispatcher_knows``: the running torch registers MPS kernels (a Mac), so its dispatcher,
    not a hand-kept list, says which ops run on the CPU by design; False on a CPU build (``--simulate``), where
    only kernels registered from Python are on the MPS key and the table's list stands."""

    def __init__(self, table: Optional[KernelTable] = None, *, dispatcher_knows: Optional[bool] = None) -> None:
        table = table if table is not None else load_table()
        self.dispatcher_knows = bool(getattr(torch._C, "_has_mps", False)) if dispatcher_knows is None \
            else dispatcher_knows
        if self.dispatcher_knows:
            # The list is the table's guess at MPSFallback.mm; here the registrations themselves are read.
            table = dataclasses.replace(table, explicit_cpu_fallbacks=frozenset())
        self.table = table
        self._cache: Dict[object, Decision] = {}
        self.unknown: Dict[str, int] = {}
        self.by_design: Set[str] = set()  # ops decided as CPU fallbacks by design, as printed ("aten::linalg_svd")

    def decide(self, func: torch._ops.OpOverload) -> Decision:
        decision = self._cache.get(func)
        if decision is None:
            decision = self._cache[func] = self._decide(func)
            if decision.kind == EXPLICIT_FALLBACK:
                self.by_design.add(decision.op)
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
        # "Runs on the CPU by design" before "has a kernel": MPSFallback.mm's fallbacks are kernels on the MPS key.
        if registered_as_cpu_fallback(qualified):
            return Decision(EXPLICIT_FALLBACK, printed)
        if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "MPS"):
            return Decision(NATIVE, printed)  # an MPS kernel, or one registered from Python (torch.library)
        if namespace != "aten":
            return Decision(UNKNOWN, printed)
        table = self.table
        if short in table.explicit_cpu_fallbacks:
            return Decision(EXPLICIT_FALLBACK, printed)  # a CPU build: the table's list, as the dispatcher cannot say
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
