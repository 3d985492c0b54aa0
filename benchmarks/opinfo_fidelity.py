"""How often does ``verify --simulate`` give the outcome PyTorch itself expects on a Mac? OpInfo against common_mps.py.

    pip install expecttest        # torch.testing._internal needs it
    python benchmarks/opinfo_fidelity.py                 # every OpInfo, all MPS dtypes, 2 processes
    python benchmarks/opinfo_fidelity.py --ops linear,nn.functional.linear --samples 3

For every OpInfo in ``torch.testing._internal.common_methods_invocations.op_db``
and every dtype the MPS consistency test runs, the first samples are made on
the simulated device as ``test_output_match`` makes them (``sample_inputs("mps:0",
...)``: some sample functions choose other arguments for mps, such as softmax's
``dtype=torch.bfloat16``; ``requires_grad`` for floating and complex dtypes),
with the fallback off as in PyTorch's own test run, and the op is called. The outcome -- runs, raises NotImplementedError, raises another
error -- is compared with what the installed torch's
``torch/testing/_internal/common_mps.py`` expects for ``test_output_match``:

* ``float64/complex128``: every op is expected to fail (MPS has neither dtype);
* ``complex64``: expected to fail outside ``SUPPORTED_COMPLEX_OPS``;
* ``missing kernel``: ``UNIMPLEMENTED_XFAILLIST`` entries for all dtypes (and
  ``ON_MPS_XFAILLIST`` ones for all dtypes): a NotImplementedError agrees (or
  PyTorch's float64 TypeError, for listed ops that convert to float64); in
  complex64, for an op outside ``SUPPORTED_COMPLEX_OPS`` as well, a dtype
  restriction inside a kernel agrees too, as a Mac raises whichever check
  comes first;
* ``kernel restriction``: the same lists restricted to some dtypes, and the
  OpInfos' own expected failures on mps: an error expected;
* ``runs``: everything else, which must run.

Numerical mismatches (``UNDEFINED_XFAILLIST``, sort/argsort ties) and skips
cannot be compared: the simulated device computes on the CPU. A sample that
fails on its CPU copy as well says nothing about MPS and is left out (the copy
names the CPU wherever the sample names mps, positionally too: ``t.to("mps:0",
torch.float64)``). Issue
27's targets: at least 95% on expected failures, float64/complex128 apart, and
no false error.

An error agrees with an expected failure only when it is the same kind of
error (``_kind``): a NotImplementedError for a missing kernel (or PyTorch's
float64 TypeError, for the listed ops that convert to float64), PyTorch's
float64/complex128 TypeError for those dtypes, and for restrictions any error
but the simulator's own artefacts (a device mismatch in an op whose inputs
are all on the device, a CPU-build dispatcher error). With ``--backward`` (float32 and float16) the sample's outputs are
also differentiated and compared with ``mps_ops_grad_modifier``'s lists
(``XFAILLIST_GRAD``, its ``ON_MPS_XFAILLIST``; ``test_output_grad_match``).

The figures that matter, printed first: agreement on the pairs PyTorch expects
to fail, float64/complex128 apart (those fail at ``.to("mps")`` for every op,
so a simulator that knew nothing else would still score there), and the false
errors on pairs PyTorch expects to run. Then the agreement per category and
every disagreement with its reason (the exception, or "ran"). Not a test: it
exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import ast
import multiprocessing
import os
import sys
import time
import unittest
import warnings
from collections import Counter, defaultdict
from typing import Any, Dict, List, Optional, Sequence, Tuple

# The repository root instead of benchmarks/: mpslint importable without an install.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CATEGORIES = ("float64/complex128", "complex64", "missing kernel", "kernel restriction", "runs")
EXPECTED_FAILURES = ("complex64", "missing kernel", "kernel restriction")
BACKWARD_DTYPES = ("float32", "float16")
DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
               "complex64", "complex128")


def expectations(torch: Any, modifier: str = "mps_ops_modifier", wanted: Optional[set] = None) -> Dict[str, Any]:
    """The lists of the first ``modifier`` function in common_mps.py, read from its source (they are locals)."""
    import torch.testing._internal as internal

    path = os.path.join(os.path.dirname(internal.__file__), "common_mps.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    wanted = wanted or {"UNIMPLEMENTED_XFAILLIST", "UNDEFINED_XFAILLIST", "ON_MPS_XFAILLIST", "SKIPLIST",
                        "EMPTY_OPS_SKIPLIST", "SUPPORTED_COMPLEX_OPS"}
    found: Dict[str, Any] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef) and function.name == modifier:
            for node in ast.walk(function):
                target = None
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    target, value = node.target.id, node.value
                elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    target, value = node.targets[0].id, node.value
                if target in wanted and target not in found and value is not None:
                    found[target] = eval(compile(ast.Expression(value), path, "eval"), {"torch": torch})
            break
    missing = wanted - set(found)
    if missing:
        raise SystemExit(f"common_mps.py has no {sorted(missing)}: this torch's layout is not known")
    return found


def expected(op: Any, dtype: Any, lists: Dict[str, Any], torch: Any) -> Optional[str]:
    """The category of (op, dtype), or None when PyTorch's expectation cannot be compared."""
    key = op.name + op.variant_test_name
    if dtype in (torch.float64, torch.complex128):
        return "float64/complex128"
    for skips in (lists["SKIPLIST"], lists["EMPTY_OPS_SKIPLIST"]):
        if key in skips and (skips[key] is None or dtype in skips[key]):
            return None
    undefined = lists["UNDEFINED_XFAILLIST"]
    if key in undefined and (undefined[key] is None or dtype in undefined[key]):
        return None
    if key in ("argsort", "sort") and dtype in (lists["ON_MPS_XFAILLIST"].get(key) or ()):
        return None  # ties ordered differently: numerics
    for name in ("UNIMPLEMENTED_XFAILLIST", "ON_MPS_XFAILLIST"):
        table = lists[name]
        if key in table:
            if table[key] is None:
                return "missing kernel"
            if dtype in table[key]:
                return "kernel restriction"
    if dtype == torch.complex64 and key not in lists["SUPPORTED_COMPLEX_OPS"]:
        return "complex64"
    for decorator in op.decorators:
        try:
            active = decorator.is_active("TestConsistency", "test_output_match", "mps", dtype, {})
        except Exception:
            active = False
        if active:
            if any(d is unittest.expectedFailure for d in decorator.decorators):
                return "kernel restriction"
            return None  # a skip
    return "runs"


