"""Device memory per step on a Mac, and whether it keeps growing across steps.

At each tick of a step clock (``report.CLOCKS``: optimizer steps, DataLoader
batches, top-level model calls) the sampler reads two counters of PyTorch's
MPS allocator: ``torch.mps.driver_allocated_memory()`` (what Metal holds for
the process: the caching allocator's heaps, freed blocks included) and
``torch.mps.current_allocated_memory()`` (what live tensors hold). Both are
host-side counters: reading them waits for nothing on the GPU, so sampling adds
no sync to the step. The report reads the series of the clock that defines a
step (``report.step_clock``).

Under ``--simulate`` nothing is sampled: the emulated device's tensors live in
CPU memory, and its ``torch.mps`` counters say 0, so any figure would be made up.

The growth rule is ``GROWTH_RULE`` (the report prints it); ``growth`` applies it.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

# The first steps allocate what a loop keeps: weights' gradients, the optimizer's state (Adam's at its first
# step), the allocator's first heaps. Growth there is warm-up, not a leak.
WARMUP_STEPS = 5
WINDOW = 16  # the last samples after warm-up that are judged
MIN_JUDGED = 8  # fewer samples after warm-up: too few steps to judge
FLOOR_BYTES = 1 << 20  # growth below 1 MiB over the window is noise
RELATIVE = 0.001  # ... and below 0.1% of what was held at the window's start
HEAD, TAIL = 64, 256  # samples kept per clock: the first HEAD and the last TAIL steps

GROWTH_RULE = (
    f"memory grows when, after the first {WARMUP_STEPS} steps (warm-up: gradients, optimizer state, the "
    f"allocator's first heaps), the last {WINDOW} samples (at least {MIN_JUDGED}) split into four equal parts "
    "have medians that rise from each part to the next, by at least "
    f"{FLOOR_BYTES >> 20} MiB and {RELATIVE:.1%} in all; judged for current_allocated_memory (live tensors) "
    "and driver_allocated_memory (Metal's heaps) apart. A single jump (an evaluation, one more heap) or a sawtooth "
    "is not growth"
)

ADVICE = ("something kept from every step holds device memory: a loss kept with its graph (total += loss; keep "
          "loss.detach()), outputs appended to a list, a cache that is never cleared; a loop whose batches grow "
          "(sorted by length) grows too")

SIMULATED = "simulated mps: the emulated device's tensors live in CPU memory, and its torch.mps memory counters say 0"

Source = Callable[[], Tuple[int, int]]


def mps_source(torch: Any) -> Source:
    """(driver_allocated_memory, current_allocated_memory) of the running torch, read when called."""

    def read() -> Tuple[int, int]:
        return int(torch.mps.driver_allocated_memory()), int(torch.mps.current_allocated_memory())

    return read


class _Series:
    def __init__(self) -> None:
        self.head: List[Dict[str, int]] = []
        self.tail: Deque[Dict[str, int]] = deque(maxlen=TAIL)
        self.count = 0
        self.peak_driver = 0
        self.peak_current = 0

    def add(self, step: int, driver: int, current: int) -> None:
        sample = {"step": step, "driver_bytes": driver, "current_bytes": current}
        self.count += 1
        (self.head if len(self.head) < HEAD else self.tail).append(sample)
        self.peak_driver = max(self.peak_driver, driver)
        self.peak_current = max(self.peak_current, current)

    def samples(self) -> List[Dict[str, int]]:
        return self.head + list(self.tail)


class Sampler:
    """One series per step clock, fed by ``Recorder.tick``."""

    def __init__(self, source: Source) -> None:
        self.source: Optional[Source] = source
        self.series: Dict[str, _Series] = {}
        self.error: Optional[str] = None

    def sample(self, clock: str, step: int) -> None:
        if self.source is None:
            return
        try:
            driver, current = self.source()
        except Exception as exc:  # noqa: BLE001 - a torch without the counters: said once, the run goes on
            self.error = f"{type(exc).__name__}: {exc}"
            self.source = None
            return
        self.series.setdefault(clock, _Series()).add(step, driver, current)

    def as_json(self) -> Dict[str, Any]:
        return {"measured": True, "error": self.error,
                "clocks": {clock: {"samples": series.samples(), "count": series.count,
                                   "peak_driver_bytes": series.peak_driver,
                                   "peak_current_bytes": series.peak_current}
                           for clock, series in self.series.items()}}


def _median(values: Sequence[int]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def growth(samples: Sequence[Dict[str, int]]) -> Dict[str, Any]:
    """GROWTH_RULE applied to one clock's samples (in step order)."""
    after = [s for s in samples if s["step"] > WARMUP_STEPS]
    judged = after[-WINDOW:]
    if len(judged) < MIN_JUDGED:
        return {"judged": False, "growing": [],
                "reason": f"{len(samples)} steps sampled; judging growth needs {WARMUP_STEPS + MIN_JUDGED} "
                          f"(the first {WARMUP_STEPS} are warm-up)"}
    quarter = len(judged) // 4
    judged = judged[len(judged) - 4 * quarter:]
    result: Dict[str, Any] = {"judged": True, "growing": [], "from_step": judged[0]["step"],
                              "to_step": judged[-1]["step"], "per_step_bytes": {}}
    steps = judged[-1]["step"] - judged[0]["step"]
    for counter in ("current", "driver"):
        values = [s[f"{counter}_bytes"] for s in judged]
        medians = [_median(values[i * quarter:(i + 1) * quarter]) for i in range(4)]
        rise = medians[-1] - medians[0]
        rising = all(later > earlier for earlier, later in zip(medians, medians[1:]))
        if rising and rise >= max(FLOOR_BYTES, RELATIVE * medians[0]):
            result["growing"].append(counter)
            result["per_step_bytes"][counter] = round((values[-1] - values[0]) / steps) if steps else 0
    return result


def size_text(count: int) -> str:
    """Bytes as the reports print them: 512 B, 3.2 MiB, 1.25 GiB."""
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.2f} GiB"


COUNTER_NAMES = {"current": "current_allocated_memory (live tensors)",
                 "driver": "driver_allocated_memory (Metal's heaps)"}


def growth_lines(found: Dict[str, Any], clock_name: str = "") -> List[str]:
    """What a verify report's ``memory`` says, one line each: the series' first and last step, then each counter
    that grows (no advice: the callers add theirs). ``clock_name`` says what a step is, where the caller knows."""
    if not found.get("measured"):
        return [f"memory: not measured: {found.get('reason')}"]
    samples = found.get("samples") or []
    if not samples:
        return []
    first, last = samples[0], samples[-1]
    per_step = f"memory per step ({clock_name})" if clock_name else "memory per step"
    lines = [f"{per_step}: Metal driver {size_text(first['driver_bytes'])} at step {first['step']}, "
             f"{size_text(last['driver_bytes'])} at step {last['step']} (peak "
             f"{size_text(found['peak_driver_bytes'])}); tensors {size_text(first['current_bytes'])}, "
             f"{size_text(last['current_bytes'])} (peak {size_text(found['peak_current_bytes'])})"]
    growth = found.get("growth") or {}
    for counter in growth.get("growing", []):
        lines.append(f"memory grows every step: {COUNTER_NAMES[counter]} rose over steps {growth['from_step']}-"
                     f"{growth['to_step']}, about {size_text(growth['per_step_bytes'][counter])} a step")
    return lines


def not_measured(reason: str) -> Dict[str, Any]:
    return {"measured": False, "reason": reason}
