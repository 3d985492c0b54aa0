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

Cost: every expression is evaluated at most once (memoized), a name's
bindings are kept in source order and the one reaching a use is found by
bisection, and evaluation depth is bounded, so a file of any shape costs
time linear in its size (a chain of 10,000 rebindings of one name is
resolved one binding at a time, not 10,000 frames deep).
"""

from __future__ import annotations

import ast
import bisect
import enum
import re
from typing import Dict, Iterable, List, Optional, Set, Tuple, Union

from mpslint.analysis.branches import Branches
from mpslint.analysis.syntax import dotted_name, keyword, last_name, positional
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
HOST_METHODS = frozenset(
    "item tolist numpy size dim ndimension numel nelement element_size is_contiguous get_device data_ptr "
    "stride storage_offset is_floating_point is_complex __len__ __repr__ __str__ __format__".split()
)
# Methods of a module that return the module itself.
MODULE_METHODS = frozenset("eval train to cuda cpu float half double bfloat16 requires_grad_ apply to_empty share_memory".split())
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
NO_GRAD = ("no_grad", "inference_mode")
# A prefilter group (Rule.REQUIRES) for rules that need a value on the accelerator: this analysis
# says DEVICE only through `.to(`, `.cuda(`, a placed module, a `.backward()` graph,
# `device=`/`.device`/names like `dev`, `*_device`, or a string literal starting with a device
# type ("cuda:0", 'mps', "xla").
DEVICE_EVIDENCE = ("backward", "to(", "to_empty", "cuda", "prepare", "dev") + tuple(
    quote + device for device in ("mps", "xpu", "npu", "hpu", "xla", "meta") for quote in "\"'"
)
# Calls that move something onto a device (DeviceFlow.places_on_a_device).
MOVES = frozenset(("to", "cuda", "to_empty", "prepare", "prepare_model"))
# Device types that hold data on an accelerator (`meta` is a device too, with no data).
ACCELERATOR_TYPES = frozenset(("cuda", "mps", "xpu", "npu", "hpu", "xla"))

# Deeper than this, an expression's kind is unknown: real code never nests evaluation this deep,
# generated chains of distinct names would otherwise overflow the stack.
MAX_DEPTH = 120

_CALL, _NAME, _ATTRIBUTE = ast.Call, ast.Name, ast.Attribute


class Binding:
    """One way a name gets its value in a scope."""

    __slots__ = ("end", "how", "value", "path", "function", "scope", "site")

    def __init__(self, end: int, how: str, value: Optional[ast.AST] = None, path: Tuple[Union[int, str], ...] = (),
                 function: Optional[ast.AST] = None) -> None:
        self.end = end  # tree index after which the binding is visible
        self.how = how  # "assign" | "aug" | "for" | "param" | "other"
        self.value = value  # the assigned expression / iterable / AugAssign / parameter (ast.arg)
        self.path = path  # tuple-unpacking path into value
        self.function = function  # for "param": the function or lambda
        self.scope: Optional[Scope] = None  # set when bound
        self.site: Optional[ast.AST] = None  # the target (or definition) that binds the name

    def __repr__(self) -> str:
        return f"Binding({self.end}, {self.how!r})"


class DeviceFlow:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree: Tree = ctx.tree
        self._bindings: Optional[Dict[Scope, Dict[str, List[Binding]]]] = None
        self._ends: Dict[Tuple[Scope, str], List[int]] = {}  # the bindings' ends, for bisection
        self._graph: Optional[Dict[Scope, Set[str]]] = None
        self._places: Optional[bool] = None
        # (class, attribute) -> the assignments `self.<attribute> = value` in the class's methods
        self._attributes: Dict[Tuple[ast.AST, str], List[Tuple[int, ast.AST, ast.AST]]] = {}
        self.placed: Set[str] = set()  # every name placed somewhere in the file
        self.placed_in: Dict[Scope, Dict[str, List[int]]] = {}  # scope -> name -> where it is placed
        self.to_cpu_in: Dict[Scope, Dict[str, List[int]]] = {}  # scope -> name -> where it moves back to the CPU
        self.prepared: Set[str] = set()  # names returned by accelerator.prepare(...)
        self.nn_objects: Set[str] = set()  # names bound to torch.nn.X(...) instances
        self.no_grad_functions: Set[ast.AST] = set()
        # Calls of functions by simple name (``f(...)``, ``self.f(...)`` -> is_method).
        self.calls: Dict[str, List[Tuple[ast.Call, bool]]] = {}
        self.device_names: List[str] = []
        self._memo: Dict[ast.AST, Kind] = {}
        self._busy: Set[ast.AST] = set()
        self._binding_memo: Dict[Tuple[Binding, str], Kind] = {}
        self._depth = 0
        self._collect()

    # ------------------------------------------------------------------ queries

    @property
    def bindings(self) -> Dict[Scope, Dict[str, List[Binding]]]:
        """Scope -> name -> how the name gets its values there (collected on first need)."""
        if self._bindings is None:
            self._bindings = {}
            self._collect_bindings()
        return self._bindings

    @property
    def places_on_a_device(self) -> bool:
        """The file shows some way onto an accelerator besides ``.backward()``.

        A loss lives where its model does, but in a script that never names a
        device, moves nothing and prepares nothing (a CPU tutorial), the model
        is on the CPU and so is the loss.
        """
        if self._places is None:
            self._places = bool(self.placed) or self._code_names_a_device()
        return self._places

    def _code_names_a_device(self) -> bool:
        """In the code, not its comments: a move (``.to(``, ``.cuda(``, ``prepare(``), a ``device=``, a
        name like ``device``/``dev``/``*_device``, Accelerate's ``accelerator``, or a device string."""
        tree = self.tree
        for call in tree.of_type(_CALL):
            func = call.func  # type: ignore[attr-defined]
            if type(func) is _ATTRIBUTE and func.attr in MOVES:
                return True
            if any(item.arg == "device" for item in call.keywords):  # type: ignore[attr-defined]
                return True
        for name in tree.of_type(_NAME):
            if DEVICE_NAME.match(name.id) or name.id == "accelerator":  # type: ignore[attr-defined]
                return True
        for attribute in tree.of_type(_ATTRIBUTE):
            if DEVICE_NAME.match(attribute.attr) or attribute.attr == "accelerator":  # type: ignore[attr-defined]
                return True
        for constant in tree.of_type(ast.Constant):
            value = constant.value  # type: ignore[attr-defined]
            if type(value) is str and value.split(":")[0] in ACCELERATOR_TYPES:
                return True
        return False

    @property
    def graph(self) -> Dict[Scope, Set[str]]:
        """Scope -> names a ``.backward()`` starts from (and what they were read from), on first need."""
        if self._graph is None:
            self._graph = {}
            for call in self._backward_calls:
                self._collect_backward(call)
        return self._graph

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

    def is_placed(self, callee: ast.AST) -> bool:
        """``callee(...)`` runs a module that lives on the accelerator."""
        return self.kind(callee) in (Kind.MODULE, Kind.DEVICE)

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

    def visible(self, name: str, use: ast.AST) -> List[Binding]:
        """The bindings that can reach ``use``: the latest one before it, else all of them."""
        tree = self.tree
        start = tree.index(use)
        if start < 0:
            start = 0
        home = tree.scope_of(use)
        scope = home
        while True:
            found = self.bindings.get(scope, {}).get(name)
            if found:
                if scope is home:
                    ends = self._ends[(scope, name)]
                    before = bisect.bisect_left(ends, start)
                    if before:
                        reaching = self.ctx.analysis(Branches).reaching(found, ends, use, _joins_nothing)
                        if reaching:
                            latest = max(reaching, key=lambda b: b.end)
                            return reaching + [b for b in self._carried(found, latest, use, scope, ends) if b not in reaching]
                return list(found)
            if scope is tree.module:
                return []
            scope = tree.scope_of(scope)

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

    def dtype_value(self, node: ast.AST, depth: int = 0) -> Optional[str]:
        """The dtype a name or attribute chain holds (``torch.float64``), following assignments; None if unknown."""
        qualified = self._qualified(node)
        if qualified is not None and names_a_dtype(qualified) and qualified.startswith("torch."):
            return qualified
        if type(node) is not _NAME or depth > 4:
            return None
        values = [b.value for b in self.visible(node.id, node) if b.how == "assign" and not b.path]  # type: ignore[attr-defined]
        found = {self.dtype_value(v, depth + 1) for v in values if v is not None}
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

    def is_placed_name(self, name: str, use: ast.AST) -> bool:
        """``name`` at ``use`` is a placed module: placed in this function, or a parameter/global placed elsewhere.

        A function that builds its own ``model = Net()`` and never moves it has an unplaced model, whatever
        other functions of the file do with their ``model``.
        """
        if name not in self.placed:
            return False
        tree = self.tree
        scope = tree.scope_of(use)
        here = self.placed_in.get(scope, {}).get(name)
        if here:
            at = max(tree.index(use), 0)
            if here[0] >= at:
                return False  # calls before `model.to(device)` run on the CPU
            # `model.to("cpu")` / `model.cpu()` after the last placement: the outputs are on the host again
            last = max(i for i in here if i < at)
            return not any(last < i < at for i in self.to_cpu_in.get(scope, {}).get(name, ()))
        if "." in name:
            return True  # self.model: shared by the methods of a class
        local = self.bindings.get(scope, {}).get(name, ())
        return not any(b.how != "param" for b in local) or scope is tree.module

    # ------------------------------------------------------------- collection

    def _collect(self) -> None:
        """Placements and calls by name, from the tree's per-class node lists (bindings wait for a question)."""
        tree = self.tree
        for node in tree.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            for decorator in node.decorator_list:  # type: ignore[attr-defined]
                name = self._qualified(decorator.func if type(decorator) is _CALL else decorator) or ""
                if name.endswith(NO_GRAD):
                    self.no_grad_functions.add(node)
        calls: List[ast.Call] = tree.of_type(_CALL)  # type: ignore[assignment]
        # Placements in source order: whether `model2 = model.to(device)` places a module depends on what was
        # placed before it.
        events: List[Tuple[int, ast.AST]] = []
        for node in tree.of_type(ast.Assign):
            if type(node.value) is _CALL:  # type: ignore[attr-defined]
                events.append((tree.index(node), node))
        parent_of = tree.parent
        self._backward_calls: List[ast.Call] = []
        uses: Dict[str, int] = {}  # names used as a device: `.to(NAME)`, `device=NAME`
        for call in calls:
            func = call.func
            if type(func) is _ATTRIBUTE:
                method = func.attr
                if method in ("to", "cuda", "to_empty", "cpu"):
                    if type(parent_of(call)) is ast.Expr:
                        events.append((tree.index(call), call))
                    if method == "to" and call.args:
                        first = call.args[0]
                        first = first.value if type(first) is ast.Starred else first
                        if type(first) is _NAME:
                            uses[first.id] = uses.get(first.id, 0) + 1  # type: ignore[attr-defined]
                elif method == "backward":
                    self._backward_calls.append(call)
                if type(func.value) is _NAME and func.value.id == "self":
                    self.calls.setdefault(method, []).append((call, True))
            elif type(func) is _NAME:
                self.calls.setdefault(func.id, []).append((call, False))
            if call.keywords:
                for item in call.keywords:
                    if item.arg == "device" and type(item.value) is _NAME:
                        uses[item.value.id] = uses.get(item.value.id, 0) + 1  # type: ignore[attr-defined]
        events.sort(key=lambda event: event[0])
        for _, node in events:
            if type(node) is ast.Assign:
                self._note_placement(node)  # type: ignore[arg-type]
            else:
                name = dotted_name(node.func.value)  # type: ignore[attr-defined]
                if not name:
                    continue
                if node.func.attr == "cpu" or _targets_the_cpu(node, self):  # type: ignore[attr-defined]
                    self._note_cpu(name, node)
                elif not moves_to_cpu(node, self):  # type: ignore[arg-type]
                    self._place(name, node)
        for places in self.placed_in.values():
            for spots in places.values():
                spots.sort()
        self.device_names = sorted(uses, key=lambda n: -uses[n])  # most used first

    def _collect_bindings(self) -> None:
        tree = self.tree
        end, of_type = tree.end, tree.of_type
        for node in of_type(ast.Assign):
            stop = end(node)
            for target in node.targets:  # type: ignore[attr-defined]
                self._bind_target(target, stop, "assign", node.value, ())  # type: ignore[attr-defined]
        for node in of_type(ast.AnnAssign):
            if node.value is not None:  # type: ignore[attr-defined]
                self._bind_target(node.target, end(node), "assign", node.value, ())  # type: ignore[attr-defined]
        for node in of_type(ast.AugAssign):
            self._bind_target(node.target, end(node), "aug", node, ())  # type: ignore[attr-defined]
        for node in of_type(ast.For, ast.AsyncFor):
            self._bind_target(node.target, end(node.target), "for", node.iter, ())  # type: ignore[attr-defined]
        for node in of_type(ast.Assign):
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target) is _ATTRIBUTE and type(target.value) is _NAME and target.value.id == "self":
                    owner = _class_of(tree, node)
                    if owner is not None:
                        method = tree.scope_of(node)
                        self._attributes.setdefault((owner, target.attr), []).append((end(node), method, node.value))  # type: ignore[attr-defined]
        for rows in self._attributes.values():
            rows.sort(key=lambda row: row[0])
        for node in of_type(ast.comprehension):
            # `{k: v.item() for k, v in losses.items()}`: the target holds the iterable's elements.
            self._bind_target(node.target, end(node.target), "for", node.iter, ())  # type: ignore[attr-defined]
        for node in of_type(ast.NamedExpr):
            self._bind_target(node.target, end(node), "assign", node.value, ())  # type: ignore[attr-defined]
        for node in of_type(ast.withitem):
            if node.optional_vars is not None:  # type: ignore[attr-defined]
                self._bind_target(node.optional_vars, end(node), "other", None, ())  # type: ignore[attr-defined]
        for node in of_type(ast.Lambda):
            self._bind_params(node)
        for node in of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            self._bind_params(node)
            self._bind(tree.scope_of(node), node.name, Binding(tree.index(node), "other"), node)  # type: ignore[attr-defined]
        # Bindings in source order of their ends, for bisection in `visible`.
        for scope, names in self.bindings.items():
            for name, found in names.items():
                found.sort(key=lambda b: b.end)
                self._ends[(scope, name)] = [b.end for b in found]

    def _bind(self, scope: Scope, name: str, binding: Binding, site: Optional[ast.AST] = None) -> None:
        binding.scope = scope
        binding.site = site
        self._bindings.setdefault(scope, {}).setdefault(name, []).append(binding)

    def _bind_target(self, target: ast.AST, end: int, how: str, value, path) -> None:
        cls = type(target)
        if cls is _NAME:
            self._bind(self.tree.scope_of(target), target.id, Binding(end, how, value, path), target)  # type: ignore[attr-defined]
        elif cls is ast.Tuple or cls is ast.List:
            for i, element in enumerate(target.elts):  # type: ignore[attr-defined]
                if type(element) is ast.Starred:
                    self._bind_target(element.value, end, how, value, path + ("*",))
                else:
                    self._bind_target(element, end, how, value, path + (i,))

    def _bind_params(self, function) -> None:
        start = self.tree.index(function)
        for param in _all_parameters(function):
            self._bind(function, param.arg, Binding(start, "param", param, function=function))

    def _note_placement(self, node: ast.Assign) -> None:
        value = node.value
        targets = node.targets
        if type(value) is _CALL and type(value.func) is _ATTRIBUTE:
            method = value.func.attr
            receiver = value.func.value
            if method == "cpu" or (method == "to" and _targets_the_cpu(value, self)):
                # `model = model.cpu()`: that name's module is on the host from here
                for target in targets:
                    name = dotted_name(target)
                    if name and name == dotted_name(receiver):
                        self._note_cpu(name, node)
            if method in ("to", "cuda") and not moves_to_cpu(value, self):
                if self._is_module_expression(receiver):
                    for target in targets:
                        name = dotted_name(target)
                        if name:
                            self._place(name, node)
            if method == "prepare":
                for target in targets:
                    elements = target.elts if type(target) in (ast.Tuple, ast.List) else [target]  # type: ignore[attr-defined]
                    for element in elements:
                        name = dotted_name(element)
                        if not name:
                            continue
                        self.prepared.add(name)
                        if MODULE_LIKE.search(name.rsplit(".", 1)[-1]) and "loss" not in name.lower():
                            self._place(name, node)
        if type(value) is _CALL and (last_name(value.func) or "")[:1].isupper():
            qualified = self._qualified(value.func) or ""
            if qualified.startswith("torch.nn."):
                for target in targets:
                    name = dotted_name(target)
                    if name:
                        self.nn_objects.add(name)

    def _is_module_expression(self, receiver: ast.AST, depth: int = 0) -> bool:
        """``Net()`` / ``models.resnet18()`` / a placed name: a module, not a tensor."""
        if depth > 6:
            return False  # `x = x.to(device)` in a loop: the name's value is itself
        if type(receiver) is _CALL:
            func = receiver.func  # type: ignore[attr-defined]
            qualified = self._qualified(func) or dotted_name(func) or ""
            if qualified.startswith("torch.") and not qualified.startswith("torch.nn."):
                return False
            if type(func) is _ATTRIBUTE and func.attr in ("to", "cuda", "float", "half", "eval", "train"):
                return self._is_module_expression(func.value, depth + 1)
            if self._is_instance(func):
                return False  # `model(x)`: a module's forward returns tensors
            return builds_module(qualified)
        name = dotted_name(receiver)
        if name is None:
            return False
        if name in self.placed:
            return True
        if type(receiver) is _NAME:
            # `vae = vae.to(device)`: a module if the name held one (`vae = AutoencoderKL.from_pretrained(...)`),
            # or is a parameter named like one (`def generate(vae, ...)`).
            bindings = self.visible(name, receiver)
            held = [b for b in bindings if b.how == "assign" and not b.path and b.value is not None]
            if held:
                return all(type(b.value) is _CALL and self._is_module_expression(b.value, depth + 1) for b in held)
            return bool(bindings) and all(b.how == "param" for b in bindings) and bool(MODULE_LIKE.search(name)) \
                and "loss" not in name.lower() and "criterion" not in name.lower()
        return False

    def _is_instance(self, func: ast.AST) -> bool:
        """A callee that is a value (a placed module, a variable or parameter), not a class or factory function."""
        name = dotted_name(func)
        if name is None:
            return False
        if name in self.placed:
            return True
        if type(func) is not _NAME:
            return False
        return any(b.how in ("assign", "param", "for", "aug") for b in self.visible(func.id, func))  # type: ignore[attr-defined]

    def _collect_backward(self, call: ast.Call) -> None:
        """The tensor a ``.backward()`` starts from is on the device: a loss lives where the model does."""
        func = call.func
        scope = self.tree.scope_of(call)
        values = positional(call)
        if values:
            # accelerator.backward(loss) / torch.autograd.backward(loss)
            if type(values[0]) is _NAME:
                self._add_graph(scope, values[0].id, call)  # type: ignore[attr-defined]
            return
        receiver = func.value  # type: ignore[attr-defined]
        if type(receiver) is _CALL and type(receiver.func) is _ATTRIBUTE and receiver.func.attr == "scale":
            scaled = _arguments(receiver)
            if scaled:
                receiver = scaled[0]
        if type(receiver) is _NAME:
            self._add_graph(scope, receiver.id, call)

    def _place(self, name: str, at: ast.AST) -> None:
        self.placed.add(name)
        self.placed_in.setdefault(self.tree.scope_of(at), {}).setdefault(name, []).append(self.tree.index(at))

    def _note_cpu(self, name: str, at: ast.AST) -> None:
        self.to_cpu_in.setdefault(self.tree.scope_of(at), {}).setdefault(name, []).append(self.tree.index(at))

    def _add_graph(self, scope: Scope, name: str, call: ast.AST) -> None:
        names = self._graph.setdefault(scope, set())  # type: ignore[union-attr]
        if name in names:
            return
        names.add(name)
        # loss = outputs.loss / outputs[0]: the outputs are on the device too.
        before = self.tree.index(call)
        for binding in self.bindings.get(scope, {}).get(name, ()):
            if binding.end >= before:
                break
            value = binding.value
            if binding.how == "assign" and not binding.path and type(value) in (_ATTRIBUTE, ast.Subscript):
                base = value.value  # type: ignore[union-attr]
                if type(base) is _NAME:
                    names.add(base.id)

    # ------------------------------------------------------------- evaluation

    def _qualified(self, node: ast.AST) -> Optional[str]:
        return self.ctx.qualify(node)

    def _carried(self, found: List[Binding], latest: Binding, use: ast.AST, scope: Scope, ends: List[int]) -> List[Binding]:
        """Assignments later in a loop around ``use`` reach it on the next iteration."""
        tree = self.tree
        start = tree.index(use)
        carried: List[Binding] = []
        for loop in enclosing_loops(tree, use):
            if loop is scope:
                break
            first, last = tree.index(loop), tree.end(loop)
            if first <= latest.end <= last:
                break  # the loop rebinds the name before the use on every iteration
            carried += found[bisect.bisect_right(ends, start):bisect.bisect_right(ends, last)]
        return carried

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
            return Kind.DEVICE if element is Kind.DEVICE else Kind.UNKNOWN
        value = binding.value
        for step in binding.path:
            if type(value) in (ast.Tuple, ast.List) and isinstance(step, int) and step < len(value.elts):  # type: ignore[attr-defined]
                element = value.elts[step]  # type: ignore[attr-defined]
                value = element.value if type(element) is ast.Starred else element
            else:
                inner = self.kind(value)
                return inner if inner in (Kind.DEVICE, Kind.HOST_TENSOR, Kind.HOST) else Kind.UNKNOWN
        return self.kind(value)

    def _resolve_earlier(self, binding: Binding, name: str) -> None:
        """Deep in a chain (``x = f(x)`` repeated): resolve this name's earlier bindings first, in order,
        so that each step of the chain finds the previous one already known."""
        for earlier in self.bindings.get(binding.scope, {}).get(name, ()):  # type: ignore[arg-type]
            if earlier is binding or earlier.end >= binding.end:
                break
            if (earlier, name) not in self._binding_memo:
                self.kind_of_binding(earlier, name)

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


def _joins_nothing(statement: ast.AST) -> bool:
    """``if device != "cpu": x = x.cpu()``: a branch that runs exactly when the value would be on the device.

    After an ``if`` that tests where data lives, the branch's assignment wins: joining it with the value before
    the ``if`` would say "maybe on the device" of a value that never is.
    """
    if type(statement) is not ast.If:
        return False
    for node in ast.walk(statement.test):  # type: ignore[attr-defined]
        cls = type(node)
        if cls is ast.Constant and isinstance(node.value, str) and string_kind(node.value) is not Kind.HOST:  # type: ignore[attr-defined]
            return True
        if cls is _ATTRIBUTE and node.attr in ("is_cuda", "is_mps", "is_cpu", "type", "device"):  # type: ignore[attr-defined]
            return True
    return False


def _class_of(tree: Tree, node: ast.AST) -> Optional[ast.AST]:
    """The class whose method ``node`` is in (directly: not a function nested in a method)."""
    return tree.inherited("class", node, _class_step, None)


def _class_step(parent: ast.AST, child: ast.AST, above):
    if type(parent) is ast.ClassDef:
        return parent if type(child) in (ast.FunctionDef, ast.AsyncFunctionDef) else None
    return above


def enclosing_loops(tree: Tree, node: ast.AST) -> Tuple[ast.AST, ...]:
    """The ``for``/``while`` loops around ``node``, innermost first, up to its function."""
    parent = tree.parent(node)
    if parent is None:
        return ()
    return tree.inherited("loops", node, _loops_step, ())


def _loops_step(parent: ast.AST, child: ast.AST, above: Tuple[ast.AST, ...]) -> Tuple[ast.AST, ...]:
    cls = type(parent)
    if cls in (ast.For, ast.While, ast.AsyncFor):
        return (parent, *above)
    if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
        return (parent,)  # the scope ends the search (`visible` stops there)
    return above


def builds_module(callee: str) -> bool:
    """A call of ``callee`` (qualified where it can be) returns a module: ``Net()``, ``resnet18()``, ``from_pretrained``."""
    last = callee.rsplit(".", 1)[-1]
    return (
        last[:1].isupper()
        or last == "from_pretrained"
        or bool(MODULE_LIKE.search(last))
        or callee.startswith(("torchvision.models", "timm"))
    )


def string_kind(value: object) -> Kind:
    """A literal's kind: ``"cpu"`` a CPU device, ``"cuda:0"``/``"mps"`` an accelerator, anything else a host value."""
    if not isinstance(value, str):
        return Kind.HOST
    device = value.split(":", 1)[0]
    if device == "cpu":
        return Kind.CPU
    if (device in ACCELERATOR_TYPES or device == "meta") and value == value.strip():
        return Kind.ACCEL
    return Kind.HOST


def names_a_dtype(name: str) -> bool:
    """``name`` (qualified where it can be) is a dtype: ``torch.float64``, ``self.dtype``, ``compute_dtype``."""
    last = name.rsplit(".", 1)[-1]
    if name.startswith("torch.") and last in DTYPES:
        return True
    return "dtype" in last.lower()


def moves_to_cpu(call: ast.Call, flow: DeviceFlow) -> bool:
    """``.to(...)`` whose target is the CPU, or only a dtype (not a placement)."""
    if call.func.attr == "cuda":  # type: ignore[attr-defined]
        return False
    target = flow.to_target(call)
    if target is None:
        return True  # only a dtype: not a placement
    if type(target) is ast.Constant and isinstance(target.value, (str, bytes)):  # type: ignore[attr-defined]
        return string_kind(target.value) is not Kind.ACCEL  # type: ignore[attr-defined]
    if type(target) is _CALL and flow._qualified(target.func) == "torch.device":  # type: ignore[attr-defined]
        args = _arguments(target)  # type: ignore[arg-type]
        return bool(args) and type(args[0]) is ast.Constant and isinstance(args[0].value, (str, bytes)) \
            and string_kind(args[0].value) is Kind.CPU  # type: ignore[attr-defined]
    return False


def _targets_the_cpu(call: ast.Call, flow: DeviceFlow) -> bool:
    """``.to("cpu")`` / ``.to(torch.device("cpu"))``: a move to the host (not a dtype-only ``.to``)."""
    return call.func.attr == "to" and flow.to_target(call) is not None and moves_to_cpu(call, flow)  # type: ignore[attr-defined]


def _arguments(call: ast.Call) -> List[ast.AST]:
    """Every argument value (positional, starred, keyword), in source order."""
    return [a.value if type(a) is ast.Starred else a for a in call.args] + [k.value for k in call.keywords]


def _all_parameters(function) -> List[ast.arg]:
    args = function.args
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


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
