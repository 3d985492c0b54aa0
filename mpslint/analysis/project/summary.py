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
  the K-th positional argument, ``self`` not counted);
- ``modules``: the top-level classes that subclass a module class (``nn.Module``,
  directly or through a class of the module): their ``self(...)`` is a model call;
- ``starts``: the top-level functions and classes whose call starts worker
  processes (``analysis/processes.py``);
- ``device_options``: the options of a parsed-arguments object (``args.use_gpu``,
  ``self.args.use_gpu``) that an ``if`` reads as a CUDA device choice
  (``namespace_flags.py``).

Not in a summary, asked only when a rule needs it: ``calls_to(module, source,
function)``, what the module passes to a function it imports (``callers.py``).

Cost: one walk of the tree for the bindings, one per function body (nested
functions are not summarized), every fact memoized: linear in the module.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from mpslint.analysis import processes
from mpslint.analysis.memo import CycleMemo
from mpslint.analysis.names import LIBRARIES, ImportTable
from mpslint.analysis.project import facts
from mpslint.analysis.project.evaluate import MODULE_BASES, MODULE_LIKE, Evaluator, names_a_device, string_fact
from mpslint.analysis.project.namespace_flags import device_options, may_read_options
from mpslint.analysis.syntax import calls_in, dotted_name
from mpslint.analysis.tree import walk

FORMAT = 8  # bump when what a summary holds changes: cached summaries of another format are not read

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
    # Top-level classes that subclass a module class (``nn.Module``), directly or through a class of the module.
    modules: List[str] = field(default_factory=list)
    starts: List[str] = field(default_factory=list)
    device_options: List[str] = field(default_factory=list)

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


def summarize(module: ast.Module, *, facts: bool = True, source: Optional[bytes] = None) -> ModuleSummary:
    """The module's summary; without ``facts``, only its names, imports and aliases (what resolving the
    module's own imports needs: cheap, as no function body is read). ``source``, the module's text when
    known, lets a summary skip what the text cannot hold."""
    return _Summarizer(module, facts, source).summary


class LazyFacts:
    """A module's function facts, each computed when first asked: the file being checked asks about a few of
    its functions, and its summary would compute every one.

    Answers are those of ``summarize``: a fact whose computation met no cycle (a function reached again
    while being computed) does not depend on which function was asked first. ``function`` says when a
    cycle was met; its caller then asks the whole summary, which computes every fact in a fixed order.
    """

    def __init__(self, module: ast.Module) -> None:
        self._summarizer = _Summarizer(module, False)
        self.header = self._summarizer.summary  # names, imports and aliases: ``summarize(module, facts=False)``

    def function(self, key: str) -> Tuple[bool, Optional[str]]:
        """(whether the answer is settled, the return fact of function or method ``key``)."""
        summarizer = self._summarizer
        if key not in summarizer.functions:
            return True, None
        fact = summarizer.returns(key)
        return summarizer.memo.cycles == 0, fact


def calls_to(module: ast.Module, source: Optional[bytes], function: str) -> Dict[str, List[Optional[str]]]:
    """What this module passes to ``function``, a function it imports from the project, by the name it calls
    it (``accuracy``, ``utils.accuracy``): per positional argument, what the calls here pass (``facts.some_call``).
    ``source``, the module's text when known, lets only the functions whose lines call it be read."""
    return _Summarizer(module, False)._calls_to(function, source)


