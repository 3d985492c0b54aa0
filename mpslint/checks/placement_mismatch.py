"""A tensor on the host meets a model or tensors on the device (see ``rules/MPS302.md``).

Code that only ever ran on a CUDA box often gets away with a CPU tensor next
to a CUDA one (a 0-dim scalar, or a path that never ran); on MPS the same
lines fail with "Placeholder storage has not been allocated on MPS device!"
or "Expected all tensors to be on the same device". A value of unknown
placement is never reported.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Optional, Set

from mpslint.analysis.device_flow import DEVICE_EVIDENCE, SIZED_FACTORIES, DeviceFlow, Kind
from mpslint.analysis.loops import HotLoops
from mpslint.analysis.syntax import dotted_name, is_number, keyword, last_name, parameters, positional
from mpslint.analysis.tree import walk
from mpslint.checks.base import FixSpec, Rule, replace, short


class PlacementMismatch(Rule):
    TRIGGERS = DEVICE_EVIDENCE
    REQUIRES = (("torch", "to(", "to_empty", "cuda", "prepare"),)  # a torch factory, or a placed module's forward

    @property
    def flow(self) -> DeviceFlow:
        return self.ctx.analysis(DeviceFlow)

    @property
    def host_factories(self) -> bool:
        """Whether the file calls a torch factory without ``device=`` at all: else no host tensor can meet anything."""
        found = self.__dict__.get("_host_factories")
        if found is None:
            found = self.__dict__["_host_factories"] = any(
                self._is_host_factory_call(call) for call in self.ctx.tree.of_type(ast.Call))
        return found

    # -- a tensor created on the host meets device tensors

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not self.host_factories:
            return
        if type(node.op) is ast.Mod and (type(node.left) is ast.JoinedStr or (
                type(node.left) is ast.Constant and isinstance(node.left.value, (str, bytes)))):
            return  # "%d" % n: formatting
        self._mixed(node.left, node.right)
        self._mixed(node.right, node.left)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self.host_factories:
            self._mixed(node.value, node.target)

    def visit_Call(self, node: ast.Call) -> None:
        if not self._is_placed_forward(node):
            return
        if not self.host_factories:
            self._unplaced_batch(node)
            return
        for value in node.args:
            if type(value) is ast.Starred:
                continue
            factory = self._host_factory(value)
            if factory is not None:
                self._report_host_tensor(value, factory, None, f"is fed to `{short(self.ctx, node.func)}`, which is on the device")
        for item in node.keywords:
            if item.arg is None:
                continue
            factory = self._host_factory(item.value)
            if factory is not None:
                self._report_host_tensor(item.value, factory, None, f"is fed to `{short(self.ctx, node.func)}`, which is on the device")
        self._unplaced_batch(node)

    def _is_placed_forward(self, call: ast.Call) -> bool:
        flow = self.flow
        if not flow.placed:
            return False  # most files place no module: no call is a placed forward, whatever its name
        name = dotted_name(call.func)
        if name is not None and flow.is_placed_name(name, call):
            return True
        return (
            type(call.func) is ast.Attribute
            and call.func.attr == "forward"
            and flow.is_placed_name(dotted_name(call.func.value) or "", call)
        )

    @property
    def factory_names(self) -> FrozenSet[str]:
        """Names some assignment of the file binds to a host factory call: only these can hold one."""
        found = self.__dict__.get("_factory_names")
        if found is None:
            names = set()
            for node in self.ctx.tree.of_type(ast.Assign, ast.AnnAssign, ast.NamedExpr):
                value = node.value  # type: ignore[attr-defined]
                if value is None or self._unscaled_factory(value) is None:
                    continue
                targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
                for target in targets:
                    names.update(n.id for n in ast.walk(target) if type(n) is ast.Name)  # type: ignore[attr-defined]
            found = self.__dict__["_factory_names"] = frozenset(names)
        return found

    def _host_factory(self, expr: ast.AST) -> Optional[ast.Call]:
        """The torch factory call (without ``device=``) that ``expr`` is, or the name holds."""
        if type(expr) is ast.Name:
            if expr.id not in self.factory_names:  # type: ignore[attr-defined]
                return None  # asking where the name was bound costs more than this
            value = self.flow.assigned_value(expr)
            if value is None:
                return None
            expr = value
        return self._unscaled_factory(expr)

    def _unscaled_factory(self, expr: ast.AST) -> Optional[ast.Call]:
        """The host factory call ``expr`` is, also scaled by a Python number."""
        # 0.01 * torch.randn(...), -torch.ones(...): scaled by a Python number, still on the CPU.
        while True:
            if type(expr) is ast.UnaryOp and type(expr.op) is ast.USub:  # type: ignore[attr-defined]
                expr = expr.operand  # type: ignore[attr-defined]
            elif type(expr) is ast.BinOp and is_number(expr.left):  # type: ignore[attr-defined]
                expr = expr.right  # type: ignore[attr-defined]
            elif type(expr) is ast.BinOp and is_number(expr.right):  # type: ignore[attr-defined]
                expr = expr.left  # type: ignore[attr-defined]
            else:
                break
        if type(expr) is not ast.Call or not self._is_host_factory_call(expr):  # type: ignore[arg-type]
            return None
        return expr  # type: ignore[return-value]

    def _is_host_factory_call(self, call: ast.Call) -> bool:
        """``torch.zeros(n)``-like: a sized torch factory without ``device=``."""
        if (last_name(call.func) or "") not in SIZED_FACTORIES:
            return False
        qualified = self.ctx.qualify(call.func) or ""
        if not qualified.startswith("torch.") or qualified.count(".") != 1 or keyword(call, "device") is not None:
            return False
        if not (call.args or call.keywords) or all(_is_literal_one(self, a) for a in positional(call)):
            return False  # torch.ones(1): a scalar-like tensor, which works mixed with device tensors
        return True

    def _mixed(self, maybe_host: ast.AST, other: ast.AST) -> None:
        factory = self._host_factory(maybe_host)
        if factory is None:
            return
        if self.flow.is_device(other):
            self._report_host_tensor(maybe_host, factory, other, f"is combined with device tensor `{short(self.ctx, other)}`")
            return
        source = self.ctx.analysis(ModelInputs).source(other)
        if source is not None:
            self._report_host_tensor(maybe_host, factory, other,
                                     f"is combined with `{short(self.ctx, other)}`, which is on the device whenever the "
                                     "model is", device=f"{source}.device")

    def _expects_error(self, node: ast.AST) -> bool:
        """Inside ``with pytest.raises(...)`` / ``self.assertRaises(...)``: the failure is the point."""
        return self.ctx.tree.inherited("expects-error", node, _expects_error_step, False)

    def _report_host_tensor(self, use: ast.AST, factory: ast.Call, other: Optional[ast.AST], why: str,
                            device: Optional[str] = None) -> None:
        if self._expects_error(use):
            return
        if device is not None:
            pass
        elif use is factory and other is not None and dotted_name(other) is not None:
            device = f"{dotted_name(other)}.device"
        elif self.flow.device_variable(factory) is not None:
            device = self.flow.device_variable(factory)
        fix = None
        if device is not None:
            fix = _with_device(factory, device)
        where = f" with `device={device}`" if device else " on the same device (`device=...`)"
        self.report(
            use,
            f"`{short(self.ctx, factory)}` creates a tensor on the CPU that {why}: this fails on MPS "
            f"(\"Expected all tensors to be on the same device\"); create it{where}",
            fix=fix,
        )

    # -- the model is placed, the batch from the loader is not

    def _unplaced_batch(self, call: ast.Call) -> None:
        position = self.ctx.analysis(HotLoops).position(call)
        if position is None or type(position.loop.node) not in (ast.For, ast.AsyncFor):
            return
        loop = position.loop.node
        loader = self._loader_name(loop.iter)  # type: ignore[union-attr]
        if loader is None or not self._plain_loader(loader, loop):
            return
        for value in [*call.args, *(k.value for k in call.keywords)]:
            if type(value) is not ast.Name:
                continue
            if not self._from_loop_target(value, loop):  # type: ignore[arg-type]
                continue
            self.report(
                value,
                f"`{short(self.ctx, call.func)}` is on the device but `{value.id}` comes from `{loader.id}` and is "
                "never moved there: on MPS the forward pass fails with \"Placeholder storage has not been allocated on "
                f"MPS device!\"; move it with `{value.id}.to(device)`",
            )

    def _loader_name(self, iterable: ast.AST) -> Optional[ast.Name]:
        if type(iterable) is ast.Name:
            return iterable  # type: ignore[return-value]
        if type(iterable) is ast.Call and dotted_name(iterable.func) in ("enumerate", "tqdm", "tqdm.tqdm"):  # type: ignore[attr-defined]
            if iterable.args:  # type: ignore[attr-defined]
                first = iterable.args[0]  # type: ignore[attr-defined]
                return self._loader_name(first) if type(first) is not ast.Starred else None
        return None

    def _plain_loader(self, loader: ast.Name, loop: ast.AST) -> bool:
        """A ``DataLoader`` built in this file whose batches stay on the host (no collate_fn, no placed dataset)."""
        flow = self.flow
        if loader.id in flow.prepared:
            return False
        bindings = flow.visible(loader.id, loop)
        if not bindings:
            return False
        for binding in bindings:
            value = binding.value
            if binding.how != "assign" or binding.path or type(value) is not ast.Call:
                return False
            if (dotted_name(value.func) or "").rsplit(".", 1)[-1] != "DataLoader":  # type: ignore[union-attr]
                return False
            if keyword(value, "collate_fn") is not None:  # type: ignore[arg-type]
                return False
            if not value.args or type(value.args[0]) is ast.Starred:  # type: ignore[union-attr]
                return False
            if not self._dataset_on_host(value.args[0], 0):  # type: ignore[union-attr]
                return False
        return True

    def _dataset_on_host(self, dataset: ast.AST, depth: int) -> bool:
        if depth > 3:
            return False
        if type(dataset) is ast.Name:
            sources = self.flow.visible(dataset.id, dataset)  # type: ignore[attr-defined]
            return bool(sources) and all(
                s.how == "assign" and not s.path and s.value is not None and self._dataset_on_host(s.value, depth + 1)
                for s in sources
            )
        if type(dataset) is ast.Call:
            if _places_anything(self.ctx.text(dataset)):
                return False
            return all(
                self.flow.kind(v) in (Kind.HOST_TENSOR, Kind.HOST)
                or (type(v) is ast.Name and self._dataset_on_host(v, depth + 1))
                for v in [*(a.value if type(a) is ast.Starred else a for a in dataset.args), *(k.value for k in dataset.keywords)]  # type: ignore[attr-defined]
            )
        return False

    def _from_loop_target(self, name: ast.Name, loop: ast.AST) -> bool:
        """``name`` holds the loop's batch (or a part of it) as loaded, and is never placed in this function."""
        flow = self.flow
        tree = self.ctx.tree
        scope = tree.scope_of(name)
        bindings = flow.bindings.get(scope, {}).get(name.id, [])
        if not bindings:
            return False
        visible = flow.visible(name.id, name)
        if len(visible) != 1 or visible[0].how != "for" or visible[0].value is not loop.iter:  # type: ignore[attr-defined]
            return False
        first, last = tree.index(loop), tree.end(loop)
        in_loop = [b for b in bindings if first <= b.end <= last]
        return all(flow.kind_of_binding(b, name.id) is not Kind.DEVICE for b in in_loop)


