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

import ast
import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from mpslint.analysis.names import LIBRARIES
from mpslint.analysis.project import callers, digest_memo, layout
from mpslint.analysis.project.callers import CALLERS
from mpslint.analysis.project.store import SummaryStore

if TYPE_CHECKING:  # summaries are made or read in store.py and callers.py, which import them when they do
    from mpslint.analysis.project.summary import ModuleSummary

ABSENT = "absent"
MAX_DEPTH = 64  # re-exports followed through at most this many modules (Python's stack has a limit too)  # the digest of a module file that does not exist (or cannot be read)

# What a name resolves to: ("alias", "torch.float64"), ("value", fact), ("function", fact), ("module", ModuleRef),
# ("starts", path): a function or class of the module at path whose call starts worker processes.
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
        self.memo = digest_memo.DigestMemo(self.store.directory)
        self._fingerprints: Dict[Tuple[str, str], digest_memo.Fingerprint] = {}
        self._files: Dict[str, Tuple[Tuple[int, int], Optional[ModuleSummary]]] = {}
        self._digests: Dict[str, str] = {}
        # Memos of one run: (search roots, dotted name) -> (module, files read); (file, name) -> resolution.
        self.modules: Dict[Tuple[Tuple[str, ...], str], Tuple[Optional[ModuleRef], Dict[str, str]]] = {}
        self.resolved: Dict[Tuple[str, str], "_Entry"] = {}
        self.stars: Dict[str, tuple] = {}  # file -> its star imports, indexed (Lookup._stars)
        self.callers: Dict[Tuple[str, str], tuple] = {}  # (file, function) -> what its callers pass (Lookup.callers)
        self.texts: Dict[str, bytes] = {}  # file -> its bytes, for the modules callers are looked for in (callers.py)
        self.indexes: Dict[str, object] = {}  # directory -> its modules, or the index of their words (callers.py)
        self.calls: Dict[Tuple[str, str], dict] = {}  # (file, function) -> what the file passes to it (callers.py)
        self.trees: Dict[str, Optional[ast.Module]] = {}  # file -> its ast, the last few callers parsed (callers.py)
        self.headers: Dict[str, Optional[ModuleSummary]] = {}  # file -> its imports and names (callers.py)
        self.steps = 0  # resolutions made or reused: what tests/test_scaling.py counts

    def summary_at(self, path: str) -> Optional[ModuleSummary]:
        """The summary of the module file at ``path`` (None: missing, unreadable, not Python)."""
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None  # a FIFO or a device named like a module: opening it could block forever
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
        """The digest of the summary of the file at ``path`` as this run first found it (a run checks every
        cached entry's dependencies: each file is read once, not once per importer). ``path`` may also be
        a question about callers (``callers.key``): a directory's modules, or what one module passes."""
        found = self._digests.get(path)
        if found is None:
            started = digest_memo.now()
            fingerprint = self._fingerprint(path)
            found = self.memo.get(path, fingerprint)
            if found is None:
                if CALLERS in path:
                    found = callers.digest(self, path)
                else:
                    summary = self.summary_at(path)
                    found = summary.digest if summary is not None else ABSENT
                self.memo.put(path, fingerprint, found, started)
            self._digests[path] = found
        return found

    def vouch(self, depends: Dict[str, str], since: int) -> None:
        """Keep, for a later run, digests a worker computed during this run (which started at ``since``):
        each only while its files have not changed since before the run began."""
        for path, digest in depends.items():
            self.memo.put(path, self._fingerprint(path), digest, since)

    def _fingerprint(self, key: str) -> digest_memo.Fingerprint:
        """The ``stat`` of what the digest of dependency ``key`` comes from, taken once per run (a directory
        is asked about once per module name)."""
        source = callers.source_of(key) if CALLERS in key else ("file", key)
        if source not in self._fingerprints:
            kind, path = source
            self._fingerprints[source] = digest_memo.of_file(path) if kind == "file" else digest_memo.of_directory(path)
        return self._fingerprints[source]

    def forget(self) -> None:
        """Drop what was read (a long-lived process whose files change: the language server)."""
        self._files.clear()
        self._digests.clear()
        self._fingerprints.clear()
        self.modules.clear()
        self.resolved.clear()
        self.stars.clear()
        self.callers.clear()
        self.texts.clear()
        self.indexes.clear()
        self.calls.clear()
        self.trees.clear()
        self.headers.clear()
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