def star_imports(module: ast.Module) -> List[ast.ImportFrom]:
    """The module's ``from x import *`` statements, in the order its summary's ``stars`` lists them."""
    return [node for node in _body_nodes(module.body)  # type: ignore[misc]
            if type(node) is ast.ImportFrom and any(alias.name == "*" for alias in node.names)]  # type: ignore[attr-defined]


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
    def __init__(self, module: ast.Module, with_facts: bool = True, source: Optional[bytes] = None) -> None:
        self.module = module
        self.summary = ModuleSummary()
        self.table = ImportTable()
        self.assignments: Dict[str, List[Optional[ast.AST]]] = {}  # top-level name -> assigned values (None: unknown)
        self.functions: Dict[str, ast.AST] = {}  # name or Class.method -> definition
        self.methods: Dict[str, bool] = {}  # the same keys: whether the first parameter is self/cls
        self.classes: Dict[str, ast.ClassDef] = {}
        # A fact asked for while it is being computed (a function returning its own call) is not known.
        self.memo: CycleMemo[Optional[str]] = CycleMemo(None)
        self.attributes: Dict[str, Dict[str, List[Tuple[str, ast.AST]]]] = {}  # class -> its self.<name> assignments
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
        if processes.may_start(self.table.bindings):
            summary.starts = processes.starting(self.functions, self.classes, self.table.qualify)
        if source is None or may_read_options(source):
            summary.device_options = device_options(self._statements())

    def _statements(self):
        """Every statement of the module's top level and of its functions and methods (nested ones aside)."""
        yield from _body_nodes(self.module.body)
        for function in self.functions.values():
            yield from _body_nodes(function.body)  # type: ignore[attr-defined]

    # ------------------------------------------------------------ reading

    def _read_top_level(self, module: ast.Module) -> None:
        summary = self.summary
        names: Set[str] = set()
        classes: List[ast.ClassDef] = []
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
                classes.append(node)  # type: ignore[arg-type]
                self.classes[node.name] = node  # type: ignore[attr-defined,assignment]
                for item in node.body:  # type: ignore[attr-defined]
                    if isinstance(item, _FUNCTIONS):
                        key = f"{node.name}.{item.name}"  # type: ignore[attr-defined]
                        self.functions[key] = item
                        self.methods[key] = not any(dotted_name(d) == "staticmethod" for d in item.decorator_list)
        summary.names = sorted(names)
        summary.modules = self._module_classes(classes)

    def _module_classes(self, classes: List[ast.ClassDef]) -> List[str]:
        """The classes whose bases name a module class of torch (or Lightning, transformers) or of this module."""
        by_name: Dict[str, List[ast.ClassDef]] = {}
        for node in classes:
            by_name.setdefault(node.name, []).append(node)
        memo: Dict[str, bool] = {}
        return sorted(name for name in by_name if self._is_module(name, 0, by_name, memo))

    def _is_module(self, name: str, depth: int, by_name: Dict[str, List[ast.ClassDef]], memo: Dict[str, bool]) -> bool:
        # A method, not a recursive closure: a closure that calls itself is a reference cycle, and it would keep
        # the module's tree alive until the cyclic collector runs (tests/test_engine.py).
        known = memo.get(name)
        if known is not None:
            return known
        if depth > 8:
            return False  # a chain of bases deeper than real code has: not followed (and not memoized)
        memo[name] = False  # a cycle of bases is no module
        result = all(any(self.table.qualify(base) in MODULE_BASES
                         or (dotted_name(base) in by_name
                             and self._is_module(dotted_name(base), depth + 1, by_name, memo))  # type: ignore[arg-type]
                         for base in node.bases)
                     for node in by_name[name])
        memo[name] = result
        return result

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
        for node in walk(module):
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
        return self.memo.get(("value", name), lambda: self._value(name))

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
        read = facts.host_read_of(fact)
        if read is not None:
            # `def to_np(x): return tonumpy(x)`: a read of this function's own argument, or a value read here
            found = [self._applied(facts.argument(p), call, lookup, call_fact) for p in read[1]]
            positions = tuple(p for f in found for p in facts.argument_positions(f))
            return facts.host_read(read[0], positions) if positions and len(positions) == len(found) else facts.HOST
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
        return self.memo.get(("returns", key), lambda: self._returns(key))

    def attribute(self, owner: str, name: str) -> Optional[str]:
        """What ``self.<name>`` holds in the methods of class ``owner``: what its methods assign it, when they
        agree (``self.x = np.random.randn(n, 3)`` in ``__init__``: float64)."""
        found = self.memo.get(("attributes", owner), lambda: self._attribute_facts(owner))
        return found.get(name) if found else None  # type: ignore[union-attr]

    def _attribute_facts(self, owner: str):
        """Every ``self.<name>``'s fact, each method's assignments read in one pass over it (an attribute read
        while they are being computed, ``self.y = self.x * 2``, is not known)."""
        by_method: Dict[str, List[Tuple[str, ast.AST]]] = {}
        for name, rows in self._self_assignments(owner).items():
            for key, value in rows:
                by_method.setdefault(key, []).append((name, value))
        result: Dict[str, Optional[str]] = {}
        for key, rows in by_method.items():
            _, evaluator, close, _ = self._scope(key)
            try:
                for name, value in rows:
                    fact = evaluator.fact(value)
                    result[name] = facts.join(result[name], fact) if name in result else fact
            finally:
                close()
        return result

    def _self_assignments(self, owner: str) -> Dict[str, List[Tuple[str, ast.AST]]]:
        """``self.<name> = value`` in the methods of class ``owner``: name -> (method, value), read once per class."""
        found = self.attributes.get(owner)
        if found is None:
            found = self.attributes[owner] = {}
            for key, function in self.functions.items():
                if not key.startswith(owner + ".") or not self.methods.get(key):
                    continue
                for node in _body_nodes(function.body):  # type: ignore[attr-defined]
                    if type(node) in (ast.Assign, ast.AnnAssign) and node.value is not None:  # type: ignore[attr-defined]
                        for target in _targets(node):
                            if type(target) is ast.Attribute and type(target.value) is ast.Name \
                                    and target.value.id == "self":  # type: ignore[attr-defined]
                                found.setdefault(target.attr, []).append((key, node.value))  # type: ignore[attr-defined]
        return found

    def _returns(self, key: str) -> Optional[str]:
        returned, evaluator, close, _ = self._scope(key)
        try:
            if not returned:
                return None
            result = evaluator.fact(returned[0])
            for value in returned[1:]:
                result = facts.join(result, evaluator.fact(value))
            return result
        finally:
            close()

    def _scope(self, key: Optional[str], sites: bool = False):
        """(returned values, an evaluator of expressions in the function's body, a function that frees them).

        ``key`` None: the module's own body. ``sites``: the evaluator is for the arguments of calls
        (``calls_to``): a parameter is not known, and a module this file placed on the device (``placed``)
        gives device tensors when called.
        """
        local: Dict[str, List[Optional[ast.AST]]] = {}
        spots: Dict[str, List[Tuple[int, int]]] = {}  # where each of a local's assignments is, in the same order
        params: Dict[str, int] = {}
        returned: List[ast.AST] = []
        appended: Dict[str, List[ast.AST]] = {}  # `res.append(v)`: name -> the values appended to it
        owner = None
        if key is not None:
            function = self.functions[key]
            args = function.args  # type: ignore[attr-defined]
            ordered = [*args.posonlyargs, *args.args]
            if self.methods.get(key) and ordered:
                ordered = ordered[1:]
            params = {a.arg: i for i, a in enumerate(ordered)}
            for extra in (*args.kwonlyargs, args.vararg, args.kwarg):
                if extra is not None:
                    local[extra.arg] = [None]
            returns: List[Optional[ast.AST]] = []
            local_statements: Dict[int, ast.AST] = {}  # id of an assigned value -> its statement
            _collect(function.body, local, spots, local_statements, returns, appended)  # type: ignore[attr-defined]
            returned = [r for r in returns if not (r is None or (type(r) is ast.Constant and r.value is None))]  # type: ignore[attr-defined]
            owner = key.split(".", 1)[0] if "." in key else None
            straight = set(map(id, function.body))  # type: ignore[attr-defined]
        elif sites:
            # A script's own body (`output = model(features)` then `accuracy(output, labels)` at the top level):
            # an argument is what its last assignment before the call made, as in a function.
            local_statements = {}
            _collect(self.module.body, local, spots, local_statements, [], appended)
            straight = set(map(id, self.module.body))
        running: Dict[str, Optional[str]] = {}  # a name's fact while its own assignments are read
        memo: Dict[str, Optional[str]] = {}

        at: List[Tuple[int, int]] = []  # sites: where the call whose arguments are read is

        def before(name: str) -> Optional[str]:
            """Sites: the name's fact from its last assignment before ``at[-1]`` (a loop's later ones aside)."""
            values, places = local[name], spots.get(name, ())
            if len(places) != len(values):
                return None  # a keyword-only or variadic parameter
            position = at[-1]
            last = None
            for i, place in enumerate(places):
                if place < position and (last is None or place >= places[last]):
                    last = i
            if last is None:
                return None
            key = f"{name}@{places[last]}"
            if key not in memo:
                value = values[last]
                memo[key] = None
                if value is not None and type(value) is not ast.AugAssign:
                    at.append(places[last])
                    try:
                        memo[key] = evaluator.fact(value)
                    finally:
                        at.pop()
            return memo[key]

        def lookup(name: str) -> Optional[str]:
            if sites and at and name in local:
                return before(name)
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
                return None if sites else facts.argument(params[name])
            return self._module_lookup(name)

        def call_fact(call: ast.Call) -> Optional[str]:
            func = call.func
            if owner is not None and type(func) is ast.Attribute and type(func.value) is ast.Name \
                    and func.value.id == "self" and f"{owner}.{func.attr}" in self.functions:  # type: ignore[attr-defined]
                return self._applied(self.returns(f"{owner}.{func.attr}"), call, lookup, call_fact)  # type: ignore[attr-defined]
            if type(func) is ast.Name and func.id in self.functions and func.id not in local:  # type: ignore[attr-defined]
                return self._applied(self.returns(func.id), call, lookup, call_fact)  # type: ignore[attr-defined]
            own = local if key is not None else {}  # at the top level, the placed modules are these very names
            if sites and type(func) is ast.Name and _calls_a_placed_module(func.id, call, own, params,  # type: ignore[attr-defined]
                                                                         self.placed, evaluator):
                return facts.DEVICE_TENSOR
            if not sites:
                module = self._a_module(func, owner, local, params)
                if module is not None:
                    return facts.DEVICE_TENSOR if module == facts.DEVICE_TENSOR else _module_output(call, evaluator)
            return None

        attribute = (lambda name: self.attribute(owner, name)) if owner is not None else None  # type: ignore[arg-type]
        evaluator = Evaluator(self.table.bindings, lookup, call_fact, attribute)

        def close() -> None:
            # The closures and the evaluator refer to one another (and call_fact to itself).
            nonlocal evaluator, lookup, call_fact, before
            evaluator = lookup = call_fact = before = None  # type: ignore[assignment]

        return returned, evaluator, close, at

    def _calls_to(self, function: str, source: Optional[bytes]) -> Dict[str, List[Optional[str]]]:
        module = self.module
        imports = self.summary.imports
        direct = {local for local, entry in imports.items() if entry[0] == "from" and entry[3] == function}
        if self.summary.stars and function not in imports and function not in self.functions \
                and function not in self.assignments:
            direct.add(function)  # `from utils import *`: the caller (callers.py) checks that the star brings it
        modules = {  # `utils.accuracy(...)`: a project module imported by name
            local for local, entry in imports.items()
            if (entry[0] == "import" and entry[1].split(".", 1)[0] not in LIBRARIES)
            or (entry[0] == "from" and (entry[1] or entry[2].split(".", 1)[0] not in LIBRARIES)
                and not _class_like(entry[3]))
        }
        candidates = direct | modules
        if not candidates:
            return {}
        lines = _call_lines(source, direct, modules, function)
        if lines is not None and not lines:
            return {}
        self.placed = _placed_names(module.body)
        found: Dict[str, List[Optional[str]]] = {}
        scopes: List[Tuple[Optional[str], List[ast.stmt]]] = [(None, module.body)]
        scopes.extend((key, node.body) for key, node in self.functions.items()  # type: ignore[attr-defined]
                      if lines is None or _spans(node, lines))
        for key, body in scopes:
            calls = [c for c in calls_in(body) if _callee(c, candidates, imports, function) is not None]
            if not calls:
                continue
            _, evaluator, close, at = self._scope(key, sites=True)
            try:
                for call in calls:
                    name = _callee(call, candidates, imports, function)
                    at[:] = [(call.lineno, call.col_offset)]
                    passed = []
                    for argument in call.args:
                        if type(argument) is ast.Starred:
                            break  # `f(*pair, labels)`: no later argument's position is known
                        passed.append(evaluator.fact(argument))
                    passed = [None if f is None or f.startswith(facts.ARGUMENT) else f for f in passed]
                    if name in found:
                        before = found[name]
                        passed = [facts.some_call(before[i] if i < len(before) else None,
                                                  passed[i] if i < len(passed) else None)
                                  for i in range(max(len(before), len(passed)))]
                    found[name] = passed
            finally:
                close()
        return found

    def _a_module(self, func: ast.AST, owner: Optional[str], local, params) -> Optional[str]:
        """Whether calling ``func`` runs a module's forward: ``facts.DEVICE_TENSOR`` for ``self.model`` that
        the class places on the device (``self.model = net.to(device)``), ``facts.ARGUMENT`` for an attribute no
        method of the class defines or a parameter, named like a module (``self.model``, ``model``); else None."""
        if type(func) is ast.Attribute and owner is not None and type(func.value) is ast.Name \
                and func.value.id == "self":  # type: ignore[attr-defined]
            name = func.attr  # type: ignore[attr-defined]
            if f"{owner}.{name}" in self.functions:
                return None
            if self.attribute(owner, name) == facts.DEVICE_TENSOR:
                return facts.DEVICE_TENSOR
            return facts.ARGUMENT if MODULE_LIKE.search(name) is not None else None
        if type(func) is ast.Name and func.id in params and func.id not in local \
                and MODULE_LIKE.search(func.id) is not None:  # type: ignore[attr-defined]
            return facts.ARGUMENT
        return None


