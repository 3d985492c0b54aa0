"""`mpslint --fix` never changes what a program means outside its edits (issue #29's fixer items).

Each test is a reproducer from the issue: a form feed before an indented
statement, a `pick_device` the file already has, imports after the first
statement, and so on. The property behind all of them (the AST outside the
rewritten nodes is unchanged) is tested on generated and mutated programs in
test_fix_property.py.
"""

from __future__ import annotations

import ast

import pytest

from helpers import fix


def _statement_scopes(text: str):
    """(function name or None, statement source) for each simple statement: where every statement runs."""
    found = []

    def visit(node, scope):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else scope
            if isinstance(child, ast.stmt) and not hasattr(child, "body"):
                found.append((scope, ast.unparse(child)))
            visit(child, inner)

    visit(ast.parse(text), None)
    return found


# --- form feeds ---------------------------------------------------------------------------------


def test_a_form_feed_before_an_indented_statement_keeps_the_fix_in_its_function():
    # Python resets the indentation column at a form feed: the statement's indentation is the four spaces.
    outcome = fix("import torch\n\ndef f():\n\x0c    m = Model().cuda()\n")
    assert outcome.error is None and outcome.fixed["MPS101"] == 1
    scopes = _statement_scopes(outcome.text)
    assert ("f", "device = pick_device()") in scopes
    assert ("f", "m = Model().to(device)") in scopes


def test_a_form_feed_in_a_longer_class_gives_code_that_parses():
    source = (
        "import torch\n\nclass A:\n    def f(self):\n\x0c        m = Model().cuda()\n        return m\n\n"
        "    def g(self):\n        return torch.zeros(1).cuda()\n"
    )
    outcome = fix(source)
    assert outcome.error is None and outcome.fixed["MPS101"] == 2
    scopes = _statement_scopes(outcome.text)
    assert ("f", "m = Model().to(device)") in scopes and ("f", "return m") in scopes
    assert ("g", "return torch.zeros(1).to(device)") in scopes


@pytest.mark.parametrize("leading", ["\x0c    ", "  \x0c    ", "\x0c\x0c    ", "\t\x0c  "])
def test_statement_indentation_counts_from_the_last_form_feed(leading):
    from mpslint.analysis.tree import Tree

    source = f"if x:\n{leading}y = 1\n"
    tree = Tree(ast.parse(source), source)
    assert tree.indentation(2) == leading[leading.rfind("\x0c") + 1:]
