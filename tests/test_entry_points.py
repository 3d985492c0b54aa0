"""The fix run says, per entry point, whether it can reach MPS now or what still blocks it (issue 25 item 6)."""

from __future__ import annotations

from clitools import enter, run

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
    assert tail[0].startswith("Entry points: 1 of 3 can reach MPS")
    assert tail[1].startswith("  dist.py: blocked by MPS108 (line 16: DistributedDataParallel/FSDP of a model")
    assert tail[2] == "  launch.py: no blocker left; it chooses no device itself"
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
