"""Rewrite a placement guard decided by CUDA availability, and everything it decides, in one fix.

``analysis/availability.py`` finds the guard's source: the
``torch.cuda.is_available()`` tests in the guard or in the definitions of the
flag it tests. The fix replaces each with "an accelerator is available"
(``torch.accelerator.is_available()`` from torch 2.6, else
``pick_device().type != "cpu"``) and, in the same fix, every placement the
flag decides: ``.cuda()`` becomes ``.to(device)``, ``"cuda" if use_cuda else
"cpu"`` becomes ``pick_device().type if use_cuda else "cpu"``. After it, a Mac
takes every branch a CUDA machine takes, on its own GPU.

That is safe only if what runs under the guard on a CUDA machine also works
on a Mac. The fix is withheld, and the findings say why, when the guarded code
does something only CUDA can (``torch.cuda.synchronize()``, ``.cuda(0)``,
``torch.load`` of a checkpoint without ``map_location``, NCCL), or when the
flag leaves the file's sight (passed to a function, returned, stored).

Every finding the guard decides carries the same fix (the same edits), so the
fixer applies it once.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from mpslint.analysis.availability import Availability, Source
from mpslint.analysis.cuda_context import is_cuda_literal
from mpslint.analysis.distributed_code import DDP_BLOCKS, UnguardedDdp
from mpslint.analysis.syntax import dotted_name, string_value
from mpslint.checks.base import Context, FixSpec, NodeEdit, replace, short
from mpslint.checks.rewriting import movable, picker, to_device, torch_name
from mpslint.knowledge.cuda_api import ACCELERATOR_IS_AVAILABLE, floor_of

# torch.cuda functions that do nothing harmful without CUDA: they return 0 or an empty answer, or wait for a
# CUDA context that never comes (checked on a CPU-only torch 2.13).
TOLERATED = frozenset({
    "is_available", "device_count", "manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache",
    "memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved", "memory_stats",
    "is_bf16_supported", "is_initialized", "amp",
})
_LOGGING = ("print", "logging", "logger", "log", "warn", "warnings")


@dataclass(frozen=True)
class Outcome:
    fix: Optional[FixSpec]
    reason: str = ""  # why there is no fix


def guarded_outcome(ctx: Context, node: ast.AST) -> Optional[Outcome]:
    """None when no availability guard decides ``node``; else the guard's rewrite (or why there is none)."""
    source = ctx.analysis(Availability).source_of(node)
    if source is None:
        return None
    if ctx.analysis(UnguardedDdp).found:
        return Outcome(None, DDP_BLOCKS)
    return ctx.analysis(_Rewrites).of(source)


def source_rewrite(ctx: Context, source: Source) -> Outcome:
    return ctx.analysis(_Rewrites).of(source)


class _Rewrites:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._done: Dict[object, Outcome] = {}

    def of(self, source: Source) -> Outcome:
        found = self._done.get(source.key)
        if found is None:
            found = self._done[source.key] = _Builder(self.ctx, source).build()
        return found


