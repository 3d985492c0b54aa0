"""The modules of the checked project and what their names resolve to across imports.

``Project`` is one per process: it finds a module's file (``layout``), reads
its summary by content (``store``), and follows a name through ``import``,
``from ... import`` (absolute and relative), ``import a.b as c`` and star
imports (honouring ``__all__``) until it reaches what some module binds it
to. A cycle of imports ends the search with "not known". Every file it reads
to answer is recorded by the asker (``Lookup.depends``): the digest of its
summary, or ``absent``, so a cached result can be checked against them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, Optional, Set, Tuple

from mpslint.analysis.project import layout
from mpslint.analysis.project.store import SummaryStore
from mpslint.analysis.project.summary import ModuleSummary

ABSENT = "absent"  # the digest of a module file that does not exist (or cannot be read)

# What a name resolves to: ("alias", "torch.float64"), ("value", fact), ("function", fact), ("module", ModuleRef).
Resolved = Tuple[str, object]


@dataclass(frozen=True)
class ModuleRef:
    path: str
    dotted: str
    is_package: bool
    roots: Tuple[str, ...]
    summary: ModuleSummary


def roots_of(path: str) -> Tuple[str, str, bool, Tuple[str, ...]]:
    """(dotted name, package flag, search roots) of the module at ``path``."""
    root, dotted, is_package = layout.locate(path)
    here = os.path.dirname(path)
    return dotted, is_package, (root,) if here == root else (root, here)


class Project:
    def __init__(self, store: Optional[SummaryStore] = None) -> None:
        self.store = store or SummaryStore()
        self._files: Dict[str, Tuple[Tuple[int, int], Optional[ModuleSummary]]] = {}

    def summary_at(self, path: str) -> Optional[ModuleSummary]:
        """The summary of the module file at ``path`` (None: missing, unreadable, not Python)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        signature = (st.st_mtime_ns, st.st_size)
        known = self._files.get(path)
        if known is not None and known[0] == signature:
            return known[1]
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        _, summary = self.store.get(data)
        self._files[path] = (signature, summary)
        return summary

    def digest_at(self, path: str) -> str:
        summary = self.summary_at(path)
        return summary.digest if summary is not None else ABSENT

    def forget(self) -> None:
        """Drop what was read (a long-lived process whose files change: the language server)."""
        self._files.clear()
        layout.clear()


_SHARED: Optional[Project] = None


def shared() -> Project:
    """This process's project model."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Project()
    return _SHARED


def use_cache_dir(directory: Optional[str]) -> None:
    """Start afresh, keeping summaries under ``directory`` (the result cache's) when given.

    The runner calls this once per run (and each worker once): files may have come and gone since the
    last run of this process, and what was found on disk then is forgotten.
    """
    global _SHARED
    _SHARED = Project(SummaryStore(directory))
    layout.clear()


class Lookup:
    """Resolution for one asker, which records every module file it read (``depends``)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.depends: Dict[str, str] = {}  # path -> digest of its summary, or ABSENT

    def module(self, dotted: str, roots: Tuple[str, ...]) -> Optional[ModuleRef]:
        path = layout.find(roots, dotted)
        if path is None:
            for root in roots[:1]:  # where it would appear: a new module there changes the answer
                base = os.path.join(root, dotted.replace(".", os.sep))
                self.depends.setdefault(base + ".py", ABSENT)
            return None
        summary = self.project.summary_at(path)
        self.depends[path] = summary.digest if summary is not None else ABSENT
        if summary is None:
            return None
        name, is_package, its_roots = roots_of(path)
        return ModuleRef(path, name or dotted, is_package, its_roots, summary)

    def name(self, where: ModuleRef, name: str, seen: Optional[Set[Tuple[str, str]]] = None) -> Optional[Resolved]:
        """What ``name`` at the top level of ``where`` is, following imports."""
        seen = set() if seen is None else seen
        key = (where.path, name)
        if key in seen:
            return None  # an import cycle
        seen.add(key)
        summary = where.summary
        if name in summary.aliases:
            return ("alias", summary.aliases[name])
        if name in summary.values:
            return ("value", summary.values[name])
        if name in summary.functions:
            return ("function", summary.functions[name])
        if name in summary.imports:
            return self.imported(where, summary.imports[name], seen)
        if name in summary.names:
            return None  # bound here to something no fact describes: a star import does not override it
        return self.starred(where, name, seen)

    def starred(self, where: ModuleRef, name: str, seen: Set[Tuple[str, str]]) -> Optional[Resolved]:
        """``name`` brought by one of the module's star imports (the last one that exports it wins)."""
        if name.startswith("_"):
            return None
        for level, module in reversed(where.summary.stars):
            dotted = layout.absolute(where.dotted, where.is_package, level, module)
            target = self.module(dotted, where.roots) if dotted else None
            if target is None:
                if not level and module.split(".", 1)[0] in ("torch", "numpy"):
                    return ("alias", f"{module}.{name}")  # from torch import *: what torch exports
                continue
            exports = target.summary.exports
            if exports is not None and name not in exports:
                continue
            found = self.name(target, name, seen)
            if found is not None:
                return found
        return None

    def imported(self, where: ModuleRef, entry: list, seen: Set[Tuple[str, str]]) -> Optional[Resolved]:
        if entry[0] == "import":
            dotted = entry[1]
            target = self.module(dotted, where.roots)
            return ("module", target) if target is not None else ("alias", dotted)
        _, level, module, name = entry
        dotted = layout.absolute(where.dotted, where.is_package, level, module)
        if dotted is None:
            return None
        target = self.module(dotted, where.roots)
        if target is None:
            return ("alias", f"{dotted}.{name}") if not level else None
        if name not in target.summary.names:
            submodule = self.module(f"{dotted}.{name}", where.roots)
            if submodule is not None:
                return ("module", submodule)
        return self.name(target, name, seen)
