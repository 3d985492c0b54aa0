"""Findings as the editor shows them: LSP diagnostics with code, rule link, severity and fix.

Each diagnostic's ``data`` names the rule and, when there is a fix, its
title and applicability (``safe`` or ``unsafe``), for clients that show them
next to the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from lsprotocol import types as lsp

from mpslint import catalog, registry
from mpslint.diagnostic import Diagnostic, Location
from mpslint.server.documents import Snapshot
from mpslint.server.severity import severity

SOURCE = "mpslint"


@dataclass(frozen=True)
class Finding:
    """One engine diagnostic and its LSP form, for one snapshot of a document."""

    diagnostic: Diagnostic
    lsp: lsp.Diagnostic


def rule_url(code: str) -> Optional[str]:
    doc = catalog.load().get(code)
    return doc.url if doc is not None else None


def to_lsp(diagnostic: Diagnostic, snapshot: Snapshot, encoding: str) -> lsp.Diagnostic:
    url = rule_url(diagnostic.code)
    data: Dict[str, Any] = {"name": registry.name_of(diagnostic.code)}
    fix = diagnostic.fix
    if fix is not None and fix.edits:
        data["fix"] = {"title": fix.message, "applicability": fix.applicability.value}
    return lsp.Diagnostic(
        range=snapshot.range(diagnostic.location, _end(diagnostic), encoding),
        message=diagnostic.message,
        severity=severity(diagnostic.code),
        code=diagnostic.code,
        code_description=lsp.CodeDescription(href=url) if url else None,
        source=SOURCE,
        data=data,
    )


def _end(diagnostic: Diagnostic) -> Location:
    """Zero-width findings (a syntax error's point) get one character, so that editors can underline them."""
    if diagnostic.end_location == diagnostic.location:
        return Location(diagnostic.location.row, diagnostic.location.column + 1)
    return diagnostic.end_location


def findings(diagnostics: List[Diagnostic], snapshot: Snapshot, encoding: str) -> List[Finding]:
    return [Finding(d, to_lsp(d, snapshot, encoding)) for d in diagnostics]


def overlaps(rng: lsp.Range, other: lsp.Range) -> bool:
    """Whether two ranges share a point (touching counts: a cursor at a finding's end is on it)."""
    def key(p: lsp.Position):
        return (p.line, p.character)

    return key(rng.start) <= key(other.end) and key(other.start) <= key(rng.end)
