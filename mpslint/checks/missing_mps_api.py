"""``torch.mps.*`` / ``torch.backends.mps.*`` names the project's torch does not have (see ``rules/MPS112.md``).

Names that no release has (``torch.mps.manual_seed_all``, ``current_device``,
``get_mem_info``: CUDA's API read as MPS's) are reported whatever the floor;
names that came later (``torch.mps.is_available`` in 2.5) only when the
project's torch floor (``torch-version``, or its ``torch>=`` requirement) is
older; with no floor declared, torch 2.0 is assumed and the message says so, as
for MPS504. A project that declares a 2.0 floor also hears that ``torch.mps``
itself needs ``import torch.mps`` there.
"""

from __future__ import annotations

import ast
import re
from typing import Optional, Set, Tuple

from mpslint.analysis.syntax import string_value
from mpslint.checks.base import FixSpec, Rule, replace
from mpslint.knowledge import mps_api, versions

_MODULES = {"torch.mps": mps_api.TORCH_MPS, "torch.backends.mps": mps_api.BACKENDS_MPS}
_VERSION_WORDS = re.compile(r"version|_greater|_less|TORCH_\d|torch_\d", re.IGNORECASE)
_VERSION_STRING = re.compile(r"^\d+\.\d+(\.\d+)?$")
_CATCHES = frozenset({"AttributeError", "Exception", "BaseException", "ImportError"})


