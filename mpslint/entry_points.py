"""Per entry point (a script, a notebook): can it reach MPS, or what blocks it.

Entry points are notebooks, files with ``if __name__ == "__main__":`` and scripts that run at
their top level (``entry_points`` says which are left out: a package module's self-test that
the run imports, a script that another file imports).

Static, from the findings a run leaves and the project's imports. An entry point is
blocked by a blocking finding (``mpslint.blocking``) left in its own file or in any
project module it imports, directly or through other project modules (found as the
project model finds them: ``analysis/project/layout.py``); the line names the module,
the finding's line and where the entry point imports it. With nothing blocking, it can
reach MPS when it chooses a device that can be MPS (the device picker, an MPS or
accelerator test) or follows its tensors' devices (``x.device``), or when it imports
a device (or a model placed on one) from a project module that chooses one: a script
that takes ``DEVICE`` (or ``get_device()``) from ``utils.py`` runs where ``utils.py``
puts it, and one that uses a class or function of a module that binds its device when
imported (``TD3.TD3(...)``) runs there too. ``nn.DataParallel`` blocks nothing
(``blocking.blocks_finding``): with no CUDA device it calls the model where it is. Which imported names are devices is the project model's answer
(``facts.DEVICE``/``DEVICE_TENSOR`` in the module's summary); a module that only mentions MPS gives its importers no device. Otherwise it
chooses no device. ``mpslint verify --simulate`` is the proof.

Imported modules that the run did not check count for the device choice (their text
is read) but bring no findings: nothing was checked there. The fix run's summary
(``output/entry_points.py``) and ``mpslint report`` (``report/collect.py``) both ask
``entry_points`` here.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from collections import deque
from typing import Deque, Dict, List, Optional, Sequence, Tuple

from mpslint.blocking import blocks_finding
from mpslint.diagnostic import Diagnostic
from mpslint.writing import read_file

_MAIN = re.compile(r"^if\s+__name__\s*==\s*['\"]__main__['\"]\s*:", re.MULTILINE)
# A device choice that knows MPS (the picker, an MPS or accelerator test)...
_CHOOSES_MPS = re.compile(r"pick_device\(|\bmps\b|torch\.accelerator|current_accelerator")
# ... or, in the entry point itself, code that follows a tensor's or a model's device (`x.device`): it runs where
# its inputs are. A module that only follows devices chooses none for the scripts that import it.
_FOLLOWS_DEVICE = re.compile(r"\.device\b")
NO_CHOICE, FOLLOWS, CHOOSES = 0, 1, 2
# `from utils.device import DEVICE` names a module, not a device: the module it names is followed instead.
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from|import)[ \t][^\n]*", re.MULTILINE)
# A statement at column 0 that may run code when the file runs: a loop or a call (`main()`, `train(model)`).
_TOP_LEVEL_RUN = re.compile(r"^(?:for|while|async\s+for)\b|^[A-Za-z_][\w.]*\(", re.MULTILINE)
# What library modules call at their top level too: path, warnings, logging and environment set-up.
_SET_UP = frozenset({"sys", "os", "warnings", "logging", "logger", "log", "_logger", "torch", "np", "numpy",
                     "random", "matplotlib", "plt", "mpl", "__all__", "setattr", "register", "atexit"})
# Modules whose `__main__` block is the program a package ships, even where the package imports them.
_PROGRAM_NAMES = frozenset({"train", "test", "main", "run", "eval", "evaluate", "inference", "infer", "demo",
                            "predict", "finetune", "launch", "app", "cli", "sample", "generate", "__main__"})
_READS_ARGUMENTS = re.compile(r"\bsys\.argv\b|\bargparse\b|\bparse_args\(|\bmain\(|\bcli\(|\bfire\.Fire\(")
MAX_MODULES = 2000  # imported project modules followed from one entry point (a bound for huge monorepos)
MAX_KEPT = 20  # blockers kept per entry point (an entry point importing a whole library could list thousands)


def is_entry_point(display: str, text: Optional[str]) -> bool:
    """A notebook, or a file with a top-level ``if __name__ == "__main__":`` block."""
    if display.endswith(".ipynb"):
        return True
    return text is not None and "__main__" in text and bool(_MAIN.search(text))


def is_script(display: str, text: Optional[str]) -> bool:
    """A file with no ``__main__`` block that runs at its top level: a loop, or a call other than set-up."""
    if text is None or not display.endswith(".py") or not _TOP_LEVEL_RUN.search(text):
        return False
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    for stmt in module.body:
        if type(stmt) in (ast.For, ast.While, ast.AsyncFor):
            return True
        if type(stmt) is ast.Expr and type(stmt.value) is ast.Call:
            root = _call_root(stmt.value.func)
            if root and root not in _SET_UP and not root.startswith("_"):  # `_sym_db.Register(...)`: generated
                return True
    return False


def _call_root(func: ast.AST) -> str:
    while type(func) is ast.Attribute:
        func = func.value  # type: ignore[attr-defined]
    return func.id if type(func) is ast.Name else ""  # type: ignore[attr-defined]


def device_choice(text: Optional[str]) -> int:
    """CHOOSES: the code chooses a device that can be MPS; FOLLOWS: it only follows a tensor's device; NO_CHOICE."""
    if text is None:
        return NO_CHOICE
    code = _IMPORT_LINE.sub("", text)
    if _CHOOSES_MPS.search(code):
        return CHOOSES
    return FOLLOWS if _FOLLOWS_DEVICE.search(code) else NO_CHOICE


