"""Check one file: parse -> prefilter -> the rules on one tree -> diagnostics -> fixes.

1. Python's own parser reads every file (a file it rejects is an MPS000,
   whatever else it contains).
2. The prefilter drops the rules whose trigger strings the text lacks.
3. The remaining rules run on the file's ``ast`` (``analysis.tree.Tree``),
   asking the shared analyses; each node class is visited by the rules that
   handle it.
4. Findings get positions from the ``ast``; findings that can be fixed get
   their fixes written with LibCST (``mpslint.fixes``), which is only parsed
   for such files.

The engine never raises for bad input: a rule that crashes is an MPS900
diagnostic naming the rule while the other rules go on, and a file LibCST
cannot read simply gets no fixes.
"""

from __future__ import annotations

import ast
import gc
import re
import sys
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from mpslint import registry
from mpslint.analysis.project.view import ProjectView
from mpslint.analysis.tree import Tree
from mpslint.checks.base import Context, Report, Rule, RuleClass
from mpslint.fixes.edits import FixSpec, NodeEdit
from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic, Edit, Fix, Location
from mpslint.source import brackets_too_deep, line_starts
from mpslint.suppressions import Suppressions

INVALID_SYNTAX = "MPS000"
INTERNAL_ERROR = "MPS900"


@dataclass
class CheckResult:
    diagnostics: List[Diagnostic] = field(default_factory=list)
    parsed: bool = True  # False when the file is MPS000
    skipped: bool = False  # the prefilter decided no selected rule can fire
    # The project's module files the result depends on: path -> digest of their summary (analysis/project).
    depends: Dict[str, str] = field(default_factory=dict)


_GROUPS: Dict[RuleClass, Tuple[Tuple[str, ...], ...]] = {}


def trigger_groups(cls: RuleClass) -> Tuple[Tuple[str, ...], ...]:
    """The any-of groups that must all occur in a file for ``cls`` to run: TRIGGERS, then REQUIRES."""
    groups = _GROUPS.get(cls)
    if groups is None:
        groups = ((cls.TRIGGERS,) if cls.TRIGGERS else ()) + tuple(tuple(g) for g in cls.REQUIRES)
        # Any string of a group will do: the shortest first, as a short string is the likelier to occur
        # (`det` is in every `detach`), and a file is searched whole only for the strings it lacks.
        groups = tuple(tuple(sorted(group, key=len)) for group in groups)
        # All must match, so the order is free: short groups are cheap to rule a file out with.
        groups = tuple(sorted(groups, key=len))
        _GROUPS[cls] = groups
    return groups


def rules_for_text(text: str, classes: Sequence[RuleClass]) -> List[RuleClass]:
    """The prefilter: rules all of whose trigger groups have a string in the text (no groups: always run)."""
    seen: Dict[Tuple[str, ...], bool] = {}  # rules share groups (device, loop evidence): test each once
    present: Dict[str, bool] = {}  # and groups share strings (`cuda`, `to(`): search the text for each once
    selected = []
    for cls in classes:
        for group in trigger_groups(cls):
            found = seen.get(group)
            if found is None:
                found = False
                for string in group:
                    here = present.get(string)
                    if here is None:
                        here = present[string] = string in text
                    if here:
                        found = True
                        break
                seen[group] = found
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
    origin: Optional[str] = None,
) -> CheckResult:
    """Check ``text``, reported as ``path``; ``origin`` is the file it was read from when ``path`` (a path as
    displayed) does not lead to it: the project model finds the modules it imports from there."""
    with _collector_paused():
        return _check_text(text, path, settings, prefilter, apply_noqa, origin)


