"""A LibCST node's children in LibCST's own visiting order, without rebuilding it.

``CSTNode.visit`` rebuilds every node it passes through (it serves
transformers and visitors alike), which costs about as much as parsing the
file. A read-only pass does not need that: this module reads each node's
children straight from its fields, in the order LibCST's
``_visit_and_replace_children`` visits them. That method names each field it
visits as a string constant (``visit_required(self, "func", ...)``), so the
order is read once per node class from the method's code constants: a new
LibCST release with new nodes or fields needs no table here. Where that
reading fails, the class falls back to LibCST's ``children`` (same order, one
rebuild). ``tests/test_traversal.py`` checks the order against the method's
source for every node class, and against ``CSTNode.visit`` on real code.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

# LibCST's helpers that visit one field; their second argument names it.
_VISIT_HELPERS = frozenset(
    {
        "visit_required",
        "visit_optional",
        "visit_sentinel",
        "visit_sequence",
        "visit_iterable",
        "visit_body_sequence",
        "visit_body_iterable",
    }
)

FIELDS: Dict[type, Optional[Tuple[str, ...]]] = {}
# type -> is it a CSTNode class. ``isinstance(x, CSTNode)`` goes through ABCMeta and
# was the single most expensive call of the walk; a dict lookup by type is not.
IS_NODE: Dict[type, bool] = {}


def is_node_type(cls: type) -> bool:
    known = IS_NODE.get(cls)
    if known is None:
        known = IS_NODE[cls] = issubclass(cls, cst.CSTNode)
    return known


def child_fields(cls: type) -> Optional[Tuple[str, ...]]:
    """Names of ``cls``'s fields holding children, in visiting order; None if unknown."""
    try:
        return FIELDS[cls]
    except KeyError:
        pass
    fields = _fields_from_code(cls)
    FIELDS[cls] = fields
    return fields


def _fields_from_code(cls: type) -> Optional[Tuple[str, ...]]:
    """Field names among the method's constants, in first-use order (the compiler keeps source order)."""
    import dataclasses

    try:
        constants = cls._visit_and_replace_children.__code__.co_consts
        names = {f.name for f in dataclasses.fields(cls)}
    except (AttributeError, TypeError):
        return None
    return tuple(dict.fromkeys(c for c in constants if type(c) is str and c in names))


def fields_from_source(cls: type) -> Optional[Tuple[str, ...]]:
    """The same order read from the method's source (slow: for tests)."""
    import ast
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(cls._visit_and_replace_children))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, AttributeError):
        return None
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _VISIT_HELPERS
    ]
    names = []
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        if len(call.args) < 2 or not isinstance(call.args[1], ast.Constant) or not isinstance(call.args[1].value, str):
            return None  # not the shape we know how to read
        names.append(call.args[1].value)
    # ``ImportFrom.names`` is visited by one of two helpers depending on its type.
    return tuple(dict.fromkeys(names))


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The direct children of ``node`` in visiting order (like ``node.children``, without a rebuild)."""
    fields = FIELDS[type(node)] if type(node) in FIELDS else child_fields(type(node))
    if fields is None:
        return list(node.children)
    result: List[cst.CSTNode] = []
    for name in fields:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            result.extend(value)
        elif IS_NODE[kind] if kind in IS_NODE else is_node_type(kind):
            result.append(value)
    return result



# Fields that only hold tokens, whitespace and comments: no fix looks inside
# them, and skipping them leaves about a third of a module's nodes to walk.
# ``star_arg``/``star_kwarg`` (``*args``, ``**kw``) share a prefix but hold parameters.
_SKIP_PREFIXES = ("whitespace", "lpar", "rpar", "lbrace", "rbrace", "lbracket", "rbracket", "leading_lines",
                  "lines_after", "trailing_whitespace", "header", "footer", "newline", "comma", "equal", "colon",
                  "semicolon", "dot", "asynchronous", "operator", "indent")
_SKIP_EXACT = frozenset({"star"})
_SYNTAX_FIELDS: Dict[type, Tuple[str, ...]] = {}


def syntax_fields(kind: type) -> Tuple[str, ...]:
    """``kind``'s fields that can hold syntax nodes, in LibCST's visiting order."""
    names = _SYNTAX_FIELDS.get(kind)
    if names is None:
        import dataclasses

        ordered = child_fields(kind)
        if ordered is None:  # a node class whose visiting code we cannot read: declaration order
            ordered = tuple(f.name for f in dataclasses.fields(kind))
        names = tuple(n for n in ordered if not (n.startswith(_SKIP_PREFIXES) or n in _SKIP_EXACT))
        _SYNTAX_FIELDS[kind] = names
    return names


def syntax_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The direct children of ``node`` that are syntax (not tokens, whitespace or comments), in visiting order."""
    result: List[cst.CSTNode] = []
    for name in syntax_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            result.extend(v for v in value if (IS_NODE[type(v)] if type(v) in IS_NODE else is_node_type(type(v))))
        elif IS_NODE[kind] if kind in IS_NODE else is_node_type(kind):
            result.append(value)
    return result