@dataclass(frozen=True)
class Unit:
    """One file of the run, as the run leaves it."""

    display: str
    text: Optional[str]  # the text after the run (None: read it from ``path`` on disk)
    remaining: Sequence[Diagnostic]
    chooses: Optional[int] = None  # device_choice of that text, where the caller knows it and not the text
    path: Optional[str] = None  # the file on disk, where ``display`` is not its path from here


@dataclass(frozen=True)
class Blocker:
    code: str
    module: str  # the file holding the finding, as the run shows it
    row: int
    cell: Optional[int]
    message: str
    imported_at: Optional[str] = None  # where the entry point imports that module ("line 3", "cell 2 line 1")

    def where(self, entry: str) -> str:
        place = f"cell {self.cell} line {self.row}" if self.cell else f"line {self.row}"
        if self.module != entry:
            place = f"{self.module} {place}"
        return place


@dataclass(frozen=True)
class EntryPoint:
    display: str
    reaches: bool
    blockers: Tuple[Blocker, ...] = ()  # the first MAX_KEPT: its own first, then the nearest modules'
    device_from: Optional[str] = None  # the imported module that chooses its device (None: itself, or none)
    chooses: bool = False  # some module (itself or an imported one) chooses a device that can be MPS
    blocker_count: int = 0  # every blocking finding, kept or not


@dataclass
class _Module:
    display: str
    path: str
    text: Optional[str]
    remaining: Sequence[Diagnostic] = ()
    chooses: Optional[int] = None
    checked: bool = True
    imports: Optional[List[Tuple[str, str]]] = None  # (file, ""), resolved once from its summary


def entry_points(units: Sequence[Unit]) -> List[EntryPoint]:
    """Every entry point among ``units``, in the order given.

    An entry point is a notebook; a file with a ``__main__`` block, unless it is a module of a package that
    another file of the run imports (its ``__main__`` block is a self-test: ``models/resnet.py``); or a script
    that runs at its top level (``is_script``) and that no file of the run imports.
    The run's packages count as installed: ``examples/demo.py`` importing ``torchdiffeq`` reaches the
    ``torchdiffeq/`` package the run checks, as it does once the project is installed.
    """
    modules: Dict[str, _Module] = {}
    order = []
    for unit in units:
        path = _real(unit.path or unit.display)
        text = unit.text if unit.text is not None else _read(path)
        modules[path] = _Module(unit.display, path, text, unit.remaining, unit.chooses)
        order.append(modules[path])
    main = [m for m in order if is_entry_point(m.display, m.text)]
    scripts = [m for m in order if not m.display.endswith(".ipynb") and m not in main and is_script(m.display, m.text)]
    roots = _package_roots(order)
    # the modules that may be imported by another file of the run: scripts, and package modules with __main__
    wanted = scripts + [m for m in main if not m.display.endswith(".ipynb") and _in_package(m.path)]
    imported = _imported_by_run(order, wanted, roots) if wanted else set()
    chosen = {id(m) for m in main + scripts if m.path not in imported or (m in main and _a_program(m))}
    return [_status(module, modules, roots) for module in order if id(module) in chosen]


