"""File discovery: suffixes, default and configured excludes, .gitignore (nested), explicit files, robustness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpslint import files as files_module
from mpslint.config import ConfigResolver, Overrides
from mpslint.files import discover


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def found(root: Path, *paths: str, force_exclude: bool = False, overrides: Overrides = Overrides()):
    os.chdir(root)
    result = discover(list(paths) or ["."], ConfigResolver(overrides, cwd=root), force_exclude=force_exclude)
    return [p for p, _ in result.files], result.errors


@pytest.fixture(autouse=True)
def keep_cwd(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)


def test_python_files_only_sorted(tmp_path):
    touch(tmp_path, "b.py", "a.pyi", "c.txt", "pkg/z.py", "pkg/a.py", "README.md", "setup.cfg", "pkg/sub/m.py")
    files, errors = found(tmp_path)
    assert files == ["a.pyi", "b.py", "pkg/a.py", "pkg/sub/m.py", "pkg/z.py"]
    assert errors == []


def test_default_excludes(tmp_path):
    touch(
        tmp_path,
        "src/ok.py",
        ".git/hooks/x.py",
        ".venv/lib/x.py",
        "venv/x.py",
        "build/lib/x.py",
        "dist/x.py",
        "lib/site-packages/x.py",
        "node_modules/x.py",
        "src/__pycache__/x.py",
        ".mpslint_cache/x.py",
        ".tox/x.py",
        ".nox/x.py",
        ".mypy_cache/x.py",
    )
    assert found(tmp_path)[0] == ["src/ok.py"]


def test_configured_excludes(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.mpslint]\nextend-exclude = ['gen', 'legacy/*.py', '*_pb2.py']\n")
    touch(tmp_path, "src/ok.py", "src/gen/x.py", "legacy/old.py", "legacy/keep/new.py", "src/msg_pb2.py", "build/x.py")
    assert found(tmp_path)[0] == ["legacy/keep/new.py", "src/ok.py"]


def test_cli_exclude_replaces_defaults(tmp_path):
    touch(tmp_path, "build/x.py", "gen/y.py", "z.py")
    assert found(tmp_path, overrides=Overrides(exclude=("gen",)))[0] == ["build/x.py", "z.py"]
    assert found(tmp_path, overrides=Overrides(extend_exclude=("gen",)))[0] == ["z.py"]


def test_nested_project_config_governs_its_subtree(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.mpslint]\n")
    (tmp_path / "sub" / "mpslint.toml").parent.mkdir()
    (tmp_path / "sub" / "mpslint.toml").write_text("extend-exclude = ['scripts']\n")
    touch(tmp_path, "scripts/a.py", "sub/scripts/b.py", "sub/c.py")
    assert found(tmp_path)[0] == ["scripts/a.py", "sub/c.py"]


def test_explicit_files_are_checked_unless_force_exclude(tmp_path):
    touch(tmp_path, "build/gen.py", "notes.txt")
    assert found(tmp_path, "build/gen.py")[0] == ["build/gen.py"]
    assert found(tmp_path, "build/gen.py", force_exclude=True)[0] == []
    # A named file is checked whatever its suffix (like Ruff); pre-commit filters by type itself.
    assert found(tmp_path, "notes.txt")[0] == ["notes.txt"]
    # A named directory that is excluded is walked unless --force-exclude.
    assert found(tmp_path, "build")[0] == ["build/gen.py"]
    assert found(tmp_path, "build", force_exclude=True)[0] == []


def test_gitignore_root_and_nested_with_negation(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("scratch/\n*_generated.py\n")
    touch(tmp_path, "scratch/a.py", "src/b.py", "src/c_generated.py", "src/vendor/d.py", "src/vendor/keep.py", "src/vendor/e_generated.py")
    (tmp_path / "src" / "vendor" / ".gitignore").write_text("*.py\n!keep.py\n!e_generated.py\n")
    assert found(tmp_path)[0] == ["src/b.py", "src/vendor/e_generated.py", "src/vendor/keep.py"]


def test_gitignore_of_the_repository_applies_when_walking_a_subdirectory(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("src/skip/\n")
    touch(tmp_path, "src/skip/a.py", "src/b.py")
    assert found(tmp_path / "src", ".")[0] == ["b.py"]


def test_gitignored_explicit_file_only_dropped_with_force_exclude(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("local.py\n")
    touch(tmp_path, "local.py")
    assert found(tmp_path, "local.py")[0] == ["local.py"]
    assert found(tmp_path, "local.py", force_exclude=True)[0] == []


def test_respect_gitignore_false(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("scratch/\n")
    (tmp_path / "mpslint.toml").write_text("respect-gitignore = false\n")
    touch(tmp_path, "scratch/a.py")
    assert found(tmp_path)[0] == ["scratch/a.py"]


def test_missing_path_is_an_error(tmp_path):
    touch(tmp_path, "a.py")
    files, errors = found(tmp_path, "a.py", "nope.py")
    assert files == ["a.py"]
    assert errors == [("nope.py", "No such file or directory")]


def test_unreadable_directory_is_reported_and_skipped(tmp_path, monkeypatch):
    touch(tmp_path, "locked/a.py", "open/b.py")
    real = os.scandir

    def scandir(path):
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(files_module.os, "scandir", scandir)
    files, errors = found(tmp_path)
    assert files == ["open/b.py"]
    assert errors == [("locked", "Permission denied")]


def test_broken_symlink_is_reported(tmp_path):
    touch(tmp_path, "a.py")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "gone.py")
    files, errors = found(tmp_path)
    assert files == ["a.py"]
    assert errors == [("dangling.py", "broken symbolic link")]


def test_symlink_loops_end(tmp_path):
    touch(tmp_path, "pkg/a.py")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg")
    (tmp_path / "pkg" / "up").symlink_to(tmp_path)
    files, errors = found(tmp_path)
    assert files == ["pkg/a.py"]
    assert errors == []


def test_symlinked_directory_is_followed_once(tmp_path):
    touch(tmp_path, "real/a.py")
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    files, _ = found(tmp_path, "alias")
    assert files == ["alias/a.py"]


def test_same_file_named_twice_is_checked_once(tmp_path):
    touch(tmp_path, "a.py")
    assert found(tmp_path, "a.py", "./a.py", ".")[0] == ["a.py"]
