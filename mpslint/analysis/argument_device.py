"""``feat.device`` for a tensor put on CUDA in a function that then mixes it with its tensor argument ``feat``.

``torch.zeros(n, device="cuda")`` and ``.cuda()`` put a tensor on the current
CUDA device. ``feat.device`` is that same device exactly when ``feat`` is on
it, and the function proves that when, right after, it combines the new
tensor with ``feat`` in an op that raises unless both are on one device (checked
on an H200 with torch 2.11: ``Expected all tensors to be on the same device``).
Wherever the original got past that op, ``feat.device`` is the device it used,
so ``device=feat.device`` / ``.to(feat.device)`` changes nothing on CUDA, and on
a Mac the new tensor follows ``feat`` to MPS, with no device picked again.

The op counts only if it runs whenever the tensor is made, and the only way
around it is an exception:

- ``torch.cat``/``stack``/``hstack``/... of a list holding both, and
  ``@``/``torch.matmul``/``mm``/``bmm``/``mv``/``dot``: these raise for any mix;
- elementwise arithmetic and comparisons (``feat + mask``): these accept a
  0-dim CPU tensor with a CUDA one (the result on CUDA), so they count only
  where ``feat`` has a dimension for sure before the op: the function has read
  ``feat.shape[i]`` or ``feat.size(i)`` on the way to it (a list has neither).

The tensor is the op's operand itself (``torch.cat([feat, torch.zeros(n).cuda()])``)
or a name bound to it (``mask = ...``) whose next read is that op, in a later
statement of the same block, with no ``return``, ``raise``, ``break``,
``continue`` or ``yield`` between them, and not inside a ``try`` that could
catch the op's error. ``feat`` is a parameter the function never rebinds, and
the op reads it by name, outside conditional expressions, ``and``/``or``,
lambdas and comprehensions.
"""

from __future__ import annotations

import ast
import bisect
from typing import Dict, List, Optional, Tuple

from mpslint.analysis.syntax import parameters, string_value

# Ops that raise for tensors on two devices, whatever their shapes.
_STRICT_CALLS = frozenset({
    "torch.matmul", "torch.mm", "torch.bmm", "torch.mv", "torch.dot",
})
_JOINS = frozenset({
    "torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack",
    "torch.dstack", "torch.column_stack",
})
_ELEMENTWISE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_COMPARISONS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_CONDITIONAL = (ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_EXITS = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef)

STRICT = "strict"
ELEMENTWISE = "elementwise"


