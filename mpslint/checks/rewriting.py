"""Pieces of fixes that several rules write the same way."""

from __future__ import annotations

import ast
from typing import Optional, Tuple

from mpslint.analysis.collectives import CollectiveTensors, collective_device
from mpslint.analysis.cuda_context import CudaContext
from mpslint.analysis.device_picker import DevicePicker, torch_alias
from mpslint.checks.base import Context, FixSpec, NodeEdit, attribute_name_start, replace, replace_span

_SIMPLE = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def picker(ctx: Context) -> DevicePicker:
    return ctx.analysis(DevicePicker)


def torch_name(ctx: Context) -> Optional[str]:
    """The module-level name of torch that rewritten code can use."""
    return ctx.analysis(torch_alias)


def for_collective(ctx: Context, placement: ast.AST) -> Optional[str]:
    """The device of a tensor made for a ``torch.distributed`` collective (it follows the backend), if it is one."""
    torch = torch_name(ctx)
    if torch is None or not ctx.analysis(CollectiveTensors).made_for_collective(placement):
        return None
    return collective_device(torch)


def cuda(ctx: Context) -> CudaContext:
    return ctx.analysis(CudaContext)


def combined(expr: ast.AST, code: str, cond: str) -> str:
    """``enabled=<expr>`` combined with a device condition (``code`` is ``expr`` as the source writes it)."""
    if type(expr) is ast.Constant and expr.value is True:  # type: ignore[attr-defined]
        return cond
    if type(expr) is ast.Constant and expr.value is False:  # type: ignore[attr-defined]
        return "False"
    simple = isinstance(expr, _SIMPLE) or (type(expr) is ast.Constant and isinstance(expr.value, (str, int)))  # type: ignore[attr-defined]
    return f"{code if simple else f'({code})'} and {cond}"


def lone_statement(ctx: Context, call: ast.Call) -> Optional[ast.Expr]:
    """The ``Expr`` statement when ``call`` is a whole statement alone on its line(s)."""
    statement = ctx.parent(call)
    if type(statement) is not ast.Expr or not alone(ctx, statement):
        return None
    return statement  # type: ignore[return-value]


def alone(ctx: Context, statement: ast.AST) -> bool:
    """No other statement shares ``statement``'s lines (not ``a(); b()``, not ``if x: y()``)."""
    if not starts_line(ctx, statement):
        return False
    place = ctx.tree.block_of(statement)
    if place is None:
        return False
    block, position = place
    following = block[position + 1] if position + 1 < len(block) else None
    return following is None or following.lineno > statement.end_lineno  # type: ignore[attr-defined]


def first_statement(body) -> Optional[ast.stmt]:
    """The first statement of a function body after its docstring."""
    for position, stmt in enumerate(body):
        if position == 0 and type(stmt) is ast.Expr and type(stmt.value) is ast.Constant \
                and isinstance(stmt.value.value, str):  # type: ignore[attr-defined]
            continue
        return stmt
    return None


def starts_line(ctx: Context, statement: ast.AST) -> bool:
    """Nothing but indentation before ``statement`` on its line."""
    return not ctx.tree.line_text(statement.lineno)[: ctx.tree.start(statement)[1]].strip()  # type: ignore[attr-defined]


def indent_of(ctx: Context, statement: ast.AST) -> str:
    """The indentation of ``statement``'s first line (it starts its line: see ``lone_statement``)."""
    return ctx.tree.indentation(statement.lineno)  # type: ignore[attr-defined]


def default_indent(ctx: Context) -> str:
    """One level of indentation as the file writes it (four spaces when it has no indented block)."""
    found = ctx.analysis(_DefaultIndent)
    return found.value


class _DefaultIndent:
    def __init__(self, ctx: Context) -> None:
        self.value = "    "
        for node in ctx.tree.nodes:
            body = getattr(node, "body", None)
            if type(body) is list and body and isinstance(body[0], ast.stmt) and not isinstance(node, ast.Module):
                if body[0].lineno == node.lineno:
                    continue  # `if x: y` on one line
                outer = indent_of(ctx, node)
                inner = indent_of(ctx, body[0])
                if inner.startswith(outer) and len(inner) > len(outer):
                    self.value = inner[len(outer):]
                    return


def movable(node: ast.Call) -> bool:
    """``.cuda()`` with no GPU chosen: ``.to(device)`` says the same."""
    return not node.args and all(k.arg in ("non_blocking", "memory_format") for k in node.keywords)


def to_device(ctx, node: ast.Call, ref) -> Tuple[NodeEdit, str]:
    """The edit turning ``x.cuda(...)`` into ``x.to(<ref>, ...)``, and the new call's text after the dot."""
    parts = [ref.text]
    for item in node.keywords:
        if item.arg == "non_blocking":
            # Asynchronous copies between the host and MPS can corrupt data: keep them on CUDA only.
            code = ctx.text(item.value)
            parts.append("non_blocking=" + combined(item.value, code, f'{ref.type} == "cuda"'))
    for item in node.keywords:
        if item.arg == "memory_format":
            parts.append("memory_format=" + ctx.text(item.value))
    new = f"to({', '.join(parts)})"
    start = attribute_name_start(ctx, node.func)  # type: ignore[arg-type]
    return replace_span(start, node, new), new


def cuda_guarded(ctx: Context, call: ast.Call) -> Optional[FixSpec]:
    """A CUDA-only call alone on its line -> the same call under ``if torch.cuda.is_available():``.

    Safe: it still runs wherever CUDA is, and it raised everywhere else.
    """
    statement = lone_statement(ctx, call)
    torch = torch_name(ctx)
    if statement is None or torch is None:
        return None
    inner = indent_of(ctx, statement) + default_indent(ctx)
    text = f"if {torch}.cuda.is_available():\n{inner}{ctx.text(statement)}"
    return FixSpec.safe("Call it only where CUDA is available", replace(statement, text))
