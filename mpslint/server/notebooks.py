"""Open notebooks as the client syncs them (LSP 3.17 notebook document sync): the cells in order, each a text document.

In LSP 3.17 a notebook is its list of cells, and each cell's text is a text
document of its own, with its own URI and version; the cells' texts are
synced only through ``notebookDocument/did*`` notifications. A change moves
the notebook from one state to the next: cells inserted or deleted (a
structure change, with the text documents of new cells opened and of removed
ones closed), cell properties changed (kind, metadata, execution summary),
and edits to cell texts (applied as to any document, ``documents``).

What changes what mpslint reports is the code: the cells, their kinds,
their languages and their texts. Running a cell changes its execution summary
and often its metadata, and the notebook's metadata changes with the kernel;
those are taken in and never cause a new check (``apply`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from lsprotocol import types as lsp

from mpslint.server.documents import Document, Snapshot


@dataclass
class Cell:
    kind: lsp.NotebookCellKind
    document: Document

    @property
    def uri(self) -> str:
        return self.document.uri

    @property
    def is_code(self) -> bool:
        return self.kind == lsp.NotebookCellKind.Code


def _document(item: Optional[lsp.TextDocumentItem], uri: str) -> Document:
    """A cell's text document; a cell whose text the client did not send is empty until it does."""
    if item is None:
        return Document(uri, "", 0, Snapshot.of(""))
    return Document(item.uri, item.language_id, item.version, Snapshot.of(item.text))


class OpenNotebook:
    """One notebook open in the client. ``revision`` counts the changes to its code (cells, kinds, texts)."""

    def __init__(self, uri: str, notebook_type: str, version: int, cells: List[Cell]) -> None:
        self.uri = uri
        self.notebook_type = notebook_type
        self.version = version
        self.cells = cells
        self.revision = 0

    @classmethod
    def opened(cls, params: lsp.DidOpenNotebookDocumentParams) -> "OpenNotebook":
        notebook = params.notebook_document
        items = {item.uri: item for item in params.cell_text_documents}
        cells = [Cell(cell.kind, _document(items.get(cell.document), cell.document)) for cell in notebook.cells]
        return cls(notebook.uri, notebook.notebook_type, notebook.version, cells)

    @property
    def uris(self) -> List[str]:
        return [cell.uri for cell in self.cells]

    def apply(self, params: lsp.DidChangeNotebookDocumentParams, encoding: str) -> Tuple[bool, List[str]]:
        """Take in one change: (whether the code changed, URIs of the cells that left the notebook)."""
        self.version = params.notebook_document.version
        cells = params.change.cells
        if cells is None:  # the notebook's metadata only
            return False, []
        before = self.uris
        changed = False
        if cells.structure is not None:
            self._restructure(cells.structure)
            changed = True
        if cells.data:
            changed = self._properties(cells.data) or changed
        for content in cells.text_content or ():
            cell = self._cell(content.document.uri)
            if cell is not None:
                cell.document.apply(list(content.changes), content.document.version, encoding)
                changed = True
        if changed:
            self.revision += 1
        after = set(self.uris)
        return changed, [uri for uri in before if uri not in after]

    def _restructure(self, structure: lsp.NotebookDocumentCellChangeStructure) -> None:
        array = structure.array
        # A moved cell is deleted and inserted again, with its text document still open: keep that document.
        known: Dict[str, Document] = {cell.uri: cell.document for cell in self.cells}
        for item in structure.did_open or ():
            known[item.uri] = _document(item, item.uri)
        start = max(0, min(array.start, len(self.cells)))
        inserted = [Cell(cell.kind, known.get(cell.document) or _document(None, cell.document)) for cell in array.cells or ()]
        self.cells[start:start + max(0, array.delete_count)] = inserted

    def _properties(self, data: Sequence[lsp.NotebookCell]) -> bool:
        """Cell kinds, metadata and execution summaries: only a new kind changes what is checked."""
        changed = False
        for new in data:
            cell = self._cell(new.document)
            if cell is not None and cell.kind != new.kind:
                cell.kind = new.kind
                changed = True
        return changed

    def _cell(self, uri: str) -> Optional[Cell]:
        for cell in self.cells:
            if cell.uri == uri:
                return cell
        return None