class MissingMpsApi(Rule):
    TRIGGERS = ("mps",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._import_reported = False
        self._shims: Optional[Set[Tuple[str, str]]] = None

    def visit_Attribute(self, node: ast.Attribute) -> None:
        module = self.ctx.qualify(node.value)
        if module not in _MODULES or type(node.ctx) is not ast.Load:
            return
        self._check(node, module, node.attr)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or node.module not in _MODULES:
            return
        for alias in node.names:
            if alias.name != "*":
                self._check(node, node.module, alias.name, fixable=False)

    def _check(self, node: ast.AST, module: str, member: str, fixable: bool = True) -> None:
        if member.startswith("_") or self._guarded(node, module, member) or (module, member) in self._shimmed():
            return
        declared = self.ctx.settings.torch_version
        floor = versions.floor_of(declared)
        since = _MODULES[module].get(member)
        name = f"{module}.{member}"
        if since is None:
            instead = mps_api.INSTEAD.get(member)
            tail = f"; use {instead}" if instead else ""
            fix = self._rename(node, module, member) if fixable else None
            self.report(node, f"`{name}` does not exist in any torch release (checked up to "
                              f"{versions.text(versions.LATEST_KNOWN)}): it raises AttributeError{tail}", fix=fix)
            return
        if since > floor and not self._version_checked(node):
            fix = self._is_available_fix(node) if fixable and name == "torch.mps.is_available" else None
            instead = "; use `torch.backends.mps.is_available()`" if name == "torch.mps.is_available" else ""
            if declared is None:  # the policy MPS504 follows: no floor declared, torch 2.0 assumed, and said
                supports = (f"no torch-version is set, so mpslint assumes torch {versions.text(floor)} (set "
                            f"torch-version or require torch>={versions.text(since)} if older torch is not supported)")
            else:
                supports = f"the project supports torch {versions.text(floor)}"
            self.report(node, f"`{name}` needs torch >= {versions.text(since)}, but {supports}: it raises "
                              f"AttributeError there{instead}", fix=fix)
            return
        # torch 2.0.x itself is rare today: this one is said only to projects that declare it.
        if declared is not None and module == "torch.mps" and floor < mps_api.TORCH_MPS_IMPORTED_BY_TORCH \
                and type(node) is ast.Attribute \
                and not self._import_reported and not self._imports_torch_mps():
            self._import_reported = True
            self.report(node, f"`import torch` does not import `torch.mps` in torch {versions.text(floor)} (the "
                              "project's floor; fixed in 2.1, pytorch/pytorch#100165): `torch.mps` raises "
                              "AttributeError; add `import torch.mps`")

    # ------------------------------------------------------------- guards

    def _guarded(self, node: ast.AST, module: str, member: str) -> bool:
        """Under ``hasattr(..., "member")``, or ``hasattr(torch.backends, "mps")`` (the module itself: the helper
        a fix writes below torch 1.12), or in a ``try`` that catches AttributeError."""
        tree = self.ctx.tree
        owner, _, last = module.rpartition(".")
        asks = (lambda test: _asks_hasattr(test, member)
                or any(self.ctx.qualify(obj) == owner for obj in _hasattr_objects(test, last)))
        child = node
        for parent in tree.ancestors(node):
            cls = type(parent)
            if cls in (ast.If, ast.IfExp, ast.While) and child is not parent.test and asks(parent.test):
                return True
            if cls is ast.BoolOp and any(asks(v) for v in parent.values if v is not child):
                return True
            if cls is ast.Try and child in parent.body and any(_catches(h) for h in parent.handlers):
                return True
            child = parent
        return False

    def _shimmed(self) -> Set[Tuple[str, str]]:
        """The names the file defines itself: ``torch.mps.current_device = lambda: 0``, ``setattr(torch.mps, ...)``."""
        if self._shims is None:
            found: Set[Tuple[str, str]] = set()
            ctx = self.ctx
            for node in ctx.tree.of_type(ast.Attribute):
                if type(node.ctx) is ast.Store and ctx.qualify(node.value) in _MODULES:  # type: ignore[attr-defined]
                    found.add((ctx.qualify(node.value), node.attr))  # type: ignore[arg-type, attr-defined]
            for call in ctx.tree.of_type(ast.Call):
                if type(call.func) is ast.Name and call.func.id == "setattr" and len(call.args) >= 2:  # type: ignore[attr-defined]
                    module = ctx.qualify(call.args[0])  # type: ignore[attr-defined]
                    member = string_value(call.args[1])  # type: ignore[attr-defined]
                    if module in _MODULES and member:
                        found.add((module, member))
            self._shims = found
        return self._shims

    def _version_checked(self, node: ast.AST) -> bool:
        """Under a test of torch's version (``if torch.__version__ >= ...``, ``is_torch_greater_or_equal("2.5")``),
        or in a function a decorator picks by version (``@implement_for("torch", "2.5")``)."""
        for parent in self.ctx.tree.ancestors(node):
            cls = type(parent)
            if cls in (ast.If, ast.IfExp, ast.While) and _VERSION_WORDS.search(self.ctx.text(parent.test)):
                return True
            if cls in (ast.FunctionDef, ast.AsyncFunctionDef) and any(
                    _VERSION_STRING.match(string_value(n) or "") for d in parent.decorator_list for n in ast.walk(d)):
                return True
        return False

    def _imports_torch_mps(self) -> bool:
        for node in self.ctx.tree.of_type(ast.Import, ast.ImportFrom):
            if type(node) is ast.Import and any(a.name.startswith("torch.mps") for a in node.names):  # type: ignore[attr-defined]
                return True
            if type(node) is ast.ImportFrom and not node.level and (  # type: ignore[attr-defined]
                    (node.module or "").startswith("torch.mps")  # type: ignore[attr-defined]
                    or (node.module == "torch" and any(a.name == "mps" for a in node.names))):  # type: ignore[attr-defined]
                return True
        return False

    # ---------------------------------------------------------------- fixes

    def _rename(self, node: ast.AST, module: str, member: str) -> Optional[FixSpec]:
        new = mps_api.RENAMES.get(member)
        if new is None or module != "torch.mps" or type(node) is not ast.Attribute:
            return None
        text = f"{self.ctx.text(node.value)}.{new}"  # type: ignore[attr-defined]
        return FixSpec.safe(f"Use `torch.mps.{new}`", replace(node, text))

    def _is_available_fix(self, node: ast.AST) -> Optional[FixSpec]:
        if type(node) is not ast.Attribute:
            return None
        value = node.value
        if type(value) is not ast.Attribute or self.ctx.qualify(value.value) != "torch":
            return None
        root = self.ctx.text(value.value)
        return FixSpec.safe("Use `torch.backends.mps.is_available`", replace(node, f"{root}.backends.mps.is_available"))


def _asks_hasattr(test: ast.AST, member: str) -> bool:
    return next(_hasattr_objects(test, member), None) is not None


def _hasattr_objects(test: ast.AST, name: str):
    """The objects ``test`` asks ``hasattr(obj, name)`` of."""
    for node in ast.walk(test):
        if type(node) is ast.Call and type(node.func) is ast.Name and node.func.id == "hasattr" \
                and len(node.args) == 2 and string_value(node.args[1]) == name:
            yield node.args[0]


def _catches(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if type(handler.type) is ast.Tuple else [handler.type]
    return any((k.id if type(k) is ast.Name else getattr(k, "attr", "")) in _CATCHES for k in kinds)
