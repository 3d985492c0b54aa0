"""What may be on the accelerator: an over-approximation of ``analysis.device_flow``.

``DeviceFlow`` gives every expression one kind (device tensor, placed module,
device handle, host value, unknown), flow-sensitively, and rules report only
what it calls a device tensor. This model keeps three bits per expression,
"may be" each of ``DEVICE``, ``MODULE`` and ``ACCEL``, and drops the rest:

- a name holds the union of every binding it has in its scope and every
  scope around it (DeviceFlow takes the latest binding before the use, in
  the innermost scope that has one);
- a parameter holds the union of every argument of every call of a function
  of that name in the file (DeviceFlow matches them by position or keyword);
- "placed" is every name DeviceFlow could place, whatever the order.

Each case below names the ``DeviceFlow`` method it stands for and keeps
each of its ways to produce a bit. Everything it calls a host value is
never a device tensor here either: that is what rules the files out.
Bindings are solved on demand, for the names a screen's question reaches,
to a fixpoint (names that depend on each other in a loop).
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from mpslint.analysis.device_flow import (
    DEVICE_NAME,
    FACTORIES,
    HOST_BUILTINS,
    HOST_METHODS,
    HOST_MODULES,
    JOIN_BUILTINS,
    META_ATTRS,
    MODULE_LIKE,
    OBJECT_OWNERS,
    Kind,
    builds_module,
    names_a_dtype,
    string_kind,
)
from mpslint.screen.facts import Binding, Facts, Index, Scope, argument_values, dotted_name, keyword, positional

DEVICE, MODULE, ACCEL = 1, 2, 4
NOTHING = 0


def device_model(facts: Facts) -> "MayDevice":
    return facts.memo(MayDevice, MayDevice)


class MayDevice:
    def __init__(self, facts: Facts) -> None:
        # The index, not the facts: the facts keep this model, and a cycle would keep
        # the whole tree alive until the cyclic collector finds it (mpslint pauses it per file).
        self.index: Index = facts.index
        self.placed: Set[str] = _placed_names(facts)
        self.nn_objects: Set[str] = _nn_objects(facts)
        self.graph: Dict[int, Set[str]] = _backward_graph(facts)
        # The fixpoint over names: (scope id, name) -> bits found so far.
        self._approx: Dict[Tuple[int, str], int] = {}
        self._final: Set[Tuple[int, str]] = set()
        self._round: Set[Tuple[int, str]] = set()
        self._busy: Set[Tuple[int, str]] = set()
        self._grew = False  # a name's bits grew this round
        self._cyclic = False  # a name was read while its own bindings were being solved

    # ---------------------------------------------------------------- queries

    def bits(self, expr: ast.AST, scope: Scope) -> int:
        while True:
            self._grew = self._cyclic = False
            self._round = set()
            result = self._bits(expr, scope)
            if not (self._grew and self._cyclic):  # no stale value was used
                self._final |= self._round
                return result

    def may_be_device(self, expr: ast.AST, scope: Scope) -> bool:
        return bool(self.bits(expr, scope) & DEVICE)

    def is_placed_name(self, name: Optional[str]) -> bool:
        """``DeviceFlow.is_placed_name`` without its scope conditions."""
        return name is not None and name in self.placed

    # ------------------------------------------------------------ evaluation

    def _bits(self, expr: ast.AST, scope: Scope) -> int:  # DeviceFlow._eval
        cls = type(expr)
        if cls is ast.Name:
            return self._name(expr.id, scope)
        if cls is ast.Attribute:
            return self._attribute(expr, scope)
        if cls is ast.Call:
            return self._call(expr, scope)
        if cls is ast.Subscript:
            return self._bits(expr.value, scope) & (DEVICE | MODULE)
        if cls is ast.BinOp:
            return (self._bits(expr.left, scope) | self._bits(expr.right, scope)) & DEVICE
        if cls is ast.Compare:
            if any(type(op) in (ast.Is, ast.IsNot, ast.In, ast.NotIn) for op in expr.ops):
                return NOTHING
            found = self._bits(expr.left, scope)
            for comparator in expr.comparators:
                found |= self._bits(comparator, scope)
            return found & DEVICE
        if cls is ast.UnaryOp:
            return NOTHING if type(expr.op) is ast.Not else self._bits(expr.operand, scope)
        if cls is ast.BoolOp:
            return self._union(expr.values, scope)
        if cls is ast.IfExp:
            return self._bits(expr.body, scope) | self._bits(expr.orelse, scope)
        if cls is ast.Constant:  # "cuda:0" is a device handle (implicitly joined strings too: a superset)
            return ACCEL if string_kind(expr.value) is Kind.ACCEL else NOTHING
        if cls in (ast.Tuple, ast.List, ast.Set):
            return self._union([e.value if type(e) is ast.Starred else e for e in expr.elts], scope)
        if cls is ast.Dict:
            return self._union([v for k, v in zip(expr.keys, expr.values) if k is not None], scope)
        if cls in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
            return self._bits(expr.elt, scope)
        if cls is ast.DictComp:
            return self._bits(expr.value, scope)
        if cls is ast.NamedExpr:
            return self._bits(expr.value, scope)
        if cls is ast.Starred:
            return self._bits(expr.value, scope)
        return NOTHING  # f-strings, lambdas, await, yield: host values or unknown

    def _union(self, exprs, scope: Scope) -> int:
        found = NOTHING
        for expr in exprs:
            found |= self._bits(expr, scope)
        return found

    def _name(self, name: str, scope: Scope) -> int:  # DeviceFlow._eval_name
        if name in ("True", "False", "None"):
            return NOTHING
        found = ACCEL if DEVICE_NAME.match(name) else NOTHING
        if name in self.placed:
            found |= MODULE
        for outer in self.index.scopes_from(scope):
            if name in self.graph.get(id(outer), ()):
                found |= DEVICE
            if name in self.index.bindings[id(outer)]:
                found |= self._solved(outer, name)
        return found

    def _solved(self, scope: Scope, name: str) -> int:
        key = (id(scope), name)
        if key in self._final or key in self._round:
            return self._approx.get(key, NOTHING)
        if key in self._busy:
            self._cyclic = True  # what is known so far; another round if it grows
            return self._approx.get(key, NOTHING)
        self._busy.add(key)
        try:
            found = NOTHING
            for binding in self.index.bindings[id(scope)][name]:
                found |= self._binding(binding, name)
        finally:
            self._busy.discard(key)
        known = self._approx.get(key, NOTHING)
        if found | known != known:
            self._approx[key] = found | known
            self._grew = True
        self._round.add(key)
        return self._approx.get(key, NOTHING)

    def _binding(self, binding: Binding, name: str) -> int:  # DeviceFlow._kind_of_binding
        how = binding.how
        if how == "param":
            found = ACCEL if DEVICE_NAME.match(name) else NOTHING
            for call, scope in self.index.calls_by_name.get(binding.value.name, ()):  # _argument_kind
                found |= self._union(argument_values(call), scope) & (DEVICE | MODULE)
            return found
        if how == "lambda-param":
            return ACCEL if DEVICE_NAME.match(name) else NOTHING
        if how == "aug":
            return self._bits(binding.value.value, binding.scope) & DEVICE
        if how == "for":
            return self._bits(binding.value, binding.scope) & DEVICE
        return self._bits(binding.value, binding.scope)

    def _attribute(self, expr: ast.Attribute, scope: Scope) -> int:  # DeviceFlow._eval_attribute
        qualified = self.index.qualify(expr)
        if qualified is not None and qualified.startswith("torch."):
            return NOTHING
        attr = expr.attr
        if attr == "device":
            return self._device_attribute(expr.value, scope)
        found = MODULE if dotted_name(expr) in self.placed else NOTHING
        if attr in META_ATTRS:
            return found
        base = self._bits(expr.value, scope)
        if base & MODULE:
            found |= DEVICE if attr in ("weight", "bias") else MODULE
        return found | (base & DEVICE)

    def _device_attribute(self, owner: ast.AST, scope: Scope) -> int:  # DeviceFlow._device_attribute
        last = (dotted_name(owner) or "").rsplit(".", 1)[-1]
        if last in OBJECT_OWNERS or MODULE_LIKE.search(last):
            return ACCEL
        return ACCEL if self._bits(owner, scope) & (DEVICE | MODULE) else NOTHING

    def _call(self, call: ast.Call, scope: Scope) -> int:  # DeviceFlow._eval_call
        func = call.func
        qualified = self.index.qualify(func)
        if qualified is None and type(func) is ast.Attribute:
            return self._method(call, func, scope)
        name = qualified or dotted_name(func) or ""
        last = name.rsplit(".", 1)[-1]
        args = positional(call)
        if name == "torch.from_numpy":
            return NOTHING
        if name == "torch.device":
            return ACCEL
        if name.startswith("torch.") and last in FACTORIES and name.count(".") == 1:
            device = keyword(call, "device")
            found = DEVICE if device is not None and self._places(device, scope) else NOTHING
            if (last.endswith("_like") or last in ("as_tensor", "asarray")) and args:
                found |= self._bits(args[0], scope) & DEVICE
            return found
        if name.startswith("torch."):
            if name.startswith(("torch.nn.", "torch.optim.", "torch.utils.")) and last[:1].isupper():
                return NOTHING
            return self._union(argument_values(call), scope) & DEVICE
        root = name.split(".", 1)[0]
        if qualified is not None and qualified.split(".", 1)[0] in HOST_MODULES:
            return NOTHING
        if root in ("np", "math") and qualified is None:
            return NOTHING
        if name in HOST_BUILTINS:
            return NOTHING
        if name in JOIN_BUILTINS:
            return self._union(argument_values(call), scope) & DEVICE
        found = DEVICE if self._bits(func, scope) & (DEVICE | MODULE) else NOTHING
        placing = args + [k.value for k in call.keywords if k.arg == "device"]  # positional, *, ** and device=
        if not found and any(self._bits(a, scope) & ACCEL for a in placing):
            found = DEVICE  # to_device(batch, device)
        if not found and (MODULE_LIKE.search(last) or dotted_name(func) in self.nn_objects):
            if self._union(argument_values(call), scope) & DEVICE:
                found = DEVICE
        if not call.args and not call.keywords and DEVICE_NAME.match(last.replace("pick_", "").replace("get_", "")):
            found |= ACCEL
        return found

    def _method(self, call: ast.Call, func: ast.Attribute, scope: Scope) -> int:  # DeviceFlow._eval_method
        method = func.attr
        receiver = func.value
        if method == "to":  # _eval_to
            base = self._bits(receiver, scope)
            target = self.to_target(call)
            if target is None:
                return base
            found = MODULE if base & MODULE else NOTHING
            return found | (DEVICE if self._places(target, scope) else NOTHING)
        if method == "cuda":
            return DEVICE | (self._bits(receiver, scope) & MODULE)
        if method == "cpu" or method in HOST_METHODS:
            return NOTHING
        base = self._bits(receiver, scope)
        found = base & DEVICE
        if base & MODULE:
            found |= DEVICE if method in ("forward", "generate", "__call__") else MODULE
        if not found & DEVICE:
            values = argument_values(call)
            arg_bits = self._union(values, scope)
            if arg_bits & DEVICE:
                found |= DEVICE
            elif arg_bits & ACCEL and method not in ("join", "format", "get", "pop", "setdefault"):
                found |= DEVICE
        return found

    def _places(self, target: ast.AST, scope: Scope) -> bool:
        """``DeviceFlow._placed_on(target)`` may be a device tensor (not a CPU device, not an unknown ``x.device``)."""
        if type(target) is ast.Constant and string_kind(target.value) is Kind.CPU:
            return False
        if type(target) is ast.Attribute and target.attr == "device":
            qualified = self.index.qualify(target) or ""
            return qualified.startswith("torch.") or bool(self._bits(target, scope) & ACCEL)
        return True

    def to_target(self, call: ast.Call) -> Optional[ast.AST]:  # DeviceFlow._to_target
        device = keyword(call, "device")
        if device is not None:
            return device
        for arg in positional(call):
            if not self.is_dtype(arg):
                return arg
        return None

    def is_dtype(self, node: ast.AST) -> bool:  # DeviceFlow.is_dtype
        return names_a_dtype(self.index.qualify(node) or dotted_name(node) or "")


# ----------------------------------------------------------- collected facts


def _placed_names(facts: Facts) -> Set[str]:
    """Every name DeviceFlow may place (``_note_placement``, ``_collect_call``), in any order."""
    index = facts.index
    placed: Set[str] = set()
    for call in index.statement_calls:  # model.to(device) as a statement
        func = call.func
        if type(func) is ast.Attribute and func.attr in ("to", "cuda", "to_empty"):
            name = dotted_name(func.value)
            if name:
                placed.add(name)
    moves: List[Tuple[ast.AST, List[str]]] = []
    for assign in index.assignments:
        value = assign.value
        if type(value) is not ast.Call or type(value.func) is not ast.Attribute:
            continue
        method = value.func.attr
        if method in ("to", "cuda"):
            targets = [dotted_name(t) for t in assign.targets]
            moves.append((value.func.value, [t for t in targets if t]))
        elif method == "prepare":
            for target in assign.targets:
                elements = target.elts if type(target) in (ast.Tuple, ast.List) else [target]
                for element in elements:
                    name = dotted_name(element)
                    if name and MODULE_LIKE.search(name.rsplit(".", 1)[-1]) and "loss" not in name.lower():
                        placed.add(name)
    # `model = Net().to(device)`, and names moved from names placed anywhere (DeviceFlow: placed before).
    grown = True
    while grown:
        grown = False
        for receiver, targets in moves:
            if targets and not placed.issuperset(targets) and _is_module_expression(facts, receiver, placed):
                placed.update(targets)
                grown = True
    return placed


def _is_module_expression(facts: Facts, receiver: ast.AST, placed: Set[str]) -> bool:  # DeviceFlow._is_module_expression
    if type(receiver) is ast.Call:
        func = receiver.func
        qualified = facts.qualify(func) or dotted_name(func) or ""
        if qualified.startswith("torch.") and not qualified.startswith("torch.nn."):
            return False
        if type(func) is ast.Attribute and func.attr in ("to", "cuda", "float", "half", "eval", "train"):
            return _is_module_expression(facts, func.value, placed)
        return builds_module(qualified)
    name = dotted_name(receiver)
    return name is not None and name in placed


def _nn_objects(facts: Facts) -> Set[str]:
    found: Set[str] = set()
    for assign in facts.index.assignments:
        value = assign.value
        if type(value) is ast.Call:
            qualified = facts.qualify(value.func) or ""
            if qualified.startswith("torch.nn.") and qualified.rsplit(".", 1)[-1][:1].isupper():
                found.update(n for n in (dotted_name(t) for t in assign.targets) if n)
    return found


def _backward_graph(facts: Facts) -> Dict[int, Set[str]]:
    """Names of a ``.backward()`` graph per scope, and what they were read from (``DeviceFlow._add_graph``)."""
    index = facts.index
    graph: Dict[int, Set[str]] = {}
    for call, scope in index.calls:
        func = call.func
        if type(func) is not ast.Attribute or func.attr != "backward":
            continue
        args = positional(call)
        if args:
            root = args[0]
        else:
            root = func.value
            if type(root) is ast.Call and type(root.func) is ast.Attribute and root.func.attr == "scale" and root.args:
                root = positional(root)[0]
        if type(root) is not ast.Name:
            continue
        names = graph.setdefault(id(scope), set())
        names.add(root.id)
        for binding in index.bindings[id(scope)].get(root.id, ()):
            value = binding.value
            if binding.how == "assign" and not binding.unpacked and type(value) in (ast.Attribute, ast.Subscript):
                if type(value.value) is ast.Name:
                    names.add(value.value.id)
    return graph