def _targets(node: ast.AST) -> List[ast.AST]:
    return node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]


def _collect(body: List[ast.stmt], local: Dict[str, List[Optional[ast.AST]]], spots: Dict[str, List[Tuple[int, int]]],
             local_statements: Dict[int, ast.AST], returns: List[Optional[ast.AST]],
             appended: Dict[str, List[ast.AST]]) -> None:
    """What the statements of ``body`` (not entering functions or classes) bind, where, and what they return."""
    for node in _body_nodes(body):
        cls = type(node)
        spot = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        if cls is ast.Return:
            returns.append(node.value)  # type: ignore[attr-defined]
        elif cls is ast.Assign:
            local_statements[id(node.value)] = node  # type: ignore[attr-defined]
            for target in node.targets:  # type: ignore[attr-defined]
                for part in _local_assign(local, target, node.value, spots, spot):  # type: ignore[attr-defined]
                    local_statements[id(part)] = node
        elif cls is ast.Expr and _appended(node.value):  # type: ignore[attr-defined]
            call = node.value  # type: ignore[attr-defined]
            appended.setdefault(call.func.value.id, []).append(call.args[0])
        elif cls is ast.AnnAssign and node.value is not None:  # type: ignore[attr-defined]
            local_statements[id(node.value)] = node  # type: ignore[attr-defined]
            _local_assign(local, node.target, node.value, spots, spot)  # type: ignore[attr-defined]
        elif cls is ast.AugAssign and type(node.target) is ast.Name:  # type: ignore[attr-defined]
            local.setdefault(node.target.id, []).append(node)  # type: ignore[attr-defined]
            spots.setdefault(node.target.id, []).append(spot)  # type: ignore[attr-defined]
        elif cls in (ast.For, ast.AsyncFor):
            _local_assign(local, node.target, None, spots, spot)  # type: ignore[attr-defined]
        elif cls is ast.withitem and node.optional_vars is not None:  # type: ignore[attr-defined]
            spot = (node.optional_vars.lineno, node.optional_vars.col_offset)  # type: ignore[attr-defined]
            _local_assign(local, node.optional_vars, None, spots, spot)  # type: ignore[attr-defined]


