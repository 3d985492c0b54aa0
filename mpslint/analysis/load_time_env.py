"""Environment variables a script sets for PyTorch's MPS backend, and whether torch is imported yet when it does.

PyTorch reads its MPS variables once per process from C++ (``getenv`` into a
``static``), so an assignment counts only if it runs before that read. The
fallback switch is read while ``import torch`` loads the library; the others
the first time their MPS subsystem is used, which is never before the import.
An assignment before the script's first torch import therefore always takes
effect, one after it never does for the fallback switch and may not for the rest.

A pure analysis over Python's ``ast`` (no LibCST, nothing else from mpslint),
shared by the runtime verifier (which fallback setting a script really runs
with, and which line chose it) and the static rule ``fallback-env-after-import``.

API::

    assignments(module: ast.Module) -> EnvReport
    EnvReport.assignments        every top-level write to the environment, in execution order
    EnvReport.torch_import_line  line of the first top-level statement that imports torch, or None
    EnvReport.load_time()        the writes of variables in MPS_VARIABLES
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple

IMPORT = "import"  # read while ``import torch`` loads the library
FIRST_USE = "first-use"  # read the first time the MPS subsystem runs (after the import)


@dataclass(frozen=True)
class MPSVariable:
    name: str
    read: str  # IMPORT or FIRST_USE
    source: str  # where PyTorch reads it


_SRC = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/mps/"
_OPS = "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/mps/"

# The variables documented on https://docs.pytorch.org/docs/stable/mps_environment_variables.html,
# each with the file whose static initialiser reads it.
MPS_VARIABLES: Mapping[str, MPSVariable] = {
    v.name: v for v in (
        # TORCH_LIBRARY_IMPL(_, MPS, m): registers the CPU fallback or the NotImplementedError one.
        MPSVariable("PYTORCH_ENABLE_MPS_FALLBACK", IMPORT, _SRC + "MPSFallback.mm"),
        # MPSHeapAllocatorImpl::init_allocator, when the allocator is first used.
        MPSVariable("PYTORCH_MPS_HIGH_WATERMARK_RATIO", FIRST_USE, _SRC + "MPSAllocator.mm"),
        MPSVariable("PYTORCH_MPS_LOW_WATERMARK_RATIO", FIRST_USE, _SRC + "MPSAllocator.mm"),
        MPSVariable("PYTORCH_DEBUG_MPS_ALLOCATOR", FIRST_USE, _SRC + "MPSAllocator.mm"),
        # The MPSProfiler singleton's constructor.
        MPSVariable("PYTORCH_MPS_LOG_PROFILE_INFO", FIRST_USE, _SRC + "MPSProfiler.mm"),
        MPSVariable("PYTORCH_MPS_TRACE_SIGNPOSTS", FIRST_USE, _SRC + "MPSProfiler.mm"),
        # Metal shader compilation options, kept in a static.
        MPSVariable("PYTORCH_MPS_FAST_MATH", FIRST_USE, _OPS + "OperationUtils.mm"),
        # use_metal_mm: a function-local static.
        MPSVariable("PYTORCH_MPS_PREFER_METAL", FIRST_USE, _OPS + "operations/LinearAlgebra.mm"),
    )
}

# Packages whose own top-level import imports torch.
TORCH_IMPORTING: FrozenSet[str] = frozenset({"torch", "torchvision", "torchaudio", "torchtext"})

ASSIGN = "assign"  # os.environ[k] = v, os.environ.update(...), os.environ |= {...}
SETDEFAULT = "setdefault"  # only when not set yet
PUTENV = "putenv"  # os.putenv: C's getenv sees it, os.environ does not
UNSET = "unset"  # del os.environ[k], os.environ.pop(k), os.unsetenv(k)


@dataclass(frozen=True)
class EnvWrite:
    name: str
    how: str  # ASSIGN, SETDEFAULT, PUTENV or UNSET
    value: Optional[str]  # the literal string written; None for UNSET or a value not known statically
    line: int
    col: int
    before_torch_import: bool


@dataclass(frozen=True)
class EnvReport:
    writes: Tuple[EnvWrite, ...]
    torch_import_line: Optional[int]

    @property
    def assignments(self) -> Tuple[EnvWrite, ...]:
        return self.writes

    def load_time(self) -> List[EnvWrite]:
        return [w for w in self.writes if w.name in MPS_VARIABLES]


def assignments(module: ast.Module, torch_importing: FrozenSet[str] = TORCH_IMPORTING) -> EnvReport:
    """The module's top-level environment writes (module body, and blocks that run with it: if/try/with/for).

    Function and class bodies are left out: whether and when they run is not
    known from the module alone.
    """
    names = _Names()
    writes: List[Tuple[str, str, Optional[str], ast.AST]] = []
    torch_line: Optional[int] = None
    for statement in _top_level(module.body):
        names.learn(statement)
        if torch_line is None and _imports_torch(statement, torch_importing):
            torch_line = statement.lineno
        for node in _own_nodes(statement):
            writes.extend(_writes(node, names))
    result = []
    for name, how, value, node in writes:
        line = node.lineno
        before = torch_line is None or line < torch_line
        result.append(EnvWrite(name, how, value, line, node.col_offset, before))
    return EnvReport(tuple(result), torch_line)


def effective_value(report: EnvReport, name: str, initial: Optional[str]) -> Tuple[Optional[str], Optional[EnvWrite]]:
    """The value ``name`` has when torch is first imported, starting from ``initial`` (the process environment).

    Returns (value, the write that decided it or None). A write whose value is
    not a literal gives value None with that write, so callers can say so.
    """
    value, decided_by = initial, None
    for write in report.writes:
        if write.name != name or not write.before_torch_import:
            continue
        if write.how == UNSET:
            value, decided_by = None, write
        elif write.how == SETDEFAULT:
            if value is None:
                value, decided_by = write.value, write
        else:
            value, decided_by = write.value, write
    return value, decided_by


# -- which statements run at import time ---------------------------------------------------------

def _top_level(body: List[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in execution order, entering blocks that run as part of the module (not defs)."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _top_level(inner)
        for handler in getattr(statement, "handlers", []) or []:
            yield from _top_level(handler.body)
        for case in getattr(statement, "cases", []) or []:  # match (Python >= 3.10)
            yield from _top_level(case.body)


def _own_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """The statement's nodes, without the nested statements _top_level yields separately, or def bodies."""
    stack: List[ast.AST] = [statement]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) or isinstance(child, (ast.Lambda, ast.ExceptHandler)):
                continue
            if child.__class__.__name__ == "match_case":
                continue
            stack.append(child)