@contextmanager
def _collector_paused():
    """No cyclic garbage collection while one file is checked.

    Parsing allocates hundreds of thousands of objects, none of them garbage
    until the file is done, and CPython's collector would rescan them again and
    again as they pile up. What the file leaves in reference cycles is
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


def _check_text(text: str, path: str, settings: Settings, prefilter: bool, apply_noqa: bool,
                origin: Optional[str] = None) -> CheckResult:
    module = parse(text, path)
    if isinstance(module, Diagnostic):
        return CheckResult([module], parsed=False)
    classes = registry.classes_for(settings.select)
    project = ProjectView(module, origin or path, text)
    if prefilter:
        # What names imported from the project stand for counts as text: `DTYPE` may be torch.float64.
        imported = project.words() if _IMPORTS.search(text) else ""
        classes = rules_for_text(f"{text}\n{imported}" if imported else text, classes)
    if not classes:
        return CheckResult(skipped=True, depends=project.depends)
    diagnostics = check_module(module, text, path, settings, classes, apply_noqa=apply_noqa, project=project)
    return CheckResult(diagnostics, depends=project.depends)


# `from M import name` and `from M import *`: the imports whose names the project model may know.
_IMPORTS = re.compile(r"^[ \t]*from[ \t]", re.MULTILINE)


# The name ``compile`` gets: no file of this name exists, so positions come from the text itself.
SOURCE_NAME = "<mpslint>"


def parse(text: str, path: str):
    """The file's ``ast``, or the MPS000 diagnostic saying why Python cannot read it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like: not ours to report
            # Not the file's path: for some errors CPython reads the offending line back from the file of
            # that name to place the column, and the text checked is not always that file's (a notebook's
            # cell, an editor's unsaved buffer, stdin): the column would come from other text.
            return compile(text, SOURCE_NAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as err:
        row, column = err.lineno or 1, max(err.offset or 1, 1)
        message = f"could not parse: {err.msg or 'invalid syntax'}"
        if _parses_with_libcst(text):
            version = ".".join(map(str, sys.version_info[:2]))
            message += (f" (Python {version}, which runs mpslint, cannot read this syntax: "
                        "run mpslint with the Python version the project uses)")
        return Diagnostic(INVALID_SYNTAX, message, path, Location(row, column), Location(row, column))
    except (ValueError, RecursionError, MemoryError, OverflowError) as err:  # NUL bytes, absurd nesting
        message = _first_line(str(err)) or "invalid source"
        if isinstance(err, (RecursionError, MemoryError)):
            message = "the file is nested too deeply"
        return Diagnostic(INVALID_SYNTAX, f"could not parse: {message}", path, Location(1, 1), Location(1, 1))


def _parses_with_libcst(text: str) -> bool:
    """Whether LibCST, which reads syntax newer than the running Python, accepts the file."""
    if brackets_too_deep(text):
        return False  # LibCST's native parser has no nesting limit of its own
    import libcst as cst

    try:
        cst.parse_module(text)
    except Exception:  # noqa: BLE001 - any failure means: not valid newer syntax either
        return False
    return True


def check_module(
    module: ast.Module,
    text: str,
    path: str,
    settings: Settings,
    classes: Sequence[RuleClass],
    *,
    apply_noqa: bool = True,
    project: Optional[ProjectView] = None,
) -> List[Diagnostic]:
    tree = Tree(module, text)
    ctx = Context(tree, path, settings, project)
    dispatcher = _Dispatcher(ctx, classes)
    try:
        dispatcher.run()
    except RecursionError:
        dispatcher.failures.setdefault("<traversal>", "RecursionError: the file is nested too deeply")
    try:
        diagnostics = _resolve(ctx, path, dispatcher.failures)
    finally:
        # Analyses keep the context, the context keeps them: without this the file's whole
        # tree would wait for the cyclic collector instead of going when this returns.
        ctx.release()
    if apply_noqa and not settings.ignore_noqa and diagnostics and _NOQA.search(text):  # tokenizing is not free
        diagnostics = Suppressions.scan(text).filter(diagnostics)
    diagnostics.sort(key=Diagnostic.sort_key)
    return diagnostics


class _Dispatcher:
    """Feeds every rule the nodes of the classes it handles, in source order, and contains crashes."""

    def __init__(self, ctx: Context, classes: Sequence[RuleClass]) -> None:
        self.ctx = ctx
        self.failures: Dict[str, str] = {}
        self.visit: Dict[type, List[Tuple[Rule, Callable[[ast.AST], object]]]] = {}
        for cls in classes:
            rule = cls(ctx)
            for name in _handlers(cls):
                node_class = getattr(ast, name[len("visit_"):], None)
                if node_class is not None:
                    self.visit.setdefault(node_class, []).append((rule, getattr(rule, name)))

    def run(self) -> None:
        tree, visit = self.ctx.tree, self.visit
        for node_class in list(visit):
            for node in tree.of_type(node_class):
                handlers = visit[node_class]
                if not handlers:
                    break
                for rule, method in handlers:
                    try:
                        method(node)
                    except Exception as exc:  # a bug in a rule: contain it to that rule
                        self._disable(rule, exc)

    def _disable(self, rule: Rule, exc: Exception) -> None:
        self.failures.setdefault(rule.CODE, _failure(exc))
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


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exc())


