"""Code actions: apply one finding's fix, fix the whole file, or silence a finding with ``# noqa``.

Kinds and titles follow Ruff's server, so editors set up for Ruff need no
new habits:

- ``quickfix`` "mpslint (MPS101): <fix title>" applies that finding's fix;
  unsafe fixes are offered only when the ``unsafeFixes`` setting is on, and
  are marked "(unsafe)";
- ``quickfix`` "mpslint (MPS101): Disable for this line" adds the code to the
  line's ``# noqa`` comment;
- ``source.fixAll.mpslint`` "mpslint: Fix all auto-fixable problems" is what
  ``mpslint --fix`` (with ``--unsafe-fixes`` when ``unsafeFixes`` is on) would
  write, computed by the fixer to a fixpoint, offered when a client asks for
  that kind (fix on save, VS Code's "Source Action..."). A request for every
  kind (the light bulb) gets it once, as a ``quickfix`` next to a fixable
  finding when the file has more than one fix, never twice.
  Clients that resolve code actions get its edit on ``codeAction/resolve``,
  the others with the list.

In a notebook cell the same actions edit the cells they concern: a fix that
defines the device picker in the cell of the imports edits that cell too, and
fix-all edits every cell ``mpslint --fix`` would change in the ``.ipynb``. Its
kind there is ``notebook.source.fixAll.mpslint``, not ``source.fixAll``:
VS Code asks for ``source.fixAll`` (``editor.codeActionsOnSave``) of every
cell at once and would apply a whole-notebook edit once per cell; it asks
for ``notebook.source.fixAll`` (``notebook.codeActionsOnSave``) once per
notebook. Ruff's server makes the same split.

Edits are versioned (``documentChanges``, each cell with its own version)
when the client supports it, so an edit computed for text that has changed
since is refused by the client instead of landing in the wrong place.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from lsprotocol import types as lsp

from mpslint.diagnostic import Applicability, Diagnostic, Edit
from mpslint.server.documents import Change
from mpslint.server.findings import to_lsp
from mpslint.server.noqa import noqa_edit
from mpslint.server.targets import Checked, Part

FIX_ALL_KIND = "source.fixAll.mpslint"
NOTEBOOK_FIX_ALL_KIND = "notebook.source.fixAll.mpslint"
FIX_ALL_TITLE = "mpslint: Fix all auto-fixable problems"
# Checks that never suppress: a file that does not parse, and mpslint's own failures.
UNSUPPRESSIBLE = ("MPS000", "MPS900")


def kind_wanted(kind: str, only: Optional[Sequence[str]]) -> bool:
    """LSP's rule: a kind matches a requested kind equal to it or a prefix of it (``source`` covers ``source.fixAll``)."""
    if not only:
        return True
    return any(kind == wanted or kind.startswith(wanted + ".") for wanted in only)


def applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    fix = diagnostic.fix
    return fix is not None and bool(fix.edits) and fix.is_applicable(unsafe)


