"""A device choice between CUDA and the CPU that never picks MPS (see ``rules/MPS103.md``)."""

from __future__ import annotations

import ast
import os
from typing import Dict, List, Optional, Tuple

from mpslint.analysis.availability import Availability, Source, conjuncts
from mpslint.analysis.project import facts
from mpslint.analysis.cuda_context import AVAILABILITY, DEVICE, is_cuda_literal
from mpslint.analysis.device_picker import NO_PICKER, mps_is_available
from mpslint.analysis.launchers import CudaLaunchers
from mpslint.analysis.syntax import dotted_name, string_value
from mpslint.checks.base import FixSpec, Rule, insert_line_after, replace, short
from mpslint.analysis.distributed_code import DISTRIBUTED_WORDS
from mpslint.checks.cuda_device_literal import assigns_device, indexed_cuda
from mpslint.analysis.distributed_code import DDP_BLOCKS, UnguardedDdp
from mpslint.checks.guard_rewrite import guarded_outcome, source_rewrite
from mpslint.checks.cuda_method import tensor_cuda_call
from mpslint.checks.option_flags import option_flag
from mpslint.checks.rewriting import (
    cuda,
    default_indent,
    for_collective,
    indent_of,
    picker,
    starts_line,
    torch_name,
)

MESSAGE = "this device choice picks CUDA or the CPU, never MPS; choose CUDA, then MPS, then the CPU"


def _device_call(node: ast.AST) -> Optional[ast.AST]:
    """The only argument of ``<...>device(x)``."""
    if type(node) is ast.Call and (dotted_name(node.func) or "").endswith("device"):  # type: ignore[attr-defined]
        values = [*node.args, *(k.value for k in node.keywords)]  # type: ignore[attr-defined]
        if len(values) == 1:
            return values[0]
    return None


def _cuda_side(node: ast.AST) -> Optional[Tuple[str, bool]]:
    """("cuda", is a torch.device call) for ``"cuda"`` / ``torch.device("cuda")``; "cuda:N" for an indexed one."""
    if is_cuda_literal(node):
        return string_value(node), False  # type: ignore[return-value]
    if indexed_cuda(node):
        return "cuda:<index>", False  # f"cuda:{rank}", "cuda:%d" % i, "cuda:{}".format(gpu_ids[0])
    inner = _device_call(node)
    if inner is not None and is_cuda_literal(inner):
        return string_value(inner), True  # type: ignore[return-value]
    if inner is not None and indexed_cuda(inner):
        return "cuda:<index>", True
    if type(node) is ast.Call and (dotted_name(node.func) or "").endswith("device"):  # type: ignore[attr-defined]
        # torch.device("cuda", index=args.gpu), torch.device("cuda", rank)
        values = [*node.args, *(k.value for k in node.keywords)]  # type: ignore[attr-defined]
        if len(values) == 2 and string_value(values[0]) == "cuda":
            return "cuda:<index>", True
    return None


def _cpu_side(node: ast.AST) -> Optional[bool]:
    if string_value(node) == "cpu":
        return False
    inner = _device_call(node)
    if inner is not None and string_value(inner) == "cpu":
        return True
    return None


def _ends_on_cpu(node: ast.AST) -> bool:
    while type(node) is ast.IfExp:
        node = node.orelse  # type: ignore[attr-defined]
    return _cpu_side(node) is not None


def _is_availability_call(ctx, test: ast.AST) -> bool:
    """``torch.cuda.is_available()``, or ``torch.cuda.device_count() > 0``, which says the same."""
    return ctx.analysis(Availability).is_term(test)