class _Builder:
    def __init__(self, ctx: Context, source: Source) -> None:
        self.ctx = ctx
        self.tree = ctx.tree
        self.source = source
        self.availability = ctx.analysis(Availability)
        self.regions: List[object] = list(source.regions)
        self.edits: List[NodeEdit] = []

    def build(self) -> Outcome:
        reason = self._collect_regions()
        if reason:
            return Outcome(None, reason)
        for region in self.regions:
            reason = self._rewrite_region(region)
            if reason:
                return Outcome(None, reason)
        reason = self._flip()
        if reason:
            return Outcome(None, reason)
        edits = picker(self.ctx).merged(self.edits)
        what = self.source.label
        return Outcome(FixSpec.safe(f"Use the accelerator wherever {what} chose CUDA", *edits))

    # ------------------------------------------------------------- regions

    def _collect_regions(self) -> str:
        """The code each flag read decides when true, or why a read cannot follow the rewrite."""
        definitions = {id(d) for flag in self.source.flags for d in flag.definitions}
        for flag in self.source.flags:
            for use in flag.uses:
                reason = self._use(flag, use, definitions)
                if reason:
                    return reason
        return ""

    def _use(self, flag, use: ast.AST, definitions) -> str:
        tree = self.tree
        node, negated = use, False
        while True:
            parent = tree.parent(node)
            cls = type(parent)
            if cls is ast.BoolOp and type(parent.op) is ast.And:  # type: ignore[attr-defined]
                values = parent.values  # type: ignore[attr-defined]
                if not negated:
                    position = next(i for i, v in enumerate(values) if v is node)
                    self.regions.extend(values[position + 1:])
                node = parent
                continue
            if cls is ast.UnaryOp and type(parent.op) is ast.Not:  # type: ignore[attr-defined]
                negated = not negated
                node = parent
                continue
            break
        if cls in (ast.If, ast.While) and parent.test is node:  # type: ignore[attr-defined]
            self.regions.append(parent.orelse if negated else parent.body)  # type: ignore[attr-defined]
            return ""
        if cls is ast.IfExp and parent.test is node:  # type: ignore[attr-defined]
            self.regions.append(parent.orelse if negated else parent.body)  # type: ignore[attr-defined]
            return ""
        if cls in (ast.Assign, ast.AnnAssign) and id(parent) in definitions:
            return ""  # a flag derived from this one: its own reads are checked too
        if cls is ast.keyword and parent.arg == "pin_memory":  # type: ignore[attr-defined]
            return ""  # pinning on a Mac: the DataLoader warns and ignores it
        if cls is ast.Dict and node in parent.values:  # type: ignore[attr-defined]
            key = parent.keys[parent.values.index(node)]  # type: ignore[attr-defined]
            if string_value(key) == "pin_memory":
                return ""
        if cls is ast.FormattedValue or (cls is ast.Call and node is not parent.func and _logs(parent)):  # type: ignore[attr-defined]
            return ""
        where = tree.statement_of(use) or use
        return f"`{flag.name}` is also used in `{short(self.ctx, where)}` (line {use.lineno}), which mpslint cannot follow"  # type: ignore[attr-defined]

    def _rewrite_region(self, region) -> str:
        roots = region if isinstance(region, list) else [region]
        tree = self.tree
        nodes = tree.nodes
        for root in roots:
            first, last = tree.index(root), tree.end(root)
            if first < 0:
                continue
            skip_until = -1
            for position in range(first, last + 1):
                if position <= skip_until:
                    continue
                node = nodes[position]
                handled = self._site(node, root)
                if handled is None:
                    continue
                if isinstance(handled, str):
                    return handled
                skip_until = tree.end(node)
        return ""

    def _site(self, node: ast.AST, root: ast.AST):
        """None: nothing CUDA-specific here; a str: why the rewrite is unsafe; True: rewritten (skip inside)."""
        ctx = self.ctx
        cls = type(node)
        if cls is ast.Call:
            func = node.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr == "cuda" and ctx.qualify(func) is None:
                if not movable(node):  # type: ignore[arg-type]
                    return self._blocked(node, "chooses a particular GPU")
                return self._move(node)  # type: ignore[arg-type]
            name = ctx.qualify(func) or ""
            if name == "torch.cuda.synchronize":
                return self._synchronize(node)  # type: ignore[arg-type]
            if name == "torch.load" and not any(k.arg == "map_location" for k in node.keywords) and len(node.args) < 2:  # type: ignore[attr-defined]
                return self._blocked(node, "loads tensors onto the devices they were saved from")
            return None
        if cls is ast.Attribute:
            name = ctx.qualify(node) or ""
            if name.startswith("torch.cuda."):
                member = name[len("torch.cuda."):].split(".", 1)[0]
                if member not in TOLERATED:
                    return self._blocked(node, "needs CUDA")
            return None
        if cls is ast.Constant and isinstance(node.value, str):  # type: ignore[attr-defined]
            if node.value == "nccl":  # type: ignore[attr-defined]
                return self._blocked(node, "needs CUDA")
            if is_cuda_literal(node):
                return self._literal(node, root)
        return None

    def _synchronize(self, node: ast.Call):
        """Under the guard an accelerator exists: ``torch.accelerator.synchronize()`` (torch 2.6) waits for it."""
        torch = torch_name(self.ctx)
        if node.args or node.keywords or torch is None or floor_of(self.ctx.settings.torch_version) < ACCELERATOR_IS_AVAILABLE:
            return self._blocked(node, "needs CUDA")
        self.edits.append(replace(node, f"{torch}.accelerator.synchronize()"))
        return True

    def _blocked(self, node: ast.AST, why: str) -> str:
        statement = self.tree.statement_of(node) or node
        return f"under it, `{short(self.ctx, statement)}` (line {node.lineno}) {why}"  # type: ignore[attr-defined]

    def _own_guard(self, node: ast.AST) -> bool:
        """Decided by this guard, not by another availability guard nested in it."""
        inner = self.availability.source_of(node)
        return inner is not None and inner.key == self.source.key

    def _move(self, node: ast.Call):
        if not self._own_guard(node):
            return self._blocked(node, "is also under another CUDA availability guard")
        ref = picker(self.ctx).device_ref(node)
        if ref is None:
            return self._blocked(node, "has no device to move to (torch is not imported at module level before this code)")
        edit, _ = to_device(self.ctx, node, ref)
        self.edits.extend((edit, *ref.edits))
        return True

    def _literal(self, literal: ast.AST, root: ast.AST):
        """A ``"cuda"`` string under the guard: a device choice's CUDA side, or a placement."""
        ctx = self.ctx
        tree = self.tree
        if string_value(literal) != "cuda":
            return self._blocked(literal, "names a particular GPU")
        parent = tree.parent(literal)
        holder = literal
        if type(parent) is ast.Call and ctx.qualify(parent.func) == "torch.device" \
                and len(parent.args) == 1 and not parent.keywords:  # type: ignore[attr-defined]
            holder, parent = parent, tree.parent(parent)
        device_object = holder is not literal
        choice = tree.parent(holder)
        if type(choice) is ast.IfExp and choice.body is holder:  # type: ignore[attr-defined]
            return self._choice(choice, device_object)  # type: ignore[arg-type]
        if type(parent) in (ast.Assign, ast.AnnAssign) and parent.value is holder:  # type: ignore[attr-defined]
            call = picker(ctx).picker_call(holder)
            if call is None:
                return self._blocked(literal, "has no device picker to use")
            self.edits.extend((replace(holder, call.text if device_object else f"{call.text}.type"), *call.edits))
            return True
        if not device_object and (type(parent) is ast.keyword and parent.arg in ("device", "map_location")  # type: ignore[attr-defined]
                                  or type(parent) is ast.Call and type(parent.func) is ast.Attribute
                                  and parent.func.attr == "to" and parent.args and parent.args[0] is literal):  # type: ignore[attr-defined]
            ref = picker(ctx).device_ref(literal)
            if ref is None:
                return self._blocked(literal, "has no device to use")
            self.edits.extend((replace(literal, ref.text), *ref.edits))
            return True
        return self._blocked(literal, "uses CUDA by name")

    def _choice(self, choice: ast.IfExp, device_object: bool):
        """``"cuda" if flag else "cpu"`` (or with ``torch.device``) -> the picker on the CUDA side."""
        ctx = self.ctx
        call = picker(ctx).picker_call(choice)
        if call is None:
            return self._blocked(choice, "has no device picker to use")
        parent = self.tree.parent(choice)
        torch = torch_name(ctx) or "torch"
        test, other = ctx.text(choice.test), ctx.text(choice.orelse)
        if type(parent) is ast.Call and ctx.qualify(parent.func) == "torch.device" and len(parent.args) == 1 \
                and not parent.keywords and parent.args[0] is choice:  # type: ignore[attr-defined]
            # torch.device("cuda" if flag else "cpu") -> pick_device() if flag else torch.device("cpu")
            text = f"{call.text} if {test} else {torch}.device({other})"
            self.edits.extend((replace(parent, text), *call.edits))
        else:
            self.edits.extend((replace(choice.body, call.text if device_object else f"{call.text}.type"), *call.edits))
        return True

    # ----------------------------------------------------------------- flip

    def _flip(self) -> str:
        ctx = self.ctx
        torch = torch_name(ctx)
        for term in self.source.terms:
            if torch is not None and floor_of(ctx.settings.torch_version) >= ACCELERATOR_IS_AVAILABLE:
                text = f"{torch}.accelerator.is_available()"
                extra: Tuple[NodeEdit, ...] = ()
            else:
                # The device the fix picks says it (a variable that prefers CUDA, DEVICE, a local device);
                # the caller's device (a parameter) would not: it may be the CPU on a CUDA machine.
                devices = picker(ctx)
                ref = devices.device_ref(term)
                if ref is not None and (devices.variable_in_scope(term) is not None or devices.chosen_device(term) is None):
                    text, extra = f'{ref.type} != "cpu"', ref.edits
                else:
                    call = picker(ctx).picker_call(term)
                    if call is None:
                        return "mpslint cannot define a device picker in this file (torch is not imported at module level before the CUDA code)"
                    text, extra = f'{call.text}.type != "cpu"', call.edits
            self.edits.extend((replace(term, text), *extra))
        return ""


def _logs(call: ast.AST) -> bool:
    name = dotted_name(call.func) or ""  # type: ignore[attr-defined]
    return name.split(".", 1)[0] in _LOGGING or name.rsplit(".", 1)[-1] in ("info", "debug", "warning", "print", "write")
