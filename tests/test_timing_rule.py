"""MPS205: wall-clock intervals around device work that never wait for the device."""

from __future__ import annotations

import textwrap

import pytest

from helpers import check, fix, rows

HEAD = """\
import time

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
x = torch.randn(64, 128, device=device)
"""
FIRST = HEAD.count("\n") + 1  # the row of the first line a case adds


def script(body: str) -> str:
    return HEAD + textwrap.dedent(body)


@pytest.mark.parametrize("body,row", [
    # a placed model's forward
    ("start = time.time()\ny = model(x)\nprint(time.time() - start)\n", 2),
    # an operator, a torch function, a compute method on a device tensor
    ("t0 = time.perf_counter()\ny = x @ x\nelapsed = time.perf_counter() - t0\n", 2),
    ("t0 = time.perf_counter()\ny = torch.mm(x, x.T)\nelapsed = time.perf_counter() - t0\n", 2),
    ("t0 = time.perf_counter()\ny = x.softmax(-1)\nelapsed = time.perf_counter() - t0\n", 2),
    # the closing read assigned to a name: reported where the clock is read
    ("t0 = time.monotonic()\ny = model(x)\nt1 = time.monotonic()\nprint(t1 - t0)\n", 2),
    ("t0 = time.perf_counter_ns()\ny = model(x)\nns = time.perf_counter_ns() - t0\n", 2),
    # work in a loop, read after it
    ("start = time.time()\nfor _ in range(100):\n    y = model(x)\nprint(time.time() - start)\n", 3),
    # a loss module and backward
    ("crit = torch.nn.CrossEntropyLoss()\nt0 = time.time()\nloss = crit(model(x), y)\nloss.backward()\n"
     "dt = time.time() - t0\n", 4),
])
def test_intervals_around_device_work_are_reported(body, row):
    assert rows(script(body), "MPS205") == [FIRST + row]


@pytest.mark.parametrize("imports,clock", [
    ("from timeit import default_timer as timer", "timer()"),
    ("from time import perf_counter", "perf_counter()"),
    ("import time as t", "t.time()"),
])
def test_clock_spellings(imports, clock):
    source = f"{imports}\nimport torch\nx = torch.ones(8, device='mps')\nstart = {clock}\ny = x @ x\nprint({clock} - start)\n"
    assert rows(source, "MPS205") == [6]


def test_attribute_timers_in_one_method_and_local_helpers():
    source = script("""\
        def work(inputs):
            return model(inputs)


        class Bench:
            def run(self):
                self.t0 = time.time()
                work(x)
                self.elapsed = time.time() - self.t0
        """)
    assert rows(source, "MPS205") == [FIRST + 8]


@pytest.mark.parametrize("sync", [
    "torch.cuda.synchronize()",
    "torch.mps.synchronize()",
    "torch.accelerator.synchronize()",
    "torch.cuda.current_stream().synchronize()",
    "end_event.synchronize()",
    "print(y.sum().item())",
    "values = y.cpu()",
    "rows = y.tolist()",
    "print(y)",
    "msg = f'{y.sum()}'",
    "msg = '%.3f' % y.mean()",
    "text = tokenizer.decode(y)",  # code outside the file may read it
    "wait()",  # a helper of this file that synchronizes
])
def test_a_wait_before_the_read_silences_it(sync):
    source = script(f"""\
        def wait():
            torch.mps.synchronize()


        start = time.perf_counter()
        y = model(x)
        {sync}
        print(time.perf_counter() - start)
        """)
    assert rows(source, "MPS205") == []


def test_a_wait_anywhere_in_the_loop_makes_the_intervals_add_up():
    # The step left queued when `batch_time` is read is waited for by the next `loss.item()`.
    source = script("""\
        def train(loader, optimizer):
            end = time.time()
            for inputs, target in loader:
                output = model(inputs.to(device))
                loss = torch.nn.functional.cross_entropy(output, target.to(device))
                losses.append(loss.item())
                loss.backward()
                optimizer.step()
                batch_time = time.time() - end
                end = time.time()
        """)
    assert rows(source, "MPS205") == []


