"""What the CUDA fixes write for "the device": the device the code already has, or one picked where it is used.

In order of preference, a fix uses:

1. a device variable in scope that prefers CUDA (``device = torch.device("cuda")``,
   ``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``, a
   cuda→mps→cpu chain, ``device = pick_device()``), so ``.cuda()`` becomes
   ``.to(device)`` and still lands where it did;
2. the device the caller chose: a ``device`` parameter of the enclosing
   function, the ``self.device`` its class keeps, or ``accelerator.device`` of an
   ``accelerate.Accelerator``. A function that takes a device and hard-codes
   ``.cuda()`` is half-migrated: its author meant that device;
2b. ``feat.device``, for a new tensor the function then mixes with its tensor
   argument ``feat`` in an op that needs both on one device
   (``analysis/argument_device.py`` says when that is CUDA's device exactly);
3. in a module that places nothing when it is imported (a library module, or a
   script whose placement sits in functions and under ``if __name__ == "__main__":``),
   a local ``device = pick_device()`` at the top of the function or ``__main__``
   block that needs it, so that importing the module probes no device;
4. otherwise one module-level ``DEVICE = pick_device()`` after the imports.

``pick_device`` is defined once per module after the imports (torch 2.0
compatible; the ``torch.accelerator`` one-liner with a torch-version floor
>= 2.7), or imported from the project's own helper
(``device-helper = "package.module:function"``). "After the imports" means
before the first statement with CUDA code, which may be followed by more
imports. A ``pick_device`` the module already has is reused only where
``pick_device()`` is sure to work; otherwise the helper takes a name the module
does not use (``pick_torch_device``), so a fix never calls a function with the
wrong arguments or before its ``def`` has run.

Every fix that needs the helper carries the same insertion edit, so the fixer
merges them; a fix needing a different insertion at the same point waits for
the next pass, where the helper already exists. Edits are anchored on the
module's own statements, so no LibCST node is needed to place them.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Set, Tuple

from mpslint.analysis.argument_device import ArgumentDevices
from mpslint.analysis.cuda_context import CudaContext, is_compound, is_cuda_literal
from mpslint.analysis.package_helper import package_helper
from mpslint.analysis.project.summary import star_imports
from mpslint.analysis.syntax import dotted_name, is_main_guard, parameters, string_value, target_names
from mpslint.fixes.edits import NodeEdit, insert_after, insert_before, insert_line_after
from mpslint.knowledge.cuda_api import ACCELERATOR_ONE_LINER

HOISTED = "DEVICE"
DEFAULT_HELPER = "pick_device"
# Why a fix that needs the helper is not offered (``usable`` is false, or the code runs before the helper would).
NO_PICKER = "torch is not imported at module level before this code, where the device picker would go"

_DEVICE_NAME = re.compile(r"^(device|dev|DEVICE|_device|torch_device|default_device|[a-z_]*_device)$")
# Names of a parameter or attribute that holds the device the code runs on (not `cpu_device`, `offload_device`, ...).
CHOSEN_DEVICE_NAMES = frozenset({
    "device", "dev", "torch_device", "_device", "default_device", "compute_device", "cuda_device", "gpu_device",
    "train_device", "model_device", "run_device", "target_device",
})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_ACCELERATORS = ("accelerate.Accelerator", "accelerate.accelerator.Accelerator")
_NOT_CUDA = ("cpu", "mps", "meta")

DEVICE_KIND = "device"  # a torch.device
STR_KIND = "str"  # a device name such as "cuda"
UNKNOWN_KIND = "unknown"  # either (a parameter the caller fills)


@dataclass(frozen=True)
class DeviceRef:
    """An expression that evaluates to the device, and the edits it needs."""

    text: str
    edits: Tuple[NodeEdit, ...]
    kind: str = DEVICE_KIND
    torch: str = "torch"

    @property
    def is_str(self) -> bool:
        return self.kind == STR_KIND

    @property
    def type(self) -> str:
        """An expression for the device type (``"cuda"``, ``"mps"``, ``"cpu"``)."""
        if self.kind == STR_KIND:
            return self.text
        if self.kind == UNKNOWN_KIND:
            return f"{self.torch}.device({self.text}).type"
        return f"{self.text}.type"

    @property
    def device(self) -> str:
        """An expression that is a ``torch.device``."""
        return self.text if self.kind == DEVICE_KIND else f"{self.torch}.device({self.text})"


MPS_BACKEND: Tuple[int, int] = (1, 12)  # torch.backends.mps first exists


def mps_is_available(torch: str, floor: Tuple[int, int]) -> str:
    """The test for MPS that runs on the project's torch floor (no ``torch.backends.mps`` before 1.12)."""
    if floor >= MPS_BACKEND:
        return f"{torch}.backends.mps.is_available()"
    return f'hasattr({torch}.backends, "mps") and {torch}.backends.mps.is_available()'


def render_helper(torch: str, name: str, floor: Tuple[int, int]) -> str:
    if floor >= ACCELERATOR_ONE_LINER:
        return (
            f"def {name}() -> {torch}.device:\n"
            '    """The accelerator (CUDA, MPS, ...) if there is one, else the CPU."""\n'
            f'    return {torch}.accelerator.current_accelerator(check_available=True) or {torch}.device("cpu")\n'
        )
    return (
        f"def {name}() -> {torch}.device:\n"
        '    """CUDA if available, then Apple\'s MPS, then the CPU."""\n'
        f"    if {torch}.cuda.is_available():\n"
        f'        return {torch}.device("cuda")\n'
        f"    if {mps_is_available(torch, floor)}:\n"
        f'        return {torch}.device("mps")\n'
        f'    return {torch}.device("cpu")\n'
    )