def _call_lines(source: Optional[bytes], direct: Set[str], modules: Set[str], function: str) -> Optional[List[int]]:
    """The lines (sorted) where the text calls ``function`` (``name(`` for a name of ``direct``,
    ``module.function(`` for one of ``modules``); None when the text is not known or its lines are not
    counted as Python counts them (a lone carriage return)."""
    if source is None or source.count(b"\r") != source.count(b"\r\n"):
        return None
    spellings = [re.escape(n.encode()) for n in sorted(direct)]
    spellings += [re.escape(n.encode()) + rb"\s*\.\s*" + re.escape(function.encode()) for n in sorted(modules)]
    pattern = re.compile(rb"(?<![\w.])(?:" + b"|".join(spellings) + rb")\s*\(")
    found: List[int] = []
    line, position = 1, 0
    for match in pattern.finditer(source):
        line += source.count(b"\n", position, match.start())
        position = match.start()
        found.append(line)
    return found


def _spans(node: ast.AST, lines: List[int]) -> bool:
    """Some line of ``lines`` (sorted) is inside ``node``."""
    first = bisect.bisect_left(lines, node.lineno)  # type: ignore[attr-defined]
    return first < len(lines) and lines[first] <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]


def _callee(call: ast.Call, candidates: Set[str], imports: Dict[str, list], function: str) -> Optional[str]:
    """``accuracy(...)`` / ``utils.accuracy(...)`` of a name imported from the project: the name as called."""
    func = call.func
    if type(func) is ast.Name:
        if func.id not in candidates:  # type: ignore[attr-defined]
            return None
        entry = imports.get(func.id)  # type: ignore[attr-defined]
        if entry is None:  # bound by a star import, if at all
            return func.id if func.id == function else None  # type: ignore[attr-defined]
        return func.id if entry[0] == "from" and entry[3] == function else None  # type: ignore[attr-defined]
    if type(func) is ast.Attribute and func.attr == function and type(func.value) is ast.Name \
            and func.value.id in candidates:  # type: ignore[attr-defined]
        return f"{func.value.id}.{func.attr}"  # type: ignore[attr-defined]
    return None


