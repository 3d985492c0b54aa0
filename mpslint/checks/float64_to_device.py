"""float64 data moved to or created on the device (see ``rules/MPS303.md``)."""

from __future__ import annotations

import ast
import os
import re
from typing import Optional, Set, Tuple

from mpslint.analysis.device_flow import DeviceFlow, Kind
from mpslint.analysis.project import facts
from mpslint.analysis.syntax import dotted_name, first_argument, keyword, last_name, method_name, positional
from mpslint.checks.base import (
    FixSpec,
    Rule,
    attribute_dot,
    attribute_name_start,
    insert_after,
    insert_before,
    replace_span,
    short,
)
from mpslint.checks.rewriting import torch_name

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


# A numpy random generator's methods that make float64 unless told a dtype.
RANDOM_FLOAT64 = frozenset("rand randn random random_sample normal uniform standard_normal".split())
NUMPY_GENERATORS = frozenset(("numpy.random.RandomState", "numpy.random.default_rng", "numpy.random.Generator"))

# A gym environment by its name (`env`, `eval_env`, `self.env`, `envs`), and the signs of image observations.
_ENV = re.compile(r"(^|_)envs?$")
_IMAGES = re.compile(r"uint8|[Aa]tari|NoFrameskip|\b255\b|[Ff]rame[Ss]tack|[Pp]ixel")
# Classic-control and Box2D environments: their observations are float32 in gym >= 0.22 and in gymnasium
# (MuJoCo's stay float64), so a file that names one says nothing certain about the dtype.
_FLOAT32_ENVS = re.compile(r"CartPole|Acrobot|MountainCar|Pendulum-|LunarLander|BipedalWalker|CarRacing")

FROM_ARRAY = frozenset(("torch.from_numpy", "torch.tensor", "torch.as_tensor", "torch.asarray"))


def _from_a_tensor(node: ast.AST) -> bool:
    """``x.numpy()``, ``x.detach().cpu().numpy()``: an array whose dtype is a tensor's."""
    return method_name(node) == "numpy"


def _numpy_call(ctx, node: ast.AST) -> bool:
    """``np.<anything>(...)``: an array (or a numpy scalar)."""
    return type(node) is ast.Call and (ctx.qualify(node.func) or "").startswith("numpy.")  # type: ignore[attr-defined]


