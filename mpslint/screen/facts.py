"""One file as Python's ``ast`` sees it, indexed in one walk for the screens.

The index mirrors what the LibCST analyses collect (``analysis/names``,
``analysis/device_flow``, ``analysis/loops``): the same import table, the
same scopes (the module, each function and lambda; a function's decorators
and parameters are inside it), the same kinds of bindings. Where it cannot
mirror exactly, it keeps more, never less: a screen may let a file through
that the rule then finds clean, but never the other way round.

Nothing is parsed until a screen asks: a screen that only needs the
settings (a version gate) costs nothing.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple, Union

from mpslint.analysis.names import qualify_dotted

Scope = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
LoopNode = Union[ast.For, ast.AsyncFor, ast.While]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class Unscreenable(Exception):
    """Python's parser rejects the file: it is not screened, every admitted rule runs."""


@dataclass(frozen=True)
class Binding:
    """One way a name gets a value in a scope (``analysis.device_flow.Binding``'s kinds)."""

    how: str  # "assign" | "aug" | "for" | "param" | "lambda-param"
    value: Optional[ast.AST]  # the assigned expression, the AugAssign, the iterable, the function
    scope: Scope  # where ``value`` is evaluated
    unpacked: bool = False  # the target was a tuple/list: the name holds a part of ``value``


@dataclass
class Index:
    module: ast.Module
    parent_scope: Dict[int, Scope] = field(default_factory=dict)  # id(scope) -> the scope around it
    bindings: Dict[int, Dict[str, List[Binding]]] = field(default_factory=dict)  # id(scope) -> name -> bindings
    calls: List[Tuple[ast.Call, Scope]] = field(default_factory=list)
    # Calls of a function by its simple name, as DeviceFlow keys them: ``f(...)`` and ``self.f(...)``.
    calls_by_name: Dict[str, List[Tuple[ast.Call, Scope]]] = field(default_factory=dict)
    functions: Dict[str, List[FunctionNode]] = field(default_factory=dict)
    top_level_functions: Set[int] = field(default_factory=set)  # ids of functions that are module statements
    loops: List[LoopNode] = field(default_factory=list)
    binary: List[Tuple[ast.BinOp, Scope]] = field(default_factory=list)
    augmented: List[Tuple[ast.AugAssign, Scope]] = field(default_factory=list)
    assignments: List[ast.Assign] = field(default_factory=list)
    statement_calls: List[ast.Call] = field(default_factory=list)  # calls that are a whole statement
    imports: Dict[str, str] = field(default_factory=dict)  # local name -> qualified path

    def qualify(self, node: ast.AST) -> Optional[str]:
        """``analysis.names.ImportTable.qualify`` on the ast: ``th.cuda`` -> ``torch.cuda``."""
        return qualify_dotted(dotted_name(node), self.imports)

    def scopes_from(self, scope: Scope):
        """``scope`` and every scope around it, innermost first."""
        while scope is not None:
            yield scope
            scope = self.parent_scope.get(id(scope))


class Facts:
    """What screens ask about one file; everything is computed on first use."""

    def __init__(self, text: str, settings) -> None:
        self.text = text
        self.settings = settings
        self._index: Optional[Index] = None
        self._unscreenable: Optional[Unscreenable] = None
        self._cache: Dict[object, object] = {}

    @property
    def index(self) -> Index:
        if self._index is None:
            if self._unscreenable is not None:
                raise self._unscreenable
            try:
                self._index = build_index(parse(self.text))
            except Unscreenable as exc:
                self._unscreenable = exc  # every screen asks: parse once
                raise
        return self._index

    def memo(self, key, compute):
        """A per-file value shared by screens (the device model, the hot loops)."""
        if key not in self._cache:
            self._cache[key] = compute(self)
        return self._cache[key]

    # ---------------------------------------------------------------- names

    def qualify(self, node: ast.AST) -> Optional[str]:
        return self.index.qualify(node)

    def calls_to(self, qualified: frozenset) -> List[Tuple[ast.Call, Scope]]:
        """Calls (and their scopes) whose callee qualifies to one of ``qualified``, as ``ctx.qualify`` would."""
        lasts = {name.rsplit(".", 1)[-1] for name in qualified}
        imports = self.index.imports
        found = []
        for call, scope in self.index.calls:
            func = call.func
            last = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
            if last is not None and (last in lasts or last in imports) and self.qualify(func) in qualified:
                found.append((call, scope))
        return found

    def refers_to(self, qualified: frozenset) -> bool:
        """Whether a name or attribute chain of the file qualifies to one of ``qualified``."""
        if any(target in qualified for target in self.index.imports.values()):
            return True  # `from torch import float64`: bound, so possibly used
        lasts = {q.rsplit(".", 1)[-1] for q in qualified}
        if not any(last in self.text for last in lasts):
            return False  # the usual answer, without walking the tree again
        return any(
            type(node) is ast.Attribute and node.attr in lasts and self.qualify(node) in qualified
            for node in ast.walk(self.index.module)
        )


