"""Configuration: where it is found, what each key means, and how bad values are reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpslint import config as config_module
from mpslint.config import ConfigError, ConfigResolver, Overrides, Settings, infer_torch_version, load_config_file

from clitools import fake_rules  # noqa: F401  (fixture)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def rules(fake_rules):
    return fake_rules


def resolve(tmp_path: Path, relative: str, overrides: Overrides = Overrides()):
    return ConfigResolver(overrides, cwd=tmp_path).for_path(tmp_path / relative)


# --- where -----------------------------------------------------------------------------------


def test_nearest_config_wins(tmp_path, rules):
    write(tmp_path / "pyproject.toml", "[tool.mpslint]\nselect = ['MPS990']\n")
    write(tmp_path / "sub" / "pyproject.toml", "[tool.mpslint]\nselect = ['MPS991']\n")
    write(tmp_path / "sub" / "deeper" / "a.py", "")
    write(tmp_path / "b.py", "")
    assert resolve(tmp_path, "sub/deeper/a.py").settings.select == {"MPS991"}
    assert resolve(tmp_path, "b.py").settings.select == {"MPS990"}


def test_mpslint_toml_beats_pyproject_in_the_same_directory(tmp_path, rules):
    write(tmp_path / "pyproject.toml", "[tool.mpslint]\nselect = ['MPS990']\n")
    write(tmp_path / "mpslint.toml", "select = ['MPS992']\n")
    config = resolve(tmp_path, "a.py")
    assert config.path == tmp_path / "mpslint.toml"
    assert config.settings.select == {"MPS992"}


def test_mpslint_toml_accepts_a_tool_table_too(tmp_path, rules):
    write(tmp_path / "mpslint.toml", "[tool.mpslint]\nselect = ['MPS992']\n")
    assert resolve(tmp_path, "a.py").settings.select == {"MPS992"}


def test_pyproject_without_our_section_is_skipped(tmp_path, rules):
    write(tmp_path / "pyproject.toml", "[tool.mpslint]\nignore = ['MPS990']\n")
    write(tmp_path / "pkg" / "pyproject.toml", "[tool.black]\nline-length = 100\n")
    config = resolve(tmp_path, "pkg/a.py")
    assert config.path == tmp_path / "pyproject.toml"
    assert "MPS990" not in config.settings.select


def test_no_config_means_defaults_rooted_at_cwd(tmp_path, rules):
    config = resolve(tmp_path, "a.py")
    assert config.path is None and config.root == tmp_path
    assert config.settings == Settings()


def test_config_is_resolved_once_per_directory(tmp_path, rules, monkeypatch):
    write(tmp_path / "pyproject.toml", "[tool.mpslint]\n")
    calls = []
    real = config_module.read_toml
    for module in (config_module.resolver, config_module.torch_floor):
        monkeypatch.setattr(module, "read_toml", lambda p: calls.append(p) or real(p))
    resolver = ConfigResolver(cwd=tmp_path)
    for name in ("a.py", "b.py", "x/c.py", "x/d.py", "x/y/e.py"):
        resolver.for_path(tmp_path / name)
    # Inferring torch-version reads the pyproject once more; nothing is read per file.
    assert len(calls) <= 2


def test_explicit_config_file(tmp_path, rules):
    path = write(tmp_path / "conf" / "custom.toml", "select = ['MPS991']\nextend-exclude = ['gen']\n")
    resolver = ConfigResolver(config_path=path, cwd=tmp_path)
    config = resolver.for_path(tmp_path / "anywhere" / "a.py")
    assert config.settings.select == {"MPS991"}
    assert config.root == tmp_path / "conf"
    assert resolver.for_directory(tmp_path / "other") is config


def test_explicit_pyproject_without_section_is_defaults(tmp_path, rules):
    path = write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    assert load_config_file(path).settings.select == Settings().select


# --- keys ------------------------------------------------------------------------------------


def test_selection_keys_and_cli_layering(tmp_path, rules):
    write(tmp_path / "pyproject.toml", "[tool.mpslint]\nselect = ['MPS99']\nignore = ['MPS991']\nextend-select = []\n")
    assert resolve(tmp_path, "a.py").settings.select == {"MPS990", "MPS992", "MPS993", "MPS994"}
    # The command line's --select resets the choice (and the config's ignore with it), like Ruff.
    cli = Overrides(select=("MPS991",), ignore=("MPS992",), extend_select=("test-crash",))
    assert resolve(tmp_path, "a.py", cli).settings.select == {"MPS991", "MPS993"}
    assert resolve(tmp_path, "a.py", Overrides(ignore=("MPS990",))).settings.select == {"MPS992", "MPS993", "MPS994"}


def test_per_file_ignores_with_globs_and_negation(tmp_path, rules):
    write(
        tmp_path / "pyproject.toml",
        "[tool.mpslint]\n[tool.mpslint.per-file-ignores]\n"
        "'tests/**/*.py' = ['MPS990']\n"
        "'conftest.py' = ['MPS991']\n"
        "'!src/*' = ['MPS992']\n",
    )
    config = resolve(tmp_path, "x.py")
    every = Settings().select
    assert config.settings_for(tmp_path / "src" / "a.py").select == every
    assert config.settings_for(tmp_path / "tests" / "sub" / "t.py").select == every - {"MPS990", "MPS992"}
    assert config.settings_for(tmp_path / "tests" / "conftest.py").select == every - {"MPS990", "MPS991", "MPS992"}
    assert config.settings_for(tmp_path / "tools" / "x.py").select == every - {"MPS992"}
    # Files with the same effective codes share one Settings object (the cache key and pool table stay small).
    assert config.settings_for(tmp_path / "tools" / "x.py") is config.settings_for(tmp_path / "y.py")


def test_exclude_keys(tmp_path, rules):
    write(tmp_path / "mpslint.toml", "exclude = ['gen']\nextend-exclude = ['legacy/*.py']\nrespect-gitignore = false\n")
    config = resolve(tmp_path, "a.py")
    assert config.exclude_patterns() == ("gen", "legacy/*.py")
    assert config.respect_gitignore is False
    assert config.is_excluded(tmp_path / "a" / "gen")
    assert config.is_excluded(tmp_path / "legacy" / "old.py")
    assert not config.is_excluded(tmp_path / "src" / "legacy" / "old.py")
    assert not config.is_excluded(tmp_path / "build")  # `exclude` replaced the defaults
    assert config.is_excluded(tmp_path / "gen" / "x.py", check_parents=True)


def test_default_excludes(tmp_path, rules):
    config = resolve(tmp_path, "a.py")
    for name in (".git", ".venv", "venv", "build", "dist", "site-packages", "node_modules", "__pycache__", ".mpslint_cache", ".tox", ".nox"):
        assert config.is_excluded(tmp_path / name), name


def test_settings_fields_map_generically(tmp_path, rules):
    write(
        tmp_path / "pyproject.toml",
        "[tool.mpslint]\ntorch-version = '2.4'\ndevice-helper = 'myproj.utils.devices:pick_device'\nreport-interval-guarded = true\n",
    )
    settings = resolve(tmp_path, "a.py").settings
    assert settings.torch_version == (2, 4)
    assert settings.device_helper == "myproj.utils.devices:pick_device"
    assert settings.report_interval_guarded is True


@pytest.mark.parametrize(
    "body, needle",
    [
        ("selectt = ['MPS990']", "unknown key `selectt`"),
        ("select = 'MPS990'", "`select` must be a list of strings"),
        ("select = ['MPS7']", "unknown rule selector 'MPS7' in select"),
        ("ignore = ['E501']", "unknown rule selector 'E501' in ignore"),
        ("torch-version = 'latest'", "invalid torch-version 'latest'"),
        ("torch-version = true", "`torch-version` must be a string"),
        ("device-helper = 'pick_device'", "invalid `device-helper` 'pick_device'"),
        ("device-helper = 'a.b:c:d'", "invalid `device-helper`"),
        ("report-interval-guarded = 'yes'", "invalid `report-interval-guarded` 'yes'"),
        ("respect-gitignore = 1", "`respect-gitignore` must be true or false"),
        ("per-file-ignores = ['x']", "`per-file-ignores` must be a table"),
        ("[per-file-ignores]\n'x.py' = ['NOPE']", "unknown rule selector 'NOPE'"),
        ("exclude = 'build'", "`exclude` must be a list of strings"),
    ],
)
def test_bad_values_name_key_and_file(tmp_path, rules, body, needle):
    path = write(tmp_path / "mpslint.toml", body + "\n")
    with pytest.raises(ConfigError) as info:
        resolve(tmp_path, "a.py")
    assert needle in str(info.value)
    assert str(path) in str(info.value)


def test_invalid_toml(tmp_path, rules):
    write(tmp_path / "pyproject.toml", "[tool.mpslint\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        resolve(tmp_path, "a.py")


# --- torch-version inference -----------------------------------------------------------------


@pytest.mark.parametrize(
    "requirement, expected",
    [
        ("torch>=2.1", (2, 1)),
        ("torch >= 2.3.1, <3", (2, 3)),
        ("torch~=2.2", (2, 2)),
        ("torch==2.4.*", (2, 4)),
        ("torch[opt-einsum]>=2.5; python_version >= '3.10'", (2, 5)),
        ("torch", None),
        ("torchvision>=0.18", None),
        ("torch-geometric>=2.5", None),
    ],
)
def test_torch_floor_from_pyproject(tmp_path, requirement, expected):
    write(tmp_path / "pyproject.toml", f"[project]\nname = 'p'\ndependencies = [{requirement!r}]\n")
    assert infer_torch_version(tmp_path) == expected


def test_torch_floor_from_optional_dependencies_and_requirements(tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'p'\n[project.optional-dependencies]\ngpu = ['torch>=2.6']\n")
    write(tmp_path / "requirements-dev.txt", "# dev\n-r requirements.txt\ntorch>=2.2  # oldest we test\n")
    assert infer_torch_version(tmp_path) == (2, 2)  # the lowest floor the project admits


def test_explicit_torch_version_beats_inference(tmp_path, rules):
    write(tmp_path / "pyproject.toml", "[project]\nname='p'\ndependencies=['torch>=2.1']\n[tool.mpslint]\ntorch-version='2.6'\n")
    assert resolve(tmp_path, "a.py").settings.torch_version == (2, 6)
    assert resolve(tmp_path, "a.py", Overrides(torch_version=(2, 8))).settings.torch_version == (2, 8)


def test_torch_version_inferred_without_any_mpslint_config(tmp_path, rules):
    write(tmp_path / "requirements.txt", "torch==2.5.1\n")
    assert resolve(tmp_path, "a.py").settings.torch_version == (2, 5)


@pytest.mark.parametrize(
    "pattern, path, hit",
    [
        ("tests/*.py", "tests/a.py", True),
        ("tests/*.py", "tests/sub/a.py", False),  # `*` stays within a directory
        ("tests/**/*.py", "tests/sub/deep/a.py", True),
        ("**/conftest.py", "a/b/conftest.py", True),
        ("conftest.py", "a/b/conftest.py", True),  # no `/`: matches the name anywhere
        ("*_pb2.py", "x/msg_pb2.py", True),
        ("./scripts/*.py", "scripts/run.py", True),
        ("data/", "data", True),
        ("m[0-9].py", "m7.py", True),
        ("m[!0-9].py", "m7.py", False),
    ],
)
def test_glob_semantics(pattern, path, hit):
    assert config_module.glob_match(pattern, path) is hit


# --- torch-version values ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, needle",
    [
        ("2.10", "got the number 2.1; TOML reads an unquoted 2.10 as the number 2.1: quote it"),
        ("2", "got the number 2;"),
        ("'1.11'", "torch-version 1.11 is older than torch 1.12, the first release with the mps device"),
        ("'0.4.1'", "older than torch 1.12"),
        ("'2.-1'", "invalid torch-version"),
    ],
)
def test_bad_torch_versions_are_errors(tmp_path, rules, value, needle):
    path = write(tmp_path / "pyproject.toml", f"[tool.mpslint]\ntorch-version = {value}\n")
    with pytest.raises(ConfigError) as info:
        resolve(tmp_path, "a.py")
    assert needle in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("value, expected", [("1.12", (1, 12)), ("2.13", (2, 13)), ("2.10.1+cu121", (2, 10))])
def test_torch_versions_mpslint_knows_are_silent(tmp_path, rules, value, expected):
    write(tmp_path / "pyproject.toml", f"[tool.mpslint]\ntorch-version = '{value}'\n")
    resolver = ConfigResolver(cwd=tmp_path)
    assert resolver.for_path(tmp_path / "a.py").settings.torch_version == expected
    assert resolver.warnings == []


def test_a_torch_version_newer_than_mpslint_knows_is_a_warning_once(tmp_path, rules):
    from mpslint.knowledge.mps_kernels import latest_bundled_version

    major, minor = latest_bundled_version()
    newer = f"{major}.{minor + 1}"
    path = write(tmp_path / "pyproject.toml", f"[tool.mpslint]\ntorch-version = '{newer}'\n")
    resolver = ConfigResolver(cwd=tmp_path)
    for name in ("a.py", "sub/b.py", "sub/deeper/c.py"):
        assert resolver.for_path(tmp_path / name).settings.torch_version == (major, minor + 1)
    assert resolver.warnings == [
        f"{path}: torch-version {newer} is newer than the newest torch mpslint knows ({major}.{minor}): "
        f"op coverage follows torch {major}.{minor} unless torch {newer} is installed"
    ]
    # The command line's floor wins: the file's value is still validated, but not warned about.
    overridden = ConfigResolver(Overrides(torch_version=(2, 4)), cwd=tmp_path)
    assert overridden.for_path(tmp_path / "a.py").settings.torch_version == (2, 4)
    assert overridden.warnings == []


# --- which config a file gets ------------------------------------------------------------------
# The nearest config file wins; without one, the defaults of the file's own project (the nearest
# directory with a pyproject.toml, a requirements*.txt or a .git), never the current directory's.


@pytest.fixture
def cwd_project(tmp_path):
    """The current directory: a project with its own config and a torch floor in an extra."""
    here = tmp_path / "here"
    write(
        here / "pyproject.toml",
        "[project]\nname = 'here'\n[project.optional-dependencies]\ngpu = ['torch>=2.0']\n"
        "[tool.mpslint]\nselect = ['MPS990']\n",
    )
    write(here / "requirements.txt", "torch>=2.1\n")
    return here


def _from(cwd: Path, target: Path):
    return ConfigResolver(cwd=cwd).for_path(target)


def test_a_file_in_no_project_gets_plain_defaults_wherever_mpslint_runs(tmp_path, rules, cwd_project):
    target = write(tmp_path / "elsewhere" / "train.py", "")
    from_project, from_its_dir = _from(cwd_project, target), _from(target.parent, target)
    assert from_project.settings == from_its_dir.settings == Settings()  # no floor, every rule
    assert from_project.path is None and from_project.settings.torch_version is None


def test_a_file_outside_the_cwd_takes_the_floor_of_its_own_project(tmp_path, rules, cwd_project):
    write(tmp_path / "other" / "requirements.txt", "torch>=2.4\n")
    target = write(tmp_path / "other" / "src" / "train.py", "")
    for cwd in (cwd_project, tmp_path / "other", target.parent, tmp_path):
        config = _from(cwd, target)
        assert config.path is None and config.root == tmp_path / "other"
        assert config.settings.torch_version == (2, 4), cwd


def test_a_file_outside_the_cwd_takes_its_own_config(tmp_path, rules, cwd_project):
    write(tmp_path / "other" / "mpslint.toml", "select = ['MPS992']\n")
    target = write(tmp_path / "other" / "train.py", "")
    config = _from(cwd_project, target)
    assert config.path == tmp_path / "other" / "mpslint.toml"
    assert config.settings.select == {"MPS992"}


def test_a_repository_root_bounds_the_project(tmp_path, rules):
    # A requirements file above the repository is not the repository's.
    write(tmp_path / "requirements.txt", "torch>=2.2\n")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    target = write(tmp_path / "repo" / "pkg" / "train.py", "")
    config = _from(tmp_path, target)
    assert config.root == tmp_path / "repo" and config.settings.torch_version is None


def test_a_pyproject_without_our_table_is_the_project_for_defaults(tmp_path, rules):
    write(tmp_path / "proj" / "pyproject.toml", "[project]\nname = 'p'\ndependencies = ['torch>=2.3']\n")
    target = write(tmp_path / "proj" / "src" / "pkg" / "train.py", "")
    assert _from(tmp_path, target).settings.torch_version == (2, 3)
    assert _from(tmp_path / "proj" / "src", target).settings.torch_version == (2, 3)


def test_inside_the_cwd_without_any_project_the_cwd_roots_the_defaults(tmp_path, rules):
    # Ruff's default configuration resolves relative globs from the current directory.
    target = write(tmp_path / "gen" / "x.py", "")
    config = ConfigResolver(Overrides(extend_exclude=("gen/*.py",)), cwd=tmp_path).for_path(target)
    assert config.root == tmp_path and config.is_excluded(target)


def test_one_resolver_gives_each_project_its_own_defaults(tmp_path, rules):
    write(tmp_path / "a" / "requirements.txt", "torch>=2.2\n")
    write(tmp_path / "b" / "requirements.txt", "torch>=2.6\n")
    resolver = ConfigResolver(cwd=tmp_path)
    floors = [resolver.for_path(tmp_path / p).settings.torch_version for p in ("a/x.py", "b/y/z.py", "a/q/r.py", "c.py")]
    assert floors == [(2, 2), (2, 6), (2, 2), None]
