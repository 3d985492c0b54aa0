"""Device memory per step (issue 27 item 4): the growth rule, the sampler on the step clocks, and the real-path child
driven on this CPU build with a stand-in for the Mac's memory counters."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mpslint.verify import launcher, memory, report

MiB = 1 << 20


def samples(values, driver=None):
    driver = driver or values
    return [{"step": i + 1, "current_bytes": c, "driver_bytes": d} for i, (c, d) in enumerate(zip(values, driver))]


def test_a_steady_rise_after_warm_up_is_growth_with_its_rate():
    found = memory.growth(samples([100 * MiB + 2 * MiB * i for i in range(30)]))
    assert found["judged"] and found["growing"] == ["current", "driver"]
    assert found["per_step_bytes"]["current"] == 2 * MiB
    assert (found["from_step"], found["to_step"]) == (15, 30)  # the last 16 samples


@pytest.mark.parametrize("shape", ["warm-up", "one jump", "sawtooth", "noise", "flat"])
def test_what_is_not_growth(shape):
    if shape == "warm-up":  # gradients, Adam's state and the first heaps arrive in the first steps
        values = [50 * MiB * min(i, 5) for i in range(30)]
    elif shape == "one jump":  # an evaluation's buffers kept from step 20 on
        values = [100 * MiB + (40 * MiB if i >= 20 else 0) for i in range(30)]
    elif shape == "sawtooth":  # gradient accumulation over 4 batches, freed at each optimizer step
        values = [100 * MiB + (i % 4) * 10 * MiB for i in range(30)]
    elif shape == "noise":  # a few KiB up and down, under the floor
        values = [100 * MiB + (i * 7919 % 13) * 4096 for i in range(30)]
    else:
        values = [100 * MiB] * 30
    assert memory.growth(samples(values))["growing"] == []


def test_slow_growth_under_the_floor_is_not_reported_but_a_leak_in_heaps_only_is():
    assert memory.growth(samples([100 * MiB + 1024 * i for i in range(30)]))["growing"] == []
    # Tensors steady, while Metal's heaps grow by 4 MiB every step (fragmentation that never settles).
    found = memory.growth(samples([100 * MiB] * 30, driver=[200 * MiB + 4 * MiB * i for i in range(30)]))
    assert found["growing"] == ["driver"]


def test_too_few_steps_are_not_judged():
    found = memory.growth(samples([MiB * 10 * i for i in range(12)]))
    assert not found["judged"] and found["growing"] == []
    assert "needs 13" in found["reason"]


def test_the_sampler_keeps_a_series_per_clock_bounded_and_survives_a_failing_counter():
    pytest.importorskip("torch")
    from mpslint.verify import probe

    reads = iter(range(10_000))
    recorder = probe.Recorder(__file__)
    recorder.memory = memory.Sampler(lambda: (next(reads), 7))
    for _ in range(memory.HEAD + memory.TAIL + 50):
        recorder.tick("optimizer")
    recorder.tick("batches")
    found = recorder.memory.as_json()
    optimizer = found["clocks"]["optimizer"]
    assert optimizer["count"] == memory.HEAD + memory.TAIL + 50
    steps = [s["step"] for s in optimizer["samples"]]
    assert steps[:3] == [1, 2, 3] and steps[-1] == memory.HEAD + memory.TAIL + 50
    assert len(steps) == memory.HEAD + memory.TAIL and steps[memory.HEAD] == memory.HEAD + 51  # the middle left out
    assert found["clocks"]["batches"]["samples"] == [{"step": 1, "driver_bytes": optimizer["count"],
                                                      "current_bytes": 7}]

    def broken():
        raise RuntimeError("no MPS allocator")

    sampler = memory.Sampler(broken)
    sampler.sample("optimizer", 1)
    sampler.sample("optimizer", 2)
    assert sampler.as_json() == {"measured": True, "error": "RuntimeError: no MPS allocator", "clocks": {}}


# -- the real-path child, end to end ----------------------------------------------------------------------------

# This CPU build stands for a Mac: MPS reported available, and the allocator's counters replaced by what the script
# holds (tensors, lists of them, modules' parameters, optimizer state, in its globals), in 8 MiB heaps that are never
# given back, as Metal's are.
STAND_IN = textwrap.dedent("""
    import sys
    import torch

    torch.backends.mps.is_available = lambda: True
    HEAP = 8 << 20
    held = [0]

    def tensors(value):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from tensors(item)
        elif isinstance(value, torch.nn.Module):
            yield from value.parameters()
        elif isinstance(value, torch.optim.Optimizer):
            for state in value.state.values():
                yield from tensors(list(state.values()))

    def current():
        script = vars(sys.modules["__main__"])  # the script's globals while runpy runs it
        return sum(t.untyped_storage().nbytes() for value in list(script.values()) for t in tensors(value))

    def driver():
        held[0] = max(held[0], -(-current() // HEAP) * HEAP)
        return held[0]

    torch.mps.current_allocated_memory = current
    torch.mps.driver_allocated_memory = driver
    from mpslint.verify import child
    sys.exit(child.main(sys.argv[1:]))
""")

LOOP = """
import torch
model = torch.nn.Linear(64, 64)
optimizer = torch.optim.Adam(model.parameters())
kept = []
for step in range(1, 31):
    optimizer.zero_grad()
    loss = model(torch.randn(32, 64)).pow(2).mean()
    loss.backward()
    optimizer.step()
    {extra}
"""


def run_real_path(tmp_path, extra):
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(LOOP.format(extra=extra))
    stand_in = tmp_path / "stand_in.py"
    stand_in.write_text(STAND_IN)
    out = tmp_path / "report.json"
    options = json.dumps({"simulate": False, "max_steps": None, "max_ops": None, "fallback_source": "test"})
    done = subprocess.run([sys.executable, str(stand_in), str(out), options, str(script)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    raw = json.loads(out.read_text())
    verdict = report.build(launcher.Options(str(script)), launcher.Run(raw, 0, False, 1.0))
    return raw, verdict


@pytest.mark.parametrize("extra, growing", [
    ("kept.append(torch.randn(256, 1024))  # 1 MiB kept from every step", ["current", "driver"]),
    ("cache = torch.randn(1024, 1024) if step == 20 else None  # one allocation, then freed", []),
    ("kept.append(torch.randn(256, 1024)) if step <= 5 else None  # warm-up only", []),
])
def test_the_real_path_samples_memory_at_each_step_and_flags_only_growth(tmp_path, extra, growing):
    raw, verdict = run_real_path(tmp_path, extra)
    found = verdict.report["memory"]
    assert found["measured"] and found["clock"] == "optimizer" and found["steps_sampled"] == 30
    assert [s["step"] for s in found["samples"]] == list(range(1, 31))
    assert found["growth"]["judged"] and found["growth"]["growing"] == growing
    text = report.render_text(verdict)
    assert "memory per step (optimizer steps): Metal driver" in text
    assert ("warning: memory grows every step: current_allocated_memory (live tensors) rose over steps 15-30, "
            "about 1.0 MiB a step" in text) == bool(growing)
    assert json.loads(report.render_json(verdict))["memory"]["growth"]["growing"] == growing


def test_simulate_says_memory_is_not_measured(tmp_path):
    torch = pytest.importorskip("torch")
    if not hasattr(torch.utils, "swap_tensors"):
        pytest.skip("--simulate needs torch 2.3")
    script = tmp_path / "train.py"
    script.write_text(LOOP.format(extra="pass").replace("torch.nn.Linear(64, 64)", "torch.nn.Linear(64, 64).to('mps')")
                      .replace("torch.randn(32, 64)", "torch.randn(32, 64, device='mps')"))
    options = launcher.Options(str(script), simulate=True)
    verdict = report.build(options, launcher.launch(options, capture=True))
    assert verdict.report["verdict"] == "pass"
    assert verdict.report["memory"] == {"measured": False, "reason": memory.SIMULATED}
    assert f"memory: not measured: {memory.SIMULATED}" in report.render_text(verdict)
