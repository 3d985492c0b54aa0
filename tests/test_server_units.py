"""The server's pure parts: positions, edits, noqa placement, severities, settings, scheduling, the pool.

The end-to-end tests (``test_server.py``) drive the real server through a
real client; these pin down the pieces whose corner cases a client session
would reach only by luck.
"""

from __future__ import annotations

import ast
import asyncio
import os
import textwrap
import time

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as lsp  # noqa: E402

from mpslint import catalog, registry  # noqa: E402
from mpslint.config import Settings  # noqa: E402
from mpslint.diagnostic import Diagnostic, Edit, Location  # noqa: E402
from mpslint.engine import check_text  # noqa: E402
from mpslint.fixer import apply_fixes  # noqa: E402
from mpslint.server import settings as client_settings  # noqa: E402
from mpslint.server.documents import UTF8, UTF16, UTF32, Document, Snapshot  # noqa: E402
from mpslint.server.noqa import CommentMap, noqa_edit  # noqa: E402
from mpslint.server.pool import JobFailed, Pool, prestart  # noqa: E402
from mpslint.server.projects import Projects  # noqa: E402
from mpslint.server.scheduler import Scheduler  # noqa: E402
from mpslint.server.severity import severity  # noqa: E402
from mpslint.suppressions import Suppressions  # noqa: E402

import latewatcher  # noqa: E402
from lspclient import apply_text_edits, run_async  # noqa: E402

# -- documents and positions -------------------------------------------------------------------


def test_lines_break_where_lsp_breaks_them_not_where_python_splitlines_does():
    text = "a = 1\x0cb\nc\x1c = 2\r\nd\u2028e\rf"
    snapshot = Snapshot.of(text)
    assert [snapshot.line(i) for i in range(len(snapshot.starts))] == ["a = 1\x0cb", "c\x1c = 2", "d\u2028e", "f"]
    assert snapshot.offset(lsp.Position(2, 2), UTF16) == text.index("e")


@pytest.mark.parametrize("encoding, column", [(UTF16, 8), (UTF8, 10), (UTF32, 7)])
def test_columns_count_the_client_encoding(encoding, column):
    text = "x = '\U0001F600' + y\n"  # an emoji: 2 UTF-16 units, 4 UTF-8 bytes
    snapshot = Snapshot.of(text)
    plus = text.index("+") - 1  # the space before the plus
    position = snapshot.position(plus, encoding)
    assert (position.line, position.character) == (0, column)
    assert snapshot.offset(position, encoding) == plus


def test_positions_past_a_line_or_the_text_are_clamped():
    snapshot = Snapshot.of("ab\ncd")
    assert snapshot.offset(lsp.Position(0, 99), UTF16) == 2
    assert snapshot.offset(lsp.Position(9, 0), UTF16) == 5


def test_incremental_changes_follow_the_client():
    text = "a\x0cb = 1\r\nx = '\U0001F600'\r\n"
    document = Document("file:///x.py", "python", 1, Snapshot.of(text))
    expected = text
    changes = [
        (lsp.Range(lsp.Position(1, 7), lsp.Position(1, 7)), ".cuda()"),  # after the emoji (2 units)
        (lsp.Range(lsp.Position(0, 2), lsp.Position(0, 3)), "bb"),  # after the form feed, on line 0
        (lsp.Range(lsp.Position(1, 0), lsp.Position(2, 0)), ""),  # a whole line, with its \r\n
    ]
    for version, (rng, new) in enumerate(changes, start=2):
        document.apply([lsp.TextDocumentContentChangePartial(range=rng, text=new)], version, UTF16)
        expected = apply_text_edits(expected, [lsp.TextEdit(range=rng, new_text=new)])
        assert document.text == expected
    assert document.text == "a\x0cbb = 1\r\n"
    assert document.version == 4


