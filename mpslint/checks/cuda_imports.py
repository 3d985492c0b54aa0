"""Names imported from CUDA-only modules that nothing uses any more.

They are what the fixes leave behind (``from torch.cuda import amp`` after
``amp.autocast()`` was rewritten); a file that never used them gets the same
finding. MPS104 and MPS105 report them for the modules they migrate.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict

from mpslint.checks.base import FixSpec, NodeEdit, Rule, replace
from mpslint.checks.rewriting import alone


def report_unused_import(rule: Rule, node: ast.ImportFrom, wanted: Callable[[str, str], bool]) -> None:
    if node.level or not node.module or node.names[0].name == "*":
        return
    base = node.module
    names = [a for a in node.names if wanted(base, a.name)]
    if not names:
        return
    uses = rule.ctx.analysis(NameUses)
    unused = [a for a in names if uses.count(_bound_name(a)) == 0]
    if not unused:
        return
    kept = [a for a in node.names if a not in unused]
    if kept:
        text = ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
        edit = replace(node, f"from {base} import {text}")
    else:
        place = rule.ctx.tree.block_of(node)
        if place is None or not alone(rule.ctx, node) or place[1] == 0:
            return
        edit = NodeEdit("", (place[0][place[1] - 1], "line_after"), (node, "line_after"))
    listed = ", ".join(_bound_name(a) for a in unused)
    rule.report(node, f"unused import from the CUDA-only `{base}`: {listed}", fix=FixSpec.safe("Remove the unused import", edit))


def _bound_name(alias: ast.alias) -> str:
    return alias.asname or alias.name.split(".", 1)[0]


class NameUses:
    """How often each identifier is used outside import statements."""

    def __init__(self, ctx) -> None:
        counts: Dict[str, int] = {}
        tree = ctx.tree
        for node in tree.of_type(ast.Name):
            counts[node.id] = counts.get(node.id, 0) + 1  # type: ignore[attr-defined]
        for node in tree.of_type(ast.arg):
            counts[node.arg] = counts.get(node.arg, 0) + 1  # type: ignore[attr-defined]
        for node in tree.of_type(ast.keyword):
            if node.arg is not None:  # type: ignore[attr-defined]
                counts[node.arg] = counts.get(node.arg, 0) + 1  # type: ignore[attr-defined]
        for node in tree.of_type(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            counts[node.name] = counts.get(node.name, 0) + 1  # type: ignore[attr-defined]
        self.counts = counts

    def count(self, name: str) -> int:
        return self.counts.get(name, 0)
