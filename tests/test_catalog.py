"""The rule catalog in rules/ is the spec, and these tests execute it.

Every *Example* block must report the rule, every *Use instead* block must
not, and where the rule has a fix, fixing the Example must give the Use
instead exactly.
"""

from __future__ import annotations

import pytest

from mpslint import catalog, registry
from mpslint.config import Settings
from mpslint.engine import check_text
from mpslint.fixer import fix_text

from helpers import settings

DOCS = catalog.load()


def _settings_for(doc) -> Settings:
    # Engine codes (MPS000, MPS900) are always reported, whatever is selected.
    select = None if doc.code in registry.ENGINE_CODES else [doc.code]
    return settings(select, torch_version=doc.front.get("example-torch-version"))


def test_every_rule_has_a_doc_and_every_doc_a_rule():
    documented = set(DOCS)
    implemented = set(registry.rule_codes()) | set(registry.ENGINE_CODES)
    assert implemented - documented == set(), "rules without a doc in rules/"
    assert documented - implemented == set(), "docs in rules/ for rules that do not exist"


def test_the_registry_catalog_names_every_rule_class():
    # Codes and names are read from registry.CATALOG so that start-up need not import the rules.
    assert registry.FAMILIES == registry.SHIPPED
    assert registry.CATALOG == {cls.CODE: cls.NAME for cls in registry.rule_classes()}


def test_codes_and_names_need_no_rule_imported():
    import subprocess
    import sys

    probe = ("import sys; from mpslint import registry; registry.rule_codes(); registry.name_of('MPS101'); "
             "registry.codes_by_name(); print(sorted(m for m in sys.modules if m.startswith(('libcst', 'mpslint.checks'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("code", sorted(DOCS))
def test_doc_front_matter_and_sections(code):
    doc = DOCS[code]
    assert doc.path.name == f"{code}.md"
    assert doc.name == registry.name_of(code)
    assert doc.summary
    assert doc.fix in {"none", "safe", "unsafe", "sometimes"}
    for title in catalog.REQUIRED_SECTIONS:
        assert doc.section(title).strip(), f"{code}: section {title!r} is empty or missing"


def _example_cases():
    for code, doc in sorted(DOCS.items()):
        for i, block in enumerate(doc.examples("Example")):
            yield pytest.param(code, block, id=f"{code}-example-{i}")


def _use_instead_cases():
    for code, doc in sorted(DOCS.items()):
        for i, block in enumerate(doc.examples("Use instead")):
            yield pytest.param(code, block, id=f"{code}-use-instead-{i}")


@pytest.mark.parametrize("code,block", list(_example_cases()))
def test_example_reports_the_rule(code, block):
    found = [d.code for d in check_text(block, "example.py", _settings_for(DOCS[code])).diagnostics]
    assert code in found


@pytest.mark.parametrize("code,block", list(_use_instead_cases()))
def test_use_instead_does_not_report_the_rule(code, block):
    found = [d.code for d in check_text(block, "example.py", _settings_for(DOCS[code])).diagnostics]
    assert code not in found


def _fix_cases():
    for code, doc in sorted(DOCS.items()):
        if doc.fix == "none":
            continue
        examples, fixed = doc.examples("Example"), doc.examples("Use instead")
        for i, (before, after) in enumerate(zip(examples, fixed)):
            yield pytest.param(code, before, after, id=f"{code}-fix-{i}")


@pytest.mark.parametrize("code,before,after", list(_fix_cases()))
def test_fixing_the_example_gives_use_instead(code, before, after):
    doc = DOCS[code]
    outcome = fix_text(before, "example.py", _settings_for(doc), unsafe=doc.fix in {"unsafe", "sometimes"})
    assert outcome.error is None
    assert outcome.text == after


def test_front_matter_reads_as_yaml_reads_it():
    """The catalog's small reader (linting must not import a YAML library) agrees with a real YAML parser."""
    yaml = pytest.importorskip("yaml")
    for doc in catalog.load().values():
        text = doc.path.read_text(encoding="utf-8")
        front = yaml.safe_load(text.split("---\n")[1])
        assert {k: str(v) for k, v in front.items()} == doc.front, doc.code
        assert '\\"' not in doc.summary