def test_difference_is_one_change_that_never_splits_crlf():
    old = Snapshot.of("a\r\nb\r\nc\r\n")
    new = "a\r\nx\r\nb\r\nc\r\n"
    change = old.difference(new)
    assert old.text[: change.start] + change.text + old.text[change.end:] == new
    assert not old.text[: change.start].endswith("\r") or not old.text[change.start:].startswith("\n")
    assert old.difference(old.text) is None


def test_engine_edits_take_the_documents_line_breaks():
    snapshot = Snapshot.of("x = 1\r\ny = 2\r\n")
    change = snapshot.change(Edit(Location(2, 1), Location(2, 1), "import torch\n"))
    assert change.text == "import torch\r\n"
    assert change.start == snapshot.text.index("y")


# -- noqa -----------------------------------------------------------------------------------------

CUDA = textwrap.dedent(
    '''\
    import torch

    model = torch.nn.Linear(2, 2)
    model.cuda()
    model.cuda()  # keep it on the GPU
    torch.cuda.synchronize(); model.cuda()  # noqa: MPS104
    doc = """text
    """; x = torch.zeros(3).cuda(
    )
    y = torch.ones(2) \\
        .cuda()
    '''
)


def _suppress_each(text: str):
    diagnostics = check_text(text, "x.py", Settings()).diagnostics
    comments = CommentMap.scan(text)
    snapshot = Snapshot.of(text)
    results = []
    for diagnostic in diagnostics:
        edit = noqa_edit(diagnostic, comments, lambda row: snapshot.line(row - 1))
        results.append((diagnostic, edit))
    return results


def test_noqa_edits_suppress_exactly_their_finding_and_keep_the_code_valid():
    results = _suppress_each(CUDA)
    assert {d.code for d, _ in results} >= {"MPS101"}
    for diagnostic, edit in results:
        assert edit is not None, diagnostic
        fixed = apply_fixes(CUDA, [_as_fix(edit)])
        ast.parse(fixed)
        assert Suppressions.scan(fixed).is_suppressed(diagnostic)
        remaining = check_text(fixed, "x.py", Settings()).diagnostics
        assert len(remaining) == len(results) - 1


def test_noqa_joins_an_existing_comment_or_goes_after_another():
    lines = {d.location.row: (d, e) for d, e in _suppress_each(CUDA) if d.code == "MPS101"}
    _, plain = lines[4]
    assert plain.content == "  # noqa: MPS101"
    _, after_comment = lines[5]
    assert after_comment.content == "  # noqa: MPS101"
    assert after_comment.start.column == len("model.cuda()  # keep it on the GPU") + 1
    _, joined = lines[6]
    assert joined.content == ", MPS101"
    _, in_parens = lines[8]  # the line ends inside the call's parentheses: a comment fits
    assert in_parens.start.row == 8
    _, continued = lines[10]  # the line ends with a backslash: the comment goes on the finding's last line
    assert continued.start.row == 11


def test_no_noqa_where_a_blanket_noqa_already_covers_everything():
    text = "import torch\nx = torch.zeros(2).cuda()  # noqa\n"
    diagnostic = Diagnostic("MPS101", "m", "x.py", Location(2, 5), Location(2, 26), noqa_row=2)
    assert noqa_edit(diagnostic, CommentMap.scan(text), lambda row: text.splitlines()[row - 1]) is None


def _as_fix(edit: Edit):
    from mpslint.diagnostic import Applicability, Fix

    return Fix("noqa", Applicability.SAFE, (edit,))


# -- severities and settings ------------------------------------------------------------------------


def test_every_rule_has_a_severity_by_its_family():
    codes = set(registry.rule_codes()) | set(registry.ENGINE_CODES) | set(catalog.load())
    errors = {c for c in codes if severity(c) == lsp.DiagnosticSeverity.Error}
    warnings = {c for c in codes if severity(c) == lsp.DiagnosticSeverity.Warning}
    assert errors | warnings == codes
    assert {c for c in codes if c.startswith("MPS2")} <= warnings
    assert {"MPS000", "MPS101", "MPS301", "MPS303", "MPS402", "MPS501"} <= errors
    assert {"MPS106", "MPS401", "MPS502", "MPS900"} <= warnings


