"""The engine: one pass, positions, prefilter, MPS000, contained rule crashes."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from mpslint import registry
from mpslint.checks.base import FixSpec, Rule, insert_line_after, replace
from mpslint.config import Settings
from mpslint.engine import INTERNAL_ERROR, INVALID_SYNTAX, check_text
from mpslint.fixer import apply_fixes, fix_text


class CudaCall(Rule):
    CODE = "MPS991"
    NAME = "test-cuda-call"
    TRIGGERS = (".cuda(",)

    def visit_Call(self, node: ast.Call) -> None:
        if type(node.func) is ast.Attribute and node.func.attr == "cuda" and not node.args:
            helper = insert_line_after(self.ctx.module.body[0], "DEVICE = pick()\n")
            edits = [replace(node, f"{self.ctx.text(node.func.value)}.to(DEVICE)")]
            if "DEVICE = pick()" not in self.ctx.source:
                edits.append(helper)
            self.report(node, "cuda call", fix=FixSpec.safe("use DEVICE", *edits))


class Crashes(Rule):
    CODE = "MPS992"
    NAME = "test-crash"
    TRIGGERS = ("boom",)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "boom":
            raise ZeroDivisionError("rule bug")


@pytest.fixture
def test_rules(monkeypatch):
    monkeypatch.setattr(registry, "classes_for", lambda codes: tuple(c for c in (CudaCall, Crashes) if c.CODE in codes))
    return Settings(select=frozenset({"MPS991", "MPS992"}))


def test_positions_are_one_based_and_span_the_node(test_rules):
    [d] = check_text("import torch\nx = y.cuda()\n", "a.py", test_rules).diagnostics
    assert (d.location.row, d.location.column, d.end_location.row, d.end_location.column) == (2, 5, 2, 13)
    assert d.noqa_row == 2


def test_syntax_error_is_mps000_not_an_exception(test_rules):
    result = check_text("import torch\nx = y.cuda(\n", "a.py", test_rules)
    assert not result.parsed
    [d] = result.diagnostics
    assert d.code == INVALID_SYNTAX and d.message.startswith("could not parse")


def test_prefilter_skips_files_without_triggers(test_rules):
    assert check_text("import torch\nx = 1\n", "a.py", test_rules).skipped
    assert not check_text("import torch\nx = 1\n", "a.py", test_rules, prefilter=False).skipped


@pytest.mark.parametrize("source", ["def broken(:\n", "import torch\ndef f(:\n", "x = 1\n  y = 2\n", "\x00"])
def test_every_file_that_does_not_parse_is_mps000_whatever_it_contains(test_rules, source):
    # Even with none of the rules' trigger strings: a broken file never passes.
    result = check_text(source, "a.py", test_rules)
    assert not result.parsed
    assert [d.code for d in result.diagnostics] == [INVALID_SYNTAX]


def test_a_crashing_rule_is_contained(test_rules):
    diagnostics = check_text("import torch\nboom = 1\nx = y.cuda()\n", "a.py", test_rules).diagnostics
    assert [d.code for d in diagnostics] == [INTERNAL_ERROR, "MPS991"]
    crash = diagnostics[0]
    assert "MPS992" in crash.message and "report" in crash.message
    assert "ZeroDivisionError" in crash.detail


def test_noqa_inline_and_file_level(test_rules):
    src = "import torch\nx = y.cuda()  # noqa: MPS991\nz = y.cuda()  # noqa: MPS1\nw = y.cuda()  # noqa\n"
    assert [d.location.row for d in check_text(src, "a.py", test_rules).diagnostics] == [3]
    assert check_text("# mpslint: noqa\nimport torch\nx = y.cuda()\n", "a.py", test_rules).diagnostics == []
    assert check_text("# mpslint: noqa: MPS9\nimport torch\nx = y.cuda()\n", "a.py", test_rules).diagnostics == []
    kept = check_text("# mpslint: noqa: MPS1\nimport torch\nx = y.cuda()\n", "a.py", test_rules).diagnostics
    assert [d.code for d in kept] == ["MPS991"]
    # A noqa inside a string is not a comment.
    assert check_text('import torch\nx = y.cuda(); s = "# noqa"\n', "a.py", test_rules).diagnostics


def test_fix_reaches_a_fixpoint_through_nested_fixes(test_rules):
    outcome = fix_text("import torch\nx = y.cuda().cuda()\n", "a.py", test_rules)
    assert outcome.text == "import torch\nDEVICE = pick()\nx = y.to(DEVICE).to(DEVICE)\n"
    assert outcome.fixed["MPS991"] == 2 and outcome.error is None
    assert outcome.diagnostics == []


def test_fix_keeps_crlf_and_handles_missing_final_newline(test_rules):
    outcome = fix_text("import torch\r\nx = y.cuda()", "a.py", test_rules, newline="\r\n")
    assert outcome.text == "import torch\r\nDEVICE = pick()\r\nx = y.to(DEVICE)"
    outcome = fix_text("import torch", "a.py", test_rules)
    assert outcome.text == "import torch"


def test_a_fix_that_breaks_parsing_is_not_applied(test_rules, monkeypatch):
    import mpslint.fixer as fixer

    real = fixer.apply_fixes
    monkeypatch.setattr(fixer, "apply_fixes", lambda text, fixes, newline="\n": real(text, fixes, newline=newline) + "def (:\n")
    source = "import torch\nx = y.cuda()\n"
    outcome = fix_text(source, "a.py", test_rules)
    assert outcome.text == source
    assert "does not parse" in outcome.error


def test_apply_fixes_merges_identical_edits():
    from mpslint.diagnostic import Applicability, Edit, Fix, Location

    insert = Edit(Location(1, 1), Location(1, 1), "import x\n")
    a = Fix("a", Applicability.SAFE, (insert, Edit(Location(1, 1), Location(1, 2), "A")))
    b = Fix("b", Applicability.SAFE, (insert, Edit(Location(1, 3), Location(1, 4), "B")))
    assert apply_fixes("abc\n", [a, b]) == "import x\nAbB\n"


def test_static_mode_never_executes_the_code(tmp_path, test_rules):
    marker = tmp_path / "executed"
    source = f"import torch\nopen({str(marker)!r}, 'w').write('x')\nx = y.cuda()\n"
    check_text(source, "a.py", Settings())
    fix_text(source, "a.py", test_rules)
    assert not marker.exists()


@pytest.mark.parametrize("depth", [150, 400, 3000])
def test_deep_nesting_never_crashes_the_process(depth):
    # LibCST's native parser overflows its stack near 2,000 nested brackets; Python
    # itself refuses more than 200, so such a file is MPS000 without reaching LibCST.
    source = "import torch\nx = " + "f(" * depth + "y.cuda()" + ")" * depth + "\n"
    [diagnostic] = check_text(source, "a.py", Settings()).diagnostics
    assert diagnostic.code == ("MPS101" if depth <= 200 else INVALID_SYNTAX)


@pytest.mark.parametrize("fixture", ["training/gan.py", "training/unplaced_batch.py", "cuda/train_cuda.py", "ops/ops_coverage.py"])
def test_a_checked_file_leaves_no_tree_to_the_cyclic_collector(fixture):
    # The engine pauses the collector per file; a reference cycle holding a tree (an analysis that keeps
    # the context, a recursive closure over the index) would then pile up until the next collection.
    import ast
    import gc
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "fixtures" / fixture).read_text(encoding="utf-8")
    check_text(text, fixture, Settings())  # first use fills module-level caches
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        check_text(text, fixture, Settings())
        gc.collect()
        kept = [o for o in gc.garbage if isinstance(o, (cst.CSTNode, ast.AST)) or type(o).__module__.startswith("mpslint")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not kept, f"{len(kept)} objects in cycles, e.g. {type(kept[0])}"


@pytest.mark.parametrize("text", ["", "a", "a\n", "\n\n", "ab\ncd", "ab\ncd\n", "x\r\ny\rz\n", "é\nü\n", "a\x0cb\nc",
                                  "a\u2028b\nc"])
def test_line_starts_split_on_the_newlines_python_and_libcst_split_on(text):
    import re

    from mpslint.source import line_starts

    expected = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    assert line_starts(text) == expected
