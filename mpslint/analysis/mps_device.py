"""Whether a device expression may name ``mps``, as this file shows it.

Shared by the rules that report what goes wrong when a value is put on ``mps``
(MPS304's host-to-device copies, MPS504's bfloat16 and sparse tensors). A
device counts when the file shows it can be ``mps``:

- spelled ``"mps"``/``"mps:0"``/``torch.device("mps")``;
- a name whose assignment reaching the use names ``mps`` (``"cuda" if ... else
  "mps"``, ``torch.device("mps")``), or calls a function of this file that names
  ``mps`` (a ``get_device()`` helper);
- ``self.<attr>`` assigned such a value in the enclosing class;
- a name or ``self.<attr>`` the enclosing function or class compares with
  ``mps`` (``self.device == torch.device("mps")``, ``device.type in ("cpu", "mps")``):
  the code itself expects it may be ``mps`` (nnU-Net's trainer);
- ``accelerator.device`` of an ``accelerate.Accelerator``: it is ``mps`` on
  Apple silicon unless the script asks for the CPU.

Anything else (a parameter, ``args.device``, a device from another module) is
not known to be ``mps``: rules stay silent on it.
"""

from __future__ import annotations

import ast
import bisect
import re
from typing import Dict, Iterator, List, Optional, Tuple

from mpslint.analysis.device_flow import DeviceFlow
from mpslint.analysis.syntax import argument, string_value

EVIDENCE = ('"mps', "'mps", "backends.mps", "torch.mps")
_MPS_WORD = re.compile(r"(?<![A-Za-z0-9_])mps(?![A-Za-z0-9_])")


def file_names_mps(ctx) -> bool:
    """The file shows it may run on mps: ``EVIDENCE``, or a string naming mps as a word (nanochat's
    ``help="cuda|cpu|mps (empty = autodetect)"``, ``"... not supported on mps"``). Computed once per file."""
    return ctx.analysis(_names_mps_anywhere)


def _names_mps_anywhere(ctx) -> bool:
    source = ctx.source
    if any(s in source for s in EVIDENCE):
        return True
    if "mps" not in source:
        return False
    return any(type(node) is ast.Constant and isinstance(node.value, str) and _MPS_WORD.search(node.value)
               for node in ctx.tree.nodes)


def literal_device_type(ctx, node: ast.AST) -> Optional[str]:
    """``"mps:0"`` -> ``"mps"``; ``torch.device("cuda")`` -> ``"cuda"``; None for anything not spelled out."""
    text = string_value(node)
    if text is None and type(node) is ast.Call and ctx.qualify(node.func) == "torch.device":  # type: ignore[attr-defined]
        first = argument(node, "type", 0)  # type: ignore[arg-type]
        text = string_value(first) if first is not None else None
    return text.split(":", 1)[0] if text is not None else None


def may_be_mps(ctx, node: ast.AST) -> bool:
    literal = literal_device_type(ctx, node)
    if literal is not None:
        return literal == "mps"
    if type(node) is ast.Attribute and node.attr == "device" and type(node.value) is ast.Name \
            and is_accelerator(ctx, node.value):  # type: ignore[attr-defined]
        return True
    if not any(s in ctx.source for s in EVIDENCE):
        return False
    if type(node) is ast.Name:
        flow = ctx.analysis(DeviceFlow)
        if any(b.how == "assign" and b.value is not None and _names_mps(ctx, b.value)
               for b in flow.visible(node.id, node)):
            return True
        owner = next((a for a in ctx.tree.ancestors(node) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        return _compared_with_mps(ctx, owner or ctx.tree.module, ctx.text(node))
    if type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self":  # type: ignore[attr-defined]
        owner = next((a for a in ctx.tree.ancestors(node) if type(a) is ast.ClassDef), None)
        if owner is None:
            return False
        if _compared_with_mps(ctx, owner, ctx.text(node)):
            return True
        assigned = ctx.analysis(_self_assignments).get(node.attr, [])  # type: ignore[attr-defined]
        return any(_names_mps(ctx, value) for value in _within(ctx.tree, owner, assigned))
    return False


def _compared_with_mps(ctx, owner: ast.AST, text: str) -> bool:
    """``owner`` compares ``text`` (or ``text.type``, ``str(text)``) with an mps literal."""
    compared = ctx.analysis(_mps_comparisons)
    return any(next(_within(ctx.tree, owner, compared.get(side, [])), None) is not None
               for side in (text, text + ".type", f"str({text})"))


# What the questions above look up, found in one pass per file (as every name asked about would otherwise walk
# its whole function or class again): per text or attribute, (tree index, node) in source order.
Indexed = Dict[str, List[Tuple[int, ast.AST]]]


def _mps_comparisons(ctx) -> Indexed:
    """The text of each side of every comparison with an mps literal among its sides -> those comparisons."""
    found: Indexed = {}
    tree = ctx.tree
    for compare in tree.of_type(ast.Compare):
        parts = [compare.left, *compare.comparators]  # type: ignore[attr-defined]
        if any(literal_device_type(ctx, item) == "mps" for part in parts
               for item in (part.elts if type(part) in (ast.Tuple, ast.List, ast.Set) else [part])):  # type: ignore[attr-defined]
            for text in {ctx.text(p) for p in parts}:
                found.setdefault(text, []).append((tree.index(compare), compare))
    return found


def _self_assignments(ctx) -> Indexed:
    """``x`` -> the values of the ``self.x = value`` statements of the file."""
    found: Indexed = {}
    tree = ctx.tree
    for assign in tree.of_type(ast.Assign):
        for target in assign.targets:  # type: ignore[attr-defined]
            if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":  # type: ignore[attr-defined]
                found.setdefault(target.attr, []).append((tree.index(assign), assign.value))  # type: ignore[attr-defined]
    return found


def _within(tree, owner: ast.AST, indexed: List[Tuple[int, ast.AST]]) -> Iterator[ast.AST]:
    """The nodes of ``indexed`` (in source order) inside ``owner``, found by bisection."""
    first, last = tree.index(owner), tree.end(owner)
    position = bisect.bisect_left(indexed, (first,))  # compares indices only: (i,) sorts before (i, node)
    while position < len(indexed) and indexed[position][0] <= last:
        yield indexed[position][1]
        position += 1


def is_accelerator(ctx, name: ast.Name) -> bool:
    flow = ctx.analysis(DeviceFlow)
    for binding in flow.visible(name.id, name):
        value = binding.value
        if binding.how == "assign" and type(value) is ast.Call and ctx.qualify(value.func) == "accelerate.Accelerator":  # type: ignore[attr-defined]
            return not any(k.arg == "cpu" for k in value.keywords)  # type: ignore[attr-defined]
    return False


def _names_mps(ctx, value: ast.AST) -> bool:
    if any(s in ctx.text(value) for s in EVIDENCE):
        return True
    if type(value) is ast.Call and type(value.func) is ast.Name:  # type: ignore[attr-defined]
        name = value.func.id  # type: ignore[attr-defined]
        return any(f.name == name and any(s in ctx.text(f) for s in EVIDENCE)  # type: ignore[attr-defined]
                   for f in ctx.tree.of_type(ast.FunctionDef))
    return False
