"""The checking process: ``python -m mpslint.server.worker``, one of the server's pool.

It imports the engine and every rule once, then answers requests on stdin
with replies on stdout, each a 4-byte big-endian length and a pickle. A
request is ``(kind, args)``; the reply ``("ok", value)`` or ``("error",
traceback)``. Checking in a separate process keeps the server's event loop
free while LibCST parses, lets two documents be checked at once, lets the
server stop work that went stale by ending the process, and keeps a crash
in a native parser from taking the server down.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import traceback
from collections import Counter
from typing import Any, BinaryIO, Dict, List, Optional, Tuple

from mpslint.parent_watch import die_with_parent

_HEADER = struct.Struct(">I")
READY = ("ready", None)


def write_frame(stream: BinaryIO, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> Optional[Any]:
    """The next value, or None at the end of the stream."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    body = _read_exactly(stream, _HEADER.unpack(header)[0])
    return None if body is None else pickle.loads(body)


def _read_exactly(stream: BinaryIO, size: int) -> Optional[bytes]:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def check(text: str, path: str, settings) -> Tuple[list, bool, List[str]]:
    """The findings, whether Python could parse the text, and the project's module files the check read
    (the server re-checks the document when one of them is saved)."""
    from mpslint.analysis.project import model
    from mpslint.engine import check_text

    # Modules the document imports are read from disk as they are now (summaries stay cached by content).
    model.shared().forget()
    result = check_text(text, path, settings)
    return result.diagnostics, result.parsed, sorted(result.depends)


def fix(text: str, path: str, settings, unsafe: bool, newline: str) -> Tuple[str, Counter, Optional[str]]:
    """Every applicable fix to a fixpoint; inserted lines end with the document's own ``newline``."""
    from mpslint.fixer import fix_text

    outcome = fix_text(text, path, settings, unsafe=unsafe, newline=newline)
    return outcome.text, outcome.fixed, outcome.error


def check_notebook(sources: List[Tuple[int, str]], path: str, settings) -> Tuple[list, Dict[int, str], List[str]]:
    """A notebook's Python cells ``(number, text)`` checked as the command line checks the ``.ipynb``.

    Returns the findings, located in their cells, for each cell whose text the
    engine read with IPython's escapes replaced, that text (for ``# noqa`` edits,
    which need to know where the cell's comments are), and the project's module
    files the check read.
    """
    from mpslint.analysis.project import model
    from mpslint.notebook.lint import check_sources, notebook_settings

    model.shared().forget()
    checked = check_sources(sources, path, notebook_settings(settings))
    engine_texts = {c.number: c.python.text for c in checked.program.cells if c.python.text != c.source}
    return checked.diagnostics, engine_texts, sorted(checked.depends)


def fix_notebook(sources: List[Tuple[int, str]], path: str, settings, unsafe: bool) -> Tuple[Dict[int, str], Counter, Optional[str]]:
    """What ``mpslint --fix`` writes into each of these cells: the new sources by cell number."""
    from mpslint.notebook.lint import fix_sources, notebook_settings

    outcome = fix_sources(sources, path, notebook_settings(settings), unsafe=unsafe)
    return outcome.sources, outcome.fixed, outcome.error


def pause(seconds: float) -> None:
    """A job that only takes time: how the pool's scheduling is tested without racing a real check."""
    import time

    time.sleep(seconds)


HANDLERS = {"check": check, "fix": fix, "check_notebook": check_notebook, "fix_notebook": fix_notebook, "pause": pause}


def handle(request: Tuple[str, tuple]) -> Tuple[str, Any]:
    kind, args = request
    try:
        return ("ok", HANDLERS[kind](*args))
    except Exception:
        return ("error", traceback.format_exc())


# Reaches every rule family, so that the tables rules load on first use (the MPS op table, above
# all) are loaded before the first real request instead of during it.
WARM_UP_SOURCE = """\
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    model.cuda()
    loader = DataLoader(dataset, num_workers=2, pin_memory=True)
    for x, y in loader:
        x = x.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y) + torch.linalg.svd(x).S.sum()
        loss.backward()
        optimizer.step()
        print(loss.item(), torch.from_numpy(x.numpy()).double().to(device))
"""


def warm_up() -> None:
    """Import and load what requests need, so the first one costs no more than the next."""
    from mpslint.config import Settings
    from mpslint.fixer import fix_text

    fix_text(WARM_UP_SOURCE, "warm_up.py", Settings())
    # A notebook's first check should not pay for the notebook code's imports either.
    check_notebook([(1, "%matplotlib inline\nimport torch")], "warm_up.ipynb", Settings())


def main() -> None:
    # The replies go to the real stdout; anything a library prints goes to stderr instead (the editor's log).
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    # The server decides when work stops: a Ctrl-C meant for the editor's process group is not ours.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A server killed with SIGKILL closes no pipe in time for a long check to notice: end with it.
    die_with_parent()
    warm_up()
    write_frame(channel, READY)
    while True:
        request = read_frame(requests)
        if request is None:  # the server closed the pipe (or died): nothing left to do
            return
        write_frame(channel, handle(request))


if __name__ == "__main__":
    main()
