"""Check one file: prefilter -> parse -> one traversal with every rule -> diagnostics.

The engine never raises for bad input: a file that does not parse is an
MPS000 diagnostic, and a rule that crashes is an MPS900 diagnostic naming the
rule while the other rules go on.
"""

from __future__ import annotations

import ast
import gc
import re
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from mpslint import registry
from mpslint.analysis.tree import Tree
from mpslint.checks.base import Context, FixSpec, NodeEdit, Report, Rule, RuleClass
from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic, Edit, Fix, Location
from mpslint.positions import node_ranges
from mpslint.screen import screen_rules
from mpslint.source import brackets_too_deep, line_starts
from mpslint.suppressions import Suppressions

INVALID_SYNTAX = "MPS000"
INTERNAL_ERROR = "MPS900"


@dataclass
class CheckResult:
    diagnostics: List[Diagnostic] = field(default_factory=list)
    parsed: bool = True  # False when the file is MPS000
    skipped: bool = False  # the prefilter decided no selected rule can fire


_GROUPS: Dict[RuleClass, Tuple[Tuple[str, ...], ...]] = {}


def trigger_groups(cls: RuleClass) -> Tuple[Tuple[str, ...], ...]:
    """The any-of groups that must all occur in a file for ``cls`` to run: TRIGGERS, then REQUIRES."""
    groups = _GROUPS.get(cls)
    if groups is None:
        groups = ((cls.TRIGGERS,) if cls.TRIGGERS else ()) + tuple(tuple(g) for g in cls.REQUIRES)
        # All must match, so the order is free: short groups are cheap to rule a file out with.
        groups = tuple(sorted(groups, key=len))
        _GROUPS[cls] = groups
    return groups


def rules_for_text(text: str, classes: Sequence[RuleClass]) -> List[RuleClass]:
    """The prefilter: rules all of whose trigger groups have a string in the text (no groups: always run)."""
    seen: Dict[Tuple[str, ...], bool] = {}  # rules share groups (device, loop evidence): test each once
    selected = []
    for cls in classes:
        for group in trigger_groups(cls):
            found = seen.get(group)
            if found is None:
                found = seen[group] = any(t in text for t in group)
            if not found:
                break
        else:
            selected.append(cls)
    return selected


def check_text(
    text: str,
    path: str,
    settings: Settings,
    *,
    prefilter: bool = True,
    apply_noqa: bool = True,
) -> CheckResult:
    with _collector_paused():
        return _check_text(text, path, settings, prefilter, apply_noqa)


