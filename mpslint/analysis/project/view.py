"""One checked file's questions to the project model.

The file's own facts come from the ``ast`` already parsed, a function at a time
as rules ask (``summary.LazyFacts``); the modules it imports are read through the
process's ``Project``. Three questions:

- ``qualified(root)``: what a name stands for when it comes from elsewhere or
  is an alias (``from utils import *`` bringing ``torch``; ``DTYPE`` imported
  from ``config``; ``precision_scope = autocast`` in this file);
- ``imported(name)``: what a name this file imports is (a value's fact, a
  function's return fact, a module);
- ``returns(call)``: what a call of a function of this file (a helper defined
  at the top level, ``self.method`` of the enclosing class) or of an imported
  module returns.

Every module file read to answer is in ``depends`` (path -> digest), which the
cache keeps with the file's findings.
"""

from __future__ import annotations

import ast
import builtins
import os
from typing import Dict, FrozenSet, List, Optional, Tuple

from mpslint.analysis.names import LIBRARIES
from mpslint.analysis.project.layout import absolute
from mpslint.analysis.project.model import Lookup, ModuleRef, Resolved, roots_of, shared
from mpslint.analysis.project.summary import LazyFacts, ModuleSummary, summarize
from mpslint.analysis.syntax import is_main_guard
from mpslint.analysis.tree import walk

_UNSET = object()


