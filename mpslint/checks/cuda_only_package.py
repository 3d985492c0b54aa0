"""An unguarded import or use of a package that only runs on NVIDIA GPUs (see ``rules/MPS109.md``).

Three shapes, each reported only where nothing conditional surrounds it:

- a module-level ``import`` of a package with no macOS build or no work to do
  without CUDA (triton, flash_attn, xformers, apex, mamba_ssm, causal_conv1d):
  one finding per package per file, at its first such import. An import in a
  ``try``, an ``if`` (``if is_triton_available():``, ``if TYPE_CHECKING:``,
  ``if sys.platform == "linux":``) or a function body is a guard or a lazy
  import, and is not reported (we cannot tell which paths call the function);
- ``@triton.jit`` / ``@triton.autotune`` on a module-level function of a file
  whose triton import is guarded: the decorator still runs at import time,
  where the guard left ``triton`` undefined or ``None``;
- a bitsandbytes 8-bit or paged optimizer, or ``torch.utils.cpp_extension.load``
  / ``load_inline`` compiling ``.cu`` / CUDA sources, outside any ``if``,
  ``try`` or conditional expression.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Set

from mpslint.analysis.syntax import keyword, string_value
from mpslint.checks.base import Rule

# package -> why importing it fails or is pointless on a Mac
PACKAGES: Dict[str, str] = {
    "triton": "Triton compiles kernels for NVIDIA and AMD GPUs and has no macOS build",
    "flash_attn": "FlashAttention is CUDA kernels and has no macOS build",
    "xformers": "xformers' attention kernels are CUDA-only (`memory_efficient_attention` has no MPS kernel)",
    "apex": "NVIDIA apex's fused kernels and amp need CUDA",
    "mamba_ssm": "mamba_ssm's selective scan is CUDA and Triton kernels",
    "causal_conv1d": "causal_conv1d is a CUDA extension",
}
_TRITON_DECORATORS = ("triton.jit", "triton.autotune", "triton.heuristics")
_BNB_OPTIMIZER = re.compile(r"^bitsandbytes\.optim\.(\w*8bit\w*|Paged\w*)$")
_CPP_EXTENSION = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")
_CONDITIONAL = (ast.If, ast.IfExp, ast.Try, ast.While, ast.BoolOp, ast.ExceptHandler) + (
    (ast.TryStar,) if hasattr(ast, "TryStar") else ()) + ((ast.match_case,) if hasattr(ast, "match_case") else ())


class CudaOnlyPackage(Rule):
    TRIGGERS = ("triton", "flash_attn", "xformers", "apex", "mamba_ssm", "causal_conv1d", "bitsandbytes",
                "cpp_extension")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: Set[str] = set()
        self._triton_guarded: Optional[bool] = None

    # ------------------------------------------------------------- imports

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._check_import(node, node.module)

    def _check_import(self, node: ast.stmt, module: str) -> None:
        package = module.split(".", 1)[0]
        why = PACKAGES.get(package)
        if why is None or package in self._reported or not self._at_import_time(node):
            return
        if module != package and package in re.split(r"[\\/]", self.ctx.path)[:-1]:
            return  # the package's own source importing its submodules: what its users import is the finding
        self._reported.add(package)
        self.report(node, f"`{package}` imported unconditionally: {why}, so importing this module fails on a Mac; "
                          "import it in `try`/`except ImportError` (or under a CUDA check) and fall back to PyTorch's "
                          "own ops")

    def _at_import_time(self, node: ast.stmt) -> bool:
        """A module-level statement, or one in a module-level ``try`` whose every ``except`` raises again."""
        parent = self.ctx.parent(node)
        if type(parent) is ast.Module:
            return True
        return (isinstance(parent, ast.Try) and node in parent.body and bool(parent.handlers)
                and all(_reraises(h) for h in parent.handlers) and type(self.ctx.parent(parent)) is ast.Module)

    # ---------------------------------------------------------------- uses

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if type(self.ctx.parent(node)) is not ast.Module or not node.decorator_list:
            return
        for decorator in node.decorator_list:
            target = decorator.func if type(decorator) is ast.Call else decorator
            name = self.ctx.qualify(target)
            if name in _TRITON_DECORATORS and self._triton_import_guarded():
                self.report(decorator, f"`@{self.ctx.text(target)}` runs when the module is imported, and the "
                                       "guarded import above left `triton` missing on a Mac (Triton has no macOS "
                                       "build): define the kernels only when Triton imported (`if HAS_TRITON:`, or "
                                       "in a module imported only then)")
                return

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        name = ctx.qualify(node.func)
        if name is None:
            return
        if _BNB_OPTIMIZER.match(name):
            if not self._conditional(node):
                short_name = name.rsplit(".", 1)[-1]
                self.report(node, f"bitsandbytes' `{short_name}` updates parameters with CUDA kernels: on a Mac it "
                                  "fails for mps (and CPU) parameters; use a `torch.optim` optimizer (`AdamW`) when "
                                  "not on CUDA")
        elif name in _CPP_EXTENSION and _compiles_cuda(node) and not self._conditional(node):
            self.report(node, f"`{ctx.text(node.func)}(...)` compiles CUDA sources with nvcc, which a Mac does not "
                              "have: the build fails; build it only when `torch.cuda.is_available()` and fall back to "
                              "PyTorch ops")

    # ------------------------------------------------------------- helpers

    def _conditional(self, node: ast.AST) -> bool:
        """Under an ``if``/``try``/conditional expression/``and``/``or``, or in a function named for CUDA."""
        for parent in self.ctx.tree.ancestors(node):
            if isinstance(parent, _CONDITIONAL):
                return True
            if type(parent) in (ast.FunctionDef, ast.AsyncFunctionDef) and re.search(
                    r"(^|_)(cuda|gpu|nvidia|triton)(_|$)", parent.name, re.IGNORECASE):
                return True
        return False

    def _triton_import_guarded(self) -> bool:
        if self._triton_guarded is None:
            self._triton_guarded = _guarded_triton_import(self.ctx.module)
        return self._triton_guarded


def _guarded_triton_import(module: ast.Module) -> bool:
    """The module imports triton only inside a top-level ``try``/``if``, never unconditionally."""
    guarded = False
    for statement in module.body:
        if type(statement) in (ast.Import, ast.ImportFrom) and _imports(statement, "triton"):
            return False
        if isinstance(statement, (ast.Try, ast.If)) and any(
                type(n) in (ast.Import, ast.ImportFrom) and _imports(n, "triton") for n in ast.walk(statement)):
            if isinstance(statement, ast.Try) and any(_reraises(h) for h in statement.handlers):
                return False  # `except ImportError: raise ImportError("pip install triton")`: not a guard
            guarded = True
    return guarded


def _imports(node: ast.AST, package: str) -> bool:
    if type(node) is ast.Import:
        return any(a.name.split(".", 1)[0] == package for a in node.names)  # type: ignore[attr-defined]
    return not node.level and (node.module or "").split(".", 1)[0] == package  # type: ignore[attr-defined]


def _reraises(handler: ast.ExceptHandler) -> bool:
    return bool(handler.body) and type(handler.body[-1]) is ast.Raise


def _compiles_cuda(call: ast.Call) -> bool:
    """``load(sources=[... "x.cu" ...])`` or ``load_inline(cuda_sources=...)`` with CUDA sources written out."""
    if keyword(call, "cuda_sources") is not None:
        return True
    sources = keyword(call, "sources") or (call.args[1] if len(call.args) > 1 else None)
    if sources is None:
        return False
    return any((string_value(n) or "").endswith((".cu", ".cuh")) for n in ast.walk(sources))
