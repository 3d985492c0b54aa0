"""MPS103's flag stored on the parsed arguments: ``args.use_gpu = torch.cuda.is_available() and args.use_gpu``
in a script whose device is chosen, in a module it imports, from ``self.args.use_gpu``.

The flag decides nothing in the script itself, so the guard analysis (``analysis/availability.py``)
sees no placement under it; the project model says where ``.use_gpu`` is read as a device choice
(``analysis/project/namespace_flags.py``).
"""

from __future__ import annotations

import ast
from typing import Optional

from mpslint.analysis.availability import Availability, Flag

_PARSERS = ("parse_args", "parse_known_args")


def option_flag(ctx, node: ast.Assign) -> Optional[Flag]:
    """The availability flag ``node`` defines, when it is ``NS.X = ...`` of a parsed-arguments object ``NS``."""
    if len(node.targets) != 1:
        return None
    target = node.targets[0]
    if type(target) is not ast.Attribute or type(target.value) is not ast.Name:  # type: ignore[attr-defined]
        return None
    flag = ctx.analysis(Availability).flag_of(target)
    if flag is None or node not in flag.definitions or not parsed_arguments(ctx, target.value.id):  # type: ignore[attr-defined]
        return None
    return flag


def parsed_arguments(ctx, name: str) -> bool:
    """``name`` is bound in this file to what an argument parser returns: ``args = parser.parse_args()``,
    ``args, unknown = parser.parse_known_args()``, ``args = parser.parse_known_args()[0]``."""
    for statement in ctx.tree.of_type(ast.Assign):
        value = statement.value  # type: ignore[attr-defined]
        for target in statement.targets:  # type: ignore[attr-defined]
            if type(target) is ast.Name and target.id == name and (_parser_call(value) or (  # type: ignore[attr-defined]
                    type(value) is ast.Subscript and _parser_call(value.value))):  # type: ignore[attr-defined]
                return True
            if type(target) is ast.Tuple and target.elts and type(target.elts[0]) is ast.Name \
                    and target.elts[0].id == name and _parser_call(value):  # type: ignore[attr-defined]
                return True
    return False


def _parser_call(value: ast.AST) -> bool:
    return type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in _PARSERS  # type: ignore[attr-defined]
