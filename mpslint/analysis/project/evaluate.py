"""The fact of one expression, from its shape and the facts of the names it reads.

A deliberately small evaluator: it serves summaries (what a module-level name
holds, what a function returns), not the per-use device flow of a checked file
(``analysis/device_flow``). It knows the sources of devices, host tensors,
float64 arrays and CUDA flags, and it carries "computed from argument K"
through arithmetic, tensor methods and ``torch`` functions.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Optional

from mpslint.analysis.names import qualify_dotted
from mpslint.analysis.project import facts
from mpslint.analysis.syntax import dotted_name, keyword

# numpy functions whose arrays are float64 unless told a dtype (np.random.RandomState(s).X too).
NUMPY_FLOAT64 = frozenset(
    "rand randn random random_sample normal uniform standard_normal linspace logspace loadtxt genfromtxt".split())
# Methods whose result is a value on the host, whatever the receiver's device.
HOST_METHODS = frozenset("item tolist numpy size dim numel shape __len__".split())
# Builtins whose result is a Python value, whatever they are given.
HOST_BUILTINS = frozenset("float int bool str repr len round".split())
# What reads a tensor's values on the host (a wait for the device when it is there), and how (facts.HOST_*).
# (`.float()` and `.int()` are casts on the device: only the builtins read.)
_READS = {"item": facts.HOST_READ, "tolist": facts.HOST_READ, "numpy": facts.HOST_COPY, "cpu": facts.HOST_COPY}
_BUILTIN_READS = {"float": facts.HOST_READ, "int": facts.HOST_READ, "bool": facts.HOST_READ}
TORCH_FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor as_tensor".split()
)
ACCELERATORS = ("cuda", "mps", "xpu")
CUDA_FLAGS = frozenset(("torch.cuda.is_available",))
# The accelerator's device, or None where there is none (then `or torch.device("cpu")` picks the host).
ACCELERATOR_DEVICES = frozenset(("torch.accelerator.current_accelerator",))
FLOAT64_DTYPES = frozenset(("torch.float64", "torch.double"))

# Callees that are modules or loss functions by every naming convention in the wild.
MODULE_LIKE = re.compile(
    r"model|net|loss|criterion|generator|discriminator|encoder|decoder|backbone|head|classifier|"
    r"layer|module|block|critic|policy|actor|vae|unet|transformer|gather",
    re.IGNORECASE,
)

# What a class's base qualifies to when it makes the class a module with a forward pass (``self(x)`` runs it).
MODULE_BASES = frozenset((
    "torch.nn.Module", "torch.nn.Sequential", "torch.nn.modules.module.Module",
    "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
    "lightning.LightningModule", "lightning.pytorch.LightningModule",
    "transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel",
))


Lookup = Callable[[str], Optional[str]]  # a name's fact where the expression is


def string_fact(value: object) -> Optional[str]:
    if not isinstance(value, str):
        return None
    device = value.split(":", 1)[0]
    if device == "cpu":
        return facts.CPU
    if device in ACCELERATORS:
        return facts.DEVICE
    return None


class Evaluator:
    """Facts of expressions in one module: ``bindings`` qualifies names, ``lookup`` gives a name's fact."""

    def __init__(self, bindings: Dict[str, str], lookup: Lookup, call: Callable[[ast.Call], Optional[str]],
                 attribute: Optional[Lookup] = None) -> None:
        self.bindings = bindings
        self.lookup = lookup
        self.call_fact = call  # a call of a function this module defines (its return fact, arguments mapped)
        self.attribute = attribute  # in a method: the fact of `self.<name>`, from what the class assigns it

    def qualify(self, node: ast.AST) -> Optional[str]:
        return qualify_dotted(dotted_name(node), self.bindings)

    def fact(self, expr: Optional[ast.AST], depth: int = 0) -> Optional[str]:
        if expr is None or depth > 12:
            return None
        cls = type(expr)
        if cls is ast.Constant:
            return string_fact(expr.value)  # type: ignore[attr-defined]
        if cls is ast.JoinedStr:
            return _formatted_device(expr)
        if cls is ast.Name:
            return self.lookup(expr.id)  # type: ignore[attr-defined]
        if cls is ast.Attribute:
            qualified = self.qualify(expr)
            if qualified is not None:
                return None
            owner = expr.value  # type: ignore[attr-defined]
            if self.attribute is not None and type(owner) is ast.Name and owner.id == "self":  # type: ignore[attr-defined]
                return self.attribute(expr.attr)  # type: ignore[attr-defined]
            base = self.fact(expr.value, depth + 1)  # type: ignore[attr-defined]
            return base if facts.argument_position(base) is not None and expr.attr not in HOST_METHODS else None  # type: ignore[attr-defined]
        if cls is ast.Subscript:
            base = self.fact(expr.value, depth + 1)  # type: ignore[attr-defined]
            if facts.item_facts(base) is not None:
                index = expr.slice  # type: ignore[attr-defined]
                if type(index) is ast.Constant and type(index.value) is int:  # type: ignore[attr-defined]
                    return facts.item(base, index.value)  # type: ignore[attr-defined]
                return None
            if base == facts.FLOAT64:
                return base  # `self.x[i]` of a float64 array: a float64 row (or numpy float64 number)
            return base if base in (facts.DEVICE_TENSOR, facts.HOST_TENSOR) or facts.argument_position(base) is not None else None
        if cls is ast.Tuple or cls is ast.List:
            # `return loss, acc`: tensors all, computed from the arguments (indexing one gives its fact)
            found = [self.fact(e, depth + 1) for e in expr.elts]  # type: ignore[attr-defined]
            if found and len(set(found)) == 1 and found[0] in (facts.DEVICE_TENSOR, facts.HOST_TENSOR):
                return found[0]
            # `return self.x[i], self.y[i]`, `return image, float(label)` (a dataset's item): the parts that a
            # DataLoader's default collate makes float64 tensors (float64 arrays, and Python floats)
            floats = [i for i, (e, f) in enumerate(zip(expr.elts, found))  # type: ignore[attr-defined]
                      if f == facts.FLOAT64 or self._python_float(e)]
            if floats:
                return facts.float64_items(floats)
            if not found or not all(facts.argument_position(f) is not None for f in found):
                # `return outputs, batch_y.cpu()`, `return loss.item(), n`: a host tensor beside a device one,
                # or numbers beside a tensor: where a part is depends on which part, so each keeps its own
                return facts.items(found) if cls is ast.Tuple else None
            result = found[0]
            for other in found[1:]:
                result = facts.combined(result, other)
            return result
        if cls is ast.IfExp:
            return facts.join(self.fact(expr.body, depth + 1), self.fact(expr.orelse, depth + 1))  # type: ignore[attr-defined]
        if cls is ast.BinOp:
            if type(expr.op) is ast.Mod and type(expr.left) is ast.Constant:  # type: ignore[attr-defined]
                return string_fact(expr.left.value)  # "cuda:%d" % rank  # type: ignore[attr-defined]
            left, right = self.fact(expr.left, depth + 1), self.fact(expr.right, depth + 1)  # type: ignore[attr-defined]
            return facts.combined(left, right)
        if cls is ast.Compare:
            result = self.fact(expr.left, depth + 1)  # type: ignore[attr-defined]
            for comparator in expr.comparators:  # type: ignore[attr-defined]
                result = facts.combined(result, self.fact(comparator, depth + 1))
            return result
        if cls is ast.UnaryOp:
            operand = self.fact(expr.operand, depth + 1)  # type: ignore[attr-defined]
            return None if operand == facts.CUDA_FLAG and type(expr.op) is ast.Not else operand  # type: ignore[attr-defined]
        if cls is ast.BoolOp and type(expr.op) is ast.And:  # type: ignore[attr-defined]
            # `not args.no_cuda and torch.cuda.is_available()`: true only where CUDA is
            found = [self.fact(v, depth + 1) for v in expr.values]  # type: ignore[attr-defined]
            return facts.CUDA_FLAG if facts.CUDA_FLAG in found else None
        if cls is ast.BoolOp:
            # `torch.accelerator.current_accelerator(check_available=True) or torch.device("cpu")` (what
            # `mpslint --fix` writes): either value
            result = self.fact(expr.values[0], depth + 1)  # type: ignore[attr-defined]
            for value in expr.values[1:]:  # type: ignore[attr-defined]
                result = facts.join(result, self.fact(value, depth + 1))
            return result
        if cls is ast.Call:
            return self._call(expr, depth)  # type: ignore[arg-type]
        return None

    def _call(self, call: ast.Call, depth: int) -> Optional[str]:
        func = call.func
        qualified = self.qualify(func)
        if qualified is None and type(func) is ast.Attribute:
            return self._method(call, func, depth)
        if qualified is None:
            if type(func) is ast.Name:
                found = self.call_fact(call)
                if found is None and func.id in HOST_BUILTINS:  # type: ignore[attr-defined]
                    # `return float(loss)`: a Python number, read from the argument when it is one
                    if func.id in _BUILTIN_READS and len(call.args) == 1:  # type: ignore[attr-defined]
                        return self._read(_BUILTIN_READS[func.id], call.args[0], depth)  # type: ignore[attr-defined]
                    return facts.HOST
                return found
            return None
        if qualified in CUDA_FLAGS:
            return facts.CUDA_FLAG
        if qualified == "torch.device":
            return string_fact(call.args[0].value) if call.args and type(call.args[0]) is ast.Constant else facts.DEVICE  # type: ignore[attr-defined]
        if qualified in ACCELERATOR_DEVICES:
            return facts.DEVICE
        if qualified == "torch.from_numpy":
            return facts.FLOAT64 if self.fact(call.args[0] if call.args else None, depth + 1) == facts.FLOAT64 else facts.HOST_TENSOR
        if qualified in ("numpy.array", "numpy.asarray") and call.args:
            return self._read(facts.HOST_COPY, call.args[0], depth)
        if qualified.startswith("numpy."):
            function = qualified[len("numpy."):]
            if keyword(call, "dtype") is None and function.rsplit(".", 1)[-1] in NUMPY_FLOAT64 and (
                    function.count(".") == 0 or function.startswith("random.")):
                return facts.FLOAT64
            for argument in call.args:
                read = self.fact(argument, depth + 1)
                if facts.host_read_of(read) is not None:
                    return read  # `np.float(correct)` of `correct = (...).cpu().sum()`: the copy was the wait
            return facts.HOST
        if qualified.startswith("torch.") and qualified.count(".") == 1:
            last = qualified[len("torch."):]
            if last in TORCH_FACTORIES:
                device = keyword(call, "device")
                if device is None:
                    return facts.HOST_TENSOR
                where = self.fact(device, depth + 1)
                return facts.HOST_TENSOR if where == facts.CPU else facts.DEVICE_TENSOR if where == facts.DEVICE else None
            found = [self.fact(a, depth + 1) for a in call.args]
            return _carried(found)
        if type(func) is ast.Name:
            return self.call_fact(call)
        return None

    def _method(self, call: ast.Call, func: ast.Attribute, depth: int) -> Optional[str]:
        method = func.attr
        receiver = func.value
        if type(receiver) is ast.Name and receiver.id == "self":  # type: ignore[attr-defined]
            return self.call_fact(call)  # a method of the same class
        if method in _READS and not call.args:
            return self._read(_READS[method], receiver, depth, tensor=method == "cpu")
        if method in HOST_METHODS:
            return facts.HOST
        if method == "format" and type(receiver) is ast.Constant:
            return string_fact(receiver.value)  # "cuda:{}".format(rank)  # type: ignore[attr-defined]
        if type(receiver) is ast.Call and self.qualify(receiver.func) == "numpy.random.RandomState":  # type: ignore[attr-defined]
            return facts.FLOAT64 if method in NUMPY_FLOAT64 and keyword(call, "dtype") is None else facts.HOST
        if method == "cuda":
            return facts.DEVICE_TENSOR
        if method == "double":
            return facts.FLOAT64
        if method == "to":
            target = keyword(call, "device") or (call.args[0] if call.args else None)
            if target is not None and self.qualify(target) in FLOAT64_DTYPES:
                return facts.FLOAT64
            where = self.fact(target, depth + 1)
            if where == facts.DEVICE:
                return facts.DEVICE_TENSOR
            if where == facts.CPU:
                return self._read(facts.HOST_COPY, receiver, depth, tensor=True)
            if type(target) is ast.Attribute and target.attr == "device":  # type: ignore[attr-defined]
                owner = self.fact(target.value, depth + 1)  # type: ignore[attr-defined]
                if facts.argument_position(owner) is not None or owner == facts.HOST_TENSOR:
                    return owner  # x.to(inputs.device): where that argument (or host tensor) is
                return facts.DEVICE_TENSOR  # x.to(self.device) / x.to(model.device)
            if type(target) is ast.Name and names_a_device(target.id):  # type: ignore[attr-defined]
                return facts.DEVICE_TENSOR
            return None
        base = self.fact(receiver, depth + 1)
        if facts.argument_position(base) is not None \
                and any(self.fact(a, depth + 1) == facts.DEVICE_TENSOR for a in call.args):
            # `dataset.inverse_transform(outputs)`, `x.add(y)` with `outputs`/`y` on the device: whatever the
            # receiver is, a tensor computed with a device tensor is on the device (or the call raises)
            return facts.DEVICE_TENSOR
        if facts.argument_position(base) is not None or base in (facts.DEVICE_TENSOR, facts.HOST_TENSOR) \
                or facts.host_read_of(base) is not None:
            return base  # x.mean(), x.clone(), x.detach(): where x is
        return None

    def _python_float(self, expr: ast.AST) -> bool:
        """``0.5`` or ``float(x)``: a Python float."""
        if type(expr) is ast.Constant:
            return type(expr.value) is float  # type: ignore[attr-defined]
        return type(expr) is ast.Call and type(expr.func) is ast.Name and expr.func.id == "float" \
            and self.qualify(expr.func) is None  # type: ignore[attr-defined]

    def _read(self, how: str, value: ast.AST, depth: int, tensor: bool = False) -> Optional[str]:
        """``value.item()``, ``value.cpu()``, ``float(value)``, ``np.asarray(value)``: a host value, read from
        the arguments ``value`` is computed from when it is (``how``: ``facts.HOST_READ``/``HOST_COPY``);
        ``tensor``: the value read is a tensor (``.cpu()``)."""
        base = self.fact(value, depth + 1)
        if facts.host_read_of(base) is not None:
            return base  # `x.cpu().numpy()`: the first read is the wait
        positions = facts.argument_positions(base)
        if positions:
            return facts.host_read(how, positions)
        return facts.HOST_TENSOR if tensor else facts.HOST


