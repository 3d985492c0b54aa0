"""A device helper that a module of the same package already defines, and that this file already imports.

A repository migrated file by file gets one ``pick_device()`` per file; where
a file imports a module of its own package (``from .utils import load``,
``from mypkg.common import x``, or ``import utils`` next to a script) whose
source defines a device helper (``pick_device()``, or a function of no
required arguments returning ``torch.device`` values for CUDA, MPS and the
CPU), the fix imports that helper instead. Only the modules the file imports
are read (as text, with ``ast``; nothing is imported or run).

One ``--fix`` run over several files fixes a module before the files that
import it (``fix_order.py``), so a file importing a module that got
``pick_device()`` earlier in the same run imports it too. ``--fix`` has
written that module by then; ``--diff`` writes nothing, so the run hands the
fixed texts of its earlier files here (``use_fixed_sources``) and they are read
instead of the files on disk. A file fixed alone (pre-commit) reads only the
disk: it never imports a name its module does not have yet.

A module that imports the helper at its top level from the package module
defining it (``from .util import pick_device``, what ``helper_home.py`` writes)
counts as having it.

A helper home that imports this file back (directly or through other modules
of the package) is not used: whichever of the two Python imports first would
ask the other for a name it has not defined yet.

This is the per-package stand-in for the project model (#22): one function,
``package_helper``, that the model can replace.
"""

from __future__ import annotations

import ast
import stat
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

MAX_BYTES = 1_000_000
MAX_CYCLE_MODULES = 200  # modules followed from a helper home looking for an import back to the file
_HELPER_NAME = re.compile(r"^_?(get|pick|select|choose|best|default|auto|find)_?(torch_)?device$")


# The fixed text of the files an ongoing `--diff` run has fixed so far (resolved path -> text).
_FIXED: Dict[Path, str] = {}


def use_fixed_sources(texts: Dict[str, str]) -> None:
    """Read these texts (path -> the file's text after this run's fixes) instead of the files on disk."""
    _FIXED.clear()
    for path, text in texts.items():
        try:
            _FIXED[Path(path).resolve()] = text
        except (OSError, RuntimeError, ValueError):
            continue


