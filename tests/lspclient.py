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
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

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
    notebook_document=lsp.NotebookDocumentClientCapabilities(
        synchronization=lsp.NotebookDocumentSyncClientCapabilities(execution_summary_support=True)
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

CODE = lsp.NotebookCellKind.Code
MARKUP = lsp.NotebookCellKind.Markup
# A cell as a test gives it: (kind, language, text).
CellSpec = Tuple[lsp.NotebookCellKind, str, str]


def code(text: str, language: str = "python") -> CellSpec:
    return (CODE, language, text)


def markdown(text: str) -> CellSpec:
    return (MARKUP, "markdown", text)


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
        self.notebooks: Dict[str, List[str]] = {}  # notebook URI -> its cells' URIs, in order
        self.notebook_versions: Dict[str, int] = {}
        self.cell_kinds: Dict[str, lsp.NotebookCellKind] = {}
        self._cells_made = 0
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

    # -- notebooks (LSP 3.17 notebook document sync, as VS Code's client sends it) ----------------------------

    def _cell(self, notebook_uri: str, spec: CellSpec) -> Tuple[lsp.NotebookCell, lsp.TextDocumentItem]:
        kind, language, text = spec
        self._cells_made += 1
        # VS Code's form: the notebook's path and a fragment naming the cell.
        uri = "vscode-notebook-cell:" + notebook_uri.split(":", 1)[1] + f"#C{self._cells_made}"
        self.texts[uri] = text
        self.versions[uri] = 1
        self.cell_kinds[uri] = kind
        return lsp.NotebookCell(kind=kind, document=uri), lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)

    def open_notebook(self, path: Path, cells: Sequence[CellSpec]) -> Tuple[str, List[str]]:
        """Open a notebook of these cells; its URI and its cells' URIs."""
        uri = uri_of(path) if path.is_absolute() else uri_of(self.root / path)
        made = [self._cell(uri, spec) for spec in cells]
        self.notebooks[uri] = [cell.document for cell, _ in made]
        self.notebook_versions[uri] = 1
        self.client.notebook_document_did_open(
            lsp.DidOpenNotebookDocumentParams(
                notebook_document=lsp.NotebookDocument(
                    uri=uri, notebook_type="jupyter-notebook", version=1, cells=[cell for cell, _ in made],
                    metadata={"language_info": {"name": "python"}},
                ),
                cell_text_documents=[item for _, item in made],
            )
        )
        return uri, list(self.notebooks[uri])

    def _notebook_changed(self, uri: str, change: lsp.NotebookDocumentChangeEvent) -> None:
        self.notebook_versions[uri] += 1
        self.client.notebook_document_did_change(
            lsp.DidChangeNotebookDocumentParams(
                notebook_document=lsp.VersionedNotebookDocumentIdentifier(uri=uri, version=self.notebook_versions[uri]),
                change=change,
            )
        )

    def notebook_of(self, cell_uri: str) -> str:
        return next(uri for uri, cells in self.notebooks.items() if cell_uri in cells)

    def edit_cell(self, cell_uri: str, start: Tuple[int, int], end: Tuple[int, int], new_text: str) -> int:
        """An incremental change of one cell's text; the cell's new version."""
        self.versions[cell_uri] += 1
        rng = lsp.Range(start=lsp.Position(*start), end=lsp.Position(*end))
        self.texts[cell_uri] = apply_text_edits(self.texts[cell_uri], [lsp.TextEdit(range=rng, new_text=new_text)])
        self._notebook_changed(
            self.notebook_of(cell_uri),
            lsp.NotebookDocumentChangeEvent(
                cells=lsp.NotebookDocumentCellChanges(
                    text_content=[
                        lsp.NotebookDocumentCellContentChanges(
                            document=lsp.VersionedTextDocumentIdentifier(uri=cell_uri, version=self.versions[cell_uri]),
                            changes=[lsp.TextDocumentContentChangePartial(range=rng, text=new_text)],
                        )
                    ]
                )
            ),
        )
        return self.versions[cell_uri]

    def replace_cell(self, cell_uri: str, text: str) -> int:
        self.versions[cell_uri] += 1
        self.texts[cell_uri] = text
        self._notebook_changed(
            self.notebook_of(cell_uri),
            lsp.NotebookDocumentChangeEvent(
                cells=lsp.NotebookDocumentCellChanges(
                    text_content=[
                        lsp.NotebookDocumentCellContentChanges(
                            document=lsp.VersionedTextDocumentIdentifier(uri=cell_uri, version=self.versions[cell_uri]),
                            changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
                        )
                    ]
                )
            ),
        )
        return self.versions[cell_uri]

    def insert_cells(self, uri: str, index: int, cells: Sequence[CellSpec]) -> List[str]:
        """Insert cells before position ``index``; their URIs."""
        made = [self._cell(uri, spec) for spec in cells]
        self.notebooks[uri][index:index] = [cell.document for cell, _ in made]
        self._notebook_changed(
            uri,
            lsp.NotebookDocumentChangeEvent(
                cells=lsp.NotebookDocumentCellChanges(
                    structure=lsp.NotebookDocumentCellChangeStructure(
                        array=lsp.NotebookCellArrayChange(start=index, delete_count=0, cells=[cell for cell, _ in made]),
                        did_open=[item for _, item in made],
                    )
                )
            ),
        )
        return [cell.document for cell, _ in made]

    def delete_cells(self, uri: str, index: int, count: int = 1) -> List[str]:
        gone = self.notebooks[uri][index:index + count]
        del self.notebooks[uri][index:index + count]
        self._notebook_changed(
            uri,
            lsp.NotebookDocumentChangeEvent(
                cells=lsp.NotebookDocumentCellChanges(
                    structure=lsp.NotebookDocumentCellChangeStructure(
                        array=lsp.NotebookCellArrayChange(start=index, delete_count=count),
                        did_close=[lsp.TextDocumentIdentifier(uri=cell) for cell in gone],
                    )
                )
            ),
        )
        return gone

    def move_cell(self, uri: str, index: int, to: int) -> None:
        """Move a cell as VS Code's client reports it: deleted and inserted again, its text document left open."""
        cells = self.notebooks[uri]
        cell = cells.pop(index)
        cells.insert(to, cell)
        kinds = [lsp.NotebookCell(kind=self.cell_kinds[c], document=c) for c in cells]
        low, high = min(index, to), max(index, to)
        self._notebook_changed(
            uri,
            lsp.NotebookDocumentChangeEvent(
                cells=lsp.NotebookDocumentCellChanges(
                    structure=lsp.NotebookDocumentCellChangeStructure(
                        array=lsp.NotebookCellArrayChange(start=low, delete_count=high - low + 1, cells=kinds[low:high + 1]),
                    )
                )
            ),
        )

    def run_cell(self, cell_uri: str, order: int) -> None:
        """What running a cell sends: its execution summary and metadata, and the notebook's metadata."""
        self._notebook_changed(
            self.notebook_of(cell_uri),
            lsp.NotebookDocumentChangeEvent(
                metadata={"language_info": {"name": "python", "version": "3.11.7"}},
                cells=lsp.NotebookDocumentCellChanges(
                    data=[
                        lsp.NotebookCell(
                            kind=self.cell_kinds[cell_uri],
                            document=cell_uri,
                            metadata={"execution": {"iopub.status.idle": "2026-01-01T00:00:00Z"}},
                            execution_summary=lsp.ExecutionSummary(execution_order=order, success=True),
                        )
                    ]
                ),
            ),
        )

    def save_notebook(self, uri: str) -> None:
        self.client.notebook_document_did_save(
            lsp.DidSaveNotebookDocumentParams(notebook_document=lsp.NotebookDocumentIdentifier(uri=uri))
        )

    def close_notebook(self, uri: str) -> None:
        cells = self.notebooks.pop(uri)
        self.client.notebook_document_did_close(
            lsp.DidCloseNotebookDocumentParams(
                notebook_document=lsp.NotebookDocumentIdentifier(uri=uri),
                cell_text_documents=[lsp.TextDocumentIdentifier(uri=cell) for cell in cells],
            )
        )

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