class DevicePicker:
    """Per file: ``ctx.analysis(DevicePicker)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        module = ctx.module
        self.module = module
        setting = ctx.settings.device_helper or "inline"
        self.import_from: Optional[str] = None
        # The inline helper is torch 2.0 compatible unless a floor >= 2.7 is configured.
        self.floor = ctx.settings.torch_version[:2] if ctx.settings.torch_version else (2, 0)
        self.torch = torch_alias(ctx)
        self.anchor = helper_anchor(ctx)
        self.helper_def: Optional[ast.AST] = None  # the module's own helper, reused
        self.helper_bound = False
        self._used_names: Optional[Set[str]] = None
        if setting != "inline" and ":" in setting:
            self.import_from, self.helper = setting.split(":", 1)
            self.helper_def = _module_function(module, self.helper)
            self.helper_bound = self.helper_def is not None or ctx.imports.bindings.get(self.helper) is not None
        else:
            self.helper, self.helper_def, self.helper_bound = self._choose_helper()
        self.hoisted: Optional[ast.AST] = None  # the existing `DEVICE = pick_device()`
        self.hoisted_conflict = False
        for stmt in module.body:
            if type(stmt) is ast.Assign and any(type(t) is ast.Name and t.id == HOISTED for t in stmt.targets):
                if self._is_helper_call(stmt.value) and self.hoisted is None:
                    self.hoisted = stmt
                else:
                    self.hoisted_conflict = True
        if setting == "inline" and self.helper_def is None and not self.helper_bound:
            # A helper in a module of this package that the file already imports: import it, not a copy.
            found = package_helper(ctx, DEFAULT_HELPER, self.anchor.end_lineno if self.anchor is not None else 0)
            if found is not None and found[0] is not None and found[1] in self._used():
                found = None  # `def run(pick_device):`: importing the name would call the file's own one instead
            if found is not None:
                self.import_from, self.helper = found
                # `utils.pick_device`: called through the module the file already imports, nothing to add.
                self.helper_bound = self.import_from is None or ctx.imports.bindings.get(self.helper) is not None
        # scope -> name -> (statement index, prefers CUDA, holds a str), for every assignment of the name
        self.scopes: Dict[ast.AST, Dict[str, List[Tuple[int, bool, bool]]]] = {}
        self.params: Dict[ast.AST, Set[str]] = {}
        # scope -> device name -> (statement index, value) of its plain assignments
        self._device_values: Dict[ast.AST, Dict[str, List[Tuple[int, ast.AST]]]] = {}
        self._index_assignments()
        # scope -> (name, first assignment, holds a str) of the names every assignment of which prefers CUDA,
        # `device` first: the only names a fix can reuse, found without looking at the others.
        self._reusable: Dict[ast.AST, List[Tuple[str, int, bool]]] = {}
        for scope, table in self.scopes.items():
            found = [(name, min(at for at, _, _ in rows), all(is_str for _, _, is_str in rows))
                     for name, rows in table.items() if all(ok for _, ok, _ in rows)]
            found.sort(key=lambda row: (row[0] != "device", row[0]))
            self._reusable[scope] = found
        self._usable: Optional[bool] = None
        self._padding: Optional[int] = None

    def _used(self) -> Set[str]:
        """The module's identifiers (``names_used``), collected once for the questions that need them."""
        if self._used_names is None:
            self._used_names = names_used(self.tree.nodes)
        return self._used_names

    def _choose_helper(self) -> Tuple[str, Optional[ast.AST], bool]:
        """(name, the module's own definition or None, whether the name is already bound) of the picker to call.

        A helper the module already has is reused only when ``name()`` is sure to work wherever
        a fix calls it: a plain function that takes no argument (every parameter has a default),
        bound once at module level and defined before any CUDA code, or imported with the
        leading imports. Otherwise the module's name is left alone and the helper gets a free one.
        """
        for name in _helper_names():
            if name not in self._used():
                return name, None, False
            bindings = _module_bindings(self.module, name)
            if len(bindings) != 1:
                continue
            [binding] = bindings
            if type(binding) is ast.FunctionDef and _callable_without_arguments(binding) \
                    and self._before_cuda_code(binding):
                return name, binding, True
            if type(binding) in (ast.Import, ast.ImportFrom) and self.anchor is not None \
                    and binding.lineno <= self.anchor.end_lineno:  # type: ignore[attr-defined]
                return name, None, True
        raise AssertionError("unreachable: the helper names never run out")

    def _before_cuda_code(self, definition: ast.AST) -> bool:
        """No CUDA placement code (outside ``definition``) comes before it: no fix needs the helper earlier."""
        markers = self.ctx.analysis(_ImportTimePlacement).markers  # in source order
        return not markers or markers[0] >= self.tree.index(definition)

    # --- what a fix can use -------------------------------------------------

    @property
    def usable(self) -> bool:
        """The helper can go after the imports, and torch is imported by then."""
        if self._usable is None:
            self._usable = False
            if self.torch is not None and self.anchor is not None:
                body = self.module.body
                binding = torch_binding(self.ctx)
                self._usable = binding is not None and body.index(binding) <= body.index(self.anchor)
        return self._usable

    def picker_call(self, node: ast.AST) -> Optional[DeviceRef]:
        """``pick_device()`` at ``node``, defining or importing the helper if needed."""
        if not self._after_anchor(node):
            return None
        edits = self._helper_edits(with_device=False)
        if edits is None:
            return None
        return DeviceRef(f"{self.helper}()", edits)

    def device_ref(self, node: ast.AST) -> Optional[DeviceRef]:
        """The device at ``node`` (see the module docstring for the order)."""
        found = self.variable_in_scope(node)
        if found is not None:
            return DeviceRef(found[0], (), STR_KIND if found[1] else DEVICE_KIND, self.torch or "torch")
        chosen = self.chosen_device(node)
        if chosen is not None:
            return chosen
        argument = self.ctx.analysis(ArgumentDevices).of(node)
        if argument is not None:
            return DeviceRef(argument, (), DEVICE_KIND, self.torch or "torch")
        if not self._after_anchor(node):
            return None
        if self.hoisted is not None:
            if not self._after(node, self.hoisted):
                return None  # `DEVICE = pick_device()` runs after this code: another would be a second device
            return DeviceRef(HOISTED, ())
        local = self._local_device(node)
        if local is not None:
            return local
        if self.hoisted_conflict or self._binds_locally(node, HOISTED):
            return None
        edits = self._helper_edits(with_device=True)
        if edits is None:
            return None
        return DeviceRef(HOISTED, edits)

    def variable_in_scope(self, node: ast.AST) -> Optional[Tuple[str, bool]]:
        """(name, holds a str) of a CUDA-preferring device variable assigned before ``node``."""
        statement = self.tree.statement_of(node)
        if statement is None:
            return None
        index = self.tree.index(statement)
        scope = self._scope_of(node)
        for candidate in (scope, self.module) if scope is not self.module else (self.module,):
            for name, first, is_str in self._reusable.get(candidate, ()):
                if candidate is self.module and scope is not self.module and self._binds_locally(node, name):
                    continue  # a local of the same name hides it
                if first < index:
                    return name, is_str
        return None

    def device_in_scope(self, node: ast.AST) -> Optional[DeviceRef]:
        """Whatever device the function (or module) holds in ``device`` (or a like name) at ``node``.

        Unlike ``variable_in_scope`` it need not prefer CUDA (``device = next(model.parameters()).device``,
        ``device = torch.device(args.device)``), so a fix may use it only where CUDA does not depend on it:
        to choose the MPS side of a CUDA-or-MPS branch whose CUDA side tests CUDA itself.
        """
        statement = self.tree.statement_of(node)
        if statement is None:
            return None
        index = self.tree.index(statement)
        scope = self._scope_of(node)
        torch = self.torch or "torch"
        table = self._device_values.get(scope, {})
        names = sorted(set(table) | (self.params.get(scope, set()) & CHOSEN_DEVICE_NAMES),
                       key=lambda n: (n != "device", n))
        for name in names:
            rows = self.scopes.get(scope, {}).get(name, [])
            values = table.get(name, [])
            if len(values) != len(rows):
                continue  # also bound by a loop, a with or an augmented assignment: not a device we can read
            if name in self.params.get(scope, set()):
                if scope is not self.module and all(at > index for at, _ in values):
                    return DeviceRef(name, (), self._kind_of_parameter(scope, _parameter(scope, name)), torch)
                continue
            if not values or values[0][0] >= index or any(at > index for at, _ in values):
                continue  # assigned after `node` (too): which value it holds there is not one line's question
            kinds = {_kind_of_value(self.ctx, value, self.helper) for _, value in values}
            return DeviceRef(name, (), kinds.pop() if len(kinds) == 1 else UNKNOWN_KIND, torch)
        return None

    def chosen_device(self, node: ast.AST) -> Optional[DeviceRef]:
        """The device the caller chose, where ``node`` runs: a parameter, ``self.device``, ``accelerator.device``."""
        torch = self.torch or "torch"
        functions = self._functions_around(node)
        for function in functions:
            found = self._device_parameter(function)
            if found is not None:
                return DeviceRef(found[0], (), found[1], torch)
        if functions:
            found = self._self_device(functions[0], node)
            if found is not None:
                return DeviceRef(found[0], (), found[1], torch)
        accelerator = self._accelerator(node, functions)
        if accelerator is not None:
            return DeviceRef(f"{accelerator}.device", (), DEVICE_KIND, torch)
        return None

    def _functions_around(self, node: ast.AST) -> List[ast.AST]:
        """The functions whose body ``node`` runs in, innermost first (not the ones it is a default of)."""
        return list(self.tree.inherited(("functions around", id(self)), node, self._functions_step, ()))

    def _functions_step(self, parent: ast.AST, child: ast.AST, above: Tuple[ast.AST, ...]) -> Tuple[ast.AST, ...]:
        if type(parent) in _FUNCTIONS:
            owner = self.tree.block_owner(child)
            if owner is not None and owner[0] is parent and owner[1] == "body":
                return (parent,) + above
        return above

    def _device_parameter(self, function) -> Optional[Tuple[str, str]]:
        """(name, kind) of a device parameter whose value is the caller's device (no default, or a CUDA one)."""
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        defaults: Dict[str, ast.AST] = {}
        for param, value in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            defaults[param.arg] = value
        for param, value in zip(args.kwonlyargs, args.kw_defaults):
            if value is not None:
                defaults[param.arg] = value
        for param in [*positional, *args.kwonlyargs]:
            if param.arg not in CHOSEN_DEVICE_NAMES:
                continue
            default = defaults.get(param.arg)
            if default is not None and not prefers_cuda(self.ctx, default, self.helper) \
                    and not self._picked_when_none(function, param.arg, default):
                continue  # `device="cpu"`, `device=None`: without an argument it is not where `.cuda()` went
            return param.arg, self._kind_of_parameter(function, param)
        return None

    def _picked_when_none(self, function, name: str, default: ast.AST) -> bool:
        """``device=None`` and the body starts ``if device is None: device = pick_device().type`` (MPS102's fix)."""
        if not (type(default) is ast.Constant and default.value is None):  # type: ignore[attr-defined]
            return False
        first = _first_statement(function.body)
        if type(first) is not ast.If or len(first.body) != 1 or first.orelse:  # type: ignore[attr-defined]
            return False
        test, assign = first.test, first.body[0]  # type: ignore[attr-defined]
        return (
            type(test) is ast.Compare and type(test.left) is ast.Name and test.left.id == name
            and len(test.ops) == 1 and type(test.ops[0]) is ast.Is
            and type(assign) is ast.Assign and len(assign.targets) == 1
            and type(assign.targets[0]) is ast.Name and assign.targets[0].id == name
            and prefers_cuda(self.ctx, assign.value, self.helper)
        )

    def _kind_of_parameter(self, function, param: ast.arg) -> str:
        annotation = param.annotation
        if annotation is not None:
            name = self.ctx.qualify(annotation) or dotted_name(annotation) or ""
            if name == "torch.device":
                return DEVICE_KIND
            if name == "str":
                return STR_KIND
        uses = self.ctx.analysis(_AttributeReads)
        if (function, param.arg) in uses.typed:
            return DEVICE_KIND  # the function reads `device.type`: a torch.device
        return UNKNOWN_KIND

    def _self_device(self, method, node: ast.AST) -> Optional[Tuple[str, str]]:
        """``self.device`` when the method's class keeps a device that is not the CPU on purpose."""
        params = method.args.posonlyargs + method.args.args
        if not params or params[0].arg != "self":
            return None
        cls = self.tree.parent(method)
        if type(cls) is not ast.ClassDef:
            return None
        kept = self.ctx.analysis(_KeptDevices).of(cls)
        for name in sorted(kept, key=lambda n: (n != "device", n)):
            assignments = kept[name]
            if all(_literal_not_cuda(v) for _, v in assignments):
                continue
            if method.name == "__init__":
                index = self.tree.index(node)
                if not any(self.tree.contains(method, a) and self.tree.index(a) < index for a, _ in assignments):
                    continue  # used in __init__ before it is set
            kinds = {_kind_of_value(self.ctx, v, self.helper) for _, v in assignments}
            return f"self.{name}", kinds.pop() if len(kinds) == 1 else UNKNOWN_KIND
        return None

    def _accelerator(self, node: ast.AST, functions: List[ast.AST]) -> Optional[str]:
        """A name (or ``self.accelerator``) bound to an ``accelerate.Accelerator`` before ``node``."""
        table = self.ctx.analysis(_Accelerators)
        if not table.bindings:
            return None
        index = self.tree.index(node)
        for scope in [*functions, self.module]:
            for name, at in table.bindings.get(scope, ()):
                if at < index:
                    return name
        if functions:
            params = functions[0].args.posonlyargs + functions[0].args.args
            cls = self.tree.parent(functions[0])
            if params and params[0].arg == "self" and type(cls) is ast.ClassDef and cls in table.classes:
                return f"self.{table.classes[cls]}"
        return None

    def _local_device(self, node: ast.AST) -> Optional[DeviceRef]:
        """In a module that places nothing on import: ``device`` picked at the top of the function (or main block)."""
        if self.ctx.analysis(_ImportTimePlacement).places:
            return None
        functions = self._functions_around(node)
        if functions:
            body = functions[0].body
            bound = self.params.get(functions[0], set()) | set(self.scopes.get(functions[0], {}))
        else:
            main = _main_block_of(self.tree, node)
            if main is None:
                return None
            body = main.body
            bound = set(self.scopes.get(self.module, {}))
        first = self.ctx.analysis(_ImportTimePlacement).first_placing(self.tree, body) or _first_statement(body)
        call = self.picker_call(node)
        if call is None:
            return None
        if "device" in bound or first is None or not _starts_line(self.tree, first):
            return DeviceRef(call.text, call.edits, DEVICE_KIND, self.torch or "torch")
        indent = self.tree.indentation(first.lineno)  # type: ignore[attr-defined]
        edit = insert_before(first, f"device = {call.text}\n{indent}")
        return DeviceRef("device", (edit, *call.edits), DEVICE_KIND, self.torch or "torch")

    def merged(self, edits) -> Tuple[NodeEdit, ...]:
        """``edits`` without repeats, and without the bare helper where the helper with ``DEVICE`` is inserted too.

        One fix that needs both ``pick_device()`` and ``DEVICE`` (a guard
        rewrite: the flag gets the picker, a placement gets ``DEVICE``) must
        insert the helper once.
        """
        unique: List[NodeEdit] = []
        for edit in edits:
            if edit not in unique:
                unique.append(edit)
        with_device = self._helper_edits(with_device=True)
        bare = self._helper_edits(with_device=False)
        if with_device and bare and all(e in unique for e in with_device):
            unique = [e for e in unique if e not in bare or e in with_device]
        return tuple(unique)

    # --- internals ------------------------------------------------------------

    def _index_assignments(self) -> None:
        tree = self.tree
        for function in tree.of_type(*_FUNCTIONS):
            self.params[function] = {p.arg for p in parameters(function)}
        for node in tree.of_type(ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith):
            scope = self._scope_of(node)
            at = tree.index(node)
            cls = type(node)
            if cls in (ast.For, ast.AsyncFor):
                names = target_names(node.target)  # type: ignore[attr-defined]
            elif cls in (ast.With, ast.AsyncWith):
                names = [n for item in node.items if item.optional_vars is not None for n in target_names(item.optional_vars)]  # type: ignore[attr-defined]
            else:
                self._record(node, scope, at)
                continue
            for name in names:
                self._add(scope, name, at, False)

    def _record(self, node, scope: ast.AST, at: int) -> None:
        targets = node.targets if type(node) is ast.Assign else [node.target]
        value = node.value
        for target in targets:
            if type(target) is not ast.Name:
                for name in target_names(target):
                    self._add(scope, name, at, False)
                continue
            name = target.id
            if value is None or type(node) is ast.AugAssign:
                self._add(scope, name, at, False)
                continue
            ok = prefers_cuda(self.ctx, value, self.helper)
            if name in CHOSEN_DEVICE_NAMES:
                self._device_values.setdefault(scope, {}).setdefault(name, []).append((at, value))
            device_like = ok or _DEVICE_NAME.match(name) or _is_device_expr(value)
            if not device_like:
                self._add(scope, name, at, False)
                continue
            if not ok and _is_device_expr(value):
                ok = self._in_cuda_first_chain(node)
            self._add(scope, name, at, ok, _holds_str(value))

    def _add(self, scope: ast.AST, name: str, at: int, ok: bool, is_str: bool = False) -> None:
        self.scopes.setdefault(scope, {}).setdefault(name, []).append((at, ok, is_str))

    def _scope_of(self, node: ast.AST) -> ast.AST:
        """The function whose local names ``node`` sees (lambdas hold no statements), or the module."""
        return self.tree.inherited("def", node, _def_step, self.module)

    def _binds_locally(self, node: ast.AST, name: str) -> bool:
        scope = self._scope_of(node)
        if scope is self.module:
            return False
        return name in self.params.get(scope, set()) or name in self.scopes.get(scope, {})

    def _after_anchor(self, node: ast.AST) -> bool:
        if not self.usable:
            return False
        if self.helper_def is not None and not self._after(node, self.helper_def):
            return False
        return self._after(node, self.anchor)

    def _after(self, node: ast.AST, statement: ast.AST) -> bool:
        """``node`` sits in a module-level statement that starts on a line after ``statement`` ends."""
        top = self.tree.inherited("top", node, _top_step, None)
        if top is None:
            return False
        return _first_line(top) > statement.end_lineno  # type: ignore[attr-defined]

    def _is_helper_call(self, value: ast.AST) -> bool:
        return type(value) is ast.Call and dotted_name(value.func) == self.helper and not value.args and not value.keywords  # type: ignore[attr-defined]

    def _in_cuda_first_chain(self, stmt: ast.AST) -> bool:
        """An assignment inside ``if torch.cuda.is_available(): <cuda> elif/else ...``."""
        parent = self.tree.parent(stmt)
        while parent is not None and type(parent) is not ast.If:
            if type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module):
                return False
            parent = self.tree.parent(parent)
        if parent is None:
            return False
        top = self.ctx.analysis(CudaContext).chain_top(parent)
        test = top.test
        if not (type(test) is ast.Call and self.ctx.qualify(test.func) == "torch.cuda.is_available"):
            return False
        return any(type(s) is ast.Assign and prefers_cuda(self.ctx, s.value, DEFAULT_HELPER) for s in top.body)

    def _helper_edits(self, *, with_device: bool) -> Optional[Tuple[NodeEdit, ...]]:
        device_line = f"{HOISTED} = {self.helper}()\n"
        if self.helper_bound:
            if not with_device:
                return ()
            if self.helper_def is not None:
                return (insert_line_after(self.helper_def, "\n\n" + device_line),)
            return (insert_line_after(self.anchor, self._pad("\n" + device_line, 1)),)
        if self.import_from is not None:
            merge = self._import_to_extend()
            if merge is not None:  # `from .utils import load` -> `from .utils import load, pick_device`
                edits: Tuple[NodeEdit, ...] = (merge,)
                if with_device:
                    edits += (insert_line_after(self.anchor, self._pad("\n" + device_line, 1)),)
                return edits
            text = f"from {self.import_from} import {self.helper}\n"
            if with_device:
                text += "\n\n" + device_line
                return (insert_line_after(self.anchor, self._pad(text, 1)),)
            return (insert_line_after(self.anchor, text),)
        text = "\n\n" + render_helper(self.torch, self.helper, self.floor)  # type: ignore[arg-type]
        if with_device:
            text += "\n\n" + device_line
            return (insert_line_after(self.anchor, self._pad(text, 1)),)
        return (insert_line_after(self.anchor, self._pad(text, 2)),)

    def _import_to_extend(self) -> Optional[NodeEdit]:
        """The edit adding the helper to the file's own one-line ``from <module> import ...`` of its module."""
        for stmt in self.module.body:
            if type(stmt) is not ast.ImportFrom or stmt.lineno != stmt.end_lineno:  # type: ignore[attr-defined]
                continue
            if "." * stmt.level + (stmt.module or "") != self.import_from or stmt.names[0].name == "*":
                continue
            text = self.ctx.text(stmt)
            if text.endswith(")"):
                return None
            return insert_after(stmt, f", {self.helper}")
        return None

    def _pad(self, text: str, blank: int) -> str:
        """End ``text`` so that at least ``blank`` empty lines separate it from the next statement."""
        existing = self._blank_lines_after_anchor()
        if existing is None:
            return text
        return text + "\n" * max(0, blank - existing)

    def _blank_lines_after_anchor(self) -> Optional[int]:
        """Empty lines between the imports and the next statement (None: nothing follows them)."""
        if self._padding is None:
            anchor = self.anchor
            following = next((s for s in self.module.body if _first_line(s) > anchor.end_lineno), None)  # type: ignore[union-attr]
            if following is None:
                self._padding = -1
                return None
            existing = 0
            for row in range(anchor.end_lineno + 1, _first_line(following)):  # type: ignore[union-attr]
                if self.tree.line_text(row).strip():
                    break  # a comment line: what follows it is the statement's own
                existing += 1
            self._padding = existing
        return None if self._padding < 0 else self._padding