def test_client_settings_keep_good_values_and_report_bad_ones():
    parsed = client_settings.parse(
        {"unsafeFixes": True, "ignore": ["MPS2"], "torchVersion": 2.4, "select": "MPS1", "bogus": 1}, "settings"
    )
    assert parsed.unsafe_fixes is True and parsed.ignore == ("MPS2",)
    assert parsed.torch_version is None and parsed.select is None
    assert len(parsed.problems) == 3
    assert any("`bogus`" in p for p in parsed.problems)
    unknown_rule = client_settings.parse({"select": ["MPS999x"]}, "settings")
    assert unknown_rule.select is None and "MPS999x" in unknown_rule.problems[0]
    assert client_settings.parse(None, "x") == client_settings.ClientSettings()
    assert client_settings.combine({"unsafeFixes": True, "ignore": ["MPS1"]}, {"ignore": []}, None) == {
        "unsafeFixes": True,
        "ignore": [],
    }


def test_projects_resolve_like_the_command_line(tmp_path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.mpslint]\nignore = ["MPS101"]\nextend-exclude = ["gen"]\n')
    (project / "requirements.txt").write_text("torch>=2.4\n")
    projects = Projects()
    projects.set_folders([project])
    settings = projects.resolve(project / "src" / "a.py").settings
    assert "MPS101" not in settings.select and settings.torch_version == (2, 4)
    assert projects.resolve(project / "gen" / "b.py").settings is None  # excluded
    outside = tmp_path / "elsewhere" / "c.py"
    outside.parent.mkdir()
    assert "MPS101" in projects.resolve(outside).settings.select
    assert "MPS101" not in projects.resolve(None).settings.select  # an unsaved buffer: the first folder's


def test_projects_notice_config_edits_by_stamp(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.mpslint]\n")
    projects = Projects()
    projects.set_folders([tmp_path])
    path = tmp_path / "a.py"
    assert not projects.changed_since_last_look(path)
    assert not projects.changed_since_last_look(path)
    (tmp_path / "pyproject.toml").write_text('[tool.mpslint]\nignore = ["MPS1"]\n')
    os.utime(tmp_path / "pyproject.toml", ns=(time.time_ns(), time.time_ns() + 10**9))
    assert projects.changed_since_last_look(path)
    (tmp_path / "mpslint.toml").write_text("")
    assert projects.changed_since_last_look(path)


def test_a_broken_config_falls_back_to_defaults_with_the_reason(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.mpslint]\nselct = ['MPS1']\n")
    projects = Projects()
    projects.set_folders([tmp_path])
    resolution = projects.resolve(tmp_path / "a.py")
    assert resolution.settings == Settings()
    assert "selct" in resolution.error


# -- scheduling -------------------------------------------------------------------------------------


class FakeDocument:
    """A document whose checks the test releases one by one."""

    def __init__(self) -> None:
        self.version = 1
        self.started = []
        self.gates = {}

    def make(self):
        return (self.version, 0), self.version

    def token(self):
        return (self.version, 0)

    async def run(self, version):
        self.started.append(version)
        gate = self.gates.setdefault(version, asyncio.Event())
        await gate.wait()
        return f"result {version}"


@run_async
async def test_changes_in_quick_succession_are_checked_once():
    document = FakeDocument()
    delivered = []
    scheduler = Scheduler(document.run, lambda key, token, result: delivered.append(result), debounce=0.05)
    scheduler.track("a", document.make, document.token)
    for version in range(1, 6):
        document.version = version
        scheduler.request("a")
    document.gates[5] = asyncio.Event()
    document.gates[5].set()
    assert await scheduler.result_for("a") == "result 5"
    assert document.started == [5]
    assert delivered == ["result 5"]
    scheduler.close()