class ProjectView:
    def __init__(self, module: ast.Module, path: str, text: Optional[str] = None) -> None:
        self.module = module
        self.path = path
        self.text = text  # the module's source, when known: its summary is then stored by content
        self.lookup = Lookup(shared(), os.path.abspath(path or "-"))
        self._summary: Optional[ModuleSummary] = None
        self._lazy: Optional[LazyFacts] = None
        self._header: Optional[ModuleSummary] = None
        self._here: Optional[ModuleRef] = None
        self._qualified: Dict[str, Optional[str]] = {}
        self._imported: Dict[str, Optional[Resolved]] = {}
        self._bound: Optional[FrozenSet[str]] = None

    @property
    def depends(self) -> Dict[str, str]:
        return self.lookup.depends

    def depends_on(self, path: str, token: str) -> None:
        """This file's result also depends on ``path`` in a way its summary does not capture: ``token``, which
        no summary digest equals, keeps the result out of the cache."""
        self.lookup.root.files[path] = token

    @property
    def summary(self) -> ModuleSummary:
        if self._summary is None:
            if self.text is not None and self.path.endswith(".py"):  # a notebook's program is imported by none
                # Stored: a module checked before another imports it is not parsed again for that.
                _, found = self.lookup.project.store.get(self.text.encode("utf-8", "surrogatepass"), self.module)
                self._summary = found if found is not None else summarize(self.module)
            else:
                self._summary = summarize(self.module)
        return self._summary

    @property
    def header(self) -> ModuleSummary:
        """The file's names, imports and aliases: all that resolving its imports needs (no function is read)."""
        if self._header is None:
            self._header = self._summary if self._summary is not None else self._facts().header
        return self._header

    def _facts(self) -> LazyFacts:
        if self._lazy is None:
            self._lazy = LazyFacts(self.module)
        return self._lazy

    def _own_function(self, key: str) -> Optional[str]:
        """The return fact of this file's function or method ``key`` (``Class.method``), computing only what it
        needs until a question meets a cycle of functions: then the file's whole summary answers."""
        if self._summary is None:
            settled, fact = self._facts().function(key)
            if settled:
                return fact
        return self.summary.functions.get(key)

    @property
    def here(self) -> ModuleRef:
        if self._here is None:
            path = self.lookup.asker
            dotted, is_package, roots = roots_of(path)
            self._here = ModuleRef(path, dotted, is_package, roots + _roots_named(path, roots, self.header), self.header)
        return self._here

    @property
    def defined(self) -> FrozenSet[str]:
        """The functions and classes the file defines at its top level."""
        found = self.__dict__.get("_defined")
        if found is None:
            found = self.__dict__["_defined"] = frozenset(
                s.name for s in self.module.body  # type: ignore[attr-defined]
                if type(s) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        return found

    @property
    def bound(self) -> FrozenSet[str]:
        """Every name the file binds anywhere (assigned, a parameter, defined): a star import does not bind it."""
        if self._bound is None:
            names = set()
            for node in walk(self.module):
                cls = type(node)
                if cls is ast.Name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                    names.add(node.id)  # type: ignore[attr-defined]
                elif cls is ast.arg:
                    names.add(node.arg)  # type: ignore[attr-defined]
                elif cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                    names.add(node.name)  # type: ignore[attr-defined]
            self._bound = frozenset(names)
        return self._bound

    def words(self) -> str:
        """What the names this file imports from the project stand for, as text for the prefilter.

        A rule is skipped when its trigger words are not in the file; a file whose
        ``DTYPE`` is ``torch.float64`` in another module needs that word too. Only
        star imports, names of settings (``DTYPE``, ``DEVICE``, ``compute_dtype``,
        ``loader_kwargs``) and names called in the unguarded top-level code of the
        file (one that starts worker processes there stands for ``multiprocessing``)
        are read here: reading every imported module before any rule asks would
        parse much of a package for each file of a cold run.
        """
        summary = self.header
        words = set()
        for name, entry in summary.imports.items():
            if not _names_a_setting(name):
                continue  # a function's facts matter where it is called, which the rules ask about
            if entry[0] == "from" and self.may_be_from_project(name):
                words.update(_words(self.imported(name)))
        for level, module in summary.stars:
            dotted = absolute(self.here.dotted, self.here.is_package, level, module)
            target = self.lookup.module(dotted, self.here.roots) if dotted else None
            if target is not None:
                # What the module itself binds (not what it re-exports through its own stars: that would
                # read a package's every module for each file that star-imports its top).
                exported = set(target.summary.exported())
                words.update(v for k, v in target.summary.aliases.items() if k in exported)
                words.update(v for k, v in target.summary.values.items() if k in exported)
            elif not level:
                words.add(module)
        if any(self.starts_processes(name) for name in _called_at_top_level(self.module)
               if name not in self.defined and self.may_be_from_project(name)):
            words.add("multiprocessing")  # `envs = SubprocVecEnv(fns)` with no `__main__` guard (MPS403)
        return " ".join(sorted(words))

    def may_be_from_project(self, name: str) -> bool:
        """``name`` may come from a module of the project: imported other than from a known library
        (``torch``, ``numpy``), or bound by nothing but a star import."""
        entry = self.header.imports.get(name)
        if entry is None:
            return bool(self.header.stars) and name not in self.header.names
        module = entry[1] if entry[0] == "import" else entry[2]
        return (entry[0] == "from" and bool(entry[1])) or module.split(".", 1)[0] not in LIBRARIES

    def imported(self, name: str) -> Optional[Resolved]:
        """What ``name``, bound in this file only by an import (a star import too), is."""
        found = self._imported.get(name, _UNSET)
        if found is _UNSET:
            found = None
            summary = self.header
            if _class_like(name) and name in summary.imports:
                self._imported[name] = None
                return None  # `BertModel`: no fact describes a class, and its module need not be read
            if name in summary.imports:
                found = self.lookup.imported(self.here, summary.imports[name], set())
            elif name not in summary.names and summary.stars:
                found = self.lookup.starred(self.here, name, set())
            self._imported[name] = found
        return found  # type: ignore[return-value]

    def starts_processes(self, name: str) -> bool:
        """Whether calling ``name`` starts worker processes: a class of this file, or a function or class it
        imports from the project (``ModuleSummary.starts``). Functions of this file are not asked: MPS403 follows
        them into their bodies itself."""
        found = self.__dict__.setdefault("_starts", {}).get(name)
        if found is None:
            found = self.__dict__["_starts"][name] = self._starts_processes(name)
        return found

    def _starts_processes(self, name: str) -> bool:
        if name in self.defined:
            # The file's own summary (every function's facts) only where its imports can start a process.
            return _imports_processes(self.header) and name in self.summary.starts and _class_named(self.module, name)
        summary = self.header
        if name in summary.imports:
            if not self.may_be_from_project(name):
                return False
            resolved = self.lookup.imported(self.here, summary.imports[name], set())
        elif name not in summary.names and summary.stars:
            resolved = self.lookup.starred(self.here, name, set())
        else:
            return False
        return resolved is not None and resolved[0] == "starts"

    def device_option_reader(self, option: str) -> Optional[str]:
        """A module that chooses the device from ``.option`` of a parsed-arguments object (``self.args.use_gpu``,
        ``namespace_flags.py``): this file, or a module of the project it imports, directly or through the
        modules those import (the script passes its ``args`` down). Its path, or None."""
        if option in self.summary.device_options:
            return self.here.path
        seen = {self.here.path}
        pending = [self.here]
        while pending and len(seen) < _MAX_IMPORTED:
            where = pending.pop(0)
            for target in self._imported_modules(where):
                if target.path in seen:
                    continue
                seen.add(target.path)
                if option in target.summary.device_options:
                    return target.path
                pending.append(target)
        return None

    def _imported_modules(self, where: ModuleRef):
        """The project modules ``where`` imports (``import a.b``, ``from a import b``, ``from .b import c``, stars)."""
        summary = where.summary
        # The script runs from its own folder: `from exp.exp_basic import ...` in exp/exp_informer.py (exp/ has
        # no __init__.py) is found from there too.
        roots = tuple(dict.fromkeys(where.roots + self.here.roots))
        wanted = [(0, entry[1], None) for entry in summary.imports.values() if entry[0] == "import"]
        wanted += [(entry[1], entry[2], entry[3]) for entry in summary.imports.values() if entry[0] == "from"]
        wanted += [(level, module, None) for level, module in summary.stars]
        for level, module, name in wanted:
            if not level and module.split(".", 1)[0] in LIBRARIES:
                continue
            dotted = absolute(where.dotted, where.is_package, level, module)
            if not dotted:
                continue
            target = self.lookup.module(dotted, roots)
            if target is not None:
                yield target
            if name is not None and (target is None or name not in target.summary.names):
                submodule = self.lookup.module(f"{dotted}.{name}", roots)  # `from exp import exp_basic`
                if submodule is not None:
                    yield submodule

    def qualified(self, root: str) -> Optional[str]:
        """The qualified name ``root`` stands for, where the file's own imports do not say it."""
        found = self._qualified.get(root, _UNSET)
        if found is _UNSET:
            found = self.header.aliases.get(root)
            imported = root in self.header.imports
            # A name no import binds can come only from a star import (and is bound nowhere in the file).
            free = not imported and bool(self.header.stars) and root not in BUILTINS and root not in self.bound
            if found is None and (free or (imported and (_constant_like(root) or root in MODULE_ALIASES))):
                resolved = self.imported(root)
                if resolved is not None and resolved[0] == "alias":
                    found = resolved[1]
                elif resolved is None and free:
                    # `torch` that only a star import the project cannot read can bind (a module not found, a
                    # package's missing file): a name nobody gives to anything else
                    found = _CONVENTIONAL.get(root)
            self._qualified[root] = found  # type: ignore[assignment]
        return found  # type: ignore[return-value]

    def star_source(self, name: str) -> Optional[int]:
        """The position (in the summary's ``stars``, ``summary.star_imports`` order) of the star import that
        binds ``name`` in this file, where nothing else in the file binds it; else None."""
        summary = self.header
        if name in summary.imports or name in summary.names or name in self.bound or not summary.stars:
            return None
        return self.lookup.star_source(self.here, name, set())[0]

    def function(self, name: str) -> Optional[str]:
        """The return fact of this file's top-level function ``name``, or of one it imports."""
        if name in self.header.imports and name not in self.defined:
            resolved = self.imported(name)  # the file's own summary (every function's facts) is not needed
            return resolved[1] if resolved is not None and resolved[0] == "function" else None  # type: ignore[return-value]
        fact = self._own_function(name)
        if fact is not None:
            return fact
        resolved = self.imported(name)
        if resolved is not None and resolved[0] == "function":
            return resolved[1]  # type: ignore[return-value]
        return None

    def callers(self, name: str) -> Tuple[List[Optional[str]], List[str]]:
        """What the modules next to this one pass to its top-level function ``name`` (``callers.py``): per
        positional argument the fact they all agree on, and the calling files."""
        if not self.path.endswith(".py"):
            return [], []  # a notebook or stdin without a file name: no module imports it
        return self.lookup.callers(self.here, name)

    def method(self, owner: str, name: str) -> Optional[str]:
        return self._own_function(f"{owner}.{name}")

    def class_method(self, cls: str, method: str) -> Optional[str]:
        """The return fact of ``method`` of class ``cls`` (``Points`` or ``data.Points``): a class of this file,
        one it imports from a project module, or one of a project module it imports by name."""
        key = f"{cls.rsplit('.', 1)[-1]}.{method}"
        if "." not in cls:
            fact = self._own_function(key)
            if fact is not None or cls not in self.header.imports:
                return fact
            entry = self.header.imports[cls]
            if entry[0] != "from":
                return None
            dotted = absolute(self.here.dotted, self.here.is_package, entry[1], entry[2])
            target = self.lookup.module(dotted, self.here.roots) if dotted else None
            key = f"{entry[3]}.{method}"
        else:
            owner, _ = cls.rsplit(".", 1)
            resolved = self.imported(owner) if "." not in owner else None
            target = resolved[1] if resolved is not None and resolved[0] == "module" else None  # type: ignore[assignment]
        return target.summary.functions.get(key) if target is not None else None  # type: ignore[union-attr]

    def module_class(self, base: str) -> bool:
        """``base`` (``BaseModel``, ``models.BaseModel``), a class this file imports from a module of the project,
        is a module class there (``class BaseModel(nn.Module)``, the summary's ``modules``)."""
        if "." in base:
            owner, name = base.rsplit(".", 1)
            resolved = self.imported(owner) if "." not in owner else None
            target = resolved[1] if resolved is not None and resolved[0] == "module" else None
        else:
            entry = self.header.imports.get(base)
            if entry is None or entry[0] != "from" or base in self.defined:
                return False
            dotted = absolute(self.here.dotted, self.here.is_package, entry[1], entry[2])
            target = self.lookup.module(dotted, self.here.roots) if dotted else None
            name = entry[3]
        return target is not None and name in target.summary.modules  # type: ignore[union-attr]

    def module_function(self, module: str, name: str) -> Optional[str]:
        """``utils.reduce_mean`` where ``import utils`` (or ``from . import utils``) names a project module."""
        resolved = self.imported(module)
        if resolved is None or resolved[0] != "module":
            return None
        found = self.lookup.name(resolved[1], name)  # type: ignore[arg-type]
        if found is not None and found[0] == "function":
            return found[1]  # type: ignore[return-value]
        return None

    def module_value(self, module: str, name: str) -> Optional[Resolved]:
        resolved = self.imported(module)
        if resolved is None or resolved[0] != "module":
            return None
        return self.lookup.name(resolved[1], name)  # type: ignore[arg-type]


def _roots_named(path: str, roots: Tuple[str, ...], header: ModuleSummary) -> Tuple[str, ...]:
    """Roots the file's own imports point to: ``from model.utils import x`` in ``model/faster_rcnn.py``
    (``model/`` with no ``__init__.py``) says the project runs from the folder above ``model/``, where
    ``from utils import array_tool`` then finds ``utils/``."""
    tops = {entry[2].split(".", 1)[0] for entry in header.imports.values() if entry[0] == "from" and not entry[1]}
    tops.update(entry[1].split(".", 1)[0] for entry in header.imports.values() if entry[0] == "import")
    found = []
    directory = os.path.dirname(path)
    for _ in range(3):  # a script is rarely more than a few folders below where it is run from
        parent, name = os.path.split(directory)
        if not name or parent == directory:
            break
        if name in tops and parent not in roots and parent not in found:
            found.append(parent)
        directory = parent
    return tuple(found)


def _called_at_top_level(module: ast.Module) -> List[str]:
    """Public names called by the module's top-level statements as a whole (``envs = SubprocVecEnv(fns)``,
    ``main()``), in nested blocks too but not in functions, classes or an ``if __name__ == "__main__":`` block:
    what runs again when a spawned worker imports the script. Only the statement's own call is read (not calls
    inside its arguments, nor an ``if``'s test): the prefilter must stay cheap on every file of a package."""
    found: List[str] = []
    stack: List[ast.AST] = list(module.body)
    while stack:
        node = stack.pop()
        cls = type(node)
        if cls in _NOT_CALLING or is_main_guard(node):
            continue
        if cls in (ast.Assign, ast.AnnAssign, ast.Expr):
            value = node.value  # type: ignore[attr-defined]
            if type(value) is ast.Call and type(value.func) is ast.Name and not value.func.id.startswith("_"):  # type: ignore[attr-defined]
                found.append(value.func.id)  # type: ignore[attr-defined]
            continue
        for name in ("body", "orelse", "finalbody"):
            stack.extend(getattr(node, name, ()))
        for handler in getattr(node, "handlers", ()):
            stack.extend(handler.body)
    return found


_NOT_CALLING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)


