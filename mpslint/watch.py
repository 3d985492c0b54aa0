"""``--watch``: check, then check again whenever a file that could change the result changes (Ruff's ``-w``).

Polling, not file-system events: a stat of each Python file, notebook and
config file twice a second is cheap next to a check, works the same on
macOS, Linux and network drives, and needs no dependency. The folders no run
checks (``.git``, the cache, virtual environments: the default excludes) are
not walked, so mpslint's own cache writes do not wake it.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Dict, Sequence, Tuple

import click

from mpslint.config import CONFIG_FILES, DEFAULT_EXCLUDE

INTERVAL = 0.5  # seconds between looks
_WATCHED_SUFFIXES = (".py", ".pyi", ".ipynb", ".txt", ".cfg", ".toml")
_WATCHED_NAMES = frozenset(CONFIG_FILES) | {".gitignore"}
_SKIPPED_DIRS = frozenset(DEFAULT_EXCLUDE)

Snapshot = Dict[str, Tuple[int, int]]


def watch_and_check(paths: Sequence[str], check_once: Callable[[], int], flags) -> int:
    """Run ``check_once`` now and after every change; Ctrl-C stops and exits with the last run's code."""
    if "-" in paths:
        click.echo("error: --watch checks files; it cannot read stdin", err=True)
        return 2
    roots = list(paths) or ["."]
    click.echo("Starting mpslint in watch mode...", err=True)
    code = check_once()
    seen = snapshot(roots)
    try:
        while True:
            time.sleep(INTERVAL)
            now = snapshot(roots)
            if now != seen:
                seen = now
                click.echo("File change detected: checking again...", err=True)
                code = check_once()
    except KeyboardInterrupt:
        return code


def snapshot(roots: Sequence[str]) -> Snapshot:
    """(modification time, size) of every file under ``roots`` whose change could change a check."""
    found: Snapshot = {}
    for root in roots:
        if os.path.isfile(root):
            _stat_into(found, root)
            continue
        for directory, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if d not in _SKIPPED_DIRS]
            for name in files:
                if name.endswith(_WATCHED_SUFFIXES) or name in _WATCHED_NAMES:
                    _stat_into(found, os.path.join(directory, name))
    return found


def _stat_into(found: Snapshot, path: str) -> None:
    try:
        st = os.stat(path)
    except OSError:
        return  # gone between the listing and the stat: the next look sees it missing
    found[path] = (st.st_mtime_ns, st.st_size)