def _imports_torch(statement: ast.stmt, torch_importing: FrozenSet[str]) -> bool:
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] in torch_importing for alias in statement.names)
    if isinstance(statement, ast.ImportFrom):
        return statement.level == 0 and (statement.module or "").split(".")[0] in torch_importing
    for node in _own_nodes(statement):  # __import__("torch"), importlib.import_module("torch.nn")
        if isinstance(node, ast.Call) and node.args and _string(node.args[0]) is not None:
            func = node.func
            callee = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if callee in ("__import__", "import_module") and \
                    _string(node.args[0]).split(".")[0] in torch_importing:  # type: ignore[union-attr]
                return True
    return False


# -- names bound to os, os.environ, os.putenv ------------------------------------------------------

class _Names:
    def __init__(self) -> None:
        self.os: set = set()  # names bound to the os module
        self.environ: set = set()  # names bound to os.environ
        self.functions: Dict[str, str] = {}  # local name -> "putenv" / "unsetenv"

    def learn(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name == "os":
                    self.os.add(alias.asname or "os")
        elif isinstance(statement, ast.ImportFrom) and statement.module == "os" and statement.level == 0:
            for alias in statement.names:
                if alias.name == "environ":
                    self.environ.add(alias.asname or "environ")
                elif alias.name in ("putenv", "unsetenv"):
                    self.functions[alias.asname or alias.name] = alias.name

    def is_environ(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.environ
        return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) \
            and node.value.id in self.os

    def os_function(self, func: ast.AST) -> Optional[str]:
        if isinstance(func, ast.Name):
            return self.functions.get(func.id)
        if isinstance(func, ast.Attribute) and func.attr in ("putenv", "unsetenv") and \
                isinstance(func.value, ast.Name) and func.value.id in self.os:
            return func.attr
        return None


def _string(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _writes(node: ast.AST, names: _Names) -> Iterator[Tuple[str, str, Optional[str], ast.AST]]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            key = _environ_key(target, names)
            if key is not None:
                yield key, ASSIGN, _string(node.value), node
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitOr) and names.is_environ(node.target):
        yield from _dict_writes(node.value, node)
    elif isinstance(node, ast.Delete):
        for target in node.targets:
            key = _environ_key(target, names)
            if key is not None:
                yield key, UNSET, None, node
    elif isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and names.is_environ(func.value):
            key = _string(node.args[0]) if node.args else None
            if func.attr == "setdefault" and key is not None:
                yield key, SETDEFAULT, _string(node.args[1]) if len(node.args) > 1 else "", node
            elif func.attr == "pop" and key is not None:
                yield key, UNSET, None, node
            elif func.attr == "update":
                for arg in node.args:
                    yield from _dict_writes(arg, node)
                for keyword in node.keywords:
                    if keyword.arg is not None:
                        yield keyword.arg, ASSIGN, _string(keyword.value), node
        else:
            function = names.os_function(func)
            key = _string(node.args[0]) if node.args else None
            if function == "putenv" and key is not None:
                yield key, PUTENV, _string(node.args[1]) if len(node.args) > 1 else None, node
            elif function == "unsetenv" and key is not None:
                yield key, UNSET, None, node


def _environ_key(target: ast.AST, names: _Names) -> Optional[str]:
    if isinstance(target, ast.Subscript) and names.is_environ(target.value):
        return _string(target.slice)
    return None


def _dict_writes(value: ast.AST, node: ast.AST) -> Iterator[Tuple[str, str, Optional[str], ast.AST]]:
    if isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values):
            name = _string(key)
            if name is not None:
                yield name, ASSIGN, _string(item), node
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        for keyword in value.keywords:
            if keyword.arg is not None:
                yield keyword.arg, ASSIGN, _string(keyword.value), node