def _def_step(parent: ast.AST, child: ast.AST, above: ast.AST) -> ast.AST:
    return parent if type(parent) in _FUNCTIONS else above


def _top_step(parent: ast.AST, child: ast.AST, above):
    return child if type(parent) is ast.Module else above


def _first_line(statement: ast.AST) -> int:
    """The first line of a statement, its decorators included."""
    decorators = getattr(statement, "decorator_list", None)
    if decorators:
        return min(d.lineno for d in decorators)
    return statement.lineno  # type: ignore[attr-defined]


def prefers_cuda(ctx, value: ast.AST, helper: str) -> bool:
    """Whether a device value is CUDA whenever CUDA is available (like ``.cuda()``)."""
    cls = type(value)
    if cls is ast.Constant:
        return string_value(value) == "cuda"
    if cls is ast.Call:
        name = ctx.qualify(value.func)  # type: ignore[attr-defined]
        if name == "torch.device" and len(value.args) == 1 and not value.keywords and type(value.args[0]) is not ast.Starred:  # type: ignore[attr-defined]
            return prefers_cuda(ctx, value.args[0], helper)  # type: ignore[attr-defined]
        return dotted_name(value.func) == helper and not value.args and not value.keywords  # type: ignore[attr-defined]
    if cls is ast.Attribute and value.attr == "type":  # type: ignore[attr-defined]
        return type(value.value) is ast.Call and prefers_cuda(ctx, value.value, helper)  # type: ignore[attr-defined]
    if cls is ast.IfExp:
        test = value.test  # type: ignore[attr-defined]
        return (
            type(test) is ast.Call
            and ctx.qualify(test.func) == "torch.cuda.is_available"
            and not test.args
            and not test.keywords
            and prefers_cuda(ctx, value.body, helper)  # type: ignore[attr-defined]
        )
    return False


