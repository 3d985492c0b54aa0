"""What the CUDA fixes write for "the device": a variable in scope or ``DEVICE``.

A fix reuses a device variable already in scope when that variable prefers
CUDA (``device = torch.device("cuda")``,
``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``, a
cuda→mps→cpu chain, ``device = pick_device()``), so ``.cuda()`` becomes
``.to(device)`` and still lands where it did. Otherwise it hoists one
module-level ``DEVICE = pick_device()``. ``pick_device`` is defined once per
module after the imports (torch 2.0 compatible; the ``torch.accelerator``
one-liner with a torch-version floor >= 2.7), or imported from the project's
own helper (``device-helper = "package.module:function"``).

Every fix that needs the helper carries the same insertion edit, so the fixer
merges them; a fix needing a different insertion at the same point waits for
the next pass, where the helper already exists. Edits are anchored on the
module's own statements, so no LibCST node is needed to place them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

from mpslint.analysis.cuda_context import CudaContext, is_compound, is_cuda_literal
from mpslint.analysis.syntax import dotted_name, parameters, string_value, target_names
from mpslint.fixes.edits import NodeEdit, insert_line_after
from mpslint.knowledge.cuda_api import ACCELERATOR_ONE_LINER

HOISTED = "DEVICE"
DEFAULT_HELPER = "pick_device"

_DEVICE_NAME = re.compile(r"^(device|dev|DEVICE|_device|torch_device|default_device|[a-z_]*_device)$")
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class DeviceRef:
    """An expression that evaluates to the device, and the edits it needs."""

    text: str
    edits: Tuple[NodeEdit, ...]
    is_str: bool = False  # a device name like "cuda" rather than a torch.device

    @property
    def type(self) -> str:
        """An expression for the device type (``"cuda"``, ``"mps"``, ``"cpu"``)."""
        return self.text if self.is_str else f"{self.text}.type"


def render_helper(torch: str, name: str, floor: Tuple[int, int]) -> str:
    if floor >= ACCELERATOR_ONE_LINER:
        return (
            f"def {name}() -> {torch}.device:\n"
            '    """The accelerator (CUDA, MPS, ...) if there is one, else the CPU."""\n'
            f'    return {torch}.accelerator.current_accelerator(check_available=True) or {torch}.device("cpu")\n'
        )
    return (
        f"def {name}() -> {torch}.device:\n"
        '    """CUDA if available, then Apple\'s MPS, then the CPU."""\n'
        f"    if {torch}.cuda.is_available():\n"
        f'        return {torch}.device("cuda")\n'
        f"    if {torch}.backends.mps.is_available():\n"
        f'        return {torch}.device("mps")\n'
        f'    return {torch}.device("cpu")\n'
    )


