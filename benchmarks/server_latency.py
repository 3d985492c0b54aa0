"""How fast ``mpslint server`` answers, next to one ``mpslint FILE`` run on the same file, in one run.

    python benchmarks/server_latency.py                 # a ~1,000-line file of the transformers corpus
    python benchmarks/server_latency.py --file a.py     # your own files (repeatable)
    python benchmarks/server_latency.py --repeat 9

For each file, measured from outside the processes, median of ``--repeat`` runs:

- ``cli``: ``python -m mpslint --no-cache FILE``, a fresh process each time
  (start-up, imports, one check), as pre-commit or an editor's on-save hook
  would run it;
- ``open``: ``textDocument/didOpen`` to ``publishDiagnostics`` on a running
  server (a file opened in an editor that already has the server up);
- ``change``: an edit (``didChange``) to the diagnostics for the new
  version. This includes the server's debounce (the quiet time it waits for
  before checking, so that typing is checked once per pause);
- ``change, busy``: the same while the server is checking a much larger file
  (``--busy-lines``) that was edited just before, to show that a slow file
  does not hold the others up (the two checks share the CPUs);
- ``first``: starting the server until the first file's diagnostics, a
  fresh server each run; split into ``start`` (until the server answers
  ``initialize``) and ``first open`` (``didOpen``, sent right after
  ``initialized`` as editors do, to the diagnostics: what the user waits for
  once the editor shows the file). ``first open`` is the figure to hold
  against ``cli``.

With ``--notebook-cells N`` (default 50; 0 to skip) it also measures a
notebook of N code cells of a training script sent through LSP 3.17
notebook sync: ``cli`` on the ``.ipynb``, ``open`` (didOpen to the last
cell's diagnostics) and ``change`` (an edit in one cell to that cell's
diagnostics: the whole notebook is checked again, as one program).

The corpus is the pinned transformers wheel that ``benchmarks/run.py`` uses
(downloaded into ``benchmarks/.corpus/`` the first time). The client is the
tests' LSP client (``tests/lspclient.py``, pygls). Not a test: it prints
figures and ratios and exits 0; timings vary with the machine's load, which
is why the CLI is measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from lspclient import DEFAULT_COMMAND, Session, code  # noqa: E402
from run import fetch_corpus  # noqa: E402

DEFAULT_FILE = "integrations/deepgemm.py"  # 964 lines, parsed by LibCST (it has findings)


def busy_source(copies: int) -> str:
    """A long training module: every function is a hot loop, the slowest kind of code to check."""
    block = textwrap.dedent(
        """\
        def step_{i}(model, loader, optimizer, device):
            for x, y in loader:
                x = x.to(device)
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
                print(loss.item())
        """
    )
    return "import torch\n" + "".join(block.format(i=i) for i in range(copies))


def notebook_cells(count: int) -> List[str]:
    """A notebook's code cells: imports first, then a CUDA training step per cell that uses the cells before it."""
    cells = ["import torch\nimport torch.nn as nn\nmodel = nn.Linear(8, 2).cuda()\nopt = torch.optim.SGD(model.parameters(), 0.1)"]
    for i in range(1, count):
        cells.append(textwrap.dedent(
            f"""\
            def step_{i}(loader):
                for x, y in loader:
                    x, y = x.cuda(), y.cuda()
                    loss = nn.functional.cross_entropy(model(x), y)
                    loss.backward()
                    opt.step()
                    print(loss.item())"""
        ))
    return cells


def write_notebook(path: Path, cells: List[str]) -> None:
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                   "source": text.splitlines(keepends=True)} for i, text in enumerate(cells)],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")


