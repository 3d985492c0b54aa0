"""What one check covers, and how its results map back onto the client's documents.

A target is checked as one Python text; its findings and edits are
expressed in offsets into that text, and the target turns them into
client documents and positions. Today every target is a ``TextTarget``: one
open ``.py`` file, so the mapping is the identity. A notebook (LSP 3.17
notebook document sync) becomes a target over its code cells joined into one
text, publishing each finding to its cell's URI and splitting edits by cell;
the scheduler, the code actions and the hover work on targets and need no
change for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp

from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic
from mpslint.server.documents import Change, Document, Snapshot
from mpslint.server.findings import to_lsp
from mpslint.server.noqa import CommentMap

PYTHON_SUFFIXES = (".py", ".pyi")
# Schemes of documents with a text of their own: saved files and buffers never saved.
CHECKED_SCHEMES = ("file", "untitled")


def path_of(uri: str) -> Optional[Path]:
    """The file system path of a ``file:`` URI (None for any other scheme).

    Not ``pygls.uris.to_fs_path``: it leaves %-escapes as they are, so a project in
    ``My Projects/`` would never find its ``pyproject.toml``.
    """
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if os.name == "nt" and len(path) > 2 and path[0] == "/" and path[2] == ":":
        path = path[1:]  # /C:/x -> C:/x
    if parsed.netloc:
        path = f"//{parsed.netloc}{path}"  # a UNC share
    return Path(path)


def is_python(uri: str, language_id: str) -> bool:
    """Whether the server checks this document: Python source, saved or not (notebook cells: not yet)."""
    scheme = urlparse(uri).scheme
    if scheme not in CHECKED_SCHEMES:
        return False
    return language_id.lower() == "python" or urlparse(uri).path.endswith(PYTHON_SUFFIXES)


@dataclass
class Checked:
    """The findings for one snapshot of a target, checked with ``settings`` (None: excluded, not checked)."""

    version: int
    snapshot: Snapshot
    path: str
    settings: Optional[Settings]
    diagnostics: List[Diagnostic]
    parsed: bool = True
    _comments: Optional[CommentMap] = field(default=None, repr=False)

    def comments(self) -> CommentMap:
        if self._comments is None:
            self._comments = CommentMap.scan(self.snapshot.text)
        return self._comments

    def span(self, diagnostic: Diagnostic) -> Tuple[int, int]:
        return self.snapshot.location_offset(diagnostic.location), self.snapshot.location_offset(diagnostic.end_location)


class TextTarget:
    """One Python file open in the editor, checked as it is in the buffer."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.key = document.uri
        self.path = path_of(document.uri)

    @property
    def engine_path(self) -> str:
        """The file name the engine puts in its findings."""
        return str(self.path) if self.path is not None else self.document.uri

    @property
    def version(self) -> int:
        return self.document.version

    @property
    def snapshot(self) -> Snapshot:
        return self.document.snapshot

    @property
    def uris(self) -> List[str]:
        return [self.document.uri]

    def offset(self, uri: str, position: lsp.Position, checked: Checked, encoding: str) -> int:
        return checked.snapshot.offset(position, encoding)

    def diagnostics(self, checked: Checked, encoding: str) -> Dict[str, List[lsp.Diagnostic]]:
        return {self.document.uri: [to_lsp(d, checked.snapshot, encoding) for d in checked.diagnostics]}

    def line(self, checked: Checked, row: int) -> str:
        """Line ``row`` (1-based) of the checked text."""
        return checked.snapshot.line(row - 1)

    def text_edits(self, changes: List[Change], checked: Checked, encoding: str) -> Dict[str, List[lsp.TextEdit]]:
        snapshot = checked.snapshot
        edits = [
            lsp.TextEdit(
                range=lsp.Range(start=snapshot.position(c.start, encoding), end=snapshot.position(c.end, encoding)),
                new_text=c.text,
            )
            for c in changes
        ]
        return {self.document.uri: edits}