def _holds_str(value: ast.AST) -> bool:
    if string_value(value) is not None:
        return True
    if type(value) is ast.IfExp:
        return _holds_str(value.body) and _holds_str(value.orelse)  # type: ignore[attr-defined]
    return type(value) is ast.Attribute and value.attr == "type"  # type: ignore[attr-defined]


def _is_device_expr(value: ast.AST) -> bool:
    text = string_value(value)
    if text is not None:
        return text in ("cpu", "mps") or is_cuda_literal(value)
    if type(value) is ast.Call:
        return (dotted_name(value.func) or "").endswith("device")  # type: ignore[attr-defined]
    return False


def torch_alias(ctx) -> Optional[str]:
    """The module-level name bound to ``torch`` itself (``import torch as th`` -> ``th``), or ``torch`` where
    only a star import of a project module that binds it brings it (``from utils import *``)."""
    found = []
    for stmt in _top_level_statements(ctx.module):
        if type(stmt) is ast.Import:
            for alias in stmt.names:
                if alias.asname:
                    if alias.name == "torch":
                        found.append(alias.asname)
                elif alias.name.split(".", 1)[0] == "torch":
                    found.append("torch")
    if "torch" in found:
        return "torch"
    if found:
        return found[0]
    return "torch" if _star_torch_statement(ctx) is not None else None


