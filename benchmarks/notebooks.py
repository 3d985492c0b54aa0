"""Checking a folder of real notebooks, side by side with what it costs just to read them, and with the same code as scripts.

    python benchmarks/notebooks.py [--notebooks DIR] [--repeat 3] [--no-ruff]

Notebooks carry their outputs (base64 images, long logs), so most of their
bytes are not code. The default folder is the example notebooks of the
gpytorch 1.15.2 source release (50 notebooks, a pinned download into
``benchmarks/.corpus/``); ``--notebooks DIR`` measures any folder. Runs, all
in the same invocation so that their ratios are comparable on a loaded machine:

- ``json.load`` of every notebook in one process: the floor, reading the files;
- ``mpslint --no-cache`` on the notebooks (cold), and again with the cache warm;
- ``mpslint --no-cache`` on the same Python cells written out as ``.py`` files
  (what mpslint's notebook code path adds over checking the code alone);
- ``ruff check --no-cache --select E,F`` on the notebooks (Ruff lints notebooks natively).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402  (the shared measuring helpers)

PACKAGE, VERSION = "gpytorch", "1.15.2"
READ_ALL = "import json, sys\nfor name in sys.argv[1:]:\n    with open(name, 'rb') as handle:\n        json.load(handle)\n"


def fetch_notebooks() -> Path:
    """The unpacked sdist's directory, downloading the pinned source release the first time."""
    root = bench.CORPUS_ROOT / f"{PACKAGE}-{VERSION}"
    if root.is_dir():
        return root
    bench.CORPUS_ROOT.mkdir(parents=True, exist_ok=True)
    archives = sorted(bench.CORPUS_ROOT.glob(f"{PACKAGE}-{VERSION}.tar.gz"))
    if not archives:
        print(f"downloading the {PACKAGE}=={VERSION} source release ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary=:all:",
                        f"{PACKAGE}=={VERSION}", "-d", str(bench.CORPUS_ROOT)], check=True)
        archives = sorted(bench.CORPUS_ROOT.glob(f"{PACKAGE}-{VERSION}.tar.gz"))
    with tarfile.open(archives[0]) as archive:
        members = [m for m in archive.getmembers() if m.name.endswith(".ipynb") and m.isfile()]
        archive.extractall(bench.CORPUS_ROOT, members)
    return root


def as_scripts(notebooks: List[Path], dest: Path, code: Path) -> List[Path]:
    """Each notebook's program (its Python cells, IPython escapes replaced) as a ``.py`` file."""
    sys.path.insert(0, str(code))
    from mpslint.notebook.document import Notebook
    from mpslint.notebook.lint import python_sources
    from mpslint.notebook.program import Program

    scripts = []
    for i, path in enumerate(notebooks):
        program, _ = Program.of(python_sources(Notebook.parse(path.read_text(encoding="utf-8"))))
        script = dest / f"{i:03d}_{path.stem}.py"
        script.write_text(program.text, encoding="utf-8")
        scripts.append(script)
    return scripts


def findings(output: str) -> int:
    return sum(1 for line in output.splitlines() if ": MPS" in line or (line.count(":") >= 3 and " [*] " in line))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", type=Path, help="a folder of notebooks instead of the pinned download")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-ruff", action="store_true", help="do not install and run Ruff")
    args = parser.parse_args(argv)

    source = args.notebooks or fetch_notebooks()
    notebooks = sorted(p for p in source.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    size = sum(p.stat().st_size for p in notebooks)
    rows: List[bench.Measurement] = []
    with tempfile.TemporaryDirectory(prefix="mpslint-notebooks-") as tmp:
        code = bench.snapshot(Path(tmp) / "code")
        env_code = ["env", f"PYTHONPATH={code}"]
        mpslint = env_code + bench.mpslint_command()
        work = Path(tmp) / "nbs"
        work.mkdir()
        staged = []
        for i, path in enumerate(notebooks):
            target = work / f"{i:03d}_{path.name}"
            target.write_bytes(path.read_bytes())
            staged.append(target)
        scripts_dir = Path(tmp) / "scripts"
        scripts_dir.mkdir()
        scripts = as_scripts(staged, scripts_dir, code)
        code_bytes = sum(p.stat().st_size for p in scripts)

        rows.append(bench.best_of(args.repeat, "json.load of every notebook", [sys.executable, "-c", READ_ALL, *map(str, staged)]))
        cold, text = bench.measure("mpslint --no-cache (notebooks, cold)", mpslint + ["--no-cache", "."], cwd=work)
        for _ in range(args.repeat - 1):
            again, _ = bench.measure("mpslint --no-cache (notebooks, cold)", mpslint + ["--no-cache", "."], cwd=work)
            cold = min(cold, again, key=lambda m: m.wall)
        cold.findings = findings(text)
        rows.append(cold)
        bench.measure("fill the cache", mpslint + ["."], cwd=work)
        warm = bench.best_of(args.repeat, "mpslint (notebooks, warm cache)", mpslint + ["."], cwd=work)
        warm.findings = cold.findings
        rows.append(warm)
        scripts_run, script_text = bench.measure("mpslint --no-cache (the same cells as .py)", mpslint + ["--no-cache", "."], cwd=scripts_dir)
        for _ in range(args.repeat - 1):
            again, _ = bench.measure("mpslint --no-cache (the same cells as .py)", mpslint + ["--no-cache", "."], cwd=scripts_dir)
            scripts_run = min(scripts_run, again, key=lambda m: m.wall)
        scripts_run.findings = findings(script_text)
        rows.append(scripts_run)
        if not args.no_ruff:
            ruff = bench.ensure_venv(".venv-ruff", bench.RUFF, "ruff")
            rows.append(bench.best_of(args.repeat, f"{bench.RUFF} check --no-cache --select E,F (notebooks)",
                                      [str(ruff), "check", "--no-cache", "--select", "E,F", "--exit-zero", "."], cwd=work))

    print(f"{len(notebooks)} notebooks, {size / 1e6:.1f} MB ({code_bytes / 1e3:.0f} KB of it Python cells), from {source}")
    print(bench.table(rows))
    floor, warm_run = rows[0], rows[2]
    print(f"cold notebooks / json.load floor: {cold.wall / floor.wall:.1f}x wall")
    print(f"cold notebooks / the same cells as .py: {cold.wall / scripts_run.wall:.2f}x wall, {cold.cpu / scripts_run.cpu:.2f}x CPU")
    print(f"warm / cold: {warm_run.wall / cold.wall:.2f}x wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