@contextmanager
def _collector_paused():
    """No cyclic garbage collection while one file is checked.

    Parsing allocates hundreds of thousands of objects, none of them garbage
    until the file is done, and CPython's collector would rescan them again and
    again as they pile up (measured on transformers: checking took 15-20% longer,
    Python's own parse 24%). What the file leaves in reference cycles is
    collected on the first allocation after the collector is back.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _check_text(text: str, path: str, settings: Settings, prefilter: bool, apply_noqa: bool) -> CheckResult:
    classes = registry.classes_for(settings.select)
    if prefilter:
        classes = rules_for_text(text, classes)
        if classes:
            classes = screen_rules(text, classes, settings)
        if not classes:
            return CheckResult(skipped=True)
    if brackets_too_deep(text) and _python_rejects(text, path):
        return CheckResult([_syntax_diagnostic(path, text, None)], parsed=False)
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return CheckResult([_syntax_diagnostic(path, text, exc)], parsed=False)
    except (RecursionError, MemoryError):
        diagnostic = Diagnostic(
            INVALID_SYNTAX,
            "could not parse: the file is nested too deeply",
            path,
            Location(1, 1),
            Location(1, 1),
        )
        return CheckResult([diagnostic], parsed=False)
    return CheckResult(check_module(module, text, path, settings, classes, apply_noqa=apply_noqa))


def check_module(
    module: cst.Module,
    text: str,
    path: str,
    settings: Settings,
    classes: Sequence[RuleClass],
    *,
    apply_noqa: bool = True,
) -> List[Diagnostic]:
    ctx = Context(module, text, path, settings)
    dispatcher = _Dispatcher(ctx, classes)
    try:
        dispatcher.run(module)
    except RecursionError:
        dispatcher.failures.setdefault("<traversal>", "RecursionError: the file is nested too deeply")
    try:
        diagnostics = _resolve(ctx, path, dispatcher.failures)
    finally:
        # Analyses keep the context, the context keeps them: without this the file's whole
        # tree would wait for the cyclic collector instead of going when this returns.
        ctx.release()
    if apply_noqa and diagnostics and _NOQA.search(text):  # tokenizing the file is not free
        diagnostics = Suppressions.scan(text).filter(diagnostics)
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


class _Dispatcher:
    """Feeds every rule from one walk of the tree, and contains crashes.

    The walk is the ``Tree`` analysis's (every syntax node in LibCST's visiting
    order, iteratively, so deep nesting cannot hit the recursion limit); rules
    get ``visit_<Node>`` calls in that order, with every parent already known.
    ``CSTNode.visit`` is not used: it rebuilds each node it passes, which costs
    as much as the parse.
    """

    def __init__(self, ctx: Context, classes: Sequence[RuleClass]) -> None:
        self.ctx = ctx
        self.failures: Dict[str, str] = {}
        self.visit: Dict[str, List[Tuple[Rule, Callable[[cst.CSTNode], object]]]] = {}
        for cls in classes:
            rule = cls(ctx)
            for name in _handlers(cls):
                self.visit.setdefault(name[len("visit_"):], []).append((rule, getattr(rule, name)))

    def run(self, module: cst.Module) -> None:
        tree = Tree(module)
        self.ctx.adopt_tree(tree)
        visit_table, call = self.visit, self._call
        for node in tree.start:  # pre-order
            handlers = visit_table.get(type(node).__name__)
            if handlers:
                call(handlers, node)

    def _call(self, handlers: List[Tuple[Rule, Callable[[cst.CSTNode], object]]], node: cst.CSTNode) -> None:
        for rule, method in list(handlers):
            try:
                method(node)
            except Exception as exc:  # a bug in a rule: contain it to that rule
                self._disable(rule)
                self.failures.setdefault(
                    rule.CODE,
                    f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc()),
                )

    def _disable(self, rule: Rule) -> None:
        for key, handlers in self.visit.items():
            self.visit[key] = [h for h in handlers if h[0] is not rule]
        self.ctx.reports = [r for r in self.ctx.reports if r.code != rule.CODE]


_NOQA = re.compile("noqa", re.IGNORECASE)  # every suppression comment contains it
_HANDLER_CACHE: Dict[RuleClass, Tuple[str, ...]] = {}


def _handlers(cls: RuleClass) -> Tuple[str, ...]:
    names = _HANDLER_CACHE.get(cls)
    if names is None:
        names = tuple(cls.handlers())
        _HANDLER_CACHE[cls] = names
    return names


def _syntax_diagnostic(path: str, text: str, exc: Optional[cst.ParserSyntaxError]) -> Diagnostic:
    """MPS000 with Python's own wording where it has one ("'(' was never closed")."""
    row, column, message = 1, 1, "invalid syntax"
    if exc is not None:
        row, column = max(exc.raw_line, 1), max(exc.raw_column, 0) + 1
        message = f"LibCST cannot parse this: {_first_line(exc.message)}"
    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        message = err.msg or "invalid syntax"
        if err.lineno:
            row, column = err.lineno, max(err.offset or 1, 1)
    except (ValueError, RecursionError, MemoryError) as err:  # NUL bytes, absurd nesting
        message = _first_line(str(err)) or "invalid source"
    return Diagnostic(
        INVALID_SYNTAX,
        f"could not parse: {message}",
        path,
        Location(row, column),
        Location(row, column),
    )


def _python_rejects(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def _first_line(text: str) -> str:
    return str(text).strip().splitlines()[0] if text else ""


def _resolve(ctx: Context, path: str, failures: Dict[str, str]) -> List[Diagnostic]:
    """Reports (nodes) -> diagnostics (positions, text edits). Positions are computed only here."""
    diagnostics: List[Diagnostic] = []
    for code, detail in sorted(failures.items()):
        name = registry.name_of(code) if code.startswith("MPS") else code
        diagnostics.append(
            Diagnostic(
                INTERNAL_ERROR,
                f"internal error in rule {code} ({name}); the other rules still ran. "
                "Please report this at https://github.com/mpslint/mpslint/issues with the file",
                path,
                Location(1, 1),
                Location(1, 1),
                detail=detail,
            )
        )
    if not ctx.reports:
        return diagnostics
    positions = node_ranges(ctx.module, _anchors(ctx.reports))
    resolver = _EditResolver(ctx, positions)
    seen = set()
    for report in ctx.reports:
        try:
            rng = positions[report.node]
        except KeyError:  # a rule reported a node it built itself: a rule bug
            continue
        start = Location(rng[0][0], rng[0][1] + 1)
        end = Location(rng[1][0], rng[1][1] + 1)
        key = (report.code, start, end, report.message)
        if key in seen:
            continue
        seen.add(key)
        fix = resolver.fix(report.fix) if report.fix is not None else None
        diagnostics.append(
            Diagnostic(report.code, report.message, path, start, end, fix=fix, noqa_row=start.row)
        )
    return diagnostics


def _anchors(reports: List[Report]) -> List[cst.CSTNode]:
    """Every node whose position the diagnostics need: reported nodes and fix anchors."""
    nodes: List[cst.CSTNode] = []
    for report in reports:
        nodes.append(report.node)
        if report.fix is not None:
            for edit in report.fix.edits:
                nodes.append(edit.start[0])
                nodes.append(edit.end[0])
    return nodes


class _EditResolver:
    def __init__(self, ctx: Context, positions) -> None:
        self.ctx = ctx
        self.positions = positions
        self.starts = line_starts(ctx.source)

    def fix(self, spec: FixSpec) -> Optional[Fix]:
        edits = []
        for edit in spec.edits:
            resolved = self.edit(edit)
            if resolved is None:
                return None
            edits.append(resolved)
        edits.sort(key=Edit.sort_key)
        return Fix(spec.message, spec.applicability, tuple(edits))

    def edit(self, edit: NodeEdit) -> Optional[Edit]:
        content = edit.content
        if isinstance(content, cst.CSTNode):
            content = self.ctx.module.code_for_node(content)
        start = self.point(*edit.start)
        end = self.point(*edit.end)
        if start is None or end is None:
            return None
        if edit.start[1] == "line_after" and start.row > len(self.starts):
            # The anchor is on the last line and the file has no final newline.
            last = len(self.starts)
            column = len(self.ctx.source) - self.starts[last - 1] + 1
            start = end = Location(last, column)
            content = "\n" + content.rstrip("\n")
        return Edit(start, end, content)

    def point(self, node: cst.CSTNode, side: str) -> Optional[Location]:
        try:
            rng = self.positions[node]
        except KeyError:
            return None
        if side == "start":
            return Location(rng[0][0], rng[0][1] + 1)
        if side == "end":
            return Location(rng[1][0], rng[1][1] + 1)
        if side == "line_after":
            return Location(rng[1][0] + 1, 1)
        raise ValueError(f"unknown edit side {side!r}")
