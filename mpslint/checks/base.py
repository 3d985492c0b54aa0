"""What a rule is, and the per-file context every rule shares.

A rule is a small visitor: it defines ``visit_<Node>`` methods like a LibCST
visitor, and calls ``self.report(node, message, fix=...)``. The engine runs
every selected rule in one traversal of the tree, with the whole tree already
known (parents, scopes): context a ``leave_`` method would collect is asked of
``ctx`` or of an analysis instead, so rules have no ``leave_`` methods. Rules never
compute positions: they report nodes, and the engine resolves positions once,
after the pass, and only for files that have findings.

Fixes are described with node-anchored edits (``replace``, ``insert_before``,
``insert_after``, ``insert_line_after``) that the engine turns into text edits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple, Type, TypeVar, Union

import libcst as cst

from mpslint.analysis.names import ImportTable
from mpslint.diagnostic import Applicability

if TYPE_CHECKING:
    from mpslint.analysis.tree import Tree
    from mpslint.config import Settings

T = TypeVar("T")


@dataclass(frozen=True)
class NodeEdit:
    """An edit anchored on CST nodes; resolved to a text ``Edit`` by the engine.

    ``start``/``end`` are (node, side) with side ``"start"`` or ``"end"`` of the
    node's range, or ``"line_after"``: the first column of the line after the
    node ends (for inserting whole statements).
    """

    content: Union[str, cst.CSTNode]
    start: Tuple[cst.CSTNode, str]
    end: Tuple[cst.CSTNode, str]


def replace(node: cst.CSTNode, new: Union[str, cst.CSTNode]) -> NodeEdit:
    return NodeEdit(new, (node, "start"), (node, "end"))


def replace_span(first: cst.CSTNode, last: cst.CSTNode, new: Union[str, cst.CSTNode]) -> NodeEdit:
    return NodeEdit(new, (first, "start"), (last, "end"))


def delete_span(first: cst.CSTNode, last: cst.CSTNode) -> NodeEdit:
    return NodeEdit("", (first, "start"), (last, "end"))


def insert_before(node: cst.CSTNode, text: str) -> NodeEdit:
    return NodeEdit(text, (node, "start"), (node, "start"))


def insert_after(node: cst.CSTNode, text: str) -> NodeEdit:
    return NodeEdit(text, (node, "end"), (node, "end"))


def insert_line_after(node: cst.CSTNode, text: str) -> NodeEdit:
    """Insert ``text`` (whole lines, ending in ``\\n``) after the line ``node`` ends on."""
    return NodeEdit(text, (node, "line_after"), (node, "line_after"))


@dataclass(frozen=True)
class FixSpec:
    message: str
    applicability: Applicability
    edits: Tuple[NodeEdit, ...]

    @classmethod
    def safe(cls, message: str, *edits: NodeEdit) -> "FixSpec":
        return cls(message, Applicability.SAFE, tuple(edits))

    @classmethod
    def unsafe(cls, message: str, *edits: NodeEdit) -> "FixSpec":
        return cls(message, Applicability.UNSAFE, tuple(edits))

    @classmethod
    def display_only(cls, message: str, *edits: NodeEdit) -> "FixSpec":
        return cls(message, Applicability.DISPLAY_ONLY, tuple(edits))


@dataclass
class Report:
    code: str
    node: cst.CSTNode
    message: str
    fix: Optional[FixSpec]


class Context:
    """Everything rules share about one file, computed at most once."""

    def __init__(self, module: cst.Module, source: str, path: str, settings: "Settings") -> None:
        self.module = module
        self.source = source
        self.path = path
        self.settings = settings
        self.reports: List[Report] = []
        # node -> parent, for every syntax node (the engine's Tree).
        self.parents: Mapping[cst.CSTNode, Optional[cst.CSTNode]] = {}
        self._imports: Optional[ImportTable] = None
        self._analyses: Dict[Any, Any] = {}

    @property
    def imports(self) -> ImportTable:
        if self._imports is None:
            self._imports = ImportTable.from_module(self.module)
        return self._imports

    def qualify(self, node: cst.CSTNode) -> Optional[str]:
        """Qualified name of a Name/Attribute chain (``th.cuda`` -> ``torch.cuda``)."""
        return self.imports.qualify(node)

    def analysis(self, factory: Callable[["Context"], T]) -> T:
        """A shared analysis (``analysis/``) computed once per file, on first use."""
        result = self._analyses.get(factory)
        if result is None:
            result = factory(self)
            self._analyses[factory] = result
        return result

    def release(self) -> None:
        """Drop the analyses (they refer back to this context): the file is done."""
        self._analyses.clear()

    def adopt_tree(self, tree: "Tree") -> None:
        """The engine's walk: parents for rules, and ``analysis(Tree)`` without a second walk."""
        self.parents = tree.parents
        self._analyses[type(tree)] = tree

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode):
        parent = self.parents.get(node)
        while parent is not None:
            yield parent
            parent = self.parents.get(parent)

    def code_for(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def report(self, code: str, node: cst.CSTNode, message: str, fix: Optional[FixSpec] = None) -> None:
        self.reports.append(Report(code, node, message, fix))


class Rule:
    """Base class of every check. Subclasses set the class attributes below."""

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    # Strings without which this rule cannot fire: a file containing none of
    # them is not parsed for this rule (the prefilter). Empty = always run.
    TRIGGERS: ClassVar[Tuple[str, ...]] = ()
    # More any-of groups, ALL of which must occur as well (TRIGGERS, if set, is
    # one more group): a rule that needs a loop AND a device AND its own call
    # says so here. Every string of every group must be a necessary condition.
    REQUIRES: ClassVar[Tuple[Tuple[str, ...], ...]] = ()
    # A rule with no TRIGGERS says here why it can fire on any file (tests/test_prefilter.py).
    NO_TRIGGERS: ClassVar[str] = ""
    # The prefilter's second stage (mpslint/screen): a function of the file's
    # ``Facts`` (Python's own ast, indexed) that is False only when this rule
    # cannot fire, whatever LibCST would show. None: no screen.
    screen: ClassVar[Optional[Callable[[Any], bool]]] = None
    # Whether the rule's messages/fixes depend on settings other than selection.
    OPTIONS: ClassVar[Sequence[str]] = ()

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def report(self, node: cst.CSTNode, message: str, *, fix: Optional[FixSpec] = None) -> None:
        self.ctx.report(self.CODE, node, message, fix)

    @classmethod
    def handlers(cls) -> Dict[str, str]:
        """The ``visit_Call``-style method names this rule defines."""
        return {name: name for name in dir(cls) if name.startswith("visit_") and callable(getattr(cls, name))}


RuleClass = Type[Rule]
