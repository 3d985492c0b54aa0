"""Migration benchmark (issue 25): public CUDA repositories, each with a small driver, before and after `--fix`.

For each case the repository's files are exported from a git mirror (or cloned), twice: `before/` as published,
`after/` after `mpslint --fix` on the case's files (and its driver, where the driver is written in the
repository's own CUDA style; with `--unsafe-fixes` where the case says float64 needs it). Both run under `mpslint verify --simulate`. A case counts when before the fix the
driver fails or never touches mps, and after it finishes with ops on mps. Prints one line per case and N of M,
and next to each the static verdict the fix run gives the entry point the driver runs ("can reach MPS", or what
blocks it) with whether it agrees with `verify --simulate` after the fix (N of M agree).

    python benchmarks/migrate/run.py [--mirrors DIR] [--work DIR] [--only NAME ...]

`--mirrors DIR` holds `owner+name/repo` bare git directories (as the team's fetch tool makes them); without it
each repository is cloned from GitHub (network needed). Not a test: it takes minutes (one torch import per run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DRIVERS = HERE / "drivers"


@dataclass
class Case:
    name: str
    repo: str  # owner/name on GitHub
    files: List[str]  # paths in the repository, exported as they are ("folder/": every file under it)
    fix: List[str]  # paths (after export) that `mpslint --fix` runs on
    driver: str  # drivers/<driver>, copied to the export's root
    flatten: Optional[str] = None  # export the files of this folder at the root (drivers import them by name)
    fix_driver: bool = False  # the driver is written in the repository's CUDA style: fixed with it
    unsafe: bool = False  # float64 on the device needs `--unsafe-fixes` (float32 instead)
    notes: str = ""
    entry: str = ""  # the entry point the driver runs (runpy), whose static verdict is compared; "": the driver

    @property
    def entry_point(self) -> str:
        return self.entry or self.driver


CASES = [
    Case("tcn-adding", "locuslab/TCN",
         ["TCN/__init__.py", "TCN/tcn.py", "TCN/adding_problem/__init__.py", "TCN/adding_problem/add_test.py",
          "TCN/adding_problem/model.py", "TCN/adding_problem/utils.py"],
         ["TCN"], "tcn_adding.py", entry="TCN/adding_problem/add_test.py"),
    Case("tcn-copymem", "locuslab/TCN",
         ["TCN/__init__.py", "TCN/tcn.py", "TCN/copy_memory/__init__.py", "TCN/copy_memory/copymem_test.py",
          "TCN/copy_memory/model.py", "TCN/copy_memory/utils.py"],
         ["TCN"], "tcn_copymem.py", entry="TCN/copy_memory/copymem_test.py"),
    Case("hunkim-seq2seq", "hunkim/PyTorchZeroToAll", ["seq2seq_models.py"], ["seq2seq_models.py"],
         "hunkim_seq2seq.py", fix_driver=True),
    Case("spro-masked-ce", "spro/practical-pytorch", ["seq2seq-translation/masked_cross_entropy.py"],
         ["masked_cross_entropy.py"], "spro_masked_ce.py", flatten="seq2seq-translation", fix_driver=True),
    Case("pygcn", "tkipf/pygcn", ["pygcn/"], ["pygcn"], "pygcn_train.py", unsafe=True, entry="pygcn/train.py"),
    Case("pygat", "Diego999/pyGAT", ["layers.py", "models.py", "train.py", "utils.py"],
         ["layers.py", "models.py", "train.py", "utils.py"], "pygat_train.py", unsafe=True, entry="train.py"),
    Case("td3", "sfujim/TD3", ["TD3.py", "utils.py"], ["TD3.py", "utils.py"], "td3_train.py"),
    Case("wideresnet", "xternalz/WideResNet-pytorch", ["wideresnet.py"], ["wideresnet.py"], "wideresnet_train.py",
         fix_driver=True),
    Case("resnet-cifar10", "akamaster/pytorch_resnet_cifar10", ["resnet.py"], ["resnet.py"],
         "resnet_cifar_train.py", fix_driver=True),
    Case("repdistiller", "HobbitLong/RepDistiller", ["helper/", "models/", "distiller_zoo/"],
         ["helper", "models", "distiller_zoo"], "repdistiller_train.py", fix_driver=True),
    Case("torchdiffeq-ode-demo", "rtqichen/torchdiffeq", ["torchdiffeq/", "examples/ode_demo.py"],
         ["torchdiffeq", "examples"], "torchdiffeq_ode_demo.py", entry="examples/ode_demo.py"),
]


@dataclass
class Outcome:
    exit_code: Optional[int] = None
    ops: int = 0
    on_mps: int = 0
    verdict: str = ""
    reasons: str = ""  # why verify's verdict is "fail" (hot host syncs do not stop a case from counting)
    error: str = ""

    @property
    def reaches_mps(self) -> bool:
        return self.exit_code == 0 and self.on_mps > 0

    def text(self) -> str:
        if self.error:
            return f"error: {self.error}"
        why = f": {self.reasons}" if self.reasons else ""
        return f"exit {self.exit_code}, {self.on_mps} of {self.ops} ops on mps ({self.verdict}{why})"


@dataclass
class Result:
    case: Case
    before: Outcome = field(default_factory=Outcome)
    after: Outcome = field(default_factory=Outcome)
    fix_summary: str = ""
    static: str = ""  # what the fix run's summary says of the entry point the driver runs

    @property
    def counts(self) -> bool:
        return not self.before.reaches_mps and self.after.reaches_mps

    @property
    def agrees(self) -> bool:
        """The static verdict ("can reach MPS", or a blocker) says what `verify --simulate` found after the fix."""
        return self.static.startswith("can reach MPS") == self.after.reaches_mps


def _git_dir(repo: str, mirrors: Optional[Path], work: Path) -> Path:
    if mirrors is not None:
        found = mirrors / repo.replace("/", "+") / "repo"
        if found.exists():
            return found
    target = work / "clones" / repo.replace("/", "+")
    if not target.exists():
        subprocess.run(["git", "clone", "--depth", "1", "--bare", f"https://github.com/{repo}", str(target)], check=True)
    return target


def _listed(case: Case, git_dir: Path) -> List[str]:
    paths: List[str] = []
    for path in case.files:
        if not path.endswith("/"):
            paths.append(path)
            continue
        tree = subprocess.run(["git", "-C", str(git_dir), "ls-tree", "-r", "--name-only", "HEAD", "--", path],
                              capture_output=True, text=True, check=True)
        paths.extend(tree.stdout.split())
    return paths


def _export(case: Case, git_dir: Path, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    for path in _listed(case, git_dir):
        shown = subprocess.run(["git", "-C", str(git_dir), "show", f"HEAD:{path}"], capture_output=True)
        data = shown.stdout if shown.returncode == 0 else b""  # a missing __init__.py: an empty one
        relative = path[len(case.flatten) + 1:] if case.flatten and path.startswith(case.flatten + "/") else path
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    shutil.copyfile(DRIVERS / case.driver, into / case.driver)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _fix(case: Case, folder: Path) -> str:
    paths = list(case.fix) + ([case.driver] if case.fix_driver else [])
    unsafe = ["--unsafe-fixes"] if case.unsafe else []
    done = subprocess.run([sys.executable, "-m", "mpslint", "--fix", *unsafe, "--no-cache", *paths], cwd=folder,
                          capture_output=True, text=True, env=_env())
    said = (done.stdout + done.stderr).splitlines()
    lines = [line for line in said if line.startswith(("Found", "All checks", "Entry points"))]
    return " ".join(lines) if lines else (said[-1] if said else "")


def _static(case: Case, folder: Path) -> str:
    """The entry-point line of a `--diff` run over the fixed files and the driver (nothing left to fix there but
    the driver, where it is not fixed with the repository: --diff writes nothing)."""
    paths = list(case.fix) + ([] if case.driver in case.fix else [case.driver])
    unsafe = ["--unsafe-fixes"] if case.unsafe else []
    done = subprocess.run([sys.executable, "-m", "mpslint", "--diff", *unsafe, "--no-cache", "-j", "1", *paths],
                          cwd=folder, capture_output=True, text=True, env=_env())
    prefix = f"  {case.entry_point}: "
    for line in done.stderr.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):]
    return "not listed as an entry point"


def _verify(case: Case, exported: Path, timeout: int) -> Outcome:
    # In a copy: drivers write data and checkpoints next to themselves, and the exports stay as exported and
    # fixed for benchmarks/cuda_equivalence.
    folder = exported.with_name(exported.name + "-run")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(exported, folder)
    done = subprocess.run([sys.executable, "-m", "mpslint", "verify", "--simulate", "--output-format", "json",
                           "--timeout", str(timeout), case.driver], cwd=folder, capture_output=True, text=True,
                          env=_env())
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return Outcome(error=(done.stderr.strip().splitlines() or ["no report"])[-1][:200])
    reasons = ", ".join(r.split(" (")[0].split(":")[0] for r in report.get("reasons", []))
    return Outcome(report.get("script_exit_code"), report.get("ops", 0), report.get("ops_on_device", 0),
                   report.get("verdict", ""), reasons)


def run_case(case: Case, mirrors: Optional[Path], work: Path, timeout: int) -> Result:
    result = Result(case)
    git_dir = _git_dir(case.repo, mirrors, work)
    base = work / case.name
    shutil.rmtree(base, ignore_errors=True)
    before, after = base / "before", base / "after"
    _export(case, git_dir, before)
    _export(case, git_dir, after)
    result.fix_summary = _fix(case, after)
    result.static = _static(case, after)
    result.before = _verify(case, before, timeout)
    result.after = _verify(case, after, timeout)
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirrors", type=Path, default=None)
    # Outside this repository: its pyproject.toml (torch-version) and .gitignore must not apply to the exports.
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "mpslint-migrate")
    parser.add_argument("--only", nargs="*", default=None)
    # TCN's copy-memory case takes 143 s alone and more than 300 s on a loaded machine (a timeout is no verdict).
    parser.add_argument("--timeout", type=int, default=900)
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.only or c.name in args.only]
    results: List[Result] = []
    for case in cases:
        started = time.perf_counter()
        result = run_case(case, args.mirrors, args.work, args.timeout)
        results.append(result)
        mark = "ok  " if result.counts else "FAIL"
        how = " --unsafe-fixes" if case.unsafe else ""
        print(f"{mark} {case.name} ({case.repo}){how} [{time.perf_counter() - started:.0f}s]\n"
              f"     before: {result.before.text()}\n     fix:    {result.fix_summary}\n"
              f"     after:  {result.after.text()}\n"
              f"     static: {case.entry_point}: {result.static} [{'agrees' if result.agrees else 'DISAGREES'}]",
              flush=True)
    counted = sum(1 for r in results if r.counts)
    print(f"\n{counted} of {len(results)} cases: before --fix failing or off mps, after --fix running on (simulated) mps")
    agreeing = sum(1 for r in results if r.agrees)
    print(f"{agreeing} of {len(results)} cases: the fix run's static entry-point verdict agrees with verify --simulate")
    return 0 if counted == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
