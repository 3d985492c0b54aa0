"""One module's summary: what its top-level names are and what its functions return.

``summarize(module)`` reads one ``ast`` and no other file: imports are kept as
written (relative ones with their level), and the ``model`` resolves them
against the project. What a summary holds:

- ``imports``: local name -> ``["import", "a.b"]`` or ``["from", level, "pkg.mod", "name"]``;
- ``stars``: the ``from M import *`` of the module, ``[level, "M"]``;
- ``exports``: ``__all__`` when the module spells it as a literal list or tuple;
- ``names``: every name bound at the top level (what a star import brings without ``__all__``);
- ``aliases``: names bound once in the whole file to a qualified name of an
  imported module (``DTYPE = torch.float64``, ``precision_scope = autocast``);
- ``values``: the fact of each top-level name the module assigns (``facts``);
- ``functions``: the return fact of each top-level function and of each method
  (``Class.method``), in terms of its arguments (``arg:K``: on the device of
  the K-th positional argument, ``self`` not counted).

Cost: one walk of the tree for the bindings, one per function body (nested
functions are not summarized), every fact memoized: linear in the module.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from mpslint.analysis.names import ImportTable
from mpslint.analysis.project import facts
from mpslint.analysis.project.evaluate import Evaluator
from mpslint.analysis.syntax import dotted_name

FORMAT = 2  # bump when what a summary holds changes: cached summaries of another format are not read

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class ModuleSummary:
    imports: Dict[str, list] = field(default_factory=dict)
    stars: List[list] = field(default_factory=list)
    exports: Optional[List[str]] = None
    names: List[str] = field(default_factory=list)
    aliases: Dict[str, str] = field(default_factory=dict)
    values: Dict[str, str] = field(default_factory=dict)
    functions: Dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "ModuleSummary":
        return cls(**json.loads(text))

    @property
    def digest(self) -> str:
        """A digest of what the summary says (computed once: a summary is not changed once made)."""
        found = self.__dict__.get("_digest")
        if found is None:
            found = self.__dict__["_digest"] = hashlib.blake2b(self.to_json().encode(), digest_size=12).hexdigest()
        return found

    def exported(self) -> List[str]:
        """The names ``from this import *`` binds."""
        if self.exports is not None:
            return list(self.exports)
        return [name for name in self.names if not name.startswith("_")]


def summarize(module: ast.Module, *, facts: bool = True) -> ModuleSummary:
    """The module's summary; without ``facts``, only its names, imports and aliases (what resolving the
    module's own imports needs: cheap, as no function body is read)."""
    return _Summarizer(module, facts).summary


_BLOCKS = ("body", "orelse", "finalbody")


