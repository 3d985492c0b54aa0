"""``torch.backends.mps.is_built()`` / ``torch.has_mps`` deciding the device (see ``rules/MPS111.md``).

``is_built()`` says the wheel was compiled with MPS support, which every macOS
wheel is, Intel Macs' and those of macOS < 12.3 included, where the device does
not exist. ``torch.has_mps`` is the deprecated alias of ``is_built``
(``_deprecated_attrs`` in torch/__init__.py). A device choice made from either
picks ``"mps"`` where it cannot run.

Reported: the call (or attribute) in the test of an ``if``/conditional
expression/``while`` whose branch taken when it is true mentions MPS, or as the
whole value of a variable or a ``return`` named for MPS or the device. Not
reported: a test that also asks ``is_available()`` (``is_available() and
is_built()``), code under an ``is_available()`` test (the PyTorch docs'
``if not is_available(): if not is_built(): print(...)`` explains why MPS is
missing), and prints or logs of the value.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from mpslint.analysis.syntax import dotted_name
from mpslint.checks.base import FixSpec, Rule, replace

IS_BUILT = "torch.backends.mps.is_built"
HAS_MPS = "torch.has_mps"
_NAMED = re.compile(r"mps|device|accel|gpu|backend", re.IGNORECASE)
_MPS_NAME = re.compile(r"(^|_)mps($|_)", re.IGNORECASE)


class MpsBuiltNotAvailable(Rule):
    TRIGGERS = ("is_built", "has_mps")

    def visit_Call(self, node: ast.Call) -> None:
        if self.ctx.qualify(node.func) == IS_BUILT:
            self._check(node, self._fix_call(node))
        elif _getattr_has_mps(node):
            self._check(node, None)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "has_mps" and self.ctx.qualify(node) == HAS_MPS:
            self._check(node, self._fix_attribute(node))

    def _check(self, node: ast.AST, fix: Optional[FixSpec]) -> None:
        ctx = self.ctx
        if not self._decides(node) or self._under_availability(node):
            return
        if not isinstance(node, ast.Call) or _getattr_has_mps(node):
            what = "`torch.has_mps` (the same as `torch.backends.mps.is_built()`)"
        else:
            what = f"`{ctx.text(node.func)}()`"
        self.report(node, f"{what} only says this PyTorch was compiled with MPS, as every macOS wheel is: on an Intel "
                          "Mac or macOS < 12.3 it is True and the device does not exist; decide with "
                          "`torch.backends.mps.is_available()`", fix=fix)

    # ------------------------------------------------------------- context

    def _decides(self, node: ast.AST) -> bool:
        """In a test whose true branch mentions MPS, or the whole value of a variable or return named for the device."""
        tree = self.ctx.tree
        child: ast.AST = node
        negated = False
        for parent in tree.ancestors(node):
            cls = type(parent)
            if cls is ast.UnaryOp and type(parent.op) is ast.Not:
                negated = not negated
            elif cls is ast.BoolOp:
                if any(_asks_available(self.ctx, v) for v in parent.values):
                    return False  # `is_available() and is_built()`
            elif cls in (ast.If, ast.IfExp, ast.While):
                if child is not parent.test:
                    return False
                taken = parent.orelse if negated else parent.body
                branch = taken if isinstance(taken, list) else [taken]
                return any(_chooses_mps(b) for b in branch)
            elif cls is ast.Assign or cls is ast.AnnAssign:
                targets = parent.targets if cls is ast.Assign else [parent.target]
                return any(_NAMED.search(dotted_name(t) or "") for t in targets)
            elif cls is ast.Return:
                function = self.ctx.tree.scope_of(parent)
                return bool(_NAMED.search(getattr(function, "name", "")))
            elif cls is ast.Compare or isinstance(parent, (ast.stmt, ast.Call, ast.JoinedStr, ast.Dict, ast.keyword)):
                return False
            child = parent
        return False

    def _under_availability(self, node: ast.AST) -> bool:
        """Below an ``if``/conditional expression that asks ``torch.backends.mps.is_available()``, either way."""
        child: ast.AST = node
        for parent in self.ctx.tree.ancestors(node):
            if type(parent) in (ast.If, ast.IfExp, ast.While) and child is not parent.test \
                    and _asks_available(self.ctx, parent.test):
                return True
            child = parent
        return False

    # ----------------------------------------------------------------- fix

    def _fix_call(self, node: ast.Call) -> Optional[FixSpec]:
        func = node.func
        if node.args or node.keywords or type(func) not in (ast.Attribute, ast.Name):
            return None
        text = self.ctx.text(func)
        if type(func) is ast.Attribute:
            new = text[: len(text) - len("is_built")] + "is_available"
        else:
            return None  # `from torch.backends.mps import is_built`: the import would change too
        return FixSpec.safe("Use `torch.backends.mps.is_available()`", replace(func, new))

    def _fix_attribute(self, node: ast.Attribute) -> Optional[FixSpec]:
        root = dotted_name(node.value)
        if root is None or self.ctx.qualify(node.value) != "torch":
            return None
        return FixSpec.safe("Use `torch.backends.mps.is_available()`",
                            replace(node, f"{root}.backends.mps.is_available()"))


def _asks_available(ctx, test: ast.AST) -> bool:
    return any(type(n) is ast.Call and (ctx.qualify(n.func) or "").endswith("mps.is_available")
               for n in ast.walk(test))


def _getattr_has_mps(node: ast.Call) -> bool:
    """``getattr(torch, "has_mps", False)``."""
    return (type(node.func) is ast.Name and node.func.id == "getattr" and len(node.args) >= 2
            and type(node.args[1]) is ast.Constant and node.args[1].value == "has_mps")


def _chooses_mps(branch: ast.AST) -> bool:
    """The branch names the MPS device: a ``"mps"``/``"mps:0"`` string, or assigns or returns something named for MPS."""
    for node in ast.walk(branch):
        cls = type(node)
        if cls is ast.Constant and isinstance(node.value, str) and re.fullmatch(r"mps(:\d+)?", node.value):
            return True
        if cls is ast.Name and type(node.ctx) is ast.Store and _MPS_NAME.search(node.id):
            return True
        if cls is ast.Return and node.value is not None and _MPS_NAME.search(dotted_name(node.value) or ""):
            return True
    return False
