"""Who calls a module's function, and what they pass: facts that flow from call sites into parameters.

``accuracy(output, labels)`` in ``utils.py`` works on whatever ``train.py``
hands it. The callers looked at are the modules next to the callee: those in
its own directory and in its root's (where the scripts that import a helper
module live). A module is parsed for its calls of that function
(``summary.calls_to``) only when its text holds both the callee module's name
and the function's: asking costs a substring search of those directories'
files, each read once per process, and summaries (cached for every importer)
stay as small as they were.

What a checked file learnt this way is recorded as dependencies under keys of
their own (``CALLERS`` in the key): per directory, which of its modules name the
callee's module (only those can import it), and the bytes of each such module
that names the function too (a warm run reads them; it parses nothing). A cached result is
reused while both are unchanged: a new caller, or a changed call, re-checks
the callee.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import stat
import warnings
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from mpslint.analysis.project import facts, layout

if TYPE_CHECKING:  # imported where a caller is parsed: a warm run only checks digests (see store.py)
    from mpslint.analysis.project.summary import ModuleSummary

CALLERS = "\0callers\0"  # in a dependency key: not a file's path, a question about callers
_CONTENT = "=content"  # the question about a calling module's bytes (no module stem holds "=")
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")

Passed = List[Optional[str]]


def find(project, where, function: str) -> Tuple[Passed, List[str], Dict[str, str]]:
    """(per positional argument, what the callers pass (``facts.some_call``); the calling files; the dependencies)."""
    depends: Dict[str, str] = {}
    agreed: Optional[Passed] = None
    files: List[str] = []
    stem = _stem(where.path, where.dotted)
    for directory in sorted(set(where.roots) | {os.path.dirname(where.path)}):
        # Only a module whose text names the callee's module can import it (`from .utils import f`).
        mentions = _mentions(project, directory, stem)
        depends[directory + CALLERS + stem] = _digest(mentions)
        for path in mentions:
            if path == where.path:
                continue  # calls in the file itself are the device flow's (analysis/device_flow)
            passed = _passed(project, path, where.path, where.dotted, function)
            depends[path + CALLERS + _CONTENT] = _content(project, path)
            if passed is None:
                continue
            files.append(path)
            if agreed is None:
                agreed = list(passed)
            else:
                length = max(len(agreed), len(passed))
                agreed = [facts.some_call(_at(agreed, i), _at(passed, i)) for i in range(length)]
    return agreed or [], files, depends


def digest(project, key: str) -> str:
    """The digest of a dependency recorded by ``find``, as the files are now."""
    parts = key.split(CALLERS)
    if len(parts) == 2 and parts[1] == _CONTENT:
        return _content(project, parts[0])
    if len(parts) == 2:
        return _digest(_mentions(project, parts[0], parts[1]))
    return "unknown"


def source_of(key: str) -> Tuple[str, str]:
    """What the digest of a dependency recorded by ``find`` is computed from: ("file", a caller) or
    ("directory", the directory whose modules were searched)."""
    parts = key.split(CALLERS)
    if len(parts) == 2 and parts[1] == _CONTENT:
        return "file", parts[0]
    return "directory", parts[0]


def _content(project, path: str) -> str:
    """A caller's bytes, digested: checking it again costs a read, not a parse (an edit that leaves its
    calls alone re-checks the callee too; calls change much less often than files are checked)."""
    return hashlib.blake2b(_text(project, path), digest_size=12).hexdigest()


def _stem(path: str, dotted: str) -> str:
    return dotted.rsplit(".", 1)[-1] if dotted else os.path.splitext(os.path.basename(path))[0]


def _at(passed: Passed, i: int) -> Optional[str]:
    return passed[i] if i < len(passed) else None


def _digest(value: object) -> str:
    return hashlib.blake2b(json.dumps(value).encode(), digest_size=12).hexdigest()


_INDEX_AFTER = 8  # questions about one directory before its modules' words are indexed


def _mentions(project, directory: str, stem: str) -> List[str]:
    """The modules of ``directory`` (sorted) whose text holds the word ``stem``.

    The first questions about a directory search its modules' bytes; a directory asked about more often
    (a flat package whose every module asks about its own helpers) gets an index of each module's words,
    built once, so the cost stays linear in the directory's size whatever the number of questions.
    """
    index = project.indexes.get(directory)
    if index is None:
        try:
            paths = sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".py"))
        except OSError:
            return []
        asked = project.indexes[directory] = [0, paths]
        index = asked
    if type(index) is dict:
        found = sorted(index.get(stem.encode(), ()))
        project.steps += 1 + len(found)
        return found
    index[0] += 1
    paths = index[1]
    project.steps += len(paths)  # each module's text searched, or indexed (what tests/test_scaling.py counts)
    if index[0] > _INDEX_AFTER:
        words: Dict[bytes, set] = {}
        for path in paths:
            for word in set(_WORD.findall(_text(project, path))):
                words.setdefault(word, set()).add(path)
        project.indexes[directory] = words
        return sorted(words.get(stem.encode(), ()))
    word = stem.encode()
    return [path for path in paths if _has_word(_text(project, path), word)]


def _has_word(text: bytes, word: bytes) -> bool:
    """Whether ``word`` occurs in ``text`` as a whole identifier (a regular expression per word would cost
    more to compile than the search: each question asks about another word)."""
    at, length = text.find(word), len(text)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or text[at - 1] not in _IDENTIFIER) and (end == length or text[end] not in _IDENTIFIER):
            return True
        at = text.find(word, at + 1)
    return False


_IDENTIFIER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _text(project, path: str) -> bytes:
    """A module's bytes, read once per process (the modules of the few directories callers are looked for in)."""
    found = project.texts.get(path)
    if found is None:
        try:
            # Only a regular file: a FIFO named like a module would block the read forever.
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise OSError(path)
            with open(path, "rb") as handle:
                found = handle.read()
        except OSError:
            found = b""
        project.texts[path] = found
    return found


