"""MPS1xx: CUDA-only code that never reaches MPS (DESIGN.md rule catalog).

Every fix keeps the program behaving as before on CUDA and on CPU
(DESIGN.md principle 2): placement goes through a device picker that prefers
CUDA, AMP is enabled where it was (never on CPU, where ``torch.cuda.amp``
disabled itself), and every rewritten call also works with no accelerator.
Code that already handles other devices stays silent (``analysis/cuda_context``).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from mpslint.analysis.cuda_context import (
    AVAILABILITY,
    DEVICE,
    cuda_only_module,
    guards,
    in_cuda_named_function,
    in_cuda_method,
    in_mps_aware_choice,
    is_cuda_literal,
    mentions_mps,
    string_value,
    test_kind,
)
from mpslint.analysis.device_picker import DevicePicker, torch_alias
from mpslint.analysis.names import dotted_name
from mpslint.checks.base import FixSpec, NodeEdit, Rule, replace, replace_span
from mpslint.knowledge import cuda_api
from mpslint.knowledge.cuda_api import floor_of

_CUDA = ("cuda",)


def _picker(rule: Rule) -> DevicePicker:
    return rule.ctx.analysis(DevicePicker)


def _torch(rule: Rule) -> Optional[str]:
    return rule.ctx.analysis(torch_alias)


def _is_simple(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer))


def _and(expr: cst.BaseExpression, code: str, cond: str) -> str:
    """``enabled=<expr>`` combined with a device condition."""
    if isinstance(expr, cst.Name) and expr.value == "True":
        return cond
    if isinstance(expr, cst.Name) and expr.value == "False":
        return "False"
    return f"{code if _is_simple(expr) else f'({code})'} and {cond}"


def _statement_of(ctx, call: cst.Call) -> Optional[cst.Expr]:
    """The ``Expr`` statement when ``call`` is a whole statement alone on its line."""
    expr = ctx.parent(call)
    line = ctx.parent(expr) if expr is not None else None
    if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return expr
    return None


def _indent_of(ctx, node: cst.CSTNode) -> str:
    """The indentation of the block ``node`` sits in."""
    depth = 0
    indents: List[str] = []
    for parent in ctx.ancestors(node):
        if isinstance(parent, cst.IndentedBlock):
            depth += 1
            indents.append(parent.indent if parent.indent is not None else ctx.module.default_indent)
    return "".join(reversed(indents))


def _unguarded(rule: Rule, node: cst.CSTNode) -> bool:
    """Not under any CUDA guard, not in a device choice that knows MPS, not in a module built on a CUDA-only library."""
    if rule.ctx.analysis(cuda_only_module):
        return False
    return not any(True for _ in guards(rule.ctx, node)) and not in_mps_aware_choice(rule.ctx, node)


# --------------------------------------------------------------------------- MPS101


class CudaMethod(Rule):
    CODE = "MPS101"
    NAME = "cuda-method"
    TRIGGERS = _CUDA

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
            return
        if self.ctx.qualify(func) is not None:  # a module's `cuda` (numba.cuda, cupy.cuda), not a tensor's
            return
        if not _tensor_cuda_signature(node):
            return  # `quantizer.cuda(tensor, meta=...)`: some other object's method
        if in_cuda_method(self.ctx, node) or DEVICE in set(guards(self.ctx, node)):
            return
        if in_mps_aware_choice(self.ctx, node, siblings=False):
            return
        self.report(
            node,
            "`.cuda()` moves to CUDA only, so this never runs on MPS (and fails without CUDA); use `.to(device)`",
            fix=self._fix(node),
        )

    def _fix(self, node: cst.Call) -> Optional[FixSpec]:
        keywords = {}
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in ("non_blocking", "memory_format"):
                return None  # `.cuda(0)`, `.cuda(device=rank)`: a chosen GPU is not ours to change
            keywords[arg.keyword.value] = arg
        ref = _picker(self).device_ref(node)
        if ref is None:
            return None
        parts = [ref.text]
        if "non_blocking" in keywords:
            # Asynchronous host-to-device copies can corrupt data on MPS (mps.md §1.8): keep them on CUDA only.
            value = keywords["non_blocking"].value
            parts.append("non_blocking=" + _and(value, self.ctx.code_for(value), f'{ref.type} == "cuda"'))
        if "memory_format" in keywords:
            parts.append("memory_format=" + self.ctx.code_for(keywords["memory_format"].value))
        new = f"to({', '.join(parts)})"
        return FixSpec.safe(f"Replace `.cuda()` with `.{new}`", replace_span(node.func.attr, node, new), *ref.edits)


def _tensor_cuda_signature(node: cst.Call) -> bool:
    """``Tensor.cuda(device=None, non_blocking=False, memory_format=...)`` / ``Module.cuda(device=None)``."""
    positional = [a for a in node.args if a.keyword is None and not a.star]
    if len(positional) > 2 or any(a.star for a in node.args):
        return False
    return all(a.keyword is None or a.keyword.value in ("device", "non_blocking", "memory_format") for a in node.args)


# --------------------------------------------------------------------------- MPS102


def _device_choice_literal(ctx, literal: cst.CSTNode) -> bool:
    """Part of a cuda-or-something choice that MPS103 reports as a whole."""
    child = literal
    for parent in ctx.ancestors(literal):
        if isinstance(parent, cst.IfExp) and (child is parent.body or child is parent.orelse):
            return True
        if isinstance(parent, cst.If):
            return child is parent.body and test_kind(ctx, parent.test) == AVAILABILITY and _assigns_device(parent)
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef)):
            return False
        child = parent
    return False


def _assigns_device(branch: cst.If) -> bool:
    """Whether an ``if`` body assigns or returns a CUDA device (an ``if``-statement device choice)."""
    body = branch.body.body if isinstance(branch.body, cst.IndentedBlock) else []
    for stmt in body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            value = getattr(small, "value", None) if isinstance(small, (cst.Assign, cst.AnnAssign, cst.Return)) else None
            if value is not None and _is_cuda_device_value(value):
                return True
    return False


def _is_cuda_device_value(value: cst.BaseExpression) -> bool:
    if is_cuda_literal(value):
        return True
    if isinstance(value, cst.Call) and (dotted_name(value.func) or "").endswith("device") and value.args:
        return is_cuda_literal(value.args[0].value)
    return False


def _rank_index(call: cst.Call) -> bool:
    """``torch.device("cuda", local_rank)``: one GPU per process, distributed CUDA code."""
    return len(call.args) == 2 and not isinstance(call.args[1].value, cst.Integer)


def _fallback(ctx, node: cst.CSTNode) -> bool:
    """``get_current_accelerator() or torch.device("cuda")``: CUDA only when no accelerator was found."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.Or) and parent.right is node:
        return "accelerator" in ctx.code_for(parent.left)
    return False