def _star_torch_statement(ctx) -> Optional[ast.AST]:
    """The top-level ``from utils import *`` that binds ``torch`` in this file, where the project model resolves
    it to a module of the project whose ``torch`` is torch itself and nothing else in the file binds the name.
    Only a statement of the module's body (not one under ``try``/``if``, which may not run) with nothing but
    imports before it counts: any fix writing ``torch`` (the picker, ``torch.cuda.is_available()``) writes
    it into code that runs after it."""
    project = ctx.project
    if not project.header.stars or project.qualified("torch") != "torch":
        return None
    position = project.star_source("torch")
    if position is None:
        return None
    stars = star_imports(ctx.module)
    if position >= len(stars):
        return None
    statement = stars[position]
    body = ctx.module.body
    if statement not in body:
        return None
    # Only imports (and the docstring) before it: every line a fix writes `torch` into runs after it.
    before = body[: body.index(statement)]
    if not all(type(s) in (ast.Import, ast.ImportFrom) or _is_docstring(s) for s in before):
        return None
    return statement


def _is_docstring(statement: ast.AST) -> bool:
    return type(statement) is ast.Expr and type(statement.value) is ast.Constant \
        and isinstance(statement.value.value, str)  # type: ignore[attr-defined]


def torch_binding(ctx) -> Optional[ast.AST]:
    """The top-level statement (or block) that first binds ``torch``: an ``import torch``, else the star
    import that brings it (``_star_torch_statement``)."""
    found = _torch_import_statement(ctx.module)
    return found if found is not None else _star_torch_statement(ctx)


