"""Summaries by content: a module's summary is computed once per distinct text, in memory and on disk.

Keyed by a digest of the file's bytes (and the summary format), never by
path or mtime: two checkouts of one file share an entry, and an edit that
keeps size and mtime cannot be served a stale summary. On disk the entries
sit next to the result cache (``<cache dir>/summaries``), as JSON for the
reason the result cache is JSON (a planted pickle would run code).
"""

from __future__ import annotations

import ast
import hashlib
import os
import tempfile
import warnings
from typing import TYPE_CHECKING, Dict, Optional, Tuple

if TYPE_CHECKING:
    from mpslint.analysis.project.summary import ModuleSummary

# `summary` (and the analyses it asks) is imported where a summary is made or read, not with this module: a
# warm run checks the digests its cached results depend on (digest_memo.py) and reads no summary.


def content_key(data: bytes) -> str:
    from mpslint.analysis.project.summary import FORMAT

    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"summary-v{FORMAT}\0".encode())
    digest.update(data)
    return digest.hexdigest()


def summarize_bytes(data: bytes) -> Optional[ModuleSummary]:
    """The summary of a module's source, or None when Python cannot read it."""
    from mpslint.analysis.project.summary import summarize

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = compile(data, "<mpslint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    try:
        return summarize(module, source=data)  # type: ignore[arg-type]
    except RecursionError:
        return None


class SummaryStore:
    def __init__(self, directory: Optional[str] = None) -> None:
        self.directory = directory
        self.memory: Dict[str, Optional[ModuleSummary]] = {}
        self.computed = 0  # summaries made from source (not found in memory or on disk): what tests count

    def get(self, data: bytes, module: Optional[ast.Module] = None) -> Tuple[str, Optional[ModuleSummary]]:
        """(content key, summary) of a module's bytes; ``module`` is its ast when the caller parsed it already."""
        key = content_key(data)
        if key in self.memory:
            return key, self.memory[key]
        summary = self._read(key)
        if summary is None:
            from mpslint.analysis.project.summary import summarize

            self.computed += 1
            summary = summarize(module, source=data) if module is not None else summarize_bytes(data)
            if summary is not None:
                self._write(key, summary)
        self.memory[key] = summary
        return key, summary

    def _path(self, key: str) -> Optional[str]:
        if self.directory is None:
            return None
        return os.path.join(self.directory, "summaries", key[:2], key[2:] + ".json")

    def _read(self, key: str) -> Optional[ModuleSummary]:
        path = self._path(key)
        if path is None:
            return None
        from mpslint.analysis.project.summary import ModuleSummary

        try:
            with open(path, "r", encoding="utf-8") as handle:
                digest, _, text = handle.read().partition("\n")
            summary = ModuleSummary.from_json(text)
            summary.__dict__["_digest"] = digest  # written with it: a warm run need not serialize it again
            return summary
        except Exception:  # missing, corrupt or of another format: computed again
            return None

    def _write(self, key: str, summary: ModuleSummary) -> None:
        path = self._path(key)
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(summary.digest + "\n" + summary.to_json())
            os.replace(temp, path)
        except Exception:  # a read-only or full disk costs speed, never the run
            pass