class CudaOnlyDeviceChoice(Rule):
    TRIGGERS = ("cuda",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._guards_reported: set = set()  # ids of the availability tests reported as guards
        self._parses_arguments = "parse_" in ctx.source  # `args = parser.parse_args()`: once, not per assignment

    def visit_Call(self, node: ast.Call) -> None:
        """Work placed on CUDA only under a CUDA availability guard: the guard is the device choice.

        ``if torch.cuda.is_available(): model.cuda()`` and ``args.cuda = not args.no_cuda and
        torch.cuda.is_available()`` / ``if args.cuda: x = x.cuda()`` choose between CUDA and the CPU as surely as
        ``"cuda" if ... else "cpu"``: on a Mac the guard is False and everything stays on the CPU. Reported at the
        availability test (in the flag's definition for a flag), once, with the guard's rewrite (MPS101's
        findings under it carry the same edits).
        """
        if not _places_on_cuda(self.ctx, node):
            return
        context = cuda(self.ctx)
        if DEVICE in context.guards(node) or context.in_mps_aware_choice(node, siblings=False) \
                or context.in_cuda_method(node):
            return
        source = self.ctx.analysis(Availability).source_of(node)
        if source is None:
            self._imported_flag_guard(node)
            return
        for term in source.terms:
            if id(term) in self._guards_reported or self._choice_reports(term):
                continue
            self._guards_reported.add(id(term))
            if context.in_mps_aware_choice(term) or context.mentions_mps(self.ctx.tree.statement_of(term) or term):
                continue
            self._report_guard(term, source)

    def _imported_flag_guard(self, node: ast.AST) -> None:
        """``from config import USE_CUDA`` (``USE_CUDA = torch.cuda.is_available()`` there), ``if USE_CUDA:
        model.cuda()``: the availability flag comes from another module, which is where it can be changed."""
        if self.ctx.project is None:
            return
        found = self._enclosing_flag(node)
        if found is not None and id(found[0]) not in self._guards_reported:
            part, where = found
            self._guards_reported.add(id(part))
            self.report(part, f"`{self.ctx.text(part)}` is CUDA availability ({where}), False on a "
                              "Mac, and it decides where work runs: everything it places stays on "
                              "the CPU, never MPS; not fixed: let it mean an accelerator is "
                              "available where it is defined")

    def _enclosing_flag(self, node: ast.AST) -> Optional[Tuple[ast.AST, str]]:
        """The innermost ``if`` (in this function) whose body holds ``node`` and whose test has an imported CUDA
        flag as one of its ``and`` parts: (that part, where it is set). Memoized along the way up, so the calls of
        a long ``elif`` chain cost linear time, not one walk up the chain each."""
        memo = self.__dict__.setdefault("_flag_guards", {})  # id(node) -> the answer of the walk from it
        chain = []
        found: Optional[Tuple[ast.AST, str]] = None
        child = node
        for parent in self.ctx.ancestors(node):
            if id(child) in memo:
                found = memo[id(child)]
                break
            chain.append(child)
            cls = type(parent)
            if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef):
                break
            if cls in (ast.If, ast.IfExp, ast.While) and child is not parent.test:  # type: ignore[attr-defined]
                owner = self.ctx.tree.block_owner(child) if cls is not ast.IfExp else (parent, "body" if child is parent.body else "orelse")  # type: ignore[attr-defined]
                if owner is not None and owner[0] is parent and owner[1] == "body":
                    for part in conjuncts(parent.test):  # type: ignore[attr-defined]
                        where = self._imported_flag(part)
                        if where is not None:
                            found = (part, where)
                            break
                    if found is not None:
                        break
            child = parent
        for visited in chain:
            memo[id(visited)] = found
        return found

    def _imported_flag(self, node: ast.AST) -> Optional[str]:
        """Where an imported name (``USE_CUDA``, ``config.USE_CUDA``) is defined as CUDA availability, else None."""
        project = self.ctx.project
        if project is None:
            return None
        if type(node) is ast.Name:
            if node.id in self.ctx.analysis(_LocalNames).bound:
                return None  # a module-level name of this file: the file's own flags are Availability's
            resolved = project.imported(node.id)
            where = "imported"
        elif type(node) is ast.Attribute and type(node.value) is ast.Name:
            resolved = project.module_value(node.value.id, node.attr)
            where = f"set in `{node.value.id}`"
        else:
            return None
        return where if resolved is not None and resolved[0] == "value" and resolved[1] == facts.CUDA_FLAG else None

    def visit_Assign(self, node: ast.Assign) -> None:
        """``args.use_gpu = torch.cuda.is_available() and args.use_gpu`` where nothing in this file places work
        under the flag, but a module it imports chooses the device from ``.use_gpu`` (``checks/option_flags.py``)."""
        if not self._parses_arguments:
            return
        flag = option_flag(self.ctx, node)
        if flag is None:
            return
        terms = [t for t in flag.terms if self.ctx.tree.statement_of(t) is node]
        context = cuda(self.ctx)
        if not terms or any(id(t) in self._guards_reported for t in terms) or context.mentions_mps(node):
            return
        option = node.targets[0].attr  # type: ignore[attr-defined]
        reader = self.ctx.project.device_option_reader(option)
        if reader is None or self._placed_under(flag):
            return  # visit_Call reports a flag that places work here, at its first placement, with a fix
        self._guards_reported.update(id(t) for t in terms)
        here = os.path.abspath(self.ctx.path or "-")
        where = "this file" if reader == here else f"`{os.path.relpath(reader, os.path.dirname(here))}`"
        self.report(terms[0], f"`{flag.name}` is CUDA availability, False on a Mac, and {where} chooses the "
                              f"device from `.{option}`: everything it places stays on the CPU, never MPS; not "
                              "fixed: let it mean an accelerator is available once that choice handles MPS")

    def _placed_under(self, flag) -> bool:
        """Some call of this file puts work on CUDA under ``flag`` (or a flag derived with it)."""
        availability = self.ctx.analysis(Availability)
        for call in self.ctx.tree.of_type(ast.Call):
            if _places_on_cuda(self.ctx, call):
                source = availability.source_of(call)
                if source is not None and any(f.key == flag.key for f in source.flags):
                    return True
        return False

    def _choice_reports(self, term: ast.AST) -> bool:
        """``term`` is in the test of an ``if`` that visit_If reports as a device choice (it assigns a CUDA device)."""
        child = term
        for parent in self.ctx.ancestors(term):
            if type(parent) is ast.If and child is parent.test:  # type: ignore[attr-defined]
                context = cuda(self.ctx)
                return not context.is_elif(parent) and context.test_kind(parent.test) == AVAILABILITY \
                    and assigns_device(parent)  # type: ignore[arg-type]
            if isinstance(parent, ast.stmt):
                return False
            child = parent
        return False

    def _report_guard(self, term: ast.AST, source: Source) -> None:
        ctx = self.ctx
        if source.flags:
            flag = next((f for f in source.flags if term in f.terms), source.flags[0])
            message = (f"`{flag.name}` is CUDA availability, False on a Mac, and it decides where work runs: "
                       f"everything it places stays on the CPU, never MPS; let it mean an accelerator is available")
        else:
            message = ("this CUDA availability test decides where work runs: on a Mac it is False and the work stays "
                       "on the CPU, never MPS; test for an accelerator instead")
        if ctx.analysis(UnguardedDdp).found:
            fix, reason = None, DDP_BLOCKS
        else:
            outcome = source_rewrite(ctx, source)
            fix, reason = outcome.fix, outcome.reason
        self.report(term, message + (f"; not fixed: {reason}" if fix is None and reason else ""), fix=fix)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        ctx = self.ctx
        parent = ctx.parent(node)
        if type(parent) is ast.IfExp:
            return  # only the whole chain
        context = cuda(ctx)
        if _cuda_side(node.body) is None and self._parameter_choice(node):
            if not context.in_mps_aware_choice(node) and DEVICE not in context.guards(node):
                self.report(node, HELPER_MESSAGE)
            return
        if _cuda_side(node.body) is None or not _ends_on_cpu(node.orelse) or context.mentions_mps(node):
            return  # `"cuda" if xla_gpu else state.device.type` is not a CUDA-or-CPU choice
        if context.in_mps_aware_choice(node) or DEVICE in context.guards(node):
            return
        if for_collective(ctx, node) is not None:
            return  # a tensor made for all_reduce/all_gather: CUDA with NCCL, the CPU with gloo is right
        reported: ast.AST = node
        if (
            type(parent) is ast.Call
            and ctx.qualify(parent.func) == "torch.device"
            and len(parent.args) == 1
            and not parent.keywords
            and parent.args[0] is node
        ):
            reported = parent
        fix, reason = self._fix(node, reported)
        self.report(reported, MESSAGE + (f"; not fixed: {reason}" if fix is None and reason else ""), fix=fix)

    def _fix(self, node: ast.IfExp, reported: ast.AST) -> Tuple[Optional[FixSpec], str]:
        if self.ctx.analysis(UnguardedDdp).found:
            return None, DDP_BLOCKS
        cuda_side, cpu = _cuda_side(node.body), _cpu_side(node.orelse)
        if cuda_side is None or cpu is None:
            return None, "the choice is more than CUDA or the CPU"
        if cuda_side[0] == "cuda:0" and "set_device" not in self.ctx.source:
            cuda_side = ("cuda", cuda_side[1])  # the first GPU is the current one unless the code changes it
        if cuda_side[0] != "cuda":
            # A particular GPU (`f"cuda:{rank}"`, `"cuda:1"`): keep it where CUDA is, add MPS before the CPU.
            fix = self._fix_mps_branch(node, reported, cuda_side[1] or cpu)
            return fix, "" if fix else f"`{short(self.ctx, node.body)}` names a particular GPU"
        if type(node.test) is ast.Attribute and node.test.attr == "is_cuda":
            return self._fix_is_cuda(node, reported), ""
        if _is_availability_call(self.ctx, node.test):
            fix = self._fix_availability(node, reported)
            return fix, "" if fix else NO_PICKER
        guarded = guarded_outcome(self.ctx, node.body)
        if guarded is not None:
            # `"cuda" if use_cuda else "cpu"` with use_cuda = torch.cuda.is_available(): the flag changes with it.
            return guarded.fix, f"the flag is decided by CUDA availability, and {guarded.reason}" if guarded.fix is None else ""
        if not _user_flag(node.test):
            return None, f"`{short(self.ctx, node.test)}` decides it, and mpslint cannot tell what it means on a Mac"
        # A user's own flag (`--cuda`): keep the choice, and let "the GPU" be the Mac's too.
        call = picker(self.ctx).picker_call(reported)
        if call is None:
            return None, NO_PICKER
        torch = torch_name(self.ctx) or "torch"
        test, other = self.ctx.text(node.test), self.ctx.text(node.orelse)
        if reported is not node:
            text = f"{call.text} if {test} else {torch}.device({other})"
            return FixSpec.safe(f"Use `{text}`", replace(reported, text), *call.edits), ""
        body = call.text if cuda_side[1] else f"{call.text}.type"
        return FixSpec.safe(f"Use `{body}` for the GPU", replace(node.body, body), *call.edits), ""

    def _fix_mps_branch(self, node: ast.IfExp, reported: ast.AST, device_object: bool) -> Optional[FixSpec]:
        """``<cuda:N> if <test> else <cpu>`` keeps its GPU where CUDA is and gets MPS where it is not.

        An availability test: the CPU side becomes ``<mps> if mps-available else <cpu>`` (safe: the CPU is
        still chosen wherever neither is). A user's flag (``if gpu_ids``): the GPU side becomes
        ``<cuda:N> if torch.cuda.is_available() else <mps>`` (where CUDA is missing, the GPU side failed).
        """
        torch = torch_name(self.ctx)
        if torch is None:
            return None
        inside = reported is not node and not _cuda_side(node.body)[1]  # type: ignore[index]
        quote = "'" if "'cpu'" in self.ctx.text(node.orelse) else '"'  # as the code writes its strings
        mps = f"{torch}.device({quote}mps{quote})" if device_object and not inside else f"{quote}mps{quote}"
        available = mps_is_available(torch, picker(self.ctx).floor)
        if _is_availability_call(self.ctx, node.test) or guarded_outcome(self.ctx, node.body) is not None:
            text = f"{mps} if {available} else {self.ctx.text(node.orelse)}"
            return FixSpec.safe(f"Choose MPS before the CPU: `{text}`", replace(node.orelse, text))
        if not _user_flag(node.test) or any(w in self.ctx.text(node.test).lower() for w in DISTRIBUTED_WORDS):
            return None  # `if args.distributed`: one GPU per process, a run a Mac does not make
        text = f"({self.ctx.text(node.body)} if {torch}.cuda.is_available() else {mps})"
        return FixSpec.safe(f"Use MPS for the GPU where CUDA is missing: `{text}`", replace(node.body, text))

    def _fix_is_cuda(self, node: ast.IfExp, reported: ast.AST) -> Optional[FixSpec]:
        """``"cuda" if x.is_cuda else "cpu"`` -> ``x.device.type``: where x is, MPS included."""
        where = self.ctx.text(node.test.value)  # type: ignore[attr-defined]
        text = f"{where}.device.type"
        if reported is not node or _cuda_side(node.body)[1]:  # type: ignore[index]
            torch = torch_name(self.ctx) or "torch"
            text = f"{torch}.device({text})"  # the device type, as "cuda" meant the current CUDA device
        return FixSpec.safe(f"Use `{text}`", replace(reported, text))

    def _fix_availability(self, node: ast.IfExp, reported: ast.AST) -> Optional[FixSpec]:
        cuda_side, cpu = _cuda_side(node.body), _cpu_side(node.orelse)
        if cuda_side is not None and cuda_side[0] == "cuda:0" and "set_device" not in self.ctx.source:
            cuda_side = ("cuda", cuda_side[1])
        if cuda_side is None or cuda_side[0] != "cuda" or cpu is None:
            return None
        call = picker(self.ctx).picker_call(reported)
        if call is None:
            return None
        device_object = reported is not node or cuda_side[1]
        text = call.text if device_object else f"{call.text}.type"
        return FixSpec.safe(f"Use `{text}`", replace(reported, text), *call.edits)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        """A device helper that takes the device wanted and returns it only when CUDA is available, else the CPU."""
        ctx = self.ctx
        names = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)} - {"self", "cls"}
        if not names or cuda(ctx).mentions_mps(node):
            return
        returns = ctx.analysis(_returns_by_function).get(node, ())
        if not returns or not any(r.value is not None and _ends_on_cpu(r.value) for r in returns):
            return
        for ret in returns:
            value = ret.value
            if value is None or _cpu_side(value) is not None:
                continue
            if type(value) is ast.IfExp and _from_parameter(value.body, names) and _cpu_side(value.orelse) is not None \
                    and _is_availability_call(ctx, value.test):
                continue  # `return dev if torch.cuda.is_available() else "cpu"`: visit_IfExp reports it
            if type(value) is ast.Call and len(value.args) == 1 and type(value.args[0]) is ast.IfExp:
                continue  # `torch.device(dev if ... else "cpu")`: likewise
            if not (_from_parameter(value, names) or _cuda_side(value) is not None):
                return  # it returns something else too: not a CUDA-or-CPU helper
        for ret in returns:
            value = ret.value
            if value is None or not (_from_parameter(value, names) or _cuda_side(value) is not None):
                continue
            test = self._cuda_test_above(ret, node)
            if test is None:
                return  # returned without asking for CUDA: "mps" passes through
            if cuda(ctx).test_kind(test) == AVAILABILITY and assigns_device(ctx.parent(ret)):  # type: ignore[arg-type]
                return  # `if torch.cuda.is_available(): return "cuda"`: visit_If reports it
            uses_parameter = _from_parameter(value, names) or (
                any(type(n) is ast.Name and n.id in names for n in ast.walk(test))
                and any(string_value(n) in ("cuda", "gpu") for n in ast.walk(test)))  # `device == "cuda" and ...`
            if uses_parameter:
                self.report(test, HELPER_MESSAGE)
            return

    visit_AsyncFunctionDef = visit_FunctionDef

    def _cuda_test_above(self, ret: ast.Return, function) -> Optional[ast.AST]:
        """The test of the ``if`` holding ``ret`` when it asks ``torch.cuda.is_available()``."""
        parent = self.ctx.parent(ret)
        if type(parent) is not ast.If or ret not in parent.body:
            return None
        tests = parent.test.values if type(parent.test) is ast.BoolOp and type(parent.test.op) is ast.And else [parent.test]
        return parent.test if any(_is_availability_call(self.ctx, t) for t in tests) else None

    def _parameter_choice(self, node: ast.IfExp) -> bool:
        """``dev if torch.cuda.is_available() else "cpu"`` where ``dev`` is a parameter of the enclosing function."""
        function = self.ctx.tree.scope_of(node)
        if type(function) not in (ast.FunctionDef, ast.AsyncFunctionDef):
            return False
        names = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}  # type: ignore[attr-defined]
        return _from_parameter(node.body, names) and _cpu_side(node.orelse) is not None \
            and _is_availability_call(self.ctx, node.test) and not cuda(self.ctx).mentions_mps(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._launcher(node)

    def _launcher(self, node: ast.stmt) -> bool:
        """CUDA or exit: ``assert torch.cuda.is_available()``, ``if not torch.cuda.is_available(): sys.exit(1)``."""
        found = self.ctx.analysis(CudaLaunchers).launcher(node)
        if found is None or cuda(self.ctx).mentions_mps(node) or cuda(self.ctx).guards(node):
            return found is not None
        how = "this assert stops the program" if type(node) is ast.Assert else "this exits"
        message = f"{how} where CUDA is not available, so on a Mac nothing after it runs; accept MPS too"
        if found.blocker:
            return True  # the code it guards needs CUDA: a guard, not a launcher to migrate (and not reported)
        torch = torch_name(self.ctx)
        if torch is None:
            self.report(found.term, message)
            return True
        either = f"{self.ctx.text(found.term)} or {mps_is_available(torch, picker(self.ctx).floor)}"
        whole = type(node) is ast.Assert and node.test is found.term  # type: ignore[attr-defined]
        text = either if whole else f"({either})"
        self.report(found.term, message, fix=FixSpec.safe(f"Use `{either}`", replace(found.term, text)))
        return True

    def visit_If(self, node: ast.If) -> None:
        if self._launcher(node):
            return
        context = cuda(self.ctx)
        if context.is_elif(node):
            return  # an elif: the chain is judged from its first `if`
        if context.test_kind(node.test) != AVAILABILITY or not assigns_device(node):
            return
        if context.in_mps_aware_choice(node):
            return
        ddp = self.ctx.analysis(UnguardedDdp).found
        fix = None if ddp else self._fix_returns(node) or self._fix_statement(node)
        reason = DDP_BLOCKS if ddp else ""
        if fix is None and not ddp and _indexed_branch(node):
            fix = self._fix_indexed_statement(node)
            reason = "it names a particular GPU"  # the guard's rewrite would send a Mac to that CUDA device
        elif fix is None and not ddp:
            guarded = guarded_outcome(self.ctx, node.body[0])
            if guarded is not None:
                fix, reason = guarded.fix, guarded.reason
            else:
                reason = f"`{short(self.ctx, node.test)}` decides it, and mpslint cannot tell what it means on a Mac"
        self.report(node.test, MESSAGE + (f"; not fixed: {reason}" if fix is None and reason else ""), fix=fix)

    def _fix_returns(self, node: ast.If) -> Optional[FixSpec]:
        """A device helper: ``if torch.cuda.is_available(): return <cuda>`` then ``return <cpu>`` gets an MPS branch.

        Safe: CUDA still comes first, and MPS is never available where the CPU was returned before.
        """
        if not _is_availability_call(self.ctx, node.test) or len(node.body) != 1 or type(node.body[0]) is not ast.Return:
            return None
        cuda_side = _cuda_side(node.body[0].value) if node.body[0].value is not None else None
        if cuda_side is None:
            return None  # a particular GPU (`f"cuda:{rank % n}"`) too: MPS is added where the CPU was returned
        torch = torch_name(self.ctx)
        place = self.ctx.tree.block_of(node)
        if torch is None or place is None or not starts_line(self.ctx, node):
            return None
        block, position = place
        if node.orelse:
            if len(node.orelse) != 1 or type(node.orelse[0]) is not ast.Return or cuda(self.ctx).is_elif(node.orelse[0]):  # type: ignore[arg-type]
                return None
            cpu_return = node.orelse[0]
        else:
            following = block[position + 1] if position + 1 < len(block) else None
            if type(following) is not ast.Return:
                return None
            cpu_return = following
        if cpu_return.value is None or _cpu_side(cpu_return.value) is None:  # type: ignore[attr-defined]
            return None
        indent = indent_of(self.ctx, node)
        step = default_indent(self.ctx)
        mps = f'{torch}.device("mps")' if cuda_side[1] else '"mps"'
        available = mps_is_available(torch, picker(self.ctx).floor)
        if node.orelse:
            text = f"{indent}elif {available}:\n{indent}{step}return {mps}\n"
            return FixSpec.safe("Return MPS when CUDA is not available but MPS is",
                                insert_line_after(node.body[-1], text))
        text = f"{indent}if {available}:\n{indent}{step}return {mps}\n"
        return FixSpec.safe("Return MPS when CUDA is not available but MPS is", insert_line_after(node, text))

    def _fix_indexed_statement(self, node: ast.If) -> Optional[FixSpec]:
        """``if torch.cuda.is_available() and use_gpu: d = <cuda:N>`` / ``else: d = <cpu>`` gets
        ``elif torch.backends.mps.is_available() and use_gpu: d = <mps>`` before the ``else``.

        Safe: the GPU is kept where CUDA is, and MPS is never available where the CPU was chosen before (off a
        Mac); on a Mac the user's other conditions still decide.
        """
        ctx = self.ctx
        if not node.orelse or cuda(ctx).is_elif(node.orelse[0]) or not starts_line(ctx, node):  # type: ignore[arg-type]
            return None
        # the body may also log (`print("Using GPU", gpu_id)`): only the assignment has an MPS counterpart
        assigns = [stmt for stmt in node.body if type(stmt) is not ast.Expr]
        first = _single_assignment(ctx, assigns) if all(starts_line(ctx, st) for st in node.body) else None
        second = _single_assignment(ctx, node.orelse)
        if first is None or second is None or ctx.text(first.targets[0]) != ctx.text(second.targets[0]):
            return None
        side, cpu = _cuda_side(first.value), _cpu_side(second.value)
        if side is None or side[0] == "cuda" or cpu is None:
            return None
        if any(word in ctx.text(n).lower() for word in DISTRIBUTED_WORDS for n in (first.value, node.test)):
            return None  # a process's GPU, `if args.distributed`: a distributed run, which a Mac does not make
        parts = node.test.values if type(node.test) is ast.BoolOp and type(node.test.op) is ast.And else [node.test]
        terms = [p for p in parts if _is_availability_call(ctx, p)]
        torch = torch_name(ctx)
        if not terms and torch is not None and _user_index_test(node.test) \
                and ctx.analysis(Availability).flag_of(_tested_name(node.test)) is None:
            # `if gpu_id >= 0:` (the user's index): where CUDA is missing the GPU side failed; MPS takes its place
            quote = "'" if "'" in ctx.text(first.value) else '"'
            mps = f"{torch}.device({quote}mps{quote})" if side[1] or cpu else f"{quote}mps{quote}"
            text = f"{ctx.text(first.value)} if {torch}.cuda.is_available() else {mps}"
            return FixSpec.safe(f"Use MPS for the GPU where CUDA is missing: `{text}`", replace(first.value, text))
        availability = ctx.analysis(Availability)
        if len(terms) != 1 or torch is None or any(
                cuda(ctx).test_kind(p) == DEVICE or availability.flag_of(p) is not None or availability.is_term(p)
                for p in parts if p is not terms[0]):
            return None  # another test of CUDA itself (`use_cuda = torch.cuda.is_available()`) says no on a Mac
        available = mps_is_available(torch, picker(ctx).floor)
        test = " and ".join(available if p is terms[0] else ctx.text(p) for p in parts)
        quote = "'" if "'" in ctx.text(second.value) else '"'
        mps = f"{torch}.device({quote}mps{quote})" if side[1] or cpu else f"{quote}mps{quote}"
        indent = indent_of(ctx, node)
        text = f"{indent}elif {test}:\n{indent}{default_indent(ctx)}{ctx.text(first.targets[0])} = {mps}\n"
        return FixSpec.safe(f"Choose MPS before the CPU: `elif {test}:`", insert_line_after(node.body[-1], text))

    def _fix_statement(self, node: ast.If) -> Optional[FixSpec]:
        """``if torch.cuda.is_available(): d = <cuda> / else: d = <cpu>`` -> ``d = pick_device()``."""
        if not _is_availability_call(self.ctx, node.test) or not node.orelse or cuda(self.ctx).is_elif(node.orelse[0]):  # type: ignore[arg-type]
            return None
        first, second = _single_assignment(self.ctx, node.body), _single_assignment(self.ctx, node.orelse)
        if first is None or second is None:
            return None
        if self.ctx.text(first.targets[0]) != self.ctx.text(second.targets[0]):
            return None
        cuda_side, cpu = _cuda_side(first.value), _cpu_side(second.value)
        if cuda_side is None or cuda_side[0] != "cuda" or cpu is None or cuda_side[1] != cpu:
            return None
        call = picker(self.ctx).picker_call(node)
        if call is None:
            return None
        target = self.ctx.text(first.targets[0])
        text = f"{target} = {call.text}" + ("" if cuda_side[1] else ".type")
        return FixSpec.safe(f"Use `{text}`", replace(node, text), *call.edits)


HELPER_MESSAGE = ("this helper takes a device and returns CUDA or the CPU: asked for \"mps\", it returns the CPU; "
                  "let a requested MPS device through when `torch.backends.mps.is_available()`")


class _LocalNames:
    """Per file: the names some statement of this file binds (an imported flag is one that none does)."""

    def __init__(self, ctx) -> None:
        self.bound = {n.id for n in ctx.tree.of_type(ast.Name) if type(n.ctx) is not ast.Load}  # type: ignore[attr-defined]



def _places_on_cuda(ctx, node: ast.Call) -> bool:
    """``x.cuda()`` (any GPU), ``x.to("cuda")``, ``device="cuda"``: this call puts something on CUDA."""
    func = node.func
    if type(func) is ast.Attribute and func.attr == "cuda":
        return tensor_cuda_call(ctx, node)
    if type(func) is ast.Attribute and func.attr == "to" and node.args and is_cuda_literal(node.args[0]):
        return True
    return any(k.arg == "device" and is_cuda_literal(k.value) for k in node.keywords)


def _returns_by_function(ctx) -> Dict[ast.AST, List[ast.Return]]:
    """Each function's own ``return`` statements (not those of functions or classes inside it), the last
    first: found once per file, not by walking every expression of every function's body."""
    tree = ctx.tree
    found: Dict[ast.AST, List[ast.Return]] = {}
    for node in reversed(tree.of_type(ast.Return)):
        found.setdefault(tree.scope_of(node), []).append(node)  # type: ignore[arg-type]
    return found


def _from_parameter(node: Optional[ast.AST], names) -> bool:
    """A parameter itself, or ``torch.device(<parameter>)``."""
    inner = _device_call(node) if node is not None else None
    value = inner if inner is not None else node
    return type(value) is ast.Name and value.id in names  # type: ignore[union-attr]


def _indexed_branch(node: ast.If) -> bool:
    """The ``if`` body assigns or returns a particular GPU (``torch.device("cuda:" + str(i))``, ``f"cuda:{i}"``)."""
    for stmt in node.body:
        value = getattr(stmt, "value", None) if type(stmt) in (ast.Assign, ast.AnnAssign, ast.Return) else None
        side = _cuda_side(value) if value is not None else None
        if side is not None and side[0] != "cuda":
            return True
    return False


def _user_index_test(test: ast.AST) -> bool:
    """``gpu_id >= 0``, ``args.gpu is not None``: the user's GPU number compared with a constant."""
    if type(test) is not ast.Compare or len(test.ops) != 1:  # type: ignore[attr-defined]
        return False
    left, right = test.left, test.comparators[0]  # type: ignore[attr-defined]
    return type(left) in (ast.Name, ast.Attribute) and _user_flag(left) and "torch" not in (dotted_name(left) or "") \
        and type(right) is ast.Constant and (right.value is None or type(right.value) is int)  # type: ignore[attr-defined]


def _tested_name(test: ast.AST) -> ast.AST:
    return test.left if type(test) is ast.Compare else test  # type: ignore[attr-defined]


def _user_flag(test: ast.AST) -> bool:
    """A test made of names and attributes only (``args.cuda``, ``opt.cuda and not args.cpu``): the user's choice."""
    cls = type(test)
    if cls is ast.Name or cls is ast.Attribute:
        return not (cls is ast.Attribute and test.attr == "is_cuda")  # type: ignore[attr-defined]
    if cls is ast.BoolOp:
        return all(_user_flag(v) for v in test.values)  # type: ignore[attr-defined]
    if cls is ast.UnaryOp and type(test.op) is ast.Not:  # type: ignore[attr-defined]
        return _user_flag(test.operand)  # type: ignore[attr-defined]
    return False


def _single_assignment(ctx, block) -> Optional[ast.Assign]:
    """The block's only statement, an assignment to one target on a line of its own."""
    if len(block) != 1:
        return None
    stmt = block[0]
    if type(stmt) is ast.Assign and len(stmt.targets) == 1 and starts_line(ctx, stmt):
        return stmt
    return None
