"""Which files a run checks: walk the given paths, honour includes, excludes and ``.gitignore``.

A directory walk checks the files matching ``include`` (default ``*.py``,
``*.pyi``, ``*.ipynb``, as Ruff) and ``extend-include``.

Explicitly named files are always checked (even excluded or ignored ones, like
Ruff) unless ``force_exclude`` is set, which is what pre-commit needs: it
passes every staged file by name. Walking never raises: missing paths,
unreadable directories and broken links are collected in ``errors`` (the
command line reports each as an MPS001 finding) and skipped, symlinked
directories are followed once (a loop ends at the first repeat), and the
result is sorted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from mpslint.config import ConfigResolver, ProjectConfig

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Discovery:
    files: List[Tuple[Path, ProjectConfig]] = field(default_factory=list)
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, message)


class _GitIgnore:
    """The ``.gitignore`` files that apply inside one directory, outermost first.

    Within one file the last matching pattern wins; a deeper file overrides a
    shallower one, as in git.
    """

    def __init__(self, layers: Tuple[Tuple[Path, object], ...] = ()) -> None:
        self.layers = layers

    def child(self, directory: Path) -> "_GitIgnore":
        spec = _load_gitignore(directory / ".gitignore")
        return _GitIgnore(self.layers + ((directory, spec),)) if spec is not None else self

    def ignored(self, path: Path, is_dir: bool) -> bool:
        verdict = None
        for base, spec in self.layers:
            try:
                relative = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if is_dir:
                relative += "/"
            for pattern in spec.patterns:
                if pattern.include is not None and pattern.match_file(relative) is not None:
                    verdict = pattern.include
        return bool(verdict)


def _load_gitignore(path: Path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    import pathspec

    try:  # pathspec >= 0.12 calls git's own semantics "gitignore"; older releases only know "gitwildmatch"
        return pathspec.PathSpec.from_lines("gitignore", lines)
    except (KeyError, LookupError):
        return pathspec.PathSpec.from_lines("gitwildmatch", lines)


def _git_root(directory: Path) -> Optional[Path]:
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _gitignore_above(directory: Path) -> _GitIgnore:
    """The ``.gitignore`` files of the enclosing repository, from its root down to ``directory``."""
    root = _git_root(directory)
    chain = [directory]
    if root is not None:
        chain = [p for p in reversed((directory, *directory.parents)) if p == root or root in p.parents]
    ignore = _GitIgnore()
    for each in chain:
        ignore = ignore.child(each)
    return ignore


def shown(name: str) -> str:
    """A path as mpslint prints it: bytes of the name that are not UTF-8 become ``\\xNN``.

    The OS hands such names over with lone surrogates, which no UTF-8 output can
    hold (``-o``, a pipe, JSON, XML): shown this way every format can, and the
    reader sees which bytes the name has (as ``ls -b`` does). mpslint reads and
    writes the file by its real name.
    """
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no byte of a name gave: say it as it is
        return name.encode("utf-8", "backslashreplace").decode("utf-8")


# What ``shown`` writes for a byte that is not UTF-8: always one of 0x80-0xff.
_SHOWN_BYTE = re.compile(r"\\x([89a-f][0-9a-f])")


def real_name(shown_name: str) -> str:
    """The name ``shown`` was given (as the OS hands it over), for what must point at the file: a SARIF URI."""
    return _SHOWN_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), shown_name)


def is_python(path: Path) -> bool:
    return path.suffix in PYTHON_SUFFIXES


def discover(
    paths: Sequence[str],
    resolver: ConfigResolver,
    *,
    force_exclude: bool = False,
) -> Discovery:
    found = Discovery()
    seen_files: Dict[Path, None] = {}
    visited_dirs: set = set()
    for raw in paths:
        path = Path(raw)
        absolute = Path(os.path.abspath(path))
        try:
            is_dir = path.is_dir()
            exists = is_dir or path.exists()
        except OSError as exc:
            found.errors.append((raw, exc.strerror or str(exc)))
            continue
        if not exists:
            found.errors.append((raw, "No such file or directory"))
            continue
        config = resolver.for_path(absolute)
        if not is_dir:
            if force_exclude and _forced_out(absolute, config, resolver):
                continue
            if absolute not in seen_files:
                seen_files[absolute] = None
                found.files.append((path, config))
            continue
        if force_exclude and _forced_out(absolute, config, resolver):
            continue
        ignore = _GitIgnore()
        if config.respect_gitignore:
            ignore = _gitignore_above(absolute.parent)
            if ignore.ignored(absolute, True):
                # Named on the command line, so checked (as Ruff does): the .gitignore files above it
                # that ignore it as a whole would otherwise drop everything in it.
                ignore = _GitIgnore()
        _walk(path, absolute, ignore, resolver, found, seen_files, visited_dirs)
    found.files.sort(key=lambda item: item[0].as_posix())
    found.errors.sort()
    return found


def _forced_out(absolute: Path, config: ProjectConfig, resolver: ConfigResolver) -> bool:
    """With ``--force-exclude``: an explicitly named path is dropped when it or a parent is excluded."""
    if config.is_excluded(absolute, check_parents=True):
        return True
    if config.respect_gitignore:
        parent = absolute.parent
        ignore = _gitignore_above(parent)
        if ignore.ignored(absolute, absolute.is_dir()):
            return True
    return False


def _walk(
    display: Path,
    absolute: Path,
    ignore: _GitIgnore,
    resolver: ConfigResolver,
    found: Discovery,
    seen_files: Dict[Path, None],
    visited_dirs: set,
) -> None:
    # Iterative, so a deep tree cannot hit the recursion limit.
    stack = [(display, absolute, ignore)]
    while stack:
        display, absolute, ignore = stack.pop()
        try:
            real = os.path.realpath(absolute)
        except OSError:
            real = str(absolute)
        if real in visited_dirs:
            continue  # a symlink loop, or a directory reached twice
        visited_dirs.add(real)
        config = resolver.for_directory(absolute)
        if config.respect_gitignore:
            ignore = ignore.child(absolute)
        try:
            with os.scandir(absolute) as entries:
                listing = sorted(entries, key=lambda e: e.name)
        except OSError as exc:
            found.errors.append((display.as_posix(), exc.strerror or str(exc)))
            continue
        subdirs = []
        for entry in listing:
            child_abs = absolute / entry.name
            try:
                is_dir = entry.is_dir()  # follows symlinks
            except OSError:
                is_dir = False
            if not is_dir and not config.is_included(child_abs):
                continue
            if config.is_excluded(child_abs):
                continue
            if config.respect_gitignore and ignore.ignored(child_abs, is_dir):
                continue
            child_display = display / entry.name
            if is_dir:
                subdirs.append((child_display, child_abs, ignore))
                continue
            try:
                is_file = entry.is_file()
            except OSError:
                is_file = False
            if not is_file:
                if entry.is_symlink():
                    found.errors.append((child_display.as_posix(), "broken symbolic link"))
                continue
            if child_abs not in seen_files:
                seen_files[child_abs] = None
                found.files.append((child_display, config))
        stack.extend(reversed(subdirs))
