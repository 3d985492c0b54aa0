"""``benchmarks/accuracy.py``: the scorer's logic on a tiny synthetic set, and the real labels' integrity.

Not the real numbers (those are the benchmark's output) and nothing timed; mpslint is not run here.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load():
    # Loaded from its file, so that benchmarks/ never joins sys.path for the other tests.
    path = ROOT / "benchmarks" / "accuracy.py"
    spec = importlib.util.spec_from_file_location("mpslint_accuracy_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


acc = _load()

LABELS = """
must = [
  {line = 3, family = "MPS1", code = "MPS101"},
  {line = 5, end = 7, family = "MPS4"},
  {line = 9, family = "MPS2"},
  {line = 9, family = "MPS1"},
  {line = 12, family = "MPS3"},
]
trap = [
  {line = 20, note = "after the loop"},
  {line = 21, family = "MPS2"},
]
either = [
  {line = 30, family = "MPS2"},
  {line = 31},
]
"""


def _score(findings):
    labels = {"r/a.py": acc.parse_labels(LABELS)}
    return acc.score(labels, [acc.Finding("r/a.py", line, code) for line, code in findings])


def test_true_positive_false_negative_and_ranges():
    result = _score([(3, "MPS101"), (6, "MPS401"), (9, "MPS201")])
    assert result.tp == {"MPS1": 1, "MPS2": 1, "MPS3": 0, "MPS4": 1, "MPS5": 0}
    # line 9's MPS1 label and line 12's MPS3 label were not found
    assert result.fn == {"MPS1": 1, "MPS2": 0, "MPS3": 1, "MPS4": 0, "MPS5": 0}
    assert result.total("fp") == 0
    assert sorted((lab.line, lab.family) for _, lab in result.false_negatives) == [(9, "MPS1"), (12, "MPS3")]


def test_family_must_match_and_duplicates_count_once():
    # MPS3 on line 3 is not the MPS1 the label asks for: a false positive, and line 3 stays unmatched.
    result = _score([(3, "MPS301"), (9, "MPS201"), (9, "MPS203"), (9, "MPS201")])
    assert result.tp["MPS2"] == 1 and result.fp["MPS3"] == 1
    assert result.fn["MPS1"] == 2  # line 3 and line 9's MPS1
    assert result.false_positives == [("r/a.py", 3, "MPS301", False)]


def test_traps_either_and_unlabelled_lines():
    result = _score([(20, "MPS201"), (21, "MPS201"), (21, "MPS101"), (30, "MPS201"), (30, "MPS101"),
                     (31, "MPS501"), (40, "MPS402")])
    # trap 20 (any family) and trap 21 (MPS2 only) are hit; MPS1 on 21 is an ordinary false positive
    assert result.traps_hit == 2
    # either 30 covers MPS2 only; either 31 covers any family
    assert result.either_hit == 2
    assert result.fp == {"MPS1": 2, "MPS2": 2, "MPS3": 0, "MPS4": 1, "MPS5": 0}
    assert result.total("tp") == 0 and result.total("fn") == 5


def test_files_without_labels_count_their_findings_as_false_positives():
    labels = {"r/a.py": acc.parse_labels("must = []")}
    result = acc.score(labels, [acc.Finding("r/b.py", 1, "MPS101")])
    assert result.fp["MPS1"] == 1 and result.total("fn") == 0


def test_table_prints_every_family_and_overall():
    text = acc.table(_score([(3, "MPS101"), (40, "MPS402")]))
    for row in ("MPS1", "MPS2", "MPS3", "MPS4", "MPS5", "overall", "traps hit"):
        assert row in text


@pytest.mark.parametrize("bad", [
    'must = [{line = 3}]',                                   # a must needs a family
    'must = [{line = 3, family = "MPS9"}]',                  # no such family
    'must = [{line = 3, family = "MPS1", code = "MPS201"}]', # code outside its family
    'must = [{line = 5, end = 4, family = "MPS1"}]',         # empty range
    'must = [{line = 3, family = "MPS1", colour = "red"}]',  # unknown field
    'musts = []',                                            # unknown kind
])
def test_malformed_labels_are_rejected(bad):
    with pytest.raises(ValueError):
        acc.parse_labels(bad)


def test_every_real_label_file_parses_and_points_at_existing_lines():
    labels = acc.load_labels()
    assert labels, "no label files"
    for rel, labs in labels.items():
        path = acc.FILES / rel
        assert path.is_file(), f"label file for a missing file: {rel}"
        lines = path.read_text(encoding="utf-8").splitlines()
        for lab in labs:
            assert lab.end <= len(lines), f"{rel}:{lab.line}-{lab.end} past the end ({len(lines)} lines)"
            assert lines[lab.line - 1].strip(), f"{rel}:{lab.line} labels a blank line"


def test_every_file_has_a_label_file_and_the_set_is_big_enough():
    labels = acc.load_labels()
    files = {p.relative_to(acc.FILES).as_posix() for p in acc.FILES.rglob("*.py")}
    assert files == set(labels)
    assert len(files) >= 40
    assert len({rel.split("/", 1)[0] for rel in files}) >= 15