@run_async
async def test_a_stale_check_is_cancelled_after_its_grace_and_the_new_text_checked():
    document = FakeDocument()
    delivered = []
    scheduler = Scheduler(document.run, lambda key, token, result: delivered.append(result), debounce=0, stale_grace=0.05)
    scheduler.track("a", document.make, document.token)
    scheduler.request("a", delay=0)
    while not document.started:
        await asyncio.sleep(0.01)
    document.version = 2  # version 1's check never finishes by itself
    document.gates[2] = asyncio.Event()
    document.gates[2].set()
    scheduler.request("a")
    assert await scheduler.result_for("a") == "result 2"
    assert document.started == [1, 2]
    assert delivered == ["result 2"]
    scheduler.close()


@run_async
async def test_a_result_for_text_that_changed_meanwhile_is_not_delivered():
    document = FakeDocument()
    delivered = []
    scheduler = Scheduler(document.run, lambda key, token, result: delivered.append(result), debounce=0, stale_grace=60)
    scheduler.track("a", document.make, document.token)
    scheduler.request("a", delay=0)
    while not document.started:
        await asyncio.sleep(0.01)
    document.version = 2
    scheduler.request("a")
    document.gates[1].set()  # finishes within its grace, but for old text
    document.gates[2] = asyncio.Event()
    document.gates[2].set()
    assert await scheduler.result_for("a") == "result 2"
    assert delivered == ["result 2"]
    scheduler.close()


@run_async
async def test_closing_a_document_releases_whoever_waits_for_it():
    document = FakeDocument()
    scheduler = Scheduler(document.run, lambda *a: None, debounce=0, stale_grace=0)
    scheduler.track("a", document.make, document.token)
    waiting = asyncio.ensure_future(scheduler.result_for("a"))
    while not document.started:
        await asyncio.sleep(0.01)
    scheduler.forget("a")
    assert await waiting is None


# -- the pool of worker processes -------------------------------------------------------------------

SMALL = "import torch\nx = torch.zeros(2).cuda()\n"


def _big_source(copies: int) -> str:
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


@run_async
async def test_the_pool_checks_in_worker_processes_and_keeps_them():
    pool = Pool(1)
    try:
        diagnostics, parsed, reads = await pool.run("check", SMALL, "a.py", Settings())
        assert parsed and [d.code for d in diagnostics] == ["MPS101"] and reads == []
        assert pool.workers == 1
        fixed, counts, error = await pool.run("fix", SMALL, "a.py", Settings(), False, "\n")
        assert ".cuda()" not in fixed and counts["MPS101"] == 1 and error is None
        assert pool.workers == 1  # the same worker, reused
    finally:
        await pool.aclose()


async def _settle(pool, count):
    """Wait until ``count`` worker processes are alive and none is starting; return how many are alive."""
    for _ in range(2400):
        alive = [w for w in pool._workers if w.alive]
        if len(alive) >= count and not any(not t.done() for t in pool._starting):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    return len([w for w in pool._workers if w.alive])


@run_async
async def test_the_pool_keeps_exactly_its_resident_workers():
    pool = Pool(2)
    try:
        pool.warm()
        assert await _settle(pool, 2) == 2
        await pool.run("check", SMALL, "a.py", Settings())
        assert await _settle(pool, 2) == 2  # the job used a resident worker, none was added
        job = asyncio.ensure_future(pool.run("check", _big_source(500), "big.py", Settings()))
        while not pool._running:
            await asyncio.sleep(0.01)
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        assert await _settle(pool, 2) == 2  # the ended worker was replaced, once
    finally:
        await pool.aclose()


@run_async
async def test_cancelling_a_running_job_ends_its_worker_and_the_next_job_still_runs():
    pool = Pool(1)
    try:
        job = asyncio.ensure_future(pool.run("check", _big_source(500), "big.py", Settings()))
        while not pool._running:
            await asyncio.sleep(0.01)
        (worker,) = pool._running
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        await asyncio.wait_for(worker.process.wait(), 30)
        diagnostics, _, _ = await pool.run("check", SMALL, "a.py", Settings())
        assert [d.code for d in diagnostics] == ["MPS101"]
    finally:
        await pool.aclose()


