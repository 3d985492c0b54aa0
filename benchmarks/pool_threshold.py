"""Where a process pool starts to pay off: one process against a pool of two, side by side.

    python benchmarks/pool_threshold.py [--sizes 20 40 80 160] [--repeat 3] [--corpus DIR]

For each size N, N files sampled evenly from the pinned corpus (see run.py)
are checked cold (``--no-cache``) once in this process (``-j 1``) and once
with a pool of two workers forced on (``POOL_THRESHOLD`` set to 1). The ratio
pool / one process below 1 means the pool won; ``mpslint.runner.POOL_THRESHOLD``
should sit where it crosses 1. Figures vary with the machine's load, so both
runs of a size are measured back to back and the best of ``--repeat`` kept.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402  (the shared corpus and measuring helpers)

# Runs mpslint from a snapshot of this checkout (run.py's `snapshot`), with the pool allowed at any size.
CHILD = (
    "import sys; sys.path.insert(0, {code!r}); from mpslint import runner; runner.POOL_THRESHOLD = 1; "
    "from mpslint.cli import main; sys.exit(main())"
)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 40, 80, 160])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", type=Path, help="an unpacked package directory instead of the pinned download")
    args = parser.parse_args(argv)

    source = args.corpus or bench.fetch_corpus()
    corpus = bench.Corpus(source, sorted(source.rglob("*.py")))
    rows = ["| files | KB | one process wall s (CPU s) | pool of 2 wall s (CPU s) | pool / one process |", "|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory(prefix="mpslint-pool-") as tmp:
        child = CHILD.format(code=str(bench.snapshot(Path(tmp) / "code")))
        for n in args.sizes:
            sample = bench.stage_sample(corpus, Path(tmp) / f"sample{n}", n)
            one = bench.best_of(args.repeat, f"{n} files, -j 1", [sys.executable, "-c", child, "--no-cache", "-j", "1", "."],
                                cwd=sample.root)
            pool = bench.best_of(args.repeat, f"{n} files, -j 2", [sys.executable, "-c", child, "--no-cache", "-j", "2", "."],
                                 cwd=sample.root)
            rows.append(f"| {len(sample.files)} | {sample.bytes // 1024} | {one.wall:.2f} ({one.cpu:.2f}) "
                        f"| {pool.wall:.2f} ({pool.cpu:.2f}) | {pool.wall / one.wall:.2f} |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
