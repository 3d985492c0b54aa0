"""What a rule is, and the per-file context every rule shares.

A rule decides on Python's own ``ast``, read through the file's ``Tree`` and
the shared analyses (``mpslint/analysis``): it defines ``visit_<Node>``
methods named after ``ast`` classes (``visit_Call``, ``visit_If``), which the
engine calls for every node of that class, and calls
``self.report(node, message, fix=...)``. Rules never compute positions; the
engine does, after the pass, for the findings only.

Fixes are written with LibCST, which keeps every comment and space of the
code around an edit. A fix is a function of a ``FixContext``: it runs after
the rules, only for files with findings that can be fixed, finds the LibCST
node of an ``ast`` node by its source range (``fx.node``), and describes its
edits anchored on nodes (``replace``, ``insert_before``, ``insert_after``,
``insert_line_after``), which the engine turns into text edits. A fix that
needs no LibCST node can anchor its edits on ``ast`` nodes directly.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, Optional, Tuple, Type, TypeVar, Union

from mpslint.analysis.names import ImportTable
from mpslint.analysis.tree import Tree
from mpslint.diagnostic import Applicability

if TYPE_CHECKING:
    import libcst as cst

    from mpslint.config import Settings
    from mpslint.fixing import FixContext

T = TypeVar("T")
Anchor = Union[ast.AST, "cst.CSTNode", Tuple[int, int]]  # a node (either tree), or a (row, 0-based column) point


@dataclass(frozen=True)
class NodeEdit:
    """An edit anchored on nodes; resolved to a text ``Edit`` by the engine.

    ``start``/``end`` are (anchor, side) with side ``"start"`` or ``"end"`` of the
    anchor's range, or ``"line_after"``: the first column of the line after the
    anchor ends (for inserting whole statements). A point anchor is its own range.
    """

    content: Union[str, "cst.CSTNode"]
    start: Tuple[Anchor, str]
    end: Tuple[Anchor, str]


def replace(node: Anchor, new: Union[str, "cst.CSTNode"]) -> NodeEdit:
    return NodeEdit(new, (node, "start"), (node, "end"))


def replace_span(first: Anchor, last: Anchor, new: Union[str, "cst.CSTNode"]) -> NodeEdit:
    return NodeEdit(new, (first, "start"), (last, "end"))


def delete_span(first: Anchor, last: Anchor) -> NodeEdit:
    return NodeEdit("", (first, "start"), (last, "end"))


def insert_before(node: Anchor, text: str) -> NodeEdit:
    return NodeEdit(text, (node, "start"), (node, "start"))


def insert_after(node: Anchor, text: str) -> NodeEdit:
    return NodeEdit(text, (node, "end"), (node, "end"))


def insert_line_after(node: Anchor, text: str) -> NodeEdit:
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


# A fix: ready-made (anchored on ast nodes), or built with LibCST once the rules are done.
FixLike = Union[FixSpec, Callable[["FixContext"], Optional[FixSpec]]]


@dataclass
class Report:
    code: str
    node: ast.AST
    message: str
    fix: Optional[FixLike]


class Context:
    """Everything rules share about one file, computed at most once."""

    def __init__(self, tree: Tree, path: str, settings: "Settings") -> None:
        self.tree = tree
        self.module = tree.module
        self.source = tree.source
        self.path = path
        self.settings = settings
        self.reports: List[Report] = []
        self.fix_failures: Dict[str, str] = {}  # rule code -> traceback of its fix's crash
        self._imports: Optional[ImportTable] = None
        self._analyses: Dict[Any, Any] = {}

    @property
    def imports(self) -> ImportTable:
        if self._imports is None:
            self._imports = ImportTable.of(self.tree)
        return self._imports

    def qualify(self, node: ast.AST) -> Optional[str]:
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

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        return self.tree.parent(node)

    def ancestors(self, node: ast.AST):
        return self.tree.ancestors(node)

    def text(self, node: ast.AST) -> str:
        return self.tree.text(node)

    def report(self, code: str, node: ast.AST, message: str, fix: Optional[FixLike] = None) -> None:
        self.reports.append(Report(code, node, message, fix))


class Rule:
    """Base class of every check.

    A shipped rule's code and name come from its page in ``rules/`` (the
    ``check:`` key of the front matter names the class); the registry sets
    ``CODE`` and ``NAME`` when it loads the rules. Test rule families set them
    on the class.
    """

    CODE: ClassVar[str]
    NAME: ClassVar[str]
    # Strings without which this rule cannot fire: a file containing none of
    # them is not checked by this rule (the prefilter). Empty = always run.
    TRIGGERS: ClassVar[Tuple[str, ...]] = ()
    # More any-of groups, ALL of which must occur as well (TRIGGERS, if set, is
    # one more group): a rule that needs a loop AND a device AND its own call
    # says so here. Every string of every group must be a necessary condition.
    REQUIRES: ClassVar[Tuple[Tuple[str, ...], ...]] = ()
    # A rule with no TRIGGERS says here why it can fire on any file (tests/test_prefilter.py).
    NO_TRIGGERS: ClassVar[str] = ""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def report(self, node: ast.AST, message: str, *, fix: Optional[FixLike] = None) -> None:
        self.ctx.report(self.CODE, node, message, fix)

    @classmethod
    def handlers(cls) -> Dict[str, str]:
        """The ``visit_Call``-style method names this rule defines."""
        return {name: name for name in dir(cls) if name.startswith("visit_") and callable(getattr(cls, name))}


RuleClass = Type[Rule]


def short(ctx: Context, node: ast.AST, limit: int = 48) -> str:
    """The node's code on one line, cut at ``limit`` characters: how messages quote the code they report."""
    text = " ".join(ctx.text(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def attribute_name_start(ctx: Context, node: ast.Attribute) -> Tuple[int, int]:
    """Where the name after the dot of ``node`` starts (``cuda`` in ``x.cuda``): a point anchor."""
    row, column = ctx.tree.stop(node)
    return row, column - len(node.attr)


def attribute_dot(ctx: Context, node: ast.Attribute) -> Tuple[int, int]:
    """Where the dot of ``node`` is (``x.cuda``, ``(a + b).cuda``): a point anchor before ``.name``."""
    tree = ctx.tree
    value_end = tree.offset(tree.stop(node.value))
    name_start = tree.offset(attribute_name_start(ctx, node))
    dot = tree.source.rfind(".", value_end, name_start)
    row, column = tree.stop(node.value)
    if dot < 0:
        return row, column
    row = bisect.bisect_right(tree.line_starts, dot)
    return row, dot - tree.line_starts[row - 1]
