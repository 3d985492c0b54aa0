"""Worker processes started by the script's unguarded top level, caught before they start (MPS403 at run time).

A ``spawn`` (or ``forkserver``) worker begins by importing the main script
again. Started from code that runs on import, with no
``if __name__ == "__main__":`` guard around it, each worker would start
workers again: Python stops that in the worker with a RuntimeError, and a
``Pool`` then replaces the dead worker, again and again, so the script never
ends (the usual hang on macOS, where spawn is the default). The verifier
raises in the script instead, at the line that starts the worker, so the
report says what is wrong at once rather than after the timeout.
"""

from __future__ import annotations

import ast
import sys
from typing import Callable, List, Optional, Tuple

from mpslint.analysis.syntax import is_main_guard

MESSAGE = (
    "MPS403: this starts a {kind} worker process while the script's top level runs with no "
    "`if __name__ == \"__main__\":` guard. The worker imports the script again and would start workers "
    "of its own: Python stops it with a RuntimeError and a Pool starts another, for ever (on macOS, where "
    "spawn is the default, too). Put the entry point under the guard."
)


class UnguardedWorkers(RuntimeError):
    """Raised in the script where an unguarded top level starts a spawn or forkserver worker."""


def guarded_lines(source: str) -> List[Tuple[int, int]]:
    """The line ranges of the script's top-level ``if __name__ == "__main__":`` blocks."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [(stmt.lineno, stmt.end_lineno or stmt.lineno) for stmt in tree.body if is_main_guard(stmt)]


def top_level_row(script: str) -> Optional[int]:
    """Where the script's own top level (run as ``__main__``) is now, or None when it is not running."""
    frame = sys._getframe(1)
    row = None
    while frame is not None:
        code = frame.f_code
        if code.co_filename == script and code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
            row = frame.f_lineno  # the outermost such frame: the script itself, not a module it imports
        frame = frame.f_back  # type: ignore[assignment]
    return row


def install(script: str, source: str) -> Callable[[], None]:
    """Watch worker starts of the spawn and forkserver kinds; returns the function that undoes it."""
    from multiprocessing import context

    guards = guarded_lines(source)
    patched = []
    for kind, name in (("spawn", "SpawnProcess"), ("forkserver", "ForkServerProcess")):
        cls = getattr(context, name, None)
        if cls is None:  # forkserver does not exist on Windows
            continue
        original = cls.__dict__["_Popen"]

        def _popen(process_obj, _start=original.__func__, _kind=kind):
            row = top_level_row(script)
            if row is not None and not any(start <= row <= end for start, end in guards):
                raise UnguardedWorkers(MESSAGE.format(kind=_kind))
            return _start(process_obj)

        cls._Popen = staticmethod(_popen)
        patched.append((cls, original))

    def undo() -> None:
        for cls, original in patched:
            cls._Popen = original

    return undo
