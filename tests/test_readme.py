"""README.md stays true: the rule table is the catalog's, its commands match .ci/run, and it links the docs."""

from __future__ import annotations

import re
from pathlib import Path

from mpslint import catalog

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_rule_table_is_generated_from_the_catalog():
    table = re.search(r"<!-- rules:start -->\n(.*?)<!-- rules:end -->", README, re.DOTALL).group(1)
    assert table == catalog.readme_table(), "run `python -m mpslint.catalog --write`"


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = 'python -m pip install -e ".[test]" "torch==2.13.0" && python -m pytest'
    assert command in README
    assert command in ci


def test_readme_example_file_exists():
    assert "mpslint fixtures/cuda/train_cuda.py" in README
    assert (ROOT / "fixtures" / "cuda" / "train_cuda.py").exists()


def test_the_test_command_says_what_it_costs_and_how_to_skip_the_download():
    command = 'python -m pip install -e ".[test]" "torch==2.13.0" && python -m pytest'
    after = README.split(command, 1)[1].split("\n\n", 2)[1]  # the paragraph right after the command
    assert "minutes" in after
    assert "download" in after and "transformers" in after
    assert '`python -m pytest -m "not corpus"`' in after


def test_readme_links_every_docs_page_and_only_pages_that_exist():
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)(?:#[^)]*)?\)", README))
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert linked - pages == set(), "README links docs pages that do not exist"
    assert pages - linked == set(), "README's Documentation list leaves out these pages"


def test_readme_stays_a_short_introduction():
    # The reference (options, config keys, formats, editors, verify, report) lives in docs/;
    # README is what a newcomer reads in five minutes. Add reference content to the docs pages.
    assert len(README.splitlines()) <= 200
