"""What happens on the device, attributed to the user's own lines.

``Recorder`` counts events per (kind, key, file, line) -- the innermost frame
in the user's own files (the script's directory, outside installed packages)
-- and keeps, for each, the steps in which it happened. A *step* is read from
three clocks, the first that moved wins (``report.step_clock``): optimizer
steps, ``DataLoader`` batches, top-level ``nn.Module`` forward calls.

``ProbeMode`` sees every aten op the script runs: it counts the ops and those
with an argument on the device, records host syncs (``_local_scalar_dense``
for ``.item()``/``float()``/``bool()``, copies to the host, data-dependent
shapes, scalar reads inside kernels such as ``equal``) and, on a Mac, decides
CPU fallbacks per op from the kernel table of the installed torch: PyTorch's
own fallback warning is a C++ warning, which reaches Python only after the
binding returns, long after a dispatch mode could see it. A process-wide
warning hook (``install_warning_hook``) cross-checks the table with the
warnings that do surface. Under ``--simulate`` the emulated device reports
its fallbacks itself. On both paths it also checks each op with a tensor on
the device against the installed torch's known silently-wrong triggers
(``silent_wrong``); on a Mac each step tick samples device memory (``memory``).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mpslint.verify import messages
from mpslint.verify.kernels import COMPOSITE, EXPLICIT_FALLBACK, MISSING, KernelOracle
from mpslint.verify.report import CLOCKS


def _arguments(args: tuple, kwargs: Dict[str, Any]) -> Iterator[Any]:
    """An aten op's arguments, lists opened: its schema nests no deeper, and pytree costs more than the op."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, (list, tuple)):
            yield from value
        else:
            yield value

_DATA_DEPENDENT = {
    "aten::nonzero", "aten::masked_select", "aten::_unique", "aten::_unique2", "aten::unique_dim",
    "aten::unique_consecutive", "aten::repeat_interleave",
}
# Kernels that read a value of the device tensor into the host themselves (no
# _local_scalar_dense reaches the dispatcher): their result is a Python bool.
_SCALAR_READS = {"aten::equal", "aten::allclose", "aten::is_nonzero"}
# Syncs PyTorch makes on purpose, once per step, on every device: GradScaler.step
# reads found_inf to decide whether to skip the optimizer step. Reported, never hot.
BY_DESIGN = ("torch/amp/grad_scaler.py", "torch/cuda/amp/grad_scaler.py")

