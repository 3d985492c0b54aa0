"""Where values live: on the accelerator, on the host, or unknown.

Per function (and the module body), a name holds what its most recent
assignment before the use gave it; with no assignment before the use (a
loop-carried name) it holds the join of all its assignments. Expressions are
evaluated structurally:

- device: ``.to(device)``, ``.cuda()``, factories with a non-CPU ``device=``,
  outputs of placed modules, tensors passed to ``.backward()`` (a loss lives
  where the model does) and what is computed from any of these, through
  ``.detach()``, arithmetic, indexing and ``torch.*`` functions;
- host tensor: ``torch.from_numpy``, factories without ``device=``, ``.cpu()``,
  ``.to("cpu")``;
- host value: ``.item()``, ``.tolist()``, ``.numpy()``, numpy, Python numbers,
  tensor metadata (``.shape``, ``.dtype``, ``.size()``);
- placed module: a name moved with ``model.to(device)`` /
  ``model = Net().to(device)`` / ``accelerator.prepare(model, ...)`` anywhere
  in the file. A script's names are the same in ``main()`` and in the
  ``train(model, ...)`` it calls, so placement is tracked by name, file-wide.

Anything else is unknown, and rules treat unknown as "do not report".
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple, Union

import libcst as cst

from mpslint.analysis.names import dotted_name
from mpslint.analysis.tree import Scope, Tree


class Kind(enum.Enum):
    DEVICE = "device"  # a tensor that may live on the accelerator
    HOST_TENSOR = "host tensor"  # a torch tensor known to be on the CPU
    HOST = "host"  # a Python or numpy value, or tensor metadata
    MODULE = "module"  # a module placed on the accelerator
    ACCEL = "accelerator"  # a device handle that may name the accelerator
    CPU = "cpu"  # a device handle naming the CPU
    UNKNOWN = "unknown"


FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor "
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like as_tensor asarray "
    "normal bernoulli multinomial".split()
)
# Factories whose result has a shape taken from the arguments (not a 0-dim scalar).
SIZED_FACTORIES = frozenset("zeros ones empty full rand randn randint randperm arange linspace logspace eye normal".split())
DTYPES = frozenset(
    "float float32 float64 double half float16 bfloat16 int int8 int16 int32 int64 long short uint8 bool "
    "complex64 complex128 cfloat cdouble".split()
)
META_ATTRS = frozenset(
    "shape ndim dtype is_cuda is_mps is_cpu requires_grad is_leaf layout is_sparse is_floating_point names".split()
)
SAME_AS_BASE_ATTRS = frozenset("T mT H mH data grad real imag".split())
HOST_METHODS = frozenset(
    "item tolist numpy size dim ndimension numel nelement element_size is_contiguous get_device data_ptr "
    "stride storage_offset is_floating_point is_complex __len__ __repr__ __str__ __format__".split()
)
HOST_BUILTINS = frozenset(
    "float int bool str repr len isinstance issubclass range enumerate print round hash id type format "
    "open hasattr getattr callable".split()
)
JOIN_BUILTINS = frozenset("sum max min abs".split())
HOST_MODULES = ("numpy", "math", "random", "time", "os", "json", "pandas", "sklearn", "scipy", "logging", "statistics")
# Callees that are modules or loss functions by every naming convention in the wild.
MODULE_LIKE = re.compile(
    r"model|net|loss|criterion|generator|discriminator|encoder|decoder|backbone|head|classifier|"
    r"layer|module|block|critic|policy|actor|vae|unet|transformer|gather",
    re.IGNORECASE,
)
# Objects whose ``.device`` is the training device (not some tensor's own device).
OBJECT_OWNERS = frozenset("self args accelerator trainer training_args state config cfg opt opts hparams".split())
DEVICE_NAME = re.compile(r"^(device|dev|.*_device|device_.*)$")


@dataclass(frozen=True)
class Binding:
    """One way a name gets its value in a scope."""

    end: int  # tree index after which the binding is visible
    how: str  # "assign" | "aug" | "for" | "param" | "other"
    value: Optional[cst.CSTNode] = None  # the assigned expression / iterable / AugAssign
    path: Tuple[Union[int, str], ...] = ()  # tuple-unpacking path into value


class DeviceFlow:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree: Tree = ctx.analysis(Tree)
        self.bindings: Dict[Scope, Dict[str, List[Binding]]] = {}
        self.graph: Dict[Scope, Set[str]] = {}
        self.placed: Set[str] = set()  # every name placed somewhere in the file
        self.placed_in: Dict[Scope, Dict[str, List[int]]] = {}  # scope -> name -> where it is placed
        self.prepared: Set[str] = set()  # names returned by accelerator.prepare(...)
        self.nn_objects: Set[str] = set()  # names bound to torch.nn.X(...) instances
        self.no_grad_functions: Set[cst.CSTNode] = set()
        # Calls of functions by simple name (``f(...)``, ``self.f(...)`` -> is_method).
        self.calls: Dict[str, List[Tuple[cst.Call, bool]]] = {}
        self._memo: Dict[cst.CSTNode, Kind] = {}
        self._busy: Set[cst.CSTNode] = set()
        self._binding_memo: Dict[Tuple[int, str], Kind] = {}
        self._collect()

    # ------------------------------------------------------------------ queries

    def kind(self, expr: cst.CSTNode) -> Kind:
        if expr in self._memo:
            return self._memo[expr]
        if expr in self._busy:
            return Kind.UNKNOWN
        self._busy.add(expr)
        try:
            result = self._eval(expr)
        finally:
            self._busy.discard(expr)
        self._memo[expr] = result
        return result

    def is_device(self, expr: cst.CSTNode) -> bool:
        return self.kind(expr) is Kind.DEVICE

    def is_host_tensor(self, expr: cst.CSTNode) -> bool:
        return self.kind(expr) is Kind.HOST_TENSOR

    def is_placed(self, callee: cst.CSTNode) -> bool:
        """``callee(...)`` runs a module that lives on the accelerator."""
        return self.kind(callee) in (Kind.MODULE, Kind.DEVICE)

    def is_cpu(self, expr: cst.CSTNode) -> bool:
        return self.kind(expr) is Kind.CPU

    def under_no_grad(self, node: cst.CSTNode) -> bool:
        for parent in self.tree.ancestors(node):
            if type(parent) is cst.With:
                for item in parent.items:
                    call = item.item
                    name = self._qualified(call.func if isinstance(call, cst.Call) else call) or ""
                    if name.endswith(("no_grad", "inference_mode")):
                        return True
            if parent in self.no_grad_functions:
                return True
        return False

    def may_require_grad(self, expr: cst.CSTNode, depth: int = 0) -> bool:
        """Whether ``expr`` can be part of an autograd graph (so ``.numpy()`` needs ``.detach()``)."""
        if depth > 12 or self.under_no_grad(expr):
            return False
        if isinstance(expr, cst.Name):
            scope = self.tree.scope_of(expr)
            if expr.value in self.graph.get(scope, ()):
                return True
            binding = self._visible(expr.value, expr)
            return any(self._binding_requires_grad(b, depth) for b in binding)
        if isinstance(expr, cst.Call):
            func = expr.func
            qualified = self._qualified(func)
            if isinstance(func, cst.Attribute) and qualified is None:
                method = func.attr.value
                if method in ("detach", "detach_", "item", "tolist", "numpy"):
                    return False
                if method in ("forward", "generate") and self.is_placed(func.value):
                    return True
                if method in ("to", "cuda") or self.kind(func.value) in (Kind.DEVICE, Kind.HOST_TENSOR):
                    return self.may_require_grad(func.value, depth + 1) or any(
                        self.may_require_grad(a.value, depth + 1) for a in expr.args
                    )
                return self.kind(expr) is Kind.DEVICE  # self.encoder(x): a module's output
            if qualified is not None and qualified.startswith("torch."):
                return any(self.may_require_grad(a.value, depth + 1) for a in expr.args)
            return self.kind(expr) is Kind.DEVICE  # model(x)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in ("data", "grad") or expr.attr.value in META_ATTRS:
                return False
            return self.may_require_grad(expr.value, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self.may_require_grad(expr.value, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            return self.may_require_grad(expr.left, depth + 1) or self.may_require_grad(expr.right, depth + 1)
        if isinstance(expr, (cst.UnaryOperation,)):
            return self.may_require_grad(expr.expression, depth + 1)
        return False

    def device_variable(self, at: cst.CSTNode) -> Optional[str]:
        """A name holding the accelerator device that code at ``at`` can use (``device=device``)."""
        scope = self.tree.scope_of(at)
        start = self.tree.start.get(at, 0)
        for name in self._device_names:
            for candidate_scope in (scope, self.tree.module):
                for binding in self.bindings.get(candidate_scope, {}).get(name, ()):
                    visible = binding.end < start or (candidate_scope is not scope) or binding.how == "param"
                    if visible and self.kind_of_binding(binding, name) in (Kind.ACCEL, Kind.UNKNOWN):
                        return name
        return None

    # ------------------------------------------------------------- collection

    def _collect(self) -> None:
        # Dispatch on the exact class: these LibCST classes have no subclasses, and
        # ``isinstance`` against them goes through ``ABCMeta`` (once per node and test).
        tree = self.tree
        end = tree.end
        calls: List[cst.Call] = []
        assign, ann_assign, aug_assign = cst.Assign, cst.AnnAssign, cst.AugAssign
        for_, named_expr, function_def, lambda_ = cst.For, cst.NamedExpr, cst.FunctionDef, cst.Lambda
        with_item, call_, name_, attribute = cst.WithItem, cst.Call, cst.Name, cst.Attribute
        for node in tree.start:
            cls = type(node)
            if cls is call_:
                calls.append(node)
                self._collect_call(node)
                func = node.func
                func_cls = type(func)
                if func_cls is name_:
                    self.calls.setdefault(func.value, []).append((node, False))
                elif func_cls is attribute and type(func.value) is name_ and func.value.value == "self":
                    self.calls.setdefault(func.attr.value, []).append((node, True))
            elif cls is assign or cls is ann_assign or cls is aug_assign:
                self._bind_assignment(node)
            elif cls is for_:
                self._bind_target(node.target, end[node.target], "for", node.iter, ())
            elif cls is named_expr:
                self._bind_target(node.target, end[node], "assign", node.value, ())
            elif cls is function_def or cls is lambda_:
                self._bind_params(node)
                if cls is function_def:
                    self._bind_other(node.name, self.tree.scope_of(node), tree.start[node])
                    for decorator in node.decorators:
                        name = self._qualified(_callee(decorator.decorator)) or ""
                        if name.endswith(("no_grad", "inference_mode")):
                            self.no_grad_functions.add(node)
            elif cls is with_item and node.asname is not None:
                self._bind_target(node.asname.name, end[node], "other", None, ())
        self._device_names = self._collect_device_names(calls)

    def _scope_bindings(self, scope: Scope) -> Dict[str, List[Binding]]:
        return self.bindings.setdefault(scope, {})

    def _bind_other(self, name_node: cst.CSTNode, scope: Scope, end: int) -> None:
        if isinstance(name_node, cst.Name):
            self._scope_bindings(scope).setdefault(name_node.value, []).append(Binding(end, "other"))

    def _bind_assignment(self, node: cst.CSTNode) -> None:
        end = self.tree.end[node]
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self._bind_target(target.target, end, "assign", node.value, ())
            self._note_placement(node)
        elif isinstance(node, cst.AnnAssign):
            if node.value is not None:
                self._bind_target(node.target, end, "assign", node.value, ())
        else:
            self._bind_target(node.target, end, "aug", node, ())

    def _bind_target(self, target, end: int, how: str, value, path) -> None:
        if isinstance(target, cst.Name):
            scope = self.tree.scope_of(target)
            self._scope_bindings(scope).setdefault(target.value, []).append(Binding(end, how, value, path))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for i, element in enumerate(target.elements):
                inner = element.value
                if isinstance(element, cst.StarredElement):
                    self._bind_target(inner, end, how, value, path + ("*",))
                else:
                    self._bind_target(inner, end, how, value, path + (i,))

    def _bind_params(self, function) -> None:
        params = function.params
        scope = function
        everything = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                everything.append(extra)
        for param in everything:
            self._scope_bindings(scope).setdefault(param.name.value, []).append(
                Binding(self.tree.start[function], "param", param)
            )

    def _note_placement(self, node: cst.Assign) -> None:
        value = node.value
        targets = [t.target for t in node.targets]
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            method = value.func.attr.value
            receiver = value.func.value
            if method in ("to", "cuda") and not _moves_to_cpu(value, self):
                if self._is_module_expression(receiver):
                    for target in targets:
                        name = dotted_name(target)
                        if name:
                            self._place(name, node)
            if method == "prepare":
                for target in targets:
                    elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else [cst.Element(target)]
                    for element in elements:
                        name = dotted_name(element.value)
                        if not name:
                            continue
                        self.prepared.add(name)
                        if MODULE_LIKE.search(name.rsplit(".", 1)[-1]) and "loss" not in name.lower():
                            self._place(name, node)
        if isinstance(value, cst.Call):
            qualified = self._qualified(value.func) or ""
            if qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1][:1].isupper():
                for target in targets:
                    name = dotted_name(target)
                    if name:
                        self.nn_objects.add(name)

    def _is_module_expression(self, receiver: cst.CSTNode) -> bool:
        """``Net()`` / ``models.resnet18()`` / a placed name: a module, not a tensor."""
        if isinstance(receiver, cst.Call):
            qualified = self._qualified(receiver.func) or dotted_name(receiver.func) or ""
            if qualified.startswith("torch.") and not qualified.startswith("torch.nn."):
                return False
            if isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value in ("to", "cuda", "float", "half", "eval", "train"):
                return self._is_module_expression(receiver.func.value)
            return builds_module(qualified)
        name = dotted_name(receiver)
        return name is not None and name in self.placed

    def _collect_call(self, call: cst.Call) -> None:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        parent = self.tree.parent(call)
        # `model.to(device)` as a statement: only modules move in place.
        if method in ("to", "cuda", "to_empty") and isinstance(parent, cst.Expr):
            name = dotted_name(func.value)
            if name and not _moves_to_cpu(call, self):
                self._place(name, call)
        if method == "backward":
            scope = self.tree.scope_of(call)
            positional = [a.value for a in call.args if a.keyword is None]
            if positional:
                # accelerator.backward(loss) / torch.autograd.backward(loss)
                if isinstance(positional[0], cst.Name):
                    self._add_graph(scope, positional[0].value)
                return
            receiver = func.value
            if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value == "scale":
                if receiver.args:
                    receiver = receiver.args[0].value
            if isinstance(receiver, cst.Name):
                self._add_graph(scope, receiver.value)

    def _place(self, name: str, at: cst.CSTNode) -> None:
        self.placed.add(name)
        self.placed_in.setdefault(self.tree.scope_of(at), {}).setdefault(name, []).append(self.tree.start[at])

    def is_placed_name(self, name: str, use: cst.CSTNode) -> bool:
        """``name`` at ``use`` is a placed module: placed in this function, or a parameter/global placed elsewhere.

        A function that builds its own ``model = Net()`` and never moves it has an unplaced model, whatever
        other functions of the file do with their ``model``.
        """
        if name not in self.placed:
            return False
        scope = self.tree.scope_of(use)
        here = self.placed_in.get(scope, {}).get(name)
        if here:
            return min(here) < self.tree.start.get(use, 0)  # calls before `model.to(device)` run on the CPU
        if "." in name:
            return True  # self.model: shared by the methods of a class
        local = self.bindings.get(scope, {}).get(name, ())
        return not any(b.how != "param" for b in local) or scope is self.tree.module

    def _add_graph(self, scope: Scope, name: str) -> None:
        names = self.graph.setdefault(scope, set())
        if name in names:
            return
        names.add(name)
        # loss = outputs.loss / outputs[0]: the outputs are on the device too.
        for binding in self.bindings.get(scope, {}).get(name, ()):
            value = binding.value
            if binding.how == "assign" and not binding.path and isinstance(value, (cst.Attribute, cst.Subscript)):
                base = value.value
                if isinstance(base, cst.Name):
                    names.add(base.value)

    def _collect_device_names(self, calls: List[cst.Call]) -> List[str]:
        """Names used as a device: ``.to(NAME)`` / ``device=NAME``, most used first."""
        counts: Dict[str, int] = {}
        for node in calls:
            candidates = []
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to" and node.args:
                if node.args[0].keyword is None:
                    candidates.append(node.args[0].value)
            candidates += [a.value for a in node.args if a.keyword is not None and a.keyword.value == "device"]
            for value in candidates:
                if isinstance(value, cst.Name):
                    counts[value.value] = counts.get(value.value, 0) + 1
        return sorted(counts, key=lambda n: -counts[n])

    # ------------------------------------------------------------- evaluation

    def _qualified(self, node: cst.CSTNode) -> Optional[str]:
        return self.ctx.qualify(node)

    def _visible(self, name: str, use: cst.CSTNode) -> List[Binding]:
        """The bindings that can reach ``use``: the latest one before it, else all of them."""
        start = self.tree.start.get(use, 0)
        scope = self.tree.scope_of(use)
        while True:
            found = self.bindings.get(scope, {}).get(name)
            if found:
                if scope is self.tree.scope_of(use):
                    before = [b for b in found if b.end < start]
                    if before:
                        latest = max(before, key=lambda b: b.end)
                        return [latest] + self._carried(found, latest, use, scope)
                return list(found)
            if scope is self.tree.module:
                return []
            scope = self.tree.scope_of(scope)

    def _carried(self, found: List[Binding], latest: Binding, use: cst.CSTNode, scope: Scope) -> List[Binding]:
        """Assignments later in a loop around ``use`` reach it on the next iteration."""
        start = self.tree.start.get(use, 0)
        carried: List[Binding] = []
        for parent in self.tree.ancestors(use):
            if parent is scope:
                break
            if type(parent) in (cst.For, cst.While):
                first, last = self.tree.start[parent], self.tree.end[parent]
                if first <= latest.end <= last:
                    break  # the loop rebinds the name before the use on every iteration
                carried += [b for b in found if b.end > start and b.end <= last]
        return carried

    def kind_of_binding(self, binding: Binding, name: str) -> Kind:
        key = (id(binding), name)
        if key in self._binding_memo:
            return self._binding_memo[key]
        self._binding_memo[key] = Kind.UNKNOWN  # a cycle (x += ... in a loop) resolves to unknown
        result = self._kind_of_binding(binding, name)
        self._binding_memo[key] = result
        return result

    def _kind_of_binding(self, binding: Binding, name: str) -> Kind:
        if binding.how == "param":
            if DEVICE_NAME.match(name):
                return Kind.ACCEL
            return self._argument_kind(binding.value)
        if binding.how == "other" or binding.value is None:
            return Kind.UNKNOWN
        if binding.how == "aug":
            node = binding.value
            previous = self._visible(name, node)
            before = join_all(self.kind_of_binding(b, name) for b in previous if b is not binding) if previous else Kind.HOST
            return arithmetic(before, self.kind(node.value))
        if binding.how == "for":
            element = self.kind(binding.value)
            return Kind.DEVICE if element is Kind.DEVICE else Kind.UNKNOWN
        value = binding.value
        for step in binding.path:
            if isinstance(value, (cst.Tuple, cst.List)) and isinstance(step, int) and step < len(value.elements):
                value = value.elements[step].value
            else:
                inner = self.kind(value)
                return inner if inner in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST) else Kind.UNKNOWN
        return self.kind(value)

    def _argument_kind(self, param: cst.Param) -> Kind:
        """What the callers in this file pass for ``param`` (``accuracy(output, target)`` gets device tensors)."""
        function = self.tree.parent(self.tree.parent(param))
        if not isinstance(function, cst.FunctionDef):
            return Kind.UNKNOWN
        params = function.params
        if param.star or param in params.kwonly_params:
            position = None
        else:
            ordered = list(params.posonly_params) + list(params.params)
            position = ordered.index(param) if param in ordered else None
        kinds = []
        for call, is_method in self.calls.get(function.name.value, ()):
            index = position - 1 if (is_method and position is not None) else position
            value = None
            for i, arg in enumerate(a for a in call.args if a.keyword is None and not a.star):
                if i == index:
                    value = arg.value
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value == param.name.value:
                    value = arg.value
            if value is None:
                return Kind.UNKNOWN
            kinds.append(self.kind(value))
        if not kinds:
            return Kind.UNKNOWN
        result = join_all(kinds)
        return result if result in (Kind.DEVICE, Kind.MODULE, Kind.HOST_TENSOR) else Kind.UNKNOWN

    def _binding_requires_grad(self, binding: Binding, depth: int) -> bool:
        if binding.how in ("assign",) and binding.value is not None:
            value = binding.value
            for step in binding.path:
                if isinstance(value, (cst.Tuple, cst.List)) and isinstance(step, int) and step < len(value.elements):
                    value = value.elements[step].value
            return self.may_require_grad(value, depth + 1)
        if binding.how == "aug" and binding.value is not None:
            return self.may_require_grad(binding.value.value, depth + 1)
        return False

    def _eval(self, expr: cst.CSTNode) -> Kind:
        cls = type(expr)  # exact classes: none of these has subclasses, and isinstance goes through ABCMeta
        if cls is cst.Name:
            return self._eval_name(expr)
        if cls is cst.Attribute:
            return self._eval_attribute(expr)
        if cls is cst.Subscript:
            base = self.kind(expr.value)
            return base if base in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST, Kind.MODULE) else Kind.UNKNOWN
        if cls is cst.Call:
            return self._eval_call(expr)
        if cls is cst.BinaryOperation:
            return arithmetic(self.kind(expr.left), self.kind(expr.right))
        if cls is cst.Comparison:
            if any(isinstance(t.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for t in expr.comparisons):
                return Kind.HOST
            result = self.kind(expr.left)
            for target in expr.comparisons:
                result = arithmetic(result, self.kind(target.comparator))
            return result
        if cls is cst.UnaryOperation:
            if isinstance(expr.operator, cst.Not):
                return Kind.HOST
            return self.kind(expr.expression)
        if cls is cst.BooleanOperation:
            return join(self.kind(expr.left), self.kind(expr.right))
        if cls is cst.IfExp:
            return join(self.kind(expr.body), self.kind(expr.orelse))
        if cls in (cst.Integer, cst.Float, cst.Imaginary, cst.FormattedString, cst.ConcatenatedString):
            return Kind.HOST
        if cls is cst.SimpleString:
            return _string_kind(expr)
        if cls in (cst.Tuple, cst.List, cst.Set):
            kinds = [self.kind(e.value) for e in expr.elements]
            return join_all(kinds) if kinds else Kind.HOST
        if cls is cst.Dict:
            kinds = [self.kind(e.value) for e in expr.elements if isinstance(e, cst.DictElement)]
            return join_all(kinds) if kinds else Kind.HOST
        if cls in (cst.ListComp, cst.SetComp, cst.GeneratorExp):
            return self.kind(expr.elt)
        if cls is cst.DictComp:
            return self.kind(expr.value)
        if cls is cst.NamedExpr:
            return self.kind(expr.value)
        return Kind.UNKNOWN

    def _eval_name(self, expr: cst.Name) -> Kind:
        name = expr.value
        if name in ("True", "False", "None"):
            return Kind.HOST
        if self.is_placed_name(name, expr):
            return Kind.MODULE
        scope = self.tree.scope_of(expr)
        if name in self.graph.get(scope, ()):
            return Kind.DEVICE
        bindings = self._visible(name, expr)
        if not bindings:
            return Kind.ACCEL if DEVICE_NAME.match(name) else Kind.UNKNOWN
        return join_all(self.kind_of_binding(b, name) for b in bindings)

    def _eval_attribute(self, expr: cst.Attribute) -> Kind:
        attr = expr.attr.value
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
        base = self.kind(expr.value)
        if base is Kind.MODULE:
            return Kind.DEVICE if attr in ("weight", "bias") else Kind.MODULE
        if base in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST):
            return base
        return Kind.UNKNOWN

    def _eval_call(self, call: cst.Call) -> Kind:
        func = call.func
        qualified = self._qualified(func)
        if qualified is None and isinstance(func, cst.Attribute):
            return self._eval_method(call, func)
        name = qualified or dotted_name(func) or ""
        last = name.rsplit(".", 1)[-1]
        args = [a.value for a in call.args if a.keyword is None]
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
            return self._combine(a.value for a in call.args)
        root = name.split(".", 1)[0]
        if qualified is not None and qualified.split(".", 1)[0] in HOST_MODULES:
            return Kind.HOST
        if root in ("np", "math") and qualified is None:
            return Kind.HOST
        if name in HOST_BUILTINS:
            return Kind.HOST
        if name in JOIN_BUILTINS:
            return self._combine(a.value for a in call.args)
        callee = self.kind(func)
        if callee in (Kind.MODULE, Kind.DEVICE):
            return Kind.DEVICE
        arg_kinds = [self.kind(a.value) for a in call.args]
        for kind, arg in zip(arg_kinds, call.args):
            # to_device(batch, device) / move(batch, device=device): a helper that places its argument.
            if kind is Kind.ACCEL and (arg.keyword is None or arg.keyword.value == "device"):
                return Kind.DEVICE
        if Kind.DEVICE in arg_kinds and (MODULE_LIKE.search(last) or dotted_name(func) in self.nn_objects):
            return Kind.DEVICE
        if not call.args and DEVICE_NAME.match(last.replace("pick_", "").replace("get_", "")):
            return Kind.ACCEL
        return Kind.UNKNOWN

    def _eval_method(self, call: cst.Call, func: cst.Attribute) -> Kind:
        method = func.attr.value
        receiver = func.value
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
            return Kind.DEVICE if method in ("forward", "generate", "__call__") else Kind.MODULE
        if base in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST):
            return base
        arg_kinds = [self.kind(a.value) for a in call.args]
        if Kind.DEVICE in arg_kinds:
            return Kind.DEVICE
        if Kind.ACCEL in arg_kinds and method not in ("join", "format", "get", "pop", "setdefault"):
            return Kind.DEVICE
        return Kind.UNKNOWN

    def _eval_to(self, call: cst.Call, receiver: cst.CSTNode) -> Kind:
        base = self.kind(receiver)
        target = self._to_target(call)
        if target is None:
            return base
        placed = self._placed_on(target)
        if base is Kind.MODULE:
            return Kind.UNKNOWN if placed is Kind.HOST_TENSOR else Kind.MODULE
        return placed

    def _device_attribute(self, owner: cst.CSTNode) -> Kind:
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

    def _placed_on(self, target: cst.CSTNode) -> Kind:
        """What a tensor moved to (or created on) ``target`` is: a device, a CPU device or another tensor."""
        destination = self.kind(target)
        if destination in (Kind.CPU, Kind.HOST_TENSOR):
            return Kind.HOST_TENSOR  # .to("cpu") / .to(other_cpu_tensor)
        if destination is Kind.UNKNOWN and isinstance(target, cst.Attribute) and target.attr.value == "device":
            return Kind.UNKNOWN
        return Kind.DEVICE

    def _to_target(self, call: cst.Call) -> Optional[cst.CSTNode]:
        """The device (or tensor) argument of ``.to(...)``; None when only a dtype is given."""
        device = keyword(call, "device")
        if device is not None:
            return device
        for arg in call.args:
            if arg.keyword is not None:
                continue
            if self.is_dtype(arg.value):
                continue
            return arg.value
        return None

    def is_dtype(self, node: cst.CSTNode) -> bool:
        return names_a_dtype(self._qualified(node) or dotted_name(node) or "")

    def _combine(self, nodes: Iterable[cst.CSTNode]) -> Kind:
        kinds = [self.kind(n) for n in nodes]
        if Kind.DEVICE in kinds:
            return Kind.DEVICE
        if Kind.HOST_TENSOR in kinds and all(k in (Kind.HOST_TENSOR, Kind.HOST) for k in kinds):
            return Kind.HOST_TENSOR
        return Kind.UNKNOWN


def builds_module(callee: str) -> bool:
    """A call of ``callee`` (qualified where it can be) returns a module: ``Net()``, ``resnet18()``, ``from_pretrained``."""
    last = callee.rsplit(".", 1)[-1]
    return (
        last[:1].isupper()
        or last == "from_pretrained"
        or bool(MODULE_LIKE.search(last))
        or callee.startswith(("torchvision.models", "timm"))
    )


def keyword(call: cst.Call, name: str) -> Optional[cst.CSTNode]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _callee(node: cst.CSTNode) -> cst.CSTNode:
    return node.func if isinstance(node, cst.Call) else node


def _string_kind(node: cst.SimpleString) -> Kind:
    try:
        value = node.evaluated_value
    except Exception:  # bytes or odd escapes: not a device string
        return Kind.HOST
    return string_kind(value)


def string_kind(value: object) -> Kind:
    """A literal's kind: ``"cpu"`` a CPU device, ``"cuda:0"``/``"mps"`` an accelerator, anything else a host value."""
    if not isinstance(value, str):
        return Kind.HOST
    device = value.split(":", 1)[0]
    if device == "cpu":
        return Kind.CPU
    if device in ("cuda", "mps", "xpu", "npu", "hpu", "xla", "meta") and value == value.strip():
        return Kind.ACCEL
    return Kind.HOST


