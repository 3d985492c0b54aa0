"""A rule's identity lives in one place, a rule is two files, and no construct is reported twice.

- Code, name and summary are written once, in the rule's page (``rules/``);
  the page's ``check:`` key names the class, which carries no code of its own.
- Adding a rule is its module and its page: a new page and module are picked
  up by the registry, the CLI and the README table with nothing else edited.
- No two rules report the same node, except for pairs listed here with the
  reason they are different findings.
"""

from __future__ import annotations

import re
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

import mpslint.checks
from mpslint import catalog, registry
from mpslint.config import Settings
from mpslint.engine import check_text

from clitools import cli_runner

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "mpslint" / "checks"


def test_every_page_names_one_class_and_every_class_one_page():
    named = registry.CHECKS
    assert len(set(named.values())) == len(named), "two pages name the same class"
    classes = {f"{cls.__module__.rsplit('.', 1)[-1]}:{cls.__name__}" for cls in registry.rule_classes()}
    assert classes == set(named.values())


def test_rule_modules_do_not_repeat_the_pages():
    # The code and name are the page's: a class that says them too can drift from it.
    for path in sorted(CHECKS.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^\s+(CODE|NAME)\s*=", text, re.MULTILINE), f"{path.name} declares CODE/NAME"


def test_every_module_with_a_rule_is_named_by_a_page():
    modules = {check.split(":", 1)[0] for check in registry.CHECKS.values()}
    for path in sorted(CHECKS.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if re.search(r"^class \w+\((\w+\.)?(Rule|_\w+Rule)\):", text, re.MULTILINE):
            assert path.stem in modules, f"{path.name} defines a rule no page in rules/ names"


PAGE = '''\
---
code: MPS999
name: probe-call
summary: "A call of `probe()`"
fix: none
since: 0.9.0
check: probe_call:ProbeCall
---

## What it does

Reports `probe()`.

## Why it matters on MPS

It does not; this page exists for a test.

## Example

```python
probe()
```

## Use instead

```python
other()
```
'''

MODULE = '''\
"""A call of ``probe()`` (a test rule)."""

import ast

from mpslint.checks.base import Rule


class ProbeCall(Rule):
    TRIGGERS = ("probe",)

    def visit_Call(self, node: ast.Call) -> None:
        if type(node.func) is ast.Name and node.func.id == "probe":
            self.report(node, "probe() called")
'''


@pytest.fixture
def new_rule(tmp_path, monkeypatch):
    """A rule added the documented way: a page in rules/ and a module in mpslint/checks/."""
    pages = tmp_path / "rules"
    pages.mkdir()
    for page in catalog.rules_dir().glob("MPS*.md"):
        (pages / page.name).write_text(page.read_text(encoding="utf-8"), encoding="utf-8")
    (pages / "MPS999.md").write_text(PAGE, encoding="utf-8")
    modules = tmp_path / "checks"
    modules.mkdir()
    (modules / "probe_call.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.setattr(catalog, "rules_dir", lambda: pages)
    monkeypatch.setattr(mpslint.checks, "__path__", [*mpslint.checks.__path__, str(modules)])
    _reload(monkeypatch)
    yield
    monkeypatch.undo()
    _reload(None)


def _reload(monkeypatch):
    for cached in (catalog.load, registry.rule_classes, registry.rule_codes, registry.codes_by_name, registry.name_of):
        cached.cache_clear()
    tables = registry._read_catalog()
    if monkeypatch is not None:
        for name, value in zip(("CATALOG", "ENGINE_CODES", "CHECKS"), tables):
            monkeypatch.setattr(registry, name, value)


def test_adding_a_rule_is_a_page_and_a_module(new_rule):
    assert registry.name_of("MPS999") == "probe-call"
    [diagnostic] = check_text("probe()\n", "a.py", Settings(select=frozenset({"MPS999"}))).diagnostics
    assert (diagnostic.code, diagnostic.message) == ("MPS999", "probe() called")
    assert "| [MPS999](rules/MPS999.md) | probe-call | A call of `probe()` | – |" in catalog.readme_table()
    from mpslint.cli import main

    result = cli_runner().invoke(main, ["rule", "probe-call"])
    assert result.exit_code == 0 and "Reports `probe()`." in result.output


# Pairs of rules that may report the very same node, because they report different problems there.
DIFFERENT_FINDINGS = {
    frozenset({"MPS104", "MPS203"}): "a CUDA-only synchronize that also runs every step: migrating the call "
                                     "(MPS104) keeps the per-step wait (MPS203)",
    frozenset({"MPS202", "MPS301"}): "`.numpy()` of a device tensor every step: it raises on MPS (MPS301), and the "
                                     "`.cpu()` it needs copies every step (MPS202), so the fixed code adds no finding",
    frozenset({"MPS101", "MPS404"}): "`.cuda()` in a Dataset or collate_fn run by workers: migrating it to "
                                     "`.to(device)` (MPS101) still places the tensor in a worker (MPS404)",
}


def _texts():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for code, doc in sorted(catalog.load().items()):
        for title in ("Example", "Use instead"):
            for i, block in enumerate(doc.examples(title)):
                yield f"{code}-{title}-{i}", block
    yield "one expression, two syncs", textwrap.dedent(
        """\
        import torch
        model = torch.nn.Linear(3, 3).to("cuda")
        for x, y in loader:
            x = x.to("cuda")
            out = model(x)
            index = (out == y).nonzero().item()
            arr = out.numpy()
            loss = out.sum()
            loss.backward()
            torch.cuda.synchronize()
        """
    )


def overlaps(text: str):
    by_node = defaultdict(set)
    for d in check_text(text, "a.py", Settings()).diagnostics:
        by_node[(d.location, d.end_location)].add(d.code)
    return [codes for codes in by_node.values() if len(codes) > 1 and frozenset(codes) not in DIFFERENT_FINDINGS]


@pytest.mark.parametrize("name,text", list(_texts()), ids=lambda v: v if isinstance(v, str) and len(v) < 50 else "")
def test_no_two_rules_report_the_same_node(name, text):
    assert overlaps(text) == []
