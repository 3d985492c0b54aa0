"""Where names get their values: the bindings of each scope, and which of them reach a use."""

from __future__ import annotations

import ast
import bisect
from typing import Dict, List, Optional, Tuple, Union

from mpslint.analysis.branches import Branches
from mpslint.analysis.tree import Scope, Tree
from mpslint.analysis.device_flow.kinds import Kind, _ATTRIBUTE, _NAME, string_kind


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


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _comprehensions_step(parent: ast.AST, child: ast.AST, above: Tuple[ast.AST, ...]) -> Tuple[ast.AST, ...]:
    """The comprehensions around a node, innermost first, up to its function."""
    cls = type(parent)
    if cls in _COMPREHENSIONS:
        return (parent, *above)
    if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
        return ()
    return above


def _all_parameters(function) -> List[ast.arg]:
    args = function.args
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


class Bindings:
    """Where names get their values (a part of ``DeviceFlow``)."""

    @property
    def bindings(self) -> Dict[Scope, Dict[str, List[Binding]]]:
        """Scope -> name -> how the name gets its values there (collected on first need)."""
        if self._bindings is None:
            self._bindings = {}
            self._collect_bindings()
        return self._bindings

    def assigned_value(self, name: ast.AST) -> Optional[ast.AST]:
        """What the name holds where it is used, when one plain assignment (``x = value``) is all that can reach
        it; else None."""
        found = self.visible(name.id, name)  # type: ignore[attr-defined]
        if len(found) != 1 or found[0].how != "assign" or found[0].path:
            return None
        return found[0].value

    def visible(self, name: str, use: ast.AST) -> List[Binding]:
        """The bindings that can reach ``use``: the latest one before it, else all of them."""
        tree = self.tree
        own = self._comprehension_bindings(name, use)
        if own:
            return own
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

    def _comprehension_bindings(self, name: str, use: ast.AST) -> List[Binding]:
        """``{k: v.item() for k, v in losses.items()}``: ``v`` is what its own comprehension binds, though
        the element comes before the ``for`` in the source (and another ``v`` may be bound just before)."""
        tree = self.tree
        for comprehension in tree.inherited("comprehensions", use, _comprehensions_step, ()):
            generators = comprehension.generators  # type: ignore[attr-defined]
            if tree.contains(generators[0].iter, use):
                continue  # the first iterable is evaluated outside the comprehension
            for generator in generators:
                targets = {id(n) for n in ast.walk(generator.target) if type(n) is _NAME and n.id == name}  # type: ignore[attr-defined]
                if targets:
                    found = self.bindings.get(tree.scope_of(generator.target), {}).get(name, ())
                    return [b for b in found if id(b.site) in targets]
        return []

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

    def _resolve_earlier(self, binding: Binding, name: str) -> None:
        """Deep in a chain (``x = f(x)`` repeated): resolve this name's earlier bindings first, in order,
        so that each step of the chain finds the previous one already known."""
        for earlier in self.bindings.get(binding.scope, {}).get(name, ()):  # type: ignore[arg-type]
            if earlier is binding or earlier.end >= binding.end:
                break
            if (earlier, name) not in self._binding_memo:
                self.kind_of_binding(earlier, name)