class ArgumentDevices:
    """Per file: ``ctx.analysis(ArgumentDevices).of(node)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self._facts: Dict[ast.AST, "_FunctionFacts"] = {}

    def of(self, node: ast.AST) -> Optional[str]:
        """``feat.device`` where ``node`` (a bare ``.cuda()``, or a ``"cuda"`` placing a new tensor) can use it."""
        created = self._created(node)
        if created is None:
            return None
        statement = self.tree.statement_of(created)
        function = self._function_of(statement)
        if function is None:
            return None
        facts = self._facts.get(function)
        if facts is None:
            facts = self._facts[function] = _FunctionFacts(self.tree, function)
        found = self._op_with_argument(created, statement, facts)
        if found is None:
            return None
        param, op_statement, kind = found
        if self._may_catch(op_statement, function):
            return None
        if kind == ELEMENTWISE and not facts.has_dimension_before(self.tree, param, op_statement):
            return None
        return f"{param}.device"

    # --------------------------------------------------------------- pieces

    def _created(self, node: ast.AST) -> Optional[ast.AST]:
        """The expression whose value ``node`` puts on CUDA."""
        tree = self.tree
        if type(node) is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr == "cuda" and not node.args and not node.keywords:  # type: ignore[attr-defined]
                return node
            return None
        if string_value(node) != "cuda":
            return None
        parent = tree.parent(node)
        if type(parent) is ast.keyword and parent.arg == "device":  # type: ignore[attr-defined]
            call = tree.parent(parent)
            name = self.ctx.qualify(call.func) or ""  # type: ignore[union-attr]
            if name.startswith("torch.") and not name.startswith("torch.nn."):
                return call
            return None
        if type(parent) is ast.Call and type(parent.func) is ast.Attribute and parent.func.attr == "to" \
                and len(parent.args) == 1 and parent.args[0] is node and not parent.keywords:  # type: ignore[attr-defined]
            return parent
        return None

    def _function_of(self, statement: Optional[ast.stmt]) -> Optional[ast.AST]:
        """The function whose body holds ``statement`` (None in a class body or at module level); memoized along
        the way up, so the statements of a long ``elif`` chain (each arm nested in the one before) cost linear
        time."""
        if statement is None:
            return None
        memo = self.__dict__.setdefault("_functions", {})  # id(node) -> the answer for a statement below it
        chain = []
        found: Optional[ast.AST] = None
        for ancestor in self.tree.ancestors(statement):
            if id(ancestor) in memo:
                found = memo[id(ancestor)]
                break
            if type(ancestor) in _FUNCTIONS:
                found = ancestor
                break
            if type(ancestor) in (ast.ClassDef, ast.Lambda):
                break
            chain.append(ancestor)
        for visited in chain:
            memo[id(visited)] = found
        return found

    def _op_with_argument(self, created: ast.AST, statement: ast.stmt, facts: "_FunctionFacts"):
        """(parameter, the op's statement, STRICT or ELEMENTWISE) of the op mixing the new tensor with a parameter."""
        direct = self._partner(created, statement, facts)
        if direct is not None:
            return direct[0], statement, direct[1]
        tree = self.tree
        if type(statement) is not ast.Assign or statement.value is not created or len(statement.targets) != 1 \
                or type(statement.targets[0]) is not ast.Name:  # type: ignore[attr-defined]
            return None
        name = statement.targets[0].id  # type: ignore[attr-defined]
        read = facts.next_load(name, tree.end(statement))
        if read is None:
            return None
        op_statement = tree.statement_of(read)
        place, op_place = tree.block_of(statement), tree.block_of(op_statement) if op_statement else None
        if place is None or op_place is None or place[0] is not op_place[0] or isinstance(op_statement, _COMPOUND):
            return None
        start, stop = tree.end(statement), tree.index(op_statement)
        if facts.any_between(facts.exits, start, stop) or facts.any_between(facts.stores.get(name, []), start, stop):
            return None
        found = self._partner(read, op_statement, facts)
        if found is None:
            return None
        return found[0], op_statement, found[1]

    def _partner(self, operand: ast.AST, statement: ast.stmt, facts: "_FunctionFacts") -> Optional[Tuple[str, str]]:
        """(parameter, kind) when ``operand`` meets a parameter by name in a same-device op, run unconditionally."""
        tree = self.tree
        parent = tree.parent(operand)
        found: Optional[Tuple[List[ast.AST], str, ast.AST]] = None
        if type(parent) is ast.BinOp:
            other = parent.right if parent.left is operand else parent.left  # type: ignore[attr-defined]
            op = parent.op  # type: ignore[attr-defined]
            if type(op) is ast.MatMult:
                found = ([other], STRICT, parent)
            elif isinstance(op, _ELEMENTWISE_OPS):
                found = ([other], ELEMENTWISE, parent)
        elif type(parent) is ast.Compare and len(parent.ops) == 1 and isinstance(parent.ops[0], _COMPARISONS):  # type: ignore[attr-defined]
            other = parent.comparators[0] if parent.left is operand else parent.left  # type: ignore[attr-defined]
            found = ([other], ELEMENTWISE, parent)
        elif type(parent) in (ast.List, ast.Tuple):
            call = tree.parent(parent)
            if type(call) is ast.Call and call.args and call.args[0] is parent \
                    and (self.ctx.qualify(call.func) or "") in _JOINS:  # type: ignore[attr-defined]
                found = ([e for e in parent.elts if e is not operand], STRICT, call)  # type: ignore[attr-defined]
        elif type(parent) is ast.Call and operand in parent.args and len(parent.args) == 2 and not parent.keywords \
                and (self.ctx.qualify(parent.func) or "") in _STRICT_CALLS:  # type: ignore[attr-defined]
            found = ([a for a in parent.args if a is not operand], STRICT, parent)  # type: ignore[attr-defined]
        if found is None:
            return None
        others, kind, op = found
        for ancestor in tree.ancestors(op):
            if ancestor is statement:
                break
            if isinstance(ancestor, _CONDITIONAL):
                return None
        for other in others:
            if type(other) is ast.Name and other.id in facts.tensor_params:  # type: ignore[attr-defined]
                return other.id, kind  # type: ignore[attr-defined]
        return None

    def _may_catch(self, statement: ast.stmt, function: ast.AST) -> bool:
        """Inside the body of a ``try`` with handlers (in this function): the op's error may be caught there."""
        tree = self.tree
        for holder in (statement, *tree.ancestors(statement)):
            if holder is function:
                return False
            owner = tree.block_owner(holder) if isinstance(holder, ast.stmt) else None
            if owner is not None and type(owner[0]).__name__ in ("Try", "TryStar") and owner[1] == "body" \
                    and owner[0].handlers:  # type: ignore[attr-defined]
                return True
        return False


class _FunctionFacts:
    """One walk over a function: where names are read and bound, where it can leave the straight line."""

    def __init__(self, tree, function) -> None:
        self.loads: Dict[str, List[int]] = {}
        self.load_nodes: Dict[str, List[ast.AST]] = {}
        self.stores: Dict[str, List[int]] = {}
        self.exits: List[int] = []
        self.dimensions: Dict[str, List[ast.AST]] = {}  # reads that fail on a 0-dim tensor
        first, last = tree.index(function), tree.end(function)
        nodes = tree.nodes
        for position in range(first + 1, last + 1):
            node = nodes[position]
            cls = type(node)
            if cls is ast.Name:
                if type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                    self.loads.setdefault(node.id, []).append(position)  # type: ignore[attr-defined]
                    self.load_nodes.setdefault(node.id, []).append(node)  # type: ignore[attr-defined]
                else:
                    self.stores.setdefault(node.id, []).append(position)  # type: ignore[attr-defined]
            elif cls in (ast.Global, ast.Nonlocal):
                for name in node.names:  # type: ignore[attr-defined]
                    self.stores.setdefault(name, []).append(position)
            elif cls is ast.arg and position > tree.end(function.args):
                self.stores.setdefault(node.arg, []).append(position)  # a nested function's parameter  # type: ignore[attr-defined]
            elif isinstance(node, _EXITS):
                self.exits.append(position)
            else:
                name = _dimension_read(node)
                if name is not None:
                    self.dimensions.setdefault(name, []).append(node)
        self.tensor_params = frozenset(
            p.arg for p in parameters(function)
            if p.arg not in ("self", "cls") and p.arg not in self.stores and _may_be_tensor(p)
            and p not in (function.args.vararg, function.args.kwarg)
        )

    def next_load(self, name: str, after: int) -> Optional[ast.AST]:
        positions = self.loads.get(name, [])
        at = bisect.bisect_right(positions, after)
        return self.load_nodes[name][at] if at < len(positions) else None

    @staticmethod
    def any_between(positions: List[int], start: int, stop: int) -> bool:
        at = bisect.bisect_right(positions, start)
        return at < len(positions) and positions[at] < stop

    def has_dimension_before(self, tree, name: str, statement: ast.stmt) -> bool:
        """A read of ``name`` that fails on a 0-dim tensor runs before (or in) ``statement`` on every path to it."""
        reads = self.dimensions.get(name)
        if not reads:
            return False
        on_path: Dict[int, int] = {}  # the blocks on the way from the function to `statement` -> position there
        for holder in (statement, *tree.ancestors(statement)):
            place = tree.block_of(holder) if isinstance(holder, ast.stmt) else None
            if place is not None:
                on_path[id(place[0])] = place[1]
        for read in reads:
            host = tree.statement_of(read)
            if host is None or isinstance(host, _COMPOUND) and host is not statement:
                continue
            place = tree.block_of(host)
            if place is not None and id(place[0]) in on_path and place[1] <= on_path[id(place[0])]:
                return True
        return False


def _dimension_read(node: ast.AST) -> Optional[str]:
    """``x`` for ``x.shape[i]``, ``x.size(i)``: reads that raise on a 0-dim tensor (and on a list: no ``len``)."""
    cls = type(node)
    if cls is ast.Subscript:
        value = node.value  # type: ignore[attr-defined]
        if type(value) is ast.Attribute and value.attr == "shape" and type(value.value) is ast.Name:
            return value.value.id
        return None
    if cls is ast.Call:
        func = node.func  # type: ignore[attr-defined]
        args = node.args  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr == "size" and type(func.value) is ast.Name and len(args) == 1 \
                and not node.keywords:  # type: ignore[attr-defined]
            return func.value.id
    return None


def _may_be_tensor(param: ast.arg) -> bool:
    annotation = param.annotation
    if annotation is None:
        return True
    return "Tensor" in ast.dump(annotation)
