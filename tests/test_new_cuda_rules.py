"""MPS109-MPS112: positives from the bug reports' own code, traps, fixes, messages."""

from __future__ import annotations

import textwrap

import pytest

from helpers import check, codes, fix, rows


def dedent(text: str) -> str:
    return textwrap.dedent(text)


# ------------------------------------------------------------------ MPS111

@pytest.mark.parametrize("source, row", [
    ('import torch\ndevice = "mps" if torch.backends.mps.is_built() else "cpu"\n', 2),
    ('import torch\nif torch.has_mps:\n    device = torch.device("mps")\n', 2),
    ('import torch as th\nuse_mps = th.backends.mps.is_built()\n', 2),
    ('from torch.backends import mps\nif mps.is_built():\n    dev = "mps"\n', 2),
    ('import torch\ndef mps_ok():\n    return torch.backends.mps.is_built()\n', 3),
    ('import torch\nhas_mps = getattr(torch, "has_mps", False)\n', 2),
    ('import torch\nif not torch.backends.mps.is_built():\n    device = "cpu"\nelse:\n    device = "mps"\n', 2),
    ('import torch\ndevice = "cuda" if torch.cuda.is_available() else "mps" if torch.has_mps else "cpu"\n', 2),
])
def test_mps111_reports_is_built_deciding_the_device(source, row):
    assert rows(source, "MPS111") == [row]


@pytest.mark.parametrize("source", [
    # PyTorch's docs: explain why MPS is missing
    'import torch\nif not torch.backends.mps.is_available():\n    if not torch.backends.mps.is_built():\n'
    '        print("MPS not available because the current PyTorch install was not built with MPS enabled.")\n',
    'import torch\nif torch.backends.mps.is_available() and torch.backends.mps.is_built():\n    device = "mps"\n',
    'import torch\nprint(f"MPS built: {torch.backends.mps.is_built()}")\n',
    'import torch\ninfo = {"mps_built": torch.backends.mps.is_built()}\n',
    'import torch\nif torch.backends.mps.is_built():\n    print("compiled with MPS")\n',
    'import torch\nif not torch.backends.mps.is_built():\n    raise SystemExit("no MPS in this build")\n',
    'import pytest, torch\n@pytest.mark.skipif(not torch.backends.mps.is_built(), reason="mps")\ndef test_x(): pass\n',
    'import torch\nflag = torch.has_mps == torch.backends.mps.is_available()\n',
    'import torch\nif torch.backends.mps.is_available():\n    x = "mps" if torch.backends.mps.is_built() else "cpu"\n',
])
def test_mps111_traps(source):
    assert rows(source, "MPS111") == []


def test_mps111_fix_keeps_the_alias_and_is_safe():
    out = fix('import torch as th\ndevice = "mps" if th.backends.mps.is_built() else "cpu"\n', ["MPS111"]).text
    assert out == 'import torch as th\ndevice = "mps" if th.backends.mps.is_available() else "cpu"\n'
    out = fix('import torch\nif torch.has_mps:\n    device = "mps"\n', ["MPS111"]).text
    assert out == 'import torch\nif torch.backends.mps.is_available():\n    device = "mps"\n'
    assert codes(out, ["MPS111"]) == []


def test_mps111_message_names_the_cause_and_the_remedy():
    [finding] = check('import torch\ndevice = "mps" if torch.backends.mps.is_built() else "cpu"\n', ["MPS111"])
    assert "Intel" in finding.message and "is_available()" in finding.message


def test_mps111_getattr_is_named_as_has_mps_and_not_fixed():
    source = 'import torch\ndevice = "mps" if getattr(torch, "has_mps", False) else "cpu"\n'
    [finding] = check(source, ["MPS111"])
    assert "`torch.has_mps`" in finding.message and finding.fix is None
