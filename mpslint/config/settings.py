"""What one file is checked with (``Settings``) and what the command line overrides (``Overrides``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, FrozenSet, Iterable, Optional, Tuple


class ConfigError(Exception):
    """A bad configuration value or selector; the CLI exits 2 with this message."""


TorchVersion = Tuple[int, int]


def every_rule() -> FrozenSet[str]:
    """The default selection: every rule of the registry, looked up when a Settings is made.

    The registry is imported here, not at the top: the rules import this module,
    so a module-level import would make a cycle (and pin the rule set before
    tests swap in rule families of their own).
    """
    from mpslint import registry

    return frozenset(registry.rule_codes())


@dataclass(frozen=True)
class Settings:
    """The effective settings for a file. Hashable: it keys the cache."""

    select: FrozenSet[str] = field(default_factory=every_rule)
    torch_version: Optional[TorchVersion] = None
    # Where the floor came from, for messages ("torch>=2.4 in requirements.txt"); not a config key.
    torch_version_origin: str = field(default="", metadata={"config": False})
    device_helper: str = "inline"
    report_interval_guarded: bool = False
    # `--ignore-noqa`: report (and fix) what `# noqa` comments suppress. A command-line switch, as in Ruff.
    ignore_noqa: bool = field(default=False, metadata={"config": False})
    # `--fix` writes through a symbolic link to a file outside the paths checked (Ruff does not).
    follow_symlinks: bool = False

    def with_codes(self, codes: Iterable[str]) -> "Settings":
        return replace(self, select=frozenset(codes))


@dataclass(frozen=True)
class Overrides:
    """What the command line says; it beats every config file."""

    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()
    torch_version: Optional[TorchVersion] = None
    # `--config "key = value"`: config keys that beat every config file's (Ruff's inline --config).
    inline: Dict[str, Any] = field(default_factory=dict)
    # `--extend-per-file-ignores "glob:CODES"`: added to the config's per-file-ignores.
    extend_per_file_ignores: Dict[str, Tuple[str, ...]] = field(default_factory=dict)
    respect_gitignore: Optional[bool] = None
    ignore_noqa: bool = False
    # `--isolated`: no config file is read; every file gets the defaults.
    isolated: bool = False
