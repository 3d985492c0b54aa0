"""``"cuda"``/``"cuda:N"`` used to place tensors or modules (see ``rules/MPS102.md``)."""

from __future__ import annotations

import ast
import re
from typing import Callable, Optional, Tuple

from mpslint.analysis.cuda_context import AVAILABILITY, DEVICE, is_cuda_literal
from mpslint.analysis.cuda_devices import argument_count as _argument_count
from mpslint.analysis.cuda_devices import assigns_device, indexed_cuda, is_cuda_device_value  # noqa: F401 (shared)
from mpslint.analysis.device_picker import NO_PICKER
from mpslint.analysis.distributed_code import DDP_BLOCKS, DISTRIBUTED_WORDS, UnguardedDdp, distributed_only
from mpslint.analysis.syntax import dotted_name, first_argument, string_value
from mpslint.checks.base import FixSpec, Rule, insert_before, replace, short
from mpslint.checks.guard_rewrite import guarded_outcome
from mpslint.checks.rewriting import (
    cuda,
    default_indent,
    first_statement,
    for_collective,
    indent_of,
    picker,
    starts_line,
    torch_name,
)

Found = Tuple[ast.AST, Callable[[], Optional[FixSpec]]]


def device_choice_literal(rule: Rule, literal: ast.AST) -> bool:
    """Part of a cuda-or-something choice that MPS103 reports as a whole."""
    tree = rule.ctx.tree
    child = literal
    for parent in tree.ancestors(literal):
        cls = type(parent)
        if cls is ast.IfExp and (child is parent.body or child is parent.orelse):  # type: ignore[attr-defined]
            return True
        if cls is ast.If:
            owner = tree.block_owner(child)
            in_body = owner is not None and owner[0] is parent and owner[1] == "body"
            return in_body and cuda(rule.ctx).test_kind(parent.test) == AVAILABILITY and assigns_device(parent)  # type: ignore[attr-defined]
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            return False
        child = parent
    return False


_GPU_IDS = re.compile(r"^(gpu_ids|gpus|gpu_list|device_ids|gpu_devices|cuda_devices)$")


def _names_gpu_ids(node: ast.AST) -> bool:
    """``gpu_ids``, ``opt.gpu_ids``, ``self.gpus``: a list of CUDA device numbers."""
    name = node.id if type(node) is ast.Name else node.attr if type(node) is ast.Attribute else ""  # type: ignore[attr-defined]
    return bool(_GPU_IDS.match(name))


def _all_values(call: ast.Call) -> list:
    return [*call.args, *(k.value for k in call.keywords)]


def _under_cuda_test(ctx, node: ast.AST) -> bool:
    """In the branch of a test that names CUDA (``if provider == "CUDAExecutionProvider":``): the code asked."""
    child = node
    for parent in ctx.ancestors(node):
        cls = type(parent)
        if cls in (ast.If, ast.IfExp) and child is not parent.test and "cuda" in ctx.text(parent.test).lower():  # type: ignore[attr-defined]
            return not cuda(ctx).mentions_mps(parent.test)  # type: ignore[attr-defined]
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
            return False
        child = parent
    return False


def _rank_index(call: ast.Call) -> bool:
    """``torch.device("cuda", rank)``, ``torch.device("cuda", args.gpu)``: a GPU chosen at run time."""
    if _argument_count(call) != 2:
        return False
    second = ([*call.args, *(k.value for k in call.keywords)])[1]
    return not (type(second) is ast.Constant and type(second.value) is int)  # type: ignore[attr-defined]


def _device_name(target: ast.AST) -> bool:
    name = target.id if type(target) is ast.Name else target.attr if type(target) is ast.Attribute else ""  # type: ignore[attr-defined]
    low = name.lower()
    return low in ("device", "dev", "torch_device") or low.endswith("_device") or low == "map_location"