class ActionBuilder:
    """Builds the actions for one request against one checked snapshot of a target (a file or a notebook)."""

    def __init__(
        self,
        key: str,
        checked: Checked,
        encoding: str,
        *,
        notebook: bool,
        unsafe: bool,
        versioned: bool,
    ) -> None:
        self.key = key
        self.checked = checked
        self.encoding = encoding
        self.notebook = notebook
        self.unsafe = unsafe
        self.versioned = versioned

    @property
    def fix_all_kind(self) -> str:
        return NOTEBOOK_FIX_ALL_KIND if self.notebook else FIX_ALL_KIND

    def workspace_edit(self, changes: List[Tuple[Part, Change]]) -> lsp.WorkspaceEdit:
        """The changes as edits of their documents, in document order (a notebook's cells in theirs)."""
        by_uri: Dict[str, List[lsp.TextEdit]] = {}
        parts: Dict[str, Part] = {}
        for part, change in changes:
            snapshot = part.snapshot
            start, end = snapshot.position(change.start, self.encoding), snapshot.position(change.end, self.encoding)
            by_uri.setdefault(part.uri, []).append(lsp.TextEdit(range=lsp.Range(start=start, end=end), new_text=change.text))
            parts[part.uri] = part
        order = [p.uri for p in self.checked.parts if p.uri in by_uri]
        if self.versioned:
            return lsp.WorkspaceEdit(
                document_changes=[
                    lsp.TextDocumentEdit(
                        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=parts[uri].version),
                        edits=by_uri[uri],
                    )
                    for uri in order
                ]
            )
        return lsp.WorkspaceEdit(changes={uri: by_uri[uri] for uri in order})

    def change(self, edit: Edit) -> Tuple[Part, Change]:
        part = self.checked.part_of_edit(edit)
        return part, part.snapshot.change(edit)

    def lsp_diagnostic(self, diagnostic: Diagnostic) -> lsp.Diagnostic:
        return to_lsp(diagnostic, self.checked.part_of(diagnostic).snapshot, self.encoding)

    def in_range(self, part: Part, rng: lsp.Range) -> List[Diagnostic]:
        """The findings of ``part`` that touch the requested range."""
        start = part.snapshot.offset(rng.start, self.encoding)
        end = part.snapshot.offset(rng.end, self.encoding)
        found = []
        for diagnostic in self.checked.on(part):
            first, last = self.checked.span(diagnostic)
            if first <= end and start <= last:
                found.append(diagnostic)
        return found

    def actions(self, uri: str, rng: lsp.Range, only: Optional[Sequence[str]]) -> List[lsp.CodeAction]:
        part = self.checked.part(uri)
        if part is None:
            return []
        actions: List[lsp.CodeAction] = []
        here = self.in_range(part, rng)
        if kind_wanted(lsp.CodeActionKind.QuickFix, only):
            for diagnostic in here:
                if applicable(diagnostic, self.unsafe):
                    actions.append(self.fix_action(diagnostic))
            for diagnostic in here:
                action = self.noqa_action(diagnostic)
                if action is not None:
                    actions.append(action)
        fixable = [d for d in self.checked.diagnostics if applicable(d, self.unsafe)]
        if fixable:
            # Once per menu: the source kind when a kind is asked for (fix on save, "Source Action..."), the
            # quickfix next to a fixable finding in the light bulb's list, which asks for every kind.
            if only and kind_wanted(self.fix_all_kind, only):
                actions.append(self.fix_all_action(self.fix_all_kind))
            elif len(fixable) > 1 and any(d in fixable for d in here) and kind_wanted(lsp.CodeActionKind.QuickFix, only):
                actions.append(self.fix_all_action(lsp.CodeActionKind.QuickFix))
        return actions

    def fix_action(self, diagnostic: Diagnostic) -> lsp.CodeAction:
        fix = diagnostic.fix
        assert fix is not None
        unsafe = fix.applicability is Applicability.UNSAFE
        return lsp.CodeAction(
            title=f"mpslint ({diagnostic.code}): {fix.message}" + (" (unsafe)" if unsafe else ""),
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[self.lsp_diagnostic(diagnostic)],
            is_preferred=not unsafe,
            edit=self.workspace_edit([self.change(edit) for edit in fix.edits]),
        )

    def noqa_action(self, diagnostic: Diagnostic) -> Optional[lsp.CodeAction]:
        if diagnostic.code in UNSUPPRESSIBLE:
            return None
        part = self.checked.part_of(diagnostic)
        edit = noqa_edit(diagnostic, self.checked.comments(part), lambda row: part.snapshot.line(row - 1))
        if edit is None:
            return None
        return lsp.CodeAction(
            title=f"mpslint ({diagnostic.code}): Disable for this line",
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[self.lsp_diagnostic(diagnostic)],
            edit=self.workspace_edit([(part, part.snapshot.change(edit))]),
        )

    def fix_all_action(self, kind: str) -> lsp.CodeAction:
        """Without an edit: ``resolve_fix_all`` adds it, on ``codeAction/resolve`` or before answering."""
        return lsp.CodeAction(
            title=FIX_ALL_TITLE,
            kind=kind,
            data={"uri": self.key, "version": self.checked.version, "unsafe": self.unsafe},
        )

    def fix_all_edit(self, fixed: Dict[str, str]) -> Optional[lsp.WorkspaceEdit]:
        """The edit that turns each part into its fixed text (``fixed`` by URI; parts not in it stay)."""
        changes = []
        for part in self.checked.parts:
            if part.uri in fixed:
                change = part.snapshot.difference(fixed[part.uri])
                if change is not None:
                    changes.append((part, change))
        return self.workspace_edit(changes) if changes else None


def fix_all_request(action: lsp.CodeAction) -> Optional[Tuple[str, int, bool]]:
    """(target key, version, unsafe) of a fix-all action this server made, else None."""
    data: Any = action.data
    if not isinstance(data, dict):
        return None
    uri, version, unsafe = data.get("uri"), data.get("version"), data.get("unsafe")
    if isinstance(uri, str) and isinstance(version, int) and isinstance(unsafe, bool):
        return uri, version, unsafe
    return None
