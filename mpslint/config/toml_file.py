"""Reading config files: ``mpslint.toml`` (keys at the top level) and ``pyproject.toml`` (``[tool.mpslint]``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, Optional

from mpslint.config.settings import ConfigError

CONFIG_FILES = ("mpslint.toml", "pyproject.toml")  # in this order: mpslint.toml wins in one directory


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    return tomllib


def read_toml(path: Path) -> Dict[str, Any]:
    tomllib = _toml()
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def parse_toml_text(text: str) -> Dict[str, Any]:
    """A TOML document from a string (``--config "key = value"``); ValueError when it is not TOML."""
    tomllib = _toml()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(str(exc)) from None


def mpslint_table(path: Path, data: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The mpslint settings in a config file, or None when a pyproject.toml has none."""
    section = data.get("tool", {}).get("mpslint") if isinstance(data.get("tool"), dict) else None
    if path.name == "pyproject.toml":
        return section
    # mpslint.toml: keys at the top level (like ruff.toml); a [tool.mpslint] table is accepted too.
    return section if section is not None else {k: v for k, v in data.items() if k != "tool"}
