"""A real LSP client for the server tests: pygls' ``LanguageClient`` driving ``mpslint server`` in a subprocess.

Everything goes over the server's stdin and stdout as an editor's would:
the tests never call a handler in-process. The client records what the
server sends (diagnostics, messages, registrations), answers its requests
(``workspace/configuration``, ``client/registerCapability``), and applies
workspace edits to text the way an editor does: LSP lines (``\\n``, ``\\r\\n``,
``\\r``) and UTF-16 columns, written here independently of the server's code.
"""

from __future__ import annotations

import asyncio
import functools
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

# Generous: a waiting test fails only if the server hangs; no duration is asserted.
TIMEOUT = 120.0


def run_async(test: Callable) -> Callable:
    """Run an ``async def`` test in its own event loop (no pytest-asyncio needed, so Python 3.9 works too)."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))

    return wrapper


def uri_of(path: Path) -> str:
    return path.resolve().as_uri()


CAPABILITIES = lsp.ClientCapabilities(
    workspace=lsp.WorkspaceClientCapabilities(
        configuration=True,
        did_change_configuration=lsp.DidChangeConfigurationClientCapabilities(dynamic_registration=True),
        did_change_watched_files=lsp.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True),
        workspace_edit=lsp.WorkspaceEditClientCapabilities(document_changes=True),
        workspace_folders=True,
    ),
    text_document=lsp.TextDocumentClientCapabilities(
        synchronization=lsp.TextDocumentSyncClientCapabilities(did_save=True),
        publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(version_support=True),
        hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown, lsp.MarkupKind.PlainText]),
        code_action=lsp.CodeActionClientCapabilities(
            code_action_literal_support=lsp.ClientCodeActionLiteralOptions(
                code_action_kind=lsp.ClientCodeActionKindOptions(
                    value_set=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll]
                )
            ),
            resolve_support=lsp.ClientCodeActionResolveOptions(properties=["edit"]),
            data_support=True,
        ),
    ),
)

# The server as an editor starts it, with its default number of workers.
DEFAULT_COMMAND = [sys.executable, "-m", "mpslint", "server"]

# An editor that supports none of the optional features (the plainest client).
PLAIN_CAPABILITIES = lsp.ClientCapabilities()


class Session:
    """One server process and the client talking to it."""

    def __init__(
        self,
        root: Path,
        *,
        init_options: Any = None,
        settings: Any = None,
        capabilities: lsp.ClientCapabilities = CAPABILITIES,
        command: Optional[List[str]] = None,
        folders: Optional[List[Path]] = None,
    ) -> None:
        self.root = root
        self.folders = folders or [root]  # the workspace folders, the first one first
        self.init_options = init_options
        self.settings = settings  # what the client answers to workspace/configuration for "mpslint"
        self.capabilities = capabilities
        # One worker keeps each test's server cheap to start; tests of the pool itself choose their own.
        self.command = command or [sys.executable, "-m", "mpslint", "server", "--workers", "1"]
        self.client = LanguageClient("mpslint-tests", "1")
        self.published: Dict[str, List[lsp.PublishDiagnosticsParams]] = {}
        self.messages: List[lsp.ShowMessageParams] = []
        self.logs: List[lsp.LogMessageParams] = []
        self.registrations: List[lsp.Registration] = []
        self.configuration_requests = 0
        self.texts: Dict[str, str] = {}
        self.versions: Dict[str, int] = {}
        self.stderr = bytearray()
        self.initialize_result: Optional[lsp.InitializeResult] = None
        self._changed = asyncio.Condition()
        self._stderr_task: Optional[asyncio.Task] = None

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        async def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            await self._notify()

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE)
        async def on_message(params: lsp.ShowMessageParams) -> None:
            self.messages.append(params)
            await self._notify()

        @self.client.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params: lsp.LogMessageParams) -> None:
            self.logs.append(params)

        @self.client.feature(lsp.WORKSPACE_CONFIGURATION)
        def on_configuration(params: lsp.ConfigurationParams) -> List[Any]:
            self.configuration_requests += 1
            return [self.settings if item.section == "mpslint" else None for item in params.items]

        @self.client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
        async def on_register(params: lsp.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)
            await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_until(self, condition: Callable[[], Any], what: str) -> Any:
        async def waiting():
            async with self._changed:
                while True:
                    value = condition()
                    if value:
                        return value
                    await self._changed.wait()

        try:
            return await asyncio.wait_for(waiting(), TIMEOUT)
        except asyncio.TimeoutError:
            raise AssertionError(f"no {what} from the server; its stderr:\n{self.stderr.decode(errors='replace')}") from None

    # -- life cycle -------------------------------------------------------------------------

    async def start(self) -> "Session":
        await self.client.start_io(*self.command, cwd=str(self.root))
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        self.initialize_result = await self.client.initialize_async(
            lsp.InitializeParams(
                process_id=None,
                root_uri=uri_of(self.folders[0]),
                workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(f), name=f.name) for f in self.folders],
                capabilities=self.capabilities,
                initialization_options=self.init_options,
            )
        )
        self.client.initialized(lsp.InitializedParams())
        return self

    async def _drain_stderr(self) -> None:
        stream = self.client._server.stderr  # pygls pipes it and never reads it: a full pipe would block the server
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            self.stderr.extend(chunk)

    @property
    def process(self) -> asyncio.subprocess.Process:
        return self.client._server

    async def stop(self) -> int:
        """shutdown, exit, and the server's exit code."""
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
        self.client.exit(None)
        code = await asyncio.wait_for(self.process.wait(), TIMEOUT)
        await self.client.stop()
        if self._stderr_task is not None:
            await self._stderr_task
        return code

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await self.client.stop()

    async def __aenter__(self) -> "Session":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        if self.process.returncode is None:
            try:
                await self.stop()
            except Exception:
                await self.kill()

    # -- documents ----------------------------------------------------------------------------

    def open(self, path: Path, text: Optional[str] = None, *, language_id: str = "python") -> str:
        uri = uri_of(path) if path.is_absolute() else uri_of(self.root / path)
        if text is None:
            text = Path(path).read_text(encoding="utf-8")
        self.texts[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text))
        )
        return uri

    def open_untitled(self, name: str, text: str) -> str:
        uri = f"untitled:{name}"
        self.texts[uri] = text
        self.versions[uri] = 1
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
        )
        return uri

    def replace_all(self, uri: str, text: str) -> int:
        """A full-text change, as clients without incremental sync send."""
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.versions[uri]

    def edit(self, uri: str, start: Tuple[int, int], end: Tuple[int, int], new_text: str) -> int:
        """An incremental change (0-based line, UTF-16 character), applied to our copy the editor's way."""
        self.versions[uri] += 1
        rng = lsp.Range(start=lsp.Position(*start), end=lsp.Position(*end))
        self.texts[uri] = apply_text_edits(self.texts[uri], [lsp.TextEdit(range=rng, new_text=new_text)])
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                content_changes=[lsp.TextDocumentContentChangePartial(range=rng, text=new_text)],
            )
        )
        return self.versions[uri]

    def save(self, uri: str) -> None:
        self.client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))

    def files_changed(self, *paths: Path) -> None:
        self.client.workspace_did_change_watched_files(
            lsp.DidChangeWatchedFilesParams(
                changes=[lsp.FileEvent(uri=uri_of(p), type=lsp.FileChangeType.Changed) for p in paths]
            )
        )

    def configuration_changed(self, pushed: Any = None) -> None:
        self.client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=pushed))

    # -- results --------------------------------------------------------------------------------

    async def diagnostics(self, uri: str, version: Optional[int] = None, *, after: int = 0) -> List[lsp.Diagnostic]:
        """The diagnostics published for ``version`` of ``uri`` (default: the latest version), the ``after``-th on."""
        wanted = self.versions.get(uri) if version is None else version

        def found():
            for params in self.published.get(uri, [])[after:]:
                if params.version == wanted:
                    return params
            return None

        params = await self.wait_until(found, f"diagnostics for {uri} version {wanted}")
        return list(params.diagnostics)

    def publications(self, uri: str) -> int:
        return len(self.published.get(uri, []))

    async def code_actions(self, uri: str, rng: lsp.Range, only: Optional[List[str]] = None) -> List[lsp.CodeAction]:
        result = await asyncio.wait_for(
            self.client.text_document_code_action_async(
                lsp.CodeActionParams(
                    text_document=lsp.TextDocumentIdentifier(uri=uri),
                    range=rng,
                    context=lsp.CodeActionContext(diagnostics=[], only=only),
                )
            ),
            TIMEOUT,
        )
        return [a for a in result or [] if isinstance(a, lsp.CodeAction)]

    async def resolve(self, action: lsp.CodeAction) -> lsp.CodeAction:
        return await asyncio.wait_for(self.client.code_action_resolve_async(action), TIMEOUT)

    async def hover(self, uri: str, line: int, character: int) -> Optional[lsp.Hover]:
        return await asyncio.wait_for(
            self.client.text_document_hover_async(
                lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line, character))
            ),
            TIMEOUT,
        )

    def applied(self, uri: str, edit: lsp.WorkspaceEdit) -> str:
        """The text of ``uri`` after the client applies ``edit`` (checking the version it was made for)."""
        edits: List[lsp.TextEdit] = []
        for change in edit.document_changes or []:
            assert isinstance(change, lsp.TextDocumentEdit)
            if change.text_document.uri == uri:
                assert change.text_document.version == self.versions[uri], "an edit for an older version"
                edits.extend(change.edits)
        for target, text_edits in (edit.changes or {}).items():
            if target == uri:
                edits.extend(text_edits)
        return apply_text_edits(self.texts[uri], edits)


# -- the editor's side of positions ------------------------------------------------------------------

_BREAK = re.compile(r"\r\n|\r|\n")


def _offset(text: str, position: lsp.Position) -> int:
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]
    if position.line >= len(starts):
        return len(text)
    begin = starts[position.line]
    end = len(text) if position.line + 1 >= len(starts) else starts[position.line + 1]
    line = text[begin:end].rstrip("\r\n")
    units = 0
    for index, char in enumerate(line):
        if units >= position.character:
            return begin + index
        units += 2 if ord(char) > 0xFFFF else 1
    return begin + len(line)


def apply_text_edits(text: str, edits: List[lsp.TextEdit]) -> str:
    spans = sorted(
        ((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits),
        key=lambda span: (span[0], span[1]),
        reverse=True,
    )
    for begin, end, new in spans:
        text = text[:begin] + new + text[end:]
    return text
