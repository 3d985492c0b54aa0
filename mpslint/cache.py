"""The result cache: unchanged files are not checked again.

An entry is keyed by a digest of (mpslint's version and code, the effective
settings, the file's path as reported, the file's bytes) and holds the
file's diagnostics, fixes included, as JSON, with the module files of the
project its check read (``analysis/project``): path -> digest of their
summary. An entry is served only while each of those digests is unchanged, so
editing ``utils.py`` re-checks the files that asked about it (and only if
what its summary says changed), not the world.

Why the content and not (mtime, size): mtimes are coarse on some file
systems and an edit that keeps the size within one tick would be served stale
results; reading and hashing a file costs far less than parsing it, and the
runner reads the bytes anyway. Why JSON and not pickle: the cache lives in
the checked-out tree, and a linter runs on untrusted pull requests; loading a
planted pickle would execute code.

A warm run need not read every file to find its key: ``stat-index``
(beside the entries) maps each file checked to its key and the ``stat`` it
had when its bytes were hashed, as Ruff and git do. The key is reused without
reading only while the file's mtime, ctime, size, inode and device are all
unchanged, and only if its mtime and ctime were at least ``RACY_SECONDS``
older than the moment it was hashed. An edit rewrites the ctime, whatever the
editor (or ``touch -r``) does to the mtime and whatever the size; and a file
written within the same clock tick as its hashing (a coarse file system) is
hashed again next time, not trusted (git's "racily clean" entries). On Windows,
where st_ctime is the creation time, files are always read and hashed. Most
files have no finding: the index also says so for them (with the module files
their check read), and that is their only record: no entry file is written or
opened for them. A file the index no longer vouches for but whose bytes still
have its key (a checkout or ``touch`` changed the stat) keeps that record; a
file that changed while the run checked it is recorded under the key of the
bytes checked, never under the key looked up (``FileResult.checked_key``).

Any problem with the cache (unreadable, corrupt, another version, a full
disk) makes that entry a miss; the cache never fails a run. Writes are
atomic (temp file + ``os.replace``), so concurrent runs cannot tear an entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from mpslint import __version__
from mpslint.analysis.project.digest_memo import RACY_SECONDS, STAT_CHANGE_TIME
from mpslint.config import Settings
from mpslint.diagnostic import Applicability, Diagnostic, Edit, Fix, Location

CACHE_DIR_NAME = ".mpslint_cache"
PRUNE_AFTER = 7 * 24 * 3600  # seconds
STAT_INDEX = "stat-index"  # JSON; not named *.json: it is no entry
_FORMAT = 1
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by mpslint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def _code_fingerprint() -> str:
    """The version plus the (mtime, size) of mpslint's own modules and rule docs, and of torch's op table.

    A release is identified by its version, but an editable install changes
    under the same version: without this, editing a rule would serve stale results.
    With no ``torch-version`` floor, the op rules read the installed torch's
    ``native_functions.yaml``: upgrading torch changes their findings too.
    """
    from mpslint.knowledge.mps_kernels import installed_yaml_path

    here = Path(__file__).resolve().parent
    parts = [__version__, str(_FORMAT)]
    yaml = installed_yaml_path()
    if yaml is not None:
        try:
            st = os.stat(yaml)
            parts.append(f"torch-ops:{yaml}:{st.st_mtime_ns}:{st.st_size}")
        except OSError:
            pass
    for base in (here, here.parent / "rules", here / "_rules"):
        if not base.is_dir():
            continue
        for root, _dirs, names in os.walk(base):
            for name in sorted(names):
                if name.endswith((".py", ".md", ".json", ".yaml")):
                    try:
                        st = os.stat(os.path.join(root, name))
                    except OSError:
                        continue
                    parts.append(f"{os.path.relpath(os.path.join(root, name), here)}:{st.st_mtime_ns}:{st.st_size}")
    parts.sort()
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()


def settings_fingerprint(settings: Settings) -> str:
    """A stable text for the settings (sets sorted: their repr depends on hash seeds)."""
    values = {}
    for f in fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, (set, frozenset)):
            value = sorted(value, key=str)
        values[f.name] = value
    return json.dumps(values, sort_keys=True, default=repr)


class Cache:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._code = _code_fingerprint()
        # One directory per version of the code, so entries of older code can be pruned as a whole.
        self.entries = self.directory / f"v{__version__}-{self._code[:16]}"
        self._root = str(self.entries)
        self._settings: Dict[Settings, str] = {}
        self._ready = False
        self.hits = 0
        self.misses = 0
        self._stats: Optional[Dict[str, list]] = None  # the stat index, read on first use
        self._short: Dict[str, str] = {}
        self._cwd = os.getcwd()
        self._stats_changed = False
        self.stat_hits = 0  # keys found from a file's stat, without reading it: what tests count
        # key -> the dependencies of its entry, for keys the stat index says have no diagnostics
        self._empty: Dict[str, Dict[str, str]] = {}

    def key(self, data: bytes, display_path: str, settings: Settings) -> str:
        fingerprint = self._settings.get(settings)
        if fingerprint is None:
            fingerprint = self._settings[settings] = settings_fingerprint(settings)
        digest = hashlib.blake2b(digest_size=20)
        for part in (self._code, fingerprint, display_path):
            digest.update(part.encode("utf-8", "surrogatepass"))
            digest.update(b"\0")
        digest.update(data)
        return digest.hexdigest()

    # ------------------------------------------------------------------ the stat index

    def known_key(self, path: str, display_path: str, settings: Settings, st: os.stat_result) -> Optional[str]:
        """The key of the file at ``path`` from its ``stat`` alone, when the index can vouch for it."""
        if not _is_regular(st) or not STAT_CHANGE_TIME:
            return None
        entry = self._stat_index().get(self._stat_name(path, display_path, settings))
        if not entry or len(entry) not in (7, 8) or entry[:5] != _signature(st):
            return None
        hashed_at = entry[5]
        if max(st.st_mtime_ns, st.st_ctime_ns) > hashed_at - RACY_SECONDS * 10**9:
            return None
        self.stat_hits += 1
        key = str(entry[6])
        if len(entry) == 8 and isinstance(entry[7], dict):
            self._empty[key] = entry[7]
        return key

    def remember(self, path: str, display_path: str, settings: Settings, st: os.stat_result, key: str,
                 hashed_at: int) -> bool:
        """``key`` was computed from bytes read after ``st`` was taken (so a later edit changes the stat),
        at ``hashed_at`` (``time.time_ns()``, after the read). Whether the index now holds ``key`` for the
        file: then ``remember_result`` can record that its check found nothing, and no entry is written."""
        if not _is_regular(st) or not STAT_CHANGE_TIME:
            return False
        entry = [*_signature(st), hashed_at, key]
        name = self._stat_name(path, display_path, settings)
        index = self._stat_index()
        old = index.get(name)
        if old is not None and old[:5] == entry[:5] and old[6] == key \
                and max(st.st_mtime_ns, st.st_ctime_ns) <= old[5] - RACY_SECONDS * 10**9:
            return True  # already trusted: rewriting the index would only cost time
        if old is not None and len(old) == 8 and old[6] == key and isinstance(old[7], dict):
            # The same bytes under a new stat (a checkout, `touch`, a racy write): their check found nothing.
            entry.append(old[7])
            self._empty[key] = old[7]
        index[name] = entry
        self._stats_changed = True
        return True

    def remember_result(self, path: str, display_path: str, settings: Settings, key: str,
                        diagnostics: Sequence[Diagnostic], depends: Dict[str, str]) -> None:
        """The check of the bytes with ``key`` found ``diagnostics``: when none, the stat index says so."""
        if not STAT_CHANGE_TIME:
            return
        entry = self._stat_index().get(self._stat_name(path, display_path, settings))
        if not entry or len(entry) not in (7, 8) or entry[6] != key:
            return  # the index does not vouch for these bytes (a racy or changed file)
        if diagnostics:
            if len(entry) == 8:
                # The same bytes found nothing before, when the modules they read said otherwise: the entry
                # written now is their result, and the old record would only send later runs checking again.
                del entry[7:]
                self._empty.pop(key, None)
                self._stats_changed = True
            return
        depends = dict(sorted(depends.items()))
        if entry[7:] != [depends]:
            entry[7:] = [depends]
            self._stats_changed = True

    def save_index(self) -> None:
        """Write the stat index if this run changed it (atomically; a concurrent run's write may win)."""
        if not self._stats_changed:
            return
        try:
            self._prepare()
            data = json.dumps(self._stats, separators=(",", ":")).encode("utf-8")
            _atomic_write(self.entries / STAT_INDEX, data)
            self._stats_changed = False
        except Exception:
            pass  # a read-only or full disk costs speed, never the run

    def _stat_index(self) -> Dict[str, list]:
        if self._stats is None:
            try:
                with open(os.path.join(str(self.entries), STAT_INDEX), "rb") as handle:
                    loaded = json.loads(handle.read())
                self._stats = loaded if isinstance(loaded, dict) else {}
            except Exception:  # missing or corrupt: every file is read and hashed
                self._stats = {}
        return self._stats

    def _stat_name(self, path: str, display_path: str, settings: Settings) -> str:
        fingerprint = self._settings.get(settings)
        if fingerprint is None:
            fingerprint = self._settings[settings] = settings_fingerprint(settings)
        # The settings are in the key: a file checked with other settings has another entry.
        short = self._short.get(fingerprint)
        if short is None:
            short = self._short[fingerprint] = hashlib.blake2b(fingerprint.encode(), digest_size=8).hexdigest()
        # os.path.abspath, with the working directory asked once per run rather than once per file
        absolute = path if os.path.isabs(path) else os.path.join(self._cwd, path)
        return f"{short}\0{display_path}\0{os.path.normpath(absolute)}"

    @property
    def summaries(self) -> str:
        """Where module summaries go: beside this code's entries, so a new mpslint never reads old ones."""
        return str(self.entries)

    def _entry(self, key: str) -> str:
        return os.path.join(self._root, key[:2], key[2:] + ".json")

    def get(self, key: str, current: Optional[Callable[[str], str]] = None) -> Optional[List[Diagnostic]]:
        """The entry's diagnostics; with ``current`` (path -> digest of its summary now), only while every
        module file the entry depends on still has the digest it had."""
        empty = self._empty.get(key)
        if empty is not None and not (
                empty and (current is None or any(current(path) != digest for path, digest in empty.items()))):
            self.hits += 1
            return []
        # No record of an empty result, or one the modules it read have outdated: the entry, if any, is newer.
        try:
            with open(self._entry(key), "rb") as handle:
                payload = json.loads(handle.read())
            if payload.get("key") != key:
                raise ValueError("entry for another key")
            depends = payload.get("depends") or {}
            if depends and (current is None or any(current(path) != digest for path, digest in depends.items())):
                self.misses += 1
                return None
            result = [diagnostic_from_json(d) for d in payload["diagnostics"]]
        except FileNotFoundError:
            self.misses += 1
            return None
        except Exception:  # corrupt, truncated, foreign: a miss; the next put rewrites it
            self.misses += 1
            return None
        self.hits += 1
        return result

    def put(self, key: str, diagnostics: Sequence[Diagnostic], depends: Optional[Dict[str, str]] = None, *,
            indexed: bool = False) -> None:
        """Write the entry; ``indexed``: the run's stat index holds ``key`` for the file, and records an empty
        result there (``remember_result``): most files have no finding, and an entry file each made most of a
        cold run's system time."""
        if indexed and not diagnostics and STAT_CHANGE_TIME:
            return
        try:
            self._prepare()
            target = Path(self._entry(key))
            target.parent.mkdir(exist_ok=True)
            payload = {"key": key, "diagnostics": [diagnostic_to_json(d) for d in diagnostics]}
            if depends:
                payload["depends"] = dict(sorted(depends.items()))
            _atomic_write(target, json.dumps(payload, separators=(",", ":")).encode("utf-8"))
        except Exception:
            pass  # a read-only or full disk costs speed, never the run

    def _prepare(self) -> None:
        if self._ready:
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        self._prune()
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            _atomic_write(tag, _TAG.encode())
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            _atomic_write(ignore, b"# Automatically created by mpslint.\n*\n")
        self._ready = True


    def _prune(self) -> None:
        """Drop entry directories of other mpslint code that no run has written to for a week.

        Another installation (say, pre-commit's) may share this cache: it keeps its
        directory fresh by writing to it, so only abandoned versions go.
        """
        import shutil
        import time

        now = time.time()
        try:
            os.utime(self.entries)
            siblings = list(os.scandir(self.directory))
        except OSError:
            return
        for entry in siblings:
            if entry.name.startswith("v") and entry.path != str(self.entries):
                try:
                    stale = entry.is_dir(follow_symlinks=False) and now - entry.stat().st_mtime > PRUNE_AFTER
                except OSError:
                    continue
                if stale:
                    shutil.rmtree(entry.path, ignore_errors=True)


def _signature(st: os.stat_result) -> List[int]:
    return [st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev]


def _is_regular(st: os.stat_result) -> bool:
    import stat

    return stat.S_ISREG(st.st_mode)


def _atomic_write(target: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=str(target.parent))
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _loc(location: Location) -> List[int]:
    return [location.row, location.column]


def diagnostic_to_json(d: Diagnostic) -> Dict[str, Any]:
    fix = None
    if d.fix is not None:
        fix = {
            "message": d.fix.message,
            "applicability": d.fix.applicability.value,
            "edits": [[_loc(e.start), _loc(e.end), e.content, e.cell] for e in d.fix.edits],
        }
    return {
        "code": d.code,
        "message": d.message,
        "filename": d.filename,
        "location": _loc(d.location),
        "end_location": _loc(d.end_location),
        "fix": fix,
        "noqa_row": d.noqa_row,
        "detail": d.detail,
        "cell": d.cell,
    }


def diagnostic_from_json(data: Dict[str, Any]) -> Diagnostic:
    fix = None
    raw = data["fix"]
    if raw is not None:
        fix = Fix(
            raw["message"],
            Applicability(raw["applicability"]),
            tuple(Edit(Location(*edit[0]), Location(*edit[1]), str(edit[2]), cell=_cell(edit[3:])) for edit in raw["edits"]),
        )
    return Diagnostic(
        str(data["code"]),
        str(data["message"]),
        str(data["filename"]),
        Location(*data["location"]),
        Location(*data["end_location"]),
        fix=fix,
        noqa_row=data["noqa_row"],
        detail=data.get("detail"),
        cell=data.get("cell"),
    )


def _cell(rest) -> Optional[int]:
    return int(rest[0]) if rest and rest[0] is not None else None


def remove_caches(root: Path, extra: Optional[Path] = None) -> List[Path]:
    """Delete every ``.mpslint_cache`` under ``root`` (and ``extra``) that mpslint made; the paths removed.

    Only a folder holding the ``CACHEDIR.TAG`` mpslint writes is removed: a user's
    own folder that happens to have the name is not ours to delete.
    """
    import shutil

    found = []
    for directory, subdirs, _ in os.walk(root):
        if CACHE_DIR_NAME in subdirs:
            found.append(Path(directory) / CACHE_DIR_NAME)
            subdirs.remove(CACHE_DIR_NAME)
    if extra is not None:
        found.append(extra)
    removed = []
    for directory in found:
        tag = directory / "CACHEDIR.TAG"
        try:
            ours = "created by mpslint" in tag.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if ours:
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(directory)
    return removed

