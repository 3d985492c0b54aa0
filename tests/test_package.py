"""What ships around the code: the licence, the changelog, the GitHub Action and its example workflow.

The Action and the pre-commit hooks run mpslint with options of their own: each
command line they hold is parsed by the real CLI, so renaming an option breaks
this test, not a user's CI.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from mpslint.cli import main

yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parent.parent


def _parses(argv):
    """The check command accepts these arguments (click raises UsageError otherwise)."""
    assert argv[0] == "check", argv
    command = main.get_command(click.Context(main), "check")
    with click.Context(main) as parent:
        command.make_context("check", list(argv[1:]), parent=parent)


def test_license_is_the_mit_text_the_metadata_names():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text
    assert re.search(r'^license = "MIT"$', (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.M)


def test_changelog_keeps_a_changelog():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "https://keepachangelog.com/en/1.1.0/" in text
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert versions[0] == "Unreleased" and "0.1.0" in versions
    from mpslint import __version__

    assert __version__ in versions
    for heading in re.findall(r"^### (.+)$", text, re.M):
        assert heading in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_action_runs_mpslint_with_options_the_cli_has():
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    commands = [step["run"] for step in action["runs"]["steps"] if "mpslint check" in step.get("run", "")]
    assert len(commands) == 2
    formats = set()
    for command in commands:
        argv = shlex.split(command.replace("$MPSLINT_ARGS", "src/").replace('"$SARIF_FILE"', "out.sarif"))
        argv = argv[argv.index("mpslint") + 1 :]
        _parses(argv)
        formats.add(argv[argv.index("--output-format") + 1])
    assert formats == {"github", "sarif"}
    assert set(action["inputs"]) >= {"args", "version", "sarif-file"}


def test_example_workflow_uses_the_action_and_uploads_its_sarif():
    workflow = yaml.safe_load((REPO / "docs" / "examples" / "mpslint-workflow.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["mpslint"]["steps"]
    ours = next(step for step in steps if step.get("uses", "").startswith("mpslint/mpslint"))
    upload = next(step for step in steps if "upload-sarif" in step.get("uses", ""))
    assert upload["with"]["sarif_file"] == ours["with"]["sarif-file"]


def test_pre_commit_hooks_run_options_the_cli_has():
    for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")):
        argv = shlex.split(hook["entry"])
        assert argv[0] == "mpslint"
        _parses(argv[1:] + ["a.py"])
