"""The rule and file selection options `mpslint check` and `mpslint report` share.

One definition, so that a report checks exactly what the check it suggests
would check, and the two commands' help cannot drift apart.
"""

from __future__ import annotations

from typing import Callable, Sequence, Tuple

import click


def split_commas(values: Sequence[str]) -> Tuple[str, ...]:
    """``--select A,B --select C`` -> (A, B, C)."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


_SELECTION = (
    click.option("--select", multiple=True, metavar="CODES",
                 help="Rules to check (codes, prefixes like MPS1, names; comma-separated)."),
    click.option("--extend-select", multiple=True, metavar="CODES", help="Rules to add to the selection."),
    click.option("--ignore", multiple=True, metavar="CODES", help="Rules to leave out."),
    click.option("--exclude", multiple=True, metavar="PATTERNS",
                 help="Replace the excluded paths (globs; comma-separated)."),
    click.option("--extend-exclude", multiple=True, metavar="PATTERNS", help="Exclude these paths too."),
    click.option("--force-exclude", is_flag=True,
                 help="Apply excludes to files named on the command line too (pre-commit)."),
)


def selection_options(command: Callable) -> Callable:
    """Add --select, --extend-select, --ignore, --exclude, --extend-exclude and --force-exclude."""
    for option in reversed(_SELECTION):
        command = option(command)
    return command


def selection_overrides(select, extend_select, ignore, exclude, extend_exclude, torch_version=None):
    """The configuration's ``Overrides`` from these options (no --select or --exclude: the config's own)."""
    from mpslint.config import Overrides

    return Overrides(
        select=split_commas(select) if select else None,
        ignore=split_commas(ignore),
        extend_select=split_commas(extend_select),
        exclude=split_commas(exclude) if exclude else None,
        extend_exclude=split_commas(extend_exclude),
        torch_version=torch_version,
    )



_CONFIGURATION = (
    click.option("--config", "config_options", multiple=True, metavar="FILE | 'KEY = VALUE'",
                 help="A config file for every file, or a TOML `key = value` that beats every config file's "
                      "(repeatable; Ruff's --config)."),
    click.option("--isolated", is_flag=True, help="Read no config file: every file is checked with the defaults."),
    click.option("--per-file-ignores", multiple=True, metavar="GLOB:CODES",
                 help="Replace the config's per-file-ignores (repeatable; `tests/*:MPS2,MPS3`)."),
    click.option("--extend-per-file-ignores", multiple=True, metavar="GLOB:CODES",
                 help="Add to the config's per-file-ignores (repeatable)."),
    click.option("--respect-gitignore/--no-respect-gitignore", default=None,
                 help="Skip (or not) what .gitignore files ignore; default: the config's respect-gitignore (true)."),
)


def configuration_options(command: Callable) -> Callable:
    """Add --config, --isolated, --per-file-ignores, --extend-per-file-ignores and --respect-gitignore."""
    for option in reversed(_CONFIGURATION):
        command = option(command)
    return command


def resolver_for(overrides, config_options, isolated=False, per_file_ignores=(), extend_per_file_ignores=(),
                 respect_gitignore=None, ignore_noqa=False):
    """The ``ConfigResolver`` for these options, on top of the selection ``overrides``.

    ``--config`` takes a file or an inline ``key = value`` as Ruff's does: a value
    that names an existing file is a file; one with ``=`` is TOML. At most one file.
    """
    from dataclasses import replace
    from pathlib import Path

    from mpslint.config import ConfigError, ConfigResolver

    path = None
    inline = {}
    for value in config_options:
        if Path(value).is_file() or "=" not in value:
            if path is not None:
                raise ConfigError(f"--config: one config file at most ({path} and {value})")
            if not Path(value).is_file():
                raise ConfigError(f"--config: {value!r} is neither a file nor a TOML `key = value`")
            path = Path(value)
            continue
        inline.update(_inline_toml(value))
    if isolated and path is not None:
        raise ConfigError("--isolated reads no config file: it cannot be combined with --config FILE")
    if per_file_ignores:
        inline["per-file-ignores"] = _per_file(per_file_ignores, "--per-file-ignores")
    overrides = replace(
        overrides,
        inline=inline,
        extend_per_file_ignores={
            pattern: tuple(codes) for pattern, codes in _per_file(extend_per_file_ignores, "--extend-per-file-ignores").items()
        },
        respect_gitignore=respect_gitignore,
        ignore_noqa=ignore_noqa,
        isolated=isolated,
    )
    return ConfigResolver(overrides, path)


def _inline_toml(value: str):
    from mpslint.config import ConfigError
    from mpslint.config.toml_file import parse_toml_text

    try:
        return parse_toml_text(value)
    except ValueError as exc:
        raise ConfigError(f"--config: {value!r} is neither a file nor a valid TOML `key = value`: {exc}") from None


def _per_file(values: Sequence[str], option: str):
    from mpslint.config import ConfigError

    table = {}
    for value in values:
        pattern, colon, codes = value.rpartition(":")
        if not colon or not pattern or not codes.strip():
            raise ConfigError(f"{option}: expected GLOB:CODES (such as `tests/*:MPS2`), got {value!r}")
        table.setdefault(pattern, []).extend(split_commas([codes]))
    return table
