"""Where a cold mpslint run spends its time, stage by stage, in one process.

    python benchmarks/stages.py                 # the pinned transformers corpus (downloaded by run.py)
    python benchmarks/stages.py --corpus DIR    # any unpacked source tree

Every file is checked as ``mpslint --no-cache -j 1`` would (``runner.run``),
with a timer around each stage: reading and decoding, Python's parse, the
byte prefilter, the file's tree, the rules (with the shared analyses they
build), positions and fixes of the findings (with LibCST's parse for files
whose fixes need it), and suppressions. Timers are
plain clock reads around a few dozen thousand calls, so unlike
cProfile they barely slow the Python parts down against the C parts. The
byte counts say how much of the corpus each stage saw. Not a test: it
prints a table.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Dict, List, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from mpslint import engine, runner, source  # noqa: E402
from mpslint.analysis import cuda_context, device_flow, loops, tree  # noqa: E402
from mpslint.analysis.project import view  # noqa: E402
from mpslint.config import Settings  # noqa: E402
from mpslint.fixes import context as fix_context  # noqa: E402
from mpslint.suppressions import Suppressions  # noqa: E402

# CPU seconds of this process: on a machine other jobs load, wall time would measure them too.
CLOCK = time.process_time
SPENT: Dict[str, float] = defaultdict(float)
CALLS: Dict[str, int] = defaultdict(int)
BYTES: Dict[str, int] = defaultdict(int)


def timed(name: str, function: Callable, *, measure_bytes: bool = False) -> Callable:
    def wrapper(*args, **kwargs):
        start = CLOCK()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[name] += CLOCK() - start
            CALLS[name] += 1
            if measure_bytes and args and isinstance(args[0], str):
                BYTES[name] += len(args[0].encode("utf-8", "surrogatepass"))

    return wrapper


def _collector(phase: str, info: dict) -> None:
    # CPython calls this around every cyclic collection: the time the collector takes.
    if phase == "start":
        _collector.started = CLOCK()
    else:
        SPENT["cyclic garbage collector"] += CLOCK() - _collector.started
        CALLS["cyclic garbage collector"] += 1


def instrument() -> None:
    gc.callbacks.append(_collector)
    runner.read_file = timed("read", runner.read_file)
    decode = source.SourceText.decode.__func__
    source.SourceText.decode = classmethod(timed("decode", decode))
    engine.parse = timed("Python's parse", engine.parse, measure_bytes=True)
    # What the modules a file imports from the project say, as words for the prefilter (reads those modules).
    view.ProjectView.words = timed("project: imported words", view.ProjectView.words)
    engine.rules_for_text = timed("byte prefilter", engine.rules_for_text, measure_bytes=True)
    engine.Tree = timed("tree", tree.Tree)
    engine._Dispatcher.run = timed("rules (all)", engine._Dispatcher.run)
    device_flow.DeviceFlow.__init__ = timed("rules: DeviceFlow", device_flow.DeviceFlow.__init__)
    loops.HotLoops.__init__ = timed("rules: HotLoops", loops.HotLoops.__init__)
    cuda_context.CudaContext.__init__ = timed("rules: CudaContext", cuda_context.CudaContext.__init__)
    engine._resolve = timed("positions and fixes", engine._resolve)
    fix_context.FixContext.__init__ = timed("fixes: LibCST parse and ranges", fix_context.FixContext.__init__)
    Suppressions.scan = classmethod(timed("noqa", Suppressions.scan.__func__))


# Stage -> the stages inside it (their time is shown on their own rows).
INSIDE = {
    "rules (all)": ("rules: DeviceFlow", "rules: HotLoops", "rules: CudaContext"),
    "positions and fixes": ("fixes: LibCST parse and ranges",),
}
ORDER = ["read", "decode", "Python's parse", "project: imported words", "byte prefilter", "tree", "rules: DeviceFlow", "rules: HotLoops",
         "rules: CudaContext", "rules (all)", "fixes: LibCST parse and ranges", "positions and fixes", "noqa",
         "cyclic garbage collector"]


def report(total: float, files: int, corpus_bytes: int) -> List[Tuple[str, float, str]]:
    rows = []
    accounted = 0.0
    for name in ORDER:
        own = SPENT[name] - sum(SPENT[inner] for inner in INSIDE.get(name, ()))
        accounted += own
        label = {"rules (all)": "rules: the visits themselves"}.get(name, name)
        seen = f"{BYTES[name] / 1e6:.1f} MB" if name in BYTES else f"{CALLS[name]} calls"
        rows.append((label, own, seen))
    rows.append(("the rest (runner, output, results)", total - accounted, ""))
    print(f"\n{files} files, {corpus_bytes / 1e6:.1f} MB, one process: {total:.2f} CPU s\n")
    print("| stage | s | share | saw |")
    print("|---|---:|---:|---|")
    for label, seconds, seen in rows:
        print(f"| {label} | {seconds:.2f} | {100 * seconds / total:.0f}% | {seen} |")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="an unpacked source tree (default: the pinned transformers)")
    args = parser.parse_args(argv)
    if args.corpus is None:
        import run

        args.corpus = run.fetch_corpus()
    paths = sorted(args.corpus.rglob("*.py"))
    settings = Settings()
    jobs = [(str(p), str(p.relative_to(args.corpus)), settings) for p in paths]
    instrument()
    start = CLOCK()
    results = runner.run(jobs, runner.Mode(), jobs=1)
    total = CLOCK() - start
    findings = sum(len(r.diagnostics) for r in results)
    report(total, len(paths), sum(p.stat().st_size for p in paths))
    print(f"\n{findings} findings. LibCST parsed {CALLS['fixes: LibCST parse and ranges']} of {len(paths)} files.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
