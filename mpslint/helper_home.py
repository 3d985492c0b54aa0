"""A fix run's shared helper home: one ``pick_device()`` in the module its files already import.

Where two or more files of one ``--fix`` run would each get their own
``pick_device()`` and they all import (at module level: not under
``TYPE_CHECKING``, ``try`` or ``if``) one module of the run that has none,
that module gets the helper, fixed in a wave before them
(``fix_order.py``), and they import it from there in the style of their
existing import (``analysis/package_helper.py``).

The home is a plain ``.py`` module of the run (so it is under the paths the
user asked to fix, and not excluded): not a notebook, not ``__main__.py``
(a module with a ``__main__`` block is still one the files import), writable, with a
top-level import to put the helper after, no device helper yet and no other
use of the name, and it imports none of the files that would use it (a
cycle: ``package_helper`` would not use it anyway). Whether a file would get
its own helper is what its check's fixes say. The files read the home as the
run left it (on disk, or ``--diff``'s fixed texts), so a home whose write
failed is simply not used; a file fixed alone never has a home.

Whether a file would get its own helper is asked before the run fixes
anything: a file that imports another module of the run which gets a helper
first counts too, and may then import that one instead (still one helper per
module it reads). A home's ``__all__`` is left as it is: the files import the
helper by name.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from dataclasses import replace
from typing import Dict, FrozenSet, List, Optional, Sequence, Set

from mpslint.analysis.device_picker import DEFAULT_HELPER, names_used, render_helper
from mpslint.analysis.package_helper import MAX_BYTES, helper_in, imported_files, imports_back, parse_file
from mpslint.fix_order import cuda_module

MIN_USERS = 2
# The rules whose fixes may insert the helper (those that ask ``device_picker``): the question whether a file
# would get its own helper checks only these, not the costly rest (tests/test_helper_home.py holds the list to it).
HELPER_CODES = frozenset({"MPS101", "MPS102", "MPS103", "MPS104", "MPS105", "MPS107", "MPS108", "MPS302", "MPS304",
                          "MPS401"})
# The first line of an inline helper a fix inserts (device_picker.render_helper).
_INSERTED_HELPER = re.compile(r"^def \w+\(\) -> \w+\.device:$", re.MULTILINE)


def plan(paths: Sequence[str], settings: Sequence) -> Set[int]:
    """Indexes into ``paths`` of the modules that get ``pick_device()`` for the others (``settings[i]`` is
    the settings of ``paths[i]``)."""
    resolved: Dict[Path, int] = {}
    for i, path in enumerate(paths):
        if path.endswith(".py"):
            try:
                resolved[Path(path).resolve()] = i
            except (OSError, RuntimeError, ValueError):
                continue
    importers: Dict[int, List[int]] = {}
    for at, i in resolved.items():
        tree = cuda_module(paths[i])
        if tree is None:
            continue
        for found in dict.fromkeys(imported_files(tree, at)):
            home = resolved.get(found)
            if home is not None and home != i:
                importers.setdefault(home, []).append(i)
    candidates = {h: users for h, users in importers.items() if len(users) >= MIN_USERS}
    if not candidates:
        return set()
    homes: Dict[int, List[int]] = {}
    for home, users in candidates.items():
        path = Path(paths[home]).resolve()
        tree = _home_tree(path)
        if tree is not None:
            homes[home] = [u for u in users if not imports_back(path, tree, Path(paths[u]).resolve())]
    inserting: Dict[int, bool] = {}
    chosen: Set[int] = set()
    served: Set[int] = set()
    for home in sorted(homes, key=lambda h: (-len(homes[h]), h)):
        users = []
        for user in homes[home]:
            if user in served:
                continue
            if user not in inserting:
                inserting[user] = _inserts_helper(paths[user], settings[user])
            if inserting[user]:
                users.append(user)
        if len(users) >= MIN_USERS:
            chosen.add(home)
            served.update(users)
    return chosen


def with_helper(text: str, settings, newline: str = "\n") -> Optional[str]:
    """``text`` with ``import torch`` (if it has none) and ``pick_device()`` after its leading imports."""
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if helper_in(module, DEFAULT_HELPER) is not None or DEFAULT_HELPER in names_used(ast.walk(module)):
        return None
    lines = text.splitlines(keepends=True)
    anchor = _leading_imports_end(module)
    if anchor is None:
        return None
    torch = _torch_name(module, anchor)
    at = anchor.end_lineno  # type: ignore[attr-defined]
    floor = settings.torch_version[:2] if settings.torch_version else (2, 0)
    following = lines[at:]
    blank = 0
    for line in following:
        if line.strip():
            break
        blank += 1
    head = lines[:at]
    if head and not head[-1].endswith(("\n", "\r")):
        head[-1] += newline
    inserted = "\n\n" + render_helper(torch or "torch", DEFAULT_HELPER, floor)
    if following and blank < 2:
        inserted += "\n" * (2 - blank)
    if torch is None:
        # With the absolute imports (after the last of them), else above the package's own (`from .x import y`).
        row = _torch_import_row(module, anchor)
        head.insert(row, "import torch" + newline)
    return "".join(head) + inserted.replace("\n", newline) + "".join(following)


def _inserts_helper(path: str, settings, select: Optional[FrozenSet[str]] = None) -> bool:
    """Whether fixing the file alone would define a helper of its own (a fix of its check inserts one)."""
    from mpslint.engine import check_text
    from mpslint.writing import read_file

    try:
        data = read_file(path)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if select is None:
        select = settings.select & HELPER_CODES
    for diagnostic in check_text(text, path, replace(settings, select=select), origin=path).diagnostics:
        fix = diagnostic.fix
        if fix is not None and any(_INSERTED_HELPER.search(edit.content) for edit in fix.edits):
            return True
    return False


def _home_tree(path: Path) -> Optional[ast.Module]:
    if path.name == "__main__.py" or not os.access(path, os.W_OK):
        return None
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
    except OSError:
        return None
    tree = parse_file(path)
    if tree is None:
        return None
    if helper_in(tree, DEFAULT_HELPER) is not None or DEFAULT_HELPER in names_used(ast.walk(tree)):
        return None
    if _leading_imports_end(tree) is None:
        return None
    return tree


def _leading_imports_end(module: ast.Module) -> Optional[ast.stmt]:
    """The last top-level import before the module's first definition or other compound statement."""
    last = None
    for stmt in module.body:
        if type(stmt) in (ast.Import, ast.ImportFrom):
            last = stmt
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.While,
                               ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)):
            break
    return last


def _torch_import_row(module: ast.Module, anchor: ast.stmt) -> int:
    """The 0-based line before which ``import torch`` goes among the imports that end at ``anchor``."""
    leading = module.body[:module.body.index(anchor) + 1]
    absolute = [s for s in leading if type(s) is ast.Import
                or (type(s) is ast.ImportFrom and not s.level and s.module != "__future__")]
    if absolute:
        return absolute[-1].end_lineno  # type: ignore[attr-defined, return-value]
    relative = [s for s in leading if type(s) is ast.ImportFrom and s.level]
    if relative:
        return relative[0].lineno - 1
    return anchor.end_lineno  # type: ignore[attr-defined, return-value]


def _torch_name(module: ast.Module, anchor: ast.stmt) -> Optional[str]:
    """The name a plain top-level ``import torch`` up to ``anchor`` binds (None: none does; the helper's
    ``-> torch.device`` is read where it is defined)."""
    for stmt in module.body[:module.body.index(anchor) + 1]:
        if type(stmt) is ast.Import:
            for alias in stmt.names:
                if alias.name == "torch":
                    return alias.asname or "torch"
    return None

