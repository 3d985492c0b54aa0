"""Which modules are placed on the accelerator, and what ``.backward()`` says about a loss."""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from mpslint.analysis.syntax import dotted_name, last_name, positional
from mpslint.analysis.tree import Scope
from mpslint.analysis.device_flow.kinds import ACCELERATOR_TYPES, DEVICE_NAME, Kind, MODULE_LIKE, MOVES, NO_GRAD, _ATTRIBUTE, _CALL, _NAME, builds_module, string_kind
from mpslint.analysis.device_flow.evaluation import Evaluation, _arguments


def moves_to_cpu(call: ast.Call, flow: Evaluation) -> bool:
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
    if type(target) is _NAME:
        # `device = torch.device('cpu')` (a CPU-only tutorial): every binding that reaches the move names the CPU
        return flow.kind(target) is Kind.CPU
    return False


def _targets_the_cpu(call: ast.Call, flow) -> bool:
    """``.to("cpu")`` / ``.to(torch.device("cpu"))``: a move to the host (not a dtype-only ``.to``)."""
    return call.func.attr == "to" and flow.to_target(call) is not None and moves_to_cpu(call, flow)  # type: ignore[attr-defined]


class Placement:
    """Which modules are placed on the accelerator, and what ``.backward()`` says about a loss (a part of ``DeviceFlow``)."""

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
        name like ``device``/``dev``/``*_device``, Accelerate's ``accelerator``, or a device string; a move
        to, or a name of, ``torch.device('cpu')`` names none (a CPU tutorial that spells out its device)."""
        tree = self.tree
        for call in tree.of_type(_CALL):
            func = call.func  # type: ignore[attr-defined]
            if type(func) is _ATTRIBUTE and func.attr in MOVES and not (func.attr == "to" and moves_to_cpu(call, self)):  # type: ignore[attr-defined]
                return True
            if any(item.arg == "device" and not self._names_the_cpu(item.value) for item in call.keywords):  # type: ignore[attr-defined]
                return True
        for name in tree.of_type(_NAME):
            if (DEVICE_NAME.match(name.id) and not self._names_the_cpu(name)) or name.id == "accelerator":  # type: ignore[attr-defined]
                return True
        for attribute in tree.of_type(_ATTRIBUTE):
            if attribute.attr == "accelerator" or (  # type: ignore[attr-defined]
                    DEVICE_NAME.match(attribute.attr) and self._qualified(attribute) != "torch.device"):  # type: ignore[attr-defined]
                return True  # (`torch.device(...)` names a device by what it is given, asked above and below)
        for constant in tree.of_type(ast.Constant):
            value = constant.value  # type: ignore[attr-defined]
            if type(value) is str and value.split(":")[0] in ACCELERATOR_TYPES:
                return True
        return False

    def _names_the_cpu(self, value: ast.AST) -> bool:
        """``"cpu"``, or a name every binding of which reaching here names the CPU."""
        return type(value) in (ast.Constant, _NAME) and self.kind(value) is Kind.CPU

    @property
    def graph(self) -> Dict[Scope, Set[str]]:
        """Scope -> names a ``.backward()`` starts from (and what they were read from), on first need."""
        if self._graph is None:
            self._graph = {}
            for call in self._backward_calls:
                self._collect_backward(call)
        return self._graph

    def is_placed(self, callee: ast.AST) -> bool:
        """``callee(...)`` runs a module that lives on the accelerator."""
        return self.kind(callee) in (Kind.MODULE, Kind.DEVICE)

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
        return self._module_evidence(receiver, depth, frozenset()) is True

    def _module_evidence(self, receiver: ast.AST, depth: int, resolving: FrozenSet[str]) -> Optional[bool]:
        """Whether ``receiver`` is a module; None for a name met again while its own bindings are read
        (``pipe = pipe.to("cpu")`` in a loop says nothing either way: the name's other bindings decide)."""
        if depth > 6:
            return False
        if type(receiver) is _CALL:
            func = receiver.func  # type: ignore[attr-defined]
            qualified = self._qualified(func) or dotted_name(func) or ""
            if qualified.startswith("torch.") and not qualified.startswith("torch.nn."):
                return False
            if type(func) is _ATTRIBUTE and func.attr in ("to", "cuda", "float", "half", "eval", "train"):
                return self._module_evidence(func.value, depth + 1, resolving)
            if self._is_instance(func):
                return False  # `model(x)`: a module's forward returns tensors
            return builds_module(qualified)
        name = dotted_name(receiver)
        if name is None:
            return False
        if name in self.placed:
            return True
        if type(receiver) is _NAME:
            if name in resolving:
                return None
            # `vae = vae.to(device)`: a module if the name held one (`vae = AutoencoderKL.from_pretrained(...)`),
            # or is a parameter named like one (`def generate(vae, ...)`).
            bindings = self.visible(name, receiver)
            held = [b for b in bindings if b.how == "assign" and not b.path and b.value is not None]
            if held:
                inner = resolving | {name}
                found = [self._module_evidence(b.value, depth + 1, inner) if type(b.value) is _CALL else False
                         for b in held]
                if False in found:
                    return False
                return True if True in found else None
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
