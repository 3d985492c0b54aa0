"""Hover text: what a finding's rule is about, from its page in the rule catalog.

Hovering over a finding shows, for each finding there, its rule's code,
name and summary, the finding's own message, the page's *Why it matters on
MPS* section, the fix on offer and a link to the whole page. Hovering over a
code in a ``# noqa:`` comment shows the same for that code's rule.
"""

from __future__ import annotations

import re
from typing import List, Optional

from mpslint import catalog
from mpslint.diagnostic import Diagnostic

_CODE_IN_LINE = re.compile(r"\bMPS\d{3}\b", re.IGNORECASE)
_FIX_SAFETY = {"safe": "safe fix", "unsafe": "unsafe fix (needs `unsafeFixes`)", "display-only": "suggestion"}


def rule_text(code: str, *, markdown: bool, finding: Optional[Diagnostic] = None) -> Optional[str]:
    doc = catalog.load().get(code.upper())
    if doc is None:
        return None
    why = doc.section("Why it matters on MPS").strip()
    if markdown:
        parts = [f"**{doc.code}** `{doc.name}`: {doc.summary}"]
        if finding is not None and finding.message != doc.summary:
            parts.append(finding.message)
        if why:
            parts.append(why)
        if finding is not None and finding.fix is not None:
            parts.append(f"Fix ({_FIX_SAFETY.get(finding.fix.applicability.value, 'fix')}): {finding.fix.message}")
        parts.append(f"[{doc.code} rule page]({doc.url})")
        return "\n\n".join(parts)
    parts = [f"{doc.code} {doc.name}: {_plain(doc.summary)}"]
    if finding is not None and finding.message != doc.summary:
        parts.append(_plain(finding.message))
    if why:
        parts.append(_plain(why))
    if finding is not None and finding.fix is not None:
        parts.append(f"Fix ({_FIX_SAFETY.get(finding.fix.applicability.value, 'fix')}): {_plain(finding.fix.message)}")
    parts.append(doc.url)
    return "\n\n".join(parts)


def _plain(text: str) -> str:
    return text.replace("`", "")


def code_at(line: str, character: int) -> Optional[str]:
    """The rule code under the cursor in a ``# noqa`` comment (``character`` counts characters)."""
    hash_at = line.find("#")
    if hash_at < 0 or "noqa" not in line[hash_at:].lower():
        return None
    for match in _CODE_IN_LINE.finditer(line, hash_at):
        if match.start() <= character <= match.end():
            return match.group().upper()
    return None


def hover_text(found: List[Diagnostic], *, markdown: bool) -> Optional[str]:
    texts = [t for t in (rule_text(d.code, markdown=markdown, finding=d) for d in found) if t]
    if not texts:
        return None
    return ("\n\n---\n\n" if markdown else "\n\n").join(texts)
