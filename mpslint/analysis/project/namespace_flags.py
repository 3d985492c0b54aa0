"""Options of a parsed-arguments object that a module reads as its device choice.

``exp_basic.py`` of a project chooses the device from ``self.args.use_gpu``::

    if self.args.use_gpu:
        device = torch.device("cuda:{}".format(self.args.gpu))
    else:
        device = torch.device("cpu")

and the script that imports it sets ``args.use_gpu = torch.cuda.is_available() and args.use_gpu``:
on a Mac the option is False, whatever the choice is rewritten to. A summary lists such options
(``ModuleSummary.device_options``) so MPS103 can report the script's line.

An option counts when an ``if`` tests it positively (alone or in an ``and``), as ``.X`` of a name
spelled like a parsed-arguments object (``args``, ``opt``, ``self.args``, ``self.opt``), and the
``if`` body assigns or returns a CUDA device, or calls ``.cuda()``; an ``if``/``elif`` chain that
mentions MPS already knows the Mac, and does not count.
"""

from __future__ import annotations

import ast
import re
from typing import Iterable, List, Optional, Set

from mpslint.analysis.cuda_devices import assigns_device, is_cuda_device_value

# `config` and `cfg` are left out: in most code they are a model's configuration, not the command line.
NAMESPACES = frozenset({"args", "opt", "opts", "hparams", "options", "flags"})
_OPTION_READ = re.compile(rb"\b(?:" + b"|".join(sorted(n.encode() for n in NAMESPACES)) + rb")\.\w")


def may_read_options(source: bytes) -> bool:
    """Whether a module's text can hold such a choice at all (most modules: no, and no statement is read)."""
    return b"cuda" in source and _OPTION_READ.search(source) is not None


def device_options(statements: Iterable[ast.AST]) -> List[str]:
    """The options the ``if`` statements among ``statements`` read as a CUDA device choice (sorted)."""
    found: Set[str] = set()
    for node in statements:
        if type(node) is not ast.If:
            continue
        options = [name for name in map(namespace_option, _conjuncts(node.test)) if name is not None]  # type: ignore[attr-defined]
        if options and _chooses_cuda(node) and not _mentions_mps(node):  # type: ignore[arg-type]
            found.update(options)
    return sorted(found)


def namespace_option(node: ast.AST) -> Optional[str]:
    """``X`` of ``args.X`` / ``self.args.X`` (a name spelled like a parsed-arguments object), else None."""
    if type(node) is not ast.Attribute:
        return None
    owner = node.value  # type: ignore[attr-defined]
    if type(owner) is ast.Name and owner.id in NAMESPACES:  # type: ignore[attr-defined]
        return node.attr  # type: ignore[attr-defined]
    if type(owner) is ast.Attribute and owner.attr in NAMESPACES and type(owner.value) is ast.Name \
            and owner.value.id == "self":  # type: ignore[attr-defined]
        return node.attr  # type: ignore[attr-defined]
    return None


def _conjuncts(test: ast.AST) -> List[ast.AST]:
    if type(test) is ast.BoolOp and type(test.op) is ast.And:  # type: ignore[attr-defined]
        return [part for value in test.values for part in _conjuncts(value)]  # type: ignore[attr-defined]
    return [test]


def _chooses_cuda(node: ast.If) -> bool:
    if assigns_device(node):
        return True
    for statement in node.body:
        for inner in ast.walk(statement):
            if type(inner) is ast.Call and type(inner.func) is ast.Attribute:  # type: ignore[attr-defined]
                method = inner.func.attr  # type: ignore[attr-defined]
                if method == "cuda" or (method == "to" and inner.args and is_cuda_device_value(inner.args[0])):  # type: ignore[attr-defined]
                    return True
    return False


def _mentions_mps(node: ast.If) -> bool:
    for inner in ast.walk(node):
        cls = type(inner)
        if cls is ast.Constant and isinstance(inner.value, str) and "mps" in inner.value:  # type: ignore[attr-defined]
            return True
        if cls is ast.Attribute and "mps" in inner.attr:  # type: ignore[attr-defined]
            return True
        if cls is ast.Name and "mps" in inner.id:  # type: ignore[attr-defined]
            return True
    return False
