"""The command line contract: every flag, every exit code, stdin, the default command, `rule`, `verify`."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from mpslint import __version__, cli
from mpslint.cli import main

from clitools import cli_runner, fake_rules, project, run  # noqa: F401  (fixtures)

CUDA = "import torch\n\nx = torch.zeros(1)\ny = x.cuda()\n"
CLEAN = "import torch\n\nx = torch.zeros(1)\n"
MIXED = textwrap.dedent(
    """\
    import torch

    x = torch.zeros(1).double()
    y = x.cuda()
    torch.cuda.synchronize()
    """
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- the default command and the group -------------------------------------------------------


def test_bare_paths_mean_check(project):
    write(project / "a.py", CUDA)
    bare, explicit = run("a.py"), run("check", "a.py")
    assert bare.exit_code == explicit.exit_code == 1
    assert bare.stdout == explicit.stdout
    assert bare.stdout.startswith("a.py:4:5: MPS990 [*] `.cuda()` only works on CUDA\n")


def test_no_paths_checks_the_current_directory(project):
    write(project / "pkg" / "a.py", CUDA)
    result = run()
    assert result.exit_code == 1
    assert "pkg/a.py:4:5: MPS990" in result.stdout


def test_flag_first_still_means_check(project):
    write(project / "a.py", CUDA)
    result = run("--fix", ".")
    assert result.exit_code == 0, result.output
    assert (project / "a.py").read_text() == CUDA.replace("x.cuda()", "x.to(DEVICE)")


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout == f"mpslint {__version__}\n"


def test_help_lists_commands_without_importing_the_verifier(monkeypatch):
    monkeypatch.setitem(cli.LAZY_COMMANDS, "verify", ("mpslint.verify.no_such_module", "verify", "Run the verifier."))
    result = run("--help")
    assert result.exit_code == 0
    for name in ("check", "rule", "verify"):
        assert f"  {name}" in result.stdout


def test_verify_missing_module_exits_2_with_a_message(monkeypatch):
    monkeypatch.setitem(cli.LAZY_COMMANDS, "verify", ("mpslint.verify.no_such_module", "verify", "Run the verifier."))
    result = run("verify", "train.py", "--", "--epochs", "1")
    assert result.exit_code == 2
    assert "`mpslint verify` is not available" in result.stderr
    assert "no_such_module" in result.stderr


def test_verify_is_loaded_lazily_from_its_module(monkeypatch, tmp_path):
    module = tmp_path / "fake_verify_cmd.py"
    module.write_text(
        "import click\n@click.command()\n@click.argument('script')\n"
        "def verify(script):\n    click.echo('verifying ' + script)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(cli.LAZY_COMMANDS, "verify", ("fake_verify_cmd", "verify", "Run the verifier."))
    result = run("verify", "train.py")
    assert result.exit_code == 0
    assert result.stdout == "verifying train.py\n"


# --- exit codes ------------------------------------------------------------------------------


def test_exit_0_when_clean(project):
    write(project / "a.py", CLEAN)
    result = run("a.py")
    assert result.exit_code == 0
    assert result.stdout == "All checks passed!\n"


def test_exit_1_with_findings_and_summary(project):
    write(project / "a.py", MIXED)
    result = run("a.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "a.py:3:5: MPS991 float64 is not supported on MPS",
        "a.py:4:5: MPS990 [*] `.cuda()` only works on CUDA",
        "a.py:5:1: MPS992 `torch.cuda.synchronize()` is CUDA-only",
        "Found 3 findings.",
        "[*] 1 fixable with --fix (1 more with --fix --unsafe-fixes).",
    ]


@pytest.mark.parametrize(
    "args, needle",
    [
        (("--select", "MPS7"), "'MPS7'"),
        (("--ignore", "nonsense"), "'nonsense'"),
        (("--extend-select", "MPS990,XYZ1"), "'XYZ1'"),
        (("--torch-version", "two"), "'two'"),
        (("--torch-version", "1.11"), "older than torch 1.12"),
    ],
)
def test_exit_2_on_usage_errors(project, args, needle):
    write(project / "a.py", CUDA)
    result = run(*args, "a.py")
    assert result.exit_code == 2
    assert needle in result.stderr
    assert "Traceback" not in result.output


def test_exit_2_on_a_config_error_naming_key_and_file(project):
    write(project / "pyproject.toml", "[tool.mpslint]\nselectt = ['MPS990']\n")
    write(project / "a.py", CUDA)
    result = run("a.py")
    assert result.exit_code == 2
    assert "unknown key `selectt`" in result.stderr
    assert str(project / "pyproject.toml") in result.stderr


def test_exit_2_on_invalid_toml(project):
    write(project / "mpslint.toml", "select = [\n")
    write(project / "a.py", CUDA)
    result = run("a.py")
    assert result.exit_code == 2
    assert "invalid TOML" in result.stderr


def test_exit_zero(project):
    write(project / "a.py", CUDA)
    result = run("--exit-zero", "a.py")
    assert result.exit_code == 0
    assert "MPS990" in result.stdout


def test_exit_non_zero_on_fix(project):
    write(project / "a.py", CUDA)
    assert run("--fix", "--exit-non-zero-on-fix", "a.py").exit_code == 1
    # Nothing left to fix: exit 0 again.
    assert run("--fix", "--exit-non-zero-on-fix", "a.py").exit_code == 0


def test_syntax_error_is_mps000_exit_1_without_traceback(project):
    write(project / "bad.py", "import torch\n\ndef f(:\n    x.cuda()\n")
    result = run("bad.py")
    assert result.exit_code == 1
    assert result.stdout.startswith("bad.py:3:")
    assert "MPS000" in result.stdout
    assert "Traceback" not in result.output


def test_undecodable_file_is_mps001_and_others_still_run(project):
    (project / "latin.py").write_bytes(b"x = '\xff'.cuda()\n")
    write(project / "a.py", CUDA)
    result = run(".")
    assert result.exit_code == 1
    assert "latin.py:1:1: MPS001 cannot decode" in result.stdout
    assert "a.py:4:5: MPS990" in result.stdout
    assert result.stdout.endswith("Found 2 findings.\n[*] 1 fixable with --fix.\n")
    assert result.stderr == ""


def test_strict_and_verbose_on_internal_errors(project):
    write(project / "a.py", "import torch\nboom()\n")
    plain = run("a.py")
    assert plain.exit_code == 1
    assert "MPS900 internal error in rule MPS993 (test-crash)" in plain.stdout
    assert "Traceback" not in plain.output
    assert run("--strict", "a.py").exit_code == 2
    verbose = run("--verbose", "a.py")
    assert "RuntimeError: the test rule crashed on purpose" in verbose.stderr
    assert "Traceback (most recent call last)" in verbose.stderr


# --- fixing ----------------------------------------------------------------------------------


def test_fix_reports_fixed_and_remaining(project):
    write(project / "a.py", MIXED)
    result = run("--fix", "a.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "a.py:3:5: MPS991 float64 is not supported on MPS",
        "a.py:5:1: MPS992 `torch.cuda.synchronize()` is CUDA-only",
        "Found 3 findings (1 fixed, 2 remaining).",
        "No fixes available (1 more with --fix --unsafe-fixes).",
    ]
    assert "x.to(DEVICE)" in (project / "a.py").read_text()
    assert ".double()" in (project / "a.py").read_text()


def test_unsafe_fixes(project):
    write(project / "a.py", MIXED)
    check = run("--unsafe-fixes", "a.py")
    assert "a.py:3:5: MPS991 [*] float64" in check.stdout
    assert "[*] 2 fixable with --fix --unsafe-fixes." in check.stdout
    result = run("--fix", "--unsafe-fixes", "a.py")
    assert result.exit_code == 1  # MPS992 has no fix
    assert "Found 3 findings (2 fixed, 1 remaining)." in result.stdout
    text = (project / "a.py").read_text()
    assert ".float()" in text and "x.to(DEVICE)" in text


def test_diff_writes_nothing_and_exits_1(project):
    path = write(project / "a.py", CUDA)
    before = path.stat().st_mtime_ns
    result = run("--diff", "a.py")
    assert result.exit_code == 1
    assert path.read_text() == CUDA and path.stat().st_mtime_ns == before
    assert result.stdout.splitlines()[:2] == ["--- a.py", "+++ a.py"]
    assert "-y = x.cuda()" in result.stdout and "+y = x.to(DEVICE)" in result.stdout
    assert "Would fix 1 finding." in result.stderr


def test_diff_with_nothing_to_fix_exits_0(project):
    write(project / "a.py", "import torch\ntorch.cuda.synchronize()\n")
    result = run("--diff", "a.py")
    assert result.exit_code == 0
    assert result.stdout == ""


def test_diff_with_fix_still_writes_nothing(project):
    path = write(project / "a.py", CUDA)
    assert run("--fix", "--diff", "a.py").exit_code == 1
    assert path.read_text() == CUDA


def test_show_fixes(project):
    write(project / "a.py", CUDA)
    write(project / "b.py", CUDA + "z = y.cuda()\n")
    result = run("--fix", "--show-fixes", ".")
    assert result.exit_code == 0
    assert "Fixed 3 findings:\n- a.py:\n    1 × MPS990 (test-cuda-call)\n- b.py:\n    2 × MPS990 (test-cuda-call)\n" in result.stdout
    assert result.stdout.rstrip().endswith("Found 3 findings (3 fixed, 0 remaining).")


# --- selection -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, expected",
    [
        (("--select", "MPS990"), {"MPS990"}),
        (("--select", "MPS990,MPS992"), {"MPS990", "MPS992"}),
        (("--select", "MPS990", "--select", "test-synchronize"), {"MPS990", "MPS992"}),
        (("--select", "MPS99"), {"MPS990", "MPS991", "MPS992"}),
        (("--ignore", "MPS991"), {"MPS990", "MPS992"}),
        (("--select", "MPS990", "--extend-select", "MPS991"), {"MPS990", "MPS991"}),
        (("--select", "ALL", "--ignore", "MPS99"), set()),
    ],
)
def test_selection_flags(project, args, expected):
    write(project / "a.py", MIXED)
    result = run(*args, "--output-format", "json", "a.py")
    assert {d["code"] for d in json.loads(result.stdout)} == expected
    assert result.exit_code == (1 if expected else 0)


def test_cli_select_overrides_config_select(project):
    write(project / "pyproject.toml", "[tool.mpslint]\nselect = ['MPS991']\n")
    write(project / "a.py", MIXED)
    assert {d["code"] for d in json.loads(run("--output-format", "json", "a.py").stdout)} == {"MPS991"}
    result = run("--select", "MPS990", "--output-format", "json", "a.py")
    assert {d["code"] for d in json.loads(result.stdout)} == {"MPS990"}


# --- files -----------------------------------------------------------------------------------


def test_exclude_and_extend_exclude(project):
    write(project / "keep" / "a.py", CUDA)
    write(project / "gen" / "b.py", CUDA)
    write(project / "build" / "c.py", CUDA)
    default = run("--output-format", "json", ".")
    assert sorted(Path(d["filename"]).parent.name for d in json.loads(default.stdout)) == ["gen", "keep"]
    extended = run("--extend-exclude", "gen", "--output-format", "json", ".")
    assert [Path(d["filename"]).parent.name for d in json.loads(extended.stdout)] == ["keep"]
    replaced = run("--exclude", "keep", "--output-format", "json", ".")
    assert sorted(Path(d["filename"]).parent.name for d in json.loads(replaced.stdout)) == ["build", "gen"]


def test_named_files_are_checked_unless_force_exclude(project):
    write(project / "pyproject.toml", "[tool.mpslint]\nextend-exclude = ['generated']\n")
    write(project / "generated" / "a.py", CUDA)
    assert run(".").exit_code == 0
    assert run("generated/a.py").exit_code == 1
    forced = run("--force-exclude", "generated/a.py")
    assert forced.exit_code == 0
    assert forced.stdout == ""  # nothing was checked: no "All checks passed!"
    assert forced.stderr == "warning: No Python files found under the given path(s)\n"


def test_gitignored_files_are_skipped(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "scratch/\n")
    write(project / "scratch" / "a.py", CUDA)
    write(project / "src" / "b.py", CUDA)
    result = run(".")
    assert "src/b.py" in result.stdout and "scratch" not in result.stdout


# --- output ----------------------------------------------------------------------------------


def test_output_format_full(project):
    write(project / "a.py", CUDA)
    result = run("--output-format", "full", "a.py")
    assert result.exit_code == 1
    assert result.stdout == (
        "a.py:4:5: MPS990 [*] `.cuda()` only works on CUDA\n"
        "  |\n"
        "4 | y = x.cuda()\n"
        "  |     ^^^^^^^^ MPS990\n"
        "  |\n"
        "  = help: Replace with `.to(DEVICE)`\n"
        "\n"
        "Found 1 finding.\n"
        "[*] 1 fixable with --fix.\n"
    )


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "junit"])
def test_machine_formats_print_nothing_else(project, fmt):
    write(project / "a.py", MIXED)
    result = run("--output-format", fmt, "a.py")
    assert result.exit_code == 1
    # No summary line (SARIF embeds the rule pages, whose text may say "Found": inside JSON strings).
    assert not any(line.startswith(("Found", "[*]", "All checks")) for line in result.stdout.splitlines())
    assert result.stderr == ""
    if fmt == "json":
        assert len(json.loads(result.stdout)) == 3
    elif fmt == "sarif":
        assert len(json.loads(result.stdout)["runs"][0]["results"]) == 3
    elif fmt == "github":
        assert len(result.stdout.splitlines()) == 3 and result.stdout.startswith("::error title=mpslint (MPS991)")
    else:
        import xml.etree.ElementTree as ET

        assert len(ET.fromstring(result.stdout).findall("./testsuite/testcase/failure")) == 3


def test_output_format_from_environment(project):
    write(project / "a.py", CUDA)
    result = run("a.py", env={"MPSLINT_OUTPUT_FORMAT": "github"})
    assert result.stdout.startswith("::error title=mpslint (MPS990),file=a.py,line=4,col=5")
    assert run("a.py", env={"MPSLINT_OUTPUT_FORMAT": "yaml"}).exit_code == 2


def test_output_file(project):
    write(project / "a.py", CUDA)
    result = run("--output-format", "json", "--output-file", "reports/out.json", "a.py")
    assert result.exit_code == 1
    assert result.stdout == ""
    data = json.loads((project / "reports" / "out.json").read_text())
    assert data[0]["code"] == "MPS990"


def test_statistics(project):
    write(project / "a.py", MIXED + "z = y.cuda()\n")
    result = run("--statistics", "a.py")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        "2\tMPS990\t[*]\ttest-cuda-call",
        "1\tMPS991\t[-]\ttest-double-call",
        "1\tMPS992\t[ ]\ttest-synchronize",
    ]
    assert "Found 4 findings." in lines
    as_json = json.loads(run("--statistics", "--output-format", "json", "a.py").stdout)
    assert as_json[0] == {"code": "MPS990", "name": "test-cuda-call", "count": 2, "fixable": True, "fixable_count": 2}


def test_quiet_prints_findings_only(project):
    write(project / "a.py", CUDA)
    result = run("-q", "a.py")
    assert result.stdout == "a.py:4:5: MPS990 [*] `.cuda()` only works on CUDA\n"
    write(project / "a.py", CLEAN)
    assert run("--quiet", "a.py").stdout == ""


# --- stdin -----------------------------------------------------------------------------------


def test_stdin_check(project):
    result = run("-", input=CUDA)
    assert result.exit_code == 1
    assert result.stdout.startswith("-:4:5: MPS990 [*]")


def test_stdin_filename_names_the_code_and_picks_its_config(project):
    write(project / "sub" / "mpslint.toml", "ignore = ['MPS990']\n")
    result = run("-", "--stdin-filename", "sub/train.py", input=MIXED)
    assert result.stdout.startswith("sub/train.py:3:5: MPS991")
    assert "MPS990" not in result.stdout
    # --stdin-filename alone reads stdin too.
    assert run("--stdin-filename", "x.py", input=CUDA).stdout.startswith("x.py:4:5: MPS990")


def test_stdin_fix_prints_the_fixed_source_on_stdout_only(project):
    result = run("--fix", "-", "--stdin-filename", "t.py", input=MIXED)
    assert result.exit_code == 1
    assert result.stdout == MIXED.replace("x.cuda()", "x.to(DEVICE)")
    assert "t.py:3:5: MPS991" in result.stderr
    assert "Found 3 findings (1 fixed, 2 remaining)." in result.stderr


def test_stdin_diff(project):
    result = run("--diff", "-", input=CUDA)
    assert result.exit_code == 1
    assert "+y = x.to(DEVICE)" in result.stdout


def test_stdin_force_excluded_file_passes_through(project):
    write(project / "mpslint.toml", "extend-exclude = ['vendored']\n")
    result = run("--fix", "--force-exclude", "--stdin-filename", "vendored/x.py", "-", input=CUDA)
    assert result.exit_code == 0
    assert result.stdout == CUDA


def test_stdin_cannot_be_mixed_with_paths(project):
    write(project / "a.py", CUDA)
    result = run("-", "a.py", input=CUDA)
    assert result.exit_code == 2
    assert "cannot be combined" in result.stderr


# --- settings flags --------------------------------------------------------------------------


def test_torch_version_flag_and_inference(project):
    write(project / "pyproject.toml", "[project]\nname = 'p'\ndependencies = ['torch>=2.3', 'numpy']\n")
    write(project / "a.py", "compile_me()\n")
    assert "torch-version floor is 2.3" in run("a.py").stdout
    assert "torch-version floor is 2.7" in run("--torch-version", "2.7.1", "a.py").stdout


def test_config_flag_applies_to_every_file(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("conf") / "custom.toml"
    elsewhere.write_text("select = ['MPS992']\n")
    write(project / "pyproject.toml", "[tool.mpslint]\nselect = ['MPS990']\n")
    write(project / "deep" / "a.py", MIXED)
    result = run("--config", str(elsewhere), "--output-format", "json", ".")
    assert {d["code"] for d in json.loads(result.stdout)} == {"MPS992"}
    assert run("--config", "nope.toml", ".").exit_code == 2


def test_jobs_flag_gives_identical_output(project):
    for i in range(6):
        write(project / f"m{i}.py", MIXED)
    one = run("-j", "1", "--no-cache", ".")
    two = run("--jobs", "2", "--no-cache", ".")
    assert one.stdout == two.stdout and one.exit_code == two.exit_code == 1
    assert run("-j", "0", ".").exit_code == 2


def test_cache_flags(project, monkeypatch):
    write(project / "a.py", CUDA)
    run("a.py")
    assert (project / ".mpslint_cache" / "CACHEDIR.TAG").is_file()
    assert (project / ".mpslint_cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    run("--cache-dir", "custom-cache", "a.py")
    assert (project / "custom-cache" / "CACHEDIR.TAG").is_file()
    run("a.py", env={"MPSLINT_CACHE_DIR": str(project / "env-cache")})
    assert (project / "env-cache" / "CACHEDIR.TAG").is_file()
    os.rename(project / ".mpslint_cache", project / "old-cache")
    result = run("--no-cache", "a.py")
    assert result.exit_code == 1
    assert not (project / ".mpslint_cache").exists()


# --- rule ------------------------------------------------------------------------------------


def test_rule_by_code_and_name():
    by_code = run("rule", "MPS000")
    assert by_code.exit_code == 0
    assert by_code.stdout.startswith("# invalid-syntax (MPS000)\n")
    assert "## What it does" in by_code.stdout
    assert run("rule", "invalid-syntax").stdout == by_code.stdout
    assert run("rule", "mps000").stdout == by_code.stdout


def test_rule_all_and_json():
    from mpslint import catalog

    result = run("rule", "--all")
    assert result.exit_code == 0
    for doc in catalog.load().values():
        assert f"# {doc.name} ({doc.code})" in result.stdout
    data = json.loads(run("rule", "MPS000", "--output-format", "json").stdout)
    assert data["code"] == "MPS000" and data["name"] == "invalid-syntax"


@pytest.mark.parametrize("args", [("rule", "MPS777"), ("rule",), ("rule", "MPS000", "--all")])
def test_rule_errors_exit_2(args):
    result = run(*args)
    assert result.exit_code == 2


def test_stdin_fix_keeps_the_input_encoding(project):
    source = "# -*- coding: latin-1 -*-\n# café\n" + CUDA
    result = cli_runner().invoke(main, ["--fix", "-"], input=source.encode("latin-1"))
    assert result.stdout_bytes == ("# -*- coding: latin-1 -*-\n# café\n" + CUDA.replace("x.cuda()", "x.to(DEVICE)")).encode("latin-1")


def test_stdin_fix_passes_undecodable_input_through(project):
    data = b"x = '\xff'.cuda()\n"
    result = cli_runner().invoke(main, ["--fix", "-"], input=data)
    assert result.exit_code == 1
    assert result.stdout_bytes == data
    assert "-:1:1: MPS001 cannot decode" in result.stderr


def test_an_engine_crash_fails_that_file_only(project, monkeypatch):
    from mpslint import engine

    real = engine.check_text

    def flaky(text, path, settings, **kw):
        if path.endswith("bad.py"):
            raise RecursionError("maximum recursion depth exceeded")
        return real(text, path, settings, **kw)

    monkeypatch.setattr(engine, "check_text", flaky)
    write(project / "bad.py", CUDA)
    write(project / "good.py", CUDA)
    result = run("--no-cache", ".")
    assert result.exit_code == 2
    assert "error: bad.py: internal error: RecursionError" in result.stderr
    assert "good.py:4:5: MPS990" in result.stdout
    assert "Traceback" not in result.output
    assert "Traceback (most recent call last)" in run("--no-cache", "--verbose", ".").stderr


# --- with the real rules ---------------------------------------------------------------------


def _has_real(code: str) -> bool:
    from mpslint import registry

    return code in registry.rule_codes()


TRAIN = textwrap.dedent(
    """\
    import torch
    from torch import nn

    model = nn.Linear(4, 2).cuda()
    batch = torch.randn(8, 4).cuda()
    loss = model(batch).sum()
    """
)


@pytest.mark.skipif(not _has_real("MPS101"), reason="MPS101 (checks/cuda.py) not present")
def test_real_rules_check_then_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "train.py", TRAIN)
    before = run("--no-cache", "--select", "MPS101", "train.py")
    assert before.exit_code == 1
    findings = [line for line in before.stdout.splitlines() if " MPS101 " in line]
    assert [line.split(" MPS101 ")[0] for line in findings] == ["train.py:4:9:", "train.py:5:9:"]
    assert all(" MPS101 [*] " in line for line in findings)
    fixed = run("--no-cache", "--fix", "train.py")
    assert "Traceback" not in fixed.output
    text = (tmp_path / "train.py").read_text()
    assert ".cuda()" not in text
    compile(text, "train.py", "exec")
    assert run("--no-cache", "--select", "MPS101", "train.py").exit_code == 0
    again = run("--no-cache", "--fix", "train.py")
    assert (tmp_path / "train.py").read_text() == text  # a second --fix changes nothing
    assert "fixed" not in again.stdout


def test_checking_one_file_stays_light(tmp_path):
    """Startup: a plain check imports neither torch nor what only other modes need."""
    import subprocess
    import sys

    (tmp_path / "a.py").write_text(TRAIN)
    code = textwrap.dedent(
        """\
        import sys
        from mpslint.cli import main
        try:
            main(["--no-cache", "a.py"])
        except SystemExit:
            pass
        heavy = ("torch", "numpy", "multiprocessing", "concurrent.futures.process", "pathspec", "xml.etree",
                 "difflib", "mpslint.output.sarif", "mpslint.output.json", "mpslint.output.junit",
                 "mpslint.output.github", "mpslint.output.full", "mpslint.cache", "mpslint.verify")
        print(sorted(m for m in sys.modules if m in heavy or m.startswith(tuple(h + "." for h in heavy))), file=sys.stderr)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "[]"