def _device_name(target: cst.BaseExpression) -> bool:
    name = target.value if isinstance(target, cst.Name) else target.attr.value if isinstance(target, cst.Attribute) else ""
    low = name.lower()
    return low in ("device", "dev", "torch_device") or low.endswith("_device") or low == "map_location"


class CudaDeviceLiteral(Rule):
    CODE = "MPS102"
    NAME = "cuda-device-literal"
    TRIGGERS = _CUDA

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if not is_cuda_literal(node):
            return
        found = self._placement(node)
        if found is None:
            return
        reported, fix = found
        if _device_choice_literal(self.ctx, node) or in_mps_aware_choice(self.ctx, node):
            return
        if DEVICE in set(guards(self.ctx, node)) or in_cuda_named_function(self.ctx, node):
            return
        value = string_value(node)
        self.report(
            reported,
            f'"{value}" places this on CUDA only, so it never runs on MPS; use a device chosen at run time',
            fix=fix() if value == "cuda" else None,
        )

    def _placement(self, node: cst.SimpleString):
        """(node to report, fix factory) when the literal places something on a device."""
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.Arg):
            call = ctx.parent(parent)
            if not isinstance(call, cst.Call):
                return None
            keyword = parent.keyword.value if parent.keyword is not None else None
            first = call.args and call.args[0] is parent
            if ctx.qualify(call.func) == "torch.device" and (keyword == "type" or (keyword is None and first)):
                if _device_choice_literal(ctx, call) or _rank_index(call) or _fallback(ctx, call):
                    return None
                return call, lambda: self._fix_torch_device(call)
            if keyword in ("device", "map_location") or (
                isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and keyword is None and first
            ):
                return node, lambda: self._fix_reference(node)
            name = dotted_name(call.func) or ""
            if keyword == "default" and name.endswith("add_argument") and self._device_option(call):
                return node, lambda: self._fix_default(node, call)
            return None
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            if any(_device_name(t) for t in targets):
                return node, lambda: self._fix_by_picker(node, ".type")
            return None
        if isinstance(parent, cst.Param) and parent.default is node and _device_name(parent.name):
            return node, lambda: self._fix_by_picker(node, ".type")
        return None

    def _device_option(self, call: cst.Call) -> bool:
        if not call.args:
            return False
        flags = [string_value(a.value) or "" for a in call.args if a.keyword is None]
        return any("device" in f.lower() or f.lstrip("-").lower() in ("gpu", "dev") for f in flags)

    def _fix_torch_device(self, call: cst.Call) -> Optional[FixSpec]:
        if len(call.args) != 1:
            return None  # torch.device("cuda", rank)
        parent = self.ctx.parent(call)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is call:
            return self._fix_by_picker(call, "")
        ref = _picker(self).device_ref(call)
        if ref is None or ref.is_str:
            return None
        return FixSpec.safe(f"Use `{ref.text}`", replace(call, ref.text), *ref.edits)

    def _fix_reference(self, node: cst.SimpleString) -> Optional[FixSpec]:
        ref = _picker(self).device_ref(node)
        if ref is None:
            return None
        return FixSpec.safe(f"Use `{ref.text}`", replace(node, ref.text), *ref.edits)

    def _fix_by_picker(self, node: cst.CSTNode, suffix: str) -> Optional[FixSpec]:
        call = _picker(self).picker_call(node)
        if call is None:
            return None
        text = call.text + suffix
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *call.edits)

    def _fix_default(self, node: cst.SimpleString, call: cst.Call) -> Optional[FixSpec]:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "choices" and not mentions_mps(arg.value):
                return None  # `--device mps` would be rejected
        return self._fix_by_picker(node, ".type")


