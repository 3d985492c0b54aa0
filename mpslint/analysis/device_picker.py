"""What the CUDA fixes write for "the device": a variable in scope or ``DEVICE``.

DESIGN.md "Device picker": a fix reuses a device variable already in scope
when that variable prefers CUDA (``device = torch.device("cuda")``,
``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``, a
cuda→mps→cpu chain, ``device = pick_device()``), so ``.cuda()`` becomes
``.to(device)`` and still lands where it did. Otherwise it hoists one
module-level ``DEVICE = pick_device()``. ``pick_device`` is defined once per
module after the imports (torch 2.0 compatible; the ``torch.accelerator``
one-liner with a torch-version floor >= 2.7), or imported from the project's
own helper (``device-helper = "package.module:function"``).

Every fix that needs the helper carries the same insertion edit, so the fixer
merges them; a fix needing a different insertion at the same point waits for
the next pass, where the helper already exists.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

import libcst as cst

from mpslint.analysis.cuda_context import is_cuda_literal, string_value
from mpslint.analysis.names import dotted_name
from mpslint.checks.base import NodeEdit, insert_line_after
from mpslint.knowledge.cuda_api import ACCELERATOR_ONE_LINER

HOISTED = "DEVICE"
DEFAULT_HELPER = "pick_device"

Scope = Union[cst.Module, cst.FunctionDef]
_DEVICE_NAME = re.compile(r"^(device|dev|DEVICE|_device|torch_device|default_device|[a-z_]*_device)$")


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
    """Per-file: ``ctx.analysis(DevicePicker)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
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
        self.torch = _torch_alias(module)
        self.anchor = _import_block_end(module)
        self.helper_def: Optional[cst.FunctionDef] = None
        self.helper_bound = False
        self.hoisted: Optional[cst.CSTNode] = None  # the existing `DEVICE = pick_device()`
        self.hoisted_conflict = False
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == self.helper:
                self.helper_def = stmt
                self.helper_bound = True
        if ctx.imports.bindings.get(self.helper) is not None:
            self.helper_bound = True
        self.order: Dict[cst.CSTNode, int] = {}
        self.scopes: Dict[cst.CSTNode, Dict[str, List[Tuple[int, bool, bool]]]] = {}
        self.params: Dict[cst.CSTNode, set] = {}
        _Indexer(self).visit_module(module)
        for stmt in module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and any(
                        isinstance(t.target, cst.Name) and t.target.value == HOISTED for t in small.targets
                    ):
                        if self._is_helper_call(small.value):
                            self.hoisted = stmt
                        else:
                            self.hoisted_conflict = True

    # --- what a fix can use -------------------------------------------------

    @property
    def usable(self) -> bool:
        """The helper can go after the imports, and torch is imported by then."""
        if self.torch is None or self.anchor is None:
            return False
        body = list(self.module.body)
        binding = _torch_import_statement(self.module)
        return binding is not None and body.index(binding) <= body.index(self.anchor)

    def picker_call(self, node: cst.CSTNode) -> Optional[DeviceRef]:
        """``pick_device()`` at ``node``, defining or importing the helper if needed."""
        if not self._after_anchor(node):
            return None
        edits = self._helper_edits(with_device=False)
        if edits is None:
            return None
        return DeviceRef(f"{self.helper}()", edits)

    def device_ref(self, node: cst.CSTNode) -> Optional[DeviceRef]:
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

    def variable_in_scope(self, node: cst.CSTNode) -> Optional[Tuple[str, bool]]:
        """(name, holds a str) of a CUDA-preferring device variable assigned before ``node``."""
        index = self._statement_index(node)
        if index is None:
            return None
        scope = self._scope_of(node)
        seen = set()
        for candidate in (scope, self.module) if scope is not self.module else (self.module,):
            table = self.scopes.get(candidate, {})
            for name in sorted(table, key=lambda n: (n != "device", n)):
                if name in seen:
                    continue
                seen.add(name)
                if candidate is self.module and scope is not self.module and self._binds_locally(node, name):
                    continue
                assignments = table[name]
                if all(ok for _, ok, _ in assignments) and any(at < index for at, _, _ in assignments):
                    return name, all(is_str for _, _, is_str in assignments)
        return None

    # --- internals ------------------------------------------------------------

    def _statement_index(self, node: cst.CSTNode) -> Optional[int]:
        """Source order of the statement ``node`` is in (or heads)."""
        for parent in (node, *self.ctx.ancestors(node)):
            index = self.order.get(parent)
            if index is not None:
                return index
        return None

    def _scope_of(self, node: cst.CSTNode) -> Scope:
        for parent in self.ctx.ancestors(node):
            if isinstance(parent, cst.FunctionDef):
                return parent
        return self.module

    def _binds_locally(self, node: cst.CSTNode, name: str) -> bool:
        scope = self._scope_of(node)
        if scope is self.module:
            return False
        return name in self.params.get(scope, set()) or name in self.scopes.get(scope, {})

    def _after_anchor(self, node: cst.CSTNode) -> bool:
        if not self.usable:
            return False
        top = None
        for parent in [node, *self.ctx.ancestors(node)]:
            if self.ctx.parent(parent) is self.module or parent in self.module.body:
                top = parent
                break
        if top is None:
            return False
        body = list(self.module.body)
        return top in body and body.index(top) > body.index(self.anchor)

    def _is_helper_call(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Call) and dotted_name(value.func) == self.helper and not value.args

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
        text = "\n\n" + render_helper(self.torch, self.helper, self.floor)
        if with_device:
            text += "\n\n" + device_line
            return (insert_line_after(self.anchor, self._pad(text, 1)),)
        return (insert_line_after(self.anchor, self._pad(text, 2)),)

    def _pad(self, text: str, blank: int) -> str:
        """End ``text`` so that at least ``blank`` empty lines separate it from the next statement."""
        body = list(self.module.body)
        index = body.index(self.anchor)
        existing = 0
        if index + 1 < len(body):
            for line in getattr(body[index + 1], "leading_lines", ()):
                if line.comment is not None:
                    break
                existing += 1
        else:
            return text
        return text + "\n" * max(0, blank - existing)


