"""Imported names the file rebinds to a value: ``import model`` then ``model = model.RNNModel(...)``.

The import table (``names.py``) is flow-insensitive: ``model.cuda()`` would
read as the ``cuda`` of module ``model``, never a tensor's or a module
object's. Where an assignment, a loop target or a parameter of that name
reaches the read, the name is that value instead:

- at the top level, the latest binding before the read decides (``import
  model`` after ``model = ...`` makes it the module again);
- in a function that binds the name itself (``data = source[i]`` beside
  ``import data``), it is that function's local;
- in a function that does not, it is the global as the module left it: a
  value if the module's last top-level binding of it is one (functions run
  after the module has been imported).

What an optional import leaves where it fails (``except ImportError: triton =
None``, any constant) does not count: the code uses the name as the module.

Only names imported from modules other than known libraries are asked: no
one writes ``torch = ...``.
"""

from __future__ import annotations

import ast
import bisect
from typing import Dict, List, Optional, Set, Tuple

from mpslint.analysis.tree import Tree

_IMPORT = "import"
_VALUE = "value"
_TARGET_HOLDERS = (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.withitem)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

Event = Tuple[ast.AST, int, str]  # (the scope, the index after which the binding holds, import or value)


class ReboundImports:
    def __init__(self, tree: Tree, names: Set[str]) -> None:
        self.tree = tree
        self.names = names  # the imported names that may be rebound
        self._events: Optional[Dict[str, List[Event]]] = None
        self._comprehensions: Dict[str, List[ast.AST]] = {}  # name -> the comprehensions that bind it
        self._scopes: Optional[Dict[str, Dict[ast.AST, Tuple[List[int], List[str]]]]] = None

    def is_value(self, name: ast.Name) -> bool:
        """Whether the imported name read at ``name`` holds a value there, not the module."""
        tree = self.tree
        scopes = self._by_scope().get(name.id)  # (reads the file's bindings, comprehensions too, on first need)
        if any(tree.contains(comprehension, name) for comprehension in self._comprehensions.get(name.id, ())):
            return True  # `[data.cuda() for data in xs]`: the comprehension's own variable
        if not scopes:
            return False
        scope = tree.scope_of(name)
        own = scopes.get(scope)
        if own is not None:
            ends, kinds = own
            before = bisect.bisect_left(ends, tree.index(name))
            if before:
                return kinds[before - 1] == _VALUE  # the latest binding before the read
            if scope is not tree.module:
                return True  # assigned somewhere in the function: a local everywhere in it
            return False
        if scope is tree.module:
            return False
        top = scopes.get(tree.module)
        return top is not None and top[1][-1] == _VALUE  # a global, as the module's last binding left it

    def _by_scope(self) -> Dict[str, Dict[ast.AST, Tuple[List[int], List[str]]]]:
        """name -> scope -> (the ends of its bindings there, in order, and whether each is an import or a
        value), for the names that some binding makes a value."""
        if self._scopes is None:
            self._scopes = {}
            for name, events in self._collect().items():
                if not any(kind == _VALUE for _, _, kind in events):
                    continue
                grouped: Dict[ast.AST, List[Tuple[int, str]]] = {}
                for scope, end, kind in events:
                    grouped.setdefault(scope, []).append((end, kind))
                by_scope = self._scopes[name] = {}
                for scope, rows in grouped.items():
                    rows.sort()
                    by_scope[scope] = ([end for end, _ in rows], [kind for _, kind in rows])
        return self._scopes

    def _collect(self) -> Dict[str, List[Event]]:
        """The bindings of the names asked, read once per file."""
        if self._events is None:
            tree, names = self.tree, self.names
            events: Dict[str, List[Event]] = {}
            for node in tree.of_type(ast.Import, ast.ImportFrom):
                for alias in node.names:  # type: ignore[attr-defined]
                    local = alias.asname or alias.name.split(".", 1)[0]
                    if local in names:
                        events.setdefault(local, []).append((tree.scope_of(node), tree.end(node), _IMPORT))
            for node in tree.of_type(ast.Name):
                if node.id in names and type(node.ctx) is ast.Store:  # type: ignore[attr-defined]
                    holder = _holder(tree, node)
                    if _fallback(tree, holder):
                        continue
                    if type(holder) in _COMPREHENSIONS:
                        self._comprehensions.setdefault(node.id, []).append(holder)  # type: ignore[attr-defined]
                    else:
                        events.setdefault(node.id, []).append((tree.scope_of(node), tree.end(holder), _VALUE))  # type: ignore[attr-defined]
            for node in tree.of_type(ast.arg):
                if node.arg in names:  # type: ignore[attr-defined]
                    function = tree.parent(tree.parent(node))  # arg -> arguments -> the function or lambda
                    if function is not None:
                        events.setdefault(node.arg, []).append((function, tree.index(function), _VALUE))  # type: ignore[attr-defined]
            self._events = events
        return self._events


def _fallback(tree: Tree, holder: ast.AST) -> bool:
    """``triton = None`` (a constant), or any binding in an ``except`` handler: what an optional import leaves
    where it fails, not the value the code uses the name for."""
    if type(holder) is ast.Assign and type(holder.value) is ast.Constant:  # type: ignore[attr-defined]
        return True
    scope = tree.scope_of(holder)
    return any(type(a) is ast.ExceptHandler for a in _ancestors_in(tree, holder, scope))


def _ancestors_in(tree: Tree, node: ast.AST, scope: ast.AST):
    for ancestor in tree.ancestors(node):
        if ancestor is scope:
            return
        yield ancestor


def _holder(tree: Tree, target: ast.Name) -> ast.AST:
    """What holds a bound name: the statement that assigns it (bound once it ends), the target itself in a
    loop or ``with`` (bound in the body), or the comprehension whose variable it is."""
    statement = tree.statement_of(target)
    node: Optional[ast.AST] = target
    while node is not None and node is not statement:
        parent = tree.parent(node)
        if type(parent) is ast.comprehension:
            return tree.parent(parent) or target  # type: ignore[return-value]
        if isinstance(parent, _TARGET_HOLDERS):
            return target
        node = parent
    return statement if statement is not None else target
