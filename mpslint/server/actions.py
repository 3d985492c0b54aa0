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
  write, computed by the fixer to a fixpoint. It is also offered as a
  ``quickfix`` next to a fixable finding when the file has more than one fix.
  Clients that resolve code actions get its edit on ``codeAction/resolve``,
  the others with the list.

Edits are versioned (``documentChanges``) when the client supports it, so an
edit computed for text that has changed since is refused by the client
instead of landing in the wrong place.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from lsprotocol import types as lsp

from mpslint.diagnostic import Applicability, Diagnostic
from mpslint.server.documents import Change
from mpslint.server.findings import to_lsp
from mpslint.server.noqa import noqa_edit
from mpslint.server.targets import Checked, TextTarget

FIX_ALL_KIND = "source.fixAll.mpslint"
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
    """Builds the actions for one request against one checked snapshot."""

    def __init__(
        self,
        target: TextTarget,
        checked: Checked,
        encoding: str,
        *,
        unsafe: bool,
        versioned: bool,
        version: int,
    ) -> None:
        self.target = target
        self.checked = checked
        self.encoding = encoding
        self.unsafe = unsafe
        self.versioned = versioned
        self.version = version

    def workspace_edit(self, changes: List[Change]) -> lsp.WorkspaceEdit:
        by_uri = self.target.text_edits(changes, self.checked, self.encoding)
        if self.versioned:
            return lsp.WorkspaceEdit(
                document_changes=[
                    lsp.TextDocumentEdit(
                        text_document=lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=self.version),
                        edits=edits,
                    )
                    for uri, edits in by_uri.items()
                ]
            )
        return lsp.WorkspaceEdit(changes=by_uri)

    def in_range(self, uri: str, rng: lsp.Range) -> List[Diagnostic]:
        """The findings that touch the requested range."""
        start = self.target.offset(uri, rng.start, self.checked, self.encoding)
        end = self.target.offset(uri, rng.end, self.checked, self.encoding)
        found = []
        for diagnostic in self.checked.diagnostics:
            first, last = self.checked.span(diagnostic)
            if first <= end and start <= last:
                found.append(diagnostic)
        return found

    def actions(self, uri: str, rng: lsp.Range, only: Optional[Sequence[str]]) -> List[lsp.CodeAction]:
        actions: List[lsp.CodeAction] = []
        here = self.in_range(uri, rng)
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
            if kind_wanted(FIX_ALL_KIND, only):
                actions.append(self.fix_all_action(FIX_ALL_KIND))
            if len(fixable) > 1 and any(d in fixable for d in here) and kind_wanted(lsp.CodeActionKind.QuickFix, only):
                actions.append(self.fix_all_action(lsp.CodeActionKind.QuickFix))
        return actions

    def fix_action(self, diagnostic: Diagnostic) -> lsp.CodeAction:
        fix = diagnostic.fix
        assert fix is not None
        unsafe = fix.applicability is Applicability.UNSAFE
        changes = [self.checked.snapshot.change(edit) for edit in fix.edits]
        return lsp.CodeAction(
            title=f"mpslint ({diagnostic.code}): {fix.message}" + (" (unsafe)" if unsafe else ""),
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[to_lsp(diagnostic, self.checked.snapshot, self.encoding)],
            is_preferred=not unsafe,
            edit=self.workspace_edit(changes),
        )

    def noqa_action(self, diagnostic: Diagnostic) -> Optional[lsp.CodeAction]:
        if diagnostic.code in UNSUPPRESSIBLE:
            return None
        edit = noqa_edit(diagnostic, self.checked.comments(), lambda row: self.target.line(self.checked, row))
        if edit is None:
            return None
        return lsp.CodeAction(
            title=f"mpslint ({diagnostic.code}): Disable for this line",
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[to_lsp(diagnostic, self.checked.snapshot, self.encoding)],
            edit=self.workspace_edit([self.checked.snapshot.change(edit)]),
        )

    def fix_all_action(self, kind: str) -> lsp.CodeAction:
        """Without an edit: ``resolve_fix_all`` adds it, on ``codeAction/resolve`` or before answering."""
        return lsp.CodeAction(
            title=FIX_ALL_TITLE,
            kind=kind,
            data={"uri": self.target.key, "version": self.version, "unsafe": self.unsafe},
        )

    def fix_all_edit(self, fixed_text: str) -> Optional[lsp.WorkspaceEdit]:
        change = self.checked.snapshot.difference(fixed_text)
        return self.workspace_edit([change]) if change is not None else None


def fix_all_request(action: lsp.CodeAction) -> Optional[Tuple[str, int, bool]]:
    """(uri, version, unsafe) of a fix-all action this server made, else None."""
    data: Any = action.data
    if not isinstance(data, dict):
        return None
    uri, version, unsafe = data.get("uri"), data.get("version"), data.get("unsafe")
    if isinstance(uri, str) and isinstance(version, int) and isinstance(unsafe, bool):
        return uri, version, unsafe
    return None
