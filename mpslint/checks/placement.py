"""MPS3xx: tensors on the wrong side of the host/device boundary.

Code that only ever ran on a CUDA box often gets away with a CPU tensor next
to a CUDA one (a 0-dim scalar, or a path that never ran); on MPS the same
lines fail with "Placeholder storage has not been allocated on MPS device!",
"can't convert mps:0 device type tensor to numpy", or "Cannot convert a MPS
Tensor to float64 dtype". Every rule here asks ``DeviceFlow`` where a value
lives; a value of unknown placement is never reported.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

import libcst as cst

from mpslint.analysis.device_flow import SIZED_FACTORIES, DeviceFlow, Kind, keyword
from mpslint.analysis.loops import HotLoops
from mpslint.analysis.names import dotted_name
from mpslint.checks.base import FixSpec, Rule, insert_after, replace
from mpslint.checks.hotloop import DEVICE_EVIDENCE, short
from mpslint.screen import facts as pyast
from mpslint.screen.device import device_model

FLOAT64_DTYPES = frozenset(("torch.float64", "torch.double"))
CASTS = frozenset("float half bfloat16 long int short bool byte char type double".split())
PASSTHROUGH = frozenset(
    "to cuda contiguous view reshape permute transpose unsqueeze squeeze clone detach pin_memory requires_grad_ "
    "flatten t expand repeat".split()
)
FLOAT64_DTYPE = re.compile(r"float64|double|^float$|\bfloat_\b|np\.float$")
# numpy functions whose result is float64 unless told otherwise.
NUMPY_FLOAT64 = frozenset(
    "zeros ones empty full linspace logspace eye identity loadtxt genfromtxt mean std var average sqrt exp log "
    "random.rand random.randn random.random random.normal random.uniform random.standard_normal random.sample".split()
)


def _method(call: cst.Call) -> Optional[str]:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def _with_keyword(call: cst.Call, name: str, value: str) -> cst.Call:
    arg = cst.Arg(
        value=cst.parse_expression(value),
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    return call.with_changes(args=[*call.args, arg])


class NumpyOnDeviceTensor(Rule):
    CODE = "MPS301"
    NAME = "numpy-on-device-tensor"
    TRIGGERS = (".numpy(",)

    @staticmethod
    def screen(facts) -> bool:
        """A ``.numpy()`` whose receiver may be on the device."""
        model = device_model(facts)
        for call, scope in facts.index.calls:
            func = call.func
            if type(func) is ast.Attribute and func.attr == "numpy" and not call.args and not call.keywords:
                if facts.qualify(func) is None and model.may_be_device(func.value, scope):
                    return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if _method(node) != "numpy" or node.args or self.ctx.qualify(node.func) is not None:
            return
        flow = self.ctx.analysis(DeviceFlow)
        tensor = node.func.value
        if not flow.is_device(tensor):
            return
        insert = ".detach().cpu()" if flow.may_require_grad(tensor) else ".cpu()"
        self.report(
            node,
            f"`{short(self.ctx, node)}` fails on an MPS tensor (\"can't convert mps:0 device type tensor to "
            f"numpy\"); copy it to the host first with `{insert}`",
            fix=FixSpec.safe(f"Insert `{insert}` before `.numpy()`", insert_after(tensor, insert)),
        )


class PlacementMismatch(Rule):
    CODE = "MPS302"
    NAME = "placement-mismatch"
    TRIGGERS = DEVICE_EVIDENCE
    REQUIRES = (("torch", "to(", "to_empty", "cuda", "prepare"),)  # a torch factory, or a placed module's forward

    @property
    def flow(self) -> DeviceFlow:
        return self.ctx.analysis(DeviceFlow)

    @staticmethod
    def screen(facts) -> bool:
        """A placed module's forward call, or a host factory next to something that may be on the device."""
        model = device_model(facts)
        for call, _ in facts.index.calls:
            func = call.func
            if model.is_placed_name(pyast.dotted_name(func)) or (
                type(func) is ast.Attribute and func.attr == "forward" and model.is_placed_name(pyast.dotted_name(func.value))
            ):
                return True
        for node, scope in facts.index.binary:
            if type(node.op) is ast.Mod and (type(node.left) is ast.JoinedStr or (
                    type(node.left) is ast.Constant and isinstance(node.left.value, (str, bytes)))):
                continue  # "%d" % n: formatting
            for host, other in ((node.left, node.right), (node.right, node.left)):
                if _may_be_host_factory(facts, host, scope) and model.may_be_device(other, scope):
                    return True
        for node, scope in facts.index.augmented:
            if _may_be_host_factory(facts, node.value, scope) and model.may_be_device(node.target, scope):
                return True
        return False

    # -- a tensor created on the host meets device tensors

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            return
        self._mixed(node.left, node.right)
        self._mixed(node.right, node.left)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._mixed(node.value, node.target)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._is_placed_forward(node):
            return
        for arg in node.args:
            if arg.star:
                continue
            factory = self._host_factory(arg.value)
            if factory is not None:
                self._report_host_tensor(arg.value, factory, None, f"is fed to `{short(self.ctx, node.func)}`, which is on the device")
        self._unplaced_batch(node)

    def _is_placed_forward(self, call: cst.Call) -> bool:
        flow = self.flow
        name = dotted_name(call.func)
        if name is not None and flow.is_placed_name(name, call):
            return True
        return (
            isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "forward"
            and flow.is_placed_name(dotted_name(call.func.value) or "", call)
        )

    def _host_factory(self, expr: cst.CSTNode) -> Optional[cst.Call]:
        """The torch factory call (without ``device=``) that ``expr`` is, or the name holds."""
        if isinstance(expr, cst.Name):
            bindings = self.flow._visible(expr.value, expr)
            if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].path:
                return None
            expr = bindings[0].value
        # 0.01 * torch.randn(...), -torch.ones(...): scaled by a Python number, still on the CPU.
        while True:
            if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
                expr = expr.expression
            elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.left, (cst.Integer, cst.Float)):
                expr = expr.right
            elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.right, (cst.Integer, cst.Float)):
                expr = expr.left
            else:
                break
        if not isinstance(expr, cst.Call):
            return None
        qualified = self.ctx.qualify(expr.func) or ""
        if not qualified.startswith("torch.") or qualified.count(".") != 1:
            return None
        if qualified.rsplit(".", 1)[-1] not in SIZED_FACTORIES or keyword(expr, "device") is not None:
            return None
        if not expr.args or all(isinstance(a.value, cst.Integer) and a.value.value == "1" for a in expr.args if a.keyword is None):
            return None  # torch.ones(1): a scalar-like tensor, which works mixed with device tensors
        return expr

    def _mixed(self, maybe_host: cst.CSTNode, other: cst.CSTNode) -> None:
        factory = self._host_factory(maybe_host)
        if factory is None or not self.flow.is_device(other):
            return
        self._report_host_tensor(maybe_host, factory, other, f"is combined with device tensor `{short(self.ctx, other)}`")

    def _expects_error(self, node: cst.CSTNode) -> bool:
        """Inside ``with pytest.raises(...)`` / ``self.assertRaises(...)``: the failure is the point."""
        for parent in self.flow.tree.ancestors(node):
            if isinstance(parent, cst.With):
                for item in parent.items:
                    call = item.item
                    name = dotted_name(call.func) if isinstance(call, cst.Call) else None
                    if name and name.rsplit(".", 1)[-1] in ("raises", "assertRaises", "assertRaisesRegex"):
                        return True
        return False

    def _report_host_tensor(self, use: cst.CSTNode, factory: cst.Call, other: Optional[cst.CSTNode], why: str) -> None:
        if self._expects_error(use):
            return
        device = None
        if use is factory and other is not None and dotted_name(other) is not None:
            device = f"{dotted_name(other)}.device"
        elif self.flow.device_variable(factory) is not None:
            device = self.flow.device_variable(factory)
        fix = None
        if device is not None:
            fix = FixSpec.safe(f"Create it with `device={device}`", replace(factory, _with_keyword(factory, "device", device)))
        where = f" with `device={device}`" if device else " on the same device (`device=...`)"
        self.report(
            use,
            f"`{short(self.ctx, factory)}` creates a tensor on the CPU that {why}: this fails on MPS "
            f"(\"Expected all tensors to be on the same device\"); create it{where}",
            fix=fix,
        )

    # -- the model is placed, the batch from the loader is not

    def _unplaced_batch(self, call: cst.Call) -> None:
        position = self.ctx.analysis(HotLoops).position(call)
        if position is None or not isinstance(position.loop.node, cst.For):
            return
        loop = position.loop.node
        loader = self._loader_name(loop.iter)
        if loader is None or not self._plain_loader(loader, loop):
            return
        for arg in call.args:
            value = arg.value
            if not isinstance(value, cst.Name):
                continue
            if not self._from_loop_target(value, loop):
                continue
            self.report(
                value,
                f"`{short(self.ctx, call.func)}` is on the device but `{value.value}` comes from `{loader.value}` and is "
                "never moved there: on MPS the forward pass fails with \"Placeholder storage has not been allocated on "
                f"MPS device!\"; move it with `{value.value}.to(device)`",
            )

    def _loader_name(self, iterable: cst.CSTNode) -> Optional[cst.Name]:
        if isinstance(iterable, cst.Name):
            return iterable
        if isinstance(iterable, cst.Call) and dotted_name(iterable.func) in ("enumerate", "tqdm", "tqdm.tqdm"):
            if iterable.args and iterable.args[0].keyword is None:
                return self._loader_name(iterable.args[0].value)
        return None

    def _plain_loader(self, loader: cst.Name, loop: cst.For) -> bool:
        """A ``DataLoader`` built in this file whose batches stay on the host (no collate_fn, no placed dataset)."""
        flow = self.flow
        if loader.value in flow.prepared:
            return False
        bindings = flow._visible(loader.value, loop)
        if not bindings:
            return False
        for binding in bindings:
            value = binding.value
            if binding.how != "assign" or binding.path or not isinstance(value, cst.Call):
                return False
            if (dotted_name(value.func) or "").rsplit(".", 1)[-1] != "DataLoader":
                return False
            if keyword(value, "collate_fn") is not None:
                return False
            if not value.args or value.args[0].keyword is not None:
                return False
            if not self._dataset_on_host(value.args[0].value, 0):
                return False
        return True

    def _dataset_on_host(self, dataset: cst.CSTNode, depth: int) -> bool:
        if depth > 3:
            return False
        if isinstance(dataset, cst.Name):
            sources = self.flow._visible(dataset.value, dataset)
            return bool(sources) and all(
                s.how == "assign" and not s.path and s.value is not None and self._dataset_on_host(s.value, depth + 1)
                for s in sources
            )
        if isinstance(dataset, cst.Call):
            if _places_anything(self.ctx.code_for(dataset)):
                return False
            return all(
                self.flow.kind(a.value) in (Kind.HOST_TENSOR, Kind.HOST)
                or (isinstance(a.value, cst.Name) and self._dataset_on_host(a.value, depth + 1))
                for a in dataset.args
            )
        return False

    def _from_loop_target(self, name: cst.Name, loop: cst.For) -> bool:
        """``name`` holds the loop's batch (or a part of it) as loaded, and is never placed in this function."""
        flow = self.flow
        scope = flow.tree.scope_of(name)
        bindings = flow.bindings.get(scope, {}).get(name.value, [])
        if not bindings:
            return False
        visible = flow._visible(name.value, name)
        if len(visible) != 1 or visible[0].how != "for" or visible[0].value is not loop.iter:
            return False
        first, last = flow.tree.start[loop], flow.tree.end[loop]
        in_loop = [b for b in bindings if first <= b.end <= last]
        return all(flow.kind_of_binding(b, name.value) is not Kind.DEVICE for b in in_loop)