# `import torch` imports `torch.mps` from torch 2.1 on (pytorch/pytorch#100165, fixed by #98837).
TORCH_MPS_IMPORTED_BY_TORCH = (2, 1)
TORCH_MPS_MODULE = (2, 0)  # torch.mps first exists (pytorch/pytorch#94649)


def mps_module_call(ctx, floor: Tuple[int, int]) -> Optional[Tuple[str, Tuple[NodeEdit, ...]]]:
    """(what an MPS branch's test adds, the edits) so that a ``torch.mps.X()`` in it runs on the project's floor.

    Before 2.0 there is no ``torch.mps`` module: ``import torch.mps`` would fail wherever the file is imported,
    so the branch also asks ``hasattr(torch, "mps")`` (MPS112 reads that as the guard it is). From 2.0 on,
    ``torch_mps_import``.
    """
    if floor < TORCH_MPS_MODULE:
        torch = torch_alias(ctx)
        return (f' and hasattr({torch}, "mps")', ()) if torch is not None else None
    importing = torch_mps_import(ctx, floor)
    return None if importing is None else ("", importing)


def torch_mps_import(ctx, floor: Tuple[int, int]) -> Optional[Tuple[NodeEdit, ...]]:
    """The edits that make ``torch.mps`` usable at ``floor``: none needed from 2.1 on, or with an
    ``import torch.mps`` already there; an ``import torch.mps`` after the plain ``import torch`` on 2.0;
    None where that cannot be written (torch imported under another name, or not at the top level).
    """
    if floor >= TORCH_MPS_IMPORTED_BY_TORCH:
        return ()
    module = ctx.module
    for stmt in _top_level_statements(module):
        if type(stmt) is ast.Import and any(a.name == "torch.mps" and a.asname is None for a in stmt.names):  # type: ignore[attr-defined]
            return ()
    statement = _torch_import_statement(module)
    if type(statement) is not ast.Import or not any(a.name == "torch" and a.asname is None for a in statement.names):  # type: ignore[attr-defined]
        return None
    # Right after `import torch` on its line, so that the helper a fix adds after that line comes below it.
    return (insert_after(statement, "\nimport torch.mps"),)


def _torch_import_statement(module: ast.Module) -> Optional[ast.AST]:
    """The top-level statement (or block) that first imports torch."""
    for stmt in module.body:
        inner = stmt.body if type(stmt) in (ast.Try, ast.If) else [stmt]  # type: ignore[attr-defined]
        for line in inner:
            if type(line) is ast.Import and any(a.name.split(".", 1)[0] == "torch" for a in line.names):
                return stmt
    return None