def _imports_processes(summary: ModuleSummary) -> bool:
    return any((entry[1] if entry[0] == "import" else entry[2]).split(".", 1)[0] in ("multiprocessing", "concurrent")
               or (entry[1] if entry[0] == "import" else entry[2]).startswith("torch.multiprocessing")
               or (entry[0] == "from" and entry[2] == "torch" and entry[3] == "multiprocessing")
               for entry in summary.imports.values())


def _class_named(module: ast.Module, name: str) -> bool:
    return any(type(s) is ast.ClassDef and s.name == name for s in module.body)  # type: ignore[attr-defined]


def _words(resolved: Optional[Resolved]) -> Tuple[str, ...]:
    if resolved is None or resolved[0] in ("module", "starts"):
        return ()
    return (str(resolved[1]),)


BUILTINS = frozenset(dir(builtins))
_MAX_IMPORTED = 200  # modules read for one question: a script's own code is a few dozen; a framework is not it
# Local names a project module may give to a library (`from .common import torch, np`).
MODULE_ALIASES = frozenset("torch np numpy nn F amp autocast GradScaler cuda dist".split())
_CONVENTIONAL = {"torch": "torch", "np": "numpy", "numpy": "numpy"}


def _class_like(name: str) -> bool:
    return name[:1].isupper() and not name.isupper()


SETTING_WORDS = ("dtype", "device", "cuda", "gpu", "float", "double", "kwargs")


def _names_a_setting(name: str) -> bool:
    """``DTYPE``, ``DEVICE``, ``compute_dtype``, ``loader_kwargs``: a name whose value may hold a trigger word."""
    low = name.lower()
    return any(word in low for word in SETTING_WORDS)


def _constant_like(name: str) -> bool:
    """A setting, or a module-level constant (``EPS``, ``NOISE``): what an alias or a value may be."""
    return name.isupper() or _names_a_setting(name)
