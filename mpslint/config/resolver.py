"""Which configuration governs a file: ``--config`` for all, else the nearest config file, else defaults.

As in Ruff, the nearest ``mpslint.toml``, or ``pyproject.toml`` with a
``[tool.mpslint]`` table, among a file's directory and its parents applies,
and config files are never merged
(https://docs.astral.sh/ruff/configuration/#config-file-discovery).

A file with no config file above it is checked with the defaults. Ruff would
use the current directory's config there; mpslint's defaults never depend on
the current directory's project, so a file checks the same from anywhere: the
torch floor is inferred from the file's own project, the nearest directory
above it that holds a ``pyproject.toml``, a ``requirements*.txt`` or a
``.git``. A file in no project at all infers no floor; its relative globs
(from ``--exclude``) resolve from the current directory, as Ruff resolves
them for its default configuration.

Everything is resolved once per directory, not per file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Tuple, TypeVar

from mpslint.config.extend import extended_table
from mpslint.config.project import ProjectConfig
from mpslint.config.settings import Overrides
from mpslint.config.table import build_config, load_config_file
from mpslint.config.toml_file import CONFIG_FILES, mpslint_table, read_toml
from mpslint.config.torch_floor import is_requirements_file, requirement_files

T = TypeVar("T")


class ConfigResolver:
    """Finds the config for each file and keeps the warnings the configs it loaded raised."""

    def __init__(self, overrides: Overrides = Overrides(), config_path: Optional[Path] = None, cwd: Optional[Path] = None):
        self.overrides = overrides
        self.cwd = Path(os.path.abspath(cwd or os.getcwd()))
        self.warnings: List[str] = []
        self._config_of: Dict[Path, Optional[ProjectConfig]] = {}
        self._project_of: Dict[Path, Optional[Path]] = {}
        self._defaults: Dict[Optional[Path], ProjectConfig] = {}
        # directory -> (names of its regular files, all its names), as a walk listed them
        self._listings: Dict[str, Tuple[FrozenSet[str], FrozenSet[str]]] = {}
        self.fixed: Optional[ProjectConfig] = load_config_file(config_path, overrides) if config_path else None
        if self.fixed is not None:
            self._note(self.fixed)

    def for_path(self, path: Path) -> ProjectConfig:
        """The config governing ``path`` (a file or a directory)."""
        if self.fixed is not None:
            return self.fixed
        path = Path(os.path.abspath(path))
        directory = path if path.is_dir() else path.parent
        return self.for_directory(directory)

    def for_directory(self, directory: Path) -> ProjectConfig:
        if self.fixed is not None:
            return self.fixed
        directory = Path(os.path.abspath(directory))
        config = _nearest(directory, self._config_of, self._config_in)
        if config is not None:
            return config
        return self.defaults_for(_nearest(directory, self._project_of, self._project_root))

    def listed(self, directory: str, files: FrozenSet[str], names: FrozenSet[str]) -> None:
        """What a walk found in ``directory`` (absolute): the names of its regular files and all its names.

        Looking for config files and project markers then costs no ``stat`` per candidate name: a walk of a
        large tree asks about every directory in it.
        """
        self._listings[directory] = (files, names)

    def defaults_for(self, project: Optional[Path]) -> ProjectConfig:
        """The defaults for files of the project rooted at ``project`` (None: files in no project)."""
        config = self._defaults.get(project)
        if config is None:
            if project is None:
                config = build_config({}, root=self.cwd, path=None, overrides=self.overrides, infer_torch=False)
            else:
                config = build_config({}, root=project, path=None, overrides=self.overrides)
            self._defaults[project] = config
            self._note(config)
        return config

    def _config_in(self, directory: Path) -> Optional[ProjectConfig]:
        if self.overrides.isolated:
            return None
        listing = self._listings.get(str(directory))
        for name in CONFIG_FILES:
            candidate = directory / name
            if not (name in listing[0] if listing is not None else _is(candidate, Path.is_file)):
                continue
            table = mpslint_table(candidate, read_toml(candidate))
            if table is None:
                continue  # a pyproject.toml without [tool.mpslint]: keep looking upwards
            table = extended_table(candidate, table)
            config = build_config(table, root=directory, path=candidate, overrides=self.overrides)
            self._note(config)
            return config
        return None

    def _note(self, config: ProjectConfig) -> None:
        for warning in config.warnings:
            if warning not in self.warnings:
                self.warnings.append(warning)

    def cache_root(self) -> Path:
        """Where ``.mpslint_cache`` lives: the project root of the current directory."""
        config = self.fixed or self.for_directory(self.cwd)
        return config.root if config.path is not None else self.cwd

    def _project_root(self, directory: Path) -> Optional[Path]:
        """``directory`` if it is a project's root: it declares dependencies or is a repository's top."""
        listing = self._listings.get(str(directory))
        if listing is not None:
            files, names = listing
            marked = "pyproject.toml" in files or ".git" in names or any(map(is_requirements_file, files))
        else:
            marked = (_is(directory / "pyproject.toml", Path.is_file) or _is(directory / ".git", Path.exists)
                      or bool(requirement_files(directory)))
        return directory if marked else None


def _is(path: Path, test: Callable[[Path], bool]) -> bool:
    """``test(path)``, False where the answer cannot be known.

    A directory the user cannot enter holds no config anyone can read; walking
    it reports MPS001, and the rest of the run goes on.
    """
    try:
        return test(path)
    except OSError:
        return False


def _nearest(directory: Path, memo: Dict[Path, Optional[T]], own: Callable[[Path], Optional[T]]) -> Optional[T]:
    """The first ``own(d)`` that is not None for ``directory`` and its parents, remembered for every directory passed."""
    visited = []
    current: Optional[Path] = directory
    found: Optional[T] = None
    while current is not None:
        if current in memo:
            found = memo[current]
            break
        visited.append(current)
        found = own(current)
        if found is not None:
            break
        parent = current.parent
        current = parent if parent != current else None
    for seen in visited:
        memo[seen] = found
    return found