def _imported_by_run(order: Sequence["_Module"], wanted: Sequence["_Module"], roots: Tuple[str, ...]) -> set:
    """The files of ``wanted`` that another Python file of the run imports at its top level.

    Only files with an import line that may name one of them are resolved: its dotted name, or a relative
    import with its name (a run over a large tree resolves the imports of a few files, not of every one)."""
    from mpslint.analysis.project import layout

    dotted = {layout.locate(m.path)[1] for m in wanted}
    names = {name.rsplit(".", 1)[-1] for name in dotted}
    absolute = re.compile(r"(?<![\w.])(?:%s)(?![\w])" % "|".join(re.escape(n) for n in sorted(dotted)))
    relative = re.compile(r"^\s*from\s+\..*\b(?:%s)\b" % "|".join(re.escape(n) for n in sorted(names)))
    parents = [name.rsplit(".", 1) for name in sorted(dotted) if "." in name]  # `from models import net`
    if parents:
        relative = re.compile(relative.pattern + "|" + "|".join(
            r"^\s*from\s+%s\s+import\b.*\b%s\b" % (re.escape(a), re.escape(b)) for a, b in parents))
    paths = {m.path for m in wanted}
    found = set()
    for module in order:
        if not module.display.endswith(".py") or module.text is None:
            continue
        lines = _IMPORT_LINE.findall(module.text)
        if not any(absolute.search(line) or relative.search(line) for line in lines):
            continue
        found.update(path for path, _ in _imports_of(module, False, roots) if path in paths and path != module.path)
    return found


def _a_program(module: "_Module") -> bool:
    """A package module's ``__main__`` block that runs the program, not a self-test: the module is named like
    one (``basicsr/train.py``, which the package star-imports) or its block reads the command line."""
    stem = os.path.splitext(os.path.basename(module.path))[0]
    if stem in _PROGRAM_NAMES:
        return True
    match = _MAIN.search(module.text or "")
    return match is not None and bool(_READS_ARGUMENTS.search(module.text[match.end():]))  # type: ignore[index]


def _in_package(path: str) -> bool:
    return os.path.isfile(os.path.join(os.path.dirname(path), "__init__.py"))


def _package_roots(order: Sequence["_Module"]) -> Tuple[str, ...]:
    """The folders holding the top-level packages of the run's files (where an installed project's are)."""
    from mpslint.analysis.project import layout

    roots: Dict[str, None] = {}
    for module in order:
        if module.display.endswith(".py") and _in_package(module.path):
            roots[layout.locate(module.path)[0]] = None
    return tuple(roots)


REACHES = "can reach MPS"
NO_DEVICE = "no blocker left; neither it nor a module it imports chooses a device"


def said(entry: EntryPoint, max_blockers: int = 3) -> str:
    """One line on an entry point, as the fix run's summary and the report say it."""
    if entry.blockers:
        listed = "; ".join(_where(b, entry.display) for b in entry.blockers[:max_blockers])
        extra = entry.blocker_count - min(max_blockers, len(entry.blockers))
        return f"blocked by {listed}" + (f" and {extra} more" if extra > 0 else "")
    if entry.reaches:
        return f"{REACHES} (its device is chosen in {entry.device_from})" if entry.device_from else REACHES
    return NO_DEVICE


def _where(blocker: Blocker, entry: str) -> str:
    message = blocker.message
    if len(message) > 70:
        message = message[:69] + "…"
    imported = f", imported at {blocker.imported_at}" if blocker.imported_at else ""
    return f"{blocker.code} ({blocker.where(entry)}: {message}{imported})"


def _status(entry: _Module, modules: Dict[str, _Module], roots: Tuple[str, ...] = ()) -> EntryPoint:
    blockers: List[Blocker] = [_blocker(d, entry.display) for d in _sorted_blockers(entry.remaining)]
    device_from: Optional[str] = None
    own = _choice(entry) != NO_CHOICE
    for module, imported_at in _imported(entry, modules, roots):
        if module.checked:
            blockers.extend(_blocker(d, module.display, imported_at) for d in _sorted_blockers(module.remaining))
    if not own:
        for path in _device_sources(entry, roots):
            module = modules.get(path) or modules.setdefault(path, _Module(_shown(path), path, _read(path), checked=False))
            if _choice(module) == CHOOSES:
                device_from = module.display
                break
    chooses = own or device_from is not None
    return EntryPoint(entry.display, not blockers and chooses, tuple(blockers[:MAX_KEPT]), device_from, chooses,
                      len(blockers))


