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

