"""CUDA equivalence (issue 25): the originals and the `--fix`ed copies give identical outputs on a real CUDA GPU.

Two steps, because the GPU machine has no network and needs no mpslint:

1. here (where the migration benchmark ran): gather the cases into one folder

       python benchmarks/migrate/run.py --mirrors /work/.mirror      # makes the before/after exports
       python benchmarks/cuda_equivalence/run.py --prepare benchmarks/cuda_equivalence/.cases

   Each case is `<name>/original/` and `<name>/fixed/` holding the same files but the fixed ones, and the command
   that runs it: the migration benchmark's drivers (before/after exports), and every fixture of `fixtures/` with a
   golden fix (`x.py` / `x.fixed.py`, run as `python x.py`).

2. on the CUDA machine (the folder carried there):

       python benchmarks/cuda_equivalence/run.py --cases benchmarks/cuda_equivalence/.cases

   runs each original twice and the fixed copy once with the same seeds (PYTHONHASHSEED=0, deterministic cuBLAS)
   and compares what they print (stdout, with addresses and timings masked). A case is `identical`, `DIFFERS`
   (first differing line shown), `original not deterministic` (the two original runs differ: no verdict),
   `original fails` (no verdict), or `FIXED FAILS`. Prints the GPU and torch it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "migrate"))

_MASKS = [
    (re.compile(r"0x[0-9a-fA-F]+"), "0x?"),  # object addresses
    (re.compile(r"\b\d+(\.\d+)?\s*(s|ms|sec|seconds)\b"), "<time>"),
    (re.compile(r"(time|elapsed|it/s|s/it)[^\n]*", re.IGNORECASE), "<timing line>"),
]


def _mask(text: str) -> List[str]:
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text.splitlines()


def prepare(target: Path, migrate_work: Path) -> int:
    from run import CASES  # benchmarks/migrate/run.py

    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    listed: Dict[str, Dict[str, object]] = {}
    for case in CASES:
        base = migrate_work / case.name
        if not (base / "before").is_dir() or not (base / "after").is_dir():
            print(f"skip {case.name}: run benchmarks/migrate/run.py first ({base} has no before/after)")
            continue
        shutil.copytree(base / "before", target / case.name / "original")
        shutil.copytree(base / "after", target / case.name / "fixed")
        listed[case.name] = {"run": [case.driver], "from": case.repo}
    packages = sorted({fixed.parent for fixed in (ROOT / "fixtures").rglob("*.fixed.py")
                       if (fixed.parent / "__init__.py").is_file()})
    for package in packages:
        name = "fixture-" + str(package.relative_to(ROOT / "fixtures")).replace("/", "-")
        modules = sorted(p for p in package.glob("*.py") if not p.name.endswith(".fixed.py"))
        for side in ("original", "fixed"):
            folder = target / name / side / package.name
            folder.mkdir(parents=True)
            for module in modules:
                # The fixed side is what one fix run of the whole package writes (`X.py.together`), else what
                # fixing the file alone writes (`X.fixed.py`), else the file unchanged.
                together = module.with_name(module.name + ".together")
                alone = module.with_name(module.stem + ".fixed.py")
                source = module if side == "original" else together if together.is_file() else \
                    alone if alone.is_file() else module
                shutil.copyfile(source, folder / module.name)
            calls = sorted((m.stem, f) for m in modules for f in _zero_argument_functions(m))  # the originals'
            (target / name / side / "_drive.py").write_text(
                _DRIVER.format(package=package.name, calls=calls), encoding="utf-8")
        listed[name] = {"run": ["_drive.py"], "from": str(package.relative_to(ROOT))}
    for fixed in sorted((ROOT / "fixtures").rglob("*.fixed.py")):
        original = fixed.with_name(fixed.name[: -len(".fixed.py")] + ".py")
        if not original.is_file() or fixed.parent in packages:
            continue
        name = "fixture-" + str(original.relative_to(ROOT / "fixtures")).replace("/", "-")[: -len(".py")]
        for side, source in (("original", original), ("fixed", fixed)):
            folder = target / name / side
            folder.mkdir(parents=True)
            shutil.copyfile(source, folder / original.name)
        listed[name] = {"run": [original.name], "from": str(original.relative_to(ROOT))}
    (target / "cases.json").write_text(json.dumps(listed, indent=1, sort_keys=True), encoding="utf-8")
    print(f"{len(listed)} cases in {target}")
    return 0


# A fixture package's modules import each other relatively: the driver imports the package's modules and calls
# the functions of the originals that take no argument, printing what each returns or raises (seeded first).
_DRIVER = """\
import importlib
import torch

