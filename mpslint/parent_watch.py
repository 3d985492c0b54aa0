"""Worker processes end when the process that started them is gone, however it went.

A parent killed with SIGKILL runs no handler and closes no pool: its workers
would live on (a ``--fix`` pool, the language server's checkers), holding the
stdout they inherited, so whoever reads mpslint's output (pre-commit, a CI
log, ``subprocess.communicate``) never sees it end. A signal handler cannot
help; a thread in each worker that waits for the parent to disappear can:

- a ``multiprocessing`` worker waits on its parent's sentinel, a pipe that
  multiprocessing keeps open in the parent and that reads as closed once the
  parent is gone;
- any other worker watches its parent's process id, which changes when the
  parent dies and the worker is re-parented (to init or a subreaper).
"""

from __future__ import annotations

import os
import threading
import time

# How often a worker without a sentinel looks at its parent's id: a dead parent's workers linger this long.
POLL_SECONDS = 0.5
# The exit status of a worker that outlived its parent (as if SIGKILLed with it).
ORPHANED = 128 + 9


def die_with_parent() -> None:
    """Start the watch in this process (a daemon thread; returns at once)."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    if sentinel is not None:
        target, args = _wait_for_sentinel, (sentinel,)
    elif hasattr(os, "getppid") and os.name == "posix":
        target, args = _poll_parent_id, (os.getppid(),)
    else:
        return  # Windows without a multiprocessing parent: nothing portable to watch
    threading.Thread(target=target, args=args, name="mpslint-parent-watch", daemon=True).start()


def _wait_for_sentinel(sentinel: int) -> None:
    from multiprocessing.connection import wait

    wait([sentinel])  # returns only when the parent's end of the pipe is closed: the parent is gone
    os._exit(ORPHANED)


def _poll_parent_id(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_SECONDS)
    os._exit(ORPHANED)
