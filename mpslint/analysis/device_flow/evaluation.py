"""What kind an expression is: evaluated structurally, memoized, to a bounded depth."""

from __future__ import annotations

import ast
from typing import Iterable, List, Optional

from mpslint.analysis.syntax import dotted_name, keyword, positional
from mpslint.analysis.device_flow.kinds import _fact_kind, DEVICE_NAME, FACTORIES, HOST_BUILTINS, HOST_METHODS, HOST_MODULES, JOIN_BUILTINS, Kind, MAX_DEPTH, META_ATTRS, MODULE_LIKE, MODULE_METHODS, NO_GRAD, OBJECT_OWNERS, _ATTRIBUTE, _CALL, _NAME, arithmetic, join, join_all, names_a_dtype, string_kind
from mpslint.analysis.device_flow.bindings import Binding, _class_of


def _arguments(call: ast.Call) -> List[ast.AST]:
    """Every argument value (positional, starred, keyword), in source order."""
    return [a.value if type(a) is ast.Starred else a for a in call.args] + [k.value for k in call.keywords]


class Evaluation:
    """What kind an expression is (a part of ``DeviceFlow``)."""

    def kind(self, expr: ast.AST) -> Kind:
        memo = self._memo
        if expr in memo:
            return memo[expr]
        if expr in self._busy or self._depth > MAX_DEPTH:
            return Kind.UNKNOWN
        self._busy.add(expr)
        self._depth += 1
        try:
            result = self._eval(expr)
        finally:
            self._depth -= 1
            self._busy.discard(expr)
        memo[expr] = result
        return result

    def is_device(self, expr: ast.AST) -> bool:
        return self.kind(expr) is Kind.DEVICE

    def is_host_tensor(self, expr: ast.AST) -> bool:
        return self.kind(expr) is Kind.HOST_TENSOR

    def is_cpu(self, expr: ast.AST) -> bool:
        return self.kind(expr) is Kind.CPU

    def under_no_grad(self, node: ast.AST) -> bool:
        """Inside ``with torch.no_grad():`` (or ``inference_mode``), or a function decorated with either."""
        return self.tree.inherited(("no_grad", id(self)), node, self._no_grad_step, False)

    def _no_grad_step(self, parent: ast.AST, child: ast.AST, above: bool) -> bool:
        if above:
            return True
        cls = type(parent)
        if cls is ast.With or cls is ast.AsyncWith:
            for item in parent.items:  # type: ignore[attr-defined]
                call = item.context_expr
                name = self._qualified(call.func if type(call) is _CALL else call) or ""
                if name.endswith(NO_GRAD):
                    return True
        return parent in self.no_grad_functions

    def may_require_grad(self, expr: ast.AST, depth: int = 0) -> bool:
        """Whether ``expr`` can be part of an autograd graph (so ``.numpy()`` needs ``.detach()``)."""
        if depth > 12 or self.under_no_grad(expr):
            return False
        cls = type(expr)
        if cls is _NAME:
            scope = self.tree.scope_of(expr)
            if expr.id in self.graph.get(scope, ()):  # type: ignore[attr-defined]
                return True
            return any(self._binding_requires_grad(b, depth) for b in self.visible(expr.id, expr))  # type: ignore[attr-defined]
        if cls is _CALL:
            func = expr.func  # type: ignore[attr-defined]
            qualified = self._qualified(func)
            if type(func) is _ATTRIBUTE and qualified is None:
                method = func.attr
                if method in ("detach", "detach_", "item", "tolist", "numpy"):
                    return False
                if method in ("forward", "generate") and self.is_placed(func.value):
                    return True
                if method in ("to", "cuda") or self.kind(func.value) in (Kind.DEVICE, Kind.HOST_TENSOR):
                    return self.may_require_grad(func.value, depth + 1) or any(
                        self.may_require_grad(v, depth + 1) for v in _arguments(expr)
                    )
                return self.kind(expr) is Kind.DEVICE  # self.encoder(x): a module's output
            if qualified is not None and qualified.startswith("torch."):
                return any(self.may_require_grad(v, depth + 1) for v in _arguments(expr))
            return self.kind(expr) is Kind.DEVICE  # model(x)
        if cls is _ATTRIBUTE:
            if expr.attr in ("data", "grad") or expr.attr in META_ATTRS:  # type: ignore[attr-defined]
                return False
            return self.may_require_grad(expr.value, depth + 1)  # type: ignore[attr-defined]
        if cls is ast.Subscript:
            return self.may_require_grad(expr.value, depth + 1)  # type: ignore[attr-defined]
        if cls is ast.BinOp:
            return self.may_require_grad(expr.left, depth + 1) or self.may_require_grad(expr.right, depth + 1)  # type: ignore[attr-defined]
        if cls is ast.UnaryOp:
            return self.may_require_grad(expr.operand, depth + 1)  # type: ignore[attr-defined]
        return False

    def device_variable(self, at: ast.AST) -> Optional[str]:
        """A name holding the accelerator device that code at ``at`` can use (``device=device``)."""
        tree = self.tree
        scope = tree.scope_of(at)
        start = tree.index(at)
        for name in self.device_names:
            for candidate_scope in (scope, tree.module):
                for binding in self.bindings.get(candidate_scope, {}).get(name, ()):
                    visible = binding.end < start or (candidate_scope is not scope) or binding.how == "param"
                    if visible and self.kind_of_binding(binding, name) in (Kind.ACCEL, Kind.UNKNOWN):
                        return name
        return None

    def kind_of_binding(self, binding: Binding, name: str) -> Kind:
        key = (binding, name)
        memo = self._binding_memo
        if key in memo:
            return memo[key]
        memo[key] = Kind.UNKNOWN  # a cycle (x += ... in a loop) resolves to unknown
        result = self._kind_of_binding(binding, name)
        memo[key] = result
        return result

    def is_dtype(self, node: ast.AST) -> bool:
        if names_a_dtype(self._qualified(node) or dotted_name(node) or ""):
            return True
        return type(node) is _NAME and self.dtype_value(node) is not None

    def dtype_value(self, node: ast.AST, depth: int = 0, *, defaults: bool = False) -> Optional[str]:
        """The dtype a name or attribute chain holds (``torch.float64``), following assignments; None if unknown.

        ``defaults``: a parameter holds its default (``def __init__(self, y0, dtype=torch.float64)``, what a call
        that does not pass it gets), and ``torch.promote_types(a, b)`` is float64 when either is."""
        qualified = self._qualified(node)
        if qualified is not None and names_a_dtype(qualified) and qualified.startswith("torch."):
            return qualified
        if defaults and type(node) is _CALL and depth <= 4 and self._qualified(node.func) == "torch.promote_types":  # type: ignore[attr-defined]
            found = [self.dtype_value(a, depth + 1, defaults=True) for a in node.args]  # type: ignore[attr-defined]
            return "torch.float64" if {"torch.float64", "torch.double"} & set(found) else None
        if type(node) is not _NAME or depth > 4:
            return None
        bindings = self.visible(node.id, node)  # type: ignore[attr-defined]
        values = [b.value for b in bindings if b.how == "assign" and not b.path]
        if defaults:
            values.extend(_default_of(b) for b in bindings if b.how == "param")
        found = {self.dtype_value(v, depth + 1, defaults=defaults) if v is not None else None for v in values}
        return found.pop() if len(found) == 1 and None not in found else None

    def to_target(self, call: ast.Call) -> Optional[ast.AST]:
        """The device (or tensor) argument of ``.to(...)``; None when only a dtype is given."""
        device = keyword(call, "device")
        if device is not None:
            return device
        for value in positional(call):
            if not self.is_dtype(value):
                return value
        return None

    def _qualified(self, node: ast.AST) -> Optional[str]:
        return self.ctx.qualify(node)

    def _kind_of_binding(self, binding: Binding, name: str) -> Kind:
        how = binding.how
        if how == "param":
            if DEVICE_NAME.match(name):
                return Kind.ACCEL
            return self._argument_kind(binding)
        if how == "other" or binding.value is None:
            return Kind.UNKNOWN
        if self._depth > MAX_DEPTH // 2:
            self._resolve_earlier(binding, name)
        if how == "aug":
            node = binding.value
            previous = self.visible(name, node)
            before = join_all(self.kind_of_binding(b, name) for b in previous if b is not binding) if previous else Kind.HOST
            return arithmetic(before, self.kind(node.value))  # type: ignore[attr-defined]
        if how == "for":
            element = self.kind(binding.value)
            if element is not Kind.DEVICE and type(binding.value) is _CALL:
                element = self._yielded_kind(binding.value)  # type: ignore[arg-type]
            return Kind.DEVICE if element is Kind.DEVICE else Kind.UNKNOWN
        value = binding.value
        for step in binding.path:
            if type(value) in (ast.Tuple, ast.List) and isinstance(step, int) and step < len(value.elts):  # type: ignore[attr-defined]
                element = value.elts[step]  # type: ignore[attr-defined]
                value = element.value if type(element) is ast.Starred else element
            else:
                if type(value) is _CALL and isinstance(step, int):
                    held = self.returned_item(value, step)  # `pred, true = self.step(batch)`: its own item
                    if held is not None:
                        return held
                inner = self.kind(value)
                return inner if inner in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST) else Kind.UNKNOWN
        return self.kind(value)

    def generator_called(self, call: ast.Call) -> Optional[ast.AST]:
        """The generator function of this file that ``call`` runs (``batches(loader)``, a top-level ``def``
        that yields, not shadowed where it is called), else None."""
        func = call.func
        if type(func) is not _NAME:
            return None
        tree = self.tree
        if func.id in self.bindings.get(tree.scope_of(call), {}) and tree.scope_of(call) is not tree.module:  # type: ignore[attr-defined]
            return None
        if self._yields is None:
            self._yields = {}
            for node in tree.of_type(ast.Yield, ast.YieldFrom):
                scope = tree.scope_of(node)
                if type(scope) in (ast.FunctionDef, ast.AsyncFunctionDef) and tree.scope_of(scope) is tree.module:
                    self._yields.setdefault(scope.name, (scope, []))[1].append(node)  # type: ignore[union-attr]
        found = self._yields.get(func.id)  # type: ignore[attr-defined]
        return found[0] if found is not None else None

    def _yielded_kind(self, call: ast.Call) -> Kind:
        """``for out in predictions(loader)``: what the generator function of this file yields."""
        if self.generator_called(call) is None:
            return Kind.UNKNOWN
        yields = self._yields[call.func.id][1]  # type: ignore[index, attr-defined]
        values = [y.value for y in yields if type(y) is ast.Yield and y.value is not None]  # type: ignore[attr-defined]
        if len(values) != len(yields):
            return Kind.UNKNOWN  # `yield from`, a bare `yield`: not known
        return join_all(self.kind(v) for v in values)

    def _argument_kind(self, binding: Binding) -> Kind:
        """What the callers in this file pass for a parameter (``accuracy(output, target)`` gets device tensors)."""
        function = binding.function
        param = binding.value
        if type(function) not in (ast.FunctionDef, ast.AsyncFunctionDef):
            return Kind.UNKNOWN
        args = function.args  # type: ignore[union-attr]
        ordered = [*args.posonlyargs, *args.args]
        position = None
        for i, candidate in enumerate(ordered):
            if candidate is param:
                position = i
        kinds = []
        if position is not None and self.tree.parent(function) is self.tree.module \
                and not self.calls.get(function.name):  # type: ignore[union-attr]
            # Called only from other modules: what they pass (a function this file calls is judged by its calls here).
            passed, files = self.ctx.project.callers(function.name)  # type: ignore[union-attr]
            kind = _fact_kind(passed[position]) if position < len(passed) and passed[position] else None
            if kind is Kind.DEVICE:
                self.from_callers[function] = files
                return kind
        for call, is_method in self.calls.get(function.name, ()):  # type: ignore[union-attr]
            index = position - 1 if (is_method and position is not None) else position
            value = None
            plain = [a for a in call.args if type(a) is not ast.Starred]
            if index is not None and 0 <= index < len(plain):
                value = plain[index]
            for item in call.keywords:
                if item.arg == param.arg:  # type: ignore[union-attr]
                    value = item.value
            if value is None:
                return Kind.UNKNOWN
            kinds.append(self.kind(value))
        if not kinds:
            return Kind.UNKNOWN
        result = join_all(kinds)
        return result if result in (Kind.DEVICE, Kind.MODULE, Kind.HOST_TENSOR) else Kind.UNKNOWN

    def _binding_requires_grad(self, binding: Binding, depth: int) -> bool:
        if binding.how == "assign" and binding.value is not None:
            value = binding.value
            for step in binding.path:
                if type(value) in (ast.Tuple, ast.List) and isinstance(step, int) and step < len(value.elts):  # type: ignore[attr-defined]
                    element = value.elts[step]  # type: ignore[attr-defined]
                    value = element.value if type(element) is ast.Starred else element
            return self.may_require_grad(value, depth + 1)
        if binding.how == "aug" and binding.value is not None:
            return self.may_require_grad(binding.value.value, depth + 1)  # type: ignore[attr-defined]
        return False

    def _eval(self, expr: ast.AST) -> Kind:
        cls = type(expr)
        if cls is _NAME:
            return self._eval_name(expr)  # type: ignore[arg-type]
        if cls is _ATTRIBUTE:
            return self._eval_attribute(expr)  # type: ignore[arg-type]
        if cls is ast.Subscript:
            index = expr.slice  # type: ignore[attr-defined]
            if type(expr.value) is _CALL and type(index) is ast.Constant and type(index.value) is int:  # type: ignore[attr-defined]
                held = self.returned_item(expr.value, index.value)  # `self.step(batch)[0]`  # type: ignore[attr-defined]
                if held is not None:
                    return held
            base = self.kind(expr.value)  # type: ignore[attr-defined]
            return base if base in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST, Kind.MODULE) else Kind.UNKNOWN
        if cls is _CALL:
            return self._eval_call(expr)  # type: ignore[arg-type]
        if cls is ast.BinOp:
            left = expr.left  # type: ignore[attr-defined]
            if type(expr.op) is ast.Mod and (type(left) is ast.JoinedStr or (  # type: ignore[attr-defined]
                    type(left) is ast.Constant and isinstance(left.value, (str, bytes)))):  # type: ignore[attr-defined]
                return Kind.HOST  # "%d" % t: a string (formatting it is the sync, not its result)
            return arithmetic(self.kind(left), self.kind(expr.right))  # type: ignore[attr-defined]
        if cls is ast.Compare:
            if any(type(op) in (ast.Is, ast.IsNot, ast.In, ast.NotIn) for op in expr.ops):  # type: ignore[attr-defined]
                return Kind.HOST
            if any(type(side) is ast.Constant and isinstance(side.value, (str, bytes))  # type: ignore[attr-defined]
                   for side in (expr.left, *expr.comparators)):  # type: ignore[attr-defined]
                return Kind.HOST  # `batch["name"] == ""`: a string field of a batch of tensors, not a tensor
            result = self.kind(expr.left)  # type: ignore[attr-defined]
            for comparator in expr.comparators:  # type: ignore[attr-defined]
                result = arithmetic(result, self.kind(comparator))
            return result
        if cls is ast.UnaryOp:
            if type(expr.op) is ast.Not:  # type: ignore[attr-defined]
                return Kind.HOST
            return self.kind(expr.operand)  # type: ignore[attr-defined]
        if cls is ast.BoolOp:
            return join_all(self.kind(v) for v in expr.values)  # type: ignore[attr-defined]
        if cls is ast.IfExp:
            return join(self.kind(expr.body), self.kind(expr.orelse))  # type: ignore[attr-defined]
        if cls is ast.Constant:
            value = expr.value  # type: ignore[attr-defined]
            return Kind.UNKNOWN if value is Ellipsis else string_kind(value)
        if cls is ast.JoinedStr:
            return Kind.HOST
        if cls in (ast.Tuple, ast.List, ast.Set):
            kinds = [self.kind(e.value if type(e) is ast.Starred else e) for e in expr.elts]  # type: ignore[attr-defined]
            return join_all(kinds) if kinds else Kind.HOST
        if cls is ast.Dict:
            kinds = [self.kind(v) for k, v in zip(expr.keys, expr.values) if k is not None]  # type: ignore[attr-defined]
            return join_all(kinds) if kinds else Kind.HOST
        if cls in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
            return self.kind(expr.elt)  # type: ignore[attr-defined]
        if cls is ast.DictComp:
            return self.kind(expr.value)  # type: ignore[attr-defined]
        if cls is ast.NamedExpr:
            return self.kind(expr.value)  # type: ignore[attr-defined]
        return Kind.UNKNOWN

    def _eval_name(self, expr: ast.Name) -> Kind:
        name = expr.id
        if self.is_placed_name(name, expr):
            return Kind.MODULE
        scope = self.tree.scope_of(expr)
        if name in self.graph.get(scope, ()) and self.places_on_a_device:
            return Kind.DEVICE
        bindings = self.visible(name, expr)
        if not bindings:
            imported = self._imported_kind(name)
            if imported is not None:
                return imported
            return Kind.ACCEL if DEVICE_NAME.match(name) else Kind.UNKNOWN
        return join_all(self.kind_of_binding(b, name) for b in bindings)

    def _eval_attribute(self, expr: ast.Attribute) -> Kind:
        attr = expr.attr
        qualified = self._qualified(expr)
        if qualified is not None and qualified.startswith("torch."):
            return Kind.HOST
        if attr == "device":
            return self._device_attribute(expr.value)
        dotted = dotted_name(expr)
        if dotted is not None and dotted in self.placed:
            return Kind.MODULE
        if attr in META_ATTRS:
            return Kind.HOST
        owner = expr.value
        if type(owner) is _NAME and owner.id == "self":
            held = self._attribute_kind(expr)
            if held is not None:
                return held
        base = self.kind(owner)
        if base is Kind.MODULE:
            return Kind.DEVICE if attr in ("weight", "bias") else Kind.MODULE
        if base in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST):
            return base
        return Kind.UNKNOWN

    def _attribute_kind(self, expr: ast.Attribute) -> Optional[Kind]:
        """``self.x``: what ``self.x = ...`` in this method put there before this use, else what any method of
        the class puts there (None: the class never assigns it)."""
        tree = self.tree
        self.bindings  # the attribute table is collected with the bindings
        owner = _class_of(tree, expr)
        rows = self._attributes.get((owner, expr.attr)) if owner is not None else None
        if not rows:
            return None
        method = tree.scope_of(expr)
        start = tree.index(expr)
        here = [value for end, where, value in rows if where is method and end < start]
        if here:
            return self.kind(here[-1])
        return join_all(self.kind(value) for _, _, value in rows)

    def _eval_call(self, call: ast.Call) -> Kind:
        func = call.func
        qualified = self._qualified(func)
        if qualified is None and type(func) is _ATTRIBUTE:
            return self._eval_method(call, func)  # type: ignore[arg-type]
        name = qualified or dotted_name(func) or ""
        last = name.rsplit(".", 1)[-1]
        args = positional(call)
        if name == "torch.from_numpy":
            return Kind.HOST_TENSOR
        if name == "torch.device":
            if args and self.kind(args[0]) is Kind.CPU:
                return Kind.CPU
            return Kind.ACCEL
        if name.startswith("torch.") and last in FACTORIES and name.count(".") == 1:
            device = keyword(call, "device")
            if device is not None:
                return self._placed_on(device)
            if (last.endswith("_like") or last in ("as_tensor", "asarray")) and args:
                first = self.kind(args[0])
                if first is Kind.DEVICE:
                    return Kind.DEVICE
                if last.endswith("_like"):
                    return first if first is Kind.HOST_TENSOR else Kind.UNKNOWN
            return Kind.HOST_TENSOR
        if name.startswith("torch."):
            if name.startswith(("torch.nn.", "torch.optim.", "torch.utils.")) and last[:1].isupper():
                return Kind.UNKNOWN
            if last in ("clip_grad_norm_", "clip_grad_norm") and args:
                # The total norm is a tensor where the parameters are: a placed model's are on the device.
                return Kind.DEVICE if self.kind(args[0]) in (Kind.MODULE, Kind.DEVICE) else Kind.UNKNOWN
            return self._combine(_arguments(call))
        root = name.split(".", 1)[0]
        if qualified is not None and qualified.split(".", 1)[0] in HOST_MODULES:
            return Kind.HOST
        if root in ("np", "math") and qualified is None:
            return Kind.HOST
        if name in HOST_BUILTINS:
            return Kind.HOST
        if name in JOIN_BUILTINS:
            return self._combine(_arguments(call))
        returned = self._returned(call, func)
        if returned is not None:
            return returned
        if name == "self":
            model = self.model_call_kind(call)  # type: ignore[attr-defined]
            if model is not None:
                return model
        callee = self.kind(func)
        if callee in (Kind.MODULE, Kind.DEVICE):
            return Kind.DEVICE
        arg_kinds = []
        for value in positional(call):
            kind = self.kind(value)
            # to_device(batch, device) / move(batch, device=device): a helper that places its argument.
            if kind is Kind.ACCEL:
                return Kind.DEVICE
            arg_kinds.append(kind)
        for item in call.keywords:
            if item.arg is None:
                continue
            kind = self.kind(item.value)
            if kind is Kind.ACCEL and item.arg == "device":
                return Kind.DEVICE
            arg_kinds.append(kind)
        if Kind.DEVICE in arg_kinds and (MODULE_LIKE.search(last) or dotted_name(func) in self.nn_objects):
            return Kind.DEVICE
        if not call.args and not call.keywords and DEVICE_NAME.match(last.replace("pick_", "").replace("get_", "")):
            return Kind.ACCEL
        return Kind.UNKNOWN

    def _eval_method(self, call: ast.Call, func: ast.Attribute) -> Kind:
        method = func.attr
        receiver = func.value
        if type(receiver) is _NAME and receiver.id == "self":  # type: ignore[attr-defined]
            returned = self._returned(call, func)
            if returned is not None:
                return returned
            if self.is_placed_name(f"self.{method}", call):
                return Kind.DEVICE  # `self.D(images)`: the forward of a module the class placed (`self.D.cuda()`)
            if method in ("forward", "__call__"):
                model = self.model_call_kind(call)  # type: ignore[attr-defined]
                if model is not None:
                    return model
        if method == "to":
            return self._eval_to(call, receiver)
        if method == "cuda":
            return Kind.MODULE if self.kind(receiver) is Kind.MODULE else Kind.DEVICE
        if method == "cpu":
            return Kind.UNKNOWN if self.kind(receiver) is Kind.MODULE else Kind.HOST_TENSOR
        if method in HOST_METHODS:
            return Kind.HOST
        base = self.kind(receiver)
        if base is Kind.MODULE:
            if method in ("forward", "generate", "__call__"):
                return Kind.DEVICE
            if method not in MODULE_METHODS and any(self.kind(v) is Kind.DEVICE for v in _arguments(call)):
                return Kind.DEVICE  # `model.encoder(x)`: a submodule's forward
            return Kind.MODULE
        if base in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST):
            return base
        arg_kinds = [self.kind(v) for v in _arguments(call)]
        if Kind.DEVICE in arg_kinds:
            return Kind.DEVICE
        if Kind.ACCEL in arg_kinds and method not in ("join", "format", "get", "pop", "setdefault"):
            return Kind.DEVICE
        return Kind.UNKNOWN

    def _eval_to(self, call: ast.Call, receiver: ast.AST) -> Kind:
        base = self.kind(receiver)
        target = self.to_target(call)
        if target is None:
            return base
        placed = self._placed_on(target)
        if base is Kind.MODULE:
            return Kind.UNKNOWN if placed is Kind.HOST_TENSOR else Kind.MODULE
        return placed

    def _device_attribute(self, owner: ast.AST) -> Kind:
        """``owner.device``: the accelerator for models, trainers and args; a tensor's own device otherwise."""
        kind = self.kind(owner)
        if kind in (Kind.DEVICE, Kind.MODULE):
            return Kind.ACCEL
        if kind is Kind.HOST_TENSOR:
            return Kind.CPU
        last = (dotted_name(owner) or "").rsplit(".", 1)[-1]
        if last in OBJECT_OWNERS or MODULE_LIKE.search(last):
            return Kind.ACCEL
        return Kind.UNKNOWN  # input_ids.device: wherever the input already is

    def _placed_on(self, target: ast.AST) -> Kind:
        """What a tensor moved to (or created on) ``target`` is: a device, a CPU device or another tensor."""
        destination = self.kind(target)
        if destination in (Kind.CPU, Kind.HOST_TENSOR):
            return Kind.HOST_TENSOR  # .to("cpu") / .to(other_cpu_tensor)
        if destination is Kind.UNKNOWN and type(target) is _ATTRIBUTE and target.attr == "device":  # type: ignore[attr-defined]
            return Kind.UNKNOWN
        return Kind.DEVICE

    def _combine(self, nodes: Iterable[ast.AST]) -> Kind:
        kinds = [self.kind(n) for n in nodes]
        if Kind.DEVICE in kinds:
            return Kind.DEVICE
        if Kind.HOST_TENSOR in kinds and all(k in (Kind.HOST_TENSOR, Kind.HOST) for k in kinds):
            return Kind.HOST_TENSOR
        return Kind.UNKNOWN


def _default_of(binding: Binding) -> Optional[ast.AST]:
    """The default value of a parameter binding, if it has one."""
    function, param = binding.function, binding.value
    args = getattr(function, "args", None)
    if args is None:
        return None
    positional = [*args.posonlyargs, *args.args]
    if param in positional:
        index = positional.index(param) - (len(positional) - len(args.defaults))
        return args.defaults[index] if index >= 0 else None
    if param in args.kwonlyargs:
        return args.kw_defaults[args.kwonlyargs.index(param)]
    return None
