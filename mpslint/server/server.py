"""``mpslint server``: the Language Server Protocol over stdio, on pygls.

The server process holds the open documents and notebooks, resolves their
settings, and talks to the editor; checks and fixes run in worker processes
(``mpslint.server.pool``), scheduled per target (a file, or a notebook with
all its cells) by ``mpslint.server.scheduler``. Nothing here parses Python:
the event loop only moves text and findings, so a request never waits behind
a parse it does not need.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Dict, FrozenSet, List, Optional, Set, Tuple, Union

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from mpslint import __version__
from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic, Location
from mpslint.runner import usable_cpus
from mpslint.server import settings as client_settings
from mpslint.server.actions import FIX_ALL_KIND, NOTEBOOK_FIX_ALL_KIND, ActionBuilder, fix_all_request
from mpslint.server.documents import Document, Snapshot
from mpslint.server.findings import to_lsp
from mpslint.server.hover import code_at, hover_text, rule_text
from mpslint.server.notebooks import OpenNotebook
from mpslint.server.pool import JobFailed, Pool
from mpslint.server.projects import Projects, is_config_file
from mpslint.server.scheduler import Scheduler
from mpslint.server.targets import Checked, NotebookTarget, Part, TextTarget, is_checked_notebook, is_python, path_of, same_file

logger = logging.getLogger(__name__)

# Files whose change can change some document's settings (see mpslint.server.projects).
CONFIG_GLOBS = ("**/pyproject.toml", "**/mpslint.toml", "**/requirements*.txt")
# How often config files are looked at when the client does not watch them (a few stat calls per open folder).
CONFIG_POLL_SECONDS = 2.0
INTERNAL_ERROR = "MPS900"
# LSP 3.17 notebook document sync: Jupyter notebooks, with their Python cells (a client may send other cells too).
NOTEBOOK_SYNC = lsp.NotebookDocumentSyncOptions(
    notebook_selector=[
        lsp.NotebookDocumentFilterWithNotebook(notebook="jupyter-notebook", cells=[lsp.NotebookCellLanguage(language="python")])
    ],
    save=True,
)

Target = Union[TextTarget, NotebookTarget]


def default_workers() -> int:
    """Resident worker processes: as many as can check at once (up to two), plus one.

    The spare is for when a stale check is stopped: its worker ends and a new
    one takes a moment to import the engine; meanwhile the next document is
    checked by the spare instead of waiting. An idle worker holds about 25 MB.
    """
    return min(usable_cpus(), 2) + 1


@dataclass(frozen=True)
class Job:
    """One check: a snapshot of a target's documents and the settings it is checked with (None: excluded)."""

    version: int
    parts: Tuple[Part, ...]
    path: str
    settings: Optional[Settings]
    target: Any  # the TextTarget or NotebookTarget that knows how to ask for the check and read its answer