class CudaDeviceLiteral(Rule):
    TRIGGERS = ("cuda", "gpu", "device_ids")  # `.to(gpu_ids[0])` needs no "cuda" in the file

    def visit_Constant(self, node: ast.Constant) -> None:
        if not is_cuda_literal(node):
            self._formatted(node)
            return
        found = self._placement(node)
        if found is None:
            return
        reported, fix = found
        context = cuda(self.ctx)
        if device_choice_literal(self, node) or context.in_mps_aware_choice(node):
            return
        if DEVICE in context.guards(node) or context.in_cuda_named_function(node):
            return
        value = node.value
        message = f'"{value}" places this on CUDA only, so it never runs on MPS; use a device chosen at run time'
        guarded = guarded_outcome(self.ctx, node)
        if guarded is not None:
            # Under `if use_cuda:` the placement only moves if the guard does too.
            found = guarded.fix
            if found is None:
                message += f"; not fixed: a CUDA availability test decides whether it runs, and {guarded.reason}"
        else:
            found = fix() if value == "cuda" else None
            if value != "cuda":
                message += "; not fixed: it names a particular GPU"
        self.report(reported, message, fix=found)

    def visit_Call(self, node: ast.Call) -> None:
        """``net.to(gpu_ids[0])``, ``device=gpu_ids[0]``: an integer from a list of GPU ids places on that CUDA
        device."""
        func = node.func
        if type(func) is ast.Attribute and func.attr == "to" and len(node.args) == 1 and not node.keywords:
            index = node.args[0]
        else:
            index = next((k.value for k in node.keywords if k.arg == "device"), None)  # torch.zeros(3, device=gpus[0])
        if type(index) is not ast.Subscript or not _names_gpu_ids(index.value):  # type: ignore[attr-defined]
            return
        ctx = self.ctx
        context = cuda(ctx)
        if distributed_only(ctx, node) or not context.unguarded(node) or context.in_cuda_named_function(node):
            return
        self.report(index, f"`{short(ctx, index)}` is a CUDA device index: an integer device places on that GPU, so "
                           "this never runs on MPS; use a device chosen at run time; not fixed: it names a particular GPU")

    def _formatted(self, node: ast.AST) -> None:
        """``"cuda:{}".format(i)``, ``f"cuda:{rank}"``, ``"cuda:%d" % i`` placing something or naming the device."""
        ctx = self.ctx
        value = node.value if type(node) is ast.Constant else None  # type: ignore[attr-defined]
        if not isinstance(value, str) or not value.startswith("cuda:"):
            return
        parent = ctx.parent(node)
        if type(parent) is ast.JoinedStr:
            if parent.values[0] is not node:  # type: ignore[attr-defined]
                return
            expr = parent
        elif type(parent) is ast.Attribute and parent.attr == "format" and "{" in value:  # type: ignore[attr-defined]
            expr = ctx.parent(parent)
            if type(expr) is not ast.Call:
                return
        elif type(parent) is ast.BinOp and type(parent.op) is ast.Mod and parent.left is node and "%" in value:  # type: ignore[attr-defined]
            expr = parent
        else:
            return
        holder = ctx.parent(expr)
        if type(holder) in (ast.Assign, ast.AnnAssign) and holder.value is expr:  # type: ignore[attr-defined]
            targets = holder.targets if type(holder) is ast.Assign else [holder.target]  # type: ignore[attr-defined]
            if any(_device_name(t) for t in targets):
                self._indexed(expr, expr)  # device = f"cuda:{args.gpu}"
            return
        call = ctx.parent(holder) if type(holder) is ast.keyword else holder
        if type(call) is not ast.Call:
            return
        keyword = holder.arg if type(holder) is ast.keyword else None  # type: ignore[attr-defined]
        places = (keyword in ("device", "map_location")
                  or keyword is None and call.args and call.args[0] is expr
                  and (ctx.qualify(call.func) == "torch.device"
                       or type(call.func) is ast.Attribute and call.func.attr == "to"))  # type: ignore[attr-defined]
        if places:
            self._indexed(expr, call)

    def _indexed(self, reported: ast.AST, call: ast.AST) -> None:
        """A particular CUDA device (``torch.device("cuda", i)``, ``f"cuda:{i}"``) placing work.

        Where it names the device a variable holds, it keeps that GPU wherever CUDA is and gets the device
        picker elsewhere (where it failed before); in place (``.to(f"cuda:{i}")``) it is reported only.
        """
        ctx = self.ctx
        if distributed_only(ctx, call):
            return  # under `if args.distributed:`: one GPU per process, a run a Mac does not make
        context = cuda(ctx)
        if not context.unguarded(call) or context.in_cuda_named_function(call) or _under_cuda_test(ctx, call):
            return
        device = call if type(call) is ast.Call and ctx.qualify(call.func) == "torch.device" else reported  # type: ignore[attr-defined]
        fix, reason = self._fix_indexed(device)
        self.report(reported, f"`{short(ctx, reported)}` names a particular CUDA device, so this never runs on MPS; "
                              "use it only where CUDA is available" + (f"; not fixed: {reason}" if fix is None else ""),
                    fix=fix)

    def _fix_indexed(self, value: ast.AST) -> Tuple[Optional[FixSpec], str]:
        """``device = <that GPU>`` -> ``device = <that GPU> if torch.cuda.is_available() else pick_device()``.

        Safe: where CUDA is available (wherever the original ran) the same GPU is chosen; elsewhere the original
        failed at its first use.
        """
        ctx = self.ctx
        holder = ctx.parent(value)
        if type(holder) not in (ast.Assign, ast.AnnAssign) or holder.value is not value:  # type: ignore[attr-defined]
            return None, "it names a particular GPU where it is used (give it a device variable)"
        index = ctx.text(value).lower()
        if any(word in index for word in DISTRIBUTED_WORDS):
            return None, "it names a process's GPU (a distributed run, which a Mac does not make)"
        if ctx.analysis(UnguardedDdp).found:
            return None, DDP_BLOCKS
        torch = torch_name(ctx)
        call = picker(ctx).picker_call(value)
        if torch is None or call is None:
            return None, NO_PICKER
        device_object = type(value) is ast.Call and ctx.qualify(value.func) == "torch.device"  # type: ignore[attr-defined]
        other = call.text if device_object else f"{call.text}.type"
        text = f"{ctx.text(value)} if {torch}.cuda.is_available() else {other}"
        return FixSpec.safe(f"Use `{text}`", replace(value, text), *call.edits), ""

    def _placement(self, node: ast.Constant) -> Optional[Found]:
        """(node to report, fix factory) when the literal places something on a device."""
        ctx = self.ctx
        parent = ctx.parent(node)
        if type(parent) is ast.keyword or (type(parent) is ast.Call and node in parent.args):  # type: ignore[attr-defined]
            call = ctx.parent(parent) if type(parent) is ast.keyword else parent
            if type(call) is not ast.Call:
                return None
            keyword = parent.arg if type(parent) is ast.keyword else None  # type: ignore[attr-defined]
            first = first_argument(call) is node
            if ctx.qualify(call.func) == "torch.device" and (keyword == "type" or (keyword is None and first)):
                if device_choice_literal(self, call) or self._fallback(call):
                    return None
                if type(ctx.parent(call)) is ast.Compare:
                    return None  # `x.device != torch.device("cuda")` asks where something is; it places nothing
                if _rank_index(call):
                    index = ctx.text(_all_values(call)[1]).lower()
                    if not any(word in index for word in DISTRIBUTED_WORDS):
                        self._indexed(call, call)  # torch.device("cuda", args.gpu): a particular GPU
                    return None  # torch.device("cuda", local_rank): one GPU per process, distributed CUDA code
                return call, lambda: self._fix_torch_device(call)
            if keyword in ("device", "map_location") or (
                type(call.func) is ast.Attribute and call.func.attr == "to" and keyword is None and first
            ):
                return node, lambda: self._fix_reference(node)
            name = dotted_name(call.func) or ""
            if keyword == "default" and name.endswith("add_argument") and self._device_option(call):
                return node, lambda: self._fix_default(node, call)
            if name == "getattr" and len(call.args) == 3 and call.args[2] is node \
                    and "device" in (string_value(call.args[1]) or "").lower():
                # getattr(args, "device", "cuda"): CUDA unless the config says else; the fallback becomes the
                # picked device's type, "cuda" wherever CUDA is (and the config's own device is kept)
                return node, lambda: self._fix_by_picker(node, ".type")
            return None
        if type(parent) in (ast.Assign, ast.AnnAssign) and parent.value is node:  # type: ignore[attr-defined]
            targets = parent.targets if type(parent) is ast.Assign else [parent.target]  # type: ignore[attr-defined]
            if any(_device_name(t) for t in targets):
                return node, lambda: self._fix_by_picker(node, ".type")
            return None
        if type(parent) is ast.arguments:
            param = _parameter_of_default(parent, node)
            if param is not None and _device_name(ast.Name(id=param.arg)):
                return node, lambda: self._fix_default_parameter(node, param.arg, ctx.parent(parent))
        return None

    def _fallback(self, node: ast.AST) -> bool:
        """``get_current_accelerator() or torch.device("cuda")``: CUDA only when no accelerator was found."""
        parent = self.ctx.parent(node)
        if type(parent) is ast.BoolOp and type(parent.op) is ast.Or and parent.values[0] is not node:  # type: ignore[attr-defined]
            before = parent.values[: parent.values.index(node)]  # type: ignore[attr-defined]
            return any("accelerator" in self.ctx.text(v) for v in before)
        return False

    def _device_option(self, call: ast.Call) -> bool:
        flags = [string_value(a) or "" for a in call.args]
        return any("device" in f.lower() or f.lstrip("-").lower() in ("gpu", "dev") for f in flags)

    def _fix_torch_device(self, call: ast.Call) -> Optional[FixSpec]:
        if _argument_count(call) != 1:
            return None  # torch.device("cuda", rank)
        parent = self.ctx.parent(call)
        if type(parent) in (ast.Assign, ast.AnnAssign) and parent.value is call:  # type: ignore[attr-defined]
            return self._fix_by_picker(call, "")
        ref = picker(self.ctx).device_ref(call)
        if ref is None or ref.is_str:
            return None
        return FixSpec.safe(f"Use `{ref.text}`", replace(call, ref.text), *ref.edits)

    def _fix_reference(self, node: ast.AST) -> Optional[FixSpec]:
        device = for_collective(self.ctx, node)
        if device is not None:
            # made for all_reduce/all_gather: NCCL needs CUDA, gloo (a Mac) the CPU; MPS tensors reach no backend
            return FixSpec.safe(f"Use `{device}`: the collective's backend decides", replace(node, device))
        ref = picker(self.ctx).device_ref(node)
        if ref is None:
            return None
        return FixSpec.safe(f"Use `{ref.text}`", replace(node, ref.text), *ref.edits)

    def _fix_by_picker(self, node: ast.AST, suffix: str) -> Optional[FixSpec]:
        call = picker(self.ctx).picker_call(node)
        if call is None:
            return None
        text = call.text + suffix
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *call.edits)

    def _fix_default_parameter(self, node: ast.AST, param: str, function) -> Optional[FixSpec]:
        """``device="cuda"`` -> ``device=None``, picked when the function runs (not when it is defined)."""
        if type(function) not in (ast.FunctionDef, ast.AsyncFunctionDef):
            return None  # a lambda has no body to pick the device in
        first = first_statement(function.body)
        if first is None or not starts_line(self.ctx, first):
            return None
        call = picker(self.ctx).picker_call(node)
        if call is None:
            return None
        indent = indent_of(self.ctx, first)
        step = default_indent(self.ctx)
        text = f"if {param} is None:\n{indent}{step}{param} = {call.text}.type\n{indent}"
        return FixSpec.safe(
            f"Default to `None` and use `{call.text}.type` when the function runs",
            replace(node, "None"), insert_before(first, text), *call.edits,
        )

    def _fix_default(self, node: ast.AST, call: ast.Call) -> Optional[FixSpec]:
        for item in call.keywords:
            if item.arg == "choices" and not cuda(self.ctx).mentions_mps(item.value):
                return None  # `--device mps` would be rejected
        return self._fix_by_picker(node, ".type")


def _parameter_of_default(arguments: ast.arguments, default: ast.AST) -> Optional[ast.arg]:
    positional = [*arguments.posonlyargs, *arguments.args]
    for param, value in zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults):
        if value is default:
            return param
    for param, value in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if value is default:
            return param
    return None


