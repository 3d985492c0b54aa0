"""The rule catalog: one Markdown file per rule in ``rules/``.

Each file has a front matter block::

    ---
    code: MPS101
    name: cuda-method
    summary: "`.cuda()` on a tensor or module"
    fix: safe            # none | safe | unsafe | sometimes
    since: 0.1.0
    ---

followed by the sections *What it does*, *Why it matters on MPS*, *Example*,
*Use instead*, *Fix safety*, *Options*, *References*. ``mpslint rule`` prints
these files, SARIF embeds them, and the test suite runs their examples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Optional, Tuple

SECTIONS = (
    "What it does",
    "Why it matters on MPS",
    "Example",
    "Use instead",
    "Fix safety",
    "Options",
    "References",
)
REQUIRED_SECTIONS = ("What it does", "Why it matters on MPS", "Example", "Use instead")
DOCS_URL = "https://github.com/mpslint/mpslint/blob/main/rules/{code}.md"

_FRONT = re.compile(r"\A---\n(?P<front>.*?)\n---\n(?P<body>.*)\Z", re.DOTALL)
_SECTION = re.compile(r"^## +(?P<title>.+?) *$", re.MULTILINE)
_PYTHON_BLOCK = re.compile(r"^```python[^\n]*\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class RuleDoc:
    code: str
    name: str
    summary: str
    fix: str
    since: str
    body: str
    path: Path
    front: Dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return DOCS_URL.format(code=self.code)

    def section(self, title: str) -> str:
        return sections(self.body).get(title, "")

    def examples(self, title: str) -> List[str]:
        """The python code blocks of a section (``Example`` or ``Use instead``)."""
        return [m.group("code") for m in _PYTHON_BLOCK.finditer(self.section(title))]

    @property
    def short_description(self) -> str:
        return self.summary

    @property
    def text(self) -> str:
        """The doc as ``mpslint rule`` prints it."""
        fix = {
            "none": "Fix is not available.",
            "safe": "Fix is always available (safe).",
            "unsafe": "Fix is available with --unsafe-fixes.",
            "sometimes": "Fix is sometimes available.",
        }.get(self.fix, "")
        return f"# {self.name} ({self.code})\n\n{self.summary}\n\n{fix}\n\n{self.body.strip()}\n"


def sections(body: str) -> Dict[str, str]:
    found: Dict[str, str] = {}
    matches = list(_SECTION.finditer(body))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        found[match.group("title")] = body[match.end():end].strip("\n")
    return found


def rules_dir() -> Path:
    """Installed wheels carry the catalog as ``mpslint/_rules``; a checkout has ``rules/``."""
    here = Path(__file__).resolve().parent
    packaged = here / "_rules"
    return packaged if packaged.is_dir() else here.parent / "rules"


def parse(path: Path) -> RuleDoc:
    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    match = _FRONT.match(text)
    if not match:
        raise ValueError(f"{path}: missing front matter")
    front: Dict[str, str] = {}
    for line in match.group("front").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.partition(":")
        value = value.split(" #", 1)[0].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        front[key.strip()] = value
    return RuleDoc(
        code=front["code"],
        name=front["name"],
        summary=front.get("summary", ""),
        fix=front.get("fix", "none"),
        since=front.get("since", ""),
        body=match.group("body"),
        path=path,
        front=front,
    )


@lru_cache(maxsize=None)
def load() -> Dict[str, RuleDoc]:
    docs = {}
    for path in sorted(rules_dir().glob("MPS*.md")):
        doc = parse(path)
        docs[doc.code] = doc
    return docs


def find(code_or_name: str) -> Optional[RuleDoc]:
    docs = load()
    key = code_or_name.strip()
    if key.upper() in docs:
        return docs[key.upper()]
    for doc in docs.values():
        if doc.name == key:
            return doc
    return None


def table_rows() -> List[Tuple[str, str, str, str]]:
    """(code, name, summary, fix) for the README table."""
    return [(d.code, d.name, d.summary, d.fix) for d in load().values()]


def readme_table() -> str:
    """The rule table of README.md, generated from the catalog (``python -m mpslint.catalog``)."""
    fixes = {"none": "–", "safe": "safe", "unsafe": "unsafe", "sometimes": "sometimes"}
    lines = ["| code | name | what it flags | fix |", "|---|---|---|---|"]
    for doc in load().values():
        summary = doc.summary.replace("|", "\\|")
        lines.append(f"| [{doc.code}](rules/{doc.code}.md) | {doc.name} | {summary} | {fixes.get(doc.fix, doc.fix)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(readme_table(), end="")
