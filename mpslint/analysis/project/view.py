"""One checked file's questions to the project model.

The file's own summary is made from the ``ast`` already parsed; the modules it
imports are read through the process's ``Project``. Three questions:

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
import os
from typing import Dict, Optional, Tuple

from mpslint.analysis.names import LIBRARIES
from mpslint.analysis.project.layout import absolute
from mpslint.analysis.project.model import Lookup, ModuleRef, Resolved, roots_of, shared
from mpslint.analysis.project.summary import ModuleSummary, summarize

_UNSET = object()


class ProjectView:
    def __init__(self, module: ast.Module, path: str, text: Optional[str] = None) -> None:
        self.module = module
        self.path = path
        self.text = text  # the module's source, when known: its summary is then stored by content
        self.lookup = Lookup(shared())
        self._summary: Optional[ModuleSummary] = None
        self._here: Optional[ModuleRef] = None
        self._qualified: Dict[str, Optional[str]] = {}
        self._imported: Dict[str, Optional[Resolved]] = {}

    @property
    def depends(self) -> Dict[str, str]:
        return self.lookup.depends

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
    def here(self) -> ModuleRef:
        if self._here is None:
            path = os.path.abspath(self.path or "-")
            dotted, is_package, roots = roots_of(path)
            self._here = ModuleRef(path, dotted, is_package, roots, self.summary)
        return self._here

    def words(self) -> str:
        """What the names this file imports from the project stand for, as text for the prefilter.

        A rule is skipped when its trigger words are not in the file; a file whose
        ``DTYPE`` is ``torch.float64`` in another module needs that word too. Only
        star imports and constant-like names are read here (``DTYPE``, ``DEVICE``,
        ``compute_dtype``): reading every imported module before any rule asks
        would parse much of a package for each file of a cold run.
        """
        summary = self.summary
        words = set()
        for name, entry in summary.imports.items():
            if not _constant_like(name):
                continue  # a function's facts matter where it is called, which the rules ask about
            if entry[0] == "from" and (entry[1] or entry[2].split(".", 1)[0] not in LIBRARIES):
                words.update(_words(self.imported(name)))
        for level, module in summary.stars:
            dotted = absolute(self.here.dotted, self.here.is_package, level, module)
            target = self.lookup.module(dotted, self.here.roots) if dotted else None
            if target is not None:
                for name in target.summary.exported():
                    words.update(_words(self.lookup.name(target, name)))
            elif not level:
                words.add(module)
        return " ".join(sorted(words))

    def imported(self, name: str) -> Optional[Resolved]:
        """What ``name``, bound in this file only by an import (a star import too), is."""
        found = self._imported.get(name, _UNSET)
        if found is _UNSET:
            found = None
            if _class_like(name):
                self._imported[name] = None
                return None  # `BertModel`: no fact describes a class, and its module need not be read
            summary = self.summary
            if name in summary.imports:
                found = self.lookup.imported(self.here, summary.imports[name], set())
            elif name not in summary.names and summary.stars:
                found = self.lookup.starred(self.here, name, set())
            self._imported[name] = found
        return found  # type: ignore[return-value]

    def qualified(self, root: str) -> Optional[str]:
        """The qualified name ``root`` stands for, where the file's own imports do not say it."""
        found = self._qualified.get(root, _UNSET)
        if found is _UNSET:
            found = self.summary.aliases.get(root)
            if found is None and (root not in self.summary.imports or _constant_like(root) or root in MODULE_ALIASES):
                resolved = self.imported(root)
                if resolved is not None and resolved[0] == "alias":
                    found = resolved[1]
            self._qualified[root] = found  # type: ignore[assignment]
        return found  # type: ignore[return-value]

    def function(self, name: str) -> Optional[str]:
        """The return fact of this file's top-level function ``name``, or of one it imports."""
        fact = self.summary.functions.get(name)
        if fact is not None:
            return fact
        resolved = self.imported(name)
        if resolved is not None and resolved[0] == "function":
            return resolved[1]  # type: ignore[return-value]
        return None

    def method(self, owner: str, name: str) -> Optional[str]:
        return self.summary.functions.get(f"{owner}.{name}")

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


def _words(resolved: Optional[Resolved]) -> Tuple[str, ...]:
    if resolved is None or resolved[0] == "module":
        return ()
    return (str(resolved[1]),)


# Local names a project module may give to a library (`from .common import torch, np`).
MODULE_ALIASES = frozenset("torch np numpy nn F amp autocast GradScaler cuda dist".split())


def _class_like(name: str) -> bool:
    return name[:1].isupper() and not name.isupper()


def _constant_like(name: str) -> bool:
    """``DTYPE``, ``DEVICE``, ``compute_dtype``, ``loader_kwargs``: a name whose value may hold a trigger word."""
    low = name.lower()
    return name.isupper() or any(word in low for word in ("dtype", "device", "cuda", "gpu", "float", "double", "kwargs"))
