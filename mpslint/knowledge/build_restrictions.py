"""Regenerate the table of dtype restrictions inside MPS kernels from an installed torch's own test expectations.

    pip install expecttest   # torch.testing._internal needs it
    python -m mpslint.knowledge.build_restrictions [--out DIR]

Source: ``torch/testing/_internal/common_mps.py`` of the installed torch: the
dtype-restricted entries of ``mps_ops_modifier``'s ``UNIMPLEMENTED_XFAILLIST``
and ``ON_MPS_XFAILLIST`` (an OpInfo that PyTorch's MPS consistency test expects
to fail for those dtypes only), and, for complex64, the OpInfos outside
``SUPPORTED_COMPLEX_OPS``. The lists name OpInfos; the emulated device sees
aten ops. Each OpInfo's first sample is run on the CPU under a dispatch mode,
and the entry is kept only when the OpInfo dispatches an aten op of its own
name (``nn.functional.avg_pool2d`` -> ``aten::avg_pool2d``) with an input of
the restricted dtype, or else exactly one op besides the generic ones
(``linalg.inv`` -> ``aten::linalg_inv_ex``), and no OpInfo that runs in that
dtype dispatches the same op: a restriction is never placed on an op that
other, passing calls share. Writes ``data/mps_restrictions_<major>_<minor>.json`` with the source
file, the torch version and its git commit.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

DATA = Path(__file__).with_name("data")
DTYPES = ("float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool", "complex64")
# Ops every OpInfo reaches (copies, views, factories): never a restriction's carrier.
_GENERIC = {"_to_copy", "copy_", "clone", "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones",
            "full", "fill_", "detach", "view", "reshape", "expand", "lift_fresh", "alias", "t", "transpose",
            "unsqueeze", "squeeze", "select", "slice", "as_strided", "resize_", "_local_scalar_dense", "contiguous",
            "permute", "result_type", "scalar_tensor", "item", "set_", "add", "mul", "sub", "div", "where", "stack",
            "cat", "sum", "mean", "neg", "abs", "isnan", "eq", "ne", "lt", "gt", "le", "ge", "logical_not", "any", "all",
            # allocations whose OpInfos compare uninitialized memory: their expected failures say nothing of the kernel
            "new_empty", "new_empty_strided", "resize_as_"}


def common_mps_lists(path: str, torch: Any) -> Dict[str, Any]:
    """The locals of the first ``mps_ops_modifier`` in common_mps.py (they are not importable)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    wanted = {"UNIMPLEMENTED_XFAILLIST", "ON_MPS_XFAILLIST", "SUPPORTED_COMPLEX_OPS"}
    found: Dict[str, Any] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef) and function.name == "mps_ops_modifier":
            for node in ast.walk(function):
                target = value = None
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    target, value = node.target.id, node.value
                elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    target, value = node.targets[0].id, node.value
                if target in wanted and target not in found and value is not None:
                    found[target] = eval(compile(ast.Expression(value), path, "eval"), {"torch": torch})
            break
    if set(found) != wanted:
        raise SystemExit(f"{path} has no {sorted(wanted - set(found))}: this torch's layout is not known")
    return found