def expected_backward(op: Any, dtype: Any, grad_lists: Dict[str, Any], forward: Optional[str]) -> Optional[str]:
    """The category of (op, dtype)'s backward: "backward fails", "backward runs", or None (skipped, forward fails)."""
    if forward != "runs" or not op.supports_autograd:
        return None
    key = op.name + op.variant_test_name
    skips = grad_lists["SKIPLIST_GRAD"]
    if key in skips and (skips[key] is None or dtype in skips[key]):
        return None
    for name in ("XFAILLIST_GRAD", "ON_MPS_XFAILLIST"):
        table = grad_lists[name]
        if key in table and (table[key] is None or dtype in table[key]):
            return "backward fails"
    return "backward runs"


def _kind(exc: Optional[BaseException], dtype_name: str) -> str:
    """runs, unimplemented, dtype (PyTorch's float64/complex128 TypeError), artefact (the simulator's own), error."""
    if exc is None:
        return "runs"
    from mpslint.verify import messages

    text = str(exc)
    kind = messages.error_kind(type(exc).__name__, text)
    if kind == "device-mismatch" or "with arguments from the 'MPS' backend" in text:
        return "artefact"  # every input is on the device: a mismatch is a scratch tensor left on the CPU
    if kind == "float64" or "ComplexDouble" in text:
        return "dtype"  # PyTorch's own TypeError; an op that converts to float64 (x.double()) raises it on a Mac too
    if isinstance(exc, NotImplementedError):
        return "unimplemented"
    return "error"


def _agrees(category: str, kind: str, complex_unsupported: bool = False) -> bool:
    """The outcome PyTorch expects, and for a failure the same kind of failure.

    ``complex_unsupported``: a complex64 pair outside ``SUPPORTED_COMPLEX_OPS``, which fails for that reason as
    well; when its op is also listed as missing a kernel, a Mac raises whichever check comes first, so a dtype
    restriction inside a kernel agrees too (svd_lowrank: LinearAlgebra.mm's ``linalg_qr: MPS currently supports
    float32 only`` before the missing ``_linalg_svd``)."""
    if category in ("runs", "backward runs"):
        return kind == "runs"
    if category == "float64/complex128":
        return kind == "dtype"
    if category == "missing kernel":
        # the list also names ops that convert to float64 (double, ...)
        return kind in ("unimplemented", "dtype") or (complex_unsupported and kind == "error")
    return kind in ("unimplemented", "dtype", "error")  # a restriction inside a kernel, complex64, a failing backward


