"""No module of mpslint imports anything that imports it back.

The graph is read from the source (every ``import`` statement, inside
functions too), so an import deferred into a function still counts:
deferring an import hides a cycle, it does not remove it. Imports under
``if TYPE_CHECKING:`` never run, but a reader follows them as well: the
whole-package test counts them too, so the layout reads top-down.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mpslint"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool, modules: Set[str], typing_too: bool = False) -> Set[str]:
    found: Set[str] = set()

    def visit(node: ast.AST) -> None:
        if not typing_too and isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            # `from package import submodule` imports the submodule
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {name for name in found if name in modules}


def _graph(typing_too: bool = False) -> Dict[str, Set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    graph = {}
    for path in paths:
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = _imports(tree, name, path.name == "__init__.py", modules, typing_too) - {name}
    return graph


def _cycle_through(start: str, graph: Dict[str, Set[str]]) -> List[str]:
    """A path start -> ... -> start, or []."""
    stack = [(start, [start])]
    seen: Set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return []


GRAPH = _graph()
GRAPH_WITH_TYPES = _graph(typing_too=True)


def test_the_graph_sees_deferred_imports():
    # mps_kernels imports nothing of mpslint at the top; the reader must still see imports inside functions.
    assert "mpslint.knowledge.mps_kernels" in GRAPH["mpslint.knowledge.build"]
    assert "mpslint.registry" in GRAPH["mpslint.config.selectors"]


@pytest.mark.parametrize(
    "module", sorted(m for m in GRAPH if m.startswith(("mpslint.config", "mpslint.knowledge")))
)
def test_no_import_cycle_through(module):
    assert _cycle_through(module, GRAPH) == []


def test_the_graph_with_types_sees_type_only_imports():
    assert "mpslint.config" in GRAPH_WITH_TYPES["mpslint.checks.base"]
    assert "mpslint.config" not in GRAPH["mpslint.checks.base"]


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle_through("a", {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


@pytest.mark.parametrize("module", sorted(GRAPH_WITH_TYPES))
def test_no_import_cycle_anywhere(module):
    assert _cycle_through(module, GRAPH_WITH_TYPES) == []


def test_config_does_not_import_the_registry_when_imported():
    import subprocess
    import sys

    probe = "import sys, mpslint.config; print('mpslint.registry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