def _dispatched(torch: Any, op: Any, dtype: Any) -> Optional[Set[str]]:
    """The aten ops (packet names) the OpInfo's first usable sample dispatches with a tensor of ``dtype``."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: Set[str] = set()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            leaves = torch.utils._pytree.tree_flatten((args, kwargs or {}))[0]
            if any(isinstance(t, torch.Tensor) and t.dtype == dtype for t in leaves):
                seen.add(func._schema.name.split("::", 1)[-1])
            return func(*args, **(kwargs or {}))

    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:3]
    except Exception:
        return None
    for sample in samples:
        seen.clear()
        try:
            with Record():
                op(sample.input, *sample.args, **sample.kwargs)
        except Exception:
            continue
        return set(seen)
    return None


def _own_name(key: str) -> Set[str]:
    """The aten names an OpInfo key may dispatch as its own: ``nn.functional.avg_pool2d`` -> avg_pool2d, ..."""
    last = key.split(".")[-1]
    return {last, last + "_", "_" + last, last.rstrip("0123456789d") or last}


def build(torch: Any) -> Dict[str, Any]:
    import torch.testing._internal as internal
    from torch.testing._internal.common_methods_invocations import op_db

    path = os.path.join(os.path.dirname(internal.__file__), "common_mps.py")
    lists = common_mps_lists(path, torch)
    wanted: Dict[Tuple[str, str], str] = {}  # (OpInfo key, dtype name) -> which list says it fails
    for name in ("UNIMPLEMENTED_XFAILLIST", "ON_MPS_XFAILLIST"):
        for key, dtypes in lists[name].items():
            for dtype in dtypes or ():
                wanted[(key, str(dtype).split(".")[-1])] = name
    restricted_keys = {key for key, _ in wanted}
    complex_ok = set(lists["SUPPORTED_COMPLEX_OPS"])
    unlisted = {key for name in ("UNIMPLEMENTED_XFAILLIST", "ON_MPS_XFAILLIST") for key in lists[name]}

    passing: Dict[str, Set[str]] = {d: set() for d in DTYPES}  # dtype -> aten ops that OpInfos run in it on a Mac
    failing: Dict[Tuple[str, str], Tuple[Set[str], str]] = {}
    for op in op_db:
        key = op.name + op.variant_test_name
        supported = op.supported_dtypes("cpu")
        for dtype_name in DTYPES:
            dtype = getattr(torch, dtype_name)
            if dtype not in supported:
                continue
            if (key, dtype_name) in wanted:
                source = wanted[(key, dtype_name)]
            elif dtype_name == "complex64" and key not in complex_ok and key not in unlisted:
                source = "SUPPORTED_COMPLEX_OPS (not listed)"
            elif key in unlisted and key not in restricted_keys:
                continue  # fails for every dtype: a missing kernel, which the kernel table covers
            else:
                source = None
            ops = _dispatched(torch, op, dtype)
            if ops is None:
                continue
            if source is None:
                passing[dtype_name] |= ops
            else:
                failing[(key, dtype_name)] = (ops, source)

    return {
        "torch_version": torch.__version__.split("+")[0],
        "git_version": getattr(torch.version, "git_version", "unknown"),
        "source": "torch/testing/_internal/common_mps.py (mps_ops_modifier), OpInfos traced on the CPU",
        "generator": "python -m mpslint.knowledge.build_restrictions",
        "ops": restricted_ops(passing, failing),
    }


def carriers(key: str, ops: Set[str], passing: Set[str]) -> List[str]:
    """The aten ops of a failing OpInfo that carry its restriction: those of its own name that no passing OpInfo
    dispatches in the dtype; without one, the only op it dispatches that no passing OpInfo does (``linalg.inv`` ->
    ``linalg_inv_ex``, ``stdunbiased`` -> ``std``), or none when several are left and the failing one is unknown."""
    unshared = sorted(o for o in ops if o not in _GENERIC and o not in passing)
    own = [o for o in unshared if o in _own_name(key)]
    return own or (unshared if len(unshared) == 1 else [])


def restricted_ops(passing: Dict[str, Set[str]],
                   failing: Dict[Tuple[str, str], Tuple[Set[str], str]]) -> Dict[str, Dict[str, Any]]:
    table: Dict[str, Dict[str, Any]] = {}
    for (key, dtype_name), (ops, source) in sorted(failing.items()):
        for aten in carriers(key, ops, passing[dtype_name]):
            entry = table.setdefault(aten, {"dtypes": [], "because": []})
            if dtype_name not in entry["dtypes"]:
                entry["dtypes"].append(dtype_name)
            entry["because"].append(f"{source}[{key!r}] {dtype_name}")
    return {op: {"dtypes": sorted(e["dtypes"], key=DTYPES.index), "because": e["because"]}
            for op, e in sorted(table.items())}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(DATA))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch

    data = build(torch)
    major, minor = data["torch_version"].split(".")[:2]
    out = Path(args.out) / f"mps_restrictions_{major}_{minor}.json"
    out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{out}: {len(data['ops'])} aten ops restricted by dtype")
    return 0


if __name__ == "__main__":
    sys.exit(main())
