"""Calls that match a known silently-wrong trigger of the installed torch (``mpslint.knowledge.silent_wrong``).

A trigger is visible from the call's arguments (shapes, strides, dtypes), so
the same check runs on a Mac and under ``--simulate``. ``Triggers.check`` is
asked by ``ProbeMode`` for each aten op with a tensor on the device (a dict
miss for ops no entry names); entries on a Python function (a composite the
simulator decomposes, such as ``F.linear``, which a Mac runs as one MPS
kernel) are matched by ``FunctionTriggers``, a torch function mode.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch.overrides import TorchFunctionMode

from mpslint.knowledge import silent_wrong

Rule = Tuple[str, List[Dict[str, Any]]]  # (entry id, conditions)


def _tensor(value: Any) -> Optional[torch.Tensor]:
    return value if isinstance(value, torch.Tensor) else None


def _size(value: Any, dim: int) -> Optional[int]:
    tensor = _tensor(value)
    if tensor is None or not -tensor.dim() <= dim < tensor.dim():
        return None
    return int(tensor.shape[dim])


def _stored(tensor: torch.Tensor) -> int:
    """Elements held in memory: a broadcast dimension (stride 0, from expand) holds one, whatever its size. The
    issues' triggers are about tensors that large in memory; a broadcast weight in matmul's batch is not shown."""
    count = 1
    for size, stride in zip(tensor.shape, tensor.stride()):
        count *= size if stride else min(size, 1)
    return count


def _holds(test: Dict[str, Any], bound: Dict[str, Any]) -> bool:
    kind = test["test"]
    value = bound.get(test.get("arg", ""))
    tensor = _tensor(value)
    if kind == "defined":
        return value is not None
    if kind == "non_contiguous":
        return tensor is not None and not tensor.is_contiguous()
    if kind == "contiguous":
        return tensor is not None and tensor.is_contiguous()
    if kind == "dim_equals":
        return tensor is not None and tensor.dim() == test["value"]
    if kind == "dim_at_least":
        return tensor is not None and tensor.dim() >= test["value"]
    if kind == "size_over":
        size = _size(value, test["dim"])
        return size is not None and size > test["limit"]
    if kind == "size_at_least":
        size = _size(value, test["dim"])
        return size is not None and size >= test["value"]
    if kind == "numel_over":
        return tensor is not None and _stored(tensor) > test["limit"]
    if kind == "any_numel_over":
        return any(isinstance(bound.get(a), torch.Tensor) and _stored(bound[a]) > test["limit"] for a in test["args"])
    if kind == "any_non_contiguous":
        return any(isinstance(bound.get(a), torch.Tensor) and not bound[a].is_contiguous() for a in test["args"])
    if kind == "sum_numel_over":
        return isinstance(value, (list, tuple)) and \
            sum(t.numel() for t in value if isinstance(t, torch.Tensor)) > test["limit"]
    if kind == "product_over":
        product = 1
        for arg, dim in test["sizes"]:
            size = _size(bound.get(arg), dim)
            if size is None:
                return False
            product *= size
        return product > test["limit"]
    raise ValueError(f"unknown test {kind!r} in {silent_wrong.TABLE}")


def matches(conditions: List[Dict[str, Any]], bound: Dict[str, Any]) -> bool:
    return all(_holds(test, bound) for test in conditions)


class Triggers:
    """The entries for ``version`` (the installed torch by default), indexed by aten op and by Python function."""

    def __init__(self, version: Optional[str] = None) -> None:
        self.version = version or torch.__version__
        self.ops: Dict[str, List[Rule]] = {}
        self.functions: Dict[Any, Tuple[List[str], List[Rule]]] = {}
        self._names: Dict[Any, List[str]] = {}
        for entry in silent_wrong.for_version(self.version):
            for match in entry["match"]:
                if "op" in match:
                    self.ops.setdefault(match["op"], []).append((entry["id"], match["when"]))
                else:
                    function = _resolve(match["function"])
                    if function is not None:
                        self.functions.setdefault(function, (match["params"], []))[1].append(
                            (entry["id"], match["when"]))

    def check(self, func: Any, args: tuple, kwargs: Dict[str, Any], found: Callable[[str], None]) -> None:
        """Tell ``found`` each entry whose trigger this aten op call matches."""
        rules = self.ops.get(func._schema.name)
        if not rules:
            return
        names = self._names.get(func)
        if names is None:
            names = self._names[func] = [argument.name for argument in func._schema.arguments]
        bound = dict(zip(names, args), **kwargs)
        for entry, conditions in rules:
            if matches(conditions, bound):
                found(entry)


def _resolve(qualified: str) -> Any:
    module, _, name = qualified.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


class FunctionTriggers(TorchFunctionMode):
    """Entries on Python functions, matched when a function is called with a tensor on ``device``."""

    def __init__(self, triggers: Triggers, found: Callable[[str], None], device: str = "mps") -> None:
        super().__init__()
        self.triggers = triggers
        self.found = found
        self.device = device

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        known = self.triggers.functions.get(func)
        if known is not None:
            params, rules = known
            bound = dict(zip(params, args), **kwargs)
            if any(isinstance(v, torch.Tensor) and v.device.type == self.device for v in bound.values()):
                for entry, conditions in rules:
                    if matches(conditions, bound):
                        self.found(entry)
        return func(*args, **kwargs)