def parse(text: str) -> ast.Module:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences: LibCST's business, not ours
            return compile(text, "<screen>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        raise Unscreenable(str(exc)) from None


def dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None (``analysis.names.dotted_name``)."""
    kind = type(node)
    if kind is ast.Name:
        return node.id
    parts = []
    while kind is ast.Attribute:
        parts.append(node.attr)
        node = node.value
        kind = type(node)
    if kind is not ast.Name:
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def positional(call: ast.Call) -> List[ast.AST]:
    """The values of LibCST's arguments without a keyword: positional, ``*args`` and ``**kwargs``."""
    values = [a.value if type(a) is ast.Starred else a for a in call.args]
    return values + [k.value for k in call.keywords if k.arg is None]


def argument_values(call: ast.Call) -> List[ast.AST]:
    """Every argument's value (LibCST's ``call.args``)."""
    return [a.value if type(a) is ast.Starred else a for a in call.args] + [k.value for k in call.keywords]


def keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for item in call.keywords:
        if item.arg == name:
            return item.value
    return None


# ------------------------------------------------------------------ the walk

_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _child_fields(cls: type) -> Tuple[str, ...]:
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        # Expression contexts and operators are singletons with nothing inside.
        fields = tuple(f for f in cls._fields if f not in ("ctx", "op", "type_comment"))
        _CHILD_FIELDS[cls] = fields
    return fields


def build_index(module: ast.Module) -> Index:
    index = Index(module)
    imports: List[Tuple[Tuple[int, int], ast.AST]] = []
    bindings = index.bindings
    bindings[id(module)] = {}
    for statement in module.body:
        if isinstance(statement, _FUNCTIONS):
            index.top_level_functions.add(id(statement))

    stack: List[Tuple[ast.AST, Scope]] = [(module, module)]
    pop, push = stack.pop, stack.append
    AST = ast.AST
    while stack:
        node, scope = pop()
        cls = type(node)
        inner = scope
        if cls is ast.Call:
            index.calls.append((node, scope))
            func = node.func
            func_cls = type(func)
            if func_cls is ast.Name:
                index.calls_by_name.setdefault(func.id, []).append((node, scope))
            elif func_cls is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
                index.calls_by_name.setdefault(func.attr, []).append((node, scope))
        elif cls is ast.BinOp:
            index.binary.append((node, scope))
        elif cls is ast.Assign:
            index.assignments.append(node)
            for target in node.targets:
                _bind(bindings, scope, target, Binding("assign", node.value, scope))
        elif cls is ast.Expr:
            if type(node.value) is ast.Call:
                index.statement_calls.append(node.value)
        elif cls is ast.FunctionDef or cls is ast.AsyncFunctionDef:
            index.functions.setdefault(node.name, []).append(node)
            index.parent_scope[id(node)] = scope
            bindings[id(node)] = {}
            _bind_parameters(bindings, node, "param")
            inner = node
        elif cls is ast.Lambda:
            index.parent_scope[id(node)] = scope
            bindings[id(node)] = {}
            _bind_parameters(bindings, node, "lambda-param")
            inner = node
        elif cls is ast.For or cls is ast.AsyncFor:
            index.loops.append(node)
            _bind(bindings, scope, node.target, Binding("for", node.iter, scope))
        elif cls is ast.While:
            index.loops.append(node)
        elif cls is ast.AugAssign:
            index.augmented.append((node, scope))
            _bind(bindings, scope, node.target, Binding("aug", node, scope))
        elif cls is ast.AnnAssign:
            if node.value is not None:
                _bind(bindings, scope, node.target, Binding("assign", node.value, scope))
        elif cls is ast.NamedExpr:
            _bind(bindings, scope, node.target, Binding("assign", node.value, scope))
        elif cls is ast.Import or cls is ast.ImportFrom:
            imports.append(((node.lineno, node.col_offset), node))
            continue
        fields = _CHILD_FIELDS[cls] if cls in _CHILD_FIELDS else _child_fields(cls)
        for name in fields:
            value = getattr(node, name)
            if type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push((item, inner))
            elif isinstance(value, AST):
                push((value, inner))
    imports.sort(key=lambda pair: pair[0])  # source order: a later import rebinds the name
    for _, node in imports:
        _add_import(index.imports, node)
    return index


# Module-level, not nested in build_index: a nested recursive function is a reference
# cycle, and it would keep the whole tree alive until the cyclic collector runs.
def _bind(bindings: Dict[int, Dict[str, List[Binding]]], scope: Scope, target: ast.AST, binding: Binding) -> None:
    kind = type(target)
    if kind is ast.Name:
        bindings[id(scope)].setdefault(target.id, []).append(binding)
    elif kind is ast.Tuple or kind is ast.List:
        part = Binding(binding.how, binding.value, binding.scope, unpacked=True)
        for element in target.elts:
            _bind(bindings, scope, element.value if type(element) is ast.Starred else element, part)


def _bind_parameters(bindings: Dict[int, Dict[str, List[Binding]]], function, how: str) -> None:
    args = function.args
    everything = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    everything += [a for a in (args.vararg, args.kwarg) if a is not None]
    names = bindings[id(function)]
    for arg in everything:
        names.setdefault(arg.arg, []).append(Binding(how, function, function))


def _add_import(table: Dict[str, str], node: ast.AST) -> None:
    if type(node) is ast.Import:
        for alias in node.names:
            if alias.asname:
                table[alias.asname] = alias.name
            else:
                root = alias.name.split(".", 1)[0]
                table[root] = root
    elif not node.level and node.module:
        for alias in node.names:
            if alias.name != "*":
                table[alias.asname or alias.name] = f"{node.module}.{alias.name}"