def _may_be_host_factory(facts, expr, scope) -> bool:
    """``PlacementMismatch._host_factory`` may find a torch factory without ``device=`` in ``expr``."""
    if type(expr) is ast.Name:
        index = facts.index
        for outer in index.scopes_from(scope):
            for binding in index.bindings[id(outer)].get(expr.id, ()):
                if binding.how == "assign" and not binding.unpacked and _is_host_factory(facts, binding.value):
                    return True
        return False
    return _is_host_factory(facts, expr)


def _is_host_factory(facts, expr) -> bool:
    while True:  # 0.01 * torch.randn(...), -torch.ones(...)
        if type(expr) is ast.UnaryOp and type(expr.op) is ast.USub:
            expr = expr.operand
        elif type(expr) is ast.BinOp and _is_number(expr.left):
            expr = expr.right
        elif type(expr) is ast.BinOp and _is_number(expr.right):
            expr = expr.left
        else:
            break
    if type(expr) is not ast.Call:
        return False
    qualified = facts.qualify(expr.func) or ""
    if not qualified.startswith("torch.") or qualified.count(".") != 1 or qualified[6:] not in SIZED_FACTORIES:
        return False
    if pyast.keyword(expr, "device") is not None:
        return False
    args = pyast.positional(expr)
    # torch.ones(1) is scalar-like; only the literal `1` counts, as LibCST sees it (not 0x1).
    return any(not (_is_number(a) and a.value == 1 and a.end_col_offset - a.col_offset == 1) for a in args)


