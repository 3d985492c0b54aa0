"""The CLI in this process with stdout and stderr apart, on every click the project supports.

click 8.2 always keeps them apart and dropped ``mix_stderr``; click 8.1 (the
newest on Python 3.9) mixes them unless told not to. The report tests read both.
"""

from __future__ import annotations

from click.testing import CliRunner

from mpslint.cli import main


def _runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        return CliRunner()


def run(*args, input=None, env=None):
    """An exception propagates: a traceback is a failure, not output."""
    return _runner().invoke(main, list(args), input=input, env=env, catch_exceptions=False)
