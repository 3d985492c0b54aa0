"""Tensors made for ``torch.distributed`` collectives: their device follows the backend, not the model.

``count = torch.tensor([n], device="cuda"); dist.all_reduce(count)`` and
``gathered = [torch.zeros(1).cuda() for _ in range(world)]; dist.all_gather(gathered, t)``
make a tensor only to communicate it. NCCL needs it on CUDA; gloo, the backend
where CUDA is missing (a Mac), needs it on the CPU: MPS tensors reach no
backend. So the placement of such a tensor becomes
``"cuda" if torch.cuda.is_available() else "cpu"`` (the same test that picks
``"nccl"`` or ``"gloo"``), never the device picker.
"""

from __future__ import annotations

import ast
from typing import Dict, Optional, Set

from mpslint.analysis.device_flow import FACTORIES
from mpslint.analysis.syntax import dotted_name

COLLECTIVES = frozenset(
    "all_reduce all_gather all_gather_into_tensor reduce reduce_scatter reduce_scatter_tensor broadcast gather "
    "scatter all_to_all all_to_all_single send recv isend irecv".split()
)
_HOLDERS = (ast.List, ast.Tuple, ast.Starred)


def collective_device(torch: str) -> str:
    """Where a collective's tensor goes: CUDA with NCCL, the CPU with gloo (the fixes choose them alike)."""
    return f'"cuda" if {torch}.cuda.is_available() else "cpu"'


class CollectiveTensors:
    """Per file: ``ctx.analysis(CollectiveTensors)``."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self.calls: Set[ast.AST] = set()  # the collective calls
        self.names: Dict[ast.AST, Set[str]] = {}  # scope -> names passed to a collective there
        if "torch.distributed" not in ctx.source and "dist" not in ctx.source:
            return
        for call in ctx.tree.of_type(ast.Call):
            name = ctx.qualify(call.func) or ""  # type: ignore[attr-defined]
            if not name.startswith("torch.distributed.") or name.rsplit(".", 1)[-1] not in COLLECTIVES:
                continue
            self.calls.add(call)
            scope = self.tree.scope_of(call)
            for value in [*call.args, *(k.value for k in call.keywords)]:  # type: ignore[attr-defined]
                for inner in ast.walk(value):
                    if type(inner) is ast.Name:
                        self.names.setdefault(scope, set()).add(inner.id)

    def made_for_collective(self, placement: ast.AST) -> bool:
        """``placement`` (a ``.cuda()`` call, or the device given to a factory or ``.to()``) places a new tensor
        that is communicated by a collective."""
        if not self.calls:
            return False
        made = self._new_tensor(placement)
        if made is None:
            return False
        node, parent = made, self.tree.parent(made)
        while isinstance(parent, _HOLDERS) or (type(parent) is ast.ListComp and parent.elt is node):  # type: ignore[attr-defined]
            node, parent = parent, self.tree.parent(parent)
        if parent in self.calls:
            return True
        if type(parent) is ast.Assign and parent.value is node:  # type: ignore[attr-defined]
            names = self.names.get(self.tree.scope_of(parent), set())
            return any(type(t) is ast.Name and t.id in names for t in parent.targets)  # type: ignore[attr-defined]
        return False

    def _new_tensor(self, placement: ast.AST) -> Optional[ast.AST]:
        """The expression that makes the placed tensor: the factory call, or its ``.cuda()``/``.to()``."""
        parent = self.tree.parent(placement)
        if type(placement) is ast.Call and type(placement.func) is ast.Attribute \
                and placement.func.attr in ("cuda", "to"):  # type: ignore[attr-defined]
            return placement if self._is_factory(placement.func.value) else None  # type: ignore[attr-defined]
        if type(parent) is ast.keyword and parent.arg == "device":  # type: ignore[attr-defined]
            call = self.tree.parent(parent)
            return call if self._is_factory(call) else None
        if type(parent) is ast.Call and placement in parent.args:  # type: ignore[attr-defined]
            func = parent.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr == "to" and self._is_factory(func.value):
                return parent
        return None

    def _is_factory(self, node: Optional[ast.AST]) -> bool:
        if type(node) is not ast.Call:
            return False
        name = self.ctx.qualify(node.func) or dotted_name(node.func) or ""  # type: ignore[attr-defined]
        if not name.startswith("torch."):
            return False
        last = name.rsplit(".", 1)[-1]
        return last in FACTORIES or last.endswith("Tensor")  # torch.tensor(...), torch.LongTensor([...])
