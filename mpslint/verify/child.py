"""The child process: set up the probe (and the emulated device), run the script, write what was recorded.

Run as ``python -m mpslint.verify.child REPORT_PATH OPTIONS_JSON SCRIPT [ARGS...]``
by ``launcher``, which has already set ``PYTORCH_ENABLE_MPS_FALLBACK`` in the
environment: PyTorch reads it once, when torch is imported (mps.md §1.1).
The report goes to REPORT_PATH as JSON; the script's stdout and stderr are
its own.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
import traceback
from typing import Any, Dict, List, Optional


class VerifierTimeout(BaseException):
    """Raised in the script when the launcher's --timeout expires (SIGTERM)."""


def _error_row(exc: BaseException, script: str) -> Optional[int]:
    row = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == script:
            row = lineno
    return row


def _print_script_traceback(exc: BaseException, script: str) -> None:
    """The traceback Python would print for the script: without the verifier's own frames around it."""
    here = os.path.dirname(os.path.abspath(__file__))
    frames = list(traceback.walk_tb(exc.__traceback__))
    start = next((i for i, (frame, _) in enumerate(frames) if frame.f_code.co_filename == script), 0)
    frames = frames[start:]
    inside = [os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here for frame, _ in frames]
    if True in inside:  # the emulated device stands where PyTorch's C++ would be: not shown
        frames = frames[:inside.index(True)]
    summary = traceback.StackSummary.extract(iter(frames))
    sys.stderr.write("Traceback (most recent call last):\n")
    sys.stderr.write("".join(summary.format()))
    sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))


def main(argv: List[str]) -> int:
    report_path, options_json, script = argv[0], argv[1], argv[2]
    options: Dict[str, Any] = json.loads(options_json)
    started = time.monotonic()
    result: Dict[str, Any] = {"status": "ran", "errors": [], "events": [], "notes": []}
    pid = os.getpid()

    def write() -> None:
        if os.getpid() != pid:  # a forked DataLoader worker
            return
        result["duration_s"] = round(time.monotonic() - started, 3)
        with open(report_path, "w", encoding="utf-8") as handle:
            json.dump(result, handle)

    try:
        return _run(script, argv[3:], options, result, write, started)
    except BaseException:
        # Our own setup failed (the script's failures are caught in _run): the launcher exits 2.
        result["status"] = "verifier-error"
        result["message"] = traceback.format_exc()
        write()
        return 2


def _run(script: str, script_args: List[str], options: Dict[str, Any], result: Dict[str, Any], write: Any,
         started: float) -> int:
    import torch

    torch.set_warn_always(True)  # every fallback warns, not only the first (mps.md §1.1)
    result["torch_version"] = torch.__version__
    simulate = bool(options.get("simulate"))
    result["simulated"] = simulate
    if not simulate and not torch.backends.mps.is_available():
        result["status"] = "no-device"
        write()
        return 0

    from mpslint.verify import probe

    recorder = probe.Recorder(script)
    stack = []
    if simulate:
        from mpslint.verify import simulate as simulated
        from mpslint.verify.kernels import KernelOracle

        oracle = KernelOracle()
        device = simulated.simulated_device(oracle, fallback=simulated.fallback_enabled())
        stack.append(device)
        result["notes"].extend(simulated.LIMITATIONS)
        result["kernel_table"] = f"{oracle.table.source} {oracle.table.version}"
    probe.install_clocks(recorder, options.get("max_steps"))

    def on_term(signum: int, frame: Any) -> None:
        raise VerifierTimeout()

    signal.signal(signal.SIGTERM, on_term)
    sys.argv = [script] + list(script_args)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    exit_code: Optional[int] = 0
    try:
        for context in stack:
            context.__enter__()
        probe.install_sync_hooks(recorder)  # after the device: wraps its synchronize too
        with probe.ProbeMode(recorder):
            probe.install_line_tracer(recorder)
            try:
                runpy.run_path(script, run_name="__main__")
            finally:
                probe.remove_line_tracer()
    except SystemExit as exc:
        code = exc.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        if exit_code:
            result["errors"].append({"type": "SystemExit", "message": f"the script exited with status {exit_code}",
                                     "row": _error_row(exc, script)})
    except VerifierTimeout as exc:
        exit_code = None
        result["errors"].append({"type": "Timeout", "message": "the script did not finish within the timeout",
                                 "row": _error_row(exc, script)})
    except BaseException as exc:  # the script's own failure is the report's subject
        _print_script_traceback(exc, script)
        exit_code = 1
        result["errors"].append({"type": type(exc).__name__, "message": str(exc), "row": _error_row(exc, script)})
    finally:
        probe.remove_line_tracer()
        for context in reversed(stack):
            try:
                context.__exit__(None, None, None)
            except Exception:  # restoring patches must not hide the report
                pass
        result["exit_code"] = exit_code
        result["events"] = recorder.as_json()
        result["clocks"] = dict(recorder.clocks)
        result["lines"] = sorted(recorder.lines)
        if simulate:
            unknown = sorted(oracle.unknown)
            if unknown:
                result["notes"].append("ops not in the kernel table, assumed to run on MPS: " + ", ".join(unknown))
        write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
