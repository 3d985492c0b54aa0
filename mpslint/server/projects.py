"""Which settings check a document: the command line's config resolution, per workspace folder.

A document inside a workspace folder is resolved as ``mpslint`` run from
that folder would resolve it: the nearest ``mpslint.toml`` or
``pyproject.toml`` with ``[tool.mpslint]`` above the file, its
``per-file-ignores``, and the torch floor it sets or its project's
requirements imply; the editor's settings act as command-line flags. A
document outside every folder is resolved from its own directory. An
unsaved buffer with no path gets the first folder's settings.

Documents excluded by ``exclude``/``extend-exclude`` are not checked, as
``--force-exclude`` does for the files pre-commit passes (``.gitignore`` is
not consulted: a file open in the editor is one the user works on).

Config files change while the server runs. Clients that watch files tell
the server (``workspace/didChangeWatchedFiles``); for the others the server
remembers, per document directory, the config files a document there could
depend on (``mpslint.toml``, ``pyproject.toml`` and ``requirements*.txt`` in
its directory and every one above) by size and modification time, and looks
again before each check and every few seconds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from mpslint.config import CONFIG_FILES, ConfigError, ConfigResolver, Settings

from mpslint.server.settings import ClientSettings

Stamp = Tuple[Tuple[str, int, int], ...]


def is_config_file(name: str) -> bool:
    """A file whose change can change some document's settings."""
    return name in CONFIG_FILES or (name.startswith("requirements") and name.endswith(".txt"))


@dataclass(frozen=True)
class Resolution:
    settings: Optional[Settings]  # None: the document is excluded
    error: Optional[str] = None  # a config problem; the settings are then the defaults


class Projects:
    def __init__(self) -> None:
        self.given: List[Path] = []  # as the client listed them
        self.folders: List[Path] = []  # deepest first
        self.client = ClientSettings()
        self._resolvers: Dict[Path, ConfigResolver] = {}
        self._stamps: Dict[Path, Stamp] = {}

    def set_folders(self, folders: List[Path]) -> None:
        self.given = [Path(os.path.abspath(f)) for f in folders]
        # Deepest first: a nested folder wins over the one containing it.
        self.folders = sorted({Path(os.path.abspath(f)) for f in folders}, key=lambda p: len(p.parts), reverse=True)
        self.reset()

    def set_client(self, client: ClientSettings) -> None:
        self.client = client
        self.reset()

    def reset(self) -> None:
        """Forget every resolved config (files or settings changed)."""
        self._resolvers.clear()
        self._stamps.clear()

    def folder_of(self, path: Optional[Path]) -> Optional[Path]:
        if path is not None:
            for folder in self.folders:
                if path == folder or folder in path.parents:
                    return folder
        return None

    def resolve(self, path: Optional[Path]) -> Resolution:
        """The settings for a document at ``path`` (None: a buffer never saved)."""
        folder = self.folder_of(path)
        if folder is None:
            folder = path.parent if path is not None else (self.given[0] if self.given else Path(os.getcwd()))
        try:
            resolver = self._resolver(folder)
            if path is None:
                config = resolver.for_directory(folder)
                return Resolution(config.settings)
            config = resolver.for_path(path)
            if config.is_excluded(path, check_parents=True):
                return Resolution(None)
            return Resolution(config.settings_for(path))
        except ConfigError as exc:
            return Resolution(Settings(), f"{exc}; checking with the default settings until it is fixed")

    def _resolver(self, folder: Path) -> ConfigResolver:
        resolver = self._resolvers.get(folder)
        if resolver is None:
            config_path = None
            if self.client.configuration:
                config_path = Path(os.path.expanduser(self.client.configuration))
                if not config_path.is_absolute():
                    config_path = folder / config_path
            resolver = ConfigResolver(self.client.overrides(), config_path, cwd=folder)
            self._resolvers[folder] = resolver
        return resolver

    def changed_since_last_look(self, path: Optional[Path]) -> bool:
        """Whether a config file ``path`` may depend on changed since this was last asked (first time: no)."""
        if path is None:
            return False
        directory = path.parent
        stamp = self._stamp(directory)
        previous = self._stamps.get(directory)
        self._stamps[directory] = stamp
        return previous is not None and previous != stamp

    def _stamp(self, directory: Path) -> Stamp:
        entries = []
        current: Optional[Path] = directory
        while current is not None:
            try:
                with os.scandir(current) as listing:
                    for entry in listing:
                        if is_config_file(entry.name):
                            try:
                                info = entry.stat()
                            except OSError:
                                continue
                            entries.append((entry.path, info.st_mtime_ns, info.st_size))
            except OSError:
                pass
            parent = current.parent
            current = parent if parent != current else None
        if self.client.configuration:
            for folder in self.folders or [directory]:
                candidate = Path(os.path.expanduser(self.client.configuration))
                candidate = candidate if candidate.is_absolute() else folder / candidate
                try:
                    info = candidate.stat()
                    entries.append((str(candidate), info.st_mtime_ns, info.st_size))
                except OSError:
                    entries.append((str(candidate), -1, -1))
        return tuple(sorted(entries))
