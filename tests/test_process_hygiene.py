"""No mpslint process outlives the one that started it, and an interrupted run says so (issue 29, items 4 and 8).

A parent killed with SIGKILL runs no cleanup: its workers (the ``--fix`` pool,
the language server's checkers) must notice on their own, or they hold the
output pipe a caller reads, and the caller never sees it end. Ctrl-C exits
130, as a shell does, not 1 ("findings remain").
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clitools import ctrl_c_as_in_a_terminal

ROOT = Path(__file__).resolve().parent.parent
# Generous: these bound a wait so that a regression fails instead of hanging; no duration is asserted.
WAIT = 60.0
FIXABLE = "import torch\n" + "".join(f"t{i} = torch.zeros(1).cuda()\n" for i in range(40))
needs_proc = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to see the workers")


def _children(pid: int):
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _wait_until(condition, what: str, process) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert process.poll() is None, f"mpslint ended before {what}"
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.02)


def _eof_within(stream, limit: float) -> bool:
    """Read ``stream`` until its end, for at most ``limit`` seconds; whether the end came."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready and not os.read(stream.fileno(), 65536):
            return True
    return False


def _kill_group(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@needs_proc
def test_kill_9_of_fix_ends_the_workers_and_the_caller_sees_eof(tmp_path):
    for i in range(200):
        (tmp_path / f"f{i:03}.py").write_text(FIXABLE)
    process = subprocess.Popen(
        [sys.executable, "-m", "mpslint", "--fix", "-j", "2", "."], cwd=tmp_path, env=_env(),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        # Two workers and multiprocessing's resource tracker, and the workers busy fixing.
        _wait_until(lambda: len(_children(process.pid)) >= 3, "workers", process)
        _wait_until(lambda: any((tmp_path / f"f{i:03}.py").read_text() != FIXABLE for i in range(200)),
                    "fixed file", process)
        process.kill()
        assert _eof_within(process.stdout, WAIT), "mpslint's workers kept its stdout open after it was killed"
    finally:
        _kill_group(process)
        process.wait(WAIT)


@needs_proc
def test_kill_9_of_the_server_ends_its_workers(tmp_path):
    pytest.importorskip("pygls")
    process = subprocess.Popen(
        [sys.executable, "-m", "mpslint", "server", "--workers", "2"], cwd=tmp_path, env=_env(),
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    try:
        for message in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"processId": None, "rootUri": None, "capabilities": {}}},
                        {"jsonrpc": "2.0", "method": "initialized", "params": {}}):  # which starts the workers
            body = json.dumps(message).encode()
            process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        process.stdin.flush()
        _wait_until(lambda: len(_children(process.pid)) >= 2, "workers", process)
        process.kill()
        # The workers write to the server's stderr (the editor's log): it ends only when they do.
        assert _eof_within(process.stderr, WAIT), "the server's workers outlived it"
    finally:
        _kill_group(process)
        process.wait(WAIT)


def test_ctrl_c_during_fix_exits_130(tmp_path):
    files = [tmp_path / f"f{i:03}.py" for i in range(300)]
    for f in files:
        f.write_text(FIXABLE)
    process = subprocess.Popen(
        [sys.executable, "-m", "mpslint", "--fix", "-j", "1", "."], cwd=tmp_path, env=_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=ctrl_c_as_in_a_terminal,
    )
    try:
        _wait_until(lambda: any(f.read_text() != FIXABLE for f in files), "fixed file", process)
        os.killpg(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=WAIT)
    finally:
        _kill_group(process)
    assert any(f.read_text() == FIXABLE for f in files), "the run finished before Ctrl-C: the test proves nothing"
    assert process.returncode == 130, stderr.decode(errors="replace")
    assert b"Traceback" not in stderr


def test_a_busy_worker_of_a_killed_parent_ends_too(tmp_path):
    """What a server worker in the middle of a long check does: it reads no pipe, so only the watch can end it."""
    worker = (
        "import sys, time\n"
        "from mpslint.parent_watch import die_with_parent\n"
        "die_with_parent()\n"
        "print('busy', flush=True)\n"
        "time.sleep(3600)\n"
    )
    parent = f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {worker!r}])\ntime.sleep(3600)\n"
    process = subprocess.Popen([sys.executable, "-c", parent], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                               start_new_session=True)
    try:
        assert process.stdout.readline() == b"busy\n"
        process.kill()
        assert _eof_within(process.stdout, WAIT), "the worker outlived its parent"
    finally:
        _kill_group(process)
        process.wait(WAIT)