@run_async
async def test_a_slow_job_does_not_hold_up_the_next_one():
    pool = Pool(1, slow_after=0.2, extra=1)
    try:
        order = []

        async def check(name, text):
            await pool.run("check", text, name, Settings())
            order.append(name)

        slow = asyncio.ensure_future(pool.run("pause", 600))
        while not pool._running:
            await asyncio.sleep(0.01)
        await check("small.py", SMALL)  # waits for a slot: the long job turns slow and frees it
        assert order == ["small.py"] and not slow.done()
        slow.cancel()
    finally:
        await pool.aclose()


@run_async
async def test_a_worker_that_dies_fails_its_job_and_is_replaced():
    pool = Pool(1, time_limit=60)
    try:
        await pool.run("check", SMALL, "a.py", Settings())
        (worker,) = pool._idle
        worker.process.kill()
        await worker.process.wait()
        diagnostics, _, _ = await pool.run("check", SMALL, "a.py", Settings())  # a fresh worker
        assert [d.code for d in diagnostics] == ["MPS101"]
        with pytest.raises(JobFailed):
            await pool.run("no-such-job")
    finally:
        await pool.aclose()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to see when a process has died")
@run_async
async def test_closing_the_pool_leaves_reaping_to_asyncio():
    # A worker polled after it died and before asyncio's child watcher reaped it (a second kill polls) is
    # reaped behind asyncio's back: "Unknown child process" on the server's stderr, and exit code 255.
    import logging
    import signal

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("asyncio").addHandler(handler)
    undo = latewatcher.install()
    pool = Pool(3)
    try:
        pool.warm()
        await asyncio.gather(pool.run("pause", 0.1), pool.run("pause", 0.1))  # two idle, the third starting
        workers = list(pool._workers)
        await pool.aclose()
    finally:
        undo()
        logging.getLogger("asyncio").removeHandler(handler)
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
    assert workers and all(w.process.returncode == -signal.SIGKILL for w in workers)  # the true status, not 255


@run_async
async def test_the_pool_adopts_a_worker_started_before_the_event_loop():
    early = prestart()  # as `mpslint server` does before it imports pygls
    pool = Pool(1, early=early)
    try:
        diagnostics, _, _ = await pool.run("check", SMALL, "a.py", Settings())
        assert [d.code for d in diagnostics] == ["MPS101"]
        (worker,) = pool._idle
        assert worker.process.pid == early.pid  # the early one checked it, no other was started
    finally:
        await pool.aclose()
    assert early.returncode is not None


def test_a_worker_started_early_and_never_adopted_ends_with_the_pool():
    early = prestart()
    Pool(1, early=early).close()  # the server ended before it was initialized
    assert early.returncode is not None


def test_worker_frames_round_trip(tmp_path):
    from mpslint.server.worker import read_frame, write_frame

    path = tmp_path / "frames"
    with open(path, "wb") as out:
        write_frame(out, ("check", ("text", "a.py", Settings())))
        write_frame(out, ("ok", [1, 2]))
    with open(path, "rb") as stream:
        assert read_frame(stream) == ("check", ("text", "a.py", Settings()))
        assert read_frame(stream) == ("ok", [1, 2])
        assert read_frame(stream) is None




def test_plain_commands_import_neither_the_server_nor_pygls(tmp_path):
    import subprocess
    import sys

    (tmp_path / "a.py").write_text(SMALL)
    code = textwrap.dedent(
        """\
        import sys
        from mpslint.cli import main
        for argv in (["--help"], ["--no-cache", "a.py"], ["server", "--help"]):
            try:
                main(argv)
            except SystemExit:
                pass
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol", "cattrs")
                     or (m.startswith("mpslint.server.") and m != "mpslint.server.command")), file=sys.stderr)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "server" in done.stdout  # listed in --help
    assert done.stderr.strip().splitlines()[-1] == "[]"