# --------------------------------------------------------------------------- MPS103


def _cuda_side(node: cst.BaseExpression) -> Optional[Tuple[str, bool]]:
    """("cuda", is a torch.device call) for ``"cuda"`` / ``torch.device("cuda")``."""
    if is_cuda_literal(node):
        return string_value(node), False
    if isinstance(node, cst.Call) and (dotted_name(node.func) or "").endswith("device") and len(node.args) == 1:
        if is_cuda_literal(node.args[0].value):
            return string_value(node.args[0].value), True
    return None


def _cpu_side(node: cst.BaseExpression) -> Optional[bool]:
    if string_value(node) == "cpu":
        return False
    if isinstance(node, cst.Call) and (dotted_name(node.func) or "").endswith("device") and len(node.args) == 1:
        if string_value(node.args[0].value) == "cpu":
            return True
    return None


def _ends_on_cpu(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.IfExp):
        node = node.orelse
    return _cpu_side(node) is not None


class CudaOnlyDeviceChoice(Rule):
    CODE = "MPS103"
    NAME = "cuda-only-device-choice"
    TRIGGERS = _CUDA
    MESSAGE = "this device choice picks CUDA or the CPU, never MPS; choose CUDA, then MPS, then the CPU"

    def visit_IfExp(self, node: cst.IfExp) -> None:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.IfExp):
            return  # only the whole chain
        if _cuda_side(node.body) is None or not _ends_on_cpu(node.orelse) or mentions_mps(node):
            return  # `"cuda" if xla_gpu else state.device.type` is not a CUDA-or-CPU choice
        if in_mps_aware_choice(ctx, node) or DEVICE in set(guards(ctx, node)):
            return
        reported: cst.CSTNode = node
        grand = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
        if (
            isinstance(grand, cst.Call)
            and ctx.qualify(grand.func) == "torch.device"
            and len(grand.args) == 1
            and grand.args[0] is parent
        ):
            reported = grand
        self.report(reported, self.MESSAGE, fix=self._fix(node, reported))

    def _fix(self, node: cst.IfExp, reported: cst.CSTNode) -> Optional[FixSpec]:
        test = node.test
        if not (isinstance(test, cst.Call) and self.ctx.qualify(test.func) == "torch.cuda.is_available" and not test.args):
            return None  # a user flag (`use_cuda`, `args.cuda`) also decides: keep the user's choice
        cuda, cpu = _cuda_side(node.body), _cpu_side(node.orelse)
        if cuda is None or cuda[0] != "cuda" or cpu is None:
            return None
        call = _picker(self).picker_call(reported)
        if call is None:
            return None
        device_object = reported is not node or cuda[1]
        text = call.text if device_object else f"{call.text}.type"
        return FixSpec.safe(f"Use `{text}`", replace(reported, text), *call.edits)

    def visit_If(self, node: cst.If) -> None:
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.If) and parent.orelse is node:
            return  # an elif: the chain is judged from its first `if`
        if test_kind(ctx, node.test) != AVAILABILITY or not _assigns_device(node):
            return
        if in_mps_aware_choice(ctx, node):
            return
        self.report(node.test, self.MESSAGE, fix=self._fix_statement(node))

    def _fix_statement(self, node: cst.If) -> Optional[FixSpec]:
        """``if torch.cuda.is_available(): d = <cuda> / else: d = <cpu>`` -> ``d = pick_device()``."""
        test = node.test
        if not (isinstance(test, cst.Call) and self.ctx.qualify(test.func) == "torch.cuda.is_available" and not test.args):
            return None
        if not isinstance(node.orelse, cst.Else):
            return None
        first, second = _single_assignment(node.body), _single_assignment(node.orelse.body)
        if first is None or second is None:
            return None
        if self.ctx.code_for(first.targets[0].target) != self.ctx.code_for(second.targets[0].target):
            return None
        cuda, cpu = _cuda_side(first.value), _cpu_side(second.value)
        if cuda is None or cuda[0] != "cuda" or cpu is None or cuda[1] != cpu:
            return None
        call = _picker(self).picker_call(node)
        if call is None:
            return None
        target = self.ctx.code_for(first.targets[0].target)
        text = f"{target} = {call.text}" + ("" if cuda[1] else ".type")
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *call.edits)


