"""One project's configuration: its root, its settings, and which of its files are excluded or ignore rules."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, FrozenSet, Optional, Tuple, Union

from mpslint.config.globs import PerFileIgnore, matcher
from mpslint.config.settings import Settings

# Directories no user wants linted (Ruff's defaults, plus our cache).
DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".mpslint_cache", ".svn",
    ".tox", ".venv", ".vscode", "__pypackages__", "__pycache__", "_build", "buck-out", "build", "dist",
    "node_modules", "site-packages", "venv",
)
# The files a directory walk checks (Ruff's default without `pyproject.toml`, which mpslint does not check).
DEFAULT_INCLUDE: Tuple[str, ...] = ("*.py", "*.pyi", "*.ipynb")


@dataclass
class ProjectConfig:
    """One config file (or the defaults) and everything derived from it.

    ``path`` is None for the defaults. ``warnings`` are messages for the user
    that do not stop the run (a ``torch-version`` newer than mpslint knows).
    """

    root: Path
    path: Optional[Path]
    settings: Settings
    per_file_ignores: Tuple[PerFileIgnore, ...] = ()
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: Tuple[str, ...] = ()
    respect_gitignore: bool = True
    warnings: Tuple[str, ...] = ()
    include: Tuple[str, ...] = DEFAULT_INCLUDE
    extend_include: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self._by_codes: Dict[FrozenSet[str], Settings] = {}
        self._root_prefix = os.path.join(os.path.abspath(self.root), "")
        self._exclude_matcher: Optional[Callable[[str], bool]] = None
        self._include_matcher: Optional[Callable[[str], bool]] = None
        self._include_by_name = False

    def relative(self, path: Path) -> str:
        """``path`` relative to the root, with ``/``; absolute when outside the root."""
        absolute = os.path.abspath(path)
        root = self._root_prefix
        if absolute.startswith(root):
            absolute = absolute[len(root):]
        return absolute.replace(os.sep, "/") if os.sep != "/" else absolute

    def settings_for(self, path: Path) -> Settings:
        """The settings for one file: per-file-ignores applied (Settings objects are shared)."""
        if not self.per_file_ignores:
            return self.settings
        relative = self.relative(path)
        ignored = set()
        for entry in self.per_file_ignores:
            if entry.applies(relative):
                ignored |= entry.codes
        if not ignored:
            return self.settings
        codes = frozenset(self.settings.select - ignored)
        cached = self._by_codes.get(codes)
        if cached is None:
            cached = self._by_codes[codes] = self.settings.with_codes(codes)
        return cached

    def is_included(self, path: Union[str, Path]) -> bool:
        """Whether a file met while walking a directory is checked (files named on the command line always are)."""
        if self._include_matcher is None:
            patterns = tuple(self.include) + tuple(self.extend_include)
            suffixes = [p[1:] for p in patterns if re.fullmatch(r"\*\.[\w.]+", p)]
            if len(suffixes) == len(patterns):  # `*.py`-style patterns only: the name says it, no path needed
                ends = tuple(suffixes)
                self._include_matcher = lambda name: name.endswith(ends)
                self._include_by_name = True
            else:
                self._include_matcher = matcher(patterns)
        if self._include_by_name:
            return self._include_matcher(os.path.basename(path))
        return self._include_matcher(self.relative(path))

    def exclude_patterns(self) -> Tuple[str, ...]:
        return tuple(self.exclude) + tuple(self.extend_exclude)

    def is_excluded(self, path: Union[str, Path], *, check_parents: bool = False) -> bool:
        """Whether ``path`` (or, with ``check_parents``, a directory above it up to the root) is excluded."""
        if self._exclude_matcher is None:
            self._exclude_matcher = matcher(self.exclude_patterns())
        excluded = self._exclude_matcher
        relative = self.relative(path)
        if not check_parents:
            return excluded(relative)
        parts = relative.split("/")
        return any(excluded("/".join(parts[: i + 1])) for i in range(len(parts)))
