"""Small questions about one ``ast`` node, shared by the analyses and the rules.

Arguments follow one convention everywhere: ``positional(call)`` are the
values passed without a keyword, in order, including ``*args`` (unwrapped)
and ``**kwargs`` values, because that is what a reader means by "the first
argument" of ``f(*xs)`` or ``f(**kw)``: something other than a keyword.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Tuple

_ATTRIBUTE, _NAME, _CALL, _CONSTANT = ast.Attribute, ast.Name, ast.Call, ast.Constant


def dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    kind = type(node)
    if kind is _NAME:
        return node.id  # type: ignore[attr-defined]
    parts = []
    while kind is _ATTRIBUTE:
        parts.append(node.attr)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
        kind = type(node)
    if kind is not _NAME:
        return None
    parts.append(node.id)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


def last_name(node: ast.AST) -> Optional[str]:
    """The last part of a Name/Attribute: ``c`` for ``a.b.c``, ``f`` for ``f``."""
    kind = type(node)
    if kind is _ATTRIBUTE:
        return node.attr  # type: ignore[attr-defined]
    if kind is _NAME:
        return node.id  # type: ignore[attr-defined]
    return None


def method_name(call: ast.AST) -> Optional[str]:
    """``m`` for a call ``receiver.m(...)``."""
    if type(call) is _CALL and type(call.func) is _ATTRIBUTE:  # type: ignore[attr-defined]
        return call.func.attr  # type: ignore[attr-defined]
    return None


def string_value(node: Optional[ast.AST]) -> Optional[str]:
    """The value of a string literal (implicit concatenations included; not f-strings)."""
    if type(node) is _CONSTANT and type(node.value) is str:  # type: ignore[union-attr]
        return node.value  # type: ignore[union-attr]
    return None


def is_string(node: Optional[ast.AST]) -> bool:
    return type(node) is _CONSTANT and type(node.value) is str  # type: ignore[union-attr]


def is_constant(node: Optional[ast.AST], value: object) -> bool:
    """``True``, ``False``, ``None`` (identity, so ``1`` is not ``True``)."""
    return type(node) is _CONSTANT and node.value is value  # type: ignore[union-attr]


def is_number(node: Optional[ast.AST]) -> bool:
    """An int or float literal (not a bool, not complex)."""
    return type(node) is _CONSTANT and type(node.value) in (int, float)  # type: ignore[union-attr]


def integer_value(node: Optional[ast.AST]) -> Optional[int]:
    if type(node) is _CONSTANT and type(node.value) is int:  # type: ignore[union-attr]
        return node.value  # type: ignore[union-attr]
    return None


def positional(call: ast.Call) -> List[ast.AST]:
    """Values passed without a keyword: positional and ``*args`` (unwrapped), then ``**kwargs`` values."""
    values = [a.value if type(a) is ast.Starred else a for a in call.args]
    return values + [k.value for k in call.keywords if k.arg is None]


def positional_at(call: ast.Call, position: int) -> Optional[ast.AST]:
    """The ``position``-th plain positional argument, or None when absent or after a ``*args``."""
    args = call.args
    if position >= len(args) or any(type(a) is ast.Starred for a in args[: position + 1]):
        return None
    return args[position]


def has_star(call: ast.Call) -> bool:
    return any(type(a) is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords)


def keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for item in call.keywords:
        if item.arg == name:
            return item.value
    return None


def keyword_node(call: ast.Call, name: str) -> Optional[ast.keyword]:
    for item in call.keywords:
        if item.arg == name:
            return item
    return None


def argument(call: ast.Call, name: str, position: Optional[int]) -> Optional[ast.AST]:
    """An argument passed by keyword ``name`` or at ``position``."""
    value = keyword(call, name)
    if value is None and position is not None:
        value = positional_at(call, position)
    return value


def argument_values(call: ast.Call) -> List[ast.AST]:
    """Every argument's value, in source order."""
    return [a.value if type(a) is ast.Starred else a for a in call.args] + [k.value for k in call.keywords]


def first_argument(call: ast.Call) -> Optional[ast.AST]:
    """``argument_values(call)[0]``, or None for a call without arguments (without building the list)."""
    if call.args:
        first = call.args[0]
        return first.value if type(first) is ast.Starred else first  # type: ignore[attr-defined]
    return call.keywords[0].value if call.keywords else None


def bool_sides(node: ast.BoolOp) -> Tuple[ast.AST, ast.AST]:
    """``a and b and c`` as ``(a and b), c``: left-associative, as the operator evaluates."""
    values = node.values
    if len(values) == 2:
        return values[0], values[1]
    left = ast.BoolOp(op=node.op, values=values[:-1])
    return left, values[-1]


def target_names(target: ast.AST) -> List[str]:
    """The names an assignment target binds (``a, (b, *c)`` -> a, b, c)."""
    kind = type(target)
    if kind is _NAME:
        return [target.id]  # type: ignore[attr-defined]
    if kind is ast.Tuple or kind is ast.List:
        return [name for element in target.elts for name in target_names(element)]  # type: ignore[attr-defined]
    if kind is ast.Starred:
        return target_names(target.value)  # type: ignore[attr-defined]
    return []


def is_main_guard(node: ast.AST) -> bool:
    """``if __name__ == "__main__":`` (either operand order)."""
    if type(node) is not ast.If or type(node.test) is not ast.Compare:  # type: ignore[attr-defined]
        return False
    test = node.test  # type: ignore[attr-defined]
    if len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:
        return False
    sides = (test.left, test.comparators[0])
    return any(type(s) is _NAME and s.id == "__name__" for s in sides) and any(
        string_value(s) == "__main__" for s in sides
    )


def parameters(function) -> List[ast.arg]:
    """Every parameter of a function or lambda, in order."""
    args = function.args
    found = [*args.posonlyargs, *args.args]
    if args.vararg is not None:
        found.append(args.vararg)
    found.extend(args.kwonlyargs)
    if args.kwarg is not None:
        found.append(args.kwarg)
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def calls_in(body: List[ast.stmt]):
    """The calls of these statements, not entering nested functions, classes or lambdas (their bodies run
    when called, not here)."""
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if type(node) in _SCOPES:
            continue
        if type(node) is ast.Call:
            yield node
        stack.extend(ast.iter_child_nodes(node))
