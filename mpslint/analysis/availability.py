"""Placement decided by CUDA availability: the guards that keep a fixed script on the CPU on a Mac.

In ::

    use_cuda = torch.cuda.is_available()
    model = nn.Linear(4, 2).cuda()
    if use_cuda:
        x = x.cuda()

rewriting each ``.cuda()`` to ``.to(device)`` is not enough: on a Mac
``use_cuda`` is False, the model moves to MPS and the batch stays on the CPU.
The guard is part of the device choice, so the fix rewrites it too:
``torch.cuda.is_available()`` becomes "an accelerator is available", and the
code under the guard runs on a Mac exactly as it runs on a CUDA machine.

This module finds, for a node, the *source* of the availability guard it sits
under (the innermost one): the ``torch.cuda.is_available()`` calls (or
``torch.cuda.device_count() > 0``) to rewrite, either in the guard's own test
or in the definitions of the flag it tests (``use_cuda``, ``args.cuda``,
``cuda = True if torch.cuda.is_available() else False``, and flags derived
from those), and every place the flag decides something: the regions that
run only when it is true, and its other uses. ``checks/guard_rewrite.py``
decides whether the rewrite is safe and writes it.

A flag nothing in the file derives from availability (``--cuda`` given by the
user, a parameter) is the user's choice: under ``if args.cuda:``, ``.cuda()``
becomes ``.to(device)`` as anywhere else, and the user's "use the GPU" now
means the Mac's GPU too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple, Union

from mpslint.analysis.syntax import dotted_name, parameters

FlagKey = Tuple[str, object, str]  # ("name", scope, id) or ("attr", None, "args.cuda")

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass
class Flag:
    key: FlagKey
    name: str  # as the code writes it: `use_cuda`, `args.cuda`
    definitions: List[ast.stmt] = field(default_factory=list)  # assignments that derive it from availability
    terms: List[ast.AST] = field(default_factory=list)  # the availability tests inside those definitions
    parents: List["Flag"] = field(default_factory=list)  # flags its definitions read (`use_gpu = use_cuda and ...`)
    uses: List[ast.AST] = field(default_factory=list)  # every read of the flag


@dataclass
class Source:
    """What decides a guard: the availability tests to rewrite and the flags they reach."""

    key: object
    label: str  # how a message names it
    terms: Tuple[ast.AST, ...]
    flags: Tuple[Flag, ...]  # empty for a guard that calls torch.cuda.is_available() itself
    regions: Tuple[Region, ...] = ()  # for such a guard: what runs only when it holds


class Availability:
    """Per file: ``ctx.analysis(Availability)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self.flags: Dict[FlagKey, Flag] = {}
        self._components: Dict[FlagKey, Tuple[Flag, ...]] = {}
        if "cuda" not in ctx.source:
            return
        self._locals = self._local_names()
        self._find_flags()
        if self.flags:
            self._find_uses()

    # ------------------------------------------------------------ questions

    def is_term(self, node: ast.AST) -> bool:
        """``torch.cuda.is_available()``, or ``torch.cuda.device_count() > 0`` (or ``>= 1``, ``!= 0``)."""
        cls = type(node)
        if cls is ast.Call:
            return self.ctx.qualify(node.func) == "torch.cuda.is_available" and not node.args and not node.keywords  # type: ignore[attr-defined]
        if cls is ast.Compare and len(node.ops) == 1:  # type: ignore[attr-defined]
            left, op, right = node.left, node.ops[0], node.comparators[0]  # type: ignore[attr-defined]
            counts = type(left) is ast.Call and self.ctx.qualify(left.func) == "torch.cuda.device_count" and not left.args  # type: ignore[attr-defined]
            bound = right.value if type(right) is ast.Constant and type(right.value) is int else None  # type: ignore[attr-defined]
            return counts and ((type(op) is ast.Gt and bound == 0) or (type(op) is ast.GtE and bound == 1)
                               or (type(op) is ast.NotEq and bound == 0))
        return False

    def flag_of(self, node: ast.AST) -> Optional[Flag]:
        """The availability flag a Name or Attribute reads, if any."""
        key = self._key_of_read(node)
        return self.flags.get(key) if key is not None else None

    def source_of(self, node: ast.AST) -> Optional[Source]:
        """The innermost guard above ``node`` that runs it only when CUDA is available, as a Source.

        Inherited from the parent's answer (``Tree.inherited``), so a long ``elif`` chain, where every
        arm is nested in the one before, costs one step per node, not one per ancestor.
        """
        return self.tree.inherited(("guard source", id(self)), node, self._source_step, None)

    def _source_step(self, parent: ast.AST, child: ast.AST, above: Optional[Source]) -> Optional[Source]:
        cls = type(parent)
        test = None
        if cls is ast.If or cls is ast.While:
            owner = self.tree.block_owner(child)
            if owner is not None and owner[0] is parent and owner[1] == "body":
                test, region = parent.test, parent.body  # type: ignore[attr-defined]
        elif cls is ast.IfExp and child is parent.body:  # type: ignore[attr-defined]
            test, region = parent.test, parent.body  # type: ignore[attr-defined]
        elif cls is ast.BoolOp and type(parent.op) is ast.And and child is not parent.values[0]:  # type: ignore[attr-defined]
            values = parent.values  # type: ignore[attr-defined]
            position = next(i for i, v in enumerate(values) if v is child)
            found = self._source_in(values[:position], values[position:])
            if found is not None:
                return found
        if test is not None:
            found = self._source_in([test], [region])
            if found is not None:
                return found
        if cls in _FUNCTIONS or cls is ast.ClassDef:
            return None  # a guard outside the function does not decide what its body does when called
        return above

    def component(self, flag: Flag) -> Tuple[Flag, ...]:
        """Every flag that changes with ``flag``: those it derives from, and those derived from them."""
        found = self._components.get(flag.key)
        if found is not None:
            return found
        members: Dict[FlagKey, Flag] = {}
        pending = [flag]
        children: Dict[FlagKey, List[Flag]] = {}
        for other in self.flags.values():
            for parent in other.parents:
                children.setdefault(parent.key, []).append(other)
        while pending:
            current = pending.pop()
            if current.key in members:
                continue
            members[current.key] = current
            pending.extend(current.parents)
            pending.extend(children.get(current.key, ()))
        ordered = tuple(sorted(members.values(), key=lambda f: min((self.tree.index(d) for d in f.definitions), default=0)))
        for member in ordered:
            self._components[member.key] = ordered
        return ordered

    # ------------------------------------------------------------ internals

    def _source_in(self, tests: List[ast.AST], regions: List[Region]) -> Optional[Source]:
        """A Source for the availability terms and flags the tests read positively (through ``and``)."""
        terms: List[ast.AST] = []
        flags: List[Flag] = []
        for test in tests:
            for part in conjuncts(test):
                if self.is_term(part):
                    terms.append(part)
                    continue
                flag = self.flag_of(part) if type(part) in (ast.Name, ast.Attribute) else None
                if flag is not None and self._derived(flag):
                    flags.append(flag)
        if flags:
            component = self.component(flags[0])
            all_terms = tuple(t for f in component for t in f.terms)
            return Source(("flags", component[0].key), f"`{flags[0].name}`", all_terms, component)
        if terms:
            return Source(("test", id(terms[0])), "`torch.cuda.is_available()`", tuple(terms), (), tuple(regions))
        return None

    def _derived(self, flag: Flag, seen: Optional[Set[FlagKey]] = None) -> bool:
        if flag.terms:
            return True
        seen = seen or set()
        seen.add(flag.key)
        return any(self._derived(p, seen) for p in flag.parents if p.key not in seen)

    def _local_names(self) -> Dict[ast.AST, Set[str]]:
        """Per function: the names it binds (parameters and assignments)."""
        found: Dict[ast.AST, Set[str]] = {}
        tree = self.tree
        for function in tree.of_type(ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            found.setdefault(function, set()).update(p.arg for p in parameters(function))
        for name in tree.of_type(ast.Name):
            if type(name.ctx) is not ast.Load:  # type: ignore[attr-defined]
                scope = tree.scope_of(name)
                found.setdefault(scope, set()).add(name.id)  # type: ignore[attr-defined]
        return found

    def _scope_for(self, node: ast.AST, name: str) -> object:
        """The scope a name read at ``node`` resolves to: the innermost that binds it, else the module."""
        tree = self.tree
        scope = tree.scope_of(node)
        while scope is not tree.module:
            if name in self._locals.get(scope, ()):
                return scope
            scope = tree.scope_of(scope)
        return tree.module

    def _key_of_read(self, node: ast.AST) -> Optional[FlagKey]:
        if type(node) is ast.Name:
            return ("name", self._scope_for(node, node.id), node.id)  # type: ignore[attr-defined]
        if type(node) is ast.Attribute:
            text = dotted_name(node)
            return ("attr", None, text) if text else None
        return None

    def _find_flags(self) -> None:
        tree = self.tree
        for stmt in tree.of_type(ast.Assign, ast.AnnAssign):
            targets = stmt.targets if type(stmt) is ast.Assign else [stmt.target]  # type: ignore[attr-defined]
            value = stmt.value  # type: ignore[attr-defined]
            if value is None or len(targets) != 1:
                continue
            target = targets[0]
            if type(target) is ast.Name:
                key: FlagKey = ("name", tree.scope_of(stmt), target.id)
                name = target.id
            elif type(target) is ast.Attribute and dotted_name(target):
                name = dotted_name(target) or ""
                key = ("attr", None, name)
            else:
                continue
            terms: List[ast.AST] = []
            parents: List[Flag] = []
            for part in _positive_parts(value):
                if self.is_term(part):
                    terms.append(part)
                elif type(part) in (ast.Name, ast.Attribute):
                    parent = self.flags.get(self._key_of_read(part))  # type: ignore[arg-type]
                    if parent is not None and parent.key != key:
                        parents.append(parent)
            if not terms and not parents:
                continue
            flag = self.flags.get(key)
            if flag is None:
                flag = self.flags[key] = Flag(key, name)
            flag.definitions.append(stmt)
            flag.terms.extend(terms)
            flag.parents.extend(p for p in parents if p not in flag.parents)

    def _find_uses(self) -> None:
        tree = self.tree
        names = {key[2] for key in self.flags if key[0] == "name"}
        attrs = {key[2] for key in self.flags if key[0] == "attr"}
        for node in tree.of_type(ast.Name):
            if node.id in names and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                flag = self.flags.get(self._key_of_read(node))  # type: ignore[arg-type]
                if flag is not None:
                    flag.uses.append(node)
        if attrs:
            for node in tree.of_type(ast.Attribute):
                if type(node.ctx) is ast.Load and dotted_name(node) in attrs:  # type: ignore[attr-defined]
                    flag = self.flags.get(("attr", None, dotted_name(node) or ""))
                    if flag is not None:
                        flag.uses.append(node)


def conjuncts(test: ast.AST) -> List[ast.AST]:
    """The operands of an ``and`` chain (the test itself otherwise)."""
    if type(test) is ast.BoolOp and type(test.op) is ast.And:  # type: ignore[attr-defined]
        return [part for value in test.values for part in conjuncts(value)]  # type: ignore[attr-defined]
    return [test]


def _positive_parts(value: ast.AST) -> List[ast.AST]:
    """The parts of a flag's value that it is true only if they are: ``a and b``, ``True if a else False``, ``bool(a)``."""
    cls = type(value)
    if cls is ast.BoolOp and type(value.op) is ast.And:  # type: ignore[attr-defined]
        return [part for v in value.values for part in _positive_parts(v)]  # type: ignore[attr-defined]
    if cls is ast.IfExp:
        body, orelse = value.body, value.orelse  # type: ignore[attr-defined]
        if type(body) is ast.Constant and body.value is True and type(orelse) is ast.Constant and orelse.value is False:
            return _positive_parts(value.test)  # type: ignore[attr-defined]
        return []
    if cls is ast.Call and dotted_name(value.func) == "bool" and len(value.args) == 1 and not value.keywords:  # type: ignore[attr-defined]
        return _positive_parts(value.args[0])  # type: ignore[attr-defined]
    return [value]


def enclosing_use(tree, use: ast.AST) -> Tuple[ast.AST, bool]:
    """(the expression a flag read decides, negated?): the read climbs ``and`` chains and ``not``."""
    node = use
    negated = False
    while True:
        parent = tree.parent(node)
        if type(parent) is ast.BoolOp and type(parent.op) is ast.And:  # type: ignore[attr-defined]
            node = parent
            continue
        if type(parent) is ast.UnaryOp and type(parent.op) is ast.Not:  # type: ignore[attr-defined]
            negated = not negated
            node = parent
            continue
        return node, negated


Region = Union[List[ast.stmt], ast.AST]
