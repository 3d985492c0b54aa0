"""No mpslint process imports anything from the tree it checks (issue: `mpslint .` ran a `socket.py`).

The checked tree gets a module under the name of every module the CLI, its
pool workers, the resource tracker and the language server's workers import:
each planted module, if it ever runs, leaves a marker file. Then mpslint
checks and fixes that tree from inside it, the way a pre-commit hook or a CI
job does, with enough files that the process pool starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lspclient import Session, run_async

REPO = Path(__file__).resolve().parent.parent
FILES = 70  # more than the runner's threshold for starting a pool
CUDA = "import torch\nx = torch.zeros(1).cuda()\n"

# What the processes import, listed by a fresh interpreter: the names are the standard
# library's and the dependencies' as installed here, so the test follows their versions.
_LIST_IMPORTS = textwrap.dedent(
    """
    import json, sys
    import multiprocessing.spawn, multiprocessing.resource_tracker, concurrent.futures.process
    import mpslint.cli, mpslint.runner, mpslint.engine, mpslint.fixer, mpslint.server.worker
    from mpslint.registry import rule_classes
    rule_classes()
    try:
        import mpslint.server.server
    except ImportError:  # the server extra is not installed
        pass
    print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})))
    """
)


def _imported_names() -> list:
    out = subprocess.run(
        [sys.executable, "-c", _LIST_IMPORTS], capture_output=True, text=True, cwd=REPO, env=_env(), check=True
    ).stdout
    # Built-in modules come from the interpreter itself, never from a path; `mpslint` is the
    # tool the user chose to run (`python -m mpslint` finds a package of that name first by design).
    skip = set(sys.builtin_module_names) | {"mpslint", "__main__"}
    return [name for name in json.loads(out) if name not in skip and name.isidentifier()]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


@pytest.fixture(scope="module")
def mpslint_command(tmp_path_factory):
    """How a user starts mpslint: the `mpslint` command, a script outside the tree, as pip installs it.

    Not `python -m mpslint`: there Python itself imports its `-m` machinery (runpy, importlib)
    from the working directory before any code of mpslint's runs; the docs say so, and
    `test_python_m_drops_the_working_directory` checks what mpslint does once it runs.
    """
    launcher = tmp_path_factory.mktemp("bin") / "mpslint"
    launcher.write_text("import sys\nfrom mpslint.cli import main\nsys.exit(main())\n", encoding="utf-8")
    return [sys.executable, str(launcher)]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A tree with fixable files and a planted module for every name mpslint imports; the marker folder."""
    tree = tmp_path_factory.mktemp("checked")
    markers = tmp_path_factory.mktemp("markers")
    names = _imported_names()
    assert {"socket", "pickle", "copyreg", "json", "libcst", "click"} <= set(names)
    for name in names:
        (tree / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n", encoding="utf-8")
    for i in range(FILES):
        (tree / f"train_{i}.py").write_text(CUDA, encoding="utf-8")
    return tree, markers


def _ran(markers: Path) -> list:
    return sorted(p.name for p in markers.iterdir())


def test_the_planted_modules_would_run_if_imported(planted):
    """The trap works: a plain `python -c` in the tree does import a planted module."""
    tree, markers = planted
    subprocess.run([sys.executable, "-c", "import socket"], cwd=tree, env=_env(), check=False)
    assert "socket" in _ran(markers)
    (markers / "socket").unlink()


@pytest.mark.parametrize("flags", [[], ["--fix", "--diff"]], ids=["check", "diff"])
def test_cli_and_its_pool_import_nothing_from_the_checked_tree(planted, mpslint_command, flags):
    tree, markers = planted
    result = subprocess.run(
        [*mpslint_command, ".", "--no-cache", "-j", "2", *flags],
        cwd=tree,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert _ran(markers) == []
    assert result.returncode == 1, result.stderr
    if not flags:
        assert result.stdout.count("MPS101") == FILES
    else:
        assert result.stdout.count("+++ ") == FILES


def test_the_working_directory_is_not_the_checked_tree_either(planted, mpslint_command, tmp_path):
    """`python -m mpslint other/` run from a folder holding a `tomllib.py` (item 9)."""
    tree, markers = planted
    elsewhere = tmp_path / "project"
    elsewhere.mkdir()
    (elsewhere / "train.py").write_text(CUDA, encoding="utf-8")
    result = subprocess.run(
        [*mpslint_command, str(elsewhere), "--no-cache"],
        cwd=tree,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert _ran(markers) == []
    assert "MPS101" in result.stdout, result.stderr


@run_async
async def test_language_server_workers_import_nothing_from_the_workspace(planted, mpslint_command):
    """The server as an editor starts it, from the workspace folder; its workers check the open file."""
    pytest.importorskip("pygls")
    tree, markers = planted
    async with Session(tree, command=[*mpslint_command, "server", "--workers", "1"]) as session:
        uri = session.open(tree / "train_0.py")
        diagnostics = await session.diagnostics(uri)
        assert [d.code for d in diagnostics] == ["MPS101"]
    assert _ran(markers) == []


def test_python_m_drops_the_working_directory(tmp_path):
    """The issue's reproducer: `python -m mpslint` in a folder holding a `tomllib.py` (and a `click.py`)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("tomllib", "tomli", "click", "libcst", "pathspec", "json"):
        (tree / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n", encoding="utf-8")
    (tree / "train.py").write_text(CUDA, encoding="utf-8")
    (tree / "pyproject.toml").write_text("[tool.mpslint]\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mpslint", ".", "--no-cache"], cwd=tree, env=_env(), capture_output=True, text=True,
        timeout=300,
    )
    assert _ran(markers) == []
    assert "MPS101" in result.stdout, result.stderr

