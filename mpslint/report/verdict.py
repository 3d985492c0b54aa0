"""The report's first and last words: a verdict, and the exact commands to run next."""

from __future__ import annotations

import shlex
from typing import Dict, List, Sequence, Tuple

from mpslint.diagnostic import Diagnostic
from mpslint.report.model import Report, Step

# How many scripts the report suggests running under `mpslint verify`.
VERIFY_SUGGESTIONS = 2
SCRIPT_NAMES = ("train", "finetune", "main", "run", "eval", "infer", "demo", "example")


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def directories(n: int) -> str:
    return "1 directory" if n == 1 else f"{n} directories"


def verdict(report: Report) -> Tuple[str, str]:
    """(key, sentence): unread, clean, runs, fix, unsafe-fix or work."""
    unread = sum(row.count for row in report.rules if row.code == "MPS001")
    if unread:
        # Nothing can be said of code mpslint could not read: never "Runs on MPS" then.
        read = f" Of the {plural(report.files_checked, 'file')} read: " if report.files_checked else ""
        what = "Incomplete" if report.files_checked else "Not checked"
        key, text = "unread", f"{what}: {plural(unread, 'path')} could not be read (MPS001)."
        if read:
            _, rest = _verdict_of_read(report)
            text += read + rest[0].lower() + rest[1:]
        return key, text
    return _verdict_of_read(report)


def _verdict_of_read(report: Report) -> Tuple[str, str]:
    c = report.counts
    if c.findings == 0:
        key, text = "clean", "No findings: nothing mpslint checks stands in the way of MPS."
    elif c.fails == 0:
        key = "runs"
        text = (f"Runs on MPS; {plural(c.slows, 'finding')} slow it down." if c.slows
                else "Runs on MPS; the findings neither fail nor slow it down.")
    elif report.fix and report.fix.remaining_fails == 0:
        key, text = "fix", f"Fails on MPS today: `mpslint --fix` fixes all {plural(c.fails, 'failing finding')}."
    elif report.fix_unsafe and report.fix_unsafe.remaining_fails == 0:
        key, text = "unsafe-fix", (f"Fails on MPS today: `mpslint --fix --unsafe-fixes` fixes all "
                                   f"{plural(c.fails, 'failing finding')} (review the unsafe ones).")
    else:
        left = report.fix.remaining_fails if report.fix else c.fails
        key, text = "work", (f"Fails on MPS: {plural(c.fails, 'finding')} fail there, and "
                             f"{left} of them need a human after `mpslint --fix`.")
    failed = [run for run in report.runtime if run.verdict != "pass"]
    if report.runtime:
        text += f" `mpslint verify` failed on {len(failed)} of {plural(len(report.runtime), 'run')}." if failed \
            else f" `mpslint verify` passed on {plural(len(report.runtime), 'run')}."
    return key, text


def next_steps(report: Report, diagnostics: Dict[str, List[Diagnostic]], flags: Sequence[str] = ()) -> List[Step]:
    where = " ".join(shlex.quote(p) for p in [*flags, *(report.paths or ["."])])
    steps: List[Step] = []
    safe, unsafe = report.fix, report.fix_unsafe
    if safe and safe.fixed:
        steps.append(Step(
            "Apply the safe fixes",
            f"mpslint --fix {where}",
            f"fixes {plural(safe.fixed, 'finding')} in {plural(safe.files_changed, 'file')}; the code still runs "
            f"as before on CUDA and the CPU. Preview the changes with `mpslint --diff {where}`.",
        ))
    if unsafe and safe and unsafe.fixed > safe.fixed:
        steps.append(Step(
            "Review, then apply the unsafe fixes",
            f"mpslint --diff --unsafe-fixes {where}\nmpslint --fix --unsafe-fixes {where}",
            f"{_more_fixes(unsafe.fixed - safe.fixed)} that may change numerics or semantics "
            "(float64 to float32, fork to spawn): read the diff first.",
        ))
    left = unsafe.remaining if unsafe else report.counts.findings
    if left:
        fails = unsafe.remaining_fails if unsafe else report.counts.fails
        steps.append(Step(
            "Work through what is left",
            f"mpslint --output-format full {where}",
            f"{plural(left, 'finding')} need a human after the fixes ({fails} of them fail on MPS); "
            "`mpslint rule CODE` says what to write instead.",
        ))
    scripts = _scripts(report, diagnostics)
    if scripts:
        steps.append(Step(
            "Run a script on an emulated mps device",
            "\n".join(f"mpslint verify --simulate --max-steps 20 --timeout 600 {shlex.quote(s)}" for s in scripts),
            "runs the script with every op checked against the MPS kernels of the installed torch (any OS, no Mac) "
            "and reports CPU fallbacks, host syncs per step, float64 and device mismatches, each with its line. "
            "Add the script's own arguments after `--`; on a Mac, leave out --simulate to use the real device.",
        ))
    if scripts and not report.runtime:
        script = shlex.quote(scripts[0])
        steps.append(Step(
            "Add the runtime evidence to this report",
            f"mpslint verify --simulate --max-steps 20 --output-format json {script} > verify.json\n"
            f"mpslint report --verify-report verify.json {where}",
            "shows which static findings really happened when the script ran.",
        ))
    return steps


def _more_fixes(n: int) -> str:
    return f"{n} more fix" if n == 1 else f"{n} more fixes"


def _scripts(report: Report, diagnostics: Dict[str, List[Diagnostic]]) -> List[str]:
    """Scripts worth running: files with a ``__main__`` guard, training-like names and hot-loop findings first."""
    def score(path: str) -> Tuple[int, int, int, str]:
        name = path.rsplit("/", 1)[-1].lower()
        named = any(name.startswith(prefix) for prefix in SCRIPT_NAMES)
        hot = sum(1 for d in diagnostics.get(path, []) if d.code.startswith("MPS2"))
        return (0 if _is_script(path) else 1, 0 if named else 1, -hot, path)

    ranked = sorted((row.path for row in report.files), key=score)
    return [path for path in ranked if _is_script(path)][:VERIFY_SUGGESTIONS]


def _is_script(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return False
    return "__main__" in text
