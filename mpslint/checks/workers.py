"""What the data-loading rules (MPS401-MPS403) share: DataLoader names and branches that test the platform."""

from __future__ import annotations

import ast
from typing import Dict, Sequence

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
PLATFORM_WORDS = ("darwin", "platform", "linux", "win32", "os.name", "macos", "is_mac")
CUDA_WORDS = ("cuda",)


def guarded_by(ctx, node: ast.AST, words: Sequence[str]) -> bool:
    """Inside an ``if``/conditional expression/``while`` whose test mentions one of ``words``."""
    tests: Dict[ast.AST, bool] = {}

    def mentioned(test: ast.AST) -> bool:
        found = tests.get(test)
        if found is None:
            found = tests[test] = mentions(ctx, test, words)
        return found

    def step(parent: ast.AST, child: ast.AST, above: bool) -> bool:
        if above:
            return True
        cls = type(parent)
        if cls in (ast.If, ast.IfExp, ast.While) and child is not parent.test:  # type: ignore[attr-defined]
            return mentioned(parent.test)  # type: ignore[attr-defined]
        if cls is ast.BoolOp and child is not parent.values[0]:  # type: ignore[attr-defined]
            return any(mentioned(v) for v in parent.values[: parent.values.index(child)])  # type: ignore[attr-defined]
        return False

    return ctx.tree.inherited(("guarded-by", tuple(words)), node, step, False)


def mentions(ctx, node: ast.AST, words: Sequence[str]) -> bool:
    code = ctx.text(node)
    return any(w in code for w in words)