def _passed(project, path: str, callee: str, callee_dotted: str, function: str) -> Optional[Passed]:
    """What the module at ``path`` passes to ``function`` of the module at ``callee``; None: it calls it not."""
    data = _text(project, path)
    if function.encode() not in data:
        return None
    key = (path, function)
    calls = project.calls.get(key)
    if calls is None:
        calls = project.calls[key] = _calls(_tree(project, path, data), data, function)
    if not calls:
        return None
    header = _header(project, path, data)
    if header is None:
        return None
    root, dotted, is_package = layout.locate(path)
    here = os.path.dirname(path)
    roots = (root,) if here == root else (root, here)
    for name, passed in calls.items():
        module, _, called = name.rpartition(".")
        entry = header.imports.get(module or name)
        if entry is None:
            if not module and _star_brings(project, header, dotted, is_package, roots, callee, callee_dotted, name):
                return list(passed)
            continue
        if module:
            target = entry[1] if entry[0] == "import" else _joined(layout.absolute(dotted, is_package, entry[1], entry[2]), entry[3])
        else:
            target = layout.absolute(dotted, is_package, entry[1], entry[2])
        if target is not None and _names(target, roots, callee, callee_dotted):
            return list(passed)
    return None


def _star_brings(project, header, dotted: str, is_package: bool, roots: Tuple[str, ...], callee: str,
                 callee_dotted: str, function: str) -> bool:
    """``from utils import *`` in the caller names the callee's module, and that module exports ``function``
    (its ``__all__``, else its public top-level names)."""
    for level, module in header.stars:
        target = layout.absolute(dotted, is_package, level, module)
        if target is not None and _names(target, roots, callee, callee_dotted):
            names = _header(project, callee, _text(project, callee))
            return names is not None and function in names.exported()
    return False


_TREES_KEPT = 4  # parsed callers kept: one module is often asked about several functions in a row


def _tree(project, path: str, data: bytes) -> Optional[ast.Module]:
    """The caller's ``ast`` (None: Python cannot read it), parsed once while it is among the last few asked."""
    trees = project.trees
    if path in trees:
        trees[path] = trees.pop(path)  # most recently used last
        return trees[path]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        module = None
    if len(trees) >= _TREES_KEPT:
        del trees[next(iter(trees))]
    trees[path] = module
    return module


def _header(project, path: str, data: bytes) -> Optional[ModuleSummary]:
    """The caller's imports and names (``summarize(facts=False)``): all that saying which module a call's
    name comes from needs, without the facts of every function in it."""
    if path not in project.headers:
        from mpslint.analysis.project.summary import summarize

        module = _tree(project, path, data)
        project.headers[path] = summarize(module, facts=False) if module is not None else None
    return project.headers[path]


def _calls(module: Optional[ast.Module], data: bytes, function: str) -> Dict[str, Passed]:
    if module is None:
        return {}
    from mpslint.analysis.project.summary import calls_to

    try:
        return calls_to(module, data, function)
    except RecursionError:
        return {}


def _joined(package: Optional[str], name: str) -> Optional[str]:
    return f"{package}.{name}" if package else None


def _names(target: str, roots: Tuple[str, ...], callee: str, callee_dotted: str) -> bool:
    """The module an import names is the callee: found there, or (not found in the caller's roots, as in a
    copy of part of a repository) named by the same dotted path ending."""
    found = layout.find(roots, target)
    if found is not None:
        return os.path.realpath(found) == os.path.realpath(callee)
    return target == callee_dotted or target.endswith("." + callee_dotted)
