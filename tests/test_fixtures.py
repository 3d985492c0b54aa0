"""Every fixture in fixtures/ is a spec with inline expectations.

A line that must be reported ends with ``# expect: MPS101`` (several codes:
``# expect: MPS101, MPS105``); every other line must stay silent. A first-line
comment ``# fixture: torch-version=2.4, unsafe-fixes, report-interval-guarded``
sets the settings. As in the repository's own configuration, fixtures target
the newest torch mpslint knows unless they say otherwise (``torch-version=none``:
a project that declares no floor). Where ``name.fixed.py`` exists beside ``name.py``, fixing
``name.py`` must give it exactly. On every fixture the fixer invariants hold:
the result parses, a second fix changes nothing, and none of the fixed codes
is reported again.

fixtures/verify/ holds scripts for the runtime verifier; they have their own tests.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from mpslint.config import Settings, parse_torch_version
from mpslint.config.torch_version import newest_known_torch
from mpslint.engine import check_text
from mpslint.fixer import fix_text

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>MPS\d{3}(?:\s*,\s*MPS\d{3})*)")
HEADER = re.compile(r"^#\s*fixture:\s*(?P<options>.*)$")


def fixtures():
    for path in sorted(ROOT.rglob("*.py")):
        if path.name.endswith(".fixed.py") or "verify" in path.relative_to(ROOT).parts:
            continue
        yield pytest.param(path, id=str(path.relative_to(ROOT)))


def load(path: Path):
    text = path.read_text(encoding="utf-8")
    settings = Settings(torch_version=newest_known_torch())
    unsafe = False
    first = text.splitlines()[0] if text else ""
    header = HEADER.match(first)
    if header:
        for option in filter(None, (o.strip() for o in header.group("options").split(","))):
            key, _, value = option.partition("=")
            if key == "torch-version":
                settings = replace(settings, torch_version=None if value == "none" else parse_torch_version(value))
            elif key == "unsafe-fixes":
                unsafe = True
            elif key == "report-interval-guarded":
                settings = replace(settings, report_interval_guarded=True)
            else:
                raise AssertionError(f"{path}: unknown fixture option {key!r}")
    expected = Counter()
    for row, line in enumerate(text.splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in re.split(r"\s*,\s*", match.group("codes")):
                expected[(row, code)] += 1
    return text, settings, unsafe, expected


@pytest.mark.parametrize("path", list(fixtures()))
def test_fixture_expectations(path):
    text, settings, _, expected = load(path)
    diagnostics = check_text(text, str(path), settings).diagnostics
    actual = Counter((d.location.row, d.code) for d in diagnostics)
    missing = sorted((expected - actual).elements())
    unexpected = sorted((actual - expected).elements())
    assert not missing and not unexpected, f"missing={missing} unexpected={unexpected}"


@pytest.mark.parametrize("path", list(fixtures()))
def test_fixer_invariants(path):
    text, settings, unsafe, _ = load(path)
    outcome = fix_text(text, str(path), settings, unsafe=unsafe)
    assert outcome.error is None
    cst.parse_module(outcome.text)
    again = fix_text(outcome.text, str(path), settings, unsafe=unsafe)
    assert again.text == outcome.text, "a second fix changed the file"
    left = {d.code for d in check_text(outcome.text, str(path), settings).diagnostics if d.fix and d.fix.is_applicable(unsafe)}
    assert not left, f"fixable findings left after fixing: {left}"
    golden = path.with_name(path.name[: -len(".py")] + ".fixed.py")
    if golden.exists():
        assert outcome.text == golden.read_text(encoding="utf-8")
