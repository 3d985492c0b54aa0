"""The engine's own tree walk and position resolver agree with LibCST's.

``mpslint.walk`` replaces ``CSTNode.visit`` (which rebuilds every node) and
``mpslint.positions`` replaces ``PositionProvider`` (which records every
node); both must give exactly what LibCST gives: the same visit/leave order
and parents, the same ranges. Checked on syntax-heavy snippets, every fixture
and rule doc, and a sample of the real corpus.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from mpslint import registry, walk
from mpslint.analysis.tree import Tree, syntax_fields
from mpslint.positions import node_ranges

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
        return cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.events = []
        self.stack = []
        self.parents = {}

    def on_visit(self, node):
        if self.stack:
            self.parents[node] = self.stack[-1]
        self.stack.append(node)
        self.events.append(("visit", node))
        return True

    def on_leave(self, node):
        self.stack.pop()
        self.events.append(("leave", node))


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
    theirs = [n for kind, n in expected.events if kind == "visit"]
    assert len(ours) == len(theirs)
    for (node, parent), other in zip(ours, theirs):
        assert node is other, (type(node).__name__, type(other).__name__)
        assert parent is expected.parents.get(node)


def _token_nodes(module):
    """Every node LibCST visits inside a field the Tree skips (tokens, whitespace, comments)."""
    inside = set()
    for node in _iter_nodes(module):
        kept = set(syntax_fields(type(node)))
        for name in walk.child_fields(type(node)) or ():
            if name not in kept:
                value = getattr(node, name)
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    if isinstance(item, cst.CSTNode):
                        inside.update(id(n) for n in _iter_nodes(item))
    return inside


def _assert_tree_is_libcst_order_without_tokens(module):
    """The engine feeds rules from the Tree: same nodes, order and parents as a LibCST visitor, tokens aside."""
    expected = _Recorder()
    module.visit(expected)
    tokens = _token_nodes(module)
    wanted = [n for kind, n in expected.events if kind == "visit" and id(n) not in tokens]
    tree = Tree(module)
    ours = list(tree.start)
    assert len(ours) == len(wanted)
    assert all(a is b for a, b in zip(ours, wanted))
    assert all(tree.parent(n) is expected.parents.get(n) for n in ours)
    # Nothing a rule visits, nor any name or expression, hides among the tokens.
    handled = {name[len("visit_"):] for cls in registry.rule_classes() for name in cls.handlers()}
    token_kinds = {type(n).__name__ for kind, n in expected.events if id(n) in tokens}
    assert not token_kinds & (handled | {"Name", "Param", "Arg", "Attribute", "Call"}), token_kinds & handled


def _assert_same_positions(module):
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    every = list(_iter_nodes(module))
    ours = node_ranges(module, every)
    for node in every:
        rng = expected[node]
        assert ours[node] == ((rng.start.line, rng.start.column), (rng.end.line, rng.end.column)), type(node).__name__
    # Asking for a few nodes stops early but gives the same ranges for them.
    few = every[len(every) // 3 :: max(1, len(every) // 7)]
    partial = node_ranges(module, few)
    for node in few:
        assert partial[node] == ours[node]


@pytest.mark.parametrize("name,text", list(_texts()), ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "")
def test_walk_and_positions_match_libcst(name, text):
    module = _parse(text)
    if module is None:
        pytest.skip(f"{name} does not parse (an MPS000 example)")
    _assert_same_walk(module)
    _assert_tree_is_libcst_order_without_tokens(module)
    _assert_same_positions(module)


def test_rules_only_visit():
    """The engine dispatches ``visit_`` methods only (tree.py); a ``leave_`` method would never run."""
    leaving = [(cls.CODE, n) for cls in registry.rule_classes() for n in dir(cls) if n.startswith("leave_")]
    assert not leaving


def test_star_args_are_in_the_tree():
    module = cst.parse_module("def f(a, *args, b, **kw):\n    pass\n")
    names = [n.name.value for n in Tree(module).start if isinstance(n, cst.Param)]
    assert names == ["a", "args", "b", "kw"]


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


@pytest.mark.corpus
def test_walk_and_positions_match_libcst_on_the_corpus():
    files = sorted(corpus_dir().rglob("*.py"))
    assert files
    for path in files[:: max(1, len(files) // 25)]:
        module = _parse(path.read_text(encoding="utf-8"))
        if module is not None:
            _assert_same_walk(module)
            _assert_tree_is_libcst_order_without_tokens(module)
            _assert_same_positions(module)
