"""Where the modules of a checked tree live: a file's dotted name, a dotted name's file.

A file's package is the chain of directories above it that hold an
``__init__.py``; the directory above the top package is the root its
absolute imports start from. A script's own directory is searched too, as
Python puts it first on ``sys.path`` (``from utils import *`` next to
``train.py``). Directories without ``__init__.py`` are namespace packages:
``models/net.py`` under a root is ``models.net``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Optional, Tuple


@lru_cache(maxsize=4096)
def _is_package_dir(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


def locate(path: str) -> Tuple[str, str, bool]:
    """(root, dotted name, is a package) of the module in the file at ``path`` (absolute)."""
    directory, filename = os.path.split(path)
    stem = filename[:-3] if filename.endswith(".py") else filename.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while _is_package_dir(directory):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
        if not package:
            break
    return directory, ".".join(parts), is_package


def absolute(module: str, is_package: bool, level: int, name: str) -> Optional[str]:
    """The dotted name ``from <level dots><name> import`` means inside ``module``; None above the root."""
    if not level:
        return name
    anchor = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 > len(anchor):
        return None
    anchor = anchor[: len(anchor) - (level - 1)]
    parts = anchor + ([name] if name else [])
    return ".".join(parts) if parts else None


@lru_cache(maxsize=65536)
def find(roots: Tuple[str, ...], dotted: str) -> Optional[str]:
    """The file of module ``dotted`` under the first root that has it, or None (not in the project)."""
    if not dotted:
        return None
    relative = dotted.replace(".", os.sep)
    for root in roots:
        base = os.path.join(root, relative)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
    return None


@lru_cache(maxsize=65536)
def is_directory(roots: Tuple[str, ...], dotted: str) -> bool:
    """Whether ``dotted`` is a directory under a root: a namespace package, whose modules are files there."""
    relative = dotted.replace(".", os.sep)
    return any(os.path.isdir(os.path.join(root, relative)) for root in roots)


def clear() -> None:
    """Forget what the file system looked like (a long-lived server, tests that write files)."""
    _is_package_dir.cache_clear()
    find.cache_clear()
    is_directory.cache_clear()