def _single_assignment(block: cst.BaseSuite) -> Optional[cst.Assign]:
    if not isinstance(block, cst.IndentedBlock) or len(block.body) != 1:
        return None
    stmt = block.body[0]
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        return small
    return None


# --------------------------------------------------------------------------- MPS104


def _cuda_member(ctx, node: cst.BaseExpression) -> Optional[str]:
    """``X`` for a ``torch.cuda.X`` reference (through any import alias)."""
    name = ctx.qualify(node)
    if name is None or not name.startswith("torch.cuda."):
        return None
    return name[len("torch.cuda."):]


class TorchCudaApi(Rule):
    CODE = "MPS104"
    NAME = "torch-cuda-api"
    TRIGGERS = _CUDA

    def visit_Call(self, node: cst.Call) -> None:
        member = _cuda_member(self.ctx, node.func)
        api = cuda_api.EQUIVALENTS.get(member or "")
        if api is None or not _unguarded(self, node):
            return
        self.report(
            node,
            f"`torch.cuda.{api.name}()` only acts on CUDA; use {api.instead}",
            fix=self._fix(node, api),
        )

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        _report_unused_import(self, node, lambda base, name: (base, name) == ("torch", "cuda"))

    def _fix(self, node: cst.Call, api: cuda_api.CudaApi) -> Optional[FixSpec]:
        torch = _torch(self)
        if torch is None:
            return None
        floor = floor_of(self.ctx.settings.torch_version)
        if api.fix == "rename":
            if floor < api.since:
                return None
            new = f"{torch}.{api.target}"
            return FixSpec.safe(f"Use `{new}()`", replace(node.func, new))
        if api.fix == "seed":
            return self._fix_seed(node, torch)
        if api.fix == "accelerator-sync" and floor >= api.since and not node.args:
            statement = _statement_of(self.ctx, node)
            if statement is None:
                return None
            inner = _indent_of(self.ctx, statement) + self.ctx.module.default_indent
            text = f"if {torch}.accelerator.is_available():\n{inner}{torch}.accelerator.synchronize()"
            return FixSpec.safe("Synchronize the current accelerator, if there is one", replace(statement, text))
        if api.fix in ("accelerator-sync", "per-device"):
            return self._fix_per_device(node, api, torch)
        return None

    def _fix_per_device(self, node: cst.Call, api: cuda_api.CudaApi, torch: str) -> Optional[FixSpec]:
        statement = _statement_of(self.ctx, node)
        if statement is None or node.args:
            return None
        ref = _picker(self).device_ref(node)
        if ref is None:
            return None
        indent = _indent_of(self.ctx, statement)
        step = self.ctx.module.default_indent
        mps = "empty_cache" if api.name == "empty_cache" else "synchronize"
        text = (
            f'if {ref.type} == "cuda":\n{indent}{step}{self.ctx.code_for(node)}\n'
            f'{indent}elif {ref.type} == "mps":\n{indent}{step}{torch}.mps.{mps}()'
        )
        return FixSpec.safe(f"Call it on CUDA, and `torch.mps.{mps}()` on MPS", replace(statement, text), *ref.edits)

    def _fix_seed(self, node: cst.Call, torch: str) -> Optional[FixSpec]:
        if len(node.args) != 1 or node.args[0].keyword is not None:
            return None
        seed = self.ctx.code_for(node.args[0].value)
        statement = _statement_of(self.ctx, node)
        if statement is not None:
            previous = self._seeded_before(statement, torch, seed)
            if previous is not None:
                # torch.manual_seed(s) just before already seeded CUDA (and MPS): this line is redundant.
                line = self.ctx.parent(statement)
                return FixSpec.safe(
                    f"Remove it: `{torch}.manual_seed({seed})` already seeds every device",
                    NodeEdit("", (previous, "line_after"), (line, "line_after")),
                )
        # Also reseeds the CPU generator: the random stream of CPU code changes.
        return FixSpec.unsafe(f"Use `{torch}.manual_seed({seed})`", replace(node.func, f"{torch}.manual_seed"))

    def _seeded_before(self, statement: cst.Expr, torch: str, seed: str) -> Optional[cst.CSTNode]:
        """The previous statement, when every statement since a ``torch.manual_seed(seed)`` only seeds."""
        line = self.ctx.parent(statement)
        block = self.ctx.parent(line)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        body = list(block.body)
        index = body.index(line)
        for earlier in reversed(body[:index]):
            call = _lone_call(earlier)
            if call is None:
                return None
            name = self.ctx.qualify(call.func) or dotted_name(call.func) or ""
            if not name.endswith("seed") and not name.endswith("seed_all"):
                return None
            if name == "torch.manual_seed" and len(call.args) == 1 and self.ctx.code_for(call.args[0].value) == seed:
                return body[index - 1]
        return None