def _imported(entry: _Module, modules: Dict[str, _Module], roots: Tuple[str, ...]) -> List[Tuple[_Module, str]]:
    """The project modules ``entry`` imports, nearest first, each with where ``entry`` starts the chain to it."""
    seen = {entry.path}
    order: List[Tuple[_Module, str]] = []
    queue: Deque[Tuple[_Module, Optional[str]]] = deque([(entry, None)])
    while queue and len(order) < MAX_MODULES:
        module, first = queue.popleft()
        for path, where in _imports_of(module, first is None, roots):
            if path in seen:
                continue
            seen.add(path)
            target = modules.get(path)
            if target is None:
                target = modules[path] = _Module(_shown(path), path, _read(path), checked=False)
            hop = first or where
            order.append((target, hop))
            queue.append((target, hop))
    return order


def _device_sources(entry: _Module, run_roots: Tuple[str, ...] = ()) -> List[str]:
    """The project modules that define a device, or something placed on one, that the entry point imports by name.

    ``from pkg.dev import DEVICE``, ``from utils import get_device``, ``import utils`` then ``utils.DEVICE``,
    ``from train import model`` (a model placed there): names whose value (or return) the project model's
    summary says is a device or lives on one, followed through re-exports.
    Importing a module that merely mentions MPS (an ``empty_cache`` helper) gives the entry point no device.
    """
    from mpslint.analysis.project import layout
    from mpslint.analysis.project.facts import DEVICE, DEVICE_TENSOR
    from mpslint.analysis.project.model import roots_of, shared
    from mpslint.analysis.syntax import dotted_name

    if entry.text is None or not os.path.isfile(entry.path):
        return []
    dotted, is_package, roots = roots_of(entry.path)
    roots = _with(roots, run_roots)
    wanted: List[Tuple[str, str]] = []  # (module, name)
    aliases: Dict[str, str] = {}  # local name -> the module it is bound to
    trees = [tree for _, tree in _python_parts(entry.display, entry.text)]
    for tree in trees:
        for node in ast.walk(tree):
            if type(node) is ast.ImportFrom:
                base = layout.absolute(dotted, is_package, node.level, node.module or "")
                if base is not None:
                    for alias in node.names:
                        wanted.append((base, alias.name))
                        aliases[alias.asname or alias.name] = f"{base}.{alias.name}"  # a submodule, if it is one
            elif type(node) is ast.Import:
                for alias in node.names:
                    local = alias.asname or alias.name.split(".", 1)[0]
                    aliases[local] = alias.name if alias.asname else local
    for tree in trees:
        for node in ast.walk(tree):
            if type(node) is ast.Attribute and type(node.ctx) is ast.Load:
                parts = (dotted_name(node) or "").split(".")
                if len(parts) >= 2 and parts[0] in aliases:
                    wanted.append((".".join([aliases[parts[0]], *parts[1:-1]]), parts[-1]))
    found: List[str] = []
    project = shared()
    for module, name in dict.fromkeys(wanted):
        for _ in range(8):  # re-exports followed this far
            path = layout.find(roots, module)
            summary = project.summary_at(path) if path is not None else None
            if summary is None:
                break
            if {summary.values.get(name), summary.functions.get(name)} & {DEVICE, DEVICE_TENSOR}:
                found.append(_real(path))  # type: ignore[arg-type]
                break
            if _defines_code(summary, name) and DEVICE in summary.values.values():
                # `TD3.TD3(...)` of a module that binds its device when imported: the class runs there
                found.append(_real(path))  # type: ignore[arg-type]
                break
            spec = summary.imports.get(name)
            if spec is None or spec[0] != "from":
                break
            here, here_package, _ = roots_of(path)  # type: ignore[arg-type]
            module, name = layout.absolute(here, here_package, spec[1], spec[2]) or "", spec[3]
    return list(dict.fromkeys(found))


def _defines_code(summary, name: str) -> bool:
    """``name`` is a function or a class with methods that the module itself defines."""
    if name in summary.functions:
        return True
    prefix = name + "."
    return any(key.startswith(prefix) for key in summary.functions)


def _with(roots: Tuple[str, ...], more: Tuple[str, ...]) -> Tuple[str, ...]:
    return roots + tuple(r for r in more if r not in roots)


