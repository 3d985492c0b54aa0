"""The two trees agree: Python's ``ast`` (what rules decide on) and LibCST (what fixes are written with).

- ``analysis.tree.Tree`` lists every ``ast`` node in source order, with its
  parent and scope;
- an ``ast`` node and the LibCST node for the same code have the same source
  range, which is how positions are given and how ``FixContext`` finds the
  LibCST node of a finding;
- ``mpslint.fixes.ranges`` gives exactly ``PositionProvider``'s ranges, and
  ``mpslint.fixes.walk`` LibCST's own visiting order.

Checked on syntax-heavy snippets, every fixture and rule doc, and a sample of the real corpus.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from mpslint.analysis.tree import Tree
from mpslint.checks.base import Context
from mpslint.config import Settings
from mpslint.fixes import walk
from mpslint.fixes.context import FixContext
from mpslint.fixes.ranges import node_ranges

from corpus import corpus_dir

ROOT = Path(__file__).resolve().parent.parent

# Every statement and expression form with children in unusual field orders.
SYNTAX = '''\
"""doc"""
from __future__ import annotations
import a.b as c, d
from .x import (y as z, w,)
from m import *
@dec(1)
@other
async def f(a, /, b: int = 1, *args, c, d=2, **kw) -> "T":
    global g
    nonlocal_ = lambda x, *y, z=1, **k: (x, y)
    async with a as (b, c), d:
        async for i in range(3):
            await i
    return [x async for x in y if x]
class C(B, metaclass=M):
    x: int = 1
    def m(self):
        yield from self.g
        yield
try:
    pass
except (A, B) as e:
    raise X from e
else:
    del a[1:2:3], b.c
finally:
    assert x, "m"
try:
    pass
except* C:
    pass
while x := f():
    if a: continue
    elif b: break
    else: pass
for (i, *j) in {1: 2, **k}:
    print(f"{i!r:>{w}} {j=}", *a, **b, sep="")
with open("p") as fh, other(): x = {1, 2} | {3}; y = not a and b or c
match cmd:
    case [1, *rest] if rest:
        pass
    case {"k": v, **kw}:
        pass
    case Point(x=0, y=yy) | None:
        pass
    case _:
        pass
t = a if b else -c ** ~d @ e
s = "a" "b" f"{c}" 'd'
x[..., None] += (yield)
type Alias[T: int, *Ts, **P] = list[T]
def g[T](x: T) -> T: return x
print(x, file=sys.stderr) ; i = 0 # trailing
'''


def _texts():
    yield "syntax", SYNTAX
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "rules").glob("*.md")):
        blocks = path.read_text(encoding="utf-8").split("```python\n")[1:]
        for i, block in enumerate(blocks):
            yield f"{path.name}#{i}", block.split("```", 1)[0]


def _parse(text):
    try:
        return ast.parse(text), cst.parse_module(text)
    except (SyntaxError, cst.ParserSyntaxError):
        return None


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.order = []
        self.stack = []
        self.parents = {}

    def on_visit(self, node):
        if self.stack:
            self.parents[node] = self.stack[-1]
        self.stack.append(node)
        self.order.append(node)
        return True

    def on_leave(self, node):
        self.stack.pop()


def _walk(root):
    """(node, parent) in pre-order from ``walk.children``: the order a visitor's ``visit_`` calls come in."""
    stack = [(root, None)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        stack.extend((child, node) for child in reversed(walk.children(node)))


def _iter_nodes(root):
    return (node for node, _ in _walk(root))


def _assert_same_walk(module):
    expected = _Recorder()
    module.visit(expected)
    ours = list(_walk(module))
    assert len(ours) == len(expected.order)
    for (node, parent), other in zip(ours, expected.order):
        assert node is other, (type(node).__name__, type(other).__name__)
        assert parent is expected.parents.get(node)


def _assert_same_positions(module):
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    every = list(_iter_nodes(module))
    ours = node_ranges(module, everything=True)
    for node in every:
        rng = expected[node]
        assert ours[node] == ((rng.start.line, rng.start.column), (rng.end.line, rng.end.column)), type(node).__name__
    # Asking for a few nodes stops early but gives the same ranges for them.
    few = every[len(every) // 3 :: max(1, len(every) // 7)]
    partial = node_ranges(module, few)
    for node in few:
        assert partial[node] == ours[node]


def _position(node):
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _assert_tree_is_source_order(text, module):
    tree = Tree(module, text)
    everything = [n for n in ast.walk(module) if not isinstance(n, (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop))]
    assert len(tree.nodes) == len(everything)
    assert tree.nodes[0] is module
    # (Before Python 3.12, the parts of an f-string all carry the f-string's own position.)
    placed = [n for n in tree.nodes if hasattr(n, "lineno") and not (
        sys.version_info < (3, 12) and any(type(a) is ast.JoinedStr for a in tree.ancestors(n)))]
    # Pre-order in the order of the text: a node starts no earlier than the node before it,
    # unless that one is an ancestor's earlier sibling's subtree (which ends before it starts).
    for earlier, later in zip(placed, placed[1:]):
        if _position(later) < _position(earlier):
            # Only decorators come before the definition they belong to (ast places a def at `def`).
            owner = next((a for a in tree.ancestors(later) if a is earlier), None)
            assert owner is not None and any(tree.contains(d, later) for d in owner.decorator_list), (
                type(earlier).__name__, _position(earlier), type(later).__name__, _position(later))
    for node in tree.nodes[1:]:
        parent = tree.parent(node)
        assert node in list(ast.iter_child_nodes(parent)) or isinstance(parent, (ast.arguments,)), type(node).__name__
        assert tree.index(parent) < tree.index(node) <= tree.end(parent)
    for node in tree.nodes:
        scope = tree.scope_of(node)
        assert isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        assert scope is module or tree.contains(scope, node)


# The ast classes a finding or a fix anchors on, and must find in LibCST by their range.
_ANCHORS = (ast.Call, ast.Attribute, ast.Name, ast.Constant, ast.BinOp, ast.Compare, ast.IfExp, ast.Subscript,
            ast.JoinedStr, ast.keyword, ast.Expr, ast.Assign, ast.If, ast.ImportFrom, ast.Import, ast.alias,
            ast.FunctionDef, ast.UnaryOp, ast.BoolOp, ast.Tuple, ast.List, ast.Dict)


def _assert_ast_ranges_are_libcst_ranges(text, module):
    tree = Tree(module, text)
    ctx = Context(tree, "t.py", Settings())
    fixes = FixContext(ctx)
    for node in tree.nodes:
        if not isinstance(node, _ANCHORS):
            continue
        if type(node) is ast.Constant and type(tree.parent(node)) is ast.JoinedStr:
            continue  # a part of an f-string is no node of its own in LibCST
        if type(node) is ast.Name and type(tree.parent(node)) is ast.JoinedStr:
            continue
        if type(node) is ast.Tuple and type(tree.parent(node)) is ast.Subscript and tree.parent(node).slice is node:
            continue  # `x[a, b]`: LibCST has subscript elements, not a tuple
        if type(node) is ast.alias and node.name == "*":
            continue  # `from x import *`: LibCST has no alias for the star
        if sys.version_info < (3, 12) and any(type(a) is ast.JoinedStr for a in tree.ancestors(node)):
            continue  # before 3.12, ast places the expressions inside f-strings oddly
        found = fixes.node(node)
        assert found is not None, (type(node).__name__, tree.start(node), tree.stop(node), tree.text(node))


@pytest.mark.parametrize("name,text", list(_texts()), ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "")
def test_trees_agree(name, text):
    parsed = _parse(text)
    if parsed is None:
        pytest.skip(f"{name} does not parse here (an MPS000 example, or syntax newer than this Python)")
    module, libcst_module = parsed
    _assert_tree_is_source_order(text, module)
    _assert_ast_ranges_are_libcst_ranges(text, module)
    _assert_same_walk(libcst_module)
    _assert_same_positions(libcst_module)


def test_rules_only_visit():
    """The engine dispatches ``visit_`` methods only; a ``leave_`` method would never run."""
    from mpslint import registry

    leaving = [(cls.CODE, n) for cls in registry.rule_classes() for n in dir(cls) if n.startswith("leave_")]
    assert not leaving


def test_every_handler_names_an_ast_class():
    from mpslint import registry

    for cls in registry.rule_classes():
        for name in cls.handlers():
            assert isinstance(getattr(ast, name[len("visit_"):], None), type), (cls.CODE, name)


def test_children_fields_are_read_for_every_node_class_seen():
    module = cst.parse_module(SYNTAX)
    classes = {type(node) for node in _iter_nodes(module)}
    unknown = sorted(cls.__name__ for cls in classes if walk.child_fields(cls) is None)
    assert not unknown, f"fell back to node.children for {unknown}"


def _node_classes():
    return sorted(
        (c for c in vars(cst).values() if isinstance(c, type) and issubclass(c, cst.CSTNode) and not getattr(c, "__abstractmethods__", None)),
        key=lambda c: c.__name__,
    )


def test_field_order_read_from_code_matches_the_source_for_every_node_class():
    classes = _node_classes()
    assert len(classes) > 100
    for cls in classes:
        assert walk.child_fields(cls) == walk.fields_from_source(cls), cls.__name__


def test_nodes_not_in_the_tree_have_no_range():
    module = cst.parse_module("x = 1\n")
    stranger = cst.Name("x")
    ranges = node_ranges(module, [stranger])
    assert stranger not in ranges
    assert ranges[module.body[0]] == ((1, 0), (1, 5))


def test_columns_count_characters_not_bytes():
    text = "s = 'été'; x = y.cuda()\n"
    tree = Tree(ast.parse(text), text)
    call = tree.of_type(ast.Call)[0]
    assert tree.start(call) == (1, 15) and tree.text(call) == "y.cuda()"


def test_import_aliases_have_positions_on_every_python():
    text = "import a.b as c, d\nfrom .x import (y as z,\n    w)\n"
    tree = Tree(ast.parse(text), text)
    assert [tree.text(a) for a in tree.of_type(ast.alias)] == ["a.b as c", "d", "y as z", "w"]


def test_inherited_values_are_computed_once_per_node_at_any_depth():
    depth = 2000  # an elif chain is that deep in the tree without being deep in the text
    text = "if a0: pass\n" + "".join(f"elif a{i}: pass\n" for i in range(1, depth)) + "else: x = 1\n"
    tree = Tree(ast.parse(text), text)
    calls = []

    def count_ifs(parent, child, above):
        calls.append(1)
        return above + (type(parent) is ast.If)

    deepest = tree.of_type(ast.Assign)[0]
    assert tree.inherited("ifs", deepest, count_ifs, 0) == depth
    first = len(calls)
    for node in tree.nodes:
        tree.inherited("ifs", node, count_ifs, 0)
    assert len(calls) == len(tree.nodes) - 1 and first <= len(calls)


@pytest.mark.corpus
def test_trees_agree_on_the_corpus():
    files = sorted(corpus_dir().rglob("*.py"))
    assert files
    for path in files[:: max(1, len(files) // 25)]:
        text = path.read_text(encoding="utf-8")
        parsed = _parse(text)
        if parsed is not None:
            module, libcst_module = parsed
            _assert_tree_is_source_order(text, module)
            _assert_ast_ranges_are_libcst_ranges(text, module)
            _assert_same_positions(libcst_module)


@pytest.mark.parametrize("name,text", list(_texts()), ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "")
def test_walk_finds_what_ast_walk_finds_in_the_trees_order(name, text):
    from mpslint.analysis.tree import walk

    parsed = _parse(text)
    if parsed is None:
        pytest.skip(f"{name} does not parse here")
    module = parsed[0]
    contexts = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop)
    expected = {id(node) for node in ast.walk(module) if not isinstance(node, contexts)}
    found = list(walk(module))
    assert len(found) == len(expected) and {id(node) for node in found} == expected
    assert found == Tree(module, text).nodes  # depth first, in source order


def test_walk_is_not_limited_by_nesting_depth():
    from mpslint.analysis.tree import walk

    module = ast.parse("x = " + " + ".join(["a"] * 2000))  # nested 2,000 deep: past the recursion limit
    assert sum(1 for node in walk(module) if type(node) is ast.Name) == 2001