def _is_number(node) -> bool:
    """LibCST's Integer or Float: ``True`` is a name there, and ``1j`` an Imaginary."""
    return type(node) is ast.Constant and type(node.value) in (int, float)


def _places_anything(code: str) -> bool:
    return any(marker in code for marker in (".to(", ".cuda(", "device"))


class Float64ToDevice(Rule):
    CODE = "MPS303"
    NAME = "float64-to-device"
    TRIGGERS = ("float64", "double", "from_numpy")

    @property
    def flow(self) -> DeviceFlow:
        return self.ctx.analysis(DeviceFlow)

    @staticmethod
    def screen(facts) -> bool:
        """A float64 dtype or a ``torch.from_numpy`` the rule could follow to the device."""
        if facts.calls_to(frozenset({"torch.set_default_dtype", "torch.from_numpy"})):
            return True  # (from_numpy: then moved by a .to()/.cuda() the rule follows by name)
        model = device_model(facts)
        for call, scope in facts.index.calls:
            func = call.func
            dtype = pyast.keyword(call, "dtype")
            qualified = facts.qualify(func)
            if qualified is not None:
                if qualified.startswith("torch.") and pyast.keyword(call, "device") is not None and dtype is not None:
                    if facts.qualify(dtype) in FLOAT64_DTYPES:
                        return True
                continue
            if type(func) is not ast.Attribute:
                continue
            if func.attr == "double" and not call.args and not call.keywords:
                if model.may_be_device(func.value, scope):
                    return True
            elif func.attr in ("to", "type"):
                if dtype is None:
                    dtype = next((a for a in pyast.positional(call) if model.is_dtype(a)), None)
                if dtype is not None and facts.qualify(dtype) in FLOAT64_DTYPES and model.may_be_device(call, scope):
                    return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.ctx.qualify(node.func) or ""
        method = _method(node) if not qualified else None
        if qualified == "torch.set_default_dtype":
            self._default_dtype(node)
        elif qualified.startswith("torch.") and keyword(node, "device") is not None:
            dtype = keyword(node, "dtype")
            if dtype is not None and self._is_float64(dtype) and not self.flow.is_cpu(keyword(node, "device")):
                self._report(node, "creates a float64 tensor on the device", self._dtype_fix(dtype))
        elif method == "double" and not node.args:
            if self.flow.is_device(node.func.value):
                fix = FixSpec.unsafe("Use `.float()` (float32)", replace(node.func.attr, "float"))
                self._report(node, "makes a float64 tensor on the device", fix)
        elif method in ("to", "type"):
            self._to(node, method)
        elif method == "cuda" and self._from_numpy_float64(node.func.value):
            self._report(node, "moves a float64 numpy array to the device", FixSpec.unsafe(
                "Cast to float32 with `.float()` first", insert_after(node.func.value, ".float()")))

    def _to(self, node: cst.Call, method: str) -> None:
        flow = self.flow
        dtype = keyword(node, "dtype")
        if dtype is None:
            dtype = next((a.value for a in node.args if a.keyword is None and flow.is_dtype(a.value)), None)
        if dtype is not None:
            if self._is_float64(dtype) and flow.is_device(node):
                self._report(node, "makes a float64 tensor on the device", self._dtype_fix(dtype))
            return
        if method != "to" or not flow.is_device(node):
            return
        if flow.is_device(node.func.value):
            return  # already on the device: this .to() is not the transfer
        if self._from_numpy_float64(node.func.value):
            self._report(node, "moves a float64 numpy array to the device", FixSpec.unsafe(
                "Cast to float32 with `.float()` first", insert_after(node.func.value, ".float()")))

    def _is_float64(self, dtype: cst.CSTNode) -> bool:
        qualified = self.ctx.qualify(dtype) or ""
        return qualified in FLOAT64_DTYPES

    def _dtype_fix(self, dtype: cst.CSTNode) -> Optional[FixSpec]:
        if isinstance(dtype, cst.Attribute):
            return FixSpec.unsafe("Use float32", replace(dtype.attr, "float32"))
        return None

    def _default_dtype(self, node: cst.Call) -> None:
        if not node.args or not self._is_float64(node.args[0].value):
            return
        flow = self.flow
        if not flow.placed and not flow._device_names:
            return  # a CPU-only script: float64 is its choice
        self._report(node, "makes every new float tensor float64, which MPS cannot hold", self._dtype_fix(node.args[0].value))

    def _from_numpy_float64(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        """``expr`` is ``torch.from_numpy(a)`` (possibly through a name or shape ops) of an array that may be float64."""
        if depth > 8:
            return False
        if isinstance(expr, cst.Name):
            bindings = self.flow._visible(expr.value, expr)
            if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].path:
                return False
            return self._from_numpy_float64(bindings[0].value, depth + 1)
        if not isinstance(expr, cst.Call):
            return False
        qualified = self.ctx.qualify(expr.func) or ""
        if qualified == "torch.from_numpy":
            return bool(expr.args) and self._may_be_float64_array(expr.args[0].value)
        method = _method(expr) if not qualified else None
        if method is None or method in CASTS:
            return False
        if method == "to" and (keyword(expr, "dtype") is not None or any(self.flow.is_dtype(a.value) for a in expr.args)):
            return False
        if method in PASSTHROUGH:
            return self._from_numpy_float64(expr.func.value, depth + 1)
        return False

    def _may_be_float64_array(self, array: cst.CSTNode, depth: int = 0) -> bool:
        """Positive evidence that a numpy array is float64: numpy's float defaults, float literals, division."""
        if depth > 6:
            return False
        if isinstance(array, cst.Name):
            bindings = self.flow._visible(array.value, array)
            return any(
                b.how == "assign" and not b.path and b.value is not None and self._may_be_float64_array(b.value, depth + 1)
                for b in bindings
            )
        if isinstance(array, (cst.Float,)):
            return True
        if isinstance(array, (cst.List, cst.Tuple)):
            return any(self._may_be_float64_array(e.value, depth + 1) for e in array.elements)
        if isinstance(array, cst.BinaryOperation):
            if isinstance(array.operator, cst.Divide):
                return True
            return self._may_be_float64_array(array.left, depth + 1) or self._may_be_float64_array(array.right, depth + 1)
        if isinstance(array, cst.UnaryOperation):
            return self._may_be_float64_array(array.expression, depth + 1)
        if not isinstance(array, cst.Call):
            return False
        dtype = keyword(array, "dtype")
        if dtype is not None:
            return bool(FLOAT64_DTYPE.search(self.ctx.code_for(dtype)))
        qualified = self.ctx.qualify(array.func) or ""
        if qualified == "float":
            return True
        if dotted_name(array.func) == "float":
            return True
        if qualified.startswith("numpy."):
            function = qualified[len("numpy."):]
            if function in NUMPY_FLOAT64:
                return True
            if function in ("array", "asarray", "stack", "concatenate", "vstack", "hstack") and array.args:
                return self._may_be_float64_array(array.args[0].value, depth + 1)
            return False
        if isinstance(array.func, cst.Attribute) and array.func.attr.value == "astype" and array.args:
            return bool(FLOAT64_DTYPE.search(self.ctx.code_for(array.args[0].value)))
        return False

    def _report(self, node: cst.CSTNode, what: str, fix: Optional[FixSpec]) -> None:
        self.report(
            node,
            f"`{short(self.ctx, node)}` {what}: MPS has no float64 (\"Cannot convert a MPS Tensor to float64 dtype\"); "
            "use float32",
            fix=fix,
        )