def _imports_of(module: _Module, entry: bool, run_roots: Tuple[str, ...] = ()) -> List[Tuple[str, str]]:
    """(file, where) of each project module ``module`` imports, with the packages above it.

    The entry point's own imports are read from its code, anywhere in it (a ``main()`` importing its trainer
    counts), with their lines; a module it reaches is read from its summary in the project model (cached
    by content: no parse on a warm run), whose imports are the top-level ones.
    """
    if module.imports is not None and not entry:
        return module.imports
    from mpslint.analysis.project import layout
    from mpslint.analysis.project.model import roots_of, shared

    found: List[Tuple[str, str]] = []
    if module.text is None or not os.path.isfile(module.path):
        return found
    dotted, is_package, roots = roots_of(module.path)
    roots = _with(roots, run_roots)
    names: List[Tuple[str, str]] = []  # (absolute dotted name, where)
    if entry:
        for cell, tree in _python_parts(module.display, module.text):
            for node in ast.walk(tree):
                where = f"cell {cell} line {getattr(node, 'lineno', 0)}" if cell is not None \
                    else f"line {getattr(node, 'lineno', 0)}"
                if type(node) is ast.Import:
                    names.extend((alias.name, where) for alias in node.names)
                elif type(node) is ast.ImportFrom:
                    base = layout.absolute(dotted, is_package, node.level, node.module or "")
                    if base is not None:
                        names.append((base, where))
                        names.extend((f"{base}.{alias.name}", where) for alias in node.names if alias.name != "*")
    else:
        summary = shared().summary_at(module.path)
        if summary is not None:
            for spec in summary.imports.values():
                if spec[0] == "import":
                    names.append((spec[1], ""))
                    continue
                base = layout.absolute(dotted, is_package, spec[1], spec[2])
                if base is not None:
                    names += [(base, ""), (f"{base}.{spec[3]}", "")]
            for level, name in summary.stars:
                base = layout.absolute(dotted, is_package, level, name)
                if base is not None:
                    names.append((base, ""))
    for name, where in names:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):  # `import a.b.c` runs a, a.b and a.b.c
            path = layout.find(roots, ".".join(parts[:end]))
            if path is not None:
                found.append((_real(path), where))
    if not entry:
        module.imports = found
    return found


def _python_parts(display: str, text: str) -> List[Tuple[Optional[int], ast.AST]]:
    """The parsed code of a file (cell None) or of each code cell of a notebook."""
    if not display.endswith(".ipynb"):
        try:
            return [(None, ast.parse(text))]
        except (SyntaxError, ValueError):
            return []
    from mpslint.notebook.document import Notebook, NotebookError
    from mpslint.notebook.ipython import as_python
    from mpslint.notebook.lint import python_sources

    try:
        sources = python_sources(Notebook.parse(text))
    except NotebookError:
        return []
    parts: List[Tuple[Optional[int], ast.AST]] = []
    for number, source in sources:
        try:
            parts.append((number, ast.parse(as_python(source, parse=False).text)))
        except (SyntaxError, ValueError):
            continue
    return parts


def _choice(module: _Module) -> int:
    if module.chooses is None:
        module.chooses = device_choice(module.text)
    return module.chooses


def _sorted_blockers(remaining: Sequence[Diagnostic]) -> List[Diagnostic]:
    return sorted((d for d in remaining if blocks_finding(d.code, d.message)), key=Diagnostic.sort_key)


def _blocker(d: Diagnostic, module: str, imported_at: Optional[str] = None) -> Blocker:
    return Blocker(d.code, module, d.location.row, d.cell or None, d.message.split(";", 1)[0], imported_at)


def _read(path: str) -> Optional[str]:
    try:
        data = read_file(path)  # a FIFO named like a module is not read: that read would never end
    except OSError:
        return None
    try:
        return data.decode("utf-8-sig")  # most files: a plain decode is enough for the imports and the device
    except UnicodeDecodeError:
        pass
    from mpslint.source import SourceText

    try:
        return SourceText.decode(data).text  # a coding cookie
    except Exception:  # noqa: BLE001 - an undecodable module says nothing about the device
        return None


def _real(path: str) -> str:
    # abspath, not realpath: layout finds modules under roots made from these same paths, and resolving
    # every path's symlinks costs more than the rest of the summary on a large tree.
    return os.path.abspath(path)


def _shown(path: str) -> str:
    """An imported module's path as the run shows paths: relative to the working directory where it can be."""
    from mpslint.files import shown

    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        relative = path
    return shown(relative.replace(os.sep, "/") if not relative.startswith("..") else path)
