"""``--add-noqa``: a ``# noqa: CODES`` comment on every line with findings (Ruff's ``--add-noqa``).

What teams run once when they adopt a linter on an existing code base: the
findings of today are acknowledged in place, new ones fail the build. A line
that already has a ``# noqa: CODES`` comment gets the missing codes added to
that comment; a bare ``# noqa`` already silences everything; a line that ends
in a backslash cannot take a comment and is left alone. The result must
parse, or the file is not touched.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Dict, List, Sequence, Set, Tuple

from mpslint.diagnostic import Diagnostic
from mpslint.suppressions import ALL, Suppressions

# Findings about the file itself, not a line of code: no comment can silence them.
UNSUPPRESSIBLE = frozenset({"MPS000", "MPS001", "MPS900"})
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_INLINE_CODES = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Za-z]+[0-9]*(?:(?:\s*,\s*|\s+)[A-Za-z]+[0-9]*)*)", re.IGNORECASE)


def add_noqa(text: str, diagnostics: Sequence[Diagnostic]) -> Tuple[str, int]:
    """``text`` with noqa comments for ``diagnostics`` (of this text), and how many lines got one."""
    wanted: Dict[int, Set[str]] = defaultdict(set)
    for d in diagnostics:
        if d.code not in UNSUPPRESSIBLE and d.cell is None:
            wanted[d.noqa_row or d.location.row].add(d.code)
    if not wanted:
        return text, 0
    existing = Suppressions.scan(text).lines
    lines: List[str] = [m.group(0) for m in _LINE.finditer(text)]
    if lines and lines[-1] == "":
        lines.pop()
    changed = 0
    for row, codes in sorted(wanted.items()):
        if not 1 <= row <= len(lines):
            continue
        have = existing.get(row, frozenset())
        if have is ALL or "*" in have:
            continue
        missing = sorted(c for c in codes if not any(c.startswith(h) for h in have))
        if not missing:
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if body.rstrip().endswith("\\"):
            continue
        match = _INLINE_CODES.search(body) if have else None
        if match is not None:
            merged = ", ".join([*re.split(r"[\s,]+", match.group("codes").strip()), *missing])
            body = f"{body[: match.start()]}# noqa: {merged}{body[match.end():]}"
        else:
            body = f"{body.rstrip()}  # noqa: {', '.join(missing)}"
        lines[row - 1] = body + ending
        changed += 1
    if not changed:
        return text, 0
    result = "".join(lines)
    try:
        compile(result, "<mpslint>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return text, 0  # a comment in the wrong place (inside a string that spans lines): touch nothing
    return result, changed


def add_noqa_to_files(results, located: Dict[str, str]) -> Tuple[int, List[Tuple[str, str]]]:
    """Add noqa comments to the checked files (``runner.FileResult`` each); (lines changed, [(path, error)]).

    ``located`` maps a shown name that is not the file's own (a name that is not UTF-8) to the file.
    """
    from mpslint.runner import read_file, write_atomic
    from mpslint.source import DecodeError, SourceText

    added = 0
    failures: List[Tuple[str, str]] = []
    for result in results:
        diagnostics = [d for d in result.diagnostics if d.code not in UNSUPPRESSIBLE and d.cell is None]
        if not diagnostics or result.display == "-":
            continue
        path = located.get(result.display, result.display)
        try:
            data = read_file(path)
            source = SourceText.decode(data)
        except (OSError, DecodeError) as exc:
            failures.append((result.display, f"cannot add noqa comments: {exc}"))
            continue
        text, changed = add_noqa(source.text, diagnostics)
        if not changed:
            continue
        try:
            write_atomic(path, source.encode(text), expected=data)
        except OSError as exc:
            failures.append((result.display, f"cannot write: {exc.strerror or exc}"))
            continue
        added += changed
    return added, failures