for module, name in {calls!r}:
    function = getattr(importlib.import_module("{package}." + module), name)
    torch.manual_seed(0)
    try:
        print(module, name, repr(function()))
    except Exception as error:
        print(module, name, "raised", type(error).__name__)
"""


def _zero_argument_functions(path: Path) -> List[str]:
    """The original module's top-level functions callable without arguments (the fixed copy may add one)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and len(node.args.posonlyargs) + len(node.args.args) == len(node.args.defaults)]


def _run(folder: Path, command: List[str], timeout: int) -> Tuple[int, List[str], str]:
    env = dict(os.environ, PYTHONHASHSEED="0", CUBLAS_WORKSPACE_CONFIG=":4096:8")
    with tempfile.TemporaryDirectory() as scratch:  # a private copy: a run may write files next to itself
        work = Path(scratch) / "case"
        shutil.copytree(folder, work)
        try:
            done = subprocess.run([sys.executable, *command], cwd=work, capture_output=True, text=True,
                                  timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return 124, [], "timed out"
    return done.returncode, _mask(done.stdout), (done.stderr.strip().splitlines() or [""])[-1][:200]


def compare(cases: Path, timeout: int, only: Optional[List[str]]) -> int:
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {gpu}")
    if not torch.cuda.is_available():
        print("warning: no CUDA device here: this checks CPU equivalence only")
    listed = json.loads((cases / "cases.json").read_text(encoding="utf-8"))
    counts: Dict[str, int] = {}
    for name, spec in sorted(listed.items()):
        if only and name not in only:
            continue
        command = list(spec["run"])
        code_a, out_a, err_a = _run(cases / name / "original", command, timeout)
        if code_a != 0:
            verdict = f"original fails (exit {code_a}: {err_a})"
        else:
            code_b, out_b, _ = _run(cases / name / "original", command, timeout)
            code_f, out_f, err_f = _run(cases / name / "fixed", command, timeout)
            if code_b != 0 or out_b != out_a:
                verdict = "original not deterministic"
            elif code_f != 0:
                verdict = f"FIXED FAILS (exit {code_f}: {err_f})"
            elif out_f != out_a:
                first = next(i for i in range(max(len(out_a), len(out_f)))
                             if i >= len(out_a) or i >= len(out_f) or out_a[i] != out_f[i])
                verdict = (f"DIFFERS at line {first + 1}: {out_a[first] if first < len(out_a) else '<end>'!r} "
                           f"vs {out_f[first] if first < len(out_f) else '<end>'!r}")
            else:
                verdict = f"identical ({len(out_a)} lines)"
        key = verdict.split(" (")[0].split(" at ")[0]
        counts[key] = counts.get(key, 0) + 1
        print(f"{name}: {verdict}", flush=True)
    print("; ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0 if not any(k.startswith(("DIFFERS", "FIXED FAILS")) for k in counts) else 1


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepare", type=Path, help="gather the cases into this folder (run where mpslint is)")
    parser.add_argument("--migrate-work", type=Path, default=Path(tempfile.gettempdir()) / "mpslint-migrate")
    parser.add_argument("--cases", type=Path, help="run the gathered cases (on the CUDA machine)")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args(argv)
    if args.prepare:
        return prepare(args.prepare, args.migrate_work)
    if args.cases:
        return compare(args.cases, args.timeout, args.only)
    parser.error("give --prepare DIR or --cases DIR")
    return 2


if __name__ == "__main__":
    sys.exit(main())
