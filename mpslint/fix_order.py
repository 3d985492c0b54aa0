"""The order in which one ``--fix`` run fixes its files: a module before the files of the run that import it.

The CUDA fixes import the device helper from a module of the package that
has one (``analysis/package_helper.py``). When that module gets its
``pick_device()`` in the same run, the files importing it can reuse it only
if it is fixed first: otherwise each of them gets its own copy. So the files
are fixed in waves: a file's wave comes after the waves of the run's files it
imports at its top level (the imports ``package_helper`` follows). An import
cycle is cut where the walk meets it; ``package_helper`` reuses no helper
across a cycle anyway.

Only files that mention CUDA are ordered: a file without it needs no helper,
and the helper it could give others comes from a CUDA fix. The rest go in the
first wave, unread here.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import AbstractSet, Dict, List, Optional, Sequence

from mpslint.analysis.package_helper import MAX_BYTES, imported_files
from mpslint.writing import read_file

_VISITING = -1


def waves(paths: Sequence[str], homes: AbstractSet[int] = frozenset()) -> List[List[int]]:
    """Indexes into ``paths``, grouped in waves to fix one after the other (each wave in the order given).

    ``homes`` (``helper_home.py``) are ordered too, CUDA or not: they give the helper to the files importing them.
    """
    resolved: Dict[Path, int] = {}
    trees: Dict[int, ast.Module] = {}
    for i, path in enumerate(paths):
        tree = cuda_module(path, i in homes)
        if tree is not None:
            try:
                resolved[Path(path).resolve()] = i
            except (OSError, RuntimeError, ValueError):
                continue
            trees[i] = tree
    imports: Dict[int, List[int]] = {}
    for at, i in resolved.items():
        imports[i] = [resolved[p] for p in imported_files(trees[i], at) if p in resolved and resolved[p] != i]
    level: Dict[int, int] = {}
    for i in imports:
        _level(i, imports, level)
    grouped: Dict[int, List[int]] = {}
    for i in range(len(paths)):
        grouped.setdefault(max(level.get(i, 0), 0), []).append(i)
    return [grouped[k] for k in sorted(grouped)]


def _level(start: int, imports: Dict[int, List[int]], level: Dict[int, int]) -> None:
    """One more than the deepest level among the files ``start`` imports (iteratively: deep chains exist)."""
    stack = [(start, iter(imports[start]))]
    level[start] = _VISITING
    while stack:
        node, pending = stack[-1]
        child = next(pending, None)
        if child is None:
            stack.pop()
            level[node] = 1 + max((level[c] for c in imports[node] if level[c] >= 0), default=-1)
            continue
        if child not in level:
            level[child] = _VISITING  # on the walk: meeting it again is a cycle, cut there
            stack.append((child, iter(imports[child])))


def cuda_module(path: str, home: bool = False) -> Optional[ast.Module]:
    if not path.endswith(".py"):
        return None
    try:
        data = read_file(path)  # a FIFO named like a module is not read: that would never end
        if len(data) > MAX_BYTES:
            return None
        if b"cuda" not in data and not home:
            return None
        return ast.parse(data)
    except (OSError, SyntaxError, ValueError):
        return None
