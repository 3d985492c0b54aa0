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
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, Optional, Tuple, Type, TypeVar

from mpslint.analysis.names import ImportTable
from mpslint.analysis.project.view import ProjectView
from mpslint.analysis.rebound_imports import ReboundImports
from mpslint.analysis.tree import Tree
from mpslint.fixes.edits import (  # noqa: F401  (re-exported: what rules write fixes with)
    Anchor,
    FixLike,
    FixSpec,
    NodeEdit,
    delete_span,
    insert_after,
    insert_before,
    insert_line_after,
    replace,
    replace_span,
)

if TYPE_CHECKING:
    from mpslint.config import Settings

T = TypeVar("T")


@dataclass
class Report:
    code: str
    node: ast.AST
    message: str
    fix: Optional[FixLike]


class Context:
    """Everything rules share about one file, computed at most once."""

    def __init__(self, tree: Tree, path: str, settings: "Settings", project: Optional[ProjectView] = None) -> None:
        self.tree = tree
        self.module = tree.module
        self.source = tree.source
        self.path = path
        self.settings = settings
        self.reports: List[Report] = []
        self.fix_failures: Dict[str, str] = {}  # rule code -> traceback of its fix's crash
        self._imports: Optional[ImportTable] = None
        self._project = project
        self._analyses: Dict[Any, Any] = {}

    @property
    def imports(self) -> ImportTable:
        if self._imports is None:
            self._imports = ImportTable.of(self.tree)
            self._imports.resolver = self.project.qualified
            names = self._imports.unlisted_imports()
            if names:
                self._imports.rebound = ReboundImports(self.tree, names).is_value
        return self._imports

    @property
    def project(self) -> ProjectView:
        """This file seen from the project: what its imports and helpers are (``analysis/project``)."""
        if self._project is None:
            self._project = ProjectView(self.module, self.path)
        return self._project

    def qualify(self, node: ast.AST) -> Optional[str]:
        """Qualified name of a Name/Attribute chain (``th.cuda`` -> ``torch.cuda``)."""
        # Rules ask this of nearly every call: after the first question the import table answers directly
        # (an instance attribute hides this method).
        qualify = self.__dict__["qualify"] = self.imports.qualify
        return qualify(node)

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
