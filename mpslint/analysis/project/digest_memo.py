"""What a dependency's digest was, vouched for by the ``stat`` of the files it was computed from.

A cached result names the module files its check read, with the digest of
each one's summary, and the questions it asked about callers (``callers.py``:
which modules of a directory name a module, a caller's bytes). A warm run
compares them all; computing a digest reads the files. This memo lets a warm
run skip the reading: it keeps, per dependency key, the digest with a
fingerprint of the files it came from (their ``stat``: mtime, ctime, size,
inode, device; for a directory question, every module's name and ``stat``),
and serves the digest while the fingerprint is unchanged.

As in the result cache's stat index (``mpslint/cache.py``), a digest is
vouched for only if every file it came from was last changed at least
``RACY_SECONDS`` before the digest was computed: an edit changes the ctime
whatever it does to the mtime and the size, and a file edited within the same
tick of a coarse clock is read again next time. The memo is JSON beside the
summaries; a missing or corrupt memo only costs reading.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from typing import Dict, List, Optional, Tuple

# A file whose mtime or ctime is this close to the moment it was hashed is hashed again next run: an edit
# within the same tick of a coarse clock (FAT: 2 s) would leave its stat unchanged. (The result cache's
# stat index, mpslint/cache.py, follows the same rule.)
RACY_SECONDS = 2
# Whether st_ctime is the time of the last change (POSIX). On Windows it is the creation time, which an
# edit that restores the mtime leaves alone: there nothing is vouched for by stat.
STAT_CHANGE_TIME = os.name != "nt"
_NAME = "digest-memo"

# (fingerprint, the newest mtime or ctime among its files, in ns): None when a file cannot be read.
Fingerprint = Optional[Tuple[str, int]]


def of_file(path: str) -> Fingerprint:
    try:
        st = os.stat(path)
    except OSError:
        return ("missing", 0)  # still a fact: a module appearing there changes the answer
    return (f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_size}:{st.st_ino}:{st.st_dev}",
            max(st.st_mtime_ns, st.st_ctime_ns))


def of_directory(directory: str) -> Fingerprint:
    """Every ``*.py`` of ``directory`` with its ``stat``: what ``callers._mentions`` reads."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".py"))
    except OSError:
        return ("unlisted", 0)
    parts: List[str] = []
    newest = 0
    for name in names:
        found = of_file(os.path.join(directory, name))
        if found is None:
            return None
        parts.append(f"{name}={found[0]}")
        newest = max(newest, found[1])
    return hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest(), newest


class DigestMemo:
    def __init__(self, directory: Optional[str]) -> None:
        self.path = os.path.join(directory, _NAME) if directory and STAT_CHANGE_TIME else None
        self._entries: Optional[Dict[str, List[str]]] = None
        self._changed = False
        self.served = 0  # digests served without reading: what tests count

    def get(self, key: str, fingerprint: Fingerprint) -> Optional[str]:
        if fingerprint is None or self.path is None:
            return None
        entry = self._load().get(key)
        if entry and entry[0] == fingerprint[0]:
            self.served += 1
            return entry[1]
        return None

    def put(self, key: str, fingerprint: Fingerprint, digest: str, computed_at: int) -> None:
        """``digest`` was computed from the files of ``fingerprint`` (taken before) at ``computed_at`` (ns)."""
        if fingerprint is None or self.path is None:
            return
        if fingerprint[1] > computed_at - RACY_SECONDS * 10**9:
            return  # a file changed too recently to trust its stat to show the next change
        entries = self._load()
        if entries.get(key) != [fingerprint[0], digest]:
            entries[key] = [fingerprint[0], digest]
            self._changed = True

    def save(self) -> None:
        if not self._changed or self.path is None:
            return
        temp = None
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(self.path))
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(self._entries, handle, separators=(",", ":"))
            os.replace(temp, self.path)  # atomic: a concurrent run's memo may win, none is torn
            self._changed = False
        except Exception:  # a read-only or full disk costs speed, never the run
            if temp is not None and os.path.exists(temp):
                os.unlink(temp)

    def _load(self) -> Dict[str, List[str]]:
        if self._entries is None:
            try:
                with open(self.path, "r", encoding="utf-8") as handle:  # type: ignore[arg-type]
                    loaded = json.load(handle)
                self._entries = loaded if isinstance(loaded, dict) else {}
            except Exception:
                self._entries = {}
        return self._entries


def now() -> int:
    return time.time_ns()
