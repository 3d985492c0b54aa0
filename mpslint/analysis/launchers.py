"""Launch code that stops the program where CUDA is missing: CUDA or exit.

``assert torch.cuda.is_available()`` and ``if not torch.cuda.is_available():
... sys.exit(1)`` (or ``raise RuntimeError(...)``) at the start of a training
entry point make a Mac exit before any migrated line runs. Such a launcher is
*migratable* when nothing in the file needs CUDA itself (streams, CUDA graphs,
a CUDA-only package): the fix then accepts MPS too, and the code after it is
checked as code that runs on a Mac (it is no CUDA guard any more).

A test that skips without CUDA (``raise unittest.SkipTest``, ``pytest.skip``)
and a function that returns early are guards, not launchers; so is a method
that raises without CUDA (a library's CUDA-only backend checking its
environment, as transformers' quantizers do), which states a requirement.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, Optional

from mpslint.analysis.availability import Availability
from mpslint.analysis.syntax import dotted_name, string_value
from mpslint.knowledge.cuda_api import CUDA_ONLY, RAISES_WITHOUT_CUDA

# torch.cuda members the fixes migrate (or that answer the same on a Mac): code after a launcher may use them.
MIGRATED = frozenset({"is_available", "synchronize", "empty_cache", "manual_seed", "manual_seed_all", "amp", "set_device"})
_EXITS = frozenset({"sys.exit", "exit", "quit", "os._exit", "os.abort"})
# CUDA-only packages: a file that imports one needs CUDA whatever its launcher says.
CUDA_PACKAGES = frozenset({"triton", "apex", "cupy", "pycuda", "flash_attn", "xformers", "bitsandbytes", "numba.cuda",
                           "tensorrt", "torch_tensorrt", "nvidia"})


@dataclass(frozen=True)
class Launcher:
    statement: ast.stmt  # the assert, or the `if` whose body exits
    term: ast.AST  # the `torch.cuda.is_available()` term in its test
    blocker: str  # why the file needs CUDA anyway ("" when the launcher can accept MPS)


class CudaLaunchers:
    """Per file: ``ctx.analysis(CudaLaunchers)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.by_statement: Dict[ast.AST, Launcher] = {}
        if "is_available" not in ctx.source and "device_count" not in ctx.source:
            return
        availability = ctx.analysis(Availability)
        blocker: Optional[str] = None
        for node in ctx.tree.of_type(ast.Assert, ast.If):
            if type(node) is ast.Assert:
                term = node.test if availability.is_term(node.test) else None  # type: ignore[attr-defined]
            else:
                term = self._exit_term(node, availability)  # type: ignore[arg-type]
            if term is None:
                continue
            if blocker is None:
                blocker = self._blocker()
            self.by_statement[node] = Launcher(node, term, blocker or self._needs_cuda_after(node))  # type: ignore[arg-type]

    def launcher(self, statement: ast.AST) -> Optional[Launcher]:
        return self.by_statement.get(statement)

    def migratable(self, statement: ast.AST) -> bool:
        found = self.by_statement.get(statement)
        return found is not None and not found.blocker

    def _exit_term(self, node: ast.If, availability) -> Optional[ast.AST]:
        """``if not torch.cuda.is_available(): ...; sys.exit(1)`` -> the ``is_available()`` term."""
        test = node.test
        if node.orelse or type(test) is not ast.UnaryOp or type(test.op) is not ast.Not \
                or not availability.is_term(test.operand):
            return None
        last = node.body[-1]
        if type(last) is ast.Raise:
            exc = last.exc
            name = dotted_name(exc.func if type(exc) is ast.Call else exc) if exc is not None else None  # type: ignore[attr-defined]
            if name is None or "skip" in name.lower() or name.rsplit(".", 1)[-1] in ("NotImplementedError",):
                return None
            if any(type(a) is ast.ClassDef for a in self.ctx.ancestors(node)):
                return None  # a method that raises (a CUDA-only backend's `validate_environment`): a requirement
            return test.operand
        if type(last) is ast.Expr and type(last.value) is ast.Call:
            called = self.ctx.qualify(last.value.func) or dotted_name(last.value.func) or ""
            if called in _EXITS:
                return test.operand
        return None

    def _needs_cuda_after(self, launcher: ast.AST) -> str:
        """What the code the launcher guards (the rest of its block) needs of CUDA beyond what the fixes migrate."""
        place = self.ctx.tree.block_of(launcher)
        if place is None:
            return ""
        for parent in self.ctx.tree.ancestors(launcher):
            if type(parent) is ast.If and "nccl" in self.ctx.text(parent.test):  # type: ignore[attr-defined]
                return "it guards an NCCL-only branch"
        block, position = place
        for stmt in block[position + 1:]:
            for node in ast.walk(stmt):
                text = string_value(node)
                if text is not None and text.startswith("cuda:"):
                    return f"the code after it names a particular GPU ({text!r})"  # `set_default_device("cuda:0")`
                if type(node) is ast.Call and (self.ctx.qualify(node.func) or "") == "torch.device" \
                        and len(node.args) + len(node.keywords) == 2:  # type: ignore[attr-defined]
                    return "the code after it names a particular GPU (`torch.device(\"cuda\", index)`)"
                if type(node) is not ast.Attribute:
                    continue
                name = self.ctx.qualify(node) or ""
                if name.startswith("torch.cuda."):
                    member = name[len("torch.cuda."):].split(".", 1)[0]
                    if member not in MIGRATED:
                        return f"the code after it uses `torch.cuda.{member}`"
        return ""

    def _blocker(self) -> str:
        """What in this file needs CUDA itself, whatever the launcher says ("" if nothing)."""
        ctx = self.ctx
        for node in ctx.tree.of_type(ast.Import, ast.ImportFrom):
            modules = [a.name for a in node.names] if type(node) is ast.Import else [node.module or ""]  # type: ignore[attr-defined]
            for module in modules:
                if any(module == p or module.startswith(p + ".") for p in CUDA_PACKAGES):
                    return f"the file imports `{module}`, which needs CUDA"
        for node in ctx.tree.of_type(ast.Attribute):
            name = ctx.qualify(node) or ""
            if name.startswith("torch.cuda."):
                member = name[len("torch.cuda."):].split(".", 1)[0]
                if member in CUDA_ONLY and member not in RAISES_WITHOUT_CUDA:
                    return f"the file uses `torch.cuda.{member}`, which MPS does not have"
            elif name.startswith("torch.utils.cpp_extension."):
                return "the file builds a C++/CUDA extension"
        for node in ctx.tree.of_type(ast.Constant):
            text = string_value(node)
            if text is not None and text.endswith(".cu") and "\n" not in text:
                return f"the file builds CUDA sources ({text!r})"
        return ""