# Names of a device by convention: ``device``, ``dev``, ``train_device``, ``device_0`` (also the device flow's).
DEVICE_NAMES = r"^(device|dev|.*_device|device_.*)$"
# A module's summary reads them in any case: ``DEVICE`` is what ``mpslint --fix`` binds, and a summary cannot
# follow a name to its binding as the device flow does.
_ANY_CASE_DEVICE_NAME = re.compile(DEVICE_NAMES, re.IGNORECASE | re.DOTALL)


def names_a_device(name: str) -> bool:
    return _ANY_CASE_DEVICE_NAME.fullmatch(name) is not None


def _formatted_device(expr: ast.AST) -> Optional[str]:
    """f"cuda:{rank}": an accelerator device; f"{prefix}:{i}": not known."""
    values = expr.values  # type: ignore[attr-defined]
    if values and type(values[0]) is ast.Constant:
        return string_fact(values[0].value)
    return None


def _carried(found) -> Optional[str]:
    """``torch.f(a, b)``: computed from the arguments (or device tensors) among its arguments."""
    result: Optional[str] = None
    for fact in found:
        parts = facts.item_facts(fact)
        if parts is not None:  # `torch.cat((outputs, extra))`: what the tuple's items are
            fact = _carried(parts)
        if fact is not None and (facts.argument_positions(fact) or fact == facts.DEVICE_TENSOR):
            result = fact if result is None else facts.combined(result, fact)
    return result