def prefers_cuda(ctx, value: cst.BaseExpression, helper: str) -> bool:
    """Whether a device value is CUDA whenever CUDA is available (like ``.cuda()``)."""
    if isinstance(value, cst.SimpleString):
        return string_value(value) == "cuda"
    if isinstance(value, cst.Call):
        name = ctx.qualify(value.func)
        if name == "torch.device" and len(value.args) == 1 and value.args[0].keyword is None:
            return prefers_cuda(ctx, value.args[0].value, helper)
        return dotted_name(value.func) == helper and not value.args
    if isinstance(value, cst.Attribute) and value.attr.value == "type":
        return isinstance(value.value, cst.Call) and prefers_cuda(ctx, value.value, helper)
    if isinstance(value, cst.IfExp):
        test = value.test
        return (
            isinstance(test, cst.Call)
            and ctx.qualify(test.func) == "torch.cuda.is_available"
            and not test.args
            and prefers_cuda(ctx, value.body, helper)
        )
    return False


def _in_cuda_first_chain(ctx, stmt: cst.CSTNode, tree_parent) -> bool:
    """An assignment inside ``if torch.cuda.is_available(): <cuda> elif/else ...``."""
    parent = tree_parent(stmt)
    while parent is not None and not isinstance(parent, cst.If):
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Module)):
            return False
        parent = tree_parent(parent)
    if parent is None:
        return False
    top = parent
    while isinstance(tree_parent(top), cst.If) and tree_parent(top).orelse is top:
        top = tree_parent(top)
    test = top.test
    if not (isinstance(test, cst.Call) and ctx.qualify(test.func) == "torch.cuda.is_available"):
        return False
    for small in _simple_statements(top.body):
        if isinstance(small, cst.Assign) and prefers_cuda(ctx, small.value, DEFAULT_HELPER):
            return True
    return False


def _simple_statements(block: cst.BaseSuite):
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, cst.BaseSmallStatement):
            yield stmt