class _Entry:
    """One resolution (a name in a module, or one asker's questions): its answer, the module files it read
    itself, and the resolutions it used, so a memoized answer brings the files it depends on along."""

    __slots__ = ("resolved", "files", "children")

    def __init__(self) -> None:
        self.resolved: Optional[Resolved] = None
        self.files: Dict[str, str] = {}
        self.children: List["_Entry"] = []


class Lookup:
    """Resolution for one asker, which records every module file it read (``depends``).

    Answers are memoized in the ``Project`` per (module file, name), with the files they read: a name
    re-exported through a chain of star imports is followed once per run, not once per importer.
    An answer cut short by an import cycle is not memoized (from elsewhere in the cycle it may differ).
    """

    def __init__(self, project: Project, asker: Optional[str] = None) -> None:
        self.project = project
        self.root = _Entry()
        self.stack: List[_Entry] = [self.root]
        self.cut = 0  # cycles met by the resolutions on the stack
        # The asker's own file is read from the text being checked, which one process may check again with
        # other contents (a fix's next pass, an editor's buffer): answers about it are kept for this asker only.
        self.asker = asker
        self._own_resolved: Dict[Tuple[str, str], _Entry] = {}
        self._own_stars: Dict[str, tuple] = {}

    @property
    def depends(self) -> Dict[str, str]:
        """Every module file the answers so far read: path -> digest of its summary, or ABSENT."""
        found: Dict[str, str] = {}
        seen: Set[int] = set()
        todo = [self.root]
        while todo:
            entry = todo.pop()
            if id(entry) in seen:
                continue
            seen.add(id(entry))
            found.update(entry.files)
            todo.extend(entry.children)
        return found

    def module(self, dotted: str, roots: Tuple[str, ...]) -> Optional[ModuleRef]:
        files = self.stack[-1].files
        known = self.project.modules.get((roots, dotted))
        if known is None:
            known = self.project.modules[(roots, dotted)] = self._module(dotted, roots)
        ref, recorded = known
        files.update(recorded)
        return ref

    def _module(self, dotted: str, roots: Tuple[str, ...]) -> Tuple[Optional[ModuleRef], Dict[str, str]]:
        path = layout.find(roots, dotted)
        if path is None:
            # Where it would appear: a new module there changes the answer.
            return None, {os.path.join(roots[0], dotted.replace(".", os.sep)) + ".py": ABSENT}
        summary = self.project.summary_at(path)
        if summary is None:
            return None, {path: ABSENT}
        name, is_package, its_roots = roots_of(path)
        return ModuleRef(path, name or dotted, is_package, its_roots, summary), {path: summary.digest}

    def name(self, where: ModuleRef, name: str, seen: Optional[Set[Tuple[str, str]]] = None) -> Optional[Resolved]:
        """What ``name`` at the top level of ``where`` is, following imports."""
        key = (where.path, name)
        memo = self._own_resolved if where.path == self.asker else self.project.resolved
        entry = memo.get(key)
        if entry is not None:
            self.stack[-1].children.append(entry)
            self.project.steps += 1
            return entry.resolved
        seen = set() if seen is None else seen
        if key in seen or len(self.stack) > MAX_DEPTH:
            self.cut += 1
            return None  # an import cycle, or a chain of re-exports deeper than real code has
        seen.add(key)
        entry = _Entry()
        self.stack[-1].children.append(entry)
        self.stack.append(entry)
        cut = self.cut
        try:
            entry.resolved = self._name(where, name, seen)
        finally:
            self.stack.pop()
        self.project.steps += 1
        if self.cut == cut:
            memo[key] = entry
        return entry.resolved

    def _name(self, where: ModuleRef, name: str, seen: Set[Tuple[str, str]]) -> Optional[Resolved]:
        summary = where.summary
        if name in summary.aliases:
            return ("alias", summary.aliases[name])
        if name in summary.values:
            return ("value", summary.values[name])
        if name in summary.functions:
            return ("function", summary.functions[name])
        if name in summary.starts:
            return ("starts", where.path)
        if name in summary.imports:
            return self.imported(where, summary.imports[name], seen)
        if name in summary.names:
            return None  # bound here to something no fact describes: a star import does not override it
        return self.starred(where, name, seen)

    def starred(self, where: ModuleRef, name: str, seen: Set[Tuple[str, str]]) -> Optional[Resolved]:
        """``name`` brought by one of the module's star imports (the last one that exports it wins)."""
        return self.star_source(where, name, seen)[1]

    def star_source(self, where: ModuleRef, name: str, seen: Set[Tuple[str, str]]) -> Tuple[Optional[int], Optional[Resolved]]:
        """(the position in ``where.summary.stars`` of the star import ``name`` comes from, what it is); (None,
        None) when no star import of the module brings it."""
        if name.startswith("_") or not where.summary.stars:
            return None, None
        bound, nested, library = self._stars(where)
        # The last star import that binds the name itself, unless a later one re-exports it from its own stars.
        first = bound.get(name)
        for position, target in nested:
            if first is not None and position < first[0]:
                break
            exports = target.summary.exports
            if exports is not None and name not in exports:
                continue
            found = self.name(target, name, seen)
            if found is not None:
                return position, found
        if first is None:
            # Bound by nothing the project defines: a name no other binding explains comes from a library's
            # star import (`from torch.utils.data import *` brings `DataLoader`), when the module has one.
            return (library[0], ("alias", f"{library[1]}.{name}")) if library is not None else (None, None)
        found = self.name(first[1], name, seen)
        return (first[0], found) if found is not None else (None, None)

    def _stars(self, where: ModuleRef) -> Tuple[Dict[str, Tuple[int, ModuleRef]], List[Tuple[int, ModuleRef]],
                                                Optional[Tuple[int, str]]]:
        """The module's star imports, indexed once per run: name -> (position, the last target binding it),
        the targets that have star imports of their own (latest first), which are searched in turn, and
        (position, module) of its one star import from a library (``names.LIBRARIES``; None if none, or if
        another star import of a module outside the project might bind the name too: which one does cannot
        be told without importing them)."""
        stars = self._own_stars if where.path == self.asker else self.project.stars
        known = stars.get(where.path)
        if known is None:
            entry = _Entry()
            self.stack.append(entry)
            bound: Dict[str, Tuple[int, ModuleRef]] = {}
            nested: List[Tuple[int, ModuleRef]] = []
            libraries: List[Tuple[int, str]] = []
            unknown = False  # a star import of a module neither the project's nor a known library's
            try:
                for position, (level, module) in enumerate(where.summary.stars):
                    dotted = layout.absolute(where.dotted, where.is_package, level, module)
                    target = self.module(dotted, where.roots) if dotted else None
                    if target is None:
                        if not level and module.split(".", 1)[0] in LIBRARIES:
                            libraries.append((position, module))
                        else:
                            unknown = True  # it may bind any name
                        continue
                    summary = target.summary
                    exported = set(summary.exported())
                    for own in summary.names:
                        if own in exported:
                            bound[own] = (position, target)
                    if summary.stars:
                        nested.insert(0, (position, target))
            finally:
                self.stack.pop()
            library = libraries[0] if len(libraries) == 1 and not unknown else None
            known = stars[where.path] = (entry, bound, nested, library)
        self.stack[-1].children.append(known[0])
        return known[1], known[2], known[3]

    def callers(self, where: ModuleRef, function: str) -> Tuple[List[Optional[str]], List[str]]:
        """What the other modules next to ``where`` (its directory and its root's) pass to its top-level
        ``function``: per positional argument the fact all their calls agree on, and the files that call it."""
        key = (where.path, function)
        known = self.project.callers.get(key)
        if known is None:
            known = self.project.callers[key] = callers.find(self.project, where, function)
        passed, files, depends = known
        self.stack[-1].files.update(depends)
        return passed, files

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
            if layout.is_directory(where.roots, dotted):
                # `from utils import array_tool` where utils/ has no __init__.py (a namespace package)
                submodule = self.module(f"{dotted}.{name}", where.roots)
                if submodule is not None:
                    return ("module", submodule)
            return ("alias", f"{dotted}.{name}") if not level else None
        if name not in target.summary.names:
            submodule = self.module(f"{dotted}.{name}", where.roots)
            if submodule is not None:
                return ("module", submodule)
        return self.name(target, name, seen)