def _top_level_statements(module: ast.Module):
    """Module statements, looking into top-level ``try``/``if`` blocks (guarded imports)."""
    for stmt in module.body:
        yield stmt
        if type(stmt) in (ast.Try, ast.If):
            yield from stmt.body  # type: ignore[attr-defined]  # `try: import torch` / `if is_torch_available(): import torch`


def _contains_import(stmt: ast.AST) -> bool:
    if type(stmt) in (ast.Import, ast.ImportFrom):
        return True
    if type(stmt) in (ast.Try, ast.If):
        # `try: import x` / `if is_torch_available(): import torch`
        return any(_contains_import(s) for s in stmt.body)  # type: ignore[attr-defined]
    return False


def _import_block_end(ctx) -> Optional[ast.AST]:
    """The last statement of the module's leading imports: the helper goes after it.

    The prelude is the docstring, ``from __future__`` and imports, possibly
    interleaved with simple statements (``sys.path.insert(...)``,
    ``warnings.filterwarnings(...)``) and ``try: import ...`` blocks; it ends
    at the first definition or other compound statement, and before the first
    statement with CUDA code in it (``x = torch.ones(1).cuda()``, which the
    fixes rewrite to use the helper): the helper must be defined before the code
    that needs it, even where imports follow (a notebook that imports in each cell).
    """
    module = ctx.module
    placing = ctx.analysis(_ImportTimePlacement).first_placing(ctx.tree, module.body)
    last = None
    for stmt in module.body:
        if stmt is placing:
            break
        if _contains_import(stmt):
            last = stmt
        elif is_compound(stmt) or _mentions_cuda(stmt):
            break
    return last


def _helper_names():
    """Names for the helper, the usual one first; a file that uses them all gets a numbered one."""
    yield DEFAULT_HELPER
    yield "pick_torch_device"
    number = 2
    while True:
        yield f"{DEFAULT_HELPER}_{number}"
        number += 1


def names_used(nodes: Iterable[ast.AST]) -> Set[str]:
    """Every identifier ``nodes`` (a module's, in any scope) bind or read: a new module-level name must be none."""
    names: Set[str] = set()
    for node in nodes:
        cls = type(node)
        if cls is ast.Name:
            names.add(node.id)  # type: ignore[attr-defined]
        elif cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            names.add(node.name)  # type: ignore[attr-defined]
        elif cls is ast.arg:
            names.add(node.arg)  # type: ignore[attr-defined]
        elif cls is ast.alias:
            names.add((node.asname or node.name).split(".", 1)[0])  # type: ignore[attr-defined]
        elif cls in (ast.Global, ast.Nonlocal):
            names.update(node.names)  # type: ignore[attr-defined]
        elif cls is ast.ExceptHandler and node.name:  # type: ignore[attr-defined]
            names.add(node.name)  # type: ignore[attr-defined]
        elif hasattr(ast, "MatchAs") and cls in (ast.MatchAs, ast.MatchStar) and node.name:  # type: ignore[attr-defined]
            names.add(node.name)  # type: ignore[attr-defined]
        elif hasattr(ast, "MatchMapping") and cls is ast.MatchMapping and node.rest:  # type: ignore[attr-defined]
            names.add(node.rest)  # type: ignore[attr-defined]
    return names


def _module_bindings(module: ast.Module, name: str) -> List[ast.AST]:
    """The module-level statements (looking into top-level ``try``/``if``) that bind ``name``."""
    found: List[ast.AST] = []
    for stmt in _top_level_statements(module):
        cls = type(stmt)
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            hit = stmt.name == name  # type: ignore[attr-defined]
        elif cls in (ast.Import, ast.ImportFrom):
            hit = any((a.asname or a.name).split(".", 1)[0] == name for a in stmt.names)  # type: ignore[attr-defined]
        elif cls in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith):
            hit = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt)
                      if isinstance(getattr(n, "ctx", None), ast.Store))
        else:
            hit = False
        if hit:
            found.append(stmt)
    return found


def _module_function(module: ast.Module, name: str) -> Optional[ast.AST]:
    for stmt in module.body:
        if type(stmt) in _FUNCTIONS and stmt.name == name:  # type: ignore[attr-defined]
            return stmt
    return None


_CACHING_DECORATORS = frozenset({"cache", "lru_cache", "functools.cache", "functools.lru_cache"})


def _callable_without_arguments(function: ast.FunctionDef) -> bool:
    """``function()`` binds every parameter (each has a default), and no decorator but a cache changes that."""
    args = function.args
    if len(args.posonlyargs) + len(args.args) != len(args.defaults):
        return False
    if any(default is None for default in args.kw_defaults):
        return False
    for decorator in function.decorator_list:
        target = decorator.func if type(decorator) is ast.Call else decorator  # type: ignore[attr-defined]
        if dotted_name(target) not in _CACHING_DECORATORS:
            return False
    return True


def helper_anchor(ctx) -> Optional[ast.AST]:
    """The statement after which the helper goes: the end of the leading imports, or, where torch is imported
    only later (a notebook's cell 3, a script that imports torch after some code), the imports that follow
    ``import torch``, in that cell."""
    module = ctx.module
    end = _import_block_end(ctx)
    torch_import = torch_binding(ctx)
    if torch_import is None or end is None:
        return end
    body = module.body
    at = body.index(torch_import)
    if at <= body.index(end):
        return end
    last = torch_import
    for stmt in body[at + 1:]:
        if not _contains_import(stmt):
            break
        last = stmt
    return last


def _mentions_cuda(stmt: ast.AST) -> bool:
    for node in ast.walk(stmt):
        if type(node) is ast.Attribute and node.attr == "cuda":  # type: ignore[attr-defined]
            return True
        if type(node) is ast.Constant and isinstance(node.value, str) and node.value.startswith("cuda"):  # type: ignore[attr-defined]
            return True
    return False