async def notebook_figures(path: Path, root: Path, cells: List[str], repeat: int) -> Dict[str, List[float]]:
    figures: Dict[str, List[float]] = {"open": [], "change": []}
    session = Session(root, command=DEFAULT_COMMAND)
    await session.start()
    try:
        for i in range(repeat):
            start = time.perf_counter()
            uri, cell_uris = session.open_notebook(root / f"open_{i}.ipynb", [code(text) for text in cells])
            await session.diagnostics(cell_uris[-1], 1)
            figures["open"].append(time.perf_counter() - start)
            if i < repeat - 1:
                session.close_notebook(uri)
        middle = cell_uris[len(cell_uris) // 2]
        for _ in range(repeat):
            start = time.perf_counter()
            version = session.edit_cell(middle, (0, 0), (0, 0), "# edited\n")
            await session.diagnostics(middle, version)
            figures["change"].append(time.perf_counter() - start)
    finally:
        await session.stop()
    return figures


def cli_seconds(path: Path, cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mpslint", "--no-cache", "--exit-zero", "-q", str(path)], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


async def fresh_figures(path: Path, root: Path, repeat: int) -> Dict[str, List[float]]:
    """``start``, ``first open`` and ``first``: a new server each time, as an editor starts it."""
    figures: Dict[str, List[float]] = {"start": [], "first open": [], "first": []}
    text = path.read_text(encoding="utf-8")
    for _ in range(repeat):
        started = time.perf_counter()
        session = Session(root, command=DEFAULT_COMMAND)  # as editors start it: default workers
        await session.start()
        try:
            opened = time.perf_counter()
            uri = session.open(path, text)
            await session.diagnostics(uri, 1)
            done = time.perf_counter()
        finally:
            await session.stop()
        figures["start"].append(opened - started)
        figures["first open"].append(done - opened)
        figures["first"].append(done - started)
    return figures


async def server_figures(path: Path, root: Path, repeat: int, busy_lines: int) -> Dict[str, List[float]]:
    figures: Dict[str, List[float]] = {"open": [], "change": [], "change, busy": []}
    if busy_lines <= 0:
        del figures["change, busy"]
    text = path.read_text(encoding="utf-8")
    session = Session(root, command=DEFAULT_COMMAND)  # as editors start it: default workers
    await session.start()
    try:
        uri = session.open(path, text)
        await session.diagnostics(uri, 1)
        for i in range(repeat):
            copy = root / f"open_{i}.py"
            start = time.perf_counter()
            other = session.open(copy, text)
            await session.diagnostics(other, 1)
            figures["open"].append(time.perf_counter() - start)
            session.close(other)
        for _ in range(repeat):
            start = time.perf_counter()
            version = session.edit(uri, (0, 0), (0, 0), "# edited\n")
            await session.diagnostics(uri, version)
            figures["change"].append(time.perf_counter() - start)
        if busy_lines <= 0:
            return figures
        big = session.open(root / "busy.py", busy_source(max(1, busy_lines // 7)))
        await session.diagnostics(big, 1)
        for _ in range(repeat):
            big_version = session.edit(big, (0, 0), (0, 0), "# edited\n")  # the user was just typing there
            await asyncio.sleep(0.5)  # past the debounce: the big file's check is under way
            start = time.perf_counter()
            version = session.edit(uri, (0, 0), (0, 0), "# edited\n")
            await session.diagnostics(uri, version)
            figures["change, busy"].append(time.perf_counter() - start)
            await session.diagnostics(big, big_version)  # let it finish: the next round starts from the same state
    finally:
        await session.stop()
    return figures


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", action="append", type=Path, help="a file to measure (default: %s of the corpus)" % DEFAULT_FILE)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--busy-lines", type=int, default=7000, help="size of the file checked meanwhile for `change, busy` (0: skip)")
    parser.add_argument("--notebook-cells", type=int, default=50, help="code cells of the notebook measured (0: none)")
    args = parser.parse_args(argv)
    files = args.file or [fetch_corpus() / DEFAULT_FILE]
    print(f"python {sys.version.split()[0]} on {sys.platform}; medians of {args.repeat} runs; seconds")
    print(f"{'file':<28} {'lines':>6} {'cli':>6} {'open':>6} {'change':>7} {'change, busy':>13} {'start':>6} "
          f"{'first open':>10} {'first':>6}   change/cli  first open/cli")
    for source in files:
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)  # outside any project: default settings for both
            path = root / source.name
            shutil.copyfile(source, path)
            cli = [cli_seconds(path, root) for _ in range(args.repeat)]
            server = asyncio.run(fresh_figures(path, root, args.repeat))
            server.update(asyncio.run(server_figures(path, root, args.repeat, args.busy_lines)))
        med = {k: statistics.median(v) for k, v in server.items()}
        lines = source.read_text(encoding="utf-8", errors="replace").count("\n")
        busy = f"{med['change, busy']:>13.2f}" if "change, busy" in med else f"{'-':>13}"
        print(
            f"{source.name:<28} {lines:>6} {statistics.median(cli):>6.2f} {med['open']:>6.2f} {med['change']:>7.2f} "
            f"{busy} {med['start']:>6.2f} {med['first open']:>10.2f} {med['first']:>6.2f}   "
            f"{med['change'] / statistics.median(cli):>9.2f}x  {med['first open'] / statistics.median(cli):>13.2f}x"
        )
    if args.notebook_cells > 0:
        cells = notebook_cells(args.notebook_cells)
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            path = root / "train.ipynb"
            write_notebook(path, cells)
            cli = statistics.median(cli_seconds(path, root) for _ in range(args.repeat))
            server = asyncio.run(notebook_figures(path, root, cells, args.repeat))
        med = {k: statistics.median(v) for k, v in server.items()}
        lines = sum(text.count("\n") + 1 for text in cells)
        name = f"{path.name} ({len(cells)} cells)"
        print(f"{name:<28} {lines:>6} {cli:>6.2f} {med['open']:>6.2f} {med['change']:>7.2f} {'':>13} {'':>6} {'':>10} "
              f"{'':>6}   {med['change'] / cli:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
