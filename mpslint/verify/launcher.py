"""The parent side: run the child in its own process group, bounded by a timeout.

The child reports through a temporary JSON file, never through the script's
output, which goes to our stdout (or, for machine-readable output, to stderr).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Any, Dict, List, Optional, Union

GRACE_S = 5.0  # between SIGTERM (the child writes its report) and SIGKILL
DUMP_S = 1.0  # after SIGUSR1 (faulthandler writes where the child is stuck), before SIGKILL


@dataclass
class Options:
    script: str
    args: List[str] = field(default_factory=list)
    simulate: bool = False
    fallback: bool = True
    timeout: Optional[float] = None
    max_steps: Optional[int] = None
    max_ops: Optional[int] = None


@dataclass
class Run:
    raw: Optional[Dict[str, Any]]  # what the child recorded; None when it died before writing
    returncode: Optional[int]
    timed_out: bool
    duration_s: float
    output: str = ""  # the script's output when it was captured
    fault: str = ""  # faulthandler's dump: where the child crashed or hung


def launch(options: Options, stdout: Union[None, int, IO[Any]] = None, capture: bool = False) -> Run:
    env = dict(os.environ)
    if options.fallback:
        env["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"
        source = "mpslint verify (its default; --no-fallback leaves the variable unset)"
    else:
        env.pop("PYTORCH_ENABLE_MPS_FALLBACK", None)
        source = "--no-fallback (the variable is unset)"
    child_options = json.dumps({"simulate": options.simulate, "max_steps": options.max_steps,
                                "max_ops": options.max_ops, "fallback_source": source})
    with tempfile.TemporaryDirectory(prefix="mpslint-verify-") as tmp:
        report = os.path.join(tmp, "report.json")
        command = [sys.executable, "-m", "mpslint.verify.child", report, child_options, options.script, *options.args]
        started = time.monotonic()
        process = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE if capture else stdout,
            stderr=subprocess.STDOUT if capture else None,
            start_new_session=True,  # its own process group: the timeout ends DataLoader workers too
        )
        timed_out = False
        try:
            output, _ = process.communicate(timeout=options.timeout)
        except (KeyboardInterrupt, SystemExit):
            # Ctrl-C reaches only our process group, not the script's own session: end the script with us.
            _signal_group(process, signal.SIGKILL)
            process.wait()
            raise
        except subprocess.TimeoutExpired:
            timed_out = True
            _signal_group(process, signal.SIGTERM)
            try:
                output, _ = process.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:  # stuck where Python cannot run: in C++, a Metal wait
                if hasattr(signal, "SIGUSR1"):
                    _signal(process, signal.SIGUSR1)
                    try:
                        output, _ = process.communicate(timeout=DUMP_S)
                    except subprocess.TimeoutExpired:
                        pass
                _signal_group(process, signal.SIGKILL)
                output, _ = process.communicate()
        # Workers the script left behind, and any that outlived the SIGTERM (ignored it, or were still starting).
        _signal_group(process, signal.SIGKILL)
        duration = time.monotonic() - started
        raw = None
        if os.path.exists(report):
            try:
                with open(report, encoding="utf-8") as handle:
                    raw = json.load(handle)
            except (OSError, ValueError):
                raw = None
        fault = ""
        try:
            with open(report + ".fault", encoding="utf-8", errors="replace") as handle:
                fault = handle.read()
        except OSError:
            pass
    text = output.decode("utf-8", "replace") if isinstance(output, bytes) else ""
    return Run(raw, process.returncode, timed_out, round(duration, 3), text, fault)


def _signal(process: subprocess.Popen, signum: int) -> None:
    try:
        os.kill(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
