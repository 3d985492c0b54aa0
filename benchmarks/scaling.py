"""How the cost of checking one file grows with its size, for generated shapes of code.

    python benchmarks/scaling.py              # every shape, at its base size and 4x
    python benchmarks/scaling.py --huge       # also the 300,000-line module
    python benchmarks/scaling.py --shape elif_dispatch --factor 8
    python benchmarks/scaling.py --fix --shape module_calls   # time `--fix` (fixer.fix_text) instead

Each shape is generated at a base size and at four times that size, checked in
this process (``engine.check_text`` with fixes computed, as ``mpslint
--no-cache -j 1`` does), and the table prints the time of each and their ratio:
linear growth gives 4, quadratic 16. CPU time (``time.process_time``) is used,
so other load on the machine does not skew a ratio. Not a test: it prints a
table; docs/performance.md quotes it. With ``--fix`` the time is
``fixer.fix_text``'s (every pass, its checks and the choice among thousands of
fixes), as ``mpslint --fix --no-cache -j 1`` spends it on one file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mpslint.config import Settings  # noqa: E402
from mpslint.engine import check_text  # noqa: E402
from mpslint.fixer import fix_text  # noqa: E402

HEADER = "import torch\nimport torch.nn as nn\n\n"


def module_calls(n: int) -> str:
    """`x = torch.zeros(3)` repeated: module-level calls, each a CUDA rule's question."""
    return HEADER + "".join(f"x{i} = torch.zeros(3).cuda()\n" for i in range(n))


def rebound_device(n: int) -> str:
    """One device name rebound and used many times."""
    block = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\nx = x.to(device) + torch.ones(3)\n'
    return HEADER + "x = torch.zeros(3)\n" + block * n


def device_functions(n: int) -> str:
    """Many small functions, each choosing a device and placing a tensor."""
    return HEADER + "".join(
        f"def make_{i}():\n"
        f'    device = "cuda" if torch.cuda.is_available() else "cpu"\n'
        f"    return torch.zeros(3, device=device).double()\n\n"
        for i in range(n)
    )


def elif_dispatch(n: int) -> str:
    """A long if/elif dispatch on names, each branch placing a tensor."""
    lines = [HEADER, "def pick(name, x):\n"]
    for i in range(n):
        lines.append(f"    {'if' if i == 0 else 'elif'} name == \"k{i}\":\n        x = x.cuda()\n")
    lines.append("    return x\n")
    return "".join(lines)


def training_loop(n: int) -> str:
    """One training loop whose body grows: every statement is asked whether it runs per step."""
    body = "".join(f"        h{i} = model(x) + h{i - 1 if i else 0}.detach()\n        print(h{i}.item())\n" for i in range(n))
    return (HEADER + "model = nn.Linear(3, 3).to('cuda')\nopt = torch.optim.SGD(model.parameters(), 0.1)\n"
            "for epoch in range(3):\n    for x in loader:\n        x = x.to('cuda')\n" + body
            + "        loss = h0.sum()\n        loss.backward()\n        opt.step()\n")


def deep_nesting(n: int) -> str:
    """Statements nested as deep as Python allows, repeated: depth is bounded, so the count grows."""
    depth = 90  # Python refuses 100 levels of indentation
    block = "".join("    " * d + f"if a{d}:\n" for d in range(depth)) + "    " * depth + "y = x.cuda()\n"
    return HEADER + "".join(f"def f{i}(x):\n" + "".join("    " + line + "\n" for line in block.splitlines()) for i in range(n))


def long_expression(n: int) -> str:
    """One expression with many operands: `t = a0 + a1 + ...` on device tensors."""
    return HEADER + "x = torch.zeros(3).to('cuda')\nt = " + " + ".join(f"x * {i}" for i in range(n)) + "\nprint(t.cpu().numpy())\n"


def long_literal(n: int) -> str:
    """Big literals: a list of numbers and a dict of strings, as generated data files have."""
    numbers = ", ".join(str(i * 0.5) for i in range(n))
    table = ", ".join(f'"k{i}": "cuda:{i % 8}"' for i in range(n))
    return HEADER + f"DATA = [{numbers}]\nTABLE = {{{table}}}\nx = torch.tensor(DATA).cuda()\n"


def try_else(n: int) -> str:
    """``try``/``except``/``else`` blocks in one function, each handler between a body and an ``else``
    that read and rebind the same name (the shape that once made name resolution loop forever)."""
    block = ("    try:\n        first = next(items)\n    except StopIteration:\n        x = x.cpu()\n"
             "    else:\n        if first:\n            x = x.to('cuda') + x\n")
    return HEADER + "def gather(items, x):\n" + block * n + "    return x\n"


SHAPES: Dict[str, Tuple[Callable[[int], str], int]] = {
    "module_calls": (module_calls, 2_000),
    "rebound_device": (rebound_device, 1_000),
    "device_functions": (device_functions, 1_000),
    "elif_dispatch": (elif_dispatch, 500),  # 2,000 branches is near the depth Python's own parser accepts
    "training_loop": (training_loop, 500),
    "deep_nesting": (deep_nesting, 20),
    "long_expression": (long_expression, 500),
    "long_literal": (long_literal, 20_000),
    "try_else": (try_else, 500),
}


def measure(text: str, repeat: int = 1, fix: bool = False) -> float:
    settings = Settings()
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        if fix:
            outcome = fix_text(text, "generated.py", settings)
        else:
            result = check_text(text, "generated.py", settings)
        best = min(best, time.process_time() - start)
    if fix:
        assert outcome.error is None, outcome.error
        result = check_text(outcome.text, "generated.py", settings)  # what was written must check cleanly
    assert result.parsed, result.diagnostics[:1]
    crashed = [d for d in result.diagnostics if d.code == "MPS900"]
    assert not crashed, crashed[0].detail
    return best


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="only these shapes")
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--huge", action="store_true", help="also time a 300,000-line module")
    parser.add_argument("--fix", action="store_true", help="time fixing to a fixpoint, not checking")
    args = parser.parse_args(argv)
    print(f"| shape | lines | s | lines x{args.factor} | s | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in args.shape or SHAPES:
        make, size = SHAPES[name]
        small, large = make(size), make(size * args.factor)
        t_small, t_large = measure(small, repeat=3, fix=args.fix), measure(large, fix=args.fix)
        print(f"| {name} | {small.count(chr(10)):,} | {t_small:.2f} | {large.count(chr(10)):,} | {t_large:.2f} | "
              f"{t_large / t_small:.1f} |", flush=True)
    if args.huge:
        print()
        for line, what in (("x = torch.zeros(3)\n", "no finding"), ("x = torch.zeros(3).cuda()\n", "a finding and its fix per line")):
            text = HEADER + line * 300_000
            seconds = measure(text)
            print(f"300,000-line module ({len(text) / 1e6:.1f} MB, `{line.strip()}` per line, {what}): {seconds:.1f} s",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