class DevicePicker:
    """Per file: ``ctx.analysis(DevicePicker)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        module = ctx.module
        self.module = module
        setting = ctx.settings.device_helper or "inline"
        self.import_from: Optional[str] = None
        if setting != "inline" and ":" in setting:
            self.import_from, self.helper = setting.split(":", 1)
        else:
            self.helper = DEFAULT_HELPER
        # The inline helper is torch 2.0 compatible unless a floor >= 2.7 is configured.
        self.floor = ctx.settings.torch_version[:2] if ctx.settings.torch_version else (2, 0)
        self.torch = torch_alias(ctx)
        self.anchor = _import_block_end(module)
        self.helper_def: Optional[ast.AST] = None
        self.helper_bound = False
        self.hoisted: Optional[ast.AST] = None  # the existing `DEVICE = pick_device()`
        self.hoisted_conflict = False
        for stmt in module.body:
            if type(stmt) in _FUNCTIONS and stmt.name == self.helper:  # type: ignore[attr-defined]
                self.helper_def = stmt
                self.helper_bound = True
            if type(stmt) is ast.Assign and any(type(t) is ast.Name and t.id == HOISTED for t in stmt.targets):
                if self._is_helper_call(stmt.value):
                    self.hoisted = stmt
                else:
                    self.hoisted_conflict = True
        if ctx.imports.bindings.get(self.helper) is not None:
            self.helper_bound = True
        # scope -> name -> (statement index, prefers CUDA, holds a str), for every assignment of the name
        self.scopes: Dict[ast.AST, Dict[str, List[Tuple[int, bool, bool]]]] = {}
        self.params: Dict[ast.AST, Set[str]] = {}
        self._index_assignments()
        # scope -> (name, first assignment, holds a str) of the names every assignment of which prefers CUDA,
        # `device` first: the only names a fix can reuse, found without looking at the others.
        self._reusable: Dict[ast.AST, List[Tuple[str, int, bool]]] = {}
        for scope, table in self.scopes.items():
            found = [(name, min(at for at, _, _ in rows), all(is_str for _, _, is_str in rows))
                     for name, rows in table.items() if all(ok for _, ok, _ in rows)]
            found.sort(key=lambda row: (row[0] != "device", row[0]))
            self._reusable[scope] = found
        self._usable: Optional[bool] = None
        self._padding: Optional[int] = None

    # --- what a fix can use -------------------------------------------------

    @property
    def usable(self) -> bool:
        """The helper can go after the imports, and torch is imported by then."""
        if self._usable is None:
            self._usable = False
            if self.torch is not None and self.anchor is not None:
                body = self.module.body
                binding = _torch_import_statement(self.module)
                self._usable = binding is not None and body.index(binding) <= body.index(self.anchor)
        return self._usable

    def picker_call(self, node: ast.AST) -> Optional[DeviceRef]:
        """``pick_device()`` at ``node``, defining or importing the helper if needed."""
        if not self._after_anchor(node):
            return None
        edits = self._helper_edits(with_device=False)
        if edits is None:
            return None
        return DeviceRef(f"{self.helper}()", edits)

    def device_ref(self, node: ast.AST) -> Optional[DeviceRef]:
        """The device at ``node``: a CUDA-preferring variable in scope, else ``DEVICE``."""
        if not self._after_anchor(node):
            return None
        found = self.variable_in_scope(node)
        if found is not None:
            return DeviceRef(found[0], (), found[1])
        if self.hoisted is not None:
            return DeviceRef(HOISTED, ())
        if self.hoisted_conflict or self._binds_locally(node, HOISTED):
            return None
        edits = self._helper_edits(with_device=True)
        if edits is None:
            return None
        return DeviceRef(HOISTED, edits)

    def variable_in_scope(self, node: ast.AST) -> Optional[Tuple[str, bool]]:
        """(name, holds a str) of a CUDA-preferring device variable assigned before ``node``."""
        statement = self.tree.statement_of(node)
        if statement is None:
            return None
        index = self.tree.index(statement)
        scope = self._scope_of(node)
        for candidate in (scope, self.module) if scope is not self.module else (self.module,):
            for name, first, is_str in self._reusable.get(candidate, ()):
                if candidate is self.module and scope is not self.module and self._binds_locally(node, name):
                    continue  # a local of the same name hides it
                if first < index:
                    return name, is_str
        return None

    # --- internals ------------------------------------------------------------

    def _index_assignments(self) -> None:
        tree = self.tree
        for function in tree.of_type(*_FUNCTIONS):
            self.params[function] = {p.arg for p in parameters(function)}
        for node in tree.of_type(ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith):
            scope = self._scope_of(node)
            at = tree.index(node)
            cls = type(node)
            if cls in (ast.For, ast.AsyncFor):
                names = target_names(node.target)  # type: ignore[attr-defined]
            elif cls in (ast.With, ast.AsyncWith):
                names = [n for item in node.items if item.optional_vars is not None for n in target_names(item.optional_vars)]  # type: ignore[attr-defined]
            else:
                self._record(node, scope, at)
                continue
            for name in names:
                self._add(scope, name, at, False)

    def _record(self, node, scope: ast.AST, at: int) -> None:
        targets = node.targets if type(node) is ast.Assign else [node.target]
        value = node.value
        for target in targets:
            if type(target) is not ast.Name:
                for name in target_names(target):
                    self._add(scope, name, at, False)
                continue
            name = target.id
            if value is None or type(node) is ast.AugAssign:
                self._add(scope, name, at, False)
                continue
            ok = prefers_cuda(self.ctx, value, self.helper)
            device_like = ok or _DEVICE_NAME.match(name) or _is_device_expr(value)
            if not device_like:
                self._add(scope, name, at, False)
                continue
            if not ok and _is_device_expr(value):
                ok = self._in_cuda_first_chain(node)
            self._add(scope, name, at, ok, _holds_str(value))

    def _add(self, scope: ast.AST, name: str, at: int, ok: bool, is_str: bool = False) -> None:
        self.scopes.setdefault(scope, {}).setdefault(name, []).append((at, ok, is_str))

    def _scope_of(self, node: ast.AST) -> ast.AST:
        """The function whose local names ``node`` sees (lambdas hold no statements), or the module."""
        return self.tree.inherited("def", node, _def_step, self.module)

    def _binds_locally(self, node: ast.AST, name: str) -> bool:
        scope = self._scope_of(node)
        if scope is self.module:
            return False
        return name in self.params.get(scope, set()) or name in self.scopes.get(scope, {})

    def _after_anchor(self, node: ast.AST) -> bool:
        if not self.usable:
            return False
        top = self.tree.inherited("top", node, _top_step, None)
        if top is None:
            return False
        return _first_line(top) > self.anchor.end_lineno  # type: ignore[union-attr]

    def _is_helper_call(self, value: ast.AST) -> bool:
        return type(value) is ast.Call and dotted_name(value.func) == self.helper and not value.args and not value.keywords  # type: ignore[attr-defined]

    def _in_cuda_first_chain(self, stmt: ast.AST) -> bool:
        """An assignment inside ``if torch.cuda.is_available(): <cuda> elif/else ...``."""
        parent = self.tree.parent(stmt)
        while parent is not None and type(parent) is not ast.If:
            if type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module):
                return False
            parent = self.tree.parent(parent)
        if parent is None:
            return False
        top = self.ctx.analysis(CudaContext).chain_top(parent)
        test = top.test
        if not (type(test) is ast.Call and self.ctx.qualify(test.func) == "torch.cuda.is_available"):
            return False
        return any(type(s) is ast.Assign and prefers_cuda(self.ctx, s.value, DEFAULT_HELPER) for s in top.body)

    def _helper_edits(self, *, with_device: bool) -> Optional[Tuple[NodeEdit, ...]]:
        device_line = f"{HOISTED} = {self.helper}()\n"
        if self.helper_bound:
            if not with_device:
                return ()
            if self.helper_def is not None:
                return (insert_line_after(self.helper_def, "\n\n" + device_line),)
            return (insert_line_after(self.anchor, self._pad("\n" + device_line, 1)),)
        if self.import_from is not None:
            text = f"from {self.import_from} import {self.helper}\n"
            if with_device:
                text += "\n\n" + device_line
                return (insert_line_after(self.anchor, self._pad(text, 1)),)
            return (insert_line_after(self.anchor, text),)
        text = "\n\n" + render_helper(self.torch, self.helper, self.floor)  # type: ignore[arg-type]
        if with_device:
            text += "\n\n" + device_line
            return (insert_line_after(self.anchor, self._pad(text, 1)),)
        return (insert_line_after(self.anchor, self._pad(text, 2)),)

    def _pad(self, text: str, blank: int) -> str:
        """End ``text`` so that at least ``blank`` empty lines separate it from the next statement."""
        existing = self._blank_lines_after_anchor()
        if existing is None:
            return text
        return text + "\n" * max(0, blank - existing)

    def _blank_lines_after_anchor(self) -> Optional[int]:
        """Empty lines between the imports and the next statement (None: nothing follows them)."""
        if self._padding is None:
            anchor = self.anchor
            following = next((s for s in self.module.body if _first_line(s) > anchor.end_lineno), None)  # type: ignore[union-attr]
            if following is None:
                self._padding = -1
                return None
            existing = 0
            for row in range(anchor.end_lineno + 1, _first_line(following)):  # type: ignore[union-attr]
                if self.tree.line_text(row).strip():
                    break  # a comment line: what follows it is the statement's own
                existing += 1
            self._padding = existing
        return None if self._padding < 0 else self._padding


def _def_step(parent: ast.AST, child: ast.AST, above: ast.AST) -> ast.AST:
    return parent if type(parent) in _FUNCTIONS else above


def _top_step(parent: ast.AST, child: ast.AST, above):
    return child if type(parent) is ast.Module else above


def _first_line(statement: ast.AST) -> int:
    """The first line of a statement, its decorators included."""
    decorators = getattr(statement, "decorator_list", None)
    if decorators:
        return min(d.lineno for d in decorators)
    return statement.lineno  # type: ignore[attr-defined]


def prefers_cuda(ctx, value: ast.AST, helper: str) -> bool:
    """Whether a device value is CUDA whenever CUDA is available (like ``.cuda()``)."""
    cls = type(value)
    if cls is ast.Constant:
        return string_value(value) == "cuda"
    if cls is ast.Call:
        name = ctx.qualify(value.func)  # type: ignore[attr-defined]
        if name == "torch.device" and len(value.args) == 1 and not value.keywords and type(value.args[0]) is not ast.Starred:  # type: ignore[attr-defined]
            return prefers_cuda(ctx, value.args[0], helper)  # type: ignore[attr-defined]
        return dotted_name(value.func) == helper and not value.args and not value.keywords  # type: ignore[attr-defined]
    if cls is ast.Attribute and value.attr == "type":  # type: ignore[attr-defined]
        return type(value.value) is ast.Call and prefers_cuda(ctx, value.value, helper)  # type: ignore[attr-defined]
    if cls is ast.IfExp:
        test = value.test  # type: ignore[attr-defined]
        return (
            type(test) is ast.Call
            and ctx.qualify(test.func) == "torch.cuda.is_available"
            and not test.args
            and not test.keywords
            and prefers_cuda(ctx, value.body, helper)  # type: ignore[attr-defined]
        )
    return False


def _holds_str(value: ast.AST) -> bool:
    if string_value(value) is not None:
        return True
    if type(value) is ast.IfExp:
        return _holds_str(value.body) and _holds_str(value.orelse)  # type: ignore[attr-defined]
    return type(value) is ast.Attribute and value.attr == "type"  # type: ignore[attr-defined]


def _is_device_expr(value: ast.AST) -> bool:
    text = string_value(value)
    if text is not None:
        return text in ("cpu", "mps") or is_cuda_literal(value)
    if type(value) is ast.Call:
        return (dotted_name(value.func) or "").endswith("device")  # type: ignore[attr-defined]
    return False


def torch_alias(ctx) -> Optional[str]:
    """The module-level name bound to ``torch`` itself (``import torch as th`` -> ``th``)."""
    found = []
    for stmt in _top_level_statements(ctx.module):
        if type(stmt) is ast.Import:
            for alias in stmt.names:
                if alias.asname:
                    if alias.name == "torch":
                        found.append(alias.asname)
                elif alias.name.split(".", 1)[0] == "torch":
                    found.append("torch")
    if "torch" in found:
        return "torch"
    return found[0] if found else None


def _torch_import_statement(module: ast.Module) -> Optional[ast.AST]:
    """The top-level statement (or block) that first imports torch."""
    for stmt in module.body:
        inner = stmt.body if type(stmt) in (ast.Try, ast.If) else [stmt]  # type: ignore[attr-defined]
        for line in inner:
            if type(line) is ast.Import and any(a.name.split(".", 1)[0] == "torch" for a in line.names):
                return stmt
    return None


def _top_level_statements(module: ast.Module):
    """Module statements, looking into top-level ``try``/``if`` blocks (guarded imports)."""
    for stmt in module.body:
        yield stmt
        if type(stmt) in (ast.Try, ast.If):
            yield from stmt.body  # type: ignore[attr-defined]  # `try: import torch` / `if is_torch_available(): import torch`


def _contains_import(stmt: ast.AST) -> bool:
    if type(stmt) in (ast.Import, ast.ImportFrom):
        return True
    if type(stmt) in (ast.Try, ast.If):
        # `try: import x` / `if is_torch_available(): import torch`
        return any(_contains_import(s) for s in stmt.body)  # type: ignore[attr-defined]
    return False


def _import_block_end(module: ast.Module) -> Optional[ast.AST]:
    """The last statement of the module's leading imports.

    The prelude is the docstring, ``from __future__`` and imports, possibly
    interleaved with simple statements (``sys.path.insert(...)``,
    ``warnings.filterwarnings(...)``) and ``try: import ...`` blocks; it ends
    at the first definition or other compound statement.
    """
    last = None
    for stmt in module.body:
        if _contains_import(stmt):
            last = stmt
        elif not is_compound(stmt):
            continue
        else:
            break
    return last
