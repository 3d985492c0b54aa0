"""Qualified names through import aliases.

``import torch as th; th.cuda.synchronize()`` resolves to
``torch.cuda.synchronize``. Every import form binds a local name to a dotted
path; an attribute chain whose root is such a name is qualified by
substitution. Bindings are flow-insensitive: an import anywhere in the module
(top level, ``try``/``if`` blocks, function bodies) counts everywhere, later
imports of a name winning. Imports of torch are never shadowed in real code,
and a scope analysis would cost far more than it would ever change.

Names the file's own imports cannot qualify (bound by a star import, by an
import from a module of the checked project, or an alias such as
``DTYPE = torch.float64``) are asked of ``resolver`` (the project model,
``analysis/project``), once per name.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, Iterable, Optional, Set

from mpslint.analysis.syntax import dotted_name


def qualify_dotted(raw: Optional[str], bindings: Dict[str, str]) -> Optional[str]:
    """``th.cuda.x`` -> ``torch.cuda.x`` when ``th`` is bound to ``torch`` by an import, else None."""
    if raw is None:
        return None
    root, _, rest = raw.partition(".")
    target = bindings.get(root)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


_UNKNOWN = object()  # not asked yet: None is an answer

# Packages no checked project defines: a name imported from them needs no project lookup.
LIBRARIES = frozenset(
    "torch numpy torchvision torchaudio transformers accelerate os sys math random time re json typing "
    "collections functools itertools dataclasses pathlib logging argparse abc contextlib multiprocessing "
    "concurrent".split()
)


class ImportTable:
    """Local name -> fully qualified module path (or object path)."""

    def __init__(self, imports: Iterable[ast.AST] = ()) -> None:
        self.bindings: Dict[str, str] = {}
        # The project model, for names the imports cannot qualify; `deferred`: names bound by
        # `from M import name` where M may be a module of the project (its binding is a guess).
        self._resolver: Optional[Callable[[str], Optional[str]]] = None
        self.deferred: Set[str] = set()
        # Rules ask about the same call's function again and again (four times per node on transformers):
        # answers by node, for the bindings and resolver they were computed with (both clear it).
        self._memo: Dict[ast.AST, Optional[str]] = {}
        # Whether an imported name holds a value where it is read (`import model`, then `model = model.Net()`):
        # asked only of names imported from other than a known library (``rebound_imports.py``).
        self.rebound: Optional[Callable[[ast.Name], bool]] = None
        for node in imports:
            self.add(node)

    @property
    def resolver(self) -> Optional[Callable[[str], Optional[str]]]:
        return self._resolver

    @resolver.setter
    def resolver(self, resolver: Optional[Callable[[str], Optional[str]]]) -> None:
        self._resolver = resolver
        self._memo.clear()

    @classmethod
    def of(cls, tree) -> "ImportTable":
        """The imports of a ``Tree``, in source order (a later import rebinds the name)."""
        return cls(tree.of_type(ast.Import, ast.ImportFrom))

    def add(self, node: ast.AST) -> None:
        if self._memo:
            self._memo.clear()
        if type(node) is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.asname:
                    self.bindings[alias.asname] = alias.name
                else:
                    root = alias.name.split(".", 1)[0]
                    self.bindings[root] = root
        elif type(node) is ast.ImportFrom and not node.level and node.module:  # type: ignore[attr-defined]
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name != "*":
                    local = alias.asname or alias.name
                    self.bindings[local] = f"{node.module}.{alias.name}"  # type: ignore[attr-defined]
                    if node.module.split(".", 1)[0] not in LIBRARIES:  # type: ignore[attr-defined]
                        self.deferred.add(local)
        elif type(node) is ast.ImportFrom:
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name != "*":
                    self.deferred.add(alias.asname or alias.name)

    def qualify(self, node: ast.AST) -> Optional[str]:
        """The qualified name of a Name/Attribute chain rooted in an import."""
        memo = self._memo
        found = memo.get(node, _UNKNOWN)
        if found is _UNKNOWN:
            found = memo[node] = self._qualify(node)
        return found  # type: ignore[return-value]

    def _qualify(self, node: ast.AST) -> Optional[str]:
        raw = dotted_name(node)
        if raw is None:
            return None
        resolver = self._resolver
        found: Optional[str] = None
        if resolver is not None:
            root, _, rest = raw.partition(".")
            if root in self.deferred or root not in self.bindings:
                target = resolver(root)
                if target is not None:
                    found = f"{target}.{rest}" if rest else target
        if found is None:
            found = qualify_dotted(raw, self.bindings)
        if found is not None and self.rebound is not None and found.split(".", 1)[0] not in LIBRARIES:
            while type(node) is ast.Attribute:
                node = node.value  # type: ignore[attr-defined]
            if type(node) is ast.Name and self.rebound(node):  # type: ignore[arg-type]
                return None
        return found

    def unlisted_imports(self) -> Set[str]:
        """The names bound by imports of modules other than known libraries."""
        return {name for name, target in self.bindings.items() if target.split(".", 1)[0] not in LIBRARIES} \
            | self.deferred

    def imports_any(self, prefixes: Iterable[str]) -> bool:
        targets = self.bindings.values()
        return any(t == p or t.startswith(p + ".") for p in prefixes for t in targets)