def run_ops(names: Sequence[str], samples: int, backward: bool = False) -> List[Tuple[str, str, str, str, str]]:
    """(op, dtype, category, kind, reason) for each comparable pair of the named OpInfos (and their backward)."""
    warnings.simplefilter("ignore")
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from mpslint.verify.simulate import simulated_device

    lists = expectations(torch)
    grad_lists = expectations(torch, "mps_ops_grad_modifier", {"XFAILLIST_GRAD", "SKIPLIST_GRAD", "ON_MPS_XFAILLIST"}) \
        if backward else {}
    by_name = defaultdict(list)
    for op in op_db:
        by_name[op.name + op.variant_test_name].append(op)
    rows = []
    for key in names:
        for op in by_name[key]:
            supported = op.supported_dtypes("cpu")
            for dtype_name in DTYPE_NAMES:
                dtype = getattr(torch, dtype_name)
                if dtype not in supported:
                    continue
                category = expected(op, dtype, lists, torch)
                if category is None:
                    continue
                row = _run_pair(torch, simulated_device, op, dtype, samples, grad=False)
                if row is None:
                    continue
                rows.append((key, dtype_name, category) + row)
                if backward and dtype_name in BACKWARD_DTYPES and dtype in op.supported_backward_dtypes("cpu"):
                    grad_category = expected_backward(op, dtype, grad_lists, category)
                    if grad_category is not None:
                        row = _run_pair(torch, simulated_device, op, dtype, samples, grad=True)
                        if row is not None:
                            rows.append((key, dtype_name, grad_category) + row)
    return rows


def _run_pair(torch: Any, simulated_device: Any, op: Any, dtype: Any, samples: int,
              grad: bool) -> Optional[Tuple[str, str]]:
    """(kind, reason) of the first samples of (op, dtype) on the emulated device, or None without a usable sample.

    As ``test_output_match`` does: the samples are made on the device (sample functions choose other arguments for
    mps: softmax's ``dtype=`` is bfloat16 there, float64 elsewhere), with ``requires_grad`` for floating and complex
    dtypes, and copied to the CPU for the reference; the device op runs first.
    """
    import itertools

    exc: Optional[BaseException] = None
    pairs = []
    floating = dtype.is_floating_point or dtype.is_complex
    with simulated_device(fallback=False):
        try:
            torch.manual_seed(0)
            made = op.sample_inputs("mps:0", dtype, requires_grad=floating or grad, set_seed=True,
                                    include_conjugated_inputs=dtype.is_complex and op.test_conjugated_samples)
            for sample in itertools.islice(made, samples):
                on_host = sample.transform(lambda t: _to_cpu(t, torch))
                if str(on_host.kwargs.get("device", "")) in ("mps", "mps:0"):
                    on_host.kwargs["device"] = "cpu"
                # sample_inputs_to passes the device positionally (``t.to("mps:0", torch.float64, ...)``)
                on_host.args = tuple("cpu" if _names_mps(a) else a for a in on_host.args)
                pairs.append((sample, on_host))
        except Exception as caught:  # making the samples on the device is part of the test
            exc = caught
    usable = []
    for sample, on_host in pairs:  # a sample the CPU rejects says nothing about MPS
        try:
            _call(torch, op, on_host.input, on_host.args, on_host.kwargs, grad)
        except Exception:
            continue
        usable.append(sample)
    if exc is None and not usable:
        return None
    with simulated_device(fallback=False):
        for sample in usable if exc is None else ():
            try:
                torch.manual_seed(0)
                _call(torch, op, sample.input, sample.args, sample.kwargs, grad)
            except Exception as caught:  # the outcome under test
                exc = caught
                break
    reason = "ran" if exc is None else f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
    return _kind(exc, str(dtype).split(".")[-1]), reason


def _names_mps(value: Any) -> bool:
    return isinstance(value, str) and value in ("mps", "mps:0") or \
        type(value).__name__ == "device" and str(value) in ("mps", "mps:0")


def _to_cpu(value: Any, torch: Any) -> Any:
    """transform_opinfo_sample_to_cpu: a detached CPU copy that keeps requires_grad."""
    if isinstance(value, torch.Tensor):
        copy = value.detach().conj().cpu().conj() if value.is_conj() else value.detach().cpu()
        return copy.requires_grad_(value.requires_grad)
    return value


