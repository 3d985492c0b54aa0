"""What spells a CUDA device in code: ``"cuda"``, ``"cuda:1"``, ``f"cuda:{rank}"``, ``torch.device("cuda", i)``.

Plain ``ast`` questions, so the rules (MPS102, MPS103) and the project model's summaries ask the same ones.
"""

from __future__ import annotations

import ast

from mpslint.analysis.cuda_context import is_cuda_literal
from mpslint.analysis.syntax import dotted_name, first_argument, string_value


def assigns_device(branch: ast.If) -> bool:
    """Whether an ``if`` body assigns or returns a CUDA device (an ``if``-statement device choice)."""
    for stmt in branch.body:
        if type(stmt) in (ast.Assign, ast.AnnAssign, ast.Return):
            value = stmt.value  # type: ignore[attr-defined]
            if value is not None and is_cuda_device_value(value):
                return True
    return False


def is_cuda_device_value(value: ast.AST) -> bool:
    if is_cuda_literal(value) or indexed_cuda(value):
        return True
    if type(value) is ast.Call and (dotted_name(value.func) or "").endswith("device"):  # type: ignore[attr-defined]
        first = first_argument(value)  # type: ignore[arg-type]
        if first is not None and string_value(first) == "cuda" and argument_count(value) == 2:  # type: ignore[arg-type]
            return True  # torch.device("cuda", rank)
        return first is not None and (is_cuda_literal(first) or indexed_cuda(first))
    return False


def indexed_cuda(node: ast.AST) -> bool:
    """A CUDA device name built from an index: ``f"cuda:{rank}"``, ``"cuda:%d" % i``, ``"cuda:{}".format(i)``,
    ``"cuda:" + str(i)``."""
    cls = type(node)
    if cls is ast.JoinedStr:
        first = node.values[0] if node.values else None  # type: ignore[attr-defined]
        return string_value(first) is not None and string_value(first).startswith("cuda:")  # type: ignore[union-attr]
    if cls is ast.BinOp and type(node.op) in (ast.Mod, ast.Add):  # type: ignore[attr-defined]
        left = string_value(node.left)  # type: ignore[attr-defined]
        return left is not None and (left == "cuda:" if type(node.op) is ast.Add else left.startswith("cuda:%"))  # type: ignore[attr-defined]
    if cls is ast.Call and type(node.func) is ast.Attribute and node.func.attr == "format":  # type: ignore[attr-defined]
        text = string_value(node.func.value)  # type: ignore[attr-defined]
        return text is not None and text.startswith("cuda:") and "{" in text
    return False


def argument_count(call: ast.Call) -> int:
    return len(call.args) + len(call.keywords)