# Tensor methods and attributes: a parameter used with one of these in a model method is an input tensor.
TENSOR_USES = frozenset(
    "size shape view reshape device dtype transpose permute unsqueeze squeeze contiguous flatten expand "
    "masked_fill softmax matmul bmm sum mean float half type_as new_zeros new_ones".split()
)


class ModelInputs:
    """Per file: the tensor inputs of the methods of ``nn.Module`` subclasses.

    Whatever device the model is moved to, its forward pass receives its inputs there: a tensor computed
    from a parameter of a module method is on the device whenever the model is, even in a file that never
    places the model itself.
    """

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self._inputs: Dict[ast.AST, Set[str]] = {}
        self._module_classes: Dict[ast.AST, bool] = {}

    def source(self, expr: ast.AST, depth: int = 0) -> Optional[str]:
        """The input parameter ``expr`` is computed from (``inputs`` for ``inputs * 2``), or None."""
        if depth > 4:
            return None
        cls = type(expr)
        if cls is ast.Name:
            function = self.tree.scope_of(expr)
            if expr.id not in self._inputs_of(function):
                flow = self.ctx.analysis(DeviceFlow)
                values = [b.value for b in flow.visible(expr.id, expr) if b.how == "assign" and not b.path]
                found = [self.source(v, depth + 1) for v in values if v is not None]
                return found[0] if found and all(found) else None
            bindings = self.ctx.analysis(DeviceFlow).visible(expr.id, expr)
            return expr.id if bindings and all(b.how == "param" for b in bindings) else None
        if cls in (ast.Attribute, ast.Subscript):
            if cls is ast.Attribute and expr.attr in ("shape", "device", "dtype"):
                return None
            return self.source(expr.value, depth + 1)
        if cls is ast.BinOp:
            return self.source(expr.left, depth + 1) or self.source(expr.right, depth + 1)
        if cls is ast.UnaryOp:
            return self.source(expr.operand, depth + 1)
        if cls is ast.Call and type(expr.func) is ast.Attribute and expr.func.attr not in ("size", "dim", "item", "tolist", "numpy", "cpu"):
            return self.source(expr.func.value, depth + 1)
        return None

    def _inputs_of(self, function: ast.AST) -> Set[str]:
        found = self._inputs.get(function)
        if found is None:
            found = self._inputs[function] = self._find_inputs(function)
        return found

    def _find_inputs(self, function: ast.AST) -> Set[str]:
        if type(function) not in (ast.FunctionDef, ast.AsyncFunctionDef):
            return set()
        owner = self.tree.parent(function)
        if type(owner) is not ast.ClassDef or not self._is_module_class(owner):
            return set()
        names = {p.arg for p in parameters(function)[1:] if _may_hold_a_tensor(p, function)}
        used = set()
        for node in walk(function):
            if type(node) is ast.Attribute and node.attr in TENSOR_USES and type(node.value) is ast.Name:
                used.add(node.value.id)
        return names & used

    def _is_module_class(self, owner: ast.ClassDef) -> bool:
        known = self._module_classes.get(owner)
        if known is None:
            known = self._module_classes[owner] = any(
                (self.ctx.qualify(base) or dotted_name(base) or "").endswith(("nn.Module", "torch.nn.Module"))
                for base in owner.bases
            )
        return known


