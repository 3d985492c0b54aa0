"""What a host read proves: a value read with ``.item()`` or ``.cpu()`` is a tensor.

The device flow gives up at a helper it cannot see (``from timm.utils import
accuracy``, ``metric_fn`` taken from a dict, a function whose summary is not
known) and calls its result unknown. But code that reads that result with
``.item()``, ``.tolist()`` or ``.detach().cpu()`` says it is a tensor (a
Python number has no ``.item()``), and a tensor computed by a helper from
device tensors is on the device: ``acc1, acc5 = accuracy(output, target)``
then ``acc1.item()``, ``accuracy(output.data, target)[0].item()``,
``metric_fn(y_pred, y).detach().cpu()``.

A helper whose name says it gives host values (``to_numpy``, ``tensor2array``,
``as_cpu``) is believed, and so is whatever the project model or a known
library says a call gives.
"""

from __future__ import annotations

import ast
import re

from mpslint.analysis.project.facts import argument_positions, item, item_facts
from mpslint.analysis.syntax import positional_at
from mpslint.analysis.device_flow.kinds import HOST_MODULES, Kind, _ATTRIBUTE, _CALL, _NAME

# Methods that keep a tensor where it is: a chain of them before the read is still the helper's result.
TENSOR_METHODS = frozenset("detach float double half mean sum clone squeeze view reshape flatten contiguous abs".split())
HOST_HELPER = re.compile(r"numpy|np$|^np|cpu|host|array|list|str|float$|int$|scalar|python", re.IGNORECASE)
_DEPTH = 6


class HostReads:
    """Values whose host read proves them device tensors (a part of ``DeviceFlow``)."""

    def read_as_device_tensor(self, expr: ast.AST) -> bool:
        """``expr``, read on the host as a tensor (its ``.item()``, ``.cpu()``), is on the device: the flow
        says so, or it is the result of a helper the flow cannot see, called on device tensors."""
        return self._read_from_device(expr, 0)

    def _read_from_device(self, expr: ast.AST, depth: int) -> bool:
        kind = self.kind(expr)  # type: ignore[attr-defined]
        if kind is Kind.DEVICE:
            return True
        if kind is not Kind.UNKNOWN or depth > _DEPTH:
            return False
        cls = type(expr)
        if cls is ast.Subscript:
            return self._read_from_device(expr.value, depth + 1)  # type: ignore[attr-defined]
        if cls is ast.BinOp:  # `reduced["loss"] * weights["loss"]`: a tensor where its tensor side is
            return self._read_from_device(expr.left, depth + 1) or self._read_from_device(expr.right, depth + 1)  # type: ignore[attr-defined]
        if cls is ast.GeneratorExp or cls is ast.ListComp:  # `sum(d[k] for k in d)`: what it sums
            return self._read_from_device(expr.elt, depth + 1)  # type: ignore[attr-defined]
        if cls is _NAME:
            bindings = self.visible(expr.id, expr)  # type: ignore[attr-defined]
            return bool(bindings) and all(self._bound_from_device(b, depth) for b in bindings)
        if cls is _CALL:
            func = expr.func  # type: ignore[attr-defined]
            if type(func) is _ATTRIBUTE and func.attr in TENSOR_METHODS and self.ctx.qualify(func) is None:  # type: ignore[attr-defined]
                return self._read_from_device(func.value, depth + 1)
            return self._unseen_helper_of_device_tensors(expr, depth)  # type: ignore[arg-type]
        return False

    def _bound_from_device(self, binding, depth: int) -> bool:
        if binding.how == "for" and type(binding.value) is _CALL:
            # `{k: v.item() for k, v in reduced.items()}`: the values of what an unseen helper returned
            func = binding.value.func
            if type(func) is _ATTRIBUTE and func.attr in ("items", "values") and not binding.value.args:
                return self._read_from_device(func.value, depth + 1)
            return False
        if binding.how != "assign" or binding.value is None:
            return False
        value = binding.value
        for step in binding.path:
            if type(value) in (ast.Tuple, ast.List) and isinstance(step, int) and step < len(value.elts):
                element = value.elts[step]
                value = element.value if type(element) is ast.Starred else element
            elif type(value) is _CALL:
                fact = self.returned_fact(value)  # type: ignore[attr-defined]
                if isinstance(step, int) and item(fact, step) is not None and item_facts(fact) is not None:
                    # `pred, true = self.step(x, y)`: the project model says what each item is
                    positions = argument_positions(item(fact, step))
                    values = [positional_at(value, p) for p in positions]
                    return any(v is not None and self._read_from_device(v, depth + 1) for v in values)
                break  # `acc1, acc5 = accuracy(output, target, topk=(1, 5))`: the parts of a helper's result
            else:
                return False
        return self._read_from_device(value, depth + 1)

    def _unseen_helper_of_device_tensors(self, call: ast.Call, depth: int) -> bool:
        qualified = self.ctx.qualify(call.func) or ""  # type: ignore[attr-defined]
        if qualified.split(".", 1)[0] in ("torch", "builtins", *HOST_MODULES):
            return False
        name = qualified or _callee_name(call.func)
        if not name or HOST_HELPER.search(name.rsplit(".", 1)[-1]):
            return False
        fact = self.returned_fact(call)  # type: ignore[attr-defined]
        positions = argument_positions(fact)
        if positions:
            # `self.predict(x)`, computed from its arguments: on the device when one of those is
            values = [positional_at(call, p) for p in positions]
            return any(v is not None and self._read_from_device(v, depth + 1) for v in values)
        if fact is not None:
            return False  # the project model knows what it gives, and the flow said it
        values = [a.value if type(a) is ast.Starred else a for a in call.args] + [k.value for k in call.keywords]
        # computed from device tensors, or from what another unseen helper computed from them
        # (`sum(reduce_dict(loss_dict)[k] for k in weights)`)
        return any(self._read_from_device(v, depth + 1) for v in values)


def _callee_name(func: ast.AST) -> str:
    if type(func) is _NAME:
        return func.id  # type: ignore[attr-defined]
    if type(func) is _ATTRIBUTE:
        return func.attr  # type: ignore[attr-defined]
    return ""
