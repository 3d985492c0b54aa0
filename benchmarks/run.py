"""Benchmark mpslint against its peers on a pinned real corpus, side by side in one run.

    python benchmarks/run.py                      # everything (torchfix on a sample)
    python benchmarks/run.py --skip-torchfix --skip-linearity
    python benchmarks/run.py --torchfix-sample 0  # torchfix on the whole corpus (~8+ minutes)

The corpus is the ``transformers`` package of transformers 5.23.0 (``pip
download --no-deps``, unzipped into ``benchmarks/.corpus/``, gitignored). Each
tool runs as a child process on a copy of the corpus in a temporary directory
(outside any git checkout and config file, so no tool skips or reconfigures
anything), and is measured from outside:

- wall time;
- CPU time (user + system of the process and every child it reaped: pool
  workers included), which stays meaningful when the machine is busy;
- peak RSS of the largest single process (``wait4`` rusage: main process or
  any one worker) and peak RSS summed over the process tree (sampled every
  50 ms from ``/proc``).

The peers live in their own virtual environments under ``benchmarks/`` (also
gitignored): torchfix 0.7.0 pins an older LibCST, and ruff is a binary wheel.
This is not a timed test: it prints figures and the ratios of the issue's
targets, and exits 0 unless a tool could not run at all.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
CORPUS_ROOT = HERE / ".corpus"
PACKAGE, VERSION = "transformers", "5.23.0"
TREE = CORPUS_ROOT / f"{PACKAGE}-{VERSION}"
TORCHFIX = "torchfix==0.7.0"
RUFF = "ruff==0.17.6"

# The child that measures LibCST's bare parse speed: one process, every file, nothing else.
PARSE_SCRIPT = r"""
import sys, libcst
failed = 0
for path in sys.argv[1:] or sys.stdin.read().splitlines():
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        libcst.parse_module(data)
    except Exception:
        failed += 1
