"""The child process: run the script, and set up the probe (and the emulated device) when the script imports torch.

Run as ``python -m mpslint.verify.child REPORT_PATH OPTIONS_JSON SCRIPT [ARGS...]``
by ``launcher``. Nothing here imports torch before the script does: PyTorch
reads ``PYTORCH_ENABLE_MPS_FALLBACK`` once, while ``import torch`` loads its
library (``aten/src/ATen/mps/MPSFallback.mm``), so a script that sets it
before its own ``import torch`` must get what it set. An import hook sets the
verifier up right after torch finishes loading, and records the setting
torch saw; ``envwatch`` records each write of the variable as it runs, before
or after that moment, so the report can name the line that chose the setting
and the lines that came too late.

The report goes to REPORT_PATH as JSON, rewritten as the run goes (at step
boundaries and from a timer, at most once a second) so a hang or a crash loses little;
``faulthandler`` writes a crash's Python stack next to it. The script's
stdout and stderr are its own.
"""

from __future__ import annotations

import faulthandler
import importlib.abc
import importlib.machinery
import json
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from contextlib import ExitStack
from typing import Any, Callable, Dict, List, Optional, Tuple

from mpslint.analysis.load_time_env import IMPORT, MPS_VARIABLES
from mpslint.verify import envwatch, spawn_guard

FALLBACK_VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"
# The variables PyTorch reads while ``import torch`` loads; the others it reads when their subsystem first runs.
LOADED_WITH_TORCH = tuple(v.name for v in MPS_VARIABLES.values() if v.read == IMPORT)
WRITE_EVERY_S = 1.0


class VerifierTimeout(BaseException):
    """Raised in the script when the launcher's --timeout expires (SIGTERM)."""


class _NoDevice(BaseException):
    """torch was imported on a machine without an MPS device, and --simulate was not given."""


class _SetupFailed(BaseException):
    """The verifier's own setup failed inside the script's import of torch."""


def _error_row(exc: BaseException, script: str) -> Optional[int]:
    row = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == script:
            row = lineno
    return row


def _error_where(exc: BaseException, script: str, recorder: Any) -> Dict[str, Any]:
    """Where the script's error is: the innermost frame in the user's own files (the script's directory, outside
    installed packages), as README promises; and the script's own line, which confirms the script's static findings."""
    where: Dict[str, Any] = {"row": _error_row(exc, script), "script_row": _error_row(exc, script)}
    if recorder is None:
        return where
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if recorder.is_user_file(frame.f_code.co_filename):
            where.update(filename=os.path.abspath(frame.f_code.co_filename), row=lineno)
    return where


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
    text = "Traceback (most recent call last):\n" + "".join(summary.format()) + \
        "".join(traceback.format_exception_only(type(exc), exc))
    try:
        sys.stderr.write(text)
    except Exception:  # noqa: BLE001 - the script replaced or closed sys.stderr: Python then prints nothing either
        pass


