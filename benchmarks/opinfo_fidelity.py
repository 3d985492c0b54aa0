"""How often does ``verify --simulate`` give the outcome PyTorch itself expects on a Mac? OpInfo against common_mps.py.

    pip install expecttest        # torch.testing._internal needs it
    python benchmarks/opinfo_fidelity.py                 # every OpInfo, all MPS dtypes, 2 processes
    python benchmarks/opinfo_fidelity.py --ops linear,nn.functional.linear --samples 3

For every OpInfo in ``torch.testing._internal.common_methods_invocations.op_db``
and every dtype the MPS consistency test runs, the first samples are moved to
the simulated device (fallback off, as in PyTorch's own test run) and the op
is called. The outcome -- runs, raises NotImplementedError, raises another
error -- is compared with what the installed torch's
``torch/testing/_internal/common_mps.py`` expects for ``test_output_match``:

* ``float64/complex128``: every op is expected to fail (MPS has neither dtype);
* ``complex64``: expected to fail outside ``SUPPORTED_COMPLEX_OPS``;
* ``missing kernel``: ``UNIMPLEMENTED_XFAILLIST`` entries for all dtypes (and
  ``ON_MPS_XFAILLIST`` ones for all dtypes): mostly a missing kernel, but the
  list also holds a few restrictions inside kernels (adaptive pooling), so any
  error agrees and the table counts the NotImplementedErrors apart;
* ``kernel restriction``: the same lists restricted to some dtypes, and the
  OpInfos' own expected failures on mps: an error expected;
* ``runs``: everything else, which must run.

Numerical mismatches (``UNDEFINED_XFAILLIST``, sort/argsort ties) and skips
cannot be compared: the simulated device computes on the CPU. A sample that
fails on the plain CPU as well says nothing about MPS and is left out.

Prints the agreement per category and every disagreement with its reason
(the exception, or "ran"). Not a test: it exits 0 whatever the figures.
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
DTYPE_NAMES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
               "complex64", "complex128")


def expectations(torch: Any) -> Dict[str, Any]:
    """The lists of the first ``mps_ops_modifier`` in common_mps.py, read from its source (they are locals)."""
    import torch.testing._internal as internal

    path = os.path.join(os.path.dirname(internal.__file__), "common_mps.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    wanted = {"UNIMPLEMENTED_XFAILLIST", "UNDEFINED_XFAILLIST", "ON_MPS_XFAILLIST", "SKIPLIST", "EMPTY_OPS_SKIPLIST",
              "SUPPORTED_COMPLEX_OPS"}
    found: Dict[str, Any] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef) and function.name == "mps_ops_modifier":
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


def _to_mps(value: Any, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        moved = value.to("mps")
        return moved.requires_grad_(value.requires_grad) if value.is_leaf and value.requires_grad else moved
    if isinstance(value, (list, tuple)):
        return type(value)(_to_mps(v, torch) for v in value)
    if isinstance(value, dict):
        return {k: torch.device("mps") if k == "device" and value[k] in ("cpu", torch.device("cpu"))
                else _to_mps(v, torch) for k, v in value.items()}
    if isinstance(value, torch.device) and value.type == "cpu":
        return torch.device("mps")
    return value


def _outcome(exc: Optional[BaseException]) -> str:
    if exc is None:
        return "runs"
    if isinstance(exc, NotImplementedError):
        return "unimplemented"
    return "error"


def _agrees(category: str, outcome: str) -> bool:
    """PyTorch's lists say "fails", not how: any error agrees with an expected failure (the reason is printed)."""
    return (outcome == "runs") == (category == "runs")


def run_ops(names: Sequence[str], samples: int) -> List[Tuple[str, str, str, str, str]]:
    """(op, dtype, category, outcome, reason) for each comparable pair of the named OpInfos."""
    warnings.simplefilter("ignore")
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    from mpslint.verify.simulate import simulated_device

    lists = expectations(torch)
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
                try:
                    inputs = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:samples]
                except Exception:
                    continue
                usable = []
                for sample in inputs:  # a sample the CPU rejects says nothing about MPS
                    try:
                        op(sample.input, *sample.args, **sample.kwargs)
                    except Exception:
                        continue
                    usable.append(sample)
                if not usable:
                    continue
                exc: Optional[BaseException] = None
                with simulated_device(fallback=False):
                    for sample in usable:
                        try:
                            torch.manual_seed(0)
                            op(_to_mps(sample.input, torch), *_to_mps(sample.args, torch),
                               **_to_mps(sample.kwargs, torch))
                        except Exception as caught:  # the outcome under test
                            exc = caught
                            break
                outcome = _outcome(exc)
                reason = "ran" if exc is None else f"{type(exc).__name__}: {str(exc).splitlines()[0][:150]}"
                rows.append((key, dtype_name, category, outcome, reason))
    return rows


def _worker(args: Tuple[Sequence[str], int]) -> List[Tuple[str, str, str, str, str]]:
    return run_ops(*args)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names (name + variant), default all")
    parser.add_argument("--samples", type=int, default=2, help="samples per op and dtype (default 2)")
    parser.add_argument("--jobs", type=int, default=2)
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
            parts = pool.map(_worker, [(chunk, args.samples) for chunk in chunks if chunk], chunksize=1)
    else:
        parts = [run_ops(names, args.samples)]
    rows = sorted(row for part in parts for row in part)
    print(f"torch {torch.__version__}: {len(names)} OpInfos, {len(rows)} comparable (op, dtype) pairs, "
          f"{args.samples} samples each, {time.monotonic() - started:.0f} s\n")
    total, agreed, unimplemented = Counter(), Counter(), Counter()
    for key, dtype, category, outcome, reason in rows:
        total[category] += 1
        agreed[category] += _agrees(category, outcome)
        unimplemented[category] += outcome == "unimplemented"
    print(f"{'category':<22}{'agree':>8}{'pairs':>8}{'rate':>8}{'NotImpl':>9}")
    for category in CATEGORIES:
        if total[category]:
            print(f"{category:<22}{agreed[category]:>8}{total[category]:>8}"
                  f"{agreed[category] / total[category]:>8.1%}{unimplemented[category]:>9}")
    all_total, all_agreed = sum(total.values()), sum(agreed.values())
    print(f"{'all':<22}{all_agreed:>8}{all_total:>8}{all_agreed / max(all_total, 1):>8.1%}\n")
    print("disagreements (category: op dtype -> outcome, reason):")
    for key, dtype, category, outcome, reason in rows:
        if not _agrees(category, outcome):
            print(f"  {category}: {key} {dtype} -> {outcome}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
