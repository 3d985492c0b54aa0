"""``mpslint server``: the click command (registered lazily by ``mpslint.cli``).

Importing this module imports neither pygls nor the server, so ``mpslint
--help`` can list the command in an installation without the ``server``
extra; running it there explains what to install.
"""

from __future__ import annotations

import sys
from typing import Optional

import click


@click.command(
    "server",
    help="Run the language server for editors (LSP over stdio): findings as you type, fixes as code actions, "
    "rule docs on hover. Needs `pip install \"mpslint[server]\"`.",
)
@click.option("--stdio", is_flag=True, help="Talk over stdin/stdout (the default and only transport).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Worker processes kept ready to check files (default: the CPUs, up to two, plus one).",
)
def server(stdio: bool, workers: Optional[int]) -> None:
    try:
        import pygls  # noqa: F401
    except ImportError as exc:
        click.echo(f"error: `mpslint server` needs pygls, which is not installed ({exc})", err=True)
        click.echo("hint: pip install \"mpslint[server]\"", err=True)
        sys.exit(2)
    from mpslint.server.pool import prestart

    # The first worker imports the engine while this process imports pygls and lsprotocol (the larger
    # part of the server's start-up): the first file opened then finds it ready.
    early = prestart()
    from mpslint.server.server import serve

    serve(workers=workers, early=early)
