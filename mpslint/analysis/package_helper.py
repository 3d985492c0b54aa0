"""A device helper that a module of the same package already defines, and that this file already imports.

A repository migrated file by file gets one ``pick_device()`` per file; where
a file imports a module of its own package (``from .utils import load``,
``from mypkg.common import x``, or ``import utils`` next to a script) whose
source defines a device helper (``pick_device()``, or a function of no
required arguments returning ``torch.device`` values for CUDA, MPS and the
CPU), the fix imports that helper instead. Only the modules the file imports
are read (as text, with ``ast``; nothing is imported or run).

This is the per-package stand-in for the project model (#22): one function,
``package_helper``, that the model can replace.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import List, Optional, Tuple

MAX_BYTES = 1_000_000
_HELPER_NAME = re.compile(r"^_?(get|pick|select|choose|best|default|auto|find)_?(torch_)?device$")


def package_helper(ctx, preferred: str) -> Optional[Tuple[str, str]]:
    """(module as this file imports it, function) of a device helper in an imported module of its package."""
    try:
        path = Path(ctx.path).resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    if path.suffix != ".py" or not path.is_file():
        return None
    for module, candidates in _imported_modules(ctx.module, path):
        for candidate in candidates:
            name = _helper_in(candidate, preferred)
            if name is not None:
                return module, name
    return None


def _imported_modules(module: ast.Module, path: Path) -> List[Tuple[str, List[Path]]]:
    """Each top-level import of a module of this package: (the name the file uses for it, its possible files)."""
    here = path.parent
    root = here
    while (root / "__init__.py").is_file():
        root = root.parent  # the folder holding the top-level package
    found: List[Tuple[str, List[Path]]] = []
    for stmt in module.body:
        if type(stmt) is ast.ImportFrom and stmt.module:
            parts = stmt.module.split(".")
            if stmt.level:
                base = here
                for _ in range(stmt.level - 1):
                    base = base.parent
                found.append(("." * stmt.level + stmt.module, _files(base, parts)))
            else:
                found.append((stmt.module, _files(here, parts) + _files(root, parts)))
        elif type(stmt) is ast.Import:
            for alias in stmt.names:
                if alias.asname is None and "." not in alias.name:
                    found.append((alias.name, _files(here, [alias.name])))
    return [(name, [p for p in files if p != path]) for name, files in found if files]


def _files(base: Path, parts: List[str]) -> List[Path]:
    target = base.joinpath(*parts)
    return [p for p in (target.with_suffix(".py"), target / "__init__.py") if p.is_file()]


def _helper_in(path: Path, preferred: str) -> Optional[str]:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
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