def _literal_not_cuda(value: ast.AST) -> bool:
    text = string_value(value)
    if text is None and type(value) is ast.Call and len(value.args) == 1:  # type: ignore[attr-defined]
        text = string_value(value.args[0])  # type: ignore[attr-defined]
    return text is not None and text.split(":", 1)[0] in _NOT_CUDA


def _kind_of_value(ctx, value: ast.AST, helper: str) -> str:
    if _holds_str(value):
        return STR_KIND
    if type(value) is ast.Call:
        name = ctx.qualify(value.func) or dotted_name(value.func) or ""  # type: ignore[attr-defined]
        if name == "torch.device" or name == helper:
            return DEVICE_KIND
    if type(value) is ast.Attribute and value.attr == "device":  # type: ignore[attr-defined]
        return DEVICE_KIND  # accelerator.device, x.device
    return UNKNOWN_KIND


class _KeptDevices:
    """Per class: ``self.<device name> = value`` assignments in its methods."""

    def __init__(self, ctx) -> None:
        self.tree = ctx.tree
        self._by_class: Dict[ast.AST, Dict[str, List[Tuple[ast.AST, ast.AST]]]] = {}
        for node in ctx.tree.of_type(ast.Assign, ast.AnnAssign):
            targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
            value = node.value  # type: ignore[attr-defined]
            if value is None:
                continue
            for target in targets:
                if (type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self"
                        and target.attr in CHOSEN_DEVICE_NAMES):
                    cls = _class_of_method_body(ctx.tree, node)
                    if cls is not None:
                        self._by_class.setdefault(cls, {}).setdefault(target.attr, []).append((node, value))

    def of(self, cls: ast.AST) -> Dict[str, List[Tuple[ast.AST, ast.AST]]]:
        return self._by_class.get(cls, {})


class _Accelerators:
    """Names bound to ``accelerate.Accelerator(...)``, per scope, and ``self.<name>`` per class."""

    def __init__(self, ctx) -> None:
        self.bindings: Dict[ast.AST, List[Tuple[str, int]]] = {}
        self.classes: Dict[ast.AST, str] = {}
        if "Accelerator" not in ctx.source:
            return
        tree = ctx.tree
        for node in tree.of_type(ast.Assign):
            value = node.value  # type: ignore[attr-defined]
            if type(value) is not ast.Call or ctx.qualify(value.func) not in _ACCELERATORS:
                continue
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target) is ast.Name:
                    scope = tree.scope_of(node)
                    self.bindings.setdefault(scope, []).append((target.id, tree.index(node)))
                elif type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
                    cls = _class_of_method_body(tree, node)
                    if cls is not None:
                        self.classes.setdefault(cls, target.attr)


class _AttributeReads:
    """(function, name) pairs where the function reads ``name.type``: the name holds a torch.device."""

    def __init__(self, ctx) -> None:
        self.typed: Set[Tuple[ast.AST, str]] = set()
        tree = ctx.tree
        for node in tree.of_type(ast.Attribute):
            if node.attr == "type" and type(node.value) is ast.Name:  # type: ignore[attr-defined]
                scope = tree.scope_of(node)
                self.typed.add((scope, node.value.id))  # type: ignore[attr-defined]


class _ImportTimePlacement:
    """Whether the module places something on a device when it is imported.

    Placement code (``.cuda()``, a ``"cuda"`` string, ``torch.cuda``) at the
    top level or in a class body runs on import; in a function or under
    ``if __name__ == "__main__":`` it does not.
    """

    def __init__(self, ctx) -> None:
        self.places = False
        self.markers: List[int] = []  # where CUDA placement code is, in source order
        tree = ctx.tree
        for node in tree.nodes:
            cls = type(node)
            if cls is ast.Attribute:
                hit = node.attr == "cuda"  # type: ignore[attr-defined]
            elif cls is ast.Constant:
                hit = isinstance(node.value, str) and node.value.startswith("cuda")  # type: ignore[attr-defined]
            else:
                continue
            if hit:
                self.markers.append(tree.index(node))
                if not self.places and tree.inherited("import-time", node, _import_time_step, True):
                    self.places = True

    def first_placing(self, tree, body: List[ast.stmt]) -> Optional[ast.stmt]:
        """The first statement of ``body`` with CUDA placement code in it: where a local device is picked."""
        for stmt in body:
            position = bisect.bisect_left(self.markers, tree.index(stmt))
            if position < len(self.markers) and self.markers[position] <= tree.end(stmt):
                return stmt
        return None


def _import_time_step(parent: ast.AST, child: ast.AST, above: bool) -> bool:
    if not above:
        return False
    if type(parent) in _FUNCTIONS or type(parent) is ast.Lambda:
        return False
    return not is_main_guard(parent)


def _class_of_method_body(tree, node: ast.AST) -> Optional[ast.AST]:
    """The class whose method ``node`` sits in (directly, not in a nested function)."""
    for parent in tree.ancestors(node):
        if type(parent) in _FUNCTIONS:
            cls = tree.parent(parent)
            return cls if type(cls) is ast.ClassDef else None
        if type(parent) is ast.ClassDef:
            return None
    return None


def _main_block_of(tree, node: ast.AST) -> Optional[ast.If]:
    for parent in tree.ancestors(node):
        if type(parent) in _FUNCTIONS or type(parent) is ast.ClassDef:
            return None
        if is_main_guard(parent) and tree.parent(parent) is tree.module:
            return parent  # type: ignore[return-value]
    return None


def _first_statement(body: List[ast.stmt]) -> Optional[ast.stmt]:
    """The first statement of a body after its docstring."""
    for position, stmt in enumerate(body):
        if position == 0 and type(stmt) is ast.Expr and string_value(stmt.value) is not None:  # type: ignore[attr-defined]
            continue
        return stmt
    return None


def _starts_line(tree, statement: ast.AST) -> bool:
    return not tree.line_text(statement.lineno)[: tree.start(statement)[1]].strip()  # type: ignore[attr-defined]


def _parameter(function, name: str) -> ast.arg:
    return next(p for p in parameters(function) if p.arg == name)