def package_helper(ctx, preferred: str, bound_by: int = 0) -> Optional[Tuple[Optional[str], str]]:
    """(module to import it from, function) of a device helper in an imported module of its package.

    Where the file imports that module as a module (``import utils``, ``from . import utils``), the module is
    None and the function is called through the file's own name for it: ``utils.pick_device``, if that import
    ends by line ``bound_by`` (where the helper would go); a later one may not have run where the device is used.
    """
    try:
        path = Path(ctx.path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if path.suffix != ".py" or not path.is_file():
        return None
    for module, candidates, bound, line in _imported_modules(ctx.module, path):
        for candidate in candidates:
            tree = parse_file(candidate)
            name = None
            if tree is not None:
                name = helper_in(tree, preferred) or _imported_helper(tree, candidate, preferred, path)
            if name is not None and not imports_back(candidate, tree, path):  # type: ignore[arg-type]
                return (None, f"{bound}.{name}") if bound and line <= bound_by else (module, name)
    return None


def _imported_helper(tree: ast.Module, at: Path, preferred: str, path: Path) -> Optional[str]:
    """``preferred`` where the module imports it at its top level from a module of the package that defines it
    (``from .util import pick_device``: the module a shared helper home gave it to, ``helper_home.py``)."""
    for stmt in tree.body:
        if type(stmt) is not ast.ImportFrom or not any(a.name == preferred and a.asname is None for a in stmt.names):
            continue
        for found in imported_files(ast.Module(body=[stmt], type_ignores=[]), at):
            home = parse_file(found)
            if found != path and home is not None and helper_in(home, preferred) == preferred \
                    and not imports_back(found, home, path):
                return preferred
    return None


def imported_files(module: ast.Module, path: Path) -> List[Path]:
    """The files of this package that ``module`` (the file at ``path``) imports at its top level."""
    return [p for _, files, _, _ in _imported_modules(module, path) for p in files]


def imports_back(home: Path, tree: ast.Module, path: Path) -> bool:
    """``home`` imports ``path`` at its top level, directly or through other modules of the package."""
    seen = {home}
    queue = [(home, tree)]
    while queue and len(seen) < MAX_CYCLE_MODULES:
        at, module = queue.pop()
        for found in imported_files(module, at):
            if found == path:
                return True
            if found not in seen:
                seen.add(found)
                parsed = parse_file(found)
                if parsed is not None:
                    queue.append((found, parsed))
    return False


def _imported_modules(module: ast.Module, path: Path) -> List[Tuple[str, List[Path], Optional[str], int]]:
    """Each top-level import of a module of this package: (the name the file uses for it, its possible files,
    the name it binds to the module itself where it imports the module as one, the import's last line)."""
    here = path.parent
    root = here
    while (root / "__init__.py").is_file():
        root = root.parent  # the folder holding the top-level package
    found: List[Tuple[str, List[Path], Optional[str], int]] = []
    for stmt in module.body:
        if type(stmt) is ast.ImportFrom and not stmt.module and stmt.level:
            base = here  # `from . import utils`
            for _ in range(stmt.level - 1):
                base = base.parent
            for alias in stmt.names:
                found.append(("." * stmt.level + alias.name, _files(base, [alias.name]), alias.asname or alias.name,
                              stmt.end_lineno))
        elif type(stmt) is ast.ImportFrom and stmt.module:
            parts = stmt.module.split(".")
            if stmt.level:
                base = here
                for _ in range(stmt.level - 1):
                    base = base.parent
                found.append(("." * stmt.level + stmt.module, _files(base, parts), None, stmt.end_lineno))
            else:
                found.append((stmt.module, _files(here, parts) + _files(root, parts), None, stmt.end_lineno))
        elif type(stmt) is ast.Import:
            for alias in stmt.names:
                if "." not in alias.name:  # `import seq2seq_models as sm`: `sm.pick_device()`
                    found.append((alias.name, _files(here, [alias.name]), alias.asname or alias.name,
                                  stmt.end_lineno))
    return [(name, [p for p in files if p != path], bound, line) for name, files, bound, line in found if files]


def _files(base: Path, parts: List[str]) -> List[Path]:
    target = base.joinpath(*parts)
    return [p for p in (target.with_suffix(".py"), target / "__init__.py") if p.is_file()]


def parse_file(path: Path) -> Optional[ast.Module]:
    try:
        fixed = _FIXED.get(path)
        if fixed is not None:
            return ast.parse(fixed)
        status = path.stat()
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_BYTES:
            return None  # a FIFO named like a module: reading it would never end
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


def helper_in(tree: ast.Module, preferred: str) -> Optional[str]:
    named = None
    for stmt in tree.body:
        if type(stmt) is not ast.FunctionDef or _required(stmt) or not _returns_devices(stmt):
            continue
        if stmt.name == preferred:
            return stmt.name
        if named is None and _HELPER_NAME.match(stmt.name):
            named = stmt.name
    return named


def _required(function: ast.FunctionDef) -> bool:
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    return len(positional) > len(args.defaults) or any(d is None for d in args.kw_defaults)


def _returns_devices(function: ast.FunctionDef) -> bool:
    """Every return is a ``torch.device(...)`` (or ``accelerator... or torch.device("cpu")``), and it knows MPS."""
    returns = [n for n in ast.walk(function) if type(n) is ast.Return]
    if not returns:
        return False
    for node in returns:
        value = node.value
        if type(value) is ast.BoolOp:
            value = value.values[-1]
        if not (type(value) is ast.Call and _name(value.func).endswith("device")):
            return False
    text = ast.dump(function)
    return "mps" in text or "current_accelerator" in text


def _name(node: ast.AST) -> str:
    if type(node) is ast.Name:
        return node.id  # type: ignore[attr-defined]
    if type(node) is ast.Attribute:
        return _name(node.value) + "." + node.attr  # type: ignore[attr-defined]
    return ""