def _lone_call(stmt: cst.CSTNode) -> Optional[cst.Call]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return small.value
    return None


# --------------------------------------------------------------------------- MPS105

_AUTOCAST_CUDA = ("torch.cuda.amp.autocast", "torch.cuda.amp.autocast_mode.autocast")
_AUTOCAST = ("torch.autocast", "torch.amp.autocast", "torch.amp.autocast_mode.autocast")
_SCALER_CUDA = ("torch.cuda.amp.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler")
_SCALER = ("torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler")
_CUSTOM = ("torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd")


class CudaAmp(Rule):
    CODE = "MPS105"
    NAME = "cuda-amp"
    TRIGGERS = ("cuda", "GradScaler")

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.qualify(node.func)
        if name is None or not _unguarded(self, node):
            return
        if name in _AUTOCAST_CUDA:
            self.report(node, "`torch.cuda.amp.autocast` only casts on CUDA; use `torch.autocast(device_type=device.type)`",
                        fix=self._fix_autocast(node, ("enabled", "dtype", "cache_enabled"), skip=0))
        elif name in _AUTOCAST and self._device_arg_is_cuda(node, "device_type"):
            self.report(node, 'autocast with device_type "cuda" does nothing on MPS; use `device_type=device.type`',
                        fix=self._fix_autocast(node, ("device_type", "dtype", "enabled", "cache_enabled"), skip=1))
        elif name in _SCALER_CUDA:
            self.report(node, "`torch.cuda.amp.GradScaler` disables itself without CUDA; use `torch.amp.GradScaler(device.type)`",
                        fix=self._fix_scaler(node, skip=0))
        elif name in _SCALER and (self._device_arg_is_cuda(node, "device") or self._no_device(node)):
            self.report(node, 'GradScaler for "cuda" disables itself on MPS; use `torch.amp.GradScaler(device.type)`',
                        fix=self._fix_scaler(node, skip=1 if not self._no_device(node) else 0))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        expr = node.decorator
        name = self.ctx.qualify(expr.func if isinstance(expr, cst.Call) else expr)
        if name in _CUSTOM and _unguarded(self, node):
            what = name.rsplit(".", 1)[-1]
            self.report(node.decorator, f"`torch.cuda.amp.{what}` is CUDA-only; use `torch.amp.{what}(device_type=...)` (torch 2.4)")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        _report_unused_import(self, node, lambda base, name: base == "torch.cuda.amp" or (base, name) == ("torch.cuda", "amp"))

    def _device_arg_is_cuda(self, node: cst.Call, keyword: str) -> bool:
        for i, arg in enumerate(node.args):
            if (arg.keyword is None and i == 0) or (arg.keyword is not None and arg.keyword.value == keyword):
                return is_cuda_literal(arg.value)
        return False

    def _no_device(self, node: cst.Call) -> bool:
        positional = [a for a in node.args if a.keyword is None]
        if positional and string_value(positional[0].value) is None:
            # torch.amp.GradScaler(2.0**16): the first positional is init_scale only in torch.cuda.amp
            return False
        return not positional and not any(a.keyword is not None and a.keyword.value == "device" for a in node.args)

    def _arguments(self, node: cst.Call, order: Tuple[str, ...], skip: int):
        """Keyword name -> (value node, code), mapping positional arguments by ``order``."""
        found = {}
        for i, arg in enumerate(node.args):
            if arg.star:
                return None
            key = arg.keyword.value if arg.keyword is not None else (order[i] if i < len(order) else None)
            if key not in order:
                return None
            found[key] = arg.value
        for key in order[:skip]:
            found.pop(key, None)
        return found

    def _fix_autocast(self, node: cst.Call, order: Tuple[str, ...], skip: int) -> Optional[FixSpec]:
        floor = floor_of(self.ctx.settings.torch_version)
        if floor < cuda_api.AMP_AUTOCAST_MPS:
            return None  # torch.autocast("mps") raises before 2.5, even disabled
        args = self._arguments(node, order, skip)
        torch = _torch(self)
        if args is None or torch is None:
            return None
        dtype = args.get("dtype")
        if dtype is not None and "bfloat16" in self.ctx.code_for(dtype) and floor < cuda_api.AMP_AUTOCAST_MPS_BFLOAT16:
            return None
        ref = _picker(self).device_ref(node)
        if ref is None:
            return None
        # Without CUDA, torch.cuda.amp.autocast disabled itself: keep the CPU in float32.
        cond = f'{ref.type} != "cpu"'
        parts = [f"device_type={ref.type}"]
        for key in ("dtype", "cache_enabled"):
            if key in args:
                parts.append(f"{key}={self.ctx.code_for(args[key])}")
        enabled = args.get("enabled")
        parts.append("enabled=" + (cond if enabled is None else _and(enabled, self.ctx.code_for(enabled), cond)))
        text = f"{torch}.autocast({', '.join(parts)})"
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *ref.edits)

    def _fix_scaler(self, node: cst.Call, skip: int) -> Optional[FixSpec]:
        floor = floor_of(self.ctx.settings.torch_version)
        if floor < cuda_api.AMP_GRAD_SCALER:
            return None
        order = ("init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled")
        if skip:
            order = ("device",) + order
        args = self._arguments(node, order, skip)
        torch = _torch(self)
        if args is None or torch is None:
            return None
        ref = _picker(self).device_ref(node)
        if ref is None:
            return None
        # The CUDA scaler disabled itself on CPU; GradScaler("mps") needs torch 2.8 (float64 in unscale_ before).
        if floor >= cuda_api.AMP_GRAD_SCALER_MPS:
            cond = f'{ref.type} != "cpu"'
        else:
            cond = f'{ref.type} == "cuda"'
        parts = [ref.type]
        for key in order[skip:]:
            if key in args and key != "enabled":
                parts.append(f"{key}={self.ctx.code_for(args[key])}")
        enabled = args.get("enabled")
        parts.append("enabled=" + (cond if enabled is None else _and(enabled, self.ctx.code_for(enabled), cond)))
        text = f"{torch}.amp.GradScaler({', '.join(parts)})"
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *ref.edits)


