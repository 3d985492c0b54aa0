"""``self(x)`` in a model's own method: when it runs the model's forward pass.

``def predict(self, imgs): for img in imgs: out = self(img.cuda())`` runs the model once per pass of
the loop, as ``model(img)`` does in a script. It counts as a model call only where:

- the method belongs to an ``nn.Module`` subclass: a base that names a module class of torch,
  Lightning or transformers (``nn.Module``, ``pl.LightningModule``, ``PreTrainedModel``), directly,
  through a class of this file, or a class another project module defines as one (its summary's
  ``modules``: one module away, ``class Net(BaseModel)`` with ``BaseModel(nn.Module)`` in ``base.py``);
- it is ``self(...)``, ``self.forward(...)`` or ``self.__call__(...)``, in a method other than
  ``__init__`` and ``forward``/``__call__`` themselves (a call of itself there is recursion, not a step).

A model call is a device call only with evidence that the model runs on the accelerator: a device
tensor among its arguments (``self(img.cuda())``, a batch moved with ``.to(device)``), or, in a loop,
the same loop moving tensors to the accelerator on each pass (``std = torch.Tensor(s).cuda()``, to be
combined with the model's output, which must then be on the same device). A module may be placed
anywhere, or nowhere: without such evidence its output is not known to be on the device.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional

from mpslint.analysis.syntax import dotted_name
from mpslint.analysis.device_flow.bindings import _class_of, enclosing_loops
from mpslint.analysis.device_flow.kinds import Kind
from mpslint.analysis.project.evaluate import MODULE_BASES

_NOT_A_STEP = frozenset(("__init__", "forward", "__call__"))
_SELF_FORWARD = frozenset(("forward", "__call__"))
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FRAMES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


class ModelCalls:
    """``self(...)`` as a model call (a part of ``DeviceFlow``)."""

    _module_classes: Dict[ast.AST, bool]  # class -> whether it is a module class
    _moving_loops: Dict[ast.AST, bool]  # loop -> whether each pass moves a tensor to the accelerator
    _top_level_classes: Optional[Dict[str, List[ast.ClassDef]]]

    def self_model_call(self, call: ast.Call) -> bool:
        """``call`` runs the forward pass of the module whose method it is in (device or not)."""
        func = call.func
        if type(func) is ast.Name:
            if func.id != "self":  # type: ignore[attr-defined]
                return False
        elif not (type(func) is ast.Attribute and func.attr in _SELF_FORWARD  # type: ignore[attr-defined]
                  and type(func.value) is ast.Name and func.value.id == "self"):  # type: ignore[attr-defined]
            return False
        tree = self.tree  # type: ignore[attr-defined]
        method = tree.scope_of(call)
        if type(method) not in (ast.FunctionDef, ast.AsyncFunctionDef) or method.name in _NOT_A_STEP:  # type: ignore[union-attr]
            return False
        params = [*method.args.posonlyargs, *method.args.args]  # type: ignore[union-attr]
        if not params or params[0].arg != "self":
            return False  # a static method, or a nested function: `self` is some other object
        owner = _class_of(tree, call)
        return owner is not None and self.is_module_class(owner)  # type: ignore[arg-type]

    def model_call_kind(self, call: ast.Call) -> Optional[Kind]:
        """DEVICE for a model call of ``self`` given a device tensor; None when ``call`` is no such call."""
        if not self.self_model_call(call):
            return None
        values = [a.value if type(a) is ast.Starred else a for a in call.args]
        values += [k.value for k in call.keywords if k.arg is not None]
        if any(self.kind(v) is Kind.DEVICE for v in values) or self._loop_moves_to_device(call):  # type: ignore[attr-defined]
            return Kind.DEVICE
        return None

    def _loop_moves_to_device(self, call: ast.Call) -> bool:
        """The innermost loop around ``call`` (in its method) moves a tensor to the accelerator on each pass:
        ``mean = torch.Tensor(m).cuda()`` next to ``out = self(img)``, combined with what the model returns."""
        loops = enclosing_loops(self.tree, call)  # type: ignore[attr-defined]
        if not loops or type(loops[0]) not in _LOOPS:
            return False
        known = self._moving_loops.get(loops[0])
        if known is None:
            # once per loop, however many model calls it holds: the walk stays linear in the file
            known = self._moving_loops[loops[0]] = self._moves_to_device(loops[0])
        return known

    def _moves_to_device(self, loop: ast.AST) -> bool:
        stack: List[ast.AST] = list(loop.body)  # type: ignore[attr-defined]
        while stack:
            node = stack.pop()
            cls = type(node)
            if cls in _FRAMES:
                continue
            if cls is ast.Call and type(node.func) is ast.Attribute and node.func.attr in ("to", "cuda") \
                    and self.kind(node) is Kind.DEVICE:  # type: ignore[attr-defined]
                return True
            stack.extend(ast.iter_child_nodes(node))
        return False

    def is_module_class(self, cls: ast.ClassDef, depth: int = 0) -> bool:
        """``cls`` subclasses a module class: a known base, a class of this file that does, or a class another
        module of the project defines as one."""
        cache = self._module_classes
        known = cache.get(cls)
        if known is not None:
            return known
        cache[cls] = False  # a cycle of bases is no module
        found = False
        for base in cls.bases:
            qualified = self.ctx.qualify(base)  # type: ignore[attr-defined]
            if qualified in MODULE_BASES:
                found = True
                break
            if depth < 8:
                name = dotted_name(base) or ""
                local = [c for c in self._top_classes().get(name, ()) if c is not cls]
                if local and all(self.is_module_class(c, depth + 1) for c in local):
                    found = True
                    break
                if not local and name and self.ctx.project.module_class(name):  # type: ignore[attr-defined]
                    found = True  # `class Net(BaseModel)`, BaseModel an nn.Module of another project module
                    break
        cache[cls] = found
        return found

    def _top_classes(self) -> Dict[str, List[ast.ClassDef]]:
        """The file's top-level classes by name (read once)."""
        found = self._top_level_classes
        if found is None:
            found = self._top_level_classes = {}
            for node in self.tree.module.body:  # type: ignore[attr-defined]
                if type(node) is ast.ClassDef:
                    found.setdefault(node.name, []).append(node)
        return found