class NonBlockingToHost(Rule):
    CODE = "MPS304"
    NAME = "non-blocking-to-host"
    TRIGGERS = ("non_blocking",)

    def visit_Call(self, node: cst.Call) -> None:
        flag = next((a for a in node.args if a.keyword is not None and a.keyword.value == "non_blocking"), None)
        if flag is None or not (isinstance(flag.value, cst.Name) and flag.value.value == "True"):
            return
        method = _method(node)
        if method is None or self.ctx.qualify(node.func) is not None:
            return
        flow = self.ctx.analysis(DeviceFlow)
        if method == "to":
            target = flow._to_target(node)
            if target is None or not flow.is_cpu(target) or flow.is_host_tensor(node.func.value):
                return
        elif method == "copy_":
            source = node.args[0].value if node.args and node.args[0].keyword is None else None
            if source is None or not flow.is_device(source) or not flow.is_host_tensor(node.func.value):
                return
        else:
            return
        args = [a for a in node.args if a is not flag]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        self.report(
            node,
            f"`{short(self.ctx, node)}` copies from the device to the host without waiting: on MPS the host can read "
            "the memory before the data arrives (silent garbage); drop `non_blocking=True`",
            fix=FixSpec.safe("Drop `non_blocking=True`", replace(node, node.with_changes(args=args))),
        )


RULES = [NumpyOnDeviceTensor, PlacementMismatch, Float64ToDevice, NonBlockingToHost]
