"""A loaded machine's timing of child processes, played deterministically (Linux: reads /proc).

asyncio learns that a child exited from its child watcher, a thread blocked in
``waitpid``. On a busy machine that thread may run well after the child died;
whoever polls the child meanwhile (``Popen.poll``, which ``Popen.send_signal``
calls before signalling) reaps it instead, and the watcher then logs "Unknown
child process pid N, will report returncode 255". ``install()`` makes that
window wide and certain: the watcher's wait starts 0.3 s late, and a signalled
process is a zombie by the time ``send_signal`` returns.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Callable

WATCHER_DELAY = 0.3


def install() -> Callable[[], None]:
    """Patch this process; returns the function that undoes it."""
    waitpid = os.waitpid
    send_signal = subprocess.Popen.send_signal

    def late_watcher(pid, options):
        if options == 0:  # the watcher's blocking wait; Popen.poll's WNOHANG calls do not come through here
            time.sleep(WATCHER_DELAY)
        return waitpid(pid, options)

    def dies_at_once(self, sig):
        send_signal(self, sig)
        for _ in range(2000):
            try:
                with open(f"/proc/{self.pid}/stat") as handle:
                    if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                        return
            except OSError:  # already reaped
                return
            time.sleep(0.005)

    os.waitpid = late_watcher
    subprocess.Popen.send_signal = dies_at_once

    def undo() -> None:
        os.waitpid = waitpid
        subprocess.Popen.send_signal = send_signal

    return undo
