"""What checking or fixing one file gives back, and how it was asked for.

Its own module so that every way a file is processed (the runner, notebooks,
the language server) shares the types without importing one another.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from mpslint.diagnostic import Diagnostic


@dataclass(frozen=True)
class Mode:
    fix: bool = False  # write fixed files
    diff: bool = False  # compute the fix, write nothing, return a unified diff
    unsafe: bool = False
    # The real paths of the paths checked: a fix is written only to a file under one of them, unless the
    # file's settings follow symlinks. None: anywhere (stdin, the server, the API).
    roots: Optional[Tuple[str, ...]] = None

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff


@dataclass
class FileResult:
    display: str
    diagnostics: List[Diagnostic] = field(default_factory=list)  # remaining after fixing
    fixed: Counter = field(default_factory=Counter)  # code -> fixes applied
    error: Optional[str] = None  # the file could not be checked (an internal error) or its fix not written
    detail: Optional[str] = None  # the traceback of an internal error (shown with --verbose)
    warning: Optional[str] = None  # fixing stopped early (the fixer's own message)
    diff: Optional[str] = None
    text: Optional[str] = None  # the fixed text, for stdin
    cached: bool = False
    # The project's module files its check read: path -> digest of their summary (kept with the cache entry).
    depends: Dict[str, str] = field(default_factory=dict)
    # The cache key of the bytes checked (None without a cache): the file may have changed since the run
    # looked it up, and a result is recorded only under the key of what was checked.
    checked_key: Optional[str] = None