# --- help, torch-version, config outside the project ------------------------------------------


def test_help_shows_each_command_description_whole(monkeypatch):
    monkeypatch.setitem(cli.LAZY_COMMANDS, "verify", ("mpslint.verify.no_such_module", "verify", "Run the verifier."))
    commands = run("--help").stdout.split("Commands:\n", 1)[1]
    assert "..." not in commands
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in commands.splitlines() if line.startswith("  ") and line.split()}
    assert rows["check"] == "Check PATHS (default: the current directory); `-` reads stdin."
    assert rows["rule"] == "Explain a rule: `mpslint rule MPS101` or `mpslint rule cuda-method`."


def test_torch_version_flag_newer_than_known_warns(project):
    from mpslint.knowledge.mps_kernels import latest_bundled_version

    major, minor = latest_bundled_version()
    write(project / "a.py", "compile_me()\n")
    result = run("--torch-version", f"{major}.{minor + 1}", "a.py")
    assert result.exit_code == 1
    assert f"a.py:1:1: MPS994 torch-version floor is {major}.{minor + 1}" in result.stdout
    assert result.stderr == f"warning: --torch-version {major}.{minor + 1} is newer than the newest torch mpslint knows ({major}.{minor}): op coverage follows torch {major}.{minor} unless torch {major}.{minor + 1} is installed\n"
    assert run("-q", "--torch-version", f"{major}.{minor + 1}", "a.py").stderr == ""


def test_unquoted_torch_version_in_config_is_an_error_with_a_hint(project):
    write(project / "pyproject.toml", "[tool.mpslint]\ntorch-version = 2.10\n")
    write(project / "a.py", "compile_me()\n")
    result = run("a.py")
    assert result.exit_code == 2
    assert 'quote it, as in torch-version = "2.10"' in result.stderr
    assert result.stdout == ""


def test_a_file_outside_the_project_is_checked_the_same_from_anywhere(tmp_path, monkeypatch, fake_rules):
    # The torch floor used to come from the current directory's requirements while its [tool.mpslint] was ignored.
    here = tmp_path / "here"
    write(here / "pyproject.toml", "[project]\nname = 'h'\n[project.optional-dependencies]\ngpu = ['torch>=2.0']\n[tool.mpslint]\nignore = ['MPS994']\n")
    target = write(tmp_path / "elsewhere" / "train.py", "compile_me()\n")
    outputs = []
    for cwd in (here, target.parent):
        monkeypatch.chdir(cwd)
        outputs.append(run("--no-cache", "--output-format", "json", str(target)).stdout)
    assert outputs[0] == outputs[1]
    assert [d["message"] for d in json.loads(outputs[0])] == ["torch-version floor is unset"]
