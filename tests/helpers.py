"""Small helpers the tests share: check or fix a snippet with chosen settings."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from typing import Iterable, List, Optional

from mpslint.config import Settings, parse_torch_version, select_codes
from mpslint.diagnostic import Diagnostic
from mpslint.engine import check_text
from mpslint.fixer import FixOutcome, fix_text


def settings(select: Optional[Iterable[str]] = None, torch_version: Optional[str] = None, **options) -> Settings:
    base = Settings(select=select_codes(select))
    if torch_version is not None:
        base = replace(base, torch_version=parse_torch_version(torch_version))
    return replace(base, **options) if options else base


def check(source: str, select: Optional[Iterable[str]] = None, *, path: str = "example.py", **kw) -> List[Diagnostic]:
    return check_text(textwrap.dedent(source), path, settings(select, **kw)).diagnostics


def codes(source: str, select: Optional[Iterable[str]] = None, **kw) -> List[str]:
    return [d.code for d in check(source, select, **kw)]


def rows(source: str, code: str, **kw) -> List[int]:
    """The rows where ``code`` is reported."""
    return [d.location.row for d in check(source, [code], **kw) if d.code == code]


def fix(source: str, select: Optional[Iterable[str]] = None, *, unsafe: bool = False, path: str = "example.py", **kw) -> FixOutcome:
    return fix_text(textwrap.dedent(source), path, settings(select, **kw), unsafe=unsafe)


def write_tree(root: Path, files: dict) -> None:
    """Write ``{relative path: dedented text}`` under ``root``, making folders as needed."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def fresh_project():
    """No summary cache directory and no module layout left over from another test."""
    from mpslint.analysis.project import layout, model

    model.use_cache_dir(None)
    layout.clear()
    yield
    model.use_cache_dir(None)
    layout.clear()