@pytest.mark.parametrize("body", [
    # a time budget, not a measurement
    "start = time.time()\nwhile time.time() - start < 10:\n    model(x)\n",
    "start = time.time()\ny = model(x)\nif time.time() - start > 5:\n    print('slow')\n",
    # no device work: numpy, host tensors, uploads
    "import numpy as np\nstart = time.time()\na = np.ones((64, 64)) @ np.ones((64, 64))\nprint(time.time() - start)\n",
    "start = time.time()\nh = torch.ones(64, 64) @ torch.ones(64, 64)\nprint(time.time() - start)\n",
    "start = time.time()\nbatch = data.to(device)\nprint(time.time() - start)\n",
    # the two reads in different functions: a timer object
    "class Timer:\n    def __enter__(self):\n        self.start = time.time()\n"
    "    def __exit__(self, *exc):\n        self.elapsed = time.time() - self.start\n",
    # a start passed in, a start that is not a clock read
    "def report(start):\n    y = model(x)\n    return time.time() - start\n",
    "start = time.time()\nstart = 0\ny = model(x)\nprint(time.time() - start)\n",
    # events, no wall clock
    "s = torch.mps.Event(enable_timing=True)\ne = torch.mps.Event(enable_timing=True)\ns.record()\ny = model(x)\n"
    "e.record()\ne.synchronize()\nprint(s.elapsed_time(e))\n",
    # the read comes before the work
    "start = time.time()\nprint(time.time() - start)\ny = model(x)\n",
])
def test_traps(body):
    assert rows(script(body), "MPS205") == []


def test_a_synchronize_that_runs_only_on_cuda_does_not_count():
    source = script("""\
        def cuda_sync():
            if device.type == "cuda":
                torch.cuda.synchronize()


        def bench(fn):
            start = time.perf_counter()
            fn()
            cuda_sync()
            return time.perf_counter() - start
        """)
    [finding] = check(source, ["MPS205"])
    assert finding.location.row == FIRST + 9
    assert "runs on CUDA alone" in finding.message and f"line {FIRST + 8}" in finding.message
    guarded = script("""\
        start = time.perf_counter()
        y = model(x)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        elif torch.backends.mps.is_available():
            torch.mps.synchronize()
        print(time.perf_counter() - start)
        """)
    assert rows(guarded, "MPS205") == []


def test_message_names_the_last_work():
    [finding] = check(script("start = time.time()\ny = model(x)\nprint(time.time() - start)\n"), ["MPS205"])
    assert f"`model(x)` (line {FIRST + 1})" in finding.message
    assert "torch.mps.Event(enable_timing=True)" in finding.message


def test_fix_is_unsafe_and_synchronizes_before_the_read():
    source = script("""\
        def bench():
            start = time.time()
            y = model(x)
            return time.time() - start
        """)
    assert fix(source, ["MPS205"], torch_version="2.6").text == source
    fixed = fix(source, ["MPS205"], unsafe=True, torch_version="2.6").text
    assert fixed == script("""\
        def bench():
            start = time.time()
            y = model(x)
            if torch.accelerator.is_available():
                torch.accelerator.synchronize()
            return time.time() - start
        """)
    assert rows(fixed, "MPS205", torch_version="2.6") == []


@pytest.mark.parametrize("floor", ["2.4", None])  # with no floor declared, fixes assume torch 2.0
def test_fix_before_torch_2_6_checks_each_accelerator(floor):
    source = script("start = time.time()\ny = model(x)\nprint(time.time() - start)\n")
    fixed = fix(source, ["MPS205"], unsafe=True, torch_version=floor).text
    expected = script("""\
        start = time.time()
        y = model(x)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        elif torch.backends.mps.is_available():
            torch.mps.synchronize()
        print(time.time() - start)
        """)
    if floor is None:  # torch 2.0 assumed, whose `import torch` leaves torch.mps out (as MPS104's fix does)
        expected = expected.replace("import torch\n", "import torch\nimport torch.mps\n", 1)
    assert fixed == expected
    assert rows(fixed, "MPS205", torch_version=floor) == []


@pytest.mark.parametrize("floor", ["1.4", "1.13"])
def test_fix_where_torch_mps_is_missing_asks_for_it(floor):
    """Below 2.0 there is no torch.mps to import (and below 1.12 no torch.backends.mps): the branch asks first."""
    source = script("start = time.time()\ny = model(x)\nprint(time.time() - start)\n")
    fixed = fix(source, ["MPS205"], unsafe=True, torch_version=floor).text
    backends = 'hasattr(torch.backends, "mps") and ' if floor == "1.4" else ""
    assert f'elif {backends}torch.backends.mps.is_available() and hasattr(torch, "mps"):\n' in fixed
    assert "import torch.mps" not in fixed
    assert rows(fixed, "MPS112", torch_version=floor) == []


@pytest.mark.parametrize("body", [
    # every step of a training loop: a synchronize there is MPS203's finding
    "for inputs in loader:\n    t = time.time()\n    loss = model(inputs.to(device)).sum()\n    loss.backward()\n"
    "    optimizer.step()\n    step_time = time.time() - t\n",
    # the read shares its line with another statement
    "start = time.time()\ny = model(x)\nif verbose: print(time.time() - start)\n",
])
def test_reported_without_a_fix(body):
    [finding] = check(script(body), ["MPS205"])
    assert finding.fix is None