# -- writes in function bodies (the static rule fallback-env-after-import) -------------------------

def function_writes(module: ast.Module, torch_importing: FrozenSet[str] = TORCH_IMPORTING) -> Tuple[EnvWrite, ...]:
    """Environment writes in the bodies of module-level functions and methods, in source order.

    A function runs when it is called, and nothing can call it before its
    ``def`` has run: when the module's first top-level torch import comes
    before the ``def``, every write in the body runs after torch is imported.
    ``before_torch_import`` says whether the ``def`` comes first, so that a
    call might still precede the import (``setup_env()`` then ``import torch``).
    """
    torch_line = assignments(module, torch_importing).torch_import_line
    module_names = _Names()
    for statement in _top_level(module.body):
        module_names.learn(statement)
    found: List[EnvWrite] = []
    for definition in _top_level(module.body):
        if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        before = torch_line is None or definition.lineno < torch_line
        functions = (n for n in ast.walk(definition) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        for function in functions:  # each body once: _top_level does not enter nested defs
            names = _Names()
            names.os, names.environ, names.functions = set(module_names.os), set(module_names.environ), dict(
                module_names.functions)
            for statement in _top_level(function.body):
                names.learn(statement)
                for node in _own_nodes(statement):
                    for name, how, value, write in _writes(node, names):
                        found.append(EnvWrite(name, how, value, write.lineno, write.col_offset, before))
    found.sort(key=lambda w: (w.line, w.col))
    return tuple(found)
