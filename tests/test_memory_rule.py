"""MPS113: CUDA-only memory release or statistics in code that runs on mps (issue 26, memory habits)."""

from __future__ import annotations

import pytest

from helpers import codes, rows

PICKER = 'import gc\nimport torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "mps")\n'


def found(body: str):
    return codes(PICKER + body, ["MPS113"])


@pytest.mark.parametrize("body", [
    # unloading a model (karpathy/nanochat#838)
    "def unload(model):\n    del model\n    gc.collect()\n    if torch.cuda.is_available():\n        torch.cuda.empty_cache()\n",
    "def unload(model):\n    del model\n    if device.type == 'cuda':\n        torch.cuda.empty_cache()\n",
    # statistics that log nothing on a Mac
    "if device.type == 'cuda':\n    print(torch.cuda.max_memory_allocated() / 2**20)\n",
    "if torch.cuda.is_available():\n    used = torch.cuda.memory_allocated()\n",
    "peak = torch.cuda.max_memory_reserved() if torch.cuda.is_available() else 0\n",
])
def test_cuda_only_memory_in_code_that_runs_on_mps(body):
    assert found(body) == ["MPS113"]


@pytest.mark.parametrize("body", [
    # MPS has its branch
    "if torch.cuda.is_available():\n    torch.cuda.empty_cache()\nelif torch.backends.mps.is_available():\n"
    "    torch.mps.empty_cache()\n",
    "if device.type == 'cuda':\n    torch.cuda.empty_cache()\nelif device.type == 'mps':\n    torch.mps.empty_cache()\n",
    "def free():\n    if torch.cuda.is_available():\n        torch.cuda.empty_cache()\n    torch.mps.empty_cache()\n",
    "def report():\n    if device.type == 'cuda':\n        return torch.cuda.memory_allocated()\n"
    "    return torch.mps.current_allocated_memory()\n",
    # resetting a counter prints nothing
    "if torch.cuda.is_available():\n    torch.cuda.reset_peak_memory_stats()\n",
    # unguarded: MPS104's
    "torch.cuda.empty_cache()\n",
])
def test_traps(body):
    assert found(body) == []


def test_a_chosen_statistics_function_that_reads_0_on_a_mac():
    # karpathy/nanochat's base_train.py: the device type comes from --device-type "cuda|cpu|mps".
    source = (
        "import argparse\nimport torch\n\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('--device-type', default='', help='cuda|cpu|mps (empty = autodetect)')\n"
        "device_type = parser.parse_args().device_type\n"
        "get_max_memory = torch.cuda.max_memory_allocated if device_type == 'cuda' else lambda: 0\n"
    )
    assert rows(source, "MPS113") == [7]
    assert rows(source.replace("cuda|cpu|mps", "cuda|cpu"), "MPS113") == []
    with_mps = source.replace("else lambda: 0", "else torch.mps.current_allocated_memory")
    assert rows(with_mps, "MPS113") == []


def test_a_file_that_never_names_mps_is_cuda_or_cpu_only():
    source = "import torch\n\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()\n"
    assert codes(source, ["MPS113"]) == []


def test_mps104_and_mps113_split_the_cases():
    source = PICKER + "torch.cuda.empty_cache()\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()\n"
    assert rows(source, "MPS104") == [5] and rows(source, "MPS113") == [7]