def _class_like(name: str) -> bool:
    return name[:1].isupper()


def _placed_names(body: List[ast.stmt]) -> FrozenSet[str]:
    """Top-level names of modules moved to the device (``model.cuda()``, ``model = Net().to(device)``), under
    an ``if`` too: calling one runs on the device."""
    placed: Set[str] = set()
    for node in _body_nodes(body):
        cls = type(node)
        if cls is ast.Expr and _moves_to_device(node.value):  # type: ignore[attr-defined]
            receiver = node.value.func.value  # type: ignore[attr-defined]
            if type(receiver) is ast.Name:
                placed.add(receiver.id)  # type: ignore[attr-defined]
        elif cls is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name \
                and _moves_to_device(node.value):  # type: ignore[attr-defined]
            receiver = node.value.func.value  # type: ignore[attr-defined]
            if type(receiver) is ast.Call or (type(receiver) is ast.Name and receiver.id == node.targets[0].id):  # type: ignore[attr-defined]
                placed.add(node.targets[0].id)  # type: ignore[attr-defined]
    return frozenset(placed)


def _moves_to_device(value: ast.AST) -> bool:
    """``x.cuda()`` / ``x.to(device)`` (a device by its name or a string naming the accelerator)."""
    if type(value) is not ast.Call or type(value.func) is not ast.Attribute:  # type: ignore[attr-defined]
        return False
    method = value.func.attr  # type: ignore[attr-defined]
    if method == "cuda":
        return True
    if method != "to" or len(value.args) != 1 or value.keywords:  # type: ignore[attr-defined]
        return False
    target = value.args[0]  # type: ignore[attr-defined]
    if type(target) is ast.Constant:
        return string_fact(target.value) == facts.DEVICE  # type: ignore[attr-defined]
    name = target.attr if type(target) is ast.Attribute else target.id if type(target) is ast.Name else ""  # type: ignore[attr-defined]
    return names_a_device(name)