class _AfterTorch(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads ``torch`` as usual, then runs ``ready`` once, before the importing statement continues."""

    def __init__(self, ready: Callable[[], None]) -> None:
        self.ready = ready
        self.loader: Any = None

    def find_spec(self, fullname, path, target=None):  # type: ignore[override]
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        self.loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec):  # type: ignore[override]
        return self.loader.create_module(spec)

    def exec_module(self, module):  # type: ignore[override]
        self.loader.exec_module(module)
        module.__spec__.loader = self.loader
        self.ready()


def fallback_setting(initial: Optional[str], at_import: Optional[str], source: str,
                     decided_by: Optional[Tuple[Optional[str], Optional[int]]]) -> Dict[str, Any]:
    """Which value of the fallback switch torch saw, and where it came from.

    ``decided_by`` is where the script's last write before the import ran (file, line), or None.
    """
    setting: Dict[str, Any] = {"value": at_import, "enabled": _enabled(at_import), "source": source, "row": None,
                               "filename": None}
    if decided_by is not None or at_import != initial:
        setting["source"] = "script"
        if decided_by is not None:
            setting["filename"], setting["row"] = decided_by
    return setting


def env_writes(watch: envwatch.EnvWatch, is_user_file: Callable[[str], bool]) -> List[Dict[str, Any]]:
    """The script's writes of the variables torch reads while it loads, where they ran and whether torch had loaded."""
    return [dict(zip(("filename", "row"), envwatch.innermost(w.frames, is_user_file)), name=w.name, value=w.value,
                 enables=_enabled(w.value), after_import=w.after_import)
            for w in watch.writes]


def _enabled(value: Optional[str]) -> bool:
    """PyTorch's reading of the switch (MPSFallback.mm: set, and ``std::stoi(value) != 0``)."""
    if value is None:
        return False
    try:
        return int(value.strip().split()[0] if value.strip() else "x") != 0
    except ValueError:
        return False


def main(argv: List[str]) -> int:
    report_path, options_json, script = argv[0], argv[1], argv[2]
    options: Dict[str, Any] = json.loads(options_json)
    started = time.monotonic()
    result: Dict[str, Any] = {"status": "running", "errors": [], "events": [], "notes": [], "torch_imported": False}
    pid = os.getpid()
    state: Dict[str, Any] = {"recorder": None, "oracle": None, "last_write": 0.0}
    initial = os.environ.get(FALLBACK_VARIABLE)
    watch = envwatch.EnvWatch(LOADED_WITH_TORCH)
    fault_path = report_path + ".fault"
    fault_file = open(fault_path, "w")
    ours = not faulthandler.is_enabled()  # (a test harness may run us in a process that has its own)
    if ours:
        faulthandler.enable(file=fault_file)
    if hasattr(signal, "SIGUSR1"):  # the launcher asks where a hung script is before it kills it
        faulthandler.register(signal.SIGUSR1, file=fault_file, all_threads=True)

    lock = threading.Lock()

    def write(final: bool = False) -> None:
        if os.getpid() != pid:  # a forked DataLoader worker
            return
        with lock:
            _write(final)

    def _write(final: bool) -> None:
        recorder = state["recorder"]
        if recorder is not None:
            result["events"] = recorder.as_json()
            result["clocks"] = dict(recorder.clocks)
            result["lines"] = sorted(recorder.lines)
            result["ops"] = recorder.ops
            result["ops_on_device"] = recorder.ops_on_device
            result["warned_fallbacks"] = dict(recorder.warned_fallbacks)
            result["compile_calls"] = [list(w) for w in recorder.compile_calls]
            result["env_writes"] = env_writes(watch, recorder.is_user_file)
            result["unimplemented"] = recorder.raised_json()
            if recorder.memory is not None:
                result["memory"] = recorder.memory.as_json()
            if state["oracle"] is not None:
                oracle = state["oracle"]
                explicit = oracle.table.explicit_cpu_fallbacks
                result["explicit_fallbacks"] = sorted(
                    op for op in recorder.table_fallbacks | set(recorder.warned_fallbacks)
                    if op in oracle.by_design or op.split("::", 1)[-1] in explicit)
        if final and state["oracle"] is not None:
            unknown = sorted(state["oracle"].unknown)
            if unknown:
                result["notes"].append("ops not in the kernel table, assumed to run on MPS: " + ", ".join(unknown))
        result["duration_s"] = round(time.monotonic() - started, 3)
        temporary = report_path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(result, handle)
        os.replace(temporary, report_path)  # a reader never sees half a report
        state["last_write"] = time.monotonic()

    def on_tick() -> None:
        if time.monotonic() - state["last_write"] >= WRITE_EVERY_S:
            write()

    def every_second() -> None:  # also between steps: a script may hang before its first step ends
        while result["status"] == "running":
            time.sleep(WRITE_EVERY_S)
            if result["status"] == "running" and state["recorder"] is not None and \
                    time.monotonic() - state["last_write"] >= WRITE_EVERY_S:
                try:
                    write()
                except Exception:  # a report is rewritten at the end anyway
                    pass

    threading.Thread(target=every_second, name="mpslint-verify-report", daemon=True).start()

    stack = ExitStack()

    def ready() -> None:
        try:
            _set_up(script, options, result, state, stack, initial, on_tick, watch)
        except (_NoDevice, _SetupFailed, KeyboardInterrupt):
            raise
        except BaseException:
            result["status"] = "verifier-error"
            result["message"] = traceback.format_exc()
            raise _SetupFailed()
        write()

    watch.install()  # before the script's first line, undone below
    try:
        if "torch" in sys.modules:  # imported before us (a sitecustomize): too late to wait for the script's import
            ready()
        else:
            sys.meta_path.insert(0, _AfterTorch(ready))
        return _run(script, argv[3:], result, state, stack, write)
    except _NoDevice:
        result["status"] = "no-device"
        write(final=True)
        return 0
    except _SetupFailed:
        write(final=True)
        return 2
    except BaseException:
        # Our own machinery failed (the script's failures are caught in _run): the launcher exits 2.
        result["status"] = "verifier-error"
        result["message"] = traceback.format_exc()
        write(final=True)
        return 2
    finally:
        watch.remove()
        if ours:
            faulthandler.disable()
        fault_file.close()


def _set_up(script: str, options: Dict[str, Any], result: Dict[str, Any], state: Dict[str, Any], stack: ExitStack,
            initial: Optional[str], on_tick: Callable[[], None], watch: envwatch.EnvWatch) -> None:
    at_import = os.environ.get(FALLBACK_VARIABLE)  # what torch read while it loaded, just now
    watch.torch_imported = True
    import torch

    result["torch_imported"] = True
    result["torch_version"] = torch.__version__
    simulate = bool(options.get("simulate"))
    result["simulated"] = simulate
    unsupported = _unsupported(torch, simulate)
    if unsupported:
        result["status"] = "unsupported"
        result["message"] = unsupported
        raise _SetupFailed()
    if not simulate and not torch.backends.mps.is_available():
        raise _NoDevice()
    torch.set_warn_always(True)  # every fallback warns, not only the first (TORCH_WARN_ONCE otherwise)

    from mpslint.verify import probe
    from mpslint.verify.kernels import KernelOracle

    recorder = probe.Recorder(script)
    recorder.on_tick = on_tick
    recorder.fallback_write = lambda: watch.in_force(FALLBACK_VARIABLE)
    decisive = watch.last_before_import(FALLBACK_VARIABLE)
    result["fallback"] = fallback_setting(
        initial, at_import, options.get("fallback_source", "environment"),
        envwatch.innermost(decisive.frames, recorder.is_user_file) if decisive is not None else None)
    state["recorder"] = recorder
    from mpslint.verify import memory

    if simulate:
        result["memory"] = memory.not_measured(memory.SIMULATED)
    else:
        recorder.memory = memory.Sampler(memory.mps_source(torch))
    oracle = KernelOracle()
    state["oracle"] = oracle
    result["kernel_table"] = f"{oracle.table.source} {oracle.table.version}"
    enabled = result["fallback"]["enabled"]
    if simulate:
        from mpslint.verify import simulate as simulated

        stack.enter_context(simulated.simulated_device(oracle, fallback=enabled, on_fallback=recorder.fallback))
        result["notes"].extend(simulated.LIMITATIONS)
    probe.install_clocks(recorder, options.get("max_steps"))
    probe.install_sync_hooks(recorder)  # after the device: wraps its synchronize too
    probe.install_print_hook(recorder)
    probe.install_compile_hook(recorder)
    stack.callback(probe.install_warning_hook(recorder))
    from mpslint.verify import silent_wrong

    triggers = silent_wrong.Triggers()  # known silently wrong results of this torch, seen in the calls' arguments
    if triggers.functions:
        stack.enter_context(silent_wrong.FunctionTriggers(triggers, recorder.wrong))
    stack.enter_context(probe.ProbeMode(recorder, oracle=None if simulate else oracle, fallback=enabled,
                                        max_ops=options.get("max_ops"), triggers=triggers))


def _unsupported(torch: Any, simulate: bool) -> Optional[str]:
    """Why this torch cannot be verified, or None."""
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if version < (2, 1):
        # register_module_forward_hook(always_call=True), which counts model calls, came in 2.1.
        return f"mpslint verify needs torch 2.1 or newer; this is torch {torch.__version__}"
    if simulate and not hasattr(torch.utils, "swap_tensors"):
        # nn.Module.to() keeps parameters (and optimizers built before it) only by swapping them (torch 2.3).
        return (f"mpslint verify --simulate needs torch 2.3 or newer (torch.utils.swap_tensors); this is torch "
                f"{torch.__version__}. On a Mac, mpslint verify without --simulate works with torch 2.1 and newer")
    return None


def _ours(exc: BaseException) -> bool:
    """A failure of the verifier's own code while the script ran (not an emulated PyTorch error)."""
    from mpslint.verify import messages

    if isinstance(exc, spawn_guard.UnguardedWorkers):
        return False  # the script's fault, said at the line that starts the worker
    if isinstance(exc, RecursionError):
        # The script's recursion ran out of stack wherever Python happened to be: often in the line
        # tracer or a probe hook, called by the script's deepest frame. Plain Python blames the script.
        return False
    frames = list(traceback.walk_tb(exc.__traceback__))
    if not frames:
        return False
    here = os.path.dirname(os.path.abspath(__file__))
    innermost = os.path.dirname(os.path.abspath(frames[-1][0].f_code.co_filename))
    # The verifier's own raises all carry PyTorch's texts, which error_kind recognises.
    return innermost == here and messages.error_kind(type(exc).__name__, str(exc)) is None


def _run(script: str, script_args: List[str], result: Dict[str, Any], state: Dict[str, Any], stack: ExitStack,
         write: Callable[..., None]) -> int:
    from mpslint.verify import tracer

    def on_term(signum: int, frame: Any) -> None:
        raise VerifierTimeout()

    signal.signal(signal.SIGTERM, on_term)
    sys.argv = [script] + list(script_args)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    lines: set = set()
    exit_code: Optional[int] = 0
    finished = []
    pid = os.getpid()
    real_exit = os._exit

    def finish() -> None:
        if finished:
            return
        finished.append(True)
        tracer.remove()
        try:
            stack.close()
        except Exception:  # restoring patches must not hide the report
            pass
        if result["status"] == "running":
            result["status"] = "verifier-error" if "verifier_error" in result else "ran"
        if "verifier_error" in result:
            result["message"] = result.pop("verifier_error")
        result["script_exit_code"] = exit_code
        if state["recorder"] is not None:
            state["recorder"].lines.update(lines)
        else:
            result["lines"] = sorted(lines)
        write(final=True)

    def hard_exit(status: int) -> None:
        """``os._exit`` from the script: the run ends here, so the report is finished first (no atexit runs)."""
        nonlocal exit_code
        if os.getpid() == pid:  # not a forked worker, which exits this way as a matter of course
            exit_code = status
            if status:
                result["errors"].append({"type": "SystemExit", "message": f"the script called os._exit({status})",
                                         "row": _caller_row(script)})
            try:
                finish()
            except BaseException:  # noqa: BLE001 - the script asked to exit now, and it will
                pass
        real_exit(status)

    os._exit = hard_exit
    try:
        with open(script, encoding="utf-8", errors="replace") as handle:
            stack.callback(spawn_guard.install(script, handle.read()))
        tracer.install(script, lines)
        try:
            runpy.run_path(script, run_name="__main__")
        finally:
            tracer.remove()
    except SystemExit as exc:
        code = exc.code
        exit_code = code if isinstance(code, int) else (0 if code is None else 1)
        if exit_code:
            result["errors"].append({"type": "SystemExit", "message": f"the script exited with status {exit_code}",
                                     "row": _error_row(exc, script)})
    except (_NoDevice, _SetupFailed):
        raise
    except VerifierTimeout as exc:
        exit_code = None
        result["errors"].append({"type": "Timeout", "message": "the script did not finish within the timeout",
                                 "row": _error_row(exc, script)})
    except BaseException as exc:  # the script's own failure is the report's subject
        if type(exc).__name__ == "StepBudget":  # the probe's: --max-steps or --max-ops used up
            result["stopped"] = {"budget": str(exc), "row": _error_row(exc, script)}
        elif _ours(exc):
            result["verifier_error"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        else:
            _print_script_traceback(exc, script)
            exit_code = 1
            result["errors"].append({"type": type(exc).__name__, "message": str(exc),
                                     **_error_where(exc, script, state["recorder"])})
    finally:
        os._exit = real_exit
        finish()
    return 0


def _caller_row(script: str) -> Optional[int]:
    """The line of the script that is running now (its innermost frame), or None."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename != script:
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_lineno if frame is not None else None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
