"""What a Ruff user reaches for on the command line, with Ruff's semantics.

--config FILE or "key = value", extend in config files, --isolated,
--per-file-ignores, --respect-gitignore, --show-files, --show-settings,
--add-noqa, --ignore-noqa, --fix-only, -s/--silent, -n, --watch, clean,
colour, and a mistyped subcommand.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clitools import run

CUDA = "import torch\nx = torch.zeros(1).cuda()\n"
SYNC = (
    "import torch\n"
    "model = torch.nn.Linear(2, 2).to('mps')\n"
    "for batch in loader:\n"
    "    loss = model(batch.to('mps')).sum()\n"
    "    loss.backward()\n"
    "    print(loss.item())\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(CUDA, encoding="utf-8")
    return tmp_path


def codes(output: str):
    return [line.split(": ")[1].split()[0] for line in output.splitlines() if ": MPS" in line]


# --- --config FILE | "key = value", extend, --isolated --------------------------------------------


def test_config_inline_key_value_beats_the_config_file(project):
    (project / "pyproject.toml").write_text('[tool.mpslint]\nselect = ["MPS1"]\n', encoding="utf-8")
    (project / "b.py").write_text(SYNC, encoding="utf-8")
    assert "MPS101" in run("a.py", "b.py").stdout
    result = run("--config", "select = ['MPS2']", "a.py", "b.py")
    assert codes(result.stdout) == ["MPS201"]
    # Several, and a file together with inline values.
    (project / "other.toml").write_text('select = ["MPS1", "MPS2"]\n', encoding="utf-8")
    result = run("--config", "other.toml", "--config", 'ignore = ["MPS201"]', "a.py", "b.py")
    assert codes(result.stdout) == ["MPS101"]


def test_config_inline_mistakes_name_the_option(project):
    result = run("--config", "bogus = 1", "a.py")
    assert result.exit_code == 2
    assert "--config: unknown key `bogus`" in result.stderr
    result = run("--config", "select = [", "a.py")
    assert result.exit_code == 2 and "neither a file nor a valid TOML" in result.stderr
    result = run("--config", "missing.toml", "a.py")
    assert result.exit_code == 2 and "neither a file nor" in result.stderr


def test_extend_starts_from_another_config_file(project):
    (project / "pyproject.toml").write_text('[tool.mpslint]\nselect = ["MPS2"]\nextend-exclude = ["gen"]\n', encoding="utf-8")
    sub = project / "pkg"
    sub.mkdir()
    (sub / "mpslint.toml").write_text('extend = "../pyproject.toml"\nextend-exclude = ["old"]\n', encoding="utf-8")
    for folder in ("gen", "old", "new"):
        (sub / folder).mkdir()
        (sub / folder / "t.py").write_text(SYNC, encoding="utf-8")
    (sub / "a.py").write_text(CUDA, encoding="utf-8")
    result = run("pkg")
    # select from the base; both extend-exclude lists apply.
    assert result.stdout.count("MPS201") == 1 and "pkg/new/t.py" in result.stdout
    assert "MPS101" not in result.stdout


def test_extend_loop_is_an_error_that_names_the_files(project):
    (project / "mpslint.toml").write_text('extend = "other.toml"\n', encoding="utf-8")
    (project / "other.toml").write_text('extend = "mpslint.toml"\n', encoding="utf-8")
    result = run("a.py")
    assert result.exit_code == 2
    assert "`extend` makes a loop" in result.stderr and "other.toml" in result.stderr


def test_isolated_reads_no_config_file(project):
    (project / "mpslint.toml").write_text('select = ["MPS2"]\n', encoding="utf-8")
    assert "MPS101" not in run("a.py").stdout
    assert "MPS101" in run("--isolated", "a.py").stdout
    assert run("--isolated", "--config", "mpslint.toml", "a.py").exit_code == 2


def test_per_file_ignores_on_the_command_line(project):
    (project / "tests").mkdir()
    (project / "tests" / "t.py").write_text(CUDA, encoding="utf-8")
    (project / "mpslint.toml").write_text('[per-file-ignores]\n"a.py" = ["MPS1"]\n', encoding="utf-8")
    assert run(".").stdout.count("MPS101") == 1
    # --per-file-ignores replaces the config's table; --extend-per-file-ignores adds to it.
    out = run("--per-file-ignores", "tests/*:MPS101", ".").stdout
    assert "a.py" in out and "tests/t.py" not in out
    assert "All checks passed!" in run("--extend-per-file-ignores", "tests/*:MPS1", ".").stdout
    assert run("--per-file-ignores", "nocolon", ".").exit_code == 2


def test_respect_gitignore_switch_and_named_ignored_directories(project):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("generated/\n", encoding="utf-8")
    (project / "generated").mkdir()
    (project / "generated" / "g.py").write_text(CUDA, encoding="utf-8")
    assert "generated/g.py" not in run(".").stdout
    assert "generated/g.py" in run("--no-respect-gitignore", ".").stdout
    # A folder named on the command line is checked even if .gitignore ignores it (as Ruff does).
    assert "generated/g.py" in run("generated").stdout
    # ... unless the user asks excludes to apply to named paths (pre-commit).
    assert "generated/g.py" not in run("--force-exclude", "generated").stdout


# --- --show-files, --show-settings --------------------------------------------------------------


def test_show_files_lists_what_a_run_checks(project):
    (project / "build").mkdir()
    (project / "build" / "x.py").write_text(CUDA, encoding="utf-8")
    (project / "nb.ipynb").write_text("{}", encoding="utf-8")
    result = run("--show-files", ".")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == ["a.py", "nb.ipynb"]


def test_show_settings_prints_the_resolved_settings(project):
    (project / "pyproject.toml").write_text(
        '[tool.mpslint]\nselect = ["MPS1"]\ntorch-version = "2.4"\n[tool.mpslint.per-file-ignores]\n"a.py" = ["MPS104"]\n',
        encoding="utf-8",
    )
    result = run("--show-settings", "--ignore", "MPS108", ".")
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("Resolved settings for: a.py\n")
    assert f"Settings path: {project / 'pyproject.toml'}" in out
    assert '"MPS101",' in out and '"MPS108",' not in out and '"MPS201",' not in out
    assert "torch-version = '2.4'" in out
    assert "'a.py': ['MPS104']" in out


# --- --add-noqa, --ignore-noqa ----------------------------------------------------------------------


def test_add_noqa_comments_every_line_once_and_keeps_the_file_valid(project):
    source = (
        "import torch\n"
        "x = torch.zeros(1).cuda()  # noqa: MPS2\r\n"
        "y = torch.zeros(2).cuda()  # a comment\n"
        "z = torch.zeros(3).cuda()  # noqa\n"
        's = """\n.cuda()\n"""\n'
        "w = torch.zeros(4).cuda() + \\\n    torch.zeros(4).cuda()\n"
    )
    path = project / "a.py"
    path.write_bytes(source.encode("utf-8"))
    result = run("--add-noqa", "a.py")
    assert result.exit_code == 0, result.stderr
    assert "Added 3 noqa directives." in result.stderr
    text = path.read_bytes().decode("utf-8")
    assert "x = torch.zeros(1).cuda()  # noqa: MPS2, MPS101\r\n" in text  # line endings kept
    assert "y = torch.zeros(2).cuda()  # a comment  # noqa: MPS101\n" in text
    assert "z = torch.zeros(3).cuda()  # noqa\n" in text
    assert "w = torch.zeros(4).cuda() + \\\n    torch.zeros(4).cuda()  # noqa: MPS101\n" in text
    compile(text, "a.py", "exec")
    assert run("a.py").exit_code == 0
    # Never twice.
    assert "Added 0 noqa directives." in run("--add-noqa", "a.py").stderr
    assert path.read_bytes().decode("utf-8") == text
    # And --ignore-noqa sees through them all.
    assert run("--ignore-noqa", "a.py").stdout.count("MPS101") == 5


# --- --fix-only, -s, -n ------------------------------------------------------------------------


def test_fix_only_fixes_and_reports_nothing_else(project):
    (project / "b.py").write_text(CUDA + SYNC.replace("import torch\n", ""), encoding="utf-8")
    result = run("--fix-only", "b.py")
    assert result.exit_code == 0
    assert "Fixed 1 finding." in result.stdout and "MPS201" not in result.stdout
    assert ".cuda()" not in (project / "b.py").read_text(encoding="utf-8")
    assert run("b.py").exit_code == 1  # the sync is still there, only not reported by --fix-only
    assert run("--fix-only", "--exit-non-zero-on-fix", "a.py").exit_code == 1


def test_silent_prints_nothing_but_keeps_the_exit_code(project):
    for fmt in ("concise", "json"):
        result = run("-s", "--output-format", fmt, "a.py")
        assert (result.exit_code, result.stdout, result.stderr) == (1, "", "")
    (project / "ok.py").write_text("import torch\n", encoding="utf-8")
    assert run("--silent", "ok.py").exit_code == 0


def test_n_is_no_cache(project):
    run("-n", "a.py")
    assert not (project / ".mpslint_cache").exists()
    run("a.py")
    assert (project / ".mpslint_cache").exists()


# --- clean, a mistyped subcommand ---------------------------------------------------------------


def test_clean_removes_mpslints_caches_and_nothing_else(project):
    (project / "sub").mkdir()
    (project / "sub" / "b.py").write_text(CUDA, encoding="utf-8")
    run("a.py")
    run("--cache-dir", "sub/.mpslint_cache", "sub/b.py")
    foreign = project / "other" / ".mpslint_cache"
    foreign.mkdir(parents=True)
    (foreign / "keep.txt").write_text("mine", encoding="utf-8")
    assert (project / ".mpslint_cache").is_dir() and (project / "sub" / ".mpslint_cache").is_dir()
    result = run("clean")
    assert result.exit_code == 0
    assert not (project / ".mpslint_cache").exists() and not (project / "sub" / ".mpslint_cache").exists()
    assert (foreign / "keep.txt").exists()
    assert "Removing cache at: .mpslint_cache" in result.stderr


def test_mistyped_subcommand_is_a_usage_error_with_a_tip(project):
    result = run("reprot", ".")
    assert result.exit_code == 2
    assert "unrecognized subcommand 'reprot'" in result.stderr and "'report'" in result.stderr
    # A path of that name is a path; an unknown word far from any command is a path too (MPS001).
    (project / "reprot").mkdir()
    assert run("reprot").exit_code == 0
    assert "MPS001" in run("zzzz").stdout


# --- colour --------------------------------------------------------------------------------------


def test_colour_follows_color_no_color_and_force_color(project):
    esc = "\x1b["
    assert esc not in run("a.py").stdout  # not a terminal
    assert esc in run("--color", "always", "a.py").stdout
    assert esc in run("a.py", env={"FORCE_COLOR": "1"}).stdout
    assert esc not in run("--color", "never", "a.py", env={"FORCE_COLOR": "1"}).stdout
    assert esc not in run("--color", "always", "--output-format", "json", "a.py").stdout  # never in machine formats
    assert esc in run("--color", "always", "--output-format", "grouped", "a.py").stdout


def test_colour_on_a_terminal_unless_no_color(project):
    pty = pytest.importorskip("pty")

    def through_a_terminal(env):
        parent, child = pty.openpty()
        subprocess.run(
            [sys.executable, "-m", "mpslint", "a.py", "--no-cache"], stdin=child, stdout=child, stderr=child,
            cwd=project, env=env, timeout=120,
        )
        os.close(child)
        chunks = []
        while True:
            try:
                chunk = os.read(parent, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(parent)
        return b"".join(chunks).decode("utf-8", "replace")

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    assert "\x1b[" in through_a_terminal(env)
    assert "\x1b[" not in through_a_terminal({**env, "NO_COLOR": "1"})


# --- --watch -------------------------------------------------------------------------------------


def test_watch_checks_again_when_a_file_changes(project):
    process = subprocess.Popen(
        [sys.executable, "-m", "mpslint", "--watch", "--no-cache", "."],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    seen = []
    try:

        def wait_for(text):
            deadline = time.monotonic() + 120  # generous: fails only if it never comes
            while time.monotonic() < deadline:
                line = process.stdout.readline()
                if not line:
                    break
                seen.append(line)
                if text in line:
                    return
            raise AssertionError(f"never saw {text!r}; output: {''.join(seen)}")

        wait_for("Found 1 finding")
        time.sleep(0.1)
        (project / "a.py").write_text("import torch\nx = torch.zeros(1)\n", encoding="utf-8")
        wait_for("All checks passed!")
        assert any("File change detected" in line for line in seen)
    finally:
        process.terminate()
        process.wait(timeout=60)
