"""Lint and fix (with unsafe fixes) every file of a large real corpus.

No internal error (MPS900) anywhere, every file that parsed before the fix
still parses after it, and every file gets the same findings with and
without the prefilter (the trigger strings).
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import libcst as cst
import pytest

from mpslint.config import Settings
from mpslint.engine import INTERNAL_ERROR, check_text
from mpslint.fixer import fix_text
from mpslint.source import DecodeError, SourceText

from corpus import corpus_dir

pytestmark = pytest.mark.corpus


def _lint_and_fix(path: str):
    try:
        source = SourceText.decode(Path(path).read_bytes())
    except DecodeError:
        return path, "undecodable", [], None, None
    settings = Settings()
    result = check_text(source.text, path, settings, prefilter=False)
    filtered = check_text(source.text, path, settings)
    expected = result.diagnostics
    prefilter_changed = None
    if _keys(filtered.diagnostics) != _keys(expected):
        prefilter_changed = f"only without the prefilter: {sorted(set(_keys(expected)) - set(_keys(filtered.diagnostics)))}"
    errors = [d.message for d in result.diagnostics if d.code == INTERNAL_ERROR]
    broken_by_fix = None
    if result.parsed and any(d.fix for d in result.diagnostics):
        outcome = fix_text(source.text, path, settings, unsafe=True, newline=source.newline, first_check=result.diagnostics)
        if outcome.changed:
            try:
                cst.parse_module(outcome.text)
            except Exception as exc:  # noqa: BLE001 - any parse failure is the bug we look for
                broken_by_fix = str(exc).splitlines()[0]
        if outcome.error:
            errors.append(outcome.error)
    parsed = "parsed" if result.parsed else "syntax-error"
    return path, parsed, errors, broken_by_fix, prefilter_changed


def _keys(diagnostics):
    return sorted((d.code, d.location.row, d.location.column, d.message) for d in diagnostics)


@pytest.fixture(scope="module")
def results():
    root = corpus_dir()
    files = sorted(str(p) for p in root.rglob("*.py"))
    assert len(files) > 1000
    workers = max(1, min(os.cpu_count() or 1, 4))
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_lint_and_fix, files, chunksize=16))


def test_whole_corpus_lints_and_fixes_without_internal_errors(results):
    internal = [(p, e) for p, _, e, _, _ in results if e]
    broken = [(p, b) for p, _, _, b, _ in results if b]
    assert not internal, internal[:5]
    assert not broken, broken[:5]
    assert sum(1 for _, state, _, _, _ in results if state == "parsed") > 0.99 * len(results)


def test_whole_corpus_results_do_not_depend_on_the_prefilter(results):
    changed = [(p, c) for p, _, _, _, c in results if c]
    assert not changed, changed[:5]
