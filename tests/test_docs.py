"""The documentation site (mkdocs.yml, docs/) builds and stays complete.

`mkdocs build --strict` fails on a broken link, a missing anchor or a page left out of the
navigation; the rule pages are generated from rules/*.md by docs/_hooks/rule_pages.py. The
reference pages must name every option of `mpslint check`, every config key and every output
format, and A Ruff user's table every `ruff check` option.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from mpslint import catalog
from mpslint.cli import main
from mpslint.config.table import _SPECIAL_KEYS
from mpslint.config.values import settings_fields
from mpslint.output import FORMATS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# `ruff check --help` of Ruff 0.17.6, every option (the table must say what mpslint does with each).
RUFF_CHECK_OPTIONS = (
    "--fix", "--no-fix", "--unsafe-fixes", "--no-unsafe-fixes", "--show-fixes", "--no-show-fixes",
    "--diff", "-w", "--watch", "--fix-only", "--no-fix-only", "--ignore-noqa", "--output-format",
    "-o", "--output-file", "--target-version", "--preview", "--no-preview", "--extension",
    "--statistics", "--add-noqa", "--add-ignore", "--show-files", "--show-settings", "-h", "--help",
    "--select", "--ignore", "--extend-select", "--per-file-ignores", "--extend-per-file-ignores",
    "--fixable", "--unfixable", "--extend-fixable", "--exclude", "--extend-exclude",
    "--respect-gitignore", "--no-respect-gitignore", "--force-exclude", "--no-force-exclude",
    "-n", "--no-cache", "--cache-dir", "--stdin-filename", "-e", "--exit-zero",
    "--exit-non-zero-on-fix", "-v", "--verbose", "-q", "--quiet", "-s", "--silent", "--config",
    "--isolated", "--color",
)
# `ruff config` and `ruff config lint` keys that a linter could share (per-linter tables and
# deprecated keys are rows of their own in the table, by group).
RUFF_CONFIG_KEYS = (
    "select", "extend-select", "ignore", "per-file-ignores", "extend-per-file-ignores", "exclude",
    "extend-exclude", "include", "extend-include", "respect-gitignore", "force-exclude", "extend",
    "target-version", "per-file-target-version", "cache-dir", "output-format", "fix", "unsafe-fixes",
    "fix-only", "show-fixes", "lint.fixable", "lint.unfixable", "lint.extend-fixable",
    "lint.extend-safe-fixes", "lint.extend-unsafe-fixes", "lint.external", "preview",
    "lint.explicit-preview-rules", "required-version", "output-prefer-rule-codes", "extension",
    "lint.task-tags", "lint.dummy-variable-rgx", "lint.allowed-confusables", "lint.logger-objects",
    "lint.typing-modules", "lint.typing-extensions", "lint.future-annotations", "builtins",
    "namespace-packages", "src", "line-length", "indent-width", "format", "analyze",
    "lint.extend-ignore", "lint.ignore-init-module-imports",
)


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def check_options():
    parent = click.Context(main, **main.context_settings)
    command = main.get_command(parent, "check")
    ctx = click.Context(command, parent=parent)  # `-h` comes from the group's help_option_names
    names = []
    for param in [*command.params, command.get_help_option(ctx)]:
        if isinstance(param, click.Option):
            names.extend(param.opts + param.secondary_opts)
    return names


def config_keys():
    return sorted(set(_SPECIAL_KEYS) | set(settings_fields()) | {"extend"})


def mentions(text: str, name: str) -> bool:
    """``name`` in code (`--select`, `--select CODES`, `--config "K = V"`), not a longer option."""
    return re.search(r"`" + re.escape(name) + r"(`|[ =\[])", text) is not None


def test_check_options_are_known():
    # The tests below would pass on an empty list.
    assert {"--fix", "--select", "--no-respect-gitignore", "-o", "-h", "--watch"} <= set(check_options())


@pytest.mark.parametrize("name", ["usage.md", "ruff.md"])
def test_every_check_option_is_documented(name):
    text = page(name)
    missing = [opt for opt in check_options() if not mentions(text, opt)]
    assert not missing, f"docs/{name} does not document {missing} (see `mpslint check --help`)"


def test_every_subcommand_is_in_the_command_line_reference():
    text = page("usage.md")
    commands = main.list_commands(click.Context(main))
    assert {"check", "rule", "clean", "verify", "report", "server"} <= set(commands)
    missing = [c for c in commands if f"mpslint {c}" not in text]
    assert not missing, f"docs/usage.md does not mention {missing}"


@pytest.mark.parametrize("name", ["configuration.md", "ruff.md"])
def test_every_config_key_is_documented(name):
    text = page(name)
    keys = config_keys()
    assert {"select", "torch-version", "device-helper", "extend", "respect-gitignore"} <= set(keys)
    missing = [key for key in keys if not mentions(text, key)]
    assert not missing, f"docs/{name} does not document the config keys {missing}"


def test_every_output_format_is_documented():
    text = page("output-formats.md")
    missing = [fmt for fmt in FORMATS if not mentions(text, fmt)]
    assert not missing, f"docs/output-formats.md does not describe {missing}"


def test_the_ruff_table_has_a_row_for_every_ruff_option_and_key():
    text = page("ruff.md")
    rows = "\n".join(line for line in text.splitlines() if line.startswith("| `"))
    missing = [opt for opt in RUFF_CHECK_OPTIONS if not mentions(rows, opt)]
    assert not missing, f"docs/ruff.md has no row for `ruff check` {missing}"
    missing = [key for key in RUFF_CONFIG_KEYS if not mentions(rows, key)]
    assert not missing, f"docs/ruff.md has no row for Ruff's config keys {missing}"
    # Each row says what mpslint does: a third column that is not empty.
    for line in rows.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]
        assert len(cells) == 3 and all(cells), line


def test_every_page_is_in_the_navigation():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert "usage.md" in pages
    missing = [p for p in pages if f": {p}" not in config]
    assert not missing, f"mkdocs.yml's nav leaves out {missing}"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs")
    out = tmp_path_factory.mktemp("site")
    before = set(os.listdir(ROOT))
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(os.listdir(ROOT)) == before, "the build wrote into the repository"
    return out


def test_site_builds_strict_with_a_page_per_rule(site):
    index = (site / "rules" / "index.html").read_text(encoding="utf-8")
    for code, doc in catalog.load().items():
        html = (site / "rules" / code / "index.html").read_text(encoding="utf-8")
        assert f"{code} {doc.name}" in html
        assert "What it does" in html
        assert f'href="{code}/"' in index, f"rules/index.html does not link {code}"
    assert (site / "report.png").exists() and (site / "examples" / "mpslint-workflow.yml").exists()
    assert not (site / "_hooks").exists()


def test_site_has_every_page(site):
    for name in sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")):
        target = site / ("index.html" if name == "index.md" else name[: -len(".md")] + "/index.html")
        assert target.exists(), name
