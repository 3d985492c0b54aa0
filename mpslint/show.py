"""``--show-files`` and ``--show-settings``: what a run would check, and with which settings (Ruff's flags).

Both answer "why is (or isn't) this file checked the way I expect?" without
checking anything: the files come from the same discovery as a run, the
settings from the same resolver.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import List, Sequence

import click

from mpslint.config import ConfigResolver


def print_files(paths: Sequence[str], resolver: ConfigResolver, force_exclude: bool) -> int:
    """One checked file per line, sorted; paths that cannot be read go to stderr. Exit 0."""
    from mpslint.files import discover

    found = discover(paths, resolver, force_exclude=force_exclude)
    for path, _ in found.files:
        click.echo(path)
    for path, message in found.errors:
        click.echo(f"error: {path}: {message}", err=True)
    return 0


def print_settings(paths: Sequence[str], resolver: ConfigResolver, force_exclude: bool) -> int:
    """The resolved settings for the first file the paths give (Ruff: "Resolved settings for: ...")."""
    from mpslint.files import discover

    found = discover(paths, resolver, force_exclude=force_exclude)
    if found.files:
        path, config = Path(found.files[0][0]), found.files[0][1]
    else:
        path = Path(paths[0])  # a named file that is excluded, or stdin's --stdin-filename
        config = resolver.for_path(path)
    settings = config.settings_for(path)
    click.echo("\n".join(_describe(path, config, settings)))
    return 0


def _describe(path: Path, config, settings) -> List[str]:
    lines = [
        f"Resolved settings for: {path.as_posix()}",
        f"Settings path: {config.path if config.path is not None else '(none: the defaults)'}",
        f"Project root: {config.root}",
        "",
        "select = [",
        *(f'    "{code}",' for code in sorted(settings.select)),
        "]",
    ]
    for field in dataclasses.fields(settings):
        if field.name == "select":
            continue
        value = getattr(settings, field.name)
        if field.name == "torch_version":
            value = ".".join(map(str, value)) if value is not None else None
        lines.append(f"{field.name.replace('_', '-')} = {value!r}")
    lines += [
        f"respect-gitignore = {config.respect_gitignore!r}",
        f"include = {list(config.include) + list(config.extend_include)!r}",
        f"exclude = {list(config.exclude)!r}",
        f"extend-exclude = {list(config.extend_exclude)!r}",
        "per-file-ignores = {",
        *(f"    {p.pattern!r}{' (negated)' if p.negated else ''}: {sorted(p.codes)!r}," for p in config.per_file_ignores),
        "}",
    ]
    return lines