def _first_line(text: str) -> str:
    return str(text).strip().splitlines()[0] if text else ""


def _resolve(ctx: Context, path: str, failures: Dict[str, str]) -> List[Diagnostic]:
    """Reports (nodes) -> diagnostics (positions, text edits). Positions are computed only here."""
    diagnostics = _findings(ctx, path)
    failures = {**failures, **{code: detail for code, detail in ctx.fix_failures.items() if code not in failures}}
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
    return diagnostics


def _findings(ctx: Context, path: str) -> List[Diagnostic]:
    diagnostics: List[Diagnostic] = []
    if not ctx.reports:
        return diagnostics
    tree = ctx.tree
    resolver = _EditResolver(ctx)
    seen = set()
    for report in ctx.reports:
        try:
            (row, column), (end_row, end_column) = tree.start(report.node), tree.stop(report.node)
        except AttributeError:  # a node with no position (a rule bug)
            continue
        start = Location(row, column + 1)
        end = Location(end_row, end_column + 1)
        key = (report.code, start, end, report.message)
        if key in seen:
            continue
        seen.add(key)
        fix = resolver.fix(report) if report.fix is not None else None
        diagnostics.append(Diagnostic(report.code, report.message, path, start, end, fix=fix, noqa_row=_noqa_row(tree, row)))
    return diagnostics


def _noqa_row(tree, row: int) -> int:
    """Where a ``# noqa`` for a finding on ``row`` can go: past backslash continuations, as in Ruff.

    A comment cannot follow a trailing backslash, so such a line's finding is
    suppressed from the end of its logical line.
    """
    last = len(tree.line_starts)
    while row < last and tree.line_text(row).rstrip("\r\n").endswith("\\"):
        row += 1
    return row


class _EditResolver:
    """Turns a report's fix into text edits, building the LibCST view of the file on first need."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.starts = line_starts(ctx.source)
        self._fixes = None
        self._broken = False

    @property
    def fixes(self):
        """The file in LibCST (``mpslint.fixes.FixContext``), or None when LibCST cannot read it."""
        if self._fixes is None and not self._broken:
            from mpslint.fixes.context import FixContext

            try:
                if brackets_too_deep(self.ctx.source):
                    raise ValueError("nested too deeply for LibCST")
                self._fixes = FixContext(self.ctx)
            except Exception:  # noqa: BLE001 - LibCST rejects what Python accepts: report, do not fix
                self._broken = True
        return self._fixes

    def fix(self, report: Report) -> Optional[Fix]:
        spec = report.fix
        if not isinstance(spec, FixSpec):
            fixes = self.fixes
            if fixes is None:
                return None
            try:
                spec = spec(fixes)  # type: ignore[operator]
            except Exception as exc:  # a bug in a rule's fix: the finding stays, without a fix, next to an MPS900
                self.ctx.fix_failures.setdefault(report.code, _failure(exc))
                return None
            if spec is None:
                return None
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
        if not isinstance(content, str):
            fixes = self.fixes
            if fixes is None:
                return None
            content = fixes.code_for(content)
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

    def point(self, anchor, side: str) -> Optional[Location]:
        if isinstance(anchor, tuple):
            first = last = anchor
        elif isinstance(anchor, ast.AST):
            try:
                first, last = self.ctx.tree.start(anchor), self.ctx.tree.stop(anchor)
            except AttributeError:
                return None
        else:
            fixes = self.fixes
            rng = fixes.ranges.get(anchor) if fixes is not None else None
            if rng is None:
                return None
            first, last = rng
        if side == "start":
            return Location(first[0], first[1] + 1)
        if side == "end":
            return Location(last[0], last[1] + 1)
        if side == "line_after":
            return Location(last[0] + 1, 1)
        raise ValueError(f"unknown edit side {side!r}")
