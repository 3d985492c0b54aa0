"""``extend = "../pyproject.toml"``: a config file that starts from another one (Ruff's ``extend``).

The extending file's keys win, key by key; its ``extend-*`` lists add to the
base's, as extending a list should. The base may extend another file in turn;
a loop is an error that names the files. Paths in ``extend`` are relative to
the file that names them. Globs (``exclude``, ``per-file-ignores``) keep
resolving from the folder of the file that applies to the checked code, so a
shared base's patterns mean the same in every project that extends it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List

from mpslint.config.settings import ConfigError
from mpslint.config.toml_file import mpslint_table, read_toml

_ADDITIVE = ("extend-select", "extend-exclude", "extend-include")


def extended_table(path: Path, table: Dict[str, Any]) -> Dict[str, Any]:
    """``table`` (read from ``path``) with the files it extends merged under it."""
    return _extended(Path(os.path.abspath(path)), table, [])


def _extended(path: Path, table: Dict[str, Any], chain: List[Path]) -> Dict[str, Any]:
    if "extend" not in table:
        return table
    target = table["extend"]
    if not isinstance(target, str):
        raise ConfigError(f"{path}: `extend` must be the path of another config file, got {target!r}")
    base_path = Path(os.path.abspath(path.parent / os.path.expanduser(target)))
    if base_path in chain or base_path == path:
        loop = " -> ".join(str(p) for p in [*chain, path, base_path])
        raise ConfigError(f"{path}: `extend` makes a loop: {loop}")
    if not base_path.is_file():
        raise ConfigError(f"{path}: `extend` names {target!r}, which is not a file")
    base = mpslint_table(base_path, read_toml(base_path))
    if base is None:
        raise ConfigError(f"{path}: `extend` names {base_path}, which has no [tool.mpslint] table")
    base = _extended(base_path, base, [*chain, path])
    merged = {key: value for key, value in base.items()}
    for key, value in table.items():
        if key == "extend":
            continue
        if key in _ADDITIVE and isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *value]
        else:
            merged[key] = value
    return merged