def names_a_dtype(name: str) -> bool:
    """``name`` (qualified where it can be) is a dtype: ``torch.float64``, ``self.dtype``, ``compute_dtype``."""
    last = name.rsplit(".", 1)[-1]
    if name.startswith("torch.") and last in DTYPES:
        return True
    return "dtype" in last.lower()


def _moves_to_cpu(call: cst.Call, flow: "DeviceFlow") -> bool:
    if call.func.attr.value == "cuda":
        return False
    target = flow._to_target(call)
    if target is None:
        return True  # only a dtype: not a placement
    if isinstance(target, cst.SimpleString):
        return _string_kind(target) is not Kind.ACCEL
    if isinstance(target, cst.Call) and (flow._qualified(target.func) == "torch.device"):
        return bool(target.args) and isinstance(target.args[0].value, cst.SimpleString) and _string_kind(target.args[0].value) is Kind.CPU
    return False


def join(a: Kind, b: Kind) -> Kind:
    """Either value: what a name assigned in two places, or ``x if c else y``, holds."""
    if a is b:
        return a
    pair = {a, b}
    if Kind.DEVICE in pair:
        return Kind.DEVICE
    if pair <= {Kind.ACCEL, Kind.CPU, Kind.UNKNOWN}:
        return Kind.ACCEL if Kind.ACCEL in pair else Kind.UNKNOWN
    if Kind.MODULE in pair:
        return Kind.MODULE
    if pair == {Kind.HOST, Kind.HOST_TENSOR}:
        return Kind.HOST_TENSOR
    return Kind.UNKNOWN


def join_all(kinds: Iterable[Kind]) -> Kind:
    result: Optional[Kind] = None
    for kind in kinds:
        result = kind if result is None else join(result, kind)
    return Kind.UNKNOWN if result is None else result


def arithmetic(a: Kind, b: Kind) -> Kind:
    """The result of ``a + b`` / ``a < b``: on the device if either operand is."""
    if Kind.DEVICE in (a, b):
        return Kind.DEVICE
    if {a, b} <= {Kind.HOST, Kind.HOST_TENSOR}:
        return Kind.HOST_TENSOR if Kind.HOST_TENSOR in (a, b) else Kind.HOST
    return Kind.UNKNOWN
