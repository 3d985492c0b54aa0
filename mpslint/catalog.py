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
HOME_URL = "https://github.com/mpslint/mpslint"
DOCS_URL = HOME_URL + "/blob/main/rules/{code}.md"

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


def _scalar(value: str) -> str:
    """A front-matter value as YAML reads it: a double-quoted string's escapes (``\\"``) decoded, ``''`` in a single-quoted one."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        import json

        try:
            return json.loads(value)  # a JSON string is a YAML double-quoted scalar
        except ValueError:
            return value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


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
        front[key.strip()] = _scalar(value)
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


def readme_table(link: str = "rules/{code}.md") -> str:
    """The rule table of README.md, generated from the catalog (``python -m mpslint.catalog``).

    ``link`` is where a code links to; the documentation site's rule index uses ``{code}.md``.
    """
    fixes = {"none": "–", "safe": "safe", "unsafe": "unsafe", "sometimes": "sometimes"}
    lines = ["| code | name | what it flags | fix |", "|---|---|---|---|"]
    for doc in load().values():
        summary = doc.summary.replace("|", "\\|")
        lines.append(f"| [{doc.code}]({link.format(code=doc.code)}) | {doc.name} | {summary} | {fixes.get(doc.fix, doc.fix)} |")
    return "\n".join(lines) + "\n"


_README_TABLE = re.compile(r"(<!-- rules:start -->\n)(.*?)(<!-- rules:end -->)", re.DOTALL)


def write_readme_table(readme: Path) -> bool:
    """Put the generated table between README's ``rules:start``/``rules:end`` markers; True if it changed."""
    text = readme.read_text(encoding="utf-8")
    if not _README_TABLE.search(text):
        raise ValueError(f"{readme}: no <!-- rules:start --> ... <!-- rules:end --> markers")
    updated = _README_TABLE.sub(lambda m: m.group(1) + readme_table() + m.group(3), text)
    if updated != text:
        readme.write_text(updated, encoding="utf-8")
    return updated != text


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m mpslint.catalog`` prints README's rule table; ``--write`` puts it into README.md."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m mpslint.catalog", description=main.__doc__)
    parser.add_argument("--write", action="store_true", help="update the table in README.md")
    parser.add_argument("--readme", type=Path, default=Path(__file__).resolve().parent.parent / "README.md")
    args = parser.parse_args(argv)
    if not args.write:
        print(readme_table(), end="")
        return 0
    changed = write_readme_table(args.readme)
    print(f"{args.readme}: {'updated' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