class Protocol(LanguageServerProtocol):
    """pygls' protocol, minus its own copy of each text document and notebook (``mpslint.server.documents`` says why)."""

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams):
        handler = self.fm.features.get(lsp.TEXT_DOCUMENT_DID_OPEN)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        handler = self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams):
        handler = self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CLOSE)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(self, params: lsp.DidOpenNotebookDocumentParams):
        handler = self.fm.features.get(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(self, params: lsp.DidChangeNotebookDocumentParams):
        handler = self.fm.features.get(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
        if handler is not None:
            yield handler, (params,), None

    @lsp_method(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def lsp_notebook_document__did_close(self, params: lsp.DidCloseNotebookDocumentParams):
        handler = self.fm.features.get(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
        if handler is not None:
            yield handler, (params,), None


class MpslintServer(LanguageServer):
    def __init__(self, *, workers: Optional[int] = None, debounce: float = 0.25, early: Any = None) -> None:
        super().__init__("mpslint", __version__, protocol_cls=Protocol, notebook_document_sync=NOTEBOOK_SYNC)
        self.targets: Dict[str, Target] = {}  # by target key (a file's URI, a notebook's URI)
        self.owners: Dict[str, str] = {}  # document URI -> the key of the target it belongs to
        self.projects = Projects()
        self.pool = Pool(workers or default_workers(), early=early)
        self.scheduler = Scheduler(self._check, self._publish, debounce=debounce)
        self.epoch = 0  # bumped whenever settings may have changed: results of an older epoch are stale
        self.init_options: Any = None
        self.client = client_settings.ClientSettings()
        self.watching = False  # the client reports config file changes (workspace/didChangeWatchedFiles)
        self._poller: Optional["asyncio.Task[None]"] = None
        self._shown: Set[str] = set()
        # Fix-all results by target: computed once per text, settings and safety, however often asked.
        self._fixed: Dict[str, Tuple[Any, Tuple[str, Optional[str]]]] = {}

    # -- plumbing ----------------------------------------------------------------------------

    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16)

    def capability(self, dotted: str) -> Any:
        """A client capability by its path (``text_document.hover.content_format``), or None."""
        value: Any = self.client_capabilities
        for part in dotted.split("."):
            value = getattr(value, part, None)
            if value is None:
                return None
        return value

    def start_io(self, stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> None:
        """Serve over stdio until ``exit`` or the end of stdin, then exit with LSP's code (0 after ``shutdown``).

        pygls' own loop is replaced by ``mpslint.server.transport`` (which says why), and the workers
        are stopped while the event loop still runs: pygls stops them after closing it, and their
        pipes then raise "RuntimeError: Event loop is closed" on the way out.
        """
        from pygls.io_ import StdinAsyncReader, StdoutWriter

        from mpslint.server.transport import MessageReader

        self._stop_event = threading.Event()
        reader = StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        messages = MessageReader(self.protocol)

        async def serve() -> int:
            try:
                return await messages.run(self._stop_event, reader)
            finally:
                self.stop_polling()
                self.scheduler.close()
                await self.pool.aclose()

        code = 1
        try:
            code = asyncio.run(serve())
        except BrokenPipeError:
            logger.error("mpslint: the connection to the client is lost; shutting down")
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()
        sys.exit(code)

    def shutdown(self) -> None:
        # The connection ended (exit, closed pipes, or a crash of the client): no worker may outlive it.
        self.stop_polling()
        self.scheduler.close()
        self.pool.close()
        super().shutdown()

    def show_once(self, kind: lsp.MessageType, message: str) -> None:
        """Tell the user, once per settings epoch: a config problem is not news on every keystroke."""
        if message in self._shown:
            return
        self._shown.add(message)
        self.window_log_message(lsp.LogMessageParams(type=kind, message=f"mpslint: {message}"))
        self.window_show_message(lsp.ShowMessageParams(type=kind, message=f"mpslint: {message}"))

    # -- documents -----------------------------------------------------------------------------

    def open(self, item: lsp.TextDocumentItem) -> None:
        if not is_python(item.uri, item.language_id):
            return
        self._track(TextTarget(Document(item.uri, item.language_id, item.version, Snapshot.of(item.text))))

    def open_notebook(self, params: lsp.DidOpenNotebookDocumentParams) -> None:
        if not is_checked_notebook(params.notebook_document.uri):
            return
        self._track(NotebookTarget(OpenNotebook.opened(params)))

    def _track(self, target: Target) -> None:
        self.targets[target.key] = target
        for uri in target.uris:
            self.owners[uri] = target.key
        self.scheduler.track(target.key, lambda: self._make(target), lambda: (target.version, self.epoch))
        self.scheduler.request(target.key, delay=0)

    def target_of(self, uri: str) -> Optional[Target]:
        """The target of a document (a file, or a cell of a notebook), or of a target key."""
        key = self.owners.get(uri, uri)
        return self.targets.get(key)

    def change(self, params: lsp.DidChangeTextDocumentParams) -> None:
        target = self.target_of(params.text_document.uri)
        if not isinstance(target, TextTarget):  # a notebook's cells change through notebookDocument/didChange
            return
        target.document.apply(list(params.content_changes), params.text_document.version, self.encoding)
        self.scheduler.request(target.key)

    def change_notebook(self, params: lsp.DidChangeNotebookDocumentParams) -> None:
        target = self.targets.get(params.notebook_document.uri)
        if not isinstance(target, NotebookTarget):
            return
        changed, removed = target.notebook.apply(params, self.encoding)
        for uri in removed:
            self.owners.pop(uri, None)
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        for uri in target.uris:
            self.owners[uri] = target.key
        if changed:  # not for a cell that ran (its execution summary) or new metadata: the code is the same
            self.scheduler.request(target.key)

    def save(self, uri: str) -> None:
        path = path_of(uri)
        if path is not None and is_config_file(path.name):
            if not self.watching:  # else the file watcher reports it too
                self.settings_changed()
            return
        target = self.target_of(uri)
        if target is None:
            return
        if self.projects.changed_since_last_look(target.path):
            self.settings_changed()
            return
        self.scheduler.request(target.key, delay=0)
        if isinstance(target, TextTarget) and target.path is not None:
            # Other open documents read this module from disk (analysis/project): what it says may have changed.
            for key in self.readers_of(str(target.path), except_key=target.key):
                self.scheduler.request(key, delay=0)

    def readers_of(self, path: str, *, except_key: Optional[str] = None) -> List[str]:
        """The open documents whose findings may depend on the module file at ``path``.

        A check records every module file the project model read to answer it, directly
        imported or reached through other modules' imports (``depends``, as the result
        cache keeps). A document is a reader when its last check read ``path``, or when
        that is not known: never checked, its check failed, or a check of it is due or
        running (it may have read the file before the save).
        """
        wanted = same_file(path)
        found = []
        for key in self.targets:
            if key == except_key:
                continue
            latest = self.scheduler.latest(key)
            reads = latest[1].reads if latest is not None else None
            if reads is None or not self.scheduler.settled(key) or wanted in {same_file(p) for p in reads}:
                found.append(key)
        return found

    def close(self, uri: str) -> None:
        """A file or a notebook closed: forget it and clear what it showed (every cell of a notebook)."""
        target = self.target_of(uri)
        if target is None or (target.is_notebook and uri != target.key):
            return  # a cell closes with its notebook, or leaves it through a structure change
        del self.targets[target.key]
        self._fixed.pop(target.key, None)
        for document_uri in target.uris:
            self.owners.pop(document_uri, None)
        self.scheduler.forget(target.key)
        for document_uri in target.uris:
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=document_uri, diagnostics=[]))

    def settings_changed(self, *, except_key: Optional[str] = None) -> None:
        """Config files or the editor's settings changed: resolve again and re-check every open document."""
        self.epoch += 1
        self.projects.reset()
        self._shown.clear()
        for key in list(self.targets):
            if key != except_key:
                self.scheduler.request(key, delay=0)

    def apply_settings(self, pulled: Any) -> None:
        raw = client_settings.combine(self.init_options, pulled)
        parsed = client_settings.parse(raw, "mpslint settings")
        for problem in parsed.problems:
            self.show_once(lsp.MessageType.Warning, problem)
        if parsed != self.client:
            self.client = parsed
            self.projects.set_client(parsed)
            self.settings_changed()

    async def pull_settings(self) -> None:
        if not self.capability("workspace.configuration"):
            return
        try:
            answer = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=client_settings.SECTION)])
            )
        except Exception as exc:  # a client that cannot answer keeps the initialization options
            logger.warning("mpslint: workspace/configuration failed: %s", exc)
            return
        self.apply_settings(answer[0] if answer else None)

    def start_polling(self) -> None:
        """Look for config edits now and then, for clients that do not report file changes."""
        if self._poller is None and not self.watching:
            self._poller = asyncio.ensure_future(self._poll_config())

    def stop_polling(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None

    async def _poll_config(self) -> None:
        while True:
            await asyncio.sleep(CONFIG_POLL_SECONDS)
            paths = {t.path for t in self.targets.values() if t.path is not None}
            if any([self.projects.changed_since_last_look(path) for path in paths]):  # a list: look at all
                self.settings_changed()

    # -- checking ------------------------------------------------------------------------------

    def _make(self, target: Target) -> Tuple[Tuple[int, int], Job]:
        if self.projects.changed_since_last_look(target.path):
            self.settings_changed(except_key=target.key)
        resolution = self.projects.resolve(target.path)
        if resolution.error:
            self.show_once(lsp.MessageType.Error, resolution.error)
        job = Job(target.version, target.parts(), target.engine_path, resolution.settings, target)
        return (target.version, self.epoch), job

    async def _check(self, job: Job) -> Checked:
        parts = job.parts
        request = job.target.check_request(parts, job.path, job.settings) if job.settings is not None else None
        if request is None:  # excluded by the project's config, or a notebook without a Python cell
            return Checked(job.version, parts, job.path, job.settings, [])
        kind, args = request
        reads: Optional[FrozenSet[str]] = None
        try:
            diagnostics, parts, reads = job.target.read_check(parts, await self.pool.run(kind, *args))
        except JobFailed as exc:
            message = f"mpslint: checking {job.path} failed: {exc}"
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Error, message=message))
            diagnostics = job.target.place([internal_error(job.path, str(exc))], parts)
        return Checked(job.version, parts, job.path, job.settings, diagnostics, reads)

    def _publish(self, key: str, token: Any, checked: Checked) -> None:
        """Each document's findings, with its own version: a file's, or those of every cell of a notebook.

        Every cell gets its list, empty or not, as Ruff's server does, so a cell's
        findings go away when an edit in another cell removes their cause.
        """
        if key not in self.targets:
            return
        if self.pulls:
            # The client asks for each document's findings itself; tell it they changed, if it listens.
            if self.capability("workspace.diagnostics.refresh_support"):
                self.workspace_diagnostic_refresh(None)
            return
        for part in checked.parts:
            diagnostics = [to_lsp(d, part.snapshot, self.encoding) for d in checked.on(part)]
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=part.uri, diagnostics=diagnostics, version=part.version)
            )

    @property
    def pulls(self) -> bool:
        """The client pulls findings (``textDocument/diagnostic``, LSP 3.17) instead of having them published.

        Never both: a client that pulls keeps pushed findings in a list of their
        own, and every finding would show twice (Ruff's server decides the same way).
        """
        return self.capability("text_document.diagnostic") is not None

    # -- requests ------------------------------------------------------------------------------

    async def document_diagnostics(self, params: lsp.DocumentDiagnosticParams) -> lsp.RelatedFullDocumentDiagnosticReport:
        """The findings for the text the client has now, waiting for its check if it is still running."""
        uri = params.text_document.uri
        for _ in range(_PULL_TRIES):
            target, checked = await self.current(uri)
            if target is None:
                break
            if checked is not None:
                part = checked.part(uri)
                items = [to_lsp(d, part.snapshot, self.encoding) for d in checked.on(part)] if part is not None else []
                return lsp.RelatedFullDocumentDiagnosticReport(items=items)
        return lsp.RelatedFullDocumentDiagnosticReport(items=[])  # not open, or edited faster than it can be checked

    async def current(self, uri: str) -> Tuple[Optional[Target], Optional[Checked]]:
        """The target of ``uri`` and its findings for the text the client has now."""
        target = self.target_of(uri)
        if target is None:
            return None, None
        checked = await self.scheduler.result_for(target.key)
        if checked is None or checked.version != target.version:
            return target, None
        return target, checked

    def builder(self, target: Target, checked: Checked, unsafe: bool) -> ActionBuilder:
        return ActionBuilder(
            target.key,
            checked,
            self.encoding,
            notebook=target.is_notebook,
            unsafe=unsafe,
            versioned=bool(self.capability("workspace.workspace_edit.document_changes")),
        )

    async def code_actions(self, params: lsp.CodeActionParams) -> Optional[List[lsp.CodeAction]]:
        target, checked = await self.current(params.text_document.uri)
        if target is None or checked is None or checked.settings is None:
            return None
        builder = self.builder(target, checked, self.client.unsafe_fixes)
        actions = builder.actions(params.text_document.uri, params.range, params.context.only)
        properties = self.capability("text_document.code_action.resolve_support.properties") or []
        if "edit" not in properties:  # the client cannot ask for the fix-all edit later: add it now
            actions = [a for a in [await self.resolve(a) for a in actions] if a.edit is not None]
        return actions

    async def resolve(self, action: lsp.CodeAction) -> lsp.CodeAction:
        if action.edit is not None:
            return action
        request = fix_all_request(action)
        if request is None:
            return action
        uri, version, unsafe = request
        target, checked = await self.current(uri)
        if target is None or checked is None or checked.version != version or checked.settings is None:
            return action  # the text changed since the action was offered: nothing to apply
        stamp = (checked.version, self.epoch, unsafe)
        cached = self._fixed.get(target.key)
        if cached is not None and cached[0] == stamp:
            fixed, error = cached[1]
        else:
            request = target.fix_request(checked, unsafe)
            if request is None:
                return action
            kind, args = request
            try:
                fixed, error = target.read_fix(checked, await self.pool.run(kind, *args))
            except JobFailed as exc:
                self.show_once(lsp.MessageType.Error, f"fixing {checked.path} failed: {exc}")
                return action
            self._fixed[target.key] = (stamp, (fixed, error))
        if error:
            self.show_once(lsp.MessageType.Warning, f"{checked.path}: {error}")
        action.edit = self.builder(target, checked, unsafe).fix_all_edit(fixed)
        return action

    async def hover(self, params: lsp.HoverParams) -> Optional[lsp.Hover]:
        target, checked = await self.current(params.text_document.uri)
        part = checked.part(params.text_document.uri) if checked is not None else None
        if target is None or checked is None or part is None:
            return None
        snapshot = part.snapshot
        offset = snapshot.offset(params.position, self.encoding)
        here = [d for d in checked.on(part) if checked.span(d)[0] <= offset <= checked.span(d)[1]]
        formats = self.capability("text_document.hover.content_format") or []
        markdown = lsp.MarkupKind.Markdown in formats
        text = hover_text(here, markdown=markdown) if here else None
        if text is None:  # on a rule code in a suppression comment?
            row = bisect.bisect_right(snapshot.starts, offset) - 1
            code = code_at(snapshot.line(row), offset - snapshot.starts[row])
            text = rule_text(code, markdown=markdown) if code else None
        if text is None:
            return None
        kind = lsp.MarkupKind.Markdown if markdown else lsp.MarkupKind.PlainText
        return lsp.Hover(contents=lsp.MarkupContent(kind=kind, value=text))


