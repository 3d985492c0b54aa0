"""README.md stays true: the rule table is the catalog's, and its commands match .ci/run."""

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
