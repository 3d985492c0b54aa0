"""When the script sets the variables PyTorch reads while ``import torch`` loads, relative to that import.

PyTorch reads ``PYTORCH_ENABLE_MPS_FALLBACK`` once, from C++, while the
library loads (``aten/src/ATen/mps/MPSFallback.mm``): a write after the import
changes ``os.environ`` but not what PyTorch decided. Watching the writes as
they run, rather than reading the script, sees every one that really ran: in
functions, in the user's own modules, with computed values, through
``os.putenv``.

Every way Python writes the environment ends in ``os.putenv`` or
``os.unsetenv``, looked up in the ``os`` module's namespace:
``os.environ[k] = v``, ``setdefault``, ``update``, ``|=``, ``del``, ``pop``
and ``clear`` all go through ``os._Environ.__setitem__``/``__delitem__``,
which call those two (Python >= 3.9). Replacing them there for the run costs
nothing on any other path, and a dictionary lookup per write.

Installed before the script starts, so it must not import torch (see ``child``).
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import Callable, Collection, Dict, List, Optional, Tuple

Frames = Tuple[Tuple[str, int], ...]  # (file, line), innermost first


@dataclass(frozen=True)
class Write:
    name: str
    value: Optional[str]  # None: removed
    after_import: bool  # torch had finished importing (and so had read the variable)
    frames: Frames


class EnvWatch:
    def __init__(self, names: Collection[str]) -> None:
        self.names = frozenset(names)
        self.writes: List[Write] = []
        self.torch_imported = False
        self._in_force: Dict[str, int] = {}  # name -> index in writes of the write that set its current value
        self._lock = threading.Lock()
        self._saved: Optional[Tuple[Callable, Callable]] = None

    def install(self) -> None:
        putenv, unsetenv = os.putenv, os.unsetenv
        self._saved = (putenv, unsetenv)

        def watched_putenv(key, value):
            putenv(key, value)  # first: a write the OS refuses is no write
            self._seen(key, value, sys._getframe(1))

        def watched_unsetenv(key):
            unsetenv(key)
            self._seen(key, None, sys._getframe(1))

        watched_putenv.__wrapped__ = putenv  # type: ignore[attr-defined]
        watched_unsetenv.__wrapped__ = unsetenv  # type: ignore[attr-defined]
        os.putenv, os.unsetenv = watched_putenv, watched_unsetenv

    def remove(self) -> None:
        if self._saved is not None:
            os.putenv, os.unsetenv = self._saved
            self._saved = None

    def _seen(self, key, value, frame) -> None:
        name = os.fsdecode(key) if isinstance(key, bytes) else key
        if name not in self.names:
            return
        if isinstance(value, bytes):
            value = os.fsdecode(value)
        frames = []
        while frame is not None:
            frames.append((frame.f_code.co_filename, frame.f_lineno))
            frame = frame.f_back
        write = Write(name, value, self.torch_imported, tuple(frames))
        with self._lock:
            last = self._in_force.get(name)
            if last is not None and self.writes[last] == write:
                return  # the same line writing the same value again (a helper called every step): nothing changed
            self._in_force[name] = len(self.writes)
            self.writes.append(write)

    def in_force(self, name: str) -> Optional[int]:
        """Which write (an index in ``writes``) set the variable's current value; None: it is the process's own."""
        return self._in_force.get(name)

    def last_before_import(self, name: str) -> Optional[Write]:
        """The write whose value torch saw when it loaded, or None if the script wrote none before."""
        before = [w for w in self.writes if w.name == name and not w.after_import]
        return before[-1] if before else None


def innermost(frames: Frames, is_user_file: Callable[[str], bool]) -> Tuple[Optional[str], Optional[int]]:
    """(absolute file, line) of the innermost frame in the user's own files, as the probe attributes events."""
    for filename, row in frames:
        if is_user_file(filename):
            return os.path.abspath(filename), row
    return None, None