def _report_unused_import(rule: Rule, node: cst.ImportFrom, wanted) -> None:
    """Report (and remove) names imported from CUDA-only modules that nothing uses any more.

    They are what the fixes leave behind (``from torch.cuda import amp`` after
    ``amp.autocast()`` was rewritten); a file that never used them gets the
    same finding.
    """
    if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
        return
    base = dotted_name(node.module)
    names = [a for a in node.names if wanted(base, dotted_name(a.name))]
    if not names:
        return
    uses = rule.ctx.analysis(NameUses)
    unused = [a for a in names if uses.count(_bound_name(a)) == 0]
    if not unused:
        return
    kept = [a for a in node.names if a not in unused]
    statement = rule.ctx.parent(node)
    if kept:
        text = ", ".join(rule.ctx.code_for(a.name) + (f" as {a.asname.name.value}" if a.asname else "") for a in kept)
        edit = replace(node, f"from {base} import {text}")
    elif isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        block = rule.ctx.parent(statement)
        body = list(block.body) if isinstance(block, (cst.Module, cst.IndentedBlock)) else []
        index = body.index(statement) if statement in body else -1
        if index <= 0:
            return
        edit = NodeEdit("", (body[index - 1], "line_after"), (statement, "line_after"))
    else:
        return
    listed = ", ".join(_bound_name(a) for a in unused)
    rule.report(node, f"unused import from the CUDA-only `{base}`: {listed}", fix=FixSpec.safe("Remove the unused import", edit))


