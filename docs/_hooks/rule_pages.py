"""MkDocs hook: the rule pages of the site are generated from ``rules/*.md`` at build time.

``rules/`` stays the single source of truth (``mpslint rule`` prints it, SARIF embeds it,
the tests run its examples); this hook adds ``rules/index.md`` (the catalog's table) and one
page per rule to the build, and lists them under "Rules" in the navigation. Nothing is
written into ``docs/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    # The checkout's own mpslint (its catalog reads the checkout's rules/), not another install.
    sys.path.insert(0, str(ROOT))

from mpslint import catalog  # noqa: E402

FIX = {
    "none": "No fix.",
    "safe": "Fix: always available, safe (`mpslint --fix`).",
    "unsafe": "Fix: available with `--unsafe-fixes` (it may change behaviour).",
    "sometimes": "Fix: sometimes available (safe where it applies; see *Fix safety*).",
}

INDEX_INTRO = """# Rules

Every rule has a code (`MPS` and three digits, grouped by hundreds, so `--select MPS2`
selects a family) and a kebab-case name; both are accepted wherever rules are selected
(`--select`, `--ignore`, `per-file-ignores`, `# noqa`). `mpslint rule CODE` prints a rule's
page in the terminal.

| family | what |
|---|---|
| MPS0xx | files that cannot be checked: syntax errors, unreadable paths |
| MPS1xx | CUDA-only code: calls, device strings, device choices, AMP, CUDA-only features |
| MPS2xx | host syncs on every step of a training loop, and timing that does not wait for the device |
| MPS3xx | where tensors live: `.numpy()` on device tensors, placement mismatches, float64, non-blocking copies |
| MPS4xx | data loading and processes: pinned memory, fork, unguarded workers, device tensors in workers |
| MPS5xx | op coverage: ops without an MPS kernel, CPU fallbacks, dtypes, features that need a newer torch |
| MPS9xx | mpslint's own errors: a rule that crashed on a file |

The *fix* column says whether `mpslint --fix` rewrites the code; [Fixes](../fixes.md) explains
what "safe", "unsafe" and "sometimes" mean, and [How rules decide](../how-rules-decide.md) what
a hot loop is and where op coverage comes from.

"""


def rule_page(doc: "catalog.RuleDoc") -> str:
    since = f" Added in mpslint {doc.since}." if doc.since else ""
    return (
        f"# {doc.code} {doc.name}\n\n"
        f"{doc.summary}\n\n"
        f"{FIX.get(doc.fix, '')}{since} In a terminal: `mpslint rule {doc.code}`.\n\n"
        f"{doc.body.strip()}\n"
    )


FAMILIES = {
    "MPS0": "MPS0xx: files that cannot be checked",
    "MPS1": "MPS1xx: CUDA-only code",
    "MPS2": "MPS2xx: host syncs and timing",
    "MPS3": "MPS3xx: where tensors live",
    "MPS4": "MPS4xx: data loading and processes",
    "MPS5": "MPS5xx: op coverage",
    "MPS9": "MPS9xx: mpslint's own errors",
}


def on_config(config, **kwargs):
    """List every rule page under the "Rules" entry of the navigation, one folding group per family."""
    groups: dict = {}
    for code, doc in catalog.load().items():
        family = FAMILIES.get(code[:4], f"{code[:4]}xx")
        groups.setdefault(family, []).append({f"{code} {doc.name}": f"rules/{code}.md"})
    rules = [{"All rules": "rules/index.md"}] + [{family: pages} for family, pages in groups.items()]
    for i, item in enumerate(config.nav or []):
        if isinstance(item, dict) and "Rules" in item:
            config.nav[i] = {"Rules": rules}
    return config


def on_files(files, config, **kwargs):
    files.append(File.generated(config, "rules/index.md", content=INDEX_INTRO + catalog.readme_table(link="{code}.md")))
    for code, doc in catalog.load().items():
        files.append(File.generated(config, f"rules/{code}.md", content=rule_page(doc)))
    return files


def on_serve(server, config, builder, **kwargs):
    """``mkdocs serve`` rebuilds when a rule page changes."""
    server.watch(str(catalog.rules_dir()))
    return server
