"""What the data-loading rules (MPS401-MPS403) share: DataLoader names and branches that test the platform."""

from __future__ import annotations

import ast
from typing import Sequence

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
PLATFORM_WORDS = ("darwin", "platform", "linux", "win32", "os.name", "macos", "is_mac")
CUDA_WORDS = ("cuda",)


def guarded_by(ctx, node: ast.AST, words: Sequence[str]) -> bool:
    """Inside an ``if``/conditional expression/``while`` whose test mentions one of ``words``."""
    child = node
    for parent in ctx.ancestors(node):
        cls = type(parent)
        if cls in (ast.If, ast.IfExp, ast.While) and child is not parent.test:  # type: ignore[attr-defined]
            if mentions(ctx, parent.test, words):  # type: ignore[attr-defined]
                return True
        if cls is ast.BoolOp and child is not parent.values[0]:  # type: ignore[attr-defined]
            before = parent.values[: parent.values.index(child)]  # type: ignore[attr-defined]
            if any(mentions(ctx, v, words) for v in before):
                return True
        child = parent
    return False


def mentions(ctx, node: ast.AST, words: Sequence[str]) -> bool:
    code = ctx.text(node)
    return any(w in code for w in words)