def _bound_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return (dotted_name(alias.name) or "").split(".", 1)[0]


class NameUses:
    """How often each identifier is used outside import statements (one extra walk, on demand)."""

    def __init__(self, ctx) -> None:
        self.counts = {}
        ctx.module.visit(_NameCounter(self.counts))

    def count(self, name: str) -> int:
        return self.counts.get(name, 0)


class _NameCounter(cst.CSTVisitor):
    def __init__(self, counts) -> None:
        super().__init__()
        self.counts = counts

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # `x.amp` does not use a name `amp`
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1


# --------------------------------------------------------------------------- MPS106


class CudnnSetting(Rule):
    CODE = "MPS106"
    NAME = "cudnn-setting"
    TRIGGERS = ("cudnn", "cuda")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check(target.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check(node.target, node)

    def _check(self, target: cst.BaseExpression, statement: cst.CSTNode) -> None:
        name = self.ctx.qualify(target) if isinstance(target, cst.Attribute) else None
        if name is None:
            return
        if name.startswith("torch.backends.cudnn."):
            setting = name[len("torch.backends."):]
        elif name in ("torch.backends.cuda.matmul.allow_tf32", "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction"):
            setting = name[len("torch.backends."):]
        else:
            return
        if not _unguarded(self, statement):  # the target itself is not visited yet
            return
        hint = {
            "cudnn.deterministic": "; for reproducible results on every device use `torch.use_deterministic_algorithms(True)`",
            "cuda.matmul.allow_tf32": "; `torch.set_float32_matmul_precision()` is the device-agnostic setting",
        }.get(setting, '; guard it with `if device.type == "cuda":` to say so')
        self.report(target, f"`torch.backends.{setting}` only affects CUDA and has no effect on MPS{hint}")


# --------------------------------------------------------------------------- MPS107


class LegacyCudaTensorType(Rule):
    CODE = "MPS107"
    NAME = "legacy-cuda-tensor-type"
    TRIGGERS = _CUDA

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in cuda_api.LEGACY_TENSOR_TYPES:
            self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        if not self.ctx.imports.bindings.get(node.value, "").startswith("torch.cuda."):
            return
        parent = self.ctx.parent(node)
        if isinstance(parent, (cst.ImportAlias, cst.Attribute)):
            return
        self._check(node)

    def _check(self, node: cst.BaseExpression) -> None:
        member = _cuda_member(self.ctx, node)
        dtype = cuda_api.LEGACY_TENSOR_TYPES.get(member or "")
        if dtype is None or self.ctx.analysis(cuda_only_module):
            return
        self.report(
            node,
            f"`torch.cuda.{member}` creates CUDA tensors only; use `torch.tensor(..., dtype=torch.{dtype}, device=device)`",
            fix=self._fix(node, dtype),
        )

    def _fix(self, node: cst.BaseExpression, dtype: str) -> Optional[FixSpec]:
        call = self.ctx.parent(node)
        torch = _torch(self)
        if not isinstance(call, cst.Call) or call.func is not node or torch is None or not call.args:
            return None
        if any(a.keyword is not None or a.star for a in call.args):
            return None
        values = [a.value for a in call.args]
        if len(values) == 1 and isinstance(values[0], (cst.List, cst.Tuple)):
            factory = "tensor"
        elif all(isinstance(v, cst.Integer) for v in values):
            factory = "empty"
        else:
            return None  # a name could be data or a size
        ref = _picker(self).device_ref(call)
        if ref is None:
            return None
        args = ", ".join(self.ctx.code_for(v) for v in values)
        text = f"{torch}.{factory}({args}, dtype={torch}.{dtype}, device={ref.text})"
        return FixSpec.unsafe(f"Use `{text}`", replace(call, text), *ref.edits)


# --------------------------------------------------------------------------- MPS108

_DATA_PARALLEL = ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel")
_NVML = ("pynvml", "nvidia_smi", "py3nvml")


class CudaOnlyFeature(Rule):
    CODE = "MPS108"
    NAME = "cuda-only-feature"
    TRIGGERS = ("cuda", "DataParallel", "CUDA_VISIBLE_DEVICES", "pynvml", "nvidia_smi", "py3nvml", "nccl")

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        name = ctx.qualify(node.func) or ""
        member = _cuda_member(ctx, node.func)
        if member is not None:
            head = member.split(".", 1)[0]
            why = cuda_api.CUDA_ONLY.get(head)
            if why is not None and _unguarded(self, node):
                self.report(node, f"`torch.cuda.{member}` has no MPS equivalent ({why}); guard it with a CUDA check")
            return
        if name in _DATA_PARALLEL and _unguarded(self, node):
            self.report(node, "`nn.DataParallel` is CUDA-only: on MPS it does not even move the model; use `model.to(device)`")
            return
        last = (dotted_name(node.func) or "").rsplit(".", 1)[-1]
        if last in ("init_process_group", "new_group"):
            for i, arg in enumerate(node.args):
                is_backend = (arg.keyword is None and i == 0) or (arg.keyword is not None and arg.keyword.value == "backend")
                if is_backend and string_value(arg.value) == "nccl" and _unguarded(self, node):
                    self.report(arg.value, 'the "nccl" backend is CUDA-only; use "gloo" (with CPU tensors) when not on CUDA')
        if last in ("setdefault", "putenv") and node.args and string_value(node.args[0].value) == "CUDA_VISIBLE_DEVICES":
            if _unguarded(self, node):
                self.report(node, "`CUDA_VISIBLE_DEVICES` has no effect on MPS")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            sub = target.target
            if isinstance(sub, cst.Subscript) and len(sub.slice) == 1:
                index = sub.slice[0].slice
                if isinstance(index, cst.Index) and string_value(index.value) == "CUDA_VISIBLE_DEVICES":
                    if (self.ctx.qualify(sub.value) or dotted_name(sub.value) or "").endswith("environ") and _unguarded(self, node):
                        self.report(sub, "`CUDA_VISIBLE_DEVICES` has no effect on MPS")

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            if (dotted_name(alias.name) or "").split(".", 1)[0] in _NVML and _unguarded(self, node):
                self.report(alias, "NVML (`pynvml`) only sees NVIDIA GPUs; it fails on a Mac")

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None and not node.relative else None
        if module and module.split(".", 1)[0] in _NVML and _unguarded(self, node):
            self.report(node, "NVML (`pynvml`) only sees NVIDIA GPUs; it fails on a Mac")


RULES = [
    CudaMethod,
    CudaDeviceLiteral,
    CudaOnlyDeviceChoice,
    TorchCudaApi,
    CudaAmp,
    CudnnSetting,
    LegacyCudaTensorType,
    CudaOnlyFeature,
]