def _may_hold_a_tensor(param: ast.arg, function) -> bool:
    """Not annotated as a number, string or flag, and without a literal default."""
    annotation = param.annotation
    if annotation is not None and (dotted_name(annotation) or "") in ("int", "float", "bool", "str"):
        return False
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([p.arg for p in positional[len(positional) - len(args.defaults):]], args.defaults))
    defaults.update({p.arg: d for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    default = defaults.get(param.arg)
    return not (type(default) is ast.Constant and default.value is not None)


def _expects_error_step(parent: ast.AST, child: ast.AST, above: bool) -> bool:
    if above:
        return True
    if type(parent) in (ast.With, ast.AsyncWith):
        for item in parent.items:  # type: ignore[attr-defined]
            call = item.context_expr
            name = dotted_name(call.func) if type(call) is ast.Call else None
            if name and name.rsplit(".", 1)[-1] in ("raises", "assertRaises", "assertRaisesRegex"):
                return True
    return False


def _is_literal_one(rule: Rule, node: ast.AST) -> bool:
    """The literal ``1`` as written (not ``0x1``, not ``True``)."""
    return type(node) is ast.Constant and type(node.value) is int and node.value == 1 and rule.ctx.text(node) == "1"  # type: ignore[attr-defined]


def _with_device(factory: ast.Call, device: str):
    """``torch.zeros(3)`` -> ``torch.zeros(3, device=...)``, with LibCST keeping the argument list's layout."""

    def build(fx) -> Optional[FixSpec]:
        import libcst as cst

        call = fx.node(factory)
        if call is None:
            return None
        arg = cst.Arg(
            value=cst.parse_expression(device),
            keyword=cst.Name("device"),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        )
        return FixSpec.safe(f"Create it with `device={device}`", replace(call, call.with_changes(args=[*call.args, arg])))

    return build


def _places_anything(code: str) -> bool:
    return any(marker in code for marker in (".to(", ".cuda(", "device"))
