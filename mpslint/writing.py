"""Reading a file to check and writing a fixed one back: bytes in, bytes out, atomically.

Shared by the runner and the notebook fixer, which write files the same way.
"""

from __future__ import annotations

import os
from typing import List, Optional


def read_file(path: str) -> bytes:
    """A regular file's bytes; anything else (a FIFO, a device) is an error instead of a read that never ends."""
    import stat

    # O_NONBLOCK: opening a FIFO without a writer would otherwise block before we can look at what it is.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(fd).st_mode
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(0, "is a directory" if stat.S_ISDIR(mode) else "not a regular file")
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def write_atomic(path: str, data: bytes, *, expected: Optional[bytes] = None) -> None:
    """Replace the file's content in one step, keeping its permissions (and owner, when allowed).

    A symlink is followed: the file it points to is rewritten, the link stays. With ``expected``
    (the bytes the fix was computed from), a file that changed on disk meanwhile (an editor saved
    it) is left alone: writing would silently discard that edit.
    """
    import tempfile

    target = os.path.realpath(path)
    st = os.stat(target)
    directory = os.path.dirname(target) or "."
    fd, temp = tempfile.mkstemp(prefix=".mpslint-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, st.st_mode & 0o7777)
        if hasattr(os, "chown"):
            try:
                os.chown(temp, st.st_uid, st.st_gid)
            except OSError:
                pass  # not ours to give away; the content still gets written
        if expected is not None and read_file(target) != expected:
            raise OSError(0, "the file changed on disk while it was being fixed; it was left as it is")
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def unified_diff(before: str, after: str, display: str) -> str:
    import difflib

    def lines(text: str) -> List[str]:
        split = text.splitlines(keepends=True)
        if split and not split[-1].endswith(("\n", "\r")):
            split[-1] += "\n\\ No newline at end of file\n"
        return split

    return "".join(difflib.unified_diff(lines(before), lines(after), fromfile=display, tofile=display))