# A pull waits for the check of the text the client has; text that keeps changing meanwhile gets an empty
# answer after this many checks, and the client pulls again after its next edit.
_PULL_TRIES = 5


def internal_error(path: str, reason: str) -> Diagnostic:
    first = reason.strip().splitlines()[-1] if reason.strip() else "unknown reason"
    return Diagnostic(
        INTERNAL_ERROR,
        f"internal error: the check of this file did not finish ({first}); findings are missing. "
        "Please report this at https://github.com/mpslint/mpslint/issues with the file",
        path,
        Location(1, 1),
        Location(1, 1),
    )


def workspace_folders(params: lsp.InitializeParams) -> List[Path]:
    folders = [path_of(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [path_of(params.root_uri)]
    if not folders and params.root_path:
        folders = [Path(params.root_path)]
    return [f for f in folders if f is not None]


def build(*, workers: Optional[int] = None, debounce: float = 0.25, early: Any = None) -> MpslintServer:
    """``early``: a worker already started (``pool.prestart``), adopted as the pool's first."""
    server = MpslintServer(workers=workers, debounce=debounce, early=early)

    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        server.init_options = params.initialization_options
        server.projects.set_folders(workspace_folders(params))
        server.apply_settings(None)

    @server.feature(lsp.INITIALIZED)
    async def initialized(params: lsp.InitializedParams) -> None:
        server.pool.warm()
        registrations = []
        if server.capability("workspace.did_change_watched_files.dynamic_registration"):
            registrations.append(
                lsp.Registration(
                    id="mpslint-config-files",
                    method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=lsp.DidChangeWatchedFilesRegistrationOptions(
                        watchers=[lsp.FileSystemWatcher(glob_pattern=glob) for glob in CONFIG_GLOBS]
                    ),
                )
            )
        if server.capability("workspace.did_change_configuration.dynamic_registration"):
            registrations.append(
                lsp.Registration(
                    id="mpslint-settings",
                    method=lsp.WORKSPACE_DID_CHANGE_CONFIGURATION,
                    register_options=lsp.DidChangeConfigurationRegistrationOptions(section=client_settings.SECTION),
                )
            )
        if registrations:
            try:
                await server.client_register_capability_async(lsp.RegistrationParams(registrations=registrations))
            except Exception as exc:  # the client refused: config changes are still seen at the next check
                logger.warning("mpslint: client/registerCapability failed: %s", exc)
            else:
                server.watching = any(r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in registrations)
        server.start_polling()
        await server.pull_settings()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        server.open(params.text_document)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        server.change(params)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    def did_save(params: lsp.DidSaveTextDocumentParams) -> None:
        server.save(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        server.close(params.text_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open_notebook(params: lsp.DidOpenNotebookDocumentParams) -> None:
        server.open_notebook(params)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change_notebook(params: lsp.DidChangeNotebookDocumentParams) -> None:
        server.change_notebook(params)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save_notebook(params: lsp.DidSaveNotebookDocumentParams) -> None:
        server.save(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close_notebook(params: lsp.DidCloseNotebookDocumentParams) -> None:
        server.close(params.notebook_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: lsp.DidChangeWatchedFilesParams) -> None:
        names = [path_of(change.uri) for change in params.changes]
        if any(path is not None and is_config_file(path.name) for path in names):
            server.settings_changed()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
        pushed = params.settings.get(client_settings.SECTION) if isinstance(params.settings, dict) else None
        if pushed is not None:
            server.apply_settings(pushed)
        else:
            await server.pull_settings()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def did_change_workspace_folders(params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        removed = {path_of(f.uri) for f in params.event.removed}
        added = [p for p in (path_of(f.uri) for f in params.event.added) if p is not None]
        server.projects.set_folders([f for f in server.projects.given if f not in removed] + added)
        server.settings_changed()

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[
                lsp.CodeActionKind.QuickFix,
                lsp.CodeActionKind.SourceFixAll,
                FIX_ALL_KIND,
                "notebook.source.fixAll",
                NOTEBOOK_FIX_ALL_KIND,
            ],
            resolve_provider=True,
        ),
    )
    async def code_action(params: lsp.CodeActionParams) -> Optional[List[lsp.CodeAction]]:
        return await server.code_actions(params)

    @server.feature(lsp.CODE_ACTION_RESOLVE)
    async def code_action_resolve(params: lsp.CodeAction) -> lsp.CodeAction:
        return await server.resolve(params)

    @server.feature(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DiagnosticOptions(identifier="mpslint", inter_file_dependencies=True, workspace_diagnostics=False),
    )
    async def document_diagnostic(params: lsp.DocumentDiagnosticParams) -> lsp.RelatedFullDocumentDiagnosticReport:
        return await server.document_diagnostics(params)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(params: lsp.HoverParams) -> Optional[lsp.Hover]:
        return await server.hover(params)

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(params: Any) -> None:
        server.stop_polling()
        server.scheduler.close()
        await server.pool.aclose()

    return server


def serve(*, workers: Optional[int] = None, early: Any = None) -> None:
    build(workers=workers, early=early).start_io()