class Float64ToDevice(Rule):
    # numpy: its float arrays are float64 without the word in the file (`np.array([0.5])`, `np.zeros(3)`);
    # a gym environment's observations too (`obs, reward, done, info = env.step(a)`).
    # A DataLoader's batches are float64 where its dataset's items are (the dataset may be another module's).
    TRIGGERS = ("float64", "double", "numpy", "env.step", "env.reset", "envs.step", "envs.reset", "DataLoader")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._defaults_reported: Set[Tuple[object, str]] = set()

    @property
    def flow(self) -> DeviceFlow:
        return self.ctx.analysis(DeviceFlow)

    def visit_Call(self, node: ast.Call) -> None:
        qualified = self.ctx.qualify(node.func) or ""
        method = method_name(node) if not qualified else None
        if qualified == "torch.set_default_dtype":
            self._default_dtype(node)
        elif qualified.startswith("torch.") and keyword(node, "device") is not None:
            # Whether the device is the CPU is asked last: `device=x.device` follows `x` through the file.
            dtype = keyword(node, "dtype")
            if dtype is not None and self._is_float64(dtype):
                if self._on_the_cpu(node):
                    return
                if self.flow.dtype_value(dtype) in FLOAT64_DTYPES:
                    self._report(node, "creates a float64 tensor on the device", self._dtype_fix(dtype))
                else:
                    self._by_default(node, dtype)
            elif dtype is None and qualified in FROM_ARRAY and self._float64_array_argument(node) \
                    and not self._on_the_cpu(node):
                self._report(node, "creates a float64 tensor on the device from a float64 numpy array",
                             self._float32_keyword(node))
        elif method == "double" and not node.args and not node.keywords:
            if self.flow.is_device(node.func.value):  # type: ignore[attr-defined]
                start = attribute_name_start(self.ctx, node.func)  # type: ignore[arg-type]
                fix = FixSpec.unsafe("Use `.float()` (float32)", replace_span(start, node.func, "float"))
                self._report(node, "makes a float64 tensor on the device", fix, device=True)
        elif method in ("to", "type"):
            self._to(node, method)
        elif method == "cuda" and self._from_numpy_float64(node.func.value):  # type: ignore[attr-defined]
            self._report(node, "moves float64 data to the device", self._cast_first(node))

    def _on_the_cpu(self, node: ast.Call) -> bool:
        return self.flow.is_cpu(keyword(node, "device"))  # type: ignore[arg-type]

    def _by_default(self, node: ast.Call, dtype: ast.AST, verb: str = "creates") -> None:
        """A dtype that is float64 through a parameter's default (torchdiffeq's solvers: ``dtype=torch.float64``,
        then ``torch.promote_types(dtype, y0.dtype)`` for every time-like tensor): reported once per function and
        name, where the first tensor is made; no fix (the default is the author's choice of precision for every
        device)."""
        key = (self.ctx.tree.scope_of(node), self.ctx.text(dtype))
        if key in self._defaults_reported:
            return
        self._defaults_reported.add(key)
        self._report(node, f"{verb} a float64 tensor on the device: `{short(self.ctx, dtype)}` is float64 unless the "
                           "caller passes another dtype (a parameter's default)", None)

    def _float32_keyword(self, node: ast.Call) -> Optional[FixSpec]:
        """``torch.tensor(array, device=d)`` -> ``torch.tensor(array, dtype=torch.float32, device=d)``."""
        torch = torch_name(self.ctx)
        if torch is None or not node.args or type(node.args[0]) is ast.Starred:
            return None
        return FixSpec.unsafe("Make it float32 (`dtype=torch.float32`)",
                              insert_after(node.args[0], f", dtype={torch}.float32"))

    def _cast_first(self, node: ast.Call) -> FixSpec:
        receiver = node.func.value  # type: ignore[attr-defined]
        if method_name(receiver) == "double" and not receiver.args and not receiver.keywords:  # type: ignore[attr-defined]
            start = attribute_name_start(self.ctx, receiver.func)  # type: ignore[attr-defined]
            return FixSpec.unsafe("Use `.float()` (float32)", replace_span(start, receiver.func, "float"))  # type: ignore[attr-defined]
        dot = attribute_dot(self.ctx, node.func)  # type: ignore[arg-type]
        return FixSpec.unsafe("Cast to float32 with `.float()` first", insert_before(dot, ".float()"))

    def _to(self, node: ast.Call, method: str) -> None:
        flow = self.flow
        dtype = keyword(node, "dtype")
        if dtype is None:
            dtype = next((v for v in positional(node) if flow.is_dtype(v)), None)
        if dtype is not None:
            if self._is_float64(dtype) and flow.is_device(node):
                if flow.dtype_value(dtype) in FLOAT64_DTYPES:
                    self._report(node, "makes a float64 tensor on the device", self._dtype_fix(dtype), device=True)
                else:
                    self._by_default(node, dtype, "makes")
            return
        if method != "to":
            return
        receiver = node.func.value  # type: ignore[attr-defined]
        if type(receiver) is ast.Name and flow.kind(receiver) is Kind.MODULE:
            target = flow.to_target(node)
            if target is not None and flow.kind(target) is Kind.ACCEL and self._module_made_float64(receiver, node):
                self._report(node, f"moves `{receiver.id}`, made float64 above, to the device", self._cast_first(node))
            return
        # Float64 host data first: few `.to()` calls move any, and the device questions follow names
        # through the file.
        if not self._from_numpy_float64(receiver):
            return
        if not flow.is_device(node) or flow.is_device(receiver):
            return  # not a move to the device, or already on it: this .to() is not the transfer
        self._report(node, "moves float64 data to the device", self._cast_first(node))

    def _is_float64(self, dtype: ast.AST) -> bool:
        return self.flow.dtype_value(dtype, defaults=True) in FLOAT64_DTYPES

    def _names_float64(self, target: ast.AST) -> bool:
        """What ``.type(target)`` makes: ``torch.float64``, ``torch.DoubleTensor`` or ``"torch.DoubleTensor"``."""
        if type(target) is ast.Constant:
            return target.value in ("torch.DoubleTensor", "torch.cuda.DoubleTensor")  # type: ignore[attr-defined]
        return self._is_float64(target) or self.ctx.qualify(target) in ("torch.DoubleTensor", "torch.cuda.DoubleTensor")

    def _module_made_float64(self, name: ast.Name, move: ast.Call) -> bool:
        """``model.double()`` (or ``.to(torch.float64)``, ``.type(torch.float64)``) as a statement before this
        ``model.to(device)`` in the same scope, with no cast back to another dtype between: a module converts
        its parameters in place (a tensor's ``x.double()`` alone changes nothing, so only modules count)."""
        casts = self._in_place_casts().get((self.ctx.tree.scope_of(move), name.id), ())
        here = self.ctx.tree.index(move)
        earlier = [float64 for index, float64 in casts if index < here]
        if earlier:
            return earlier[-1]
        # `model = Net().to(torch.float64)`, then moved (not `Net().double().to(device)`: moved there already).
        value = self.flow.assigned_value(name)
        if value is None:
            return False
        if method_name(value) == "cuda" or (method_name(value) == "to" and self.flow.to_target(value) is not None):  # type: ignore[arg-type]
            return False
        return self._from_numpy_float64(value)

    def _in_place_casts(self):
        """(scope, name) -> [(tree index, whether it makes float64)] of ``name.<cast>(...)`` statements."""
        found = self.__dict__.get("_casts")
        if found is None:
            found = self.__dict__["_casts"] = {}
            tree = self.ctx.tree
            for statement in tree.of_type(ast.Expr):
                call = statement.value  # type: ignore[attr-defined]
                method = method_name(call)
                if method is None or type(call.func.value) is not ast.Name:  # type: ignore[attr-defined]
                    continue
                if method in ("double", "float", "half", "bfloat16") and not call.args:  # type: ignore[attr-defined]
                    float64 = method == "double"
                elif method in ("to", "type"):
                    dtype = keyword(call, "dtype")
                    if dtype is None:
                        dtype = next((v for v in positional(call) if self.flow.is_dtype(v)), None)
                    if dtype is None and method == "type" and call.args:  # type: ignore[attr-defined]
                        dtype = call.args[0]  # type: ignore[attr-defined]
                    if dtype is None:
                        continue
                    float64 = self._names_float64(dtype)
                else:
                    continue
                key = (tree.scope_of(statement), call.func.value.id)  # type: ignore[attr-defined]
                found.setdefault(key, []).append((tree.index(statement), float64))
        return found

    def _float64_array_argument(self, call: ast.Call) -> bool:
        """The call's data is a numpy array that may be float64 (torch turns Python floats into float32)."""
        first = first_argument(call)
        if first is None:
            return False
        if self.ctx.qualify(call.func) == "torch.from_numpy":
            return self._may_be_float64_array(first, python_floats=True)  # its argument is an array
        if type(first) in (ast.Constant, ast.List, ast.Tuple, ast.ListComp):
            return False  # `torch.tensor([0.5, 1.0])`: the default dtype, float32
        # `torch.tensor(float(v))`, `torch.tensor(a / b)`: Python floats, float32 too; only numpy makes float64.
        return self._may_be_float64_array(first, python_floats=False)

    def _dtype_fix(self, dtype: ast.AST) -> Optional[FixSpec]:
        if type(dtype) is ast.Attribute:
            start = attribute_name_start(self.ctx, dtype)  # type: ignore[arg-type]
            return FixSpec.unsafe("Use float32", replace_span(start, dtype, "float32"))
        return None

    def _default_dtype(self, node: ast.Call) -> None:
        first = first_argument(node)
        if first is None or not self._is_float64(first):
            return
        flow = self.flow
        if not flow.placed and not flow.device_names:
            return  # a CPU-only script: float64 is its choice
        self._report(node, "makes every new float tensor float64, which MPS cannot hold", self._dtype_fix(first))

    def _from_numpy_float64(self, expr: ast.AST, depth: int = 0) -> bool:
        """``expr`` is ``torch.from_numpy(a)`` (possibly through a name or shape ops) of an array that may be float64."""
        if depth > 8:
            return False
        if type(expr) is ast.Name:
            bindings = self.flow.visible(expr.id, expr)  # type: ignore[attr-defined]
            if len(bindings) == 1 and bindings[0].how == "for":
                return self._float64_batch(bindings[0].value, bindings[0].path)  # type: ignore[arg-type]
            if len(bindings) != 1 or bindings[0].how != "assign" or bindings[0].path:
                return False
            return self._from_numpy_float64(bindings[0].value, depth + 1)  # type: ignore[arg-type]
        if type(expr) is not ast.Call:
            return False
        qualified = self.ctx.qualify(expr.func) or ""  # type: ignore[attr-defined]
        if qualified in FROM_ARRAY:
            # torch.from_numpy keeps the array's dtype; torch.tensor/as_tensor too, unless told a dtype.
            return keyword(expr, "dtype") is None and self._float64_array_argument(expr)  # type: ignore[arg-type]
        if qualified.startswith("torch.") and keyword(expr, "device") is None:  # type: ignore[arg-type]
            dtype = keyword(expr, "dtype")  # type: ignore[arg-type]
            return dtype is not None and self._is_float64(dtype)  # torch.zeros(3, dtype=torch.float64): host data
        method = method_name(expr) if not qualified else None
        if method == "double" and not expr.args:  # type: ignore[attr-defined]
            return True  # `x.double()` on the host, then moved
        if method == "type" and len(expr.args) == 1 and not expr.keywords:  # type: ignore[attr-defined]
            return self._names_float64(expr.args[0])  # type: ignore[attr-defined]  # `x.type(torch.float64)`
        if method is None or method in CASTS:
            return False
        if method == "to":
            dtype = keyword(expr, "dtype")  # type: ignore[arg-type]
            if dtype is None:
                dtype = next((v for v in positional(expr) if self.flow.is_dtype(v)), None)  # type: ignore[arg-type]
            if dtype is not None:
                return self._is_float64(dtype)  # `.to(torch.float64)` makes float64 whatever came in
        if method in PASSTHROUGH:
            return self._from_numpy_float64(expr.func.value, depth + 1)  # type: ignore[attr-defined]
        return False

    def _float64_batch(self, iterable: ast.AST, path: Tuple[object, ...]) -> bool:
        """``x`` of ``for x, y in loader``, where ``loader`` is a ``DataLoader`` of a dataset whose
        ``__getitem__`` returns a float64 array there: the default collate stacks them into a float64 tensor."""
        while type(iterable) is ast.Call and iterable.args:  # type: ignore[attr-defined]
            wrapper = last_name(iterable.func)  # type: ignore[attr-defined]
            if wrapper == "enumerate":
                if not path or path[0] != 1:
                    return False  # the counter
                path = path[1:]
            elif wrapper not in ("tqdm", "iter"):
                break
            iterable = iterable.args[0]  # type: ignore[attr-defined]
        loader = self._assigned(iterable)
        if type(loader) is not ast.Call or last_name(loader.func) != "DataLoader":  # type: ignore[attr-defined]
            return False
        if keyword(loader, "collate_fn") is not None:  # type: ignore[arg-type]
            return False  # batches are whatever that function makes
        dataset = self._assigned(keyword(loader, "dataset") or (loader.args[0] if loader.args else None))  # type: ignore[arg-type,attr-defined]
        if type(dataset) is not ast.Call:
            return False
        cls = dotted_name(dataset.func)  # type: ignore[attr-defined]
        fact = self.ctx.project.class_method(cls, "__getitem__") if cls and self.ctx.project is not None else None
        if fact == facts.FLOAT64:
            return True
        positions = facts.float64_positions(fact)
        return positions is not None and bool(path) and path[0] in positions

    def _assigned(self, expr: Optional[ast.AST]) -> Optional[ast.AST]:
        """What a name holds when one assignment binds it; ``expr`` itself otherwise."""
        if type(expr) is ast.Name:
            return self.flow.assigned_value(expr)
        return expr

    def _may_be_float64_array(self, array: ast.AST, depth: int = 0, *, python_floats: bool) -> bool:
        """Positive evidence that a numpy array is float64: numpy's float defaults, float data, division.

        ``python_floats``: Python floats count (data numpy turns into an array: ``np.array([0.5])``);
        where torch reads them itself (``torch.tensor(0.5)``) they make float32, and only numpy counts.
        """
        if depth > 6:
            return False
        cls = type(array)
        if cls is ast.Name:
            bindings = self.flow.visible(array.id, array)  # type: ignore[attr-defined]
            if not bindings:
                return self.flow.imported_fact(array.id) == facts.FLOAT64  # type: ignore[attr-defined]
            if len(bindings) == 1 and bindings[0].how == "param":
                return self._passed_float64(bindings[0], depth, python_floats)
            return any(
                b.how == "assign" and b.value is not None and (
                    (not b.path and self._may_be_float64_array(b.value, depth + 1, python_floats=python_floats))
                    or (b.path in ((), (0,)) and self._observation(b.value)))
                for b in bindings
            )
        if cls is ast.Constant:
            return python_floats and type(array.value) is float  # type: ignore[attr-defined]
        if cls in (ast.List, ast.Tuple):
            return any(self._may_be_float64_array(e.value if type(e) is ast.Starred else e, depth + 1,
                                                  python_floats=python_floats)
                       for e in array.elts)  # type: ignore[attr-defined]
        if cls in (ast.ListComp, ast.GeneratorExp):
            return self._may_be_float64_array(array.elt, depth + 1, python_floats=python_floats)  # type: ignore[attr-defined]
        if cls is ast.BinOp:
            left, right = array.left, array.right  # type: ignore[attr-defined]
            if _from_a_tensor(left) or _from_a_tensor(right):
                return False  # `x.cpu().numpy() * 0.5`: the array keeps the tensor's dtype
            if type(array.op) is ast.Div and (python_floats or _numpy_call(self.ctx, left) or _numpy_call(self.ctx, right)):  # type: ignore[attr-defined]
                return True  # true division makes floats: float64 in numpy
            return (self._may_be_float64_array(left, depth + 1, python_floats=python_floats)
                    or self._may_be_float64_array(right, depth + 1, python_floats=python_floats))
        if cls is ast.UnaryOp:
            return self._may_be_float64_array(array.operand, depth + 1, python_floats=python_floats)  # type: ignore[attr-defined]
        if cls is not ast.Call:
            return False
        if self.flow.returned_fact(array) == facts.FLOAT64:  # type: ignore[arg-type]
            return True  # a helper (here or in another module) that returns a float64 array
        qualified = self.ctx.qualify(array.func) or ""  # type: ignore[attr-defined]
        dtype = keyword(array, "dtype")  # type: ignore[arg-type]
        if dtype is not None:
            return bool(FLOAT64_DTYPE.search(self.ctx.text(dtype)))  # `dtype=float` is float64 in numpy and torch
        if qualified == "float" or dotted_name(array.func) == "float":  # type: ignore[attr-defined]
            return python_floats
        first = first_argument(array)  # type: ignore[arg-type]
        if qualified.startswith("numpy."):
            function = qualified[len("numpy."):]
            if function in NUMPY_FLOAT64:
                return True
            if function in ("array", "asarray", "stack", "concatenate", "vstack", "hstack") and first is not None:
                return self._may_be_float64_array(first, depth + 1, python_floats=True)
            return False
        if method_name(array) == "astype" and first is not None:
            return bool(FLOAT64_DTYPE.search(self.ctx.text(first)))
        if method_name(array) in RANDOM_FLOAT64 and self._numpy_generator(array.func.value):  # type: ignore[attr-defined]
            return True  # np.random.RandomState(seed).randn(...), rng.standard_normal(...)
        return False

    def _passed_float64(self, binding, depth: int, python_floats: bool) -> bool:
        """A parameter of a top-level function that every caller gives a float64 array: the calls in this file,
        or where it has none, those of the modules next to it (``analysis/project/callers.py``)."""
        function = binding.function
        if type(function) not in (ast.FunctionDef, ast.AsyncFunctionDef) or self.ctx.parent(function) is not self.ctx.module:
            return False
        ordered = [*function.args.posonlyargs, *function.args.args]  # type: ignore[union-attr]
        position = next((i for i, a in enumerate(ordered) if a is binding.value), None)
        if position is None:
            return False
        here = self.flow.calls.get(function.name)  # type: ignore[union-attr]
        if here:
            values = []
            for call, is_method in here:
                plain = [a for a in call.args if type(a) is not ast.Starred]
                if is_method or len(plain) != len(call.args) or position >= len(plain):
                    return False
                values.append(plain[position])
            return all(self._may_be_float64_array(v, depth + 1, python_floats=python_floats) for v in values)
        passed, files = self.ctx.project.callers(function.name)  # type: ignore[union-attr]
        if position < len(passed) and passed[position] == facts.FLOAT64:
            self.__dict__.setdefault("_float64_callers", {})[function] = files
            return True
        return False

    def _observation(self, value: ast.AST) -> bool:
        """``env.step(a)`` / ``env.reset()`` (their first item when unpacked): a gym environment's observation,
        a float64 array for most continuous-control environments. Not in a file that handles image
        observations (uint8 frames, Atari, ``/ 255``), whose arrays are uint8, nor in one that names a
        classic-control or Box2D environment (float32 observations in today's gym and gymnasium)."""
        if type(value) is not ast.Call or method_name(value) not in ("step", "reset"):
            return False
        owner = value.func.value  # type: ignore[attr-defined]
        name = owner.attr if type(owner) is ast.Attribute else owner.id if type(owner) is ast.Name else ""  # type: ignore[attr-defined]
        if not _ENV.search(name):
            return False
        not_float64 = self.__dict__.get("_observations_not_float64")
        if not_float64 is None:
            source = self.ctx.source
            not_float64 = bool(_IMAGES.search(source) or _FLOAT32_ENVS.search(source))
            self.__dict__["_observations_not_float64"] = not_float64
        return not not_float64

    def _numpy_generator(self, receiver: ast.AST, depth: int = 0) -> bool:
        """``np.random.RandomState(s)`` / ``np.random.default_rng(s)``, directly or through a name."""
        if type(receiver) is ast.Call:
            return self.ctx.qualify(receiver.func) in NUMPY_GENERATORS  # type: ignore[attr-defined]
        if type(receiver) is ast.Name and depth < 4:
            bindings = self.flow.visible(receiver.id, receiver)  # type: ignore[attr-defined]
            return bool(bindings) and all(
                b.how == "assign" and not b.path and b.value is not None and self._numpy_generator(b.value, depth + 1)
                for b in bindings
            )
        return False

    def _callers_say(self, node: ast.AST, device: bool) -> str:
        """Where the device comes from when only the callers in other modules say it (``callers.py``)."""
        scope = self.ctx.tree.scope_of(node)
        float64 = self.__dict__.get("_float64_callers", {})
        while scope is not None and scope is not self.ctx.module:
            for found, what in ((self.flow.from_callers if device else {}, "tensors on the device"),
                                (float64, "float64 arrays")):
                files = found.get(scope)
                if files:
                    names = ", ".join(sorted({os.path.basename(f) for f in files}))
                    return f" (its callers in {names} pass {what})"
            outer = self.ctx.tree.scope_of(scope)
            scope = None if outer is scope else outer
        return ""

    def _report(self, node: ast.AST, what: str, fix: Optional[FixSpec], device: bool = False) -> None:
        """``device``: the finding rests on the value being on the device (what callers may have said)."""
        what += self._callers_say(node, device)
        self.report(
            node,
            f"`{short(self.ctx, node)}` {what}: MPS has no float64 (\"Cannot convert a MPS Tensor to float64 dtype\"); "
            "use float32",
            fix=fix,
        )