class _Indexer:
    """Source order of statements, and the device-like assignments of each scope.

    Only statements are walked (not expressions), without LibCST's visitor
    machinery: this runs on large files whenever one fix needs a device.
    """

    def __init__(self, picker: DevicePicker) -> None:
        self.picker = picker
        self.counter = 0
        self.stack: List[Scope] = [picker.module]
        self.parents: Dict[cst.CSTNode, cst.CSTNode] = {}

    def visit_module(self, module: cst.Module) -> None:
        self._block(module, module.body)

    def _block(self, owner: cst.CSTNode, statements) -> None:
        for stmt in statements:
            self.parents[stmt] = owner
            self._statement(stmt)

    def _statement(self, stmt: cst.CSTNode) -> None:
        self.counter += 1
        self.picker.order[stmt] = self.counter
        if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in stmt.body:
                self.parents[small] = stmt
                if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                    self._record(small)
            return
        if isinstance(stmt, cst.FunctionDef):
            self.picker.params[stmt] = {p.name.value for p in _all_params(stmt.params)}
            self.stack.append(stmt)
            self._suite(stmt, stmt.body)
            self.stack.pop()
            return
        if isinstance(stmt, (cst.For, cst.With)):
            self._record_other(stmt)
        for name in ("body", "orelse", "finalbody"):
            child = getattr(stmt, name, None)
            if isinstance(child, cst.BaseSuite):
                self._suite(stmt, child)
            elif isinstance(child, (cst.If, cst.Else, cst.Finally)):
                self.parents[child] = stmt
                if isinstance(child, cst.If):
                    self._statement(child)
                else:
                    self._suite(child, child.body)
        for handler in getattr(stmt, "handlers", ()):
            self.parents[handler] = stmt
            self._suite(handler, handler.body)

    def _suite(self, owner: cst.CSTNode, suite: cst.BaseSuite) -> None:
        self.parents[suite] = owner
        if isinstance(suite, cst.IndentedBlock):
            self._block(suite, suite.body)
        else:
            self._statement(suite)

    def _record(self, node) -> None:
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        value = node.value
        picker = self.picker
        for target in targets:
            if not isinstance(target, cst.Name):
                for name in _names_in(target):
                    self._add(name, False)
                continue
            name = target.value
            if value is None or isinstance(node, cst.AugAssign):
                self._add(name, False)
                continue
            ok = prefers_cuda(picker.ctx, value, picker.helper)
            device_like = ok or _DEVICE_NAME.match(name) or _is_device_expr(value)
            if not device_like:
                self._add(name, False)
                continue
            if not ok and _is_device_expr(value):
                ok = _in_cuda_first_chain(picker.ctx, node, self.parents.get)
            self._add(name, ok, _holds_str(value))

    def _record_other(self, node) -> None:
        targets = []
        if isinstance(node, cst.For):
            targets = [node.target]
        elif isinstance(node, cst.With):
            targets = [item.asname.name for item in node.items if item.asname is not None]
        for target in targets:
            for name in _names_in(target):
                self._add(name, False)

    def _add(self, name: str, ok: bool, is_str: bool = False) -> None:
        table = self.picker.scopes.setdefault(self.stack[-1], {})
        table.setdefault(name, []).append((self.counter, ok, is_str))


def _holds_str(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.SimpleString):
        return True
    if isinstance(value, cst.IfExp):
        return _holds_str(value.body) and _holds_str(value.orelse)
    return isinstance(value, cst.Attribute) and value.attr.value == "type"


def _names_in(target: cst.CSTNode) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names_in(e.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return []


def _is_device_expr(value: cst.BaseExpression) -> bool:
    if isinstance(value, cst.SimpleString):
        v = string_value(value)
        return v is not None and (v in ("cpu", "mps") or is_cuda_literal(value))
    if isinstance(value, cst.Call):
        return (dotted_name(value.func) or "").endswith("device")
    return False


def _all_params(params: cst.Parameters):
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    if params.star_kwarg is not None:
        yield params.star_kwarg


def torch_alias(ctx) -> Optional[str]:
    """``ctx.analysis(torch_alias)``: the local name of torch for rewritten code."""
    return _torch_alias(ctx.module)


def _torch_alias(module: cst.Module) -> Optional[str]:
    """The module-level name bound to ``torch`` itself (``import torch as th`` -> ``th``)."""
    found = []
    for stmt in _top_level_statements(module):
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted_name(alias.name)
                    if full is None:
                        continue
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        if full == "torch":
                            found.append(alias.asname.name.value)
                    elif full.split(".", 1)[0] == "torch":
                        found.append("torch")
    if "torch" in found:
        return "torch"
    return found[0] if found else None


def _torch_import_statement(module: cst.Module) -> Optional[cst.CSTNode]:
    """The top-level statement (or block) that first imports torch."""
    for stmt in module.body:
        inner = stmt.body.body if isinstance(stmt, (cst.Try, cst.If)) and isinstance(stmt.body, cst.IndentedBlock) else [stmt]
        for line in inner:
            if isinstance(line, cst.SimpleStatementLine):
                for small in line.body:
                    if isinstance(small, cst.Import) and any(
                        (dotted_name(a.name) or "").split(".", 1)[0] == "torch" for a in small.names
                    ):
                        return stmt
    return None


def _top_level_statements(module: cst.Module):
    """Module statements, looking into top-level ``try``/``if`` blocks (guarded imports)."""
    for stmt in module.body:
        yield stmt
        if isinstance(stmt, (cst.Try, cst.If)) and isinstance(stmt.body, cst.IndentedBlock):
            yield from stmt.body.body  # `try: import torch` / `if is_torch_available(): import torch`


def _contains_import(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)
    if isinstance(stmt, (cst.Try, cst.If)) and isinstance(stmt.body, cst.IndentedBlock):
        # `try: import x` / `if is_torch_available(): import torch`
        return any(_contains_import(s) for s in stmt.body.body)
    return False


def _import_block_end(module: cst.Module) -> Optional[cst.CSTNode]:
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
        elif isinstance(stmt, cst.SimpleStatementLine):
            continue
        else:
            break
    return last
