"""Qualified names through import aliases, without LibCST's scope analysis.

``import torch as th; th.cuda.synchronize()`` resolves to
``torch.cuda.synchronize``. Every import form binds a local name to a dotted
path; an attribute chain whose root is such a name is qualified by
substitution. Bindings are flow-insensitive: an import anywhere in the module
(top level, ``try``/``if`` blocks, function bodies) counts everywhere. Imports
of torch are never shadowed in real code, and scope analysis would cost a full
extra pass per file.
"""

from __future__ import annotations

from typing import Dict, Iterable, Optional

import libcst as cst


_ATTRIBUTE, _NAME = cst.Attribute, cst.Name


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    # Exact classes (LibCST's are final): ``isinstance`` against a LibCST class goes
    # through ABCMeta, and this runs for nearly every call and attribute of a file.
    kind = type(node)
    if kind is _NAME:
        return node.value
    parts = []
    while kind is _ATTRIBUTE:
        parts.append(node.attr.value)
        node = node.value
        kind = type(node)
    if kind is not _NAME:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def qualify_dotted(raw: Optional[str], bindings: Dict[str, str]) -> Optional[str]:
    """``th.cuda.x`` -> ``torch.cuda.x`` when ``th`` is bound to ``torch`` by an import, else None."""
    if raw is None:
        return None
    root, _, rest = raw.partition(".")
    target = bindings.get(root)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


class ImportTable:
    """Local name → fully qualified module path (or object path)."""

    def __init__(self) -> None:
        self.bindings: Dict[str, str] = {}

    @classmethod
    def from_module(cls, module: cst.Module) -> "ImportTable":
        table = cls()
        table.collect(module)
        return table

    def collect(self, module: cst.Module) -> None:
        for node in _imports_in_order(module):
            self.add(node)

    def add(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.bindings[alias.asname.name.value] = full
                else:
                    root = full.split(".", 1)[0]
                    self.bindings[root] = root
        elif isinstance(node, cst.ImportFrom):
            if node.relative or node.module is None:
                return
            base = dotted_name(node.module)
            if base is None or isinstance(node.names, cst.ImportStar):
                return
            for alias in node.names:
                name = dotted_name(alias.name)
                if name is None:
                    continue
                local = name
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    local = alias.asname.name.value
                self.bindings[local] = f"{base}.{name}"

    def qualify(self, node: cst.CSTNode) -> Optional[str]:
        """The qualified name of a Name/Attribute chain rooted in an import."""
        return qualify_dotted(dotted_name(node), self.bindings)

    def qualify_call(self, node: cst.CSTNode) -> Optional[str]:
        return self.qualify(node.func) if isinstance(node, cst.Call) else None

    def imports_any(self, prefixes: Iterable[str]) -> bool:
        targets = self.bindings.values()
        return any(t == p or t.startswith(p + ".") for p in prefixes for t in targets)


# Imports are statements, so only nodes that hold statements need to be opened:
# expressions (decorators, conditions, defaults, ...) never contain one.
_STATEMENT_HOLDERS = (
    cst.Module,
    cst.BaseSuite,
    cst.BaseCompoundStatement,
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)
_HOLDS: Dict[type, bool] = {}


def _holds_statements(cls: type) -> bool:
    holds = _HOLDS.get(cls)
    if holds is None:
        holds = _HOLDS[cls] = issubclass(cls, _STATEMENT_HOLDERS)
    return holds


def _imports_in_order(module: cst.Module) -> Iterable[cst.CSTNode]:
    """Every Import/ImportFrom in source order (later bindings override earlier ones)."""
    from mpslint.walk import children

    stack: list = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield small
            continue
        if isinstance(node, cst.SimpleStatementSuite):  # `if x: import y`
            for small in node.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield small
            continue
        kids = [child for child in children(node) if _holds_statements(type(child)) or isinstance(child, cst.SimpleStatementLine)]
        kids.reverse()
        stack.extend(kids)
