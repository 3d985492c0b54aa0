"""MPS505: MPS environment variables set after PyTorch has read them."""

from __future__ import annotations

import textwrap

import pytest

from mpslint.fixer import fix_text

from helpers import check, codes, fix, rows, settings


@pytest.mark.parametrize("write", [
    'os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"',
    "os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'",
    'os.environ.setdefault("PYTORCH_ENABLE_MPS_FALLBACK", "1")',
    'os.environ.update({"PYTORCH_ENABLE_MPS_FALLBACK": "1"})',
    'os.environ.update(PYTORCH_ENABLE_MPS_FALLBACK="1")',
    'os.environ |= {"PYTORCH_ENABLE_MPS_FALLBACK": "1"}',
    'os.putenv("PYTORCH_ENABLE_MPS_FALLBACK", "1")',
])
def test_every_write_form_after_import_torch(write):
    assert rows(f"import os\nimport torch\n\n{write}\n", "MPS505") == [4]


@pytest.mark.parametrize("importer", [
    "import torch.nn as nn", "from torch import nn", "import torchvision", "import lightning as L",
    "from transformers import Trainer\nfrom peft import LoraConfig", "import timm",
    "try:\n    import torch\nexcept ImportError:\n    torch = None",
])
def test_imports_that_load_torch(importer):
    source = f"import os\n{importer}\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\n"
    assert codes(source, ["MPS505"]) == ["MPS505"]


@pytest.mark.parametrize("source", [
    # set before the import: the usual idiom
    "import os\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\nimport torch\n",
    "import os; os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\nimport argparse, torch\n",
    # a function defined above the import may be called before it
    "import os\ndef setup():\n    os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\nsetup()\nimport torch\n",
    # no import known to load torch
    "import os\nimport numpy\nimport mypackage\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\n",
    # other variables, and removing one
    "import os\nimport torch\nos.environ['TOKENIZERS_PARALLELISM'] = 'false'\n",
    "import os\nimport torch\ndel os.environ['PYTORCH_ENABLE_MPS_FALLBACK']\n",
    # read when the allocator starts: before any tensor is on the device, setting it still works
    "import os\nimport torch\nos.environ['PYTORCH_MPS_HIGH_WATERMARK_RATIO'] = '0.0'\nx = torch.ones(3, device='mps')\n",
    # a string that merely mentions the name
    "import torch\nprint('set PYTORCH_ENABLE_MPS_FALLBACK=1 before running')\n",
])
def test_traps(source):
    assert codes(source, ["MPS505"]) == []


def test_in_a_function_defined_after_the_import():
    source = """\
        import os
        import torch


        def main():
            if torch.backends.mps.is_available():
                os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
        """
    [finding] = check(source, ["MPS505"])
    assert finding.location.row == 7
    assert "in `main()` runs after `import torch` (line 2)" in finding.message
    assert finding.fix is None  # moving it out of the function would change when it runs


def test_a_first_use_variable_after_the_device_was_used():
    source = """\
        import os
        import torch

        model = torch.nn.Linear(4, 4).to("mps")
        os.environ["PYTORCH_MPS_HIGH_WATERMARK_RATIO"] = "0.0"
        """
    [finding] = check(source, ["MPS505"])
    assert finding.location.row == 5
    assert 'runs after the device is first used (`torch.nn.Linear(4, 4).to("mps")`, line 4)' in finding.message
    assert "when the MPS allocator starts" in finding.message


def test_message_explains_the_load_time_read():
    [finding] = check("import os\nimport torchvision\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\n", ["MPS505"])
    assert "`import torchvision` (line 2), which imports torch" in finding.message
    assert "once, while the library loads" in finding.message and "NotImplementedError" in finding.message


def test_fix_moves_the_write_above_the_imports_keeping_os():
    source = textwrap.dedent("""\
        \"\"\"Train.\"\"\"
        from __future__ import annotations

        import numpy as np
        import torch
        import os

        # ops without an MPS kernel run on the CPU
        os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"  # needs a restart otherwise
        x = torch.ones(3)
        """)
    assert fix(source, ["MPS505"]).text == source  # unsafe: it turns the fallback on
    fixed = fix(source, ["MPS505"], unsafe=True).text
    assert fixed == textwrap.dedent("""\
        \"\"\"Train.\"\"\"
        from __future__ import annotations

        import os
        os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"  # needs a restart otherwise
        import numpy as np
        import torch
        import os

        # ops without an MPS kernel run on the CPU
        x = torch.ones(3)
        """)
    assert codes(fixed, ["MPS505"]) == []


def test_fix_keeps_the_import_form_of_the_write():
    source = "from os import environ as env\nimport torch\nenv.setdefault('PYTORCH_ENABLE_MPS_FALLBACK', '1')\nx = 1\n"
    fixed = fix(source, ["MPS505"], unsafe=True).text
    assert fixed == "from os import environ as env\nenv.setdefault('PYTORCH_ENABLE_MPS_FALLBACK', '1')\nimport torch\nx = 1\n"


@pytest.mark.parametrize("source", [
    # in a block: moving it out would make it unconditional
    "import os\nimport torch\nif torch.backends.mps.is_available():\n    os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'\nx = 1\n",
    # computed from a name defined after the imports
    "import os\nimport torch\nflag = '1'\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = flag\nx = 1\n",
    # shares its line with another statement
    "import os\nimport torch\nos.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'; x = 1\n",
])
def test_no_fix_where_moving_changes_meaning(source):
    [finding] = check(source, ["MPS505"])
    assert finding.fix is None


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_fix_keeps_the_files_line_endings(newline):
    source = newline.join(["import os", "import torch", "os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'", "x = 1", ""])
    fixed = fix_text(source, "a.py", settings(["MPS505"]), unsafe=True, newline=newline).text
    expected = ["import os", "os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1'", "import torch", "x = 1", ""]
    assert fixed == newline.join(expected)
