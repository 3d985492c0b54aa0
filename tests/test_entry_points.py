"""The fix run says, per entry point, whether it can reach MPS now or what still blocks it (issue 25 item 6)."""

from __future__ import annotations

import pytest
from clitools import enter, run

from mpslint.entry_points import is_script
from mpslint.output.entry_points import entry_point_lines, is_entry_point

TRAIN = """\
import torch

model = torch.nn.Linear(2, 2).cuda()

if __name__ == "__main__":
    print(model(torch.ones(1, 2).cuda()))
"""

DISTRIBUTED = """\
import torch
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    model = DDP(torch.nn.Linear(2, 2).cuda())
    print(model)


if __name__ == "__main__":
    main()
"""

LIBRARY = "import torch\n\n\ndef move(x):\n    return x.cuda()\n"
LAUNCHER = "from train import model\n\nif __name__ == '__main__':\n    print(model)\n"


def test_a_fix_run_names_each_entry_point(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    for name, text in {"train.py": TRAIN, "dist.py": DISTRIBUTED, "lib.py": LIBRARY, "launch.py": LAUNCHER}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = run("--fix", "--no-cache", ".")
    tail = result.output[result.output.index("Entry points:"):].splitlines()
    assert tail[0].startswith("Entry points: 2 of 3 can reach MPS")
    assert tail[1].startswith("  dist.py: blocked by MPS108 (line 16: DistributedDataParallel/FSDP of a model")
    assert tail[2] == "  launch.py: can reach MPS (its device is chosen in train.py)"
    assert tail[3] == "  train.py: can reach MPS"
    assert "lib.py" not in result.output[result.output.index("Entry points:"):]  # not an entry point


def test_diff_says_what_fix_would_give(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    result = run("--diff", "--no-cache", "train.py")
    assert "Entry points: 1 of 1 can reach MPS after --fix" in result.stderr  # stdout holds the diff only
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == TRAIN


def test_a_check_run_and_a_quiet_run_say_nothing_of_entry_points(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    assert "Entry points" not in run("--no-cache", "train.py").output
    assert "Entry points" not in run("--fix", "--quiet", "--no-cache", "train.py").output


def test_what_is_an_entry_point():
    assert is_entry_point("a.ipynb", "{}")
    assert is_entry_point("a.py", "x = 1\nif __name__ == '__main__':\n    main()\n")
    assert not is_entry_point("a.py", "def main():\n    if __name__ == '__main__':\n        pass\n")  # not top level
    assert not is_entry_point("a.py", "print('__main__')\n")
    assert entry_point_lines([("lib.py", LIBRARY, [])]) == []


# --- across the project's imports ---------------------------------------------------------------

DEVICE_MODULE = """\
import torch


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


DEVICE = pick_device()
"""
USES_DEVICE = "import torch\nfrom common.device import DEVICE\n\nif __name__ == '__main__':\n    print(torch.ones(1).to(DEVICE))\n"
NO_DEVICE_SCRIPT = "import torch\nimport helpers\n\nif __name__ == '__main__':\n    print(helpers.double(torch.ones(1)))\n"
HELPERS = "def double(x):\n    return x * 2\n"
STREAMS = "import torch\n\n\ndef side_stream():\n    return torch.cuda.Stream()\n"


def _lines(tmp_path, files, *args):
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    from mpslint.output.entry_points import entry_point_lines
    from mpslint.engine import check_text
    from mpslint.config import Settings

    results = []
    for name in args or files:
        text = (tmp_path / name).read_text(encoding="utf-8")
        results.append((name, text, check_text(text, name, Settings()).diagnostics))
    return entry_point_lines(results)


def test_the_device_chosen_in_an_imported_package_module_reaches_mps(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    lines = _lines(tmp_path, {"common/__init__.py": "", "common/device.py": DEVICE_MODULE, "train.py": USES_DEVICE})
    assert lines[0].startswith("Entry points: 1 of 1 can reach MPS")
    assert lines[1] == "  train.py: can reach MPS (its device is chosen in common/device.py)"


def test_a_module_the_run_did_not_check_still_tells_the_device(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    # only train.py is in the run: common/device.py is read for its device choice, not checked
    lines = _lines(tmp_path, {"common/__init__.py": "", "common/device.py": DEVICE_MODULE, "train.py": USES_DEVICE},
                   "train.py")
    assert lines[1] == "  train.py: can reach MPS (its device is chosen in common/device.py)"


def test_a_blocker_in_a_module_imported_through_another_names_the_module_and_both_lines(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    files = {
        "pkg/__init__.py": "",
        "pkg/streams.py": STREAMS,
        "pkg/model.py": "import torch\n\nfrom pkg.streams import side_stream\n",
        "run.py": "import sys\n\nfrom pkg import model\n\nif __name__ == '__main__':\n    print(model.torch.mps)\n",
    }
    lines = _lines(tmp_path, files)
    assert lines[0].startswith("Entry points: 0 of 1 can reach MPS")
    assert lines[1].startswith("  run.py: blocked by MPS108 (pkg/streams.py line 5: ")
    assert lines[1].endswith(", imported at line 3)")


def test_an_unrelated_module_and_an_import_cycle_change_nothing(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    files = {
        "streams.py": STREAMS,  # blocked, but nobody imports it
        "helpers.py": "import script\n\n" + HELPERS,  # imports the entry point back: a cycle
        "script.py": NO_DEVICE_SCRIPT,
    }
    lines = _lines(tmp_path, files)
    assert lines == ["Entry points: 0 of 1 can reach MPS (static; `mpslint verify --simulate` runs one).",
                     "  script.py: no blocker left; neither it nor a module it imports chooses a device"]


def test_a_module_outside_the_project_is_not_followed(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    (tmp_path / "app").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "helpers.py").write_text(DEVICE_MODULE, encoding="utf-8")
    lines = _lines(tmp_path, {"app/script.py": NO_DEVICE_SCRIPT})
    assert lines[1] == "  app/script.py: no blocker left; neither it nor a module it imports chooses a device"


def test_a_module_that_only_follows_its_tensors_devices_chooses_none_for_its_importers(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    loss = "import torch\n\n\ndef loss(z):\n    return torch.zeros(len(z)).to(z.device).sum()\n"
    lines = _lines(tmp_path, {"losses.py": loss, "script.py": NO_DEVICE_SCRIPT.replace("helpers", "losses")})
    assert lines[1] == "  script.py: no blocker left; neither it nor a module it imports chooses a device"
    # in the entry point itself, following its tensors' devices is where it runs
    lines = _lines(tmp_path, {"own.py": "import torch\n\nif __name__ == '__main__':\n    x = torch.ones(1)\n"
                                        "    print(torch.zeros(1).to(x.device))\n"}, "own.py")
    assert lines[1] == "  own.py: can reach MPS"


def test_importing_a_module_that_mentions_mps_but_gives_no_device_is_no_device(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    cache = ("import torch\n\n\ndef empty_cache(device):\n    if device.type == 'cuda':\n        torch.cuda.empty_cache()\n"
             "    elif device.type == 'mps':\n        torch.mps.empty_cache()\n")
    script = "from helpers import empty_cache\n\nif __name__ == '__main__':\n    print(empty_cache)\n"
    lines = _lines(tmp_path, {"helpers.py": cache, "script.py": script})
    assert lines[1] == "  script.py: no blocker left; neither it nor a module it imports chooses a device"


def test_a_device_function_reached_through_a_module_alias_and_a_re_export(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    files = {
        "util/__init__.py": "from util.hw import get_device\n",
        "util/hw.py": DEVICE_MODULE + "\n\ndef get_device():\n    return pick_device()\n",
        "main.py": "import util\n\nif __name__ == '__main__':\n    print(util.get_device())\n",
    }
    lines = _lines(tmp_path, files, "main.py")
    assert lines[1] == "  main.py: can reach MPS (its device is chosen in util/hw.py)"


def test_a_notebook_is_blocked_by_a_module_its_cells_import(tmp_path, monkeypatch):
    import json

    enter(tmp_path, monkeypatch)
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# notes\n"]},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": ["%matplotlib inline\n", "import torch\n", "from streams import side_stream\n"]},
    ]
    notebook = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "explore.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (tmp_path / "streams.py").write_text(STREAMS, encoding="utf-8")
    from mpslint.config import Settings
    from mpslint.engine import check_text
    from mpslint.output.entry_points import entry_point_lines

    lines = entry_point_lines([("streams.py", STREAMS, check_text(STREAMS, "streams.py", Settings()).diagnostics),
                               ("explore.ipynb", None, [])])
    assert lines[1].startswith("  explore.ipynb: blocked by MPS108 (streams.py line 5: ")
    assert lines[1].endswith(", imported at cell 2 line 3)")


# --- which files are entry points, and what the run's packages bring (the migration benchmark's cases) -------

SELF_TEST = "import torch\n\n\ndef net():\n    return torch.nn.Linear(2, 2)\n\n\nif __name__ == '__main__':\n    print(net())\n"
SCRIPT = ("import torch\n\nfrom models.net import net\nfrom helpers import pick_device\n\nmodel = net().to(pick_device())\n"
          "for step in range(2):\n    model(torch.ones(1, 2, device=pick_device()))\n")


def test_a_package_module_with_a_self_test_that_the_run_imports_is_no_entry_point(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    files = {"models/__init__.py": "", "models/net.py": SELF_TEST, "models/zoo.py": SELF_TEST,
             "models/all.py": "from models import zoo\nfrom .net import net\nfrom .train import *\nfrom .tool import *\n",
             # imported by the package too, but programs: named like one, or reading the command line
             "models/train.py": "def run():\n    pass\n\n\nif __name__ == '__main__':\n    run()\n",
             "models/tool.py": "import sys\n\n\ndef go(a):\n    pass\n\n\nif __name__ == '__main__':\n    go(sys.argv)\n",
             "models/solo.py": SELF_TEST,  # a self-test nobody in the run imports: still an entry point
             "helpers.py": DEVICE_MODULE, "train.py": SCRIPT}
    lines = _lines(tmp_path, files)
    assert lines == [
        "Entry points: 1 of 4 can reach MPS (static; `mpslint verify --simulate` runs one).",
        "  models/solo.py: no blocker left; neither it nor a module it imports chooses a device",
        "  models/tool.py: no blocker left; neither it nor a module it imports chooses a device",
        "  models/train.py: no blocker left; neither it nor a module it imports chooses a device",
        "  train.py: can reach MPS"]  # a script with no __main__ block: its loop runs when it runs


@pytest.mark.parametrize("text", [
    "import sys\nimport warnings\n\nsys.path.insert(0, '.')\nwarnings.filterwarnings('ignore')\n\n\ndef f():\n    pass\n",
    "import torch\n\ntorch.manual_seed(0)\nDEVICE = torch.device('cpu')\n",
    "x = [i for i in range(3)]\n",
])
def test_set_up_at_the_top_level_does_not_make_a_script(text):
    assert not is_script("lib.py", text)


def test_a_script_imported_by_another_file_of_the_run_is_no_entry_point(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    files = {"helpers.py": DEVICE_MODULE, "setup_model.py": "from helpers import DEVICE\nprint(DEVICE)\n",
             "train.py": "import setup_model\n\nif __name__ == '__main__':\n    print(setup_model.DEVICE)\n"}
    assert [line.split(":")[0] for line in _lines(tmp_path, files)[1:]] == ["  train.py"]


def test_a_script_inside_its_package_is_an_entry_point(tmp_path, monkeypatch):
    # pygcn/train.py: `python pygcn/train.py` runs its top level, and no module of the package imports it
    enter(tmp_path, monkeypatch)
    files = {"gcn/__init__.py": "from .layers import layer\n", "gcn/layers.py": "def layer(x):\n    return x\n",
             "gcn/train.py": "import torch\n\nfrom gcn.layers import layer\n\nfor _ in range(2):\n"
                             "    print(layer(torch.ones(1).cuda()))\n"}
    lines = _lines(tmp_path, files)
    assert lines[0].startswith("Entry points: 0 of 1") and lines[1].startswith("  gcn/train.py: blocked by MPS101")


def test_an_example_reaches_the_blockers_of_the_package_the_run_checks(tmp_path, monkeypatch):
    # examples/demo.py imports `solver`, a package of the project (found from the repository root once installed,
    # not from examples/): its blockers are the example's blockers
    enter(tmp_path, monkeypatch)
    files = {"solver/__init__.py": "from .core import side_stream\n", "solver/core.py": STREAMS,
             "examples/demo.py": "import torch\nfrom solver import side_stream\n\nif __name__ == '__main__':\n"
                                 "    print(side_stream(), torch.backends.mps.is_available())\n"}
    lines = _lines(tmp_path, files)
    assert lines[0].startswith("Entry points: 0 of 1 can reach MPS")
    assert lines[1].startswith("  examples/demo.py: blocked by MPS108 (solver/core.py line 5: ")


def test_data_parallel_does_not_block_a_model_placed_on_the_device(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    text = ("import torch\n\nfrom helpers import pick_device\n\nmodel = torch.nn.DataParallel(torch.nn.Linear(2, 2))\n"
            "model.to(pick_device())\n\nif __name__ == '__main__':\n    print(model(torch.ones(1, 2, device=pick_device())))\n")
    lines = _lines(tmp_path, {"helpers.py": DEVICE_MODULE, "train.py": text})
    assert lines[1] == "  train.py: can reach MPS"


def test_a_class_of_a_module_that_picks_its_device_when_imported_brings_that_device(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    agent = DEVICE_MODULE + "\n\nclass Agent:\n    def act(self, x):\n        return x.to(DEVICE)\n"
    files = {"agent.py": agent, "run.py": "import torch\nimport agent\n\npolicy = agent.Agent()\nfor _ in range(2):\n"
                                          "    policy.act(torch.ones(1))\n"}
    assert _lines(tmp_path, files)[1] == "  run.py: can reach MPS (its device is chosen in agent.py)"
    # a constant of such a module is no device of the script's
    files = {"agent.py": agent + "\nSIZE = 3\n",
             "run.py": "import torch\nfrom agent import SIZE\n\nfor _ in range(SIZE):\n    print(torch.ones(1))\n"}
    assert _lines(tmp_path, files)[1].startswith("  run.py: no blocker left")


def test_a_cuda_call_that_returns_quietly_without_cuda_does_not_block(tmp_path, monkeypatch):
    enter(tmp_path, monkeypatch)
    quiet = ("import torch\n\nfrom helpers import pick_device\n\ntorch.cuda.manual_seed(0)\ntorch.cuda.empty_cache()\n"
             "model = torch.nn.Linear(2, 2).to(pick_device())\n\nif __name__ == '__main__':\n    print(model)\n")
    # Trap: `torch.cuda.synchronize()` raises without CUDA ("Torch not compiled with CUDA enabled").
    raising = quiet.replace("torch.cuda.empty_cache()", "torch.cuda.synchronize()")
    lines = _lines(tmp_path, {"helpers.py": DEVICE_MODULE, "quiet.py": quiet, "raising.py": raising})
    assert "  quiet.py: can reach MPS" in lines
    assert any(line.startswith("  raising.py: blocked by MPS104") for line in lines), lines