_BOOL_INDEXED = {"aten::index", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_"}

Where = Tuple[Optional[str], Optional[int]]


class StepBudget(BaseException):
    """Raised in the script when ``--max-steps``/``--max-ops`` is used up outside a DataLoader loop."""


def _installed_roots() -> Tuple[str, ...]:
    roots = {os.path.dirname(os.path.abspath(torch.__file__)), os.path.dirname(os.path.abspath(__file__))}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            roots.add(os.path.abspath(path))
    return tuple(sorted(roots))


class Recorder:
    def __init__(self, script: str) -> None:
        self.script_name = script  # as run: the code objects' co_filename
        self.script = os.path.abspath(script)
        self.root = os.path.dirname(self.script)
        self.installed = _installed_roots()
        self.events: Dict[Tuple[str, str, Optional[str], Optional[int]], Dict[str, Any]] = {}
        self.clocks: Dict[str, int] = {name: 0 for name in CLOCKS}
        self.main_thread = threading.main_thread().ident
        self.lines: Set[int] = set()
        self.ops = 0  # aten ops the script ran
        self.ops_on_device = 0  # ... with an argument (or a result asked) on the device
        self.table_fallbacks: Set[str] = set()  # ops decided as CPU fallbacks (table or simulator)
        self.warned_fallbacks: Dict[str, int] = {}  # ops named by fallback warnings that surfaced
        self.compile_calls: List[Where] = []
        # Missing-kernel NotImplementedErrors: (op, file, line, the fallback switch's write in force) -> count.
        self.raised: Dict[Tuple[str, Optional[str], Optional[int], Optional[int]], int] = {}
        self._user: Dict[str, bool] = {}
        self.on_tick: Optional[Callable[[], None]] = None
        self.memory: Optional[Any] = None  # a memory.Sampler on a Mac: device memory at each step
        # Which write of PYTORCH_ENABLE_MPS_FALLBACK set its value in os.environ now (the child's EnvWatch).
        self.fallback_write: Callable[[], Optional[int]] = lambda: None

    # -- where -------------------------------------------------------------
    def is_user_file(self, filename: str) -> bool:
        known = self._user.get(filename)
        if known is None:
            path = os.path.abspath(filename)
            known = self._user[filename] = (
                not filename.startswith("<") and (path == self.script or path.startswith(self.root + os.sep))
                and not path.startswith(self.installed)
                and "site-packages" not in path.split(os.sep) and "dist-packages" not in path.split(os.sep)
            )
        return known

    def locate(self, frame: Any = None) -> Tuple[Where, bool]:
        """((file, line) of the innermost frame in the user's files, whether a by-design sync site lies below it)."""
        found = self._where_in(frame if frame is not None else sys._getframe(1))
        if found[0][0] is None and threading.get_ident() != self.main_thread:
            found = self._where_in(sys._current_frames().get(self.main_thread))
        return found

    def _where_in(self, frame: Any) -> Tuple[Where, bool]:
        by_design = False
        while frame is not None:
            filename = frame.f_code.co_filename
            if self.is_user_file(filename):
                return (os.path.abspath(filename), frame.f_lineno), by_design
            if filename.replace("\\", "/").endswith(BY_DESIGN):
                by_design = True
            frame = frame.f_back
        return (None, None), by_design

    def row(self) -> Optional[int]:
        """The line in the script itself (errors are reported against the script), or None."""
        (filename, row), _ = self.locate(sys._getframe(1))
        return row if filename == self.script else None

    # -- what ----------------------------------------------------------------
    def record(self, kind: str, key: str, where: Optional[Where] = None) -> None:
        by_design = False
        if where is None:
            where, by_design = self.locate(sys._getframe(1))
        entry = self.events.get((kind, key) + where)
        if entry is None:
            entry = self.events[(kind, key) + where] = {"count": 0, "steps": {name: set() for name in CLOCKS},
                                                        "by_design": 0}
        entry["count"] += 1
        entry["by_design"] += by_design
        for name in CLOCKS:
            entry["steps"][name].add(self.clocks[name])

    def fallback(self, op: str) -> None:
        """An op that runs on the CPU, decided from the kernel table (or by the emulated device)."""
        self.table_fallbacks.add(op)
        self.record("fallback", op, self.locate(sys._getframe(1))[0])

    def wrong(self, entry: str) -> None:
        """A call that matches a known silently-wrong trigger (``silent_wrong``), at the user's line."""
        self.record("wrong", entry, self.locate(sys._getframe(1))[0])

    def warned(self, op: str, frame: Any) -> None:
        """A fallback warning that surfaced: counted, and recorded when the table had not decided it."""
        self.warned_fallbacks[op] = self.warned_fallbacks.get(op, 0) + 1
        if op not in self.table_fallbacks:
            self.record("fallback", op, self.locate(frame)[0])

    def unimplemented(self, op: str) -> None:
        """An op without an MPS kernel raised: with the switch's write in force then, a late one shows it was ignored."""
        key = (op,) + self.locate(sys._getframe(1))[0] + (self.fallback_write(),)
        self.raised[key] = self.raised.get(key, 0) + 1

    def tick(self, clock: str) -> None:
        self.clocks[clock] += 1
        if self.memory is not None:
            self.memory.sample(clock, self.clocks[clock])
        if self.on_tick is not None:
            self.on_tick()

    def as_json(self) -> List[Dict[str, Any]]:
        return [
            {"kind": kind, "key": key, "filename": filename, "row": row, "count": entry["count"],
             "by_design": entry["by_design"], "steps": {name: sorted(steps) for name, steps in entry["steps"].items()}}
            for (kind, key, filename, row), entry in list(self.events.items())
        ]

    def raised_json(self) -> List[Dict[str, Any]]:
        return [{"op": op, "filename": filename, "row": row, "count": count, "fallback_write": write}
                for (op, filename, row, write), count in list(self.raised.items())]


def sync_kind(func: Any, args: tuple, kwargs: Dict[str, Any], on_device: Callable[[Any], bool]) -> Optional[str]:
    """The host sync an op forces when its input is on the device, or None."""
    name = func._schema.name
    if not args:
        return None
    source = args[0]
    if name == "aten::_local_scalar_dense" or name in _SCALAR_READS:
        return "item" if any(on_device(a) for a in args[:2]) else None
    if name in ("aten::_to_copy", "aten::to"):
        device = kwargs.get("device")
        if on_device(source) and device is not None and torch.device(device).type == "cpu":
            return "to_host"
        return None
    if name in ("aten::copy_", "aten::_copy_from"):
        target, src = (args[0], args[1]) if len(args) > 1 else (None, None)
        if isinstance(target, torch.Tensor) and target.device.type == "cpu" and on_device(src):
            return "to_host"
        return None
    if name == "aten::bincount":
        minlength = args[2] if len(args) > 2 else kwargs.get("minlength", 0)
        return "data_dependent" if on_device(source) and not minlength else None
    if name in _DATA_DEPENDENT:
        if name == "aten::repeat_interleave" and kwargs.get("output_size") is not None:
            return None
        return "data_dependent" if any(on_device(a) for a in _arguments(args, {})) else None
    if name in _BOOL_INDEXED and on_device(source) and len(args) > 1:
        indices = args[1] or ()
        if any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices):
            return "data_dependent"
    return None


