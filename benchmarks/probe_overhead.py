"""What the verifier's probe costs per op on the real-device path, against the same steps without it.

    python benchmarks/probe_overhead.py                          # this checkout's probe
    python benchmarks/probe_overhead.py --baseline-rev db3cda2   # and an older revision's, side by side

A small MLP trains on the CPU; the probe treats CPU tensors as "the device"
(``device="cpu"``), so every op takes the path it takes on a Mac: counted,
checked for host syncs and, with the kernel table, decided as native or CPU
fallback. Printed: seconds per step without the probe, with it, the ratio,
and the overhead per op (the difference divided by the ops of a step). The
runs alternate and the best of several is kept, so a busy machine inflates
nothing it does not inflate for both. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, List, Optional, Tuple

# The repository root instead of benchmarks/: mpslint importable without an install.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from mpslint.verify import probe  # noqa: E402
from mpslint.verify.kernels import KernelOracle  # noqa: E402


def make_step(width: int, batch: int) -> Callable[[], None]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                torch.nn.ReLU(), torch.nn.Linear(width, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, width), torch.randn(batch, 1)

    def step() -> None:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()

    return step


def timed(step: Callable[[], None], steps: int, context: Optional[Callable[[], Any]]) -> float:
    started = time.perf_counter()
    if context is None:
        for _ in range(steps):
            step()
    else:
        with context():
            for _ in range(steps):
                step()
    return (time.perf_counter() - started) / steps


def load_probe(rev: str) -> Any:
    """The probe module of an older revision (git show), importable next to this checkout's mpslint."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = subprocess.run(["git", "show", f"{rev}:mpslint/verify/probe.py"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    path = os.path.join(tempfile.mkdtemp(prefix="mpslint-probe-"), f"probe_{rev}.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    spec = importlib.util.spec_from_file_location(f"probe_{rev}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-rev", help="also measure the probe of this git revision")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    step = make_step(args.width, args.batch)
    oracle = KernelOracle()

    counter = probe.Recorder(__file__)
    with probe.ProbeMode(counter, oracle=oracle, device="cpu"):
        step()
    ops = counter.ops

    variants: List[Tuple[str, Optional[Callable[[], Any]]]] = [("no probe", None)]
    variants.append(("probe (this checkout)",
                     lambda: probe.ProbeMode(probe.Recorder(__file__), oracle=oracle, device="cpu")))
    if args.baseline_rev:
        old = load_probe(args.baseline_rev)
        variants.append((f"probe ({args.baseline_rev})", lambda: old.ProbeMode(old.Recorder(__file__))))
    for _, context in variants:  # warm up: caches, the kernel table, allocator
        timed(step, 20, context)
    best = {name: float("inf") for name, _ in variants}
    for _ in range(args.repeats):
        for name, context in variants:
            best[name] = min(best[name], timed(step, args.steps, context))
    plain = best["no probe"]
    print(f"torch {torch.__version__}, MLP {args.width}x{args.width}, batch {args.batch}, {ops} aten ops per step, "
          f"best of {args.repeats} x {args.steps} steps, one thread\n")
    print(f"{'':<24}{'ms/step':>10}{'ratio':>8}{'us/op':>8}")
    for name, _ in variants:
        seconds = best[name]
        print(f"{name:<24}{seconds * 1e3:>10.3f}{seconds / plain:>8.2f}{(seconds - plain) / ops * 1e6:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
