"""The prefilter is an optimisation only: it never changes what is reported.

A rule runs on a file only if one of its TRIGGERS strings and one string of
each of its REQUIRES groups occur in the text (``engine.rules_for_text``).
Here every input is checked twice, with and without the prefilter, and the
diagnostics must be identical. Inputs: every file under fixtures/ (including
golden ``.fixed.py`` outputs and the verifier's scripts) and every code block
of every rule doc; tests/test_corpus.py does the same for every file of the
real corpus.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mpslint import catalog, registry
from mpslint.config import Settings, parse_torch_version
from mpslint.checks.base import Rule
from mpslint.engine import INVALID_SYNTAX, check_text, rules_for_text, trigger_groups


ROOT = Path(__file__).resolve().parent.parent
DOCS = catalog.load()
ALL = Settings()


def assert_prefilter_is_invisible(text: str, path: str, settings: Settings = ALL) -> None:
    filtered = check_text(text, path, settings, prefilter=True)
    full = check_text(text, path, settings, prefilter=False)
    assert filtered.diagnostics == full.diagnostics, _difference(filtered.diagnostics, full.diagnostics)


def _difference(filtered, full) -> str:
    a = {(d.code, d.location.row, d.location.column, d.message) for d in filtered}
    b = {(d.code, d.location.row, d.location.column, d.message) for d in full}
    return f"only with the prefilter: {sorted(a - b)}; only without: {sorted(b - a)}"


def _fixture_files():
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield pytest.param(path, id=str(path.relative_to(ROOT / "fixtures")))


@pytest.mark.parametrize("path", list(_fixture_files()))
def test_fixture_results_do_not_depend_on_the_prefilter(path):
    text = path.read_text(encoding="utf-8")
    settings = ALL
    if "torch-version=" in text.split("\n", 1)[0]:
        value = text.split("torch-version=", 1)[1].split(",", 1)[0].split()[0]
        settings = replace(settings, torch_version=None if value == "none" else parse_torch_version(value))
    assert_prefilter_is_invisible(text, str(path), settings)


def _doc_blocks():
    for code, doc in sorted(DOCS.items()):
        for title in ("Example", "Use instead"):
            for i, block in enumerate(doc.examples(title)):
                yield pytest.param(code, block, id=f"{code}-{title.lower().replace(' ', '-')}-{i}")


@pytest.mark.parametrize("code,block", list(_doc_blocks()))
def test_rule_doc_results_do_not_depend_on_the_prefilter(code, block):
    version = DOCS[code].front.get("example-torch-version")
    settings = replace(ALL, torch_version=parse_torch_version(version)) if version else ALL
    assert_prefilter_is_invisible(block, "example.py", settings)


def test_a_file_without_any_trigger_still_reports_its_syntax_error():
    # No rule runs on it, but a file that does not parse never passes (rules/MPS000.md).
    result = check_text("def broken(:\n    return 1\n", "plain.py", replace(ALL, select=frozenset()), prefilter=True)
    assert not result.parsed and [d.code for d in result.diagnostics] == [INVALID_SYNTAX]


@pytest.mark.parametrize("cls", registry.rule_classes(), ids=lambda cls: cls.CODE)
def test_every_rule_declares_triggers_or_says_why_not(cls):
    if not trigger_groups(cls):
        reason = getattr(cls, "NO_TRIGGERS", "")
        assert reason.strip(), f"{cls.CODE} has no TRIGGERS or REQUIRES: it runs on every file; set NO_TRIGGERS to say why"
        return
    assert isinstance(cls.TRIGGERS, tuple) and isinstance(cls.REQUIRES, tuple)
    for group in (cls.TRIGGERS, *cls.REQUIRES):
        # An empty group can never match and would silently turn the rule off.
        assert group is cls.TRIGGERS or (isinstance(group, tuple) and group), f"{cls.CODE}: empty REQUIRES group"
        for trigger in group:
            # An empty string occurs in every text and would silently turn the prefilter off.
            assert isinstance(trigger, str) and trigger, f"{cls.CODE}: bad trigger {trigger!r}"


@pytest.mark.parametrize("cls", registry.rule_classes(), ids=lambda cls: cls.CODE)
def test_every_example_of_a_rule_contains_its_triggers(cls):
    """Each Example block reports its rule, so the prefilter must let it through: every group must occur in it."""
    doc = DOCS.get(cls.CODE)
    if doc is None:
        pytest.skip(f"{cls.CODE} has no doc yet (tests/test_catalog.py reports that)")
    if not trigger_groups(cls):
        pytest.skip(f"{cls.CODE} has no TRIGGERS: {cls.NO_TRIGGERS}")
    blocks = doc.examples("Example")
    assert blocks, f"rules/{cls.CODE}.md has no Example block"
    for i, block in enumerate(blocks):
        missing = [group for group in trigger_groups(cls) if not any(t in block for t in group)]
        assert not missing, f"Example {i} of {cls.CODE} contains none of {missing[0]}"
        assert rules_for_text(block, [cls]) == [cls]


def test_a_rule_runs_only_when_every_group_occurs():
    class Needs(Rule):
        CODE = "MPS999"
        NAME = "needs"
        TRIGGERS = ("alpha", "beta")
        REQUIRES = (("gamma",), ("delta", "epsilon"))

    assert rules_for_text("beta gamma epsilon", [Needs]) == [Needs]
    assert rules_for_text("alpha delta", [Needs]) == []  # no gamma
    assert rules_for_text("gamma delta", [Needs]) == []  # no trigger

    class OnlyRequires(Rule):
        CODE = "MPS998"
        NAME = "only-requires"
        REQUIRES = (("gamma",),)

    assert rules_for_text("gamma", [OnlyRequires]) == [OnlyRequires]
    assert rules_for_text("delta", [OnlyRequires]) == []
