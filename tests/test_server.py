"""``mpslint server`` end to end: a real LSP client drives the real server in a subprocess.

Each test starts ``python -m mpslint server`` in a project directory of its
own and talks to it only over stdin/stdout (``tests/lspclient.py``). What the
server says is compared with what the command line says about the same file.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

pytest.importorskip("pygls")

from lsprotocol import types as lsp  # noqa: E402

from mpslint import __version__, catalog  # noqa: E402
from mpslint.config import ConfigResolver  # noqa: E402
from mpslint.engine import check_text  # noqa: E402
from mpslint.fixer import apply_fixes  # noqa: E402
from mpslint.server.server import default_workers  # noqa: E402

from lspclient import CAPABILITIES, DEFAULT_COMMAND, PLAIN_CAPABILITIES, Session, run_async  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TRAIN_CUDA = REPO / "fixtures" / "cuda" / "train_cuda.py"

CUDA = textwrap.dedent(
    """\
    import torch

    model = torch.nn.Linear(4, 2)
    model.cuda()
    batch = torch.zeros(8, 4).cuda()
    """
)

FORK = textwrap.dedent(
    """\
    import multiprocessing

    import torch

    multiprocessing.set_start_method("fork")
    x = torch.zeros(3).cuda()
    """
)


SYNC_IN_LOOP = textwrap.dedent(
    """\
    import torch

    def train(model, loader, optimizer, device):
        model.to(device)
        for x, y in loader:
            x = x.to(device)
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            print(loss.item())
    """
)


AUTOCAST = 'import torch\n\nwith torch.autocast("mps"):\n    pass\n'


def cli_diagnostics(path: Path, root: Path):
    """What ``mpslint`` run in ``root`` reports for ``path`` (same config resolution, in-process engine)."""
    settings = ConfigResolver(cwd=root).for_path(path).settings_for(path)
    return check_text(path.read_text(encoding="utf-8"), str(path), settings).diagnostics


def codes(diagnostics) -> List[str]:
    return sorted(str(d.code) for d in diagnostics)


def at(line: int, character: int) -> lsp.Range:
    return lsp.Range(start=lsp.Position(line, character), end=lsp.Position(line, character))


def children(pid: int) -> List[int]:
    """Child processes of ``pid`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


linux_only = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to find worker processes")


# -- life cycle ------------------------------------------------------------------------------------------


@run_async
async def test_initialize_shutdown_and_exit(tmp_path):
    session = Session(tmp_path, command=DEFAULT_COMMAND)
    await session.start()
    result = session.initialize_result
    assert result.server_info.name == "mpslint" and result.server_info.version == __version__
    capabilities = result.capabilities
    assert capabilities.text_document_sync.change == lsp.TextDocumentSyncKind.Incremental
    assert capabilities.text_document_sync.open_close and capabilities.text_document_sync.save
    assert capabilities.hover_provider
    assert capabilities.code_action_provider.resolve_provider
    assert "source.fixAll.mpslint" in capabilities.code_action_provider.code_action_kinds
    await session.wait_until(lambda: len(session.registrations) >= 2, "registrations")
    methods = {r.method for r in session.registrations}
    assert methods == {lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, lsp.WORKSPACE_DID_CHANGE_CONFIGURATION}
    assert await session.stop() == 0


@linux_only
@run_async
async def test_a_normal_shutdown_prints_nothing_on_stderr(tmp_path):
    # As on a loaded machine (tests/latewatcher.py): asyncio's child watcher late, killed workers dead at once.
    # Any worker reaped behind asyncio's back shows as "Unknown child process pid N" here.
    launch = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import latewatcher; latewatcher.install(); " \
        "from mpslint.cli import main; main(['server'])"
    session = Session(tmp_path, command=[sys.executable, "-c", launch])
    await session.start()
    uri = session.open(tmp_path / "a.py", CUDA)
    await session.diagnostics(uri)  # the other resident workers are still starting, or idle
    assert await session.stop() == 0
    stderr = session.stderr.decode(errors="replace")
    assert "Unknown child process" not in stderr and "Traceback" not in stderr, stderr
    assert "is closed" not in stderr, stderr  # no worker left for asyncio to reap after its loop closed


@linux_only
@run_async
async def test_no_worker_outlives_the_server(tmp_path):
    async with Session(tmp_path, command=DEFAULT_COMMAND) as session:
        uri = session.open(tmp_path / "a.py", CUDA)
        await session.diagnostics(uri)
        for _ in range(2400):  # the resident workers start in the background
            workers = children(session.process.pid)
            if len(workers) >= default_workers():
                break
            await asyncio.sleep(0.05)
        assert len(workers) == default_workers()
        assert await session.stop() == 0
    assert not any(alive(pid) for pid in workers)


@linux_only
@run_async
async def test_a_killed_server_takes_its_workers_with_it_and_a_restart_starts_afresh(tmp_path):
    (tmp_path / "a.py").write_text(CUDA)
    first = Session(tmp_path, command=DEFAULT_COMMAND)
    await first.start()
    uri = first.open(tmp_path / "a.py")
    before = await first.diagnostics(uri)
    workers = children(first.process.pid)
    os.kill(first.process.pid, signal.SIGKILL)  # the editor crashed, or killed it
    await first.kill()
    for pid in workers:  # a worker ends when its pipe from the server closes
        for _ in range(600):
            if not alive(pid):
                break
            await asyncio.sleep(0.05)
        assert not alive(pid)
    async with Session(tmp_path) as second:  # the editor's "restart server"
        uri = second.open(tmp_path / "a.py")
        after = await second.diagnostics(uri)
    assert [(d.code, d.range) for d in after] == [(d.code, d.range) for d in before]


@run_async
async def test_the_server_needs_its_extra(tmp_path):
    # Without pygls the command explains what to install instead of a traceback.
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "pygls.py").write_text("raise ImportError('No module named pygls (test)')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(blocker), str(REPO)]))
    done = subprocess.run([sys.executable, "-m", "mpslint", "server"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert 'pip install "mpslint[server]"' in done.stderr


# -- diagnostics --------------------------------------------------------------------------------------------


@run_async
async def test_open_publishes_what_the_command_line_reports(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.13\n")  # the fixture's AMP fixes need a current torch
    path = tmp_path / "train_cuda.py"
    path.write_text(TRAIN_CUDA.read_text())
    expected = cli_diagnostics(path, tmp_path)
    async with Session(tmp_path) as session:
        uri = session.open(path)
        loop = session.open(tmp_path / "loop.py", SYNC_IN_LOOP)
        published = await session.diagnostics(uri, 1)
        syncs = await session.diagnostics(loop, 1)
    assert {d.code: d.severity for d in syncs} == {"MPS201": lsp.DiagnosticSeverity.Warning}  # slow, not failing
    assert len(published) == len(expected) == 8
    for got, want in zip(published, expected):
        assert got.code == want.code and got.message == want.message and got.source == "mpslint"
        assert (got.range.start.line + 1, got.range.start.character + 1) == (want.location.row, want.location.column)
        assert (got.range.end.line + 1, got.range.end.character + 1) == (want.end_location.row, want.end_location.column)
        assert got.code_description.href == catalog.load()[want.code].url
        assert got.severity == lsp.DiagnosticSeverity.Error  # CUDA-only code fails on a Mac
        assert got.data["fix"]["title"] == want.fix.message
        assert got.data["fix"]["applicability"] == "safe"


@run_async
async def test_changes_are_checked_on_the_buffer_not_the_file(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("import torch\n")  # on disk: nothing to report, and it stays so
    async with Session(tmp_path) as session:
        uri = session.open(path, "import torch\n")
        assert await session.diagnostics(uri, 1) == []
        session.edit(uri, (1, 0), (1, 0), "x = torch.zeros(2)\n")
        version = session.edit(uri, (1, 18), (1, 18), ".cuda()")
        published = await session.diagnostics(uri, version)
        assert codes(published) == ["MPS101"]
        assert published[0].range.start == lsp.Position(1, 4)
        version = session.edit(uri, (1, 18), (1, 25), ".to('cpu')")  # fixed by hand
        assert await session.diagnostics(uri, version) == []


@run_async
async def test_positions_survive_form_feeds_and_astral_characters(tmp_path):
    # str.splitlines() would see 5 lines here and put the edit on the wrong one.
    text = "import torch\n\x0c\nlabel = '\U0001F680'; x = torch.zeros(2)\n"
    async with Session(tmp_path) as session:
        uri = session.open(tmp_path / "a.py", text)
        await session.diagnostics(uri, 1)
        line = 2
        end = len("label = '\U0001F680'; x = torch.zeros(2)") + 1  # UTF-16: the rocket is two units
        version = session.edit(uri, (line, end), (line, end), ".cuda()")
        published = await session.diagnostics(uri, version)
        assert codes(published) == ["MPS101"]
        assert published[0].range.start == lsp.Position(line, len("label = '\U0001F680'; x = ") + 1)
        expected = check_text(session.texts[uri], "a.py", ConfigResolver(cwd=tmp_path).for_directory(tmp_path).settings).diagnostics
        assert [d.code for d in expected] == ["MPS101"]


@run_async
async def test_a_file_that_does_not_parse_is_MPS000_until_it_does(tmp_path):
    broken = "import torch\nx = torch.zeros(3).cuda(\n"
    async with Session(tmp_path) as session:
        uri = session.open(tmp_path / "a.py", broken)
        (published,) = await session.diagnostics(uri)
        assert published.code == "MPS000" and published.severity == lsp.DiagnosticSeverity.Error
        (expected,) = check_text(broken, "a.py", ConfigResolver(cwd=tmp_path).for_directory(tmp_path).settings).diagnostics
        assert published.message == expected.message  # Python's own words ("'(' was never closed")
        assert published.range.start.line == 1
        actions = await session.code_actions(uri, published.range)
        assert actions == []  # no fix, no noqa, no fix-all for text that does not parse
        version = session.edit(uri, (1, 24), (1, 24), ")")
        assert codes(await session.diagnostics(uri, version)) == ["MPS101"]


@run_async
async def test_unsaved_buffers_are_checked_excluded_files_are_not_and_closing_clears(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.mpslint]\nextend-exclude = ["generated"]\n')
    (tmp_path / "generated").mkdir()
    async with Session(tmp_path) as session:
        untitled = session.open_untitled("Untitled-1", CUDA)
        excluded = session.open(tmp_path / "generated" / "a.py", CUDA)
        text_file = session.open(tmp_path / "notes.txt", CUDA, language_id="plaintext")
        assert codes(await session.diagnostics(untitled)) == ["MPS101", "MPS101"]
        assert await session.diagnostics(excluded) == []
        assert session.publications(text_file) == 0
        count = session.publications(untitled)
        session.close(untitled)  # closing clears what was shown
        await session.wait_until(lambda: session.publications(untitled) > count, "the clearing publication")
        assert list(session.published[untitled][-1].diagnostics) == []


# -- code actions ---------------------------------------------------------------------------------------------


@run_async
async def test_applying_a_fix_gives_the_fixers_text(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(CUDA)
    (want,) = [d for d in cli_diagnostics(path, tmp_path) if d.location.row == 4]
    async with Session(tmp_path) as session:
        uri = session.open(path)
        published = await session.diagnostics(uri)
        (target,) = [d for d in published if d.range.start.line == 3]
        actions = await session.code_actions(uri, at(3, 2))
        titles = [a.title for a in actions]
        assert titles[0] == f"mpslint (MPS101): {want.fix.message}"
        assert "mpslint (MPS101): Disable for this line" in titles
        fix = actions[0]
        assert fix.kind == lsp.CodeActionKind.QuickFix and fix.is_preferred
        assert fix.diagnostics[0].range == target.range
        fixed = session.applied(uri, fix.edit)
        assert fixed == apply_fixes(CUDA, [want.fix])
        version = session.replace_all(uri, fixed)
        remaining = await session.diagnostics(uri, version)
        assert [d.range.start.line for d in remaining if d.code == "MPS101"] != [3]
        assert len(remaining) == len(published) - 1


@run_async
async def test_fix_all_is_what_mpslint_fix_writes(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch>=2.13\n")  # the fixture's AMP fixes need a current torch
    path = tmp_path / "train_cuda.py"
    path.write_text(TRAIN_CUDA.read_text().replace("\n", "\r\n"))  # and line endings are kept
    cli_copy = tmp_path / "cli" / "train_cuda.py"
    cli_copy.parent.mkdir()
    cli_copy.write_bytes(path.read_bytes())
    command = [sys.executable, "-m", "mpslint", "--fix", "--no-cache", str(cli_copy)]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True)
    assert done.returncode == 0, done.stderr
    async with Session(tmp_path) as session:
        uri = session.open(path, path.read_bytes().decode())
        await session.diagnostics(uri)
        actions = await session.code_actions(uri, at(0, 0), only=[lsp.CodeActionKind.SourceFixAll])
        (fix_all,) = actions
        assert fix_all.kind == "source.fixAll.mpslint" and fix_all.edit is None
        resolved = await session.resolve(fix_all)
        fixed = session.applied(uri, resolved.edit)
        assert fixed.encode() == cli_copy.read_bytes()
        version = session.replace_all(uri, fixed)
        assert await session.diagnostics(uri, version) == []


@run_async
async def test_a_plain_client_gets_edits_right_away_and_plain_text_hovers(tmp_path):
    async with Session(tmp_path, capabilities=PLAIN_CAPABILITIES) as session:
        uri = session.open(tmp_path / "a.py", CUDA)
        await session.diagnostics(uri)
        actions = await session.code_actions(uri, at(3, 2))
        fix_alls = [a for a in actions if a.title == "mpslint: Fix all auto-fixable problems"]
        # Once in the light bulb's list (every kind asked for), as the quickfix next to the finding.
        assert [a.kind for a in fix_alls] == [lsp.CodeActionKind.QuickFix]
        for action in actions:
            assert action.edit is not None and action.edit.document_changes is None  # plain `changes`
        fixed = session.applied(uri, fix_alls[0].edit)
        assert ".cuda()" not in fixed and "pick_device" in fixed
        hover = await session.hover(uri, 3, 8)  # and hovers in plain text
        assert hover.contents.kind == lsp.MarkupKind.PlainText
        assert hover.contents.value.startswith("MPS101 cuda-method: .cuda() on a tensor or module")


@run_async
async def test_unsafe_fixes_only_when_the_client_asks(tmp_path):
    async with Session(tmp_path) as session:
        uri = session.open(tmp_path / "a.py", FORK)
        published = await session.diagnostics(uri)
        (fork,) = [d for d in published if d.code == "MPS402"]
        assert fork.data["fix"]["applicability"] == "unsafe"
        titles = [a.title for a in await session.code_actions(uri, fork.range) if "Fix all" not in a.title]
        assert titles == ["mpslint (MPS402): Disable for this line"]
        (fix_all,) = await session.code_actions(uri, at(0, 0), only=["source.fixAll"])
        fixed = session.applied(uri, (await session.resolve(fix_all)).edit)
        assert '"fork"' in fixed and ".cuda()" not in fixed  # the safe fix only
    async with Session(tmp_path, init_options={"unsafeFixes": True}) as session:
        uri = session.open(tmp_path / "a.py", FORK)
        await session.diagnostics(uri)
        actions = await session.code_actions(uri, fork.range)
        assert actions[0].title == "mpslint (MPS402): Use the 'spawn' start method (unsafe)"
        assert not actions[0].is_preferred
        assert '"spawn"' in session.applied(uri, actions[0].edit)
        (fix_all,) = await session.code_actions(uri, at(0, 0), only=["source.fixAll.mpslint"])
        fixed = session.applied(uri, (await session.resolve(fix_all)).edit)
        assert '"spawn"' in fixed and ".cuda()" not in fixed


@run_async
async def test_noqa_action_silences_the_finding(tmp_path):
    text = CUDA.replace("model.cuda()", "model.cuda()  # noqa: MPS104")
    async with Session(tmp_path) as session:
        uri = session.open(tmp_path / "a.py", text)
        await session.diagnostics(uri)
        actions = await session.code_actions(uri, at(3, 2))
        (noqa,) = [a for a in actions if a.title.endswith("Disable for this line")]
        fixed = session.applied(uri, noqa.edit)
        assert fixed.splitlines()[3] == "model.cuda()  # noqa: MPS104, MPS101"
        version = session.replace_all(uri, fixed)
        assert [d.range.start.line for d in await session.diagnostics(uri, version)] == [4]


@run_async
async def test_an_action_for_text_that_changed_meanwhile_is_not_applied(tmp_path):
    async with Session(tmp_path) as session:
        uri = session.open(tmp_path / "a.py", CUDA)
        await session.diagnostics(uri)
        (fix_all,) = await session.code_actions(uri, at(0, 0), only=["source.fixAll"])
        session.edit(uri, (0, 0), (0, 0), "# a comment\n")
        resolved = await session.resolve(fix_all)
        assert resolved.edit is None
        # Actions asked for now are for the new text.
        actions = await session.code_actions(uri, at(4, 2))
        assert actions and all(
            change.text_document.version == session.versions[uri] for a in actions if a.edit for change in a.edit.document_changes
        )


# -- hover ------------------------------------------------------------------------------------------------------


@run_async
async def test_hover_explains_the_rule(tmp_path):
    doc = catalog.load()["MPS101"]
    text = CUDA + "y = 1  # noqa: MPS302\n"
    async with Session(tmp_path) as session:
        uri = session.open(tmp_path / "a.py", text)
        await session.diagnostics(uri)
        hover = await session.hover(uri, 3, 8)
        assert hover.contents.kind == lsp.MarkupKind.Markdown
        value = hover.contents.value
        assert value.startswith("**MPS101** `cuda-method`")
        assert doc.section("Why it matters on MPS").strip() in value
        assert doc.url in value and "Fix (safe fix)" in value
        comment = await session.hover(uri, 5, text.splitlines()[5].index("MPS302") + 2)
        assert comment.contents.value.startswith("**MPS302** `placement-mismatch`")
        assert await session.hover(uri, 0, 2) is None


# -- configuration ------------------------------------------------------------------------------------------------


@run_async
async def test_editing_pyproject_rechecks_open_documents(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.mpslint]\n")
    async with Session(tmp_path) as session:
        first = session.open(tmp_path / "a.py", CUDA)
        second = session.open(tmp_path / "b.py", FORK)
        assert codes(await session.diagnostics(first)) == ["MPS101", "MPS101"]
        assert codes(await session.diagnostics(second)) == ["MPS101", "MPS402"]
        counts = (session.publications(first), session.publications(second))
        pyproject.write_text('[tool.mpslint]\nignore = ["MPS101"]\n')
        session.files_changed(pyproject)
        assert await session.diagnostics(first, after=counts[0]) == []
        assert codes(await session.diagnostics(second, after=counts[1])) == ["MPS402"]


@run_async
async def test_config_edits_are_noticed_without_file_watching(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.mpslint]\n")
    async with Session(tmp_path, capabilities=PLAIN_CAPABILITIES) as session:
        uri = session.open(tmp_path / "a.py", CUDA)
        assert codes(await session.diagnostics(uri)) == ["MPS101", "MPS101"]
        assert session.registrations == []
        count = session.publications(uri)
        pyproject.write_text('[tool.mpslint]\nignore = ["MPS1"]\n')
        os.utime(pyproject, ns=(pyproject.stat().st_atime_ns, pyproject.stat().st_mtime_ns + 10**9))
        assert await session.diagnostics(uri, after=count) == []  # nothing sent: the server looked by itself
        count = session.publications(uri)
        (tmp_path / "mpslint.toml").write_text("")  # a nearer config file appears: it wins
        session.save(uri)
        assert codes(await session.diagnostics(uri, after=count)) == ["MPS101", "MPS101"]


@run_async
async def test_workspace_settings_act_as_command_line_flags(tmp_path):
    async with Session(tmp_path, settings={"ignore": ["MPS4"]}) as session:
        uri = session.open(tmp_path / "a.py", FORK)
        await session.wait_until(lambda: session.configuration_requests, "workspace/configuration request")
        def applied():
            published = session.published.get(uri)
            return published and not any(d.code == "MPS402" for d in published[-1].diagnostics)

        await session.wait_until(applied, "settings applied")
        count = session.publications(uri)
        session.settings = {"select": ["MPS4"]}  # pulled on the change notification
        session.configuration_changed()
        assert codes(await session.diagnostics(uri, after=count)) == ["MPS402"]
        count = session.publications(uri)
        session.configuration_changed({"mpslint": {"torchVersion": "2.4", "ignore": ["MPS402"]}})  # pushed
        assert codes(await session.diagnostics(uri, after=count)) == ["MPS101"]


@run_async
async def test_a_broken_config_is_shown_and_checking_goes_on(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.mpslint]\nselct = ['MPS4']\n")
    async with Session(tmp_path, init_options={"unsafeFixes": "yes", "colour": "blue"}) as session:
        uri = session.open(tmp_path / "a.py", CUDA)
        assert codes(await session.diagnostics(uri)) == ["MPS101", "MPS101"]  # with the default settings
        await session.wait_until(lambda: len(session.messages) >= 3, "error messages")
        texts = [m.message for m in session.messages]
        assert any("selct" in t and m.type == lsp.MessageType.Error for t, m in zip(texts, session.messages))
        assert any("`unsafeFixes` must be true or false" in t for t in texts)
        assert any("unknown setting `colour`" in t for t in texts)
        count = len(session.messages)
        session.edit(uri, (0, 0), (0, 0), "\n")
        await session.diagnostics(uri)
        assert len(session.messages) == count  # not again on every keystroke


AUTOCAST = 'import torch\n\nwith torch.autocast("mps"):\n    pass\n'


@run_async
async def test_each_workspace_folder_resolves_like_the_command_line_run_there(tmp_path):
    old_torch, strict, lenient = tmp_path / "old torch", tmp_path / "strict rules", tmp_path / "lenient-ü"  # %-escaped URIs
    for folder in (old_torch, strict, lenient):
        folder.mkdir()
    (old_torch / "requirements.txt").write_text("torch>=2.4\n")  # no config file: the floor comes from here
    (strict / "mpslint.toml").write_text('torch-version = "2.8"\n')
    (lenient / "pyproject.toml").write_text('[tool.mpslint]\nignore = ["MPS1"]\n')
    files = {old_torch / "a.py": AUTOCAST, strict / "a.py": AUTOCAST, strict / "b.py": CUDA, lenient / "b.py": CUDA}
    for path, text in files.items():
        path.write_text(text)
    expected = {
        old_torch / "a.py": ["MPS504"],  # autocast("mps") needs torch 2.5
        strict / "a.py": [],  # torch-version 2.8 has it
        strict / "b.py": ["MPS101", "MPS101"],
        lenient / "b.py": [],
    }
    for path, wanted in expected.items():
        assert [d.code for d in cli_diagnostics(path, path.parent)] == wanted  # `mpslint` run in that folder
    async with Session(tmp_path, folders=[old_torch, strict, lenient]) as session:
        uris = {path: session.open(path) for path in files}
        untitled = session.open_untitled("Untitled-1", AUTOCAST)  # gets the first folder's settings
        for path, wanted in expected.items():
            assert codes(await session.diagnostics(uris[path])) == wanted, path
        assert codes(await session.diagnostics(untitled)) == ["MPS504"]


@run_async
async def test_a_client_that_pulls_diagnostics_gets_them_once_and_only_by_pulling(tmp_path):
    """LSP 3.17 pull diagnostics: textDocument/diagnostic answers; nothing is published besides (no doubles)."""
    import attrs

    capabilities = attrs.evolve(
        CAPABILITIES,
        text_document=attrs.evolve(
            CAPABILITIES.text_document, diagnostic=lsp.DiagnosticClientCapabilities(related_document_support=True)
        ),
    )
    async with Session(tmp_path, capabilities=capabilities) as session:
        assert session.initialize_result.capabilities.diagnostic_provider.identifier == "mpslint"
        uri = session.open(tmp_path / "a.py", CUDA)
        report = await asyncio.wait_for(
            session.client.text_document_diagnostic_async(
                lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
            ),
            120,
        )
        assert report.kind == "full"
        assert [d.code for d in report.items] == ["MPS101", "MPS101"]
        version = session.replace_all(uri, "import torch\nx = torch.zeros(1)\n")
        report = await session.client.text_document_diagnostic_async(
            lsp.DocumentDiagnosticParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
        )
        assert list(report.items) == [] and version == 2
        assert session.publications(uri) == 0


@run_async
async def test_saving_a_helper_module_republishes_the_files_that_read_it(tmp_path):
    helpers = tmp_path / "helpers.py"
    helpers.write_text("import torch\ndef reduce_mean(t, n):\n    return torch.zeros(1)  # made on the host\n")
    train = tmp_path / "train.py"
    train.write_text(
        "import torch\nfrom helpers import reduce_mean\ndevice = torch.device('mps')\n"
        "model = torch.nn.Linear(2, 2).to(device)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x.to(device)).sum()\n    loss.backward()\n    opt.step()\n"
        "    print(reduce_mean(loss, 2).item())\n"
    )
    async with Session(tmp_path) as session:
        train_uri = session.open(train)
        assert codes(await session.diagnostics(train_uri)) == []
        helpers_uri = session.open(helpers)
        await session.diagnostics(helpers_uri)
        count = session.publications(train_uri)
        session.replace_all(helpers_uri, "def reduce_mean(t, n):\n    out = t.clone()\n    out /= n\n    return out\n")
        helpers.write_text(session.texts[helpers_uri])
        session.save(helpers_uri)
        await session.wait_until(lambda: session.publications(train_uri) > count, "train.py published again")
        assert codes(list(session.published[train_uri][-1].diagnostics)) == ["MPS201"]


@run_async
async def test_saving_a_module_rechecks_only_the_open_files_that_import_it_directly_or_not(tmp_path):
    helpers = tmp_path / "helpers.py"
    helpers.write_text("import torch\ndef reduce_mean(t, n):\n    return torch.zeros(1)  # made on the host\n")
    (tmp_path / "common.py").write_text("from helpers import *\n")
    loop = (
        "import torch\n{imports}\ndevice = torch.device('mps')\n"
        "model = torch.nn.Linear(2, 2).to(device)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n    loss = model(x.to(device)).sum()\n    loss.backward()\n    opt.step()\n"
        "    print(reduce_mean(loss, 2).item())\n"
    )
    direct, through = tmp_path / "direct.py", tmp_path / "through.py"
    direct.write_text(loop.format(imports="from helpers import reduce_mean"))
    through.write_text(loop.format(imports="from common import reduce_mean"))  # helpers reached by a star import
    unrelated = tmp_path / "unrelated.py"
    unrelated.write_text(CUDA)
    async with Session(tmp_path) as session:
        # Opened first: if a save re-checked every open file, this one would be re-published first
        # (one worker, checks in the order asked).
        unrelated_uri = session.open(unrelated)
        assert codes(await session.diagnostics(unrelated_uri)) == ["MPS101", "MPS101"]
        uris = [session.open(direct), session.open(through)]
        for uri in uris:
            assert codes(await session.diagnostics(uri)) == []
        helpers_uri = session.open(helpers)
        await session.diagnostics(helpers_uri)
        counts = {uri: session.publications(uri) for uri in [unrelated_uri, *uris]}
        session.replace_all(helpers_uri, "def reduce_mean(t, n):\n    out = t.clone()\n    out /= n\n    return out\n")
        helpers.write_text(session.texts[helpers_uri])
        session.save(helpers_uri)
        for uri in uris:
            await session.wait_until(lambda: session.publications(uri) > counts[uri], f"{uri} published again")
            assert codes(list(session.published[uri][-1].diagnostics)) == ["MPS201"]
        assert session.publications(unrelated_uri) == counts[unrelated_uri]
