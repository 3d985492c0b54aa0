"""A rule's findings do not depend on what else is selected (issue 29, item 3).

For every fixture and every rule code, ``--select CODE`` gives exactly that
code's findings of the default run: same places, messages and fixes. Rules
share analyses and memoized tree walks, so a rule that read another's answer
would report differently depending on which rule asked first.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mpslint.config import Settings
from mpslint.config.torch_version import newest_known_torch
from mpslint.registry import rule_codes
from mpslint.runner import Mode, process_bytes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SETTINGS = {
    "defaults": Settings(),
    "newest-torch-interval-guarded": Settings(torch_version=newest_known_torch(), report_interval_guarded=True),
}


def _files():
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".ipynb"):
            yield pytest.param(path, id=str(path.relative_to(FIXTURES)))


def differences(data: bytes, display: str, settings: Settings):
    """(code, findings in the default run, findings with only that code selected) wherever the two differ."""
    everything = process_bytes(data, display, settings, Mode()).diagnostics
    found = []
    for code in sorted(rule_codes()):
        alone = process_bytes(data, display, replace(settings, select=frozenset([code])), Mode()).diagnostics
        expected = [d for d in everything if d.code == code]
        actual = [d for d in alone if d.code == code]
        if actual != expected:
            found.append((code, expected, actual))
    return found


@pytest.mark.parametrize("settings", sorted(SETTINGS))
@pytest.mark.parametrize("path", list(_files()))
def test_select_one_code_gives_its_findings_of_the_default_run(path, settings):
    assert differences(path.read_bytes(), str(path), SETTINGS[settings]) == []


def test_the_issue_reproducer(tmp_path):
    """An unguarded DataLoader with workers is MPS403 also when MPS101 (which asks the device picker) runs."""
    script = (
        "import torch\nfrom torch.utils.data import DataLoader\n\ncuda = torch.cuda.is_available()\n"
        "model = torch.nn.Linear(4, 2)\nif cuda:\n    model = model.cuda()\n"
        "Tensor = torch.cuda.FloatTensor if cuda else torch.Tensor\n"
        "loader = DataLoader(list(range(8)), batch_size=2, num_workers=2)\n"
        "for batch in loader:\n    out = model(batch.type(Tensor))\n"
    )
    codes = [d.code for d in process_bytes(script.encode(), "s.py", Settings(), Mode()).diagnostics]
    assert "MPS403" in codes
    assert differences(script.encode(), "s.py", Settings()) == []


# Every code on every corpus file is ~100,000 checks: far over CI's budget. The files where rules
# have something to look at (they name a device), every one of them up to this many, evenly spread.
CORPUS_FILES = 120


@pytest.mark.corpus
def test_select_one_code_on_the_corpus():
    from corpus import corpus_dir

    candidates = [p for p in sorted(corpus_dir().rglob("*.py")) if _names_a_device(p.read_bytes())]
    stride = max(1, len(candidates) // CORPUS_FILES)
    mismatches = []
    for path in candidates[::stride]:
        found = differences(path.read_bytes(), str(path), Settings())
        mismatches.extend((str(path), code) for code, _, _ in found)
    assert mismatches == []


def _names_a_device(data: bytes) -> bool:
    return b"cuda" in data or b"mps" in data or b".device" in data