print(f"failed={failed}")
"""


@dataclass
class Measurement:
    label: str
    command: str
    wall: float
    cpu: float
    peak_rss_mb: float  # the largest single process
    peak_tree_mb: float  # sampled sum over the process tree
    exit_code: int
    output_lines: int
    findings: int
    note: str = ""
    scale: float = 1.0  # wall/cpu were multiplied by this to estimate the whole corpus

    @property
    def scaled(self) -> bool:
        return self.scale != 1.0


@dataclass
class Corpus:
    root: Path
    files: List[Path] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(p.stat().st_size for p in self.files)


# --------------------------------------------------------------------------- setup


def fetch_corpus() -> Path:
    """The unpacked package directory, downloading the pinned wheel the first time."""
    ready = TREE / PACKAGE
    if ready.is_dir():
        return ready
    CORPUS_ROOT.mkdir(parents=True, exist_ok=True)
    wheels = sorted(CORPUS_ROOT.glob(f"{PACKAGE}-{VERSION}-*.whl"))
    if not wheels:
        print(f"downloading {PACKAGE}=={VERSION} ...", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             f"{PACKAGE}=={VERSION}", "-d", str(CORPUS_ROOT)],
            check=True,
        )
        wheels = sorted(CORPUS_ROOT.glob(f"{PACKAGE}-{VERSION}-*.whl"))
    with zipfile.ZipFile(wheels[0]) as zf:
        zf.extractall(TREE, [m for m in zf.namelist() if m.startswith(f"{PACKAGE}/")])
    return ready


def ensure_venv(name: str, requirement: str, executable: str) -> Path:
    """``benchmarks/<name>/bin/<executable>``, creating the venv and installing ``requirement`` if needed."""
    venv = HERE / name
    tool = venv / "bin" / executable
    stamp = venv / ".requirement"
    if tool.exists() and stamp.exists() and stamp.read_text() == requirement:
        return tool
    print(f"installing {requirement} into {venv} ...", file=sys.stderr)
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", requirement], check=True)
    stamp.write_text(requirement)
    return tool


def stage(source: Path, dest: Path, copies: int) -> Corpus:
    """``copies`` copies of the package under ``dest`` (copy0/, copy1/, ...)."""
    for i in range(copies):
        shutil.copytree(source, dest / f"copy{i}" / source.name)
    return Corpus(dest, sorted(dest.rglob("*.py")))


def stage_sample(corpus: Corpus, dest: Path, n: int) -> Corpus:
    """Every k-th file of the sorted corpus (k = files // n), keeping relative paths."""
    step = max(1, len(corpus.files) // n)
    chosen = corpus.files[::step][:n]
    for path in chosen:
        target = dest / path.relative_to(corpus.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return Corpus(dest, sorted(dest.rglob("*.py")))


def snapshot(dest: Path) -> Path:
    """A frozen, byte-compiled copy of this checkout's ``mpslint/`` and ``rules/``.

    mpslint runs from the copy (``PYTHONPATH``), so edits to the working tree
    during a run cannot invalidate the cache between the fill and the warm run
    (the cache key includes mpslint's own code), and modules are loaded from
    bytecode like in an installed copy, even under ``PYTHONDONTWRITEBYTECODE``.
    """
    import compileall

    repo = HERE.parent
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(repo / "mpslint", dest / "mpslint", ignore=ignore)
    if (repo / "rules").is_dir():
        shutil.copytree(repo / "rules", dest / "rules", ignore=ignore)
    compileall.compile_dir(str(dest / "mpslint"), quiet=1)
    return dest


def mpslint_command() -> List[str]:
    return [sys.executable, "-c", "import sys; from mpslint.cli import main; sys.exit(main())"]


# --------------------------------------------------------------------------- measuring


def _tree_rss_kb(root: int) -> int:
    """Sum of RSS over ``root`` and its descendants, from /proc (0 where /proc is missing)."""
    children: Dict[int, List[int]] = {}
    rss: Dict[int, int] = {}
    page_kb = os.sysconf("SC_PAGE_SIZE") // 1024
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * page_kb
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


def measure(label: str, argv: Sequence[str], *, cwd: Optional[Path] = None, note: str = "",
            stdin: Optional[str] = None) -> Tuple[Measurement, str]:
    print(f"  running {label} ...", file=sys.stderr, flush=True)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as inp:
        if stdin is not None:
            inp.write(stdin.encode())
            inp.seek(0)
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdin=inp, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)
        peak_tree = [0]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.05):
                peak_tree[0] = max(peak_tree[0], _tree_rss_kb(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        stop.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    lines = text.splitlines()
    findings = sum(1 for line in lines if _looks_like_finding(line))
    return Measurement(
        label=label,
        command=" ".join(_short(a) for a in argv),
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
        peak_tree_mb=max(peak_tree[0], usage.ru_maxrss) / 1024,
        exit_code=proc.returncode,
        output_lines=len(lines),
        findings=findings,
        note=note,
    ), text


def _looks_like_finding(line: str) -> bool:
    # path:row:col: CODE message (mpslint, ruff and torchfix all print this shape)
    parts = line.split(":", 3)
    return len(parts) == 4 and parts[1].strip().isdigit() and parts[2].strip().isdigit()


def _short(arg: str) -> str:
    home = str(HERE.parent)
    return arg.replace(home + "/", "") if arg.startswith(home) else arg


def best_of(n: int, label: str, argv: Sequence[str], **kw) -> Measurement:
    runs = [measure(label, argv, **kw)[0] for _ in range(n)]
    best = min(runs, key=lambda m: m.wall)
    if n > 1:
        best.note = (best.note + f" best of {n}").strip()
    return best


def scaled(m: Measurement, factor: float, how: str) -> Measurement:
    m.scale = factor
    m.wall *= factor
    m.cpu *= factor
    m.note = (m.note + f" scaled x{factor:.2f} {how}").strip()
    return m


# --------------------------------------------------------------------------- report


def table(rows: List[Measurement]) -> str:
    head = "| run | wall s | CPU s | peak RSS/proc MB | peak RSS total MB | findings | exit | note |"
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---|"]
    for m in rows:
        est = "~" if m.scaled else ""
        lines.append(
            f"| {m.label} | {est}{m.wall:.2f} | {est}{m.cpu:.2f} | {m.peak_rss_mb:.0f} | {m.peak_tree_mb:.0f} "
            f"| {m.findings} | {m.exit_code} | {m.note} |"
        )
    return "\n".join(lines)


def ratio_line(name: str, value: Optional[float], target: str, ok: Optional[bool], how: str = "") -> str:
    if value is None:
        return f"| {name} | n/a | {target} | skipped |"
    verdict = "met" if ok else "NOT met"
    return f"| {name} | {value:.3g} | {target} | {verdict}{(' (' + how + ')') if how else ''} |"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="an unpacked package directory to use instead of the pinned download")
    parser.add_argument("--jobs", "-j", type=int, help="mpslint -j (default: mpslint's own, one per CPU)")
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--torchfix-sample", type=int, default=300, metavar="N",
                        help="run torchfix on N files and scale by bytes (0: the whole corpus; default 300)")
    parser.add_argument("--skip-ruff", action="store_true")
    parser.add_argument("--skip-parse", action="store_true", help="skip the LibCST parse floor")
    parser.add_argument("--parse-sample", type=int, default=0, metavar="N",
                        help="parse N files and scale by bytes (default 0: every file)")
    parser.add_argument("--skip-linearity", action="store_true", help="skip the 2x and 4x corpus runs")
    parser.add_argument("--linearity-sample", type=int, default=0, metavar="N",
                        help="run the 1x/2x/4x series on an N-file sample instead of the whole corpus")
    parser.add_argument("--repeat", type=int, default=1, help="runs per mpslint measurement, best wall kept")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON here")
    args = parser.parse_args(argv)

    source = args.corpus.resolve() if args.corpus else fetch_corpus()
    tools: Dict[str, Path] = {}
    if not args.skip_torchfix:
        tools["torchfix"] = ensure_venv(".venv-torchfix", TORCHFIX, "torchfix")
    if not args.skip_ruff:
        tools["ruff"] = ensure_venv(".venv-ruff", RUFF, "ruff")

    mpslint = mpslint_command()
    jobs = ["-j", str(args.jobs)] if args.jobs else []
    load_before = os.getloadavg()
    rows: List[Measurement] = []
    ratios: List[str] = []
    results: Dict[str, Measurement] = {}

    with tempfile.TemporaryDirectory(prefix="mpslint-bench-") as tmp:
        tmpdir = Path(tmp)
        frozen = snapshot(tmpdir / "src")
        # Children run from here: ``python -c`` puts the working directory first on sys.path,
        # which from the checkout would import the live tree instead of the snapshot.
        previous_cwd = os.getcwd()
        os.chdir(tmpdir)
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(frozen), os.environ.get("PYTHONPATH")]))
        one = stage(source, tmpdir / "1x", 1)
        total_bytes = one.bytes
        print(f"corpus: {len(one.files)} files, {total_bytes / 1e6:.1f} MB", file=sys.stderr)

        # Startup: one small file, the pre-commit case.
        small = tmpdir / "one_file.py"
        small.write_text("import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\n", encoding="utf-8")
        startup = [measure("startup: mpslint one_file.py", [*mpslint, "--no-cache", str(small)])[0] for _ in range(5)]
        imports = [measure("startup: python -c 'import libcst'", [sys.executable, "-c", "import libcst"])[0] for _ in range(5)]
        for runs in (startup, imports):
            m = min(runs, key=lambda r: r.wall)
            m.note = f"best of 5 (median {statistics.median(r.wall for r in runs):.3f} s)"
            rows.append(m)
        results["startup"], results["import_libcst"] = rows[-2], rows[-1]

        cold = best_of(args.repeat, "mpslint cold (--no-cache)", [*mpslint, "--no-cache", *jobs, str(one.root)])
        rows.append(cold)
        cache = tmpdir / "cache"
        fill = measure("mpslint cache fill", [*mpslint, "--cache-dir", str(cache), *jobs, str(one.root)])[0]
        rows.append(fill)
        warm = best_of(args.repeat, "mpslint warm (cache filled)", [*mpslint, "--cache-dir", str(cache), *jobs, str(one.root)])
        rows.append(warm)
        results.update(cold=cold, warm=warm, fill=fill)

        parse = None
        if not args.skip_parse:
            if args.parse_sample:
                sample = stage_sample(one, tmpdir / "parse-sample", args.parse_sample)
                parse = measure("libcst.parse_module, every file, 1 process",
                                [sys.executable, "-c", PARSE_SCRIPT], stdin="\n".join(map(str, sample.files)))[0]
                scaled(parse, total_bytes / sample.bytes, f"from {len(sample.files)} files by bytes")
            else:
                parse = measure("libcst.parse_module, every file, 1 process",
                                [sys.executable, "-c", PARSE_SCRIPT], stdin="\n".join(map(str, one.files)))[0]
            rows.append(parse)
            results["parse"] = parse

        ruff = None
        if "ruff" in tools:
            ruff = measure("ruff check --no-cache --select E,F",
                           [str(tools["ruff"]), "check", "--isolated", "--no-cache", "--select", "E,F",
                            "--exit-zero", "--output-format", "concise", str(one.root)])[0]
            rows.append(ruff)
            results["ruff"] = ruff

        torchfix = same_files = None
        if "torchfix" in tools:
            if args.torchfix_sample:
                sample = stage_sample(one, tmpdir / "torchfix-sample", args.torchfix_sample)
                factor = total_bytes / sample.bytes
                label = f"torchfix 0.7.0 ({len(sample.files)}-file sample)"
                torchfix = measure(label, [str(tools["torchfix"]), str(sample.root)])[0]
                same_files = measure(f"mpslint cold, same {len(sample.files)} files",
                                     [*mpslint, "--no-cache", *jobs, str(sample.root)])[0]
                rows.extend([torchfix, same_files])
                estimate = scaled(Measurement(**{**asdict(torchfix), "label": "torchfix 0.7.0 (whole-corpus estimate)", "note": ""}),
                                  factor, f"from the {len(sample.files)}-file sample by bytes")
                estimate.findings = 0
                rows.append(estimate)
                results.update(torchfix_sample=torchfix, mpslint_torchfix_sample=same_files, torchfix=estimate)
            else:
                torchfix = measure("torchfix 0.7.0", [str(tools["torchfix"]), str(one.root)])[0]
                rows.append(torchfix)
                results["torchfix"] = torchfix

        series: List[Measurement] = []
        if not args.skip_linearity:
            shutil.rmtree(tmpdir / "parse-sample", ignore_errors=True)
            base = one
            if args.linearity_sample:
                base = stage_sample(one, tmpdir / "linearity-sample", args.linearity_sample)
                base_run = best_of(args.repeat, f"mpslint cold, 1x {len(base.files)}-file sample",
                                   [*mpslint, "--no-cache", *jobs, str(base.root)])
                rows.append(base_run)
                series.append(base_run)
            else:
                series.append(cold)
            what = f"{len(base.files)}-file sample" if args.linearity_sample else "corpus"
            for copies in (2, 4):
                corpus = stage(base.root, tmpdir / f"{copies}x", copies)
                m = best_of(args.repeat, f"mpslint cold, {copies}x {what} ({len(corpus.files)} files)",
                            [*mpslint, "--no-cache", *jobs, str(corpus.root)])
                rows.append(m)
                series.append(m)
                results[f"cold_{copies}x"] = m
                shutil.rmtree(corpus.root)
            linear_files = len(base.files)
        os.chdir(previous_cwd)

    load_after = os.getloadavg()

    # Ratios of the targets.
    ratios.append(ratio_line("cold / LibCST parse floor (wall)", cold.wall / parse.wall if parse else None, "<= 0.5",
                             parse is not None and cold.wall / parse.wall <= 0.5))
    if torchfix is not None:
        if same_files is not None:
            r = results["torchfix_sample"].wall / same_files.wall
            ratios.append(ratio_line("torchfix / mpslint cold, same sample files (wall)", r, ">= 20", r >= 20))
        whole = results["torchfix"]  # the whole-corpus estimate when torchfix ran on a sample
        r = whole.wall / cold.wall
        ratios.append(ratio_line("torchfix / mpslint cold, whole corpus (wall)", r, ">= 20", r >= 20,
                                 "torchfix estimated" if whole.scaled else ""))
    else:
        ratios.append(ratio_line("torchfix / mpslint cold (wall)", None, ">= 20", None))
    # Issue 24's targets: cold <= 3x Ruff's cold run, warm <= 2% of cold. Wall is the target; CPU is what
    # still compares when other jobs load the machine (wall then measures the load as much as the tools).
    if ruff is not None:
        for what, mine, theirs in (("wall", cold.wall, ruff.wall), ("CPU", cold.cpu, ruff.cpu)):
            ratios.append(ratio_line(f"cold / ruff cold ({what})", mine / theirs, "<= 3", mine / theirs <= 3))
    for what, mine, theirs in (("wall", warm.wall, cold.wall), ("CPU", warm.cpu, cold.cpu)):
        ratios.append(ratio_line(f"warm / cold ({what})", mine / theirs, "<= 0.02", mine / theirs <= 0.02))
    ratios.append(ratio_line("warm / ruff cold (wall)", warm.wall / ruff.wall if ruff else None, "<= 1",
                             ruff is not None and warm.wall / ruff.wall <= 1))
    ratios.append(ratio_line("startup: one file / import libcst (wall)",
                             results["startup"].wall / results["import_libcst"].wall, "close to 1 (issue: about 0.1 s)",
                             results["startup"].wall - results["import_libcst"].wall < 0.15, "met = within 0.15 s"))
    for m, copies in zip(series[1:], (2, 4)):
        first = series[0]
        r = m.wall / first.wall
        ratios.append(ratio_line(f"linearity: {copies}x / 1x (wall)", r, f"~{copies} (linear)", r <= copies * 1.15,
                                 f"per file {1000 * m.wall / (copies * linear_files):.1f} ms vs {1000 * first.wall / linear_files:.1f} ms"))
        r = m.peak_rss_mb / first.peak_rss_mb
        ratios.append(ratio_line(f"memory: peak RSS/proc {copies}x / 1x", r, "~1 (bounded)", r <= 1.25))

    print()
    print(f"mpslint benchmark — corpus {PACKAGE} {VERSION}: {len(one.files)} .py files, {total_bytes / 1e6:.1f} MB")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {load_before[0]:.1f} before / {load_after[0]:.1f} after")
    print(f"mpslint {_version('mpslint')}, libcst {_version('libcst')} (torchfix: libcst pinned by torchfix 0.7.0), {RUFF}")
    print()
    print(table(rows))
    print()
    print("| target | value | wanted | |")
    print("|---|---:|---|---|")
    print("\n".join(ratios))
    print()
    print("Wall time is what a user waits; CPU time counts every process (workers included) and is the")
    print("fairer figure on a busy machine. '~' marks figures scaled from a sample (see note).")
    if args.json:
        args.json.write_text(json.dumps({k: asdict(v) for k, v in results.items()}, indent=2))
    return 0


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