class ProbeMode(TorchDispatchMode):
    """Counts and classifies every op; with an oracle (a real Mac), decides CPU fallbacks per op.

    ``device`` is the device type whose tensors count as "on the device":
    ``mps``, or ``cpu`` in tests that drive the real-device logic without a Mac.
    """

    def __init__(self, recorder: Recorder, *, oracle: Optional[KernelOracle] = None, fallback: bool = True,
                 device: str = "mps", max_ops: Optional[int] = None, nested: bool = False,
                 triggers: Optional[Any] = None) -> None:
        super().__init__()
        self.triggers = triggers  # a silent_wrong.Triggers: known silently-wrong calls of this torch
        self.recorder = recorder
        self.oracle = oracle
        self.fallback = fallback
        self.device = device
        self.max_ops = max_ops
        self.nested = nested

    def on_device(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and value.device.type == self.device

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        recorder = self.recorder
        device = self.device
        on_device = any(isinstance(a, torch.Tensor) and a.device.type == device for a in _arguments(args, kwargs)) \
            or _names_device(kwargs.get("device"), device)
        if not self.nested:
            recorder.ops += 1
            recorder.ops_on_device += on_device
            if self.max_ops is not None and recorder.ops > self.max_ops:
                raise StepBudget(f"--max-ops {self.max_ops}")
        kind = sync_kind(func, args, kwargs, self.on_device)
        if kind is not None:
            recorder.record("sync", kind)
        if on_device and self.triggers is not None:
            self.triggers.check(func, args, kwargs, recorder.wrong)
        try:
            if on_device and self.oracle is not None:
                decision = self.oracle.decide(func)
                if decision.kind == EXPLICIT_FALLBACK or (decision.kind == MISSING and self.fallback):
                    recorder.fallback(decision.op)
                elif decision.kind == COMPOSITE:
                    # Its kernel is what the device runs too; its ops are where a fallback may hide.
                    with ProbeMode(recorder, oracle=self.oracle, fallback=self.fallback, device=self.device,
                                   nested=True, triggers=self.triggers):
                        return func._op_dk(decision.key, *args, **kwargs)
            return func(*args, **kwargs)
        except NotImplementedError as exc:
            # Seen as it is raised, so a script that catches it (and runs the op on the CPU) is seen too;
            # the outermost mode records it once.
            op = None if self.nested else messages.unimplemented_op(str(exc))
            if op is not None:
                recorder.unimplemented(op)
            raise


def _names_device(value: Any, device: str) -> bool:
    if value is None:
        return False
    try:
        return torch.device(value).type == device
    except (RuntimeError, TypeError):
        return False


def install_warning_hook(recorder: Recorder) -> Callable[[], None]:
    """Fallback warnings wherever they surface (C++ warnings do after the binding returns); returns the undo."""
    original = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        op = messages.fallback_op(text)
        if op is not None:
            recorder.warned(op, sys._getframe(1))
        elif messages.autocast_disabled(text):
            # warnings.warn(..., stacklevel=2) names the line that built the autocast: the user's, when it is theirs.
            if filename and recorder.is_user_file(filename):
                where = (os.path.abspath(filename), lineno)
            else:
                where = recorder.locate(sys._getframe(1))[0]
            recorder.record("warning", "autocast-disabled", where)
        return original(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning

    def undo() -> None:
        if warnings.showwarning is showwarning:
            warnings.showwarning = original

    return undo


def install_print_hook(recorder: Recorder, device: str = "mps") -> Callable[[], None]:
    """print(t)/str(t)/repr(t) of a device tensor copies it to the host, under a guard that hides it from dispatch
    modes (``torch/_tensor_str.py`` disables them)."""
    from torch import _tensor_str

    original = _tensor_str._str

    def _str(self, *, tensor_contents=None):
        if isinstance(self, torch.Tensor) and self.device.type == device and self.numel():
            recorder.record("sync", "to_host")
        return original(self, tensor_contents=tensor_contents)

    _tensor_str._str = _str

    def undo() -> None:
        if _tensor_str._str is _str:
            _tensor_str._str = original

    return undo


def install_compile_hook(recorder: Recorder) -> None:
    """torch.compile under a dispatch mode runs eagerly (Dynamo skips the frames): remember where it was asked."""
    compile_ = getattr(torch, "compile", None)
    if compile_ is None:
        return

    def compile(*args, **kwargs):
        recorder.compile_calls.append(recorder.locate(sys._getframe(1))[0])
        return compile_(*args, **kwargs)

    compile.__wrapped__ = compile_  # type: ignore[attr-defined]
    torch.compile = compile


def _is_model_step(module: Any, fetching: int) -> bool:
    """A top-level module call that is a step of the loop: a module with parameters (a model, not a loss or a
    transform), called outside a DataLoader's batch fetch and outside its worker processes (where a Dataset calls its
    transforms, torchvision's are modules)."""
    if fetching:
        return False
    from torch.utils.data import get_worker_info

    if get_worker_info() is not None:
        return False
    return next(iter(module.parameters()), None) is not None


def install_clocks(recorder: Recorder, max_steps: Optional[int]) -> None:
    """Step clocks, and ``--max-steps``: every DataLoader iteration ends after N batches; a script without a
    DataLoader stops after N optimizer steps (or N top-level calls of a model: a module with parameters, outside
    a DataLoader's fetch)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.utils.data import dataloader

    def over_budget(clock: str) -> None:
        if max_steps is not None and recorder.clocks["batches"] == 0 and recorder.clocks[clock] >= max_steps \
                and (clock == "optimizer" or recorder.clocks["optimizer"] == 0):
            raise StepBudget(f"--max-steps {max_steps}")

    def optimizer_step(*_: Any) -> None:
        recorder.tick("optimizer")
        over_budget("optimizer")

    register_optimizer_step_post_hook(optimizer_step)

    base = dataloader._BaseDataLoaderIter
    original_next = base.__next__

    fetching = [0]  # > 0 while a DataLoader fetches a batch: the dataset's modules (transforms) are no step

    def __next__(self):
        taken = getattr(self, "_mpslint_taken", 0)
        if max_steps is not None and taken >= max_steps:
            raise StopIteration
        fetching[0] += 1
        try:
            batch = original_next(self)
        finally:
            fetching[0] -= 1
        self._mpslint_taken = taken + 1
        recorder.tick("batches")
        return batch

    base.__next__ = __next__

    depth = [0]

    def pre(module, args):
        depth[0] += 1

    def post(module, args, output):
        depth[0] = max(0, depth[0] - 1)
        if depth[0] == 0 and _is_model_step(module, fetching[0]):
            recorder.tick("forward")
            over_budget("forward")

    torch.nn.modules.module.register_module_forward_pre_hook(pre)
    torch.nn.modules.module.register_module_forward_hook(post, always_call=True)


def install_sync_hooks(recorder: Recorder) -> None:
    """Explicit synchronize calls; they are not aten ops, so no dispatch mode sees them."""
    owners = [(torch.mps, "synchronize")]
    if hasattr(torch, "accelerator") and hasattr(torch.accelerator, "synchronize"):
        owners.append((torch.accelerator, "synchronize"))
    for owner, name in owners:
        original = getattr(owner, name)

        def synchronize(*args, _original=original, **kwargs):
            recorder.record("sync", "synchronize")
            return _original(*args, **kwargs)

        setattr(owner, name, synchronize)