def _body_nodes(body: List[ast.stmt]):
    """Every statement of these blocks, nested blocks too, not entering functions or classes; a ``with``
    statement's items follow it. Statements only: what binds a top-level name or a function's local, or
    returns, is a statement (a walrus is not followed), and expressions are most of a tree's nodes."""
    stack: List[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        cls = type(node)
        if cls in _SCOPES:
            continue
        if cls is ast.With or cls is ast.AsyncWith:
            yield from node.items  # type: ignore[attr-defined]
        if cls is ast.If and _type_checking(node.test):  # type: ignore[attr-defined]
            stack.extend(reversed(node.orelse))  # type: ignore[attr-defined]
            continue  # what only a type checker runs binds nothing at run time
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if block:
                stack.extend(reversed(block))
        if cls is ast.Try or cls.__name__ == "TryStar":
            for handler in reversed(node.handlers):  # type: ignore[attr-defined]
                stack.extend(reversed(handler.body))
        elif cls.__name__ == "Match":
            for case in reversed(node.cases):  # type: ignore[attr-defined]
                stack.extend(reversed(case.body))


def _type_checking(test: ast.AST) -> bool:
    return dotted_name(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


class _Summarizer:
    def __init__(self, module: ast.Module, with_facts: bool = True) -> None:
        self.summary = ModuleSummary()
        self.table = ImportTable()
        self.assignments: Dict[str, List[Optional[ast.AST]]] = {}  # top-level name -> assigned values (None: unknown)
        self.functions: Dict[str, ast.AST] = {}  # name or Class.method -> definition
        self.methods: Dict[str, bool] = {}  # the same keys: whether the first parameter is self/cls
        self.memo: Dict[Tuple[str, str], Optional[str]] = {}
        self.busy: Set[Tuple[str, str]] = set()
        self._read_top_level(module)
        self._read_aliases(module)
        summary = self.summary
        if not with_facts:
            return
        for name in sorted(self.assignments):
            fact = self.value(name)
            if fact is not None:
                summary.values[name] = fact
        for name in sorted(self.functions):
            fact = self.returns(name)
            if fact is not None:
                summary.functions[name] = fact

    # ------------------------------------------------------------ reading

    def _read_top_level(self, module: ast.Module) -> None:
        summary = self.summary
        names: Set[str] = set()
        self.unconditional = {id(statement.value) for statement in module.body  # type: ignore[attr-defined]
                              if type(statement) is ast.Assign}
        for node in _body_nodes(module.body):
            cls = type(node)
            if cls is ast.Import or cls is ast.ImportFrom:
                self.table.add(node)
                self._read_import(node, names)  # type: ignore[arg-type]
            elif cls is ast.Assign:
                for target in node.targets:  # type: ignore[attr-defined]
                    self._assign(target, node.value, names)  # type: ignore[attr-defined]
                    if type(target) is ast.Name and target.id == "__all__":  # type: ignore[attr-defined]
                        summary.exports = _literal_names(node.value)  # type: ignore[attr-defined]
            elif cls is ast.AnnAssign and node.value is not None:  # type: ignore[attr-defined]
                self._assign(node.target, node.value, names)  # type: ignore[attr-defined]
            elif cls is ast.AugAssign:
                self._assign(node.target, None, names)  # type: ignore[attr-defined]
                if type(node.target) is ast.Name and node.target.id == "__all__":  # type: ignore[attr-defined]
                    summary.exports = None  # built up: not a literal any more
            elif cls in (ast.For, ast.AsyncFor):
                self._assign(node.target, None, names)  # type: ignore[attr-defined]
            elif cls is ast.withitem and node.optional_vars is not None:  # type: ignore[attr-defined]
                self._assign(node.optional_vars, None, names)  # type: ignore[attr-defined]
            elif cls in _FUNCTIONS:
                names.add(node.name)  # type: ignore[attr-defined]
                self.functions[node.name] = node  # type: ignore[attr-defined]
                self.methods[node.name] = False  # type: ignore[attr-defined]
            elif cls is ast.ClassDef:
                names.add(node.name)  # type: ignore[attr-defined]
                for item in node.body:  # type: ignore[attr-defined]
                    if isinstance(item, _FUNCTIONS):
                        key = f"{node.name}.{item.name}"  # type: ignore[attr-defined]
                        self.functions[key] = item
                        self.methods[key] = not any(dotted_name(d) == "staticmethod" for d in item.decorator_list)
        summary.names = sorted(names)

    def _read_import(self, node, names: Set[str]) -> None:
        imports = self.summary.imports
        if type(node) is ast.Import:
            for alias in node.names:
                if alias.asname:
                    imports[alias.asname] = ["import", alias.name]
                    names.add(alias.asname)
                else:
                    root = alias.name.split(".", 1)[0]
                    imports[root] = ["import", root]
                    names.add(root)
            return
        for alias in node.names:
            if alias.name == "*":
                self.summary.stars.append([node.level, node.module or ""])
            else:
                local = alias.asname or alias.name
                imports[local] = ["from", node.level, node.module or "", alias.name]
                names.add(local)

    def _assign(self, target: ast.AST, value: Optional[ast.AST], names: Set[str]) -> None:
        if type(target) is ast.Name:
            names.add(target.id)  # type: ignore[attr-defined]
            self.assignments.setdefault(target.id, []).append(value)  # type: ignore[attr-defined]
        elif type(target) in (ast.Tuple, ast.List):
            for element in target.elts:  # type: ignore[attr-defined]
                self._assign(element.value if type(element) is ast.Starred else element, None, names)

    def _read_aliases(self, module: ast.Module) -> None:
        """``X = torch.float64`` bound once in the file, and never a parameter or loop variable anywhere."""
        candidates = {
            name: values[0] for name, values in self.assignments.items()
            if len(values) == 1 and type(values[0]) in (ast.Name, ast.Attribute) and name not in self.summary.imports
            and self.table.qualify(values[0]) is not None  # type: ignore[arg-type]
        }
        if not candidates:
            return  # most modules: no walk of the whole tree
        counts: Dict[str, int] = {}
        for node in ast.walk(module):
            cls = type(node)
            if cls is ast.Name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                counts[node.id] = counts.get(node.id, 0) + 1  # type: ignore[attr-defined]
            elif cls is ast.arg:
                counts[node.arg] = counts.get(node.arg, 0) + 2  # type: ignore[attr-defined]
            elif cls in _FUNCTIONS or cls is ast.ClassDef:
                counts[node.name] = counts.get(node.name, 0) + 2  # type: ignore[attr-defined]
        for name, value in candidates.items():
            if counts.get(name) == 1:
                self.summary.aliases[name] = self.table.qualify(value)  # type: ignore[assignment]

    # ------------------------------------------------------------ facts

    def value(self, name: str) -> Optional[str]:
        """A top-level name's fact: every module-level assignment of it agrees."""
        return self._memoized(("value", name), lambda: self._value(name))

    def _value(self, name: str) -> Optional[str]:
        values = self.assignments.get(name)
        if not values or any(v is None for v in values):
            return None
        evaluator = Evaluator(self.table.bindings, self._module_lookup, self._module_call)
        found = [evaluator.fact(v) for v in values]
        result = found[0]
        for other in found[1:]:
            result = facts.join(result, other)
        if result is None and len(values) == 1 and type(values[0]) in (ast.Dict, ast.Call) \
                and id(values[0]) in self.unconditional:
            return _kwargs_fact(values[0], self.table)  # not under `if use_cuda:`: it pins for every device
        return result

    def _module_lookup(self, name: str) -> Optional[str]:
        if name in self.assignments:
            return self.value(name)
        return None

    def _module_call(self, call: ast.Call) -> Optional[str]:
        func = call.func
        if type(func) is not ast.Name or func.id not in self.functions:  # type: ignore[attr-defined]
            return None
        return self._applied(self.returns(func.id), call, self._module_lookup, self._module_call)  # type: ignore[attr-defined]

    def _applied(self, fact: Optional[str], call: ast.Call, lookup, call_fact) -> Optional[str]:
        """A function's return fact at one call: ``arg:K`` becomes the fact of the K-th argument there."""
        positions = facts.argument_positions(fact)
        if not positions:
            return fact
        evaluator = Evaluator(self.table.bindings, lookup, call_fact)
        result: Optional[str] = None
        for i, position in enumerate(positions):
            if position >= len(call.args) or any(type(a) is ast.Starred for a in call.args[: position + 1]):
                return None
            found = evaluator.fact(call.args[position])
            result = found if i == 0 else facts.combined(result, found)
        return result

    def returns(self, key: str) -> Optional[str]:
        return self._memoized(("returns", key), lambda: self._returns(key))

    def _returns(self, key: str) -> Optional[str]:
        function = self.functions[key]
        args = function.args  # type: ignore[attr-defined]
        ordered = [*args.posonlyargs, *args.args]
        if self.methods.get(key) and ordered:
            ordered = ordered[1:]
        local: Dict[str, List[Optional[ast.AST]]] = {}
        params = {a.arg: i for i, a in enumerate(ordered)}
        for extra in (*args.kwonlyargs, args.vararg, args.kwarg):
            if extra is not None:
                local[extra.arg] = [None]
        returns: List[Optional[ast.AST]] = []
        local_statements: Dict[int, ast.AST] = {}  # id of an assigned value -> its statement
        appended: Dict[str, List[ast.AST]] = {}  # `res.append(v)`: name -> the values appended to it
        for node in _body_nodes(function.body):  # type: ignore[attr-defined]
            cls = type(node)
            if cls is ast.Return:
                returns.append(node.value)  # type: ignore[attr-defined]
            elif cls is ast.Assign:
                local_statements[id(node.value)] = node  # type: ignore[attr-defined]
                for target in node.targets:  # type: ignore[attr-defined]
                    for part in _local_assign(local, target, node.value):  # type: ignore[attr-defined]
                        local_statements[id(part)] = node
            elif cls is ast.Expr and _appended(node.value):  # type: ignore[attr-defined]
                call = node.value  # type: ignore[attr-defined]
                appended.setdefault(call.func.value.id, []).append(call.args[0])
            elif cls is ast.AnnAssign and node.value is not None:  # type: ignore[attr-defined]
                local_statements[id(node.value)] = node  # type: ignore[attr-defined]
                _local_assign(local, node.target, node.value)  # type: ignore[attr-defined]
            elif cls is ast.AugAssign and type(node.target) is ast.Name:  # type: ignore[attr-defined]
                local.setdefault(node.target.id, []).append(node)  # type: ignore[attr-defined]
            elif cls in (ast.For, ast.AsyncFor):
                _local_assign(local, node.target, None)  # type: ignore[attr-defined]
            elif cls is ast.withitem and node.optional_vars is not None:  # type: ignore[attr-defined]
                _local_assign(local, node.optional_vars, None)  # type: ignore[attr-defined]
        returned = [r for r in returns if not (r is None or (type(r) is ast.Constant and r.value is None))]  # type: ignore[attr-defined]
        if not returned:
            return None
        owner = key.split(".", 1)[0] if "." in key else None
        straight = set(map(id, function.body))  # type: ignore[attr-defined]
        running: Dict[str, Optional[str]] = {}  # a name's fact while its own assignments are read
        memo: Dict[str, Optional[str]] = {}

        def lookup(name: str) -> Optional[str]:
            if name in running:
                return running[name]
            if name in memo:
                return memo[name]
            if name in appended:
                # `res = []; for k in topk: res.append(correct_k.mul_(100.0 / n)); return res`: a list of
                # what was appended (indexing it gives one of them); a list that held more is not known
                result = None
                if name not in params and local.get(name) and all(_empty_list(v) for v in local[name]):
                    running[name] = None
                    found = [evaluator.fact(v) for v in appended[name]]
                    del running[name]
                    result = found[0]
                    for other in found[1:]:
                        result = facts.join(result, other)
                memo[name] = result if _tensor_fact(result) else None
                return memo[name]
            if name in local:
                # In source order: an assignment in the function's own body replaces the value
                # (`batch = batch.to(device)`), one inside a branch or loop may or may not run.
                running[name] = facts.argument(params[name]) if name in params else None
                first = name not in params
                for value in local[name]:
                    if value is None:
                        running[name] = None
                        break
                    if type(value) is ast.AugAssign:
                        fact = _aug(running[name], evaluator.fact(value.value))  # type: ignore[attr-defined]
                        replaces = True
                    else:
                        fact = evaluator.fact(value)
                        replaces = first or id(_statement_of(value, local_statements)) in straight
                    running[name] = fact if replaces else facts.join(running[name], fact)
                    first = False
                memo[name] = running.pop(name)
                return memo[name]
            if name in params:
                return facts.argument(params[name])
            return self._module_lookup(name)

        def call_fact(call: ast.Call) -> Optional[str]:
            func = call.func
            if owner is not None and type(func) is ast.Attribute and type(func.value) is ast.Name \
                    and func.value.id == "self" and f"{owner}.{func.attr}" in self.functions:  # type: ignore[attr-defined]
                return self._applied(self.returns(f"{owner}.{func.attr}"), call, lookup, call_fact)  # type: ignore[attr-defined]
            if type(func) is ast.Name and func.id in self.functions and func.id not in local:  # type: ignore[attr-defined]
                return self._applied(self.returns(func.id), call, lookup, call_fact)  # type: ignore[attr-defined]
            return None

        evaluator = Evaluator(self.table.bindings, lookup, call_fact)
        try:
            result = evaluator.fact(returned[0])
            for value in returned[1:]:
                result = facts.join(result, evaluator.fact(value))
        finally:
            # The closures and the evaluator refer to one another (and call_fact to itself).
            evaluator = lookup = call_fact = None  # type: ignore[assignment]
        return result

    def _memoized(self, key: Tuple[str, str], compute) -> Optional[str]:
        if key in self.memo:
            return self.memo[key]
        if key in self.busy:
            return None  # a function returning its own call, a name defined through itself: not known
        self.busy.add(key)
        try:
            result = compute()
        finally:
            self.busy.discard(key)
        self.memo[key] = result
        return result


def _local_assign(local: Dict[str, List[Optional[ast.AST]]], target: ast.AST, value: Optional[ast.AST]) -> List[ast.AST]:
    """Record what ``target = value`` binds; return the values made up for the parts of an unpacking."""
    if type(target) is ast.Name:
        local.setdefault(target.id, []).append(value)  # type: ignore[attr-defined]
        return []
    made: List[ast.AST] = []
    if type(target) in (ast.Tuple, ast.List):
        for i, element in enumerate(target.elts):  # type: ignore[attr-defined]
            part: Optional[ast.AST] = None
            if type(element) is not ast.Starred and type(value) is ast.Call:
                # `_, pred = output.topk(k, 1)`: each part of a tensor method's (or helper's) result is where
                # the result is; the evaluator reads an index of a tensor fact as that fact, of others as unknown
                part = ast.Subscript(value=value, slice=ast.Constant(i), ctx=ast.Load())
                made.append(part)
            made += _local_assign(local, element.value if type(element) is ast.Starred else element, part)
    return made


def _appended(value: ast.AST) -> bool:
    """``name.append(v)``."""
    return (type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr == "append"  # type: ignore[attr-defined]
            and type(value.func.value) is ast.Name and len(value.args) == 1 and not value.keywords)  # type: ignore[attr-defined]


def _empty_list(value: Optional[ast.AST]) -> bool:
    return type(value) is ast.List and not value.elts  # type: ignore[attr-defined]


def _tensor_fact(fact: Optional[str]) -> bool:
    return fact in (facts.DEVICE_TENSOR, facts.HOST_TENSOR) or facts.argument_position(fact) is not None


def _statement_of(value: ast.AST, statements: Dict[int, ast.AST]) -> Optional[ast.AST]:
    return statements.get(id(value))


def _aug(before: Optional[str], operand: Optional[str]) -> Optional[str]:
    """``rt /= world_size``: an in-place operation leaves the tensor where it was, whatever the operand."""
    if before in (facts.DEVICE_TENSOR, facts.HOST_TENSOR) or facts.argument_position(before) is not None:
        return before
    return None


def _literal_names(node: ast.AST) -> Optional[List[str]]:
    if type(node) in (ast.List, ast.Tuple):
        names = [e.value for e in node.elts if type(e) is ast.Constant and isinstance(e.value, str)]  # type: ignore[attr-defined]
        if len(names) == len(node.elts):  # type: ignore[attr-defined]
            return names
    return None


KWARGS_KEYS = ("pin_memory", "num_workers", "multiprocessing_context", "persistent_workers")


def _kwargs_fact(node: ast.AST, table: ImportTable) -> Optional[str]:
    """``{"pin_memory": True, "num_workers": 4}`` / ``dict(pin_memory=True)``: the DataLoader keys it sets."""
    pairs: List[Tuple[str, ast.AST]] = []
    if type(node) is ast.Dict:
        for key, value in zip(node.keys, node.values):  # type: ignore[attr-defined]
            if type(key) is ast.Constant and isinstance(key.value, str):
                pairs.append((key.value, value))
    elif type(node) is ast.Call and dotted_name(node.func) == "dict" and not node.args:  # type: ignore[attr-defined]
        pairs = [(k.arg, k.value) for k in node.keywords if k.arg is not None]  # type: ignore[attr-defined]
    set_keys = sorted(
        f"{key}={value.value!r}" for key, value in pairs
        if key in KWARGS_KEYS and type(value) is ast.Constant and value.value not in (None, False, 0)  # type: ignore[attr-defined]
    )
    return facts.KWARGS + ",".join(set_keys) if set_keys else None