def _call(torch: Any, op: Any, input: Any, args: Any, kwargs: Any, grad: bool) -> None:
    out = op(input, *args, **kwargs)
    if not grad:
        return
    outputs = [t for t in torch.utils._pytree.tree_flatten(out)[0]
               if isinstance(t, torch.Tensor) and t.requires_grad and (t.is_floating_point() or t.is_complex())]
    leaves = [t for t in torch.utils._pytree.tree_flatten((input, args, kwargs))[0]
              if isinstance(t, torch.Tensor) and t.requires_grad]
    if outputs and leaves:
        torch.autograd.grad([o.sum().abs() if o.is_complex() else o.sum() for o in outputs], leaves,
                            allow_unused=True)


def _worker(args: Tuple[Sequence[str], int, bool]) -> List[Tuple[str, str, str, str, str]]:
    return run_ops(*args)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names (name + variant), default all")
    parser.add_argument("--samples", type=int, default=2, help="samples per op and dtype (default 2)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--backward", action="store_true", help="also differentiate (float32, float16)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    warnings.simplefilter("ignore")
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    names = sorted({op.name + op.variant_test_name for op in op_db})
    if args.ops:
        wanted = set(args.ops.split(","))
        names = [n for n in names if n in wanted]
    chunks = [names[i::args.jobs * 8] for i in range(args.jobs * 8)]
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            parts = pool.map(_worker, [(chunk, args.samples, args.backward) for chunk in chunks if chunk],
                             chunksize=1)
    else:
        parts = [run_ops(names, args.samples, args.backward)]
    rows = sorted(row for part in parts for row in part)
    print(f"torch {torch.__version__}: {len(names)} OpInfos, {len(rows)} comparable (op, dtype) pairs, "
          f"{args.samples} samples each, {time.monotonic() - started:.0f} s\n")
    complex_ok = expectations(torch)["SUPPORTED_COMPLEX_OPS"]
    total, agreed, kinds = Counter(), Counter(), defaultdict(Counter)
    for key, dtype, category, kind, reason in rows:
        total[category] += 1
        agreed[category] += _agrees(category, kind, dtype == "complex64" and key not in complex_ok)
        kinds[category][kind] += 1
    failing = sum(total[c] for c in EXPECTED_FAILURES)
    failing_agreed = sum(agreed[c] for c in EXPECTED_FAILURES)
    false_errors = total["runs"] - agreed["runs"]
    print(f"expected failures, float64/complex128 apart: {failing_agreed} of {failing} predicted with the same kind "
          f"of error ({failing_agreed / max(failing, 1):.1%}; target 95%)")
    print(f"false errors on pairs expected to run: {false_errors} of {total['runs']} "
          f"({kinds['runs']['artefact']} of them the simulator's own artefacts; target 0)")
    if total["backward runs"] or total["backward fails"]:
        print(f"backward: {agreed['backward fails']} of {total['backward fails']} expected failures predicted, "
              f"{total['backward runs'] - agreed['backward runs']} false errors of {total['backward runs']}")
    print(f"float64/complex128: {agreed['float64/complex128']} of {total['float64/complex128']} fail as on a Mac\n")
    header = "".join(f"{k:>9}" for k in ("runs", "NotImpl", "dtype", "error", "artefact"))
    print(f"{'category':<22}{'agree':>8}{'pairs':>8}{'rate':>8}{header}")
    for category in CATEGORIES + ("backward fails", "backward runs"):
        if total[category]:
            counts = kinds[category]
            print(f"{category:<22}{agreed[category]:>8}{total[category]:>8}"
                  f"{agreed[category] / total[category]:>8.1%}"
                  + "".join(f"{counts[k]:>9}" for k in ("runs", "unimplemented", "dtype", "error", "artefact")))
    all_total, all_agreed = sum(total.values()), sum(agreed.values())
    print(f"{'all':<22}{all_agreed:>8}{all_total:>8}{all_agreed / max(all_total, 1):>8.1%}\n")
    print("disagreements (category: op dtype -> outcome, reason):")
    for key, dtype, category, kind, reason in rows:
        if not _agrees(category, kind, dtype == "complex64" and key not in complex_ok):
            print(f"  {category}: {key} {dtype} -> {kind}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
