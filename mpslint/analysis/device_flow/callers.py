"""What callers in other modules pass to a top-level function's parameter.

A helper module's metric (``def accuracy(output, labels): ... .double()``) is
called only from the training script (``from utils import accuracy``, then
``accuracy(output[idx_train], labels[idx_train])`` with the model's output).
In the helper's own file nothing says where ``output`` lives; in the script it
is on the device. The modules that can import the helper by a plain name are
the ones next to it and at its package root (a script's own directory is on
``sys.path``): those files that import the function from this module are read
(as text, with ``ast``; nothing is imported or run), and their calls'
arguments evaluated with their own ``DeviceFlow``.

Only one level: a caller's own parameters are not followed into its callers.
A file whose answer came from callers depends on their whole text, which the
project model's summaries do not capture, so it is never served from the
cache (``depends`` gets a token no summary digest equals).
"""

from __future__ import annotations

import ast
import os
from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

from mpslint.analysis.project import layout
from mpslint.analysis.project.model import roots_of
from mpslint.analysis.tree import Tree

MAX_FILES = 64  # .py files looked at per directory; a larger directory is not searched
MAX_BYTES = 1_000_000
NOT_CACHED = "callers-in-other-modules"

MEMO = 256  # files parsed, kept per (path, mtime, size) for a run; a language server forgets them past this
FLOWS = 8  # callers' device flows kept: a helper module's functions are mostly called from one script

_active = [0]  # callers being evaluated: their own parameters are not followed further
_parsed: Dict[Tuple[str, int, int], Optional[Tuple[ast.Module, str]]] = {}
_flows: "OrderedDict[Tuple[str, int, int], object]" = OrderedDict()


def _candidates(path: str) -> List[str]:
    _, _, roots = roots_of(path)
    found: List[str] = []
    for directory in dict.fromkeys([os.path.dirname(path), *roots]):
        try:
            names = sorted(n for n in os.listdir(directory) if n.endswith(".py"))
        except OSError:
            continue
        if len(names) > MAX_FILES:
            continue
        found.extend(os.path.join(directory, n) for n in names if os.path.join(directory, n) != path)
    return found


def _parse(path: str) -> Optional[Tuple[ast.Module, str]]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in _parsed:
        if len(_parsed) >= MEMO:
            _parsed.clear()
        result = None
        if st.st_size <= MAX_BYTES:
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
                result = (ast.parse(text), text)
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
                result = None
        _parsed[key] = result
    return _parsed[key]


def _declares_all(module: ast.Module) -> bool:
    return any(type(node) in (ast.Assign, ast.AugAssign, ast.AnnAssign)
               and any(type(t) is ast.Name and t.id == "__all__"
                       for t in (node.targets if type(node) is ast.Assign else [node.target]))  # type: ignore[attr-defined]
               for node in module.body)


def _local_names(module: ast.Module, caller: str, callee: str, function: str, starred: bool) -> List[str]:
    """The names ``caller`` binds to ``function`` of the module file ``callee`` (``from utils import f as g``;
    ``from utils import *`` where ``starred``: the callee exports it)."""
    dotted, is_package, roots = roots_of(caller)
    names = []
    for node in module.body:
        if type(node) in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) and node.name == function:  # type: ignore[attr-defined]
            return []  # its own `function`: its calls are not the callee's
        if type(node) is not ast.ImportFrom:
            continue
        target = layout.absolute(dotted, is_package, node.level or 0, node.module or "")
        if target is None or layout.find(roots, target) != callee:
            continue
        for alias in node.names:
            if alias.name == function or (alias.name == "*" and starred):
                names.append(alias.asname or function)
    return names


def _flow(ctx, path: str, module: ast.Module, text: str, factory):
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (path, st.st_mtime_ns, st.st_size)
    flow = _flows.get(key)
    if flow is None:
        other = type(ctx)(Tree(module, text), path, ctx.settings)
        flow = _flows[key] = other.analysis(factory)
        while len(_flows) > FLOWS:
            _flows.popitem(last=False)
    else:
        _flows.move_to_end(key)
    return flow


def passed(ctx, flow_class, function: str, position: Optional[int], keyword: str) -> Optional[list]:
    """The argument expressions' kinds the other modules' calls pass for this parameter, as ``flow_class``
    (``DeviceFlow``, given: it imports this module) reads them; None: none found, or some call passes it in a way
    that cannot be read (then nothing is claimed)."""
    where = ctx.project.path  # the file read (``ctx.path`` is the path as displayed)
    if _active[0] or not where or not where.endswith(".py"):
        return None
    try:
        callee = os.path.abspath(where)
    except (OSError, ValueError):
        return None
    starred = not function.startswith("_") and not _declares_all(ctx.module)
    kinds: list = []
    _active[0] += 1
    try:
        for path in _candidates(callee):
            parsed = _parse(path)
            if parsed is None or function not in parsed[1]:
                continue
            module, text = parsed
            names = _local_names(module, path, callee, function, starred)
            if not names:
                continue
            ctx.project.depends_on(path, NOT_CACHED)
            flow = _flow(ctx, path, module, text, flow_class)
            if flow is not None:
                for name in names:
                    for call, is_method in flow.calls.get(name, ()):
                        if is_method:
                            continue
                        value = None
                        unpacked = any(type(a) is ast.Starred for a in call.args)  # `f(*pair)`: positions unknown
                        if position is not None and position < len(call.args) and not unpacked:
                            value = call.args[position]
                        for item in call.keywords:
                            if item.arg == keyword:
                                value = item.value
                        if value is None:
                            return None
                        kinds.append(flow.kind(value))
    finally:
        _active[0] -= 1
    return kinds or None
