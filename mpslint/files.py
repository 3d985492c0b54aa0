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
from typing import Dict, List, Optional, Sequence, Tuple, Union

from mpslint.config import ConfigResolver, ProjectConfig

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Discovery:
    files: List[Tuple[str, ProjectConfig]] = field(default_factory=list)  # paths with "/", as shown
    errors: List[Tuple[str, str]] = field(default_factory=list)  # (path, message)


class _GitIgnore:
    """The ``.gitignore`` files that apply inside one directory, outermost first.

    Within one file the last matching pattern wins; a deeper file overrides a
    shallower one, as in git.
    """

    def __init__(self, layers: Tuple[Tuple[str, object], ...] = ()) -> None:
        self.layers = layers

    def child(self, directory: Union[str, Path]) -> "_GitIgnore":
        spec = _load_gitignore(os.path.join(directory, ".gitignore"))
        if spec is None:
            return self
        return _GitIgnore(self.layers + ((os.path.join(os.path.abspath(directory), ""), spec),))

    def ignored(self, path: Union[str, Path], is_dir: bool) -> bool:
        """Whether the file or directory at ``path`` (absolute, normalized) is ignored."""
        verdict = None
        path = str(path)
        for base, spec in self.layers:  # base: an absolute directory ending in a separator
            if not path.startswith(base):
                continue
            relative = path[len(base):]
            if os.sep != "/":
                relative = relative.replace(os.sep, "/")
            if is_dir:
                relative += "/"
            for pattern in spec.patterns:
                if pattern.include is not None and pattern.match_file(relative) is not None:
                    verdict = pattern.include
        return bool(verdict)


def _load_gitignore(path: str):
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
    seen_files: Dict[str, None] = {}  # absolute paths
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
            if str(absolute) not in seen_files:
                seen_files[str(absolute)] = None
                found.files.append((path.as_posix(), config))
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
    found.files.sort(key=lambda item: item[0])
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
    seen_files: Dict[str, None],
    visited_dirs: set,
) -> None:
    # Iterative, so a deep tree cannot hit the recursion limit. Paths are strings (a large tree has tens
    # of thousands of entries, and a Path costs more to make than the test it takes part in).
    stack = [(display.as_posix(), str(absolute), ignore)]
    while stack:
        shown_dir, directory, ignore = stack.pop()
        identity = _identity(directory)
        if identity in visited_dirs:
            continue  # a symlink loop, or a directory reached twice
        visited_dirs.add(identity)
        try:
            with os.scandir(directory) as entries:
                listing = sorted(entries, key=lambda e: e.name)
        except OSError as exc:
            found.errors.append((shown_dir, exc.strerror or str(exc)))
            continue
        kinds = [(entry, _is_dir(entry)) for entry in listing]
        files = frozenset(e.name for e, is_dir in kinds if not is_dir and _is_file(e))
        resolver.listed(directory, files, frozenset(e.name for e in listing))
        config = resolver.for_directory(Path(directory))
        if config.respect_gitignore and ".gitignore" in files:
            ignore = ignore.child(directory)
        subdirs = []
        for entry, is_dir in kinds:
            child_abs = os.path.join(directory, entry.name)
            if not is_dir and not config.is_included(child_abs):
                continue
            if config.is_excluded(child_abs):
                continue
            if config.respect_gitignore and ignore.ignored(child_abs, is_dir):
                continue
            child_shown = _child(shown_dir, entry.name)
            if is_dir:
                subdirs.append((child_shown, child_abs, ignore))
                continue
            if not _is_file(entry):
                if entry.is_symlink():
                    found.errors.append((child_shown, "broken symbolic link"))
                continue
            if child_abs not in seen_files:
                seen_files[child_abs] = None
                found.files.append((child_shown, config))
        stack.extend(reversed(subdirs))


def _identity(directory: str) -> object:
    """What makes two paths the same directory (a symlink to it, a loop): one ``stat``, not a
    ``realpath`` that looks up every component."""
    try:
        st = os.stat(directory)
    except OSError:
        return directory
    if not st.st_ino:  # a file system with no inode numbers
        return os.path.realpath(directory)
    return st.st_dev, st.st_ino


def _child(shown_dir: str, name: str) -> str:
    """``(Path(shown_dir) / name).as_posix()``, without making a Path."""
    if shown_dir == ".":
        return name
    return f"{shown_dir}{name}" if shown_dir.endswith("/") else f"{shown_dir}/{name}"


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows symlinks
    except OSError:
        return False


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False
