"""An MPS environment variable set after PyTorch has read it (see ``rules/MPS505.md``).

PyTorch reads each of its MPS variables once, from C++, into a ``static``:
``PYTORCH_ENABLE_MPS_FALLBACK`` while ``import torch`` loads the library, the
others when their MPS subsystem first runs (``load_time_env.MPS_VARIABLES``
says which, with the source file that reads each). The writes and the first
torch import come from ``load_time_env``, the analysis the runtime verifier
uses to decide which fallback setting a script really runs with.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Tuple

from mpslint.analysis import load_time_env as env
from mpslint.analysis.device_flow import FACTORIES, DeviceFlow, Kind
from mpslint.analysis.syntax import keyword
from mpslint.checks.base import FixSpec, NodeEdit, Rule, insert_before, short
from mpslint.checks.rewriting import alone

# Packages whose own import imports torch, beyond torch's (load_time_env.TORCH_IMPORTING).
TORCH_IMPORTING = env.TORCH_IMPORTING | frozenset({
    "torchmetrics", "torch_geometric", "torchao", "torchrl", "tensordict", "lightning", "pytorch_lightning",
    "lightning_fabric", "timm", "accelerate", "peft", "kornia", "sentence_transformers",
})
FALLBACK = "PYTORCH_ENABLE_MPS_FALLBACK"
# When each first-use variable is read (load_time_env.MPS_VARIABLES names the source file).
FIRST_READ = {
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO": "when the MPS allocator starts",
    "PYTORCH_MPS_LOW_WATERMARK_RATIO": "when the MPS allocator starts",
    "PYTORCH_DEBUG_MPS_ALLOCATOR": "when the MPS allocator starts",
    "PYTORCH_MPS_LOG_PROFILE_INFO": "when the MPS profiler starts",
    "PYTORCH_MPS_TRACE_SIGNPOSTS": "when the MPS profiler starts",
    "PYTORCH_MPS_FAST_MATH": "when the first Metal kernel is compiled",
    "PYTORCH_MPS_PREFER_METAL": "at the first matrix multiplication",
}
_WRITES = (ast.Call, ast.Assign, ast.AugAssign)  # the nodes load_time_env reports writes at, most specific first
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class FallbackEnvAfterImport(Rule):
    TRIGGERS = ("PYTORCH_",)
    REQUIRES = (("torch", "lightning", "timm", "accelerate", "peft", "kornia", "sentence_transformers"),)

    def visit_Module(self, module: ast.Module) -> None:
        found = env.assignments(module, TORCH_IMPORTING)
        torch_line = found.torch_import_line
        if torch_line is None:
            return
        writes = [w for w in (*found.writes, *env.function_writes(module, TORCH_IMPORTING))
                  if w.name in env.MPS_VARIABLES and w.how != env.UNSET and not w.before_torch_import]
        if not writes:
            return
        nodes = self._write_nodes()
        importer = self._statement_at(module, torch_line)
        for write in writes:
            node = nodes.get((write.line, write.col))
            if node is None or importer is None:
                continue
            self._check(write, node, importer, torch_line)

    def _check(self, write: env.EnvWrite, node: ast.AST, importer: ast.stmt, torch_line: int) -> None:
        ctx = self.ctx
        function = self._function_of(node)
        where = f" in `{function.name}()`" if function is not None else ""  # type: ignore[attr-defined]
        if env.MPS_VARIABLES[write.name].read == env.IMPORT:
            effect = " (ops without an MPS kernel still raise NotImplementedError)" if write.name == FALLBACK else ""
            message = (f"`{short(ctx, node)}`{where} runs after {self._describe(importer, torch_line)}: PyTorch reads "
                       f"{write.name} once, while the library loads, so this has no effect{effect}; set it before the "
                       "first torch import, or in the environment that starts Python")
        else:
            use = self._device_use_before(node)
            if use is None:
                return  # read when its subsystem first runs: before that, setting it still works
            message = (f"`{short(ctx, node)}`{where} runs after the device is first used (`{short(ctx, use)}`, line "
                       f"{use.lineno}): PyTorch reads {write.name} once, {FIRST_READ.get(write.name, 'at first use')}, "  # type: ignore[attr-defined]
                       "so this has no effect; set it before the first torch import, or in the environment that "
                       "starts Python")
        fix = self._fix(node, importer) if function is None else None
        self.report(node, message, fix=fix)

    # ------------------------------------------------------------- locating

    def _write_nodes(self) -> Dict[Tuple[int, int], ast.AST]:
        """(line, column) -> the node load_time_env reports a write at."""
        nodes: Dict[Tuple[int, int], ast.AST] = {}
        for cls in reversed(_WRITES):
            for node in self.ctx.tree.of_type(cls):
                nodes[(node.lineno, node.col_offset)] = node  # type: ignore[attr-defined]
        return nodes

    @staticmethod
    def _statement_at(module: ast.Module, line: int) -> Optional[ast.stmt]:
        """The top-level statement that holds ``line`` (the import may sit in a ``try``)."""
        for statement in module.body:
            if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
                return statement
        return None

    def _describe(self, importer: ast.stmt, line: int) -> str:
        """How the message names the import that loaded torch."""
        if type(importer) is ast.Import:
            itself = any(alias.name.split(".")[0] == "torch" for alias in importer.names)  # type: ignore[attr-defined]
        elif type(importer) is ast.ImportFrom:
            itself = (importer.module or "").split(".")[0] == "torch"  # type: ignore[attr-defined]
        else:
            return f"torch is imported (line {line})"  # in a `try` or `if` block
        quoted = f"`{short(self.ctx, importer)}` (line {line})"
        return quoted if itself else f"{quoted}, which imports torch"

    def _function_of(self, node: ast.AST) -> Optional[ast.AST]:
        scope = self.ctx.tree.scope_of(node)
        return scope if type(scope) in _FUNCTIONS else None

    def _device_use_before(self, node: ast.AST) -> Optional[ast.AST]:
        """A placement on the accelerator that runs before ``node`` in its function (or the module's top level)."""
        tree = self.ctx.tree
        first = self.ctx.analysis(_FirstDeviceUse).first.get(tree.scope_of(node))
        return first if first is not None and tree.index(first) < tree.index(node) else None

    # ----------------------------------------------------------------- fix

    def _fix(self, node: ast.AST, importer: ast.stmt) -> Optional[FixSpec]:
        """Move the write above the module's imports (any of them may import torch), with the ``os`` import it needs."""
        ctx = self.ctx
        tree = ctx.tree
        statement = node if isinstance(node, ast.stmt) else tree.parent(node)
        if type(tree.parent(statement)) is not ast.Module or not alone(ctx, statement):
            return None  # in an `if`/`try` block: moving it out would make it unconditional
        if statement.end_lineno >= len(tree.line_starts):  # type: ignore[union-attr]
            return None  # on the last line: nothing to anchor the deletion's end
        anchor = self._first_import(importer)
        names = {n.id for n in ast.walk(statement) if type(n) is ast.Name}  # type: ignore[arg-type]
        imports = []
        for name in sorted(names):
            target = ctx.imports.bindings.get(name)
            if target not in ("os", "os.environ", "os.putenv"):
                return None  # the value uses other names, which may not exist above the import
            if not self._bound_before(name, anchor):
                imports.append(_import_line(name, target))
        # Edits speak "\n"; the fixer writes the file's own line endings.
        rows = range(statement.lineno, statement.end_lineno + 1)  # type: ignore[operator]
        moved = "".join(tree.line_text(row).rstrip("\r\n") + "\n" for row in rows)
        return FixSpec.unsafe(
            "Set it before the imports",
            insert_before(anchor, "".join(imports) + moved),
            NodeEdit("", (statement, "start"), (statement, "line_after")),
        )

    def _first_import(self, importer: ast.stmt) -> ast.stmt:
        """The first top-level import that may load torch: anything but ``__future__``, ``os`` and ``sys``."""
        for statement in self.ctx.module.body:
            if statement is importer:
                break
            if type(statement) is ast.ImportFrom and statement.module not in ("__future__", "os"):  # type: ignore[attr-defined]
                return statement
            if type(statement) is ast.Import and any(
                    alias.name not in ("os", "sys") for alias in statement.names):  # type: ignore[attr-defined]
                return statement
        return importer

    def _bound_before(self, name: str, importer: ast.stmt) -> bool:
        for statement in self.ctx.module.body:
            if statement.lineno >= importer.lineno:
                return False
            if type(statement) in (ast.Import, ast.ImportFrom) and any(
                    (alias.asname or alias.name.split(".")[0]) == name for alias in statement.names):  # type: ignore[attr-defined]
                return True
        return False


def _import_line(name: str, target: str) -> str:
    module, _, member = target.partition(".")
    if not member:
        return "import os\n" if name == "os" else f"import os as {name}\n"
    return f"from os import {member}\n" if name == member else f"from os import {member} as {name}\n"


class _FirstDeviceUse:
    """Per file: the first placement on the accelerator in each function (and at the top level)."""

    def __init__(self, ctx) -> None:
        tree = ctx.tree
        flow = ctx.analysis(DeviceFlow)
        self.first: Dict[ast.AST, ast.AST] = {}
        for call in tree.of_type(ast.Call):
            scope = tree.scope_of(call)
            if scope in self.first or not _places(ctx, flow, call):  # type: ignore[arg-type]
                continue
            self.first[scope] = call


def _places(ctx, flow: DeviceFlow, call: ast.Call) -> bool:
    """``.to(device)``, ``.cuda()``/``.mps()``, a factory with an accelerator ``device=``."""
    func = call.func
    qualified = ctx.qualify(func)
    if qualified is None and type(func) is ast.Attribute:
        if func.attr in ("cuda", "mps"):
            return True
        if func.attr == "to":
            target = flow.to_target(call)
            return target is not None and flow.kind(target) is Kind.ACCEL
        return False
    if qualified is not None and qualified.startswith("torch.") and qualified[len("torch."):] in FACTORIES:
        device = keyword(call, "device")
        return device is not None and flow.kind(device) is Kind.ACCEL
    return False