def _calls_a_placed_module(name: str, call: ast.Call, local, params, placed: FrozenSet[str], evaluator) -> bool:
    """``model(x)`` where ``model`` is a module this file placed on the device (and no local of the function),
    or a model passed in (a parameter named like one) called with a tensor on the device."""
    if name in placed and name not in local and name not in params:
        return True
    return (name in params and name not in local and MODULE_LIKE.search(name) is not None
            and any(evaluator.fact(a) == facts.DEVICE_TENSOR for a in call.args))


def _module_output(call: ast.Call, evaluator) -> Optional[str]:
    """What a module's forward gives: a tensor on the device when one of its inputs is (its weights must be
    there too, or the call raises); else where its first input is, when that is an argument of the function."""
    found = [evaluator.fact(a) for a in call.args if type(a) is not ast.Starred]
    found += [evaluator.fact(k.value) for k in call.keywords if k.arg is not None]
    if facts.DEVICE_TENSOR in found:
        return facts.DEVICE_TENSOR
    first = found[0] if call.args and type(call.args[0]) is not ast.Starred else None
    return first if facts.argument_position(first) is not None else None


def _local_assign(local: Dict[str, List[Optional[ast.AST]]], target: ast.AST, value: Optional[ast.AST],
                  spots: Dict[str, List[Tuple[int, int]]], spot: Tuple[int, int]) -> List[ast.AST]:
    """Record what ``target = value`` binds (and where); return the values made up for the parts of an unpacking."""
    if type(target) is ast.Name:
        local.setdefault(target.id, []).append(value)  # type: ignore[attr-defined]
        spots.setdefault(target.id, []).append(spot)  # type: ignore[attr-defined]
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
            made += _local_assign(local, element.value if type(element) is ast.Starred else element, part, spots, spot)
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
