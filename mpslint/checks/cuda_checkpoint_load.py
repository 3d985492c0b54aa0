"""``torch.load`` with no ``map_location`` in code that puts work on a device (see ``rules/MPS110.md``).

``torch.load`` restores each tensor to the device it was saved from
(``default_restore_location`` in torch/serialization.py); a checkpoint saved
on CUDA raises "Attempting to deserialize object on a CUDA device but
torch.cuda.is_available() is False" on a Mac, with ``weights_only`` or not.

Reported only in files that place work on a device (``.to(...)``,
``.cuda()``, ``torch.device(...)``, ``device=``), where checkpoints are
plausibly saved from a GPU, and not under a CUDA guard. Not reported: a
``map_location`` given (keyword, second argument, or ``**kwargs``); a module
that also calls ``torch.save`` (it reads back checkpoints it wrote, on the
machine that resumes them: save/resume utilities, round-trip tests); FSDP,
DeepSpeed and XLA code; a module built on a CUDA-only library.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from mpslint.analysis.syntax import keyword
from mpslint.checks.base import FixSpec, Rule, insert_after
from mpslint.checks.rewriting import cuda

LOADS = ("torch.load", "torch.serialization.load")
SAVES = ("torch.save", "torch.serialization.save")
# Code built on these runs on CUDA clusters or TPUs, never on a Mac.
NOT_ON_A_MAC = ("torch.distributed.fsdp", "torch.distributed.checkpoint", "torch_xla", "deepspeed", "megatron")
# What a model checkpoint is called: in the path given, the variable it goes to, or the function loading it.
_CHECKPOINT = re.compile(r"(^|_)sd$|ckpt|checkpoint|weight|model|state_dict|pretrain|resume|snapshot|\.pth|\.pt\b|\.bin\b",
                         re.IGNORECASE)
_TEST_FILE = re.compile(r"(^|/)(tests?/|test_[^/]*\.py$|[^/]*_test\.py$|conftest\.py$)")
_PLACES = re.compile(r"\.to\(|\.cuda\(|torch\.device\(|\bdevice\s*=|\.mps\(")


class CudaCheckpointLoad(Rule):
    TRIGGERS = ("load",)
    REQUIRES = ((".to(", ".cuda(", "device(", "device=", "device =", ".mps("),)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._places: Optional[bool] = None
        self._skip_file: Optional[bool] = None

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        if ctx.qualify(node.func) not in LOADS:
            return
        if keyword(node, "map_location") is not None or len(node.args) >= 2 \
                or any(k.arg is None for k in node.keywords) or any(type(a) is ast.Starred for a in node.args):
            return
        if not node.args and keyword(node, "f") is None:
            return
        context = cuda(ctx)  # CUDA guards only: a load next to an MPS device choice still restores to CUDA
        if not self._file_places() or context.cuda_only_module or context.guards(node) or self._round_trip(node):
            return
        if _TEST_FILE.search(ctx.path.replace("\\", "/")) or not self._loads_a_checkpoint(node):
            return
        fix = self._fix(node)
        self.report(node, f"`{ctx.text(node.func)}` with no `map_location` restores each tensor to the device it was "
                          "saved from: a checkpoint saved on CUDA raises \"Attempting to deserialize object on a CUDA "
                          "device\" on a Mac; pass `map_location=\"cpu\"` (then move it) or `map_location=device`",
                    fix=fix)

    # ------------------------------------------------------------- context

    def _file_places(self) -> bool:
        if self._places is None:
            self._places = bool(_PLACES.search(self.ctx.source))
        return self._places

    def _round_trip(self, node: ast.Call) -> bool:
        """The module also saves with ``torch.save`` (a checkpoint it wrote itself, on the machine that resumes), or it
        is distributed or XLA code (FSDP, DeepSpeed, torch_xla), which does not run on a Mac."""
        if self._skip_file is None:
            ctx = self.ctx
            saves = any((ctx.qualify(call.func) or "") in SAVES for call in ctx.tree.of_type(ast.Call))
            self._skip_file = saves or ctx.imports.imports_any(NOT_ON_A_MAC)
        return self._skip_file

    def _loads_a_checkpoint(self, node: ast.Call) -> bool:
        """A model checkpoint by its names (``torch.load(ckpt_path)``, ``state = torch.load(...)`` in
        ``load_model``), or one going into ``load_state_dict``; not a dataset or a cache of the program's own."""
        ctx = self.ctx
        tree = ctx.tree
        words = [ctx.text(node.args[0]) if node.args else ctx.text(keyword(node, "f"))]  # type: ignore[arg-type]
        statement = tree.statement_of(node)
        if type(statement) in (ast.Assign, ast.AnnAssign, ast.Return):
            targets = statement.targets if type(statement) is ast.Assign else (  # type: ignore[attr-defined]
                [statement.target] if type(statement) is ast.AnnAssign else [])  # type: ignore[attr-defined]
            words.extend(ctx.text(t) for t in targets)
        function = tree.scope_of(node)
        words.append(getattr(function, "name", ""))
        if any(_CHECKPOINT.search(w) for w in words):
            return True
        return self._into_load_state_dict(node, any_owner=True)

    # ----------------------------------------------------------------- fix

    def _fix(self, node: ast.Call) -> Optional[FixSpec]:
        """``map_location="cpu"`` where the result goes straight into a module's ``load_state_dict``."""
        if not self._into_load_state_dict(node):
            return None
        last = node.keywords[-1] if node.keywords else node.args[-1]
        return FixSpec.safe('Pass `map_location="cpu"`: `load_state_dict` copies into the parameters\' own device',
                            insert_after(last, ', map_location="cpu"'))

    def _into_load_state_dict(self, node: ast.Call, any_owner: bool = False) -> bool:
        """``m.load_state_dict(torch.load(p))``, also through ``["key"]``, or a variable used only there."""
        tree = self.ctx.tree
        value: ast.AST = node
        parent = tree.parent(value)
        while type(parent) is ast.Subscript and parent.value is value and type(parent.slice) is ast.Constant:
            value, parent = parent, tree.parent(parent)
        if type(parent) is ast.Call and parent.args and parent.args[0] is value:
            return _module_load(parent, any_owner)
        if type(parent) is ast.Assign and len(parent.targets) == 1 and type(parent.targets[0]) is ast.Name \
                and parent.value is value:
            name = parent.targets[0].id
            scope = tree.scope_of(parent)
            uses = [n for n in tree.of_type(ast.Name) if n.id == name and tree.scope_of(n) is scope  # type: ignore[attr-defined]
                    and n is not parent.targets[0]]
            if len(uses) != 1:
                return False
            use = uses[0]
            call = tree.parent(use)
            return type(call) is ast.Call and bool(call.args) and call.args[0] is use and _module_load(call, any_owner) \
                and tree.index(use) > tree.index(parent)
        return False


def _module_load(call: ast.Call, any_owner: bool = False) -> bool:
    """``model.load_state_dict(x)`` on something not named for an optimizer or scheduler."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr != "load_state_dict":
        return False
    if any_owner:
        return True
    owner = ast.unparse(func.value).lower() if hasattr(ast, "unparse") else ""
    return not re.search(r"optim|sched|scaler|opt\b|lr_", owner)
