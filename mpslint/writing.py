"""Reading a file to check and writing a fixed one back: bytes in, bytes out, atomically.

Shared by the runner and the notebook fixer, which write files the same way.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, List, Optional, Sequence

from mpslint.diagnostic import Diagnostic, io_error
from mpslint.results import FileResult, Mode

if TYPE_CHECKING:
    from mpslint.config import Settings


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


def write_fixed(
    target: str, data: bytes, expected: bytes, result: FileResult, found: List[Diagnostic], settings: "Settings", mode: Mode
) -> FileResult:
    """Write a fixed file, or return what is true instead: nothing was fixed, and ``found`` remains.

    A file that is read-only, or a link to a file outside the paths checked, is not
    written: an MPS001 finding says why (a read-only file is one its owner meant to keep
    as it is; renaming over it would still work, since only the directory needs to be
    writable). A write that fails is an error, and the findings still count as remaining.
    """
    refusal = _why_not_written(target, settings, mode)
    if refusal is not None:
        return FileResult(result.display, [*found, io_error(result.display, refusal)])
    try:
        write_atomic(target, data, expected=expected)
    except OSError as exc:
        return FileResult(result.display, found, error=f"cannot write the fixed file: {exc.strerror or exc}")
    return result


def _why_not_written(target: str, settings: "Settings", mode: Mode) -> Optional[str]:
    try:
        real = os.path.realpath(target)
        st = os.stat(real)
    except OSError:
        return None  # write_atomic reports it
    if mode.roots is not None and not settings.follow_symlinks and not _under(real, mode.roots):
        return (f"not fixed: a symbolic link leads to {real}, outside the paths checked "
                "(--follow-symlinks, or follow-symlinks = true, writes there)")
    if not st.st_mode & 0o222 or not os.access(real, os.W_OK):
        return "not fixed: the file is read-only (make it writable to apply the fixes)"
    return None


def _under(path: str, roots: Sequence[str]) -> bool:
    for root in roots:
        if path == root or path.startswith(os.path.join(root, "")):
            return True
    return False


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
