"""Path globs of ``exclude`` and ``per-file-ignores``, with Ruff's (and ``.gitignore``'s) meaning.

A pattern with a ``/`` is relative to the project root; one without matches a
name anywhere. ``*`` stays within one path segment and ``**`` crosses segments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, FrozenSet, Iterable


def glob_match(pattern: str, relative: str) -> bool:
    """Whether ``relative`` (a ``/``-separated path from the project root) matches ``pattern``."""
    pattern = _strip(pattern)
    if "/" in pattern:
        return glob_regex(pattern).fullmatch(relative) is not None
    return glob_regex(pattern).fullmatch(relative.rsplit("/", 1)[-1]) is not None


def _strip(pattern: str) -> str:
    pattern = pattern.rstrip("/")
    return pattern[2:] if pattern.startswith("./") else pattern


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> "re.Pattern[str]":
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def matcher(patterns: Iterable[str]) -> Callable[[str], bool]:
    """One test for many patterns: discovery asks it for every entry of every directory."""
    names = set()
    name_regexes = []
    path_regexes = []
    for raw in patterns:
        pattern = _strip(raw)
        if "/" in pattern:
            path_regexes.append(glob_regex(pattern).pattern)
        elif any(ch in pattern for ch in "*?["):
            name_regexes.append(glob_regex(pattern).pattern)
        else:
            names.add(pattern)
    name_re = re.compile("|".join(f"(?:{r})" for r in name_regexes)) if name_regexes else None
    path_re = re.compile("|".join(f"(?:{r})" for r in path_regexes)) if path_regexes else None

    def matches(relative: str) -> bool:
        name = relative.rsplit("/", 1)[-1]
        if name in names:
            return True
        if name_re is not None and name_re.fullmatch(name):
            return True
        return path_re is not None and path_re.fullmatch(relative) is not None

    return matches


@dataclass(frozen=True)
class PerFileIgnore:
    """One ``per-file-ignores`` entry; a ``!`` pattern applies to the files that do NOT match."""

    pattern: str
    negated: bool
    codes: FrozenSet[str]

    def applies(self, relative: str) -> bool:
        return glob_match(self.pattern, relative) != self.negated
