"""What happens on the device, attributed to the user's lines.

``Recorder`` counts events per (kind, key, line of the user's script) and keeps,
for each, the steps in which it happened. A *step* is read from three clocks,
the first that moved wins (``report.step_clock``): optimizer steps
(``Optimizer.step`` post hooks), ``DataLoader`` batches, top-level
``nn.Module`` forward calls. ``ProbeMode`` sees every aten op: host syncs
(``_local_scalar_dense`` for ``.item()``/``float()``/``bool()``, copies to the
host, data-dependent shapes) and, through the warnings each op emits, CPU
fallbacks -- PyTorch's warning on a Mac, the simulator's identical one under
``--simulate``.
"""

from __future__ import annotations

import sys
import threading
import warnings
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from mpslint.verify import messages
from mpslint.verify.report import CLOCKS

_DATA_DEPENDENT = {
    "aten::nonzero", "aten::masked_select", "aten::_unique", "aten::_unique2", "aten::unique_dim",
    "aten::unique_consecutive", "aten::repeat_interleave",
}
# Syncs PyTorch makes on purpose, once per step, on every device: GradScaler.step
# reads found_inf to decide whether to skip the optimizer step. Reported, never hot.
BY_DESIGN = ("torch/amp/grad_scaler.py", "torch/cuda/amp/grad_scaler.py")

_BOOL_INDEXED = {"aten::index", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_"}


def _on_device(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == "mps"


class Recorder:
    def __init__(self, script: str) -> None:
        self.script = script
        self.events: Dict[Tuple[str, str, Optional[int]], Dict[str, Any]] = {}
        self.clocks: Dict[str, int] = {name: 0 for name in CLOCKS}
        self.main_thread = threading.main_thread().ident
        self.lines: Set[int] = set()

    def row(self) -> Optional[int]:
        """The line of the innermost frame in the user's script (the main thread's, from a worker thread)."""
        return self.locate()[0]

    def locate(self) -> Tuple[Optional[int], bool]:
        """(user's line, whether a by-design PyTorch sync site lies between it and the op)."""
        found = self._row_in(sys._getframe(1))
        if found[0] is None and threading.get_ident() != self.main_thread:
            found = self._row_in(sys._current_frames().get(self.main_thread))
        return found

    def _row_in(self, frame: Any) -> Tuple[Optional[int], bool]:
        by_design = False
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename == self.script:
                return frame.f_lineno, by_design
            if filename.replace("\\", "/").endswith(BY_DESIGN):
                by_design = True
            frame = frame.f_back
        return None, by_design

    def record(self, kind: str, key: str, row: Optional[int] = None) -> None:
        by_design = False
        if row is None:
            row, by_design = self.locate()
        entry = self.events.get((kind, key, row))
        if entry is None:
            entry = self.events[(kind, key, row)] = {"count": 0, "steps": {name: set() for name in CLOCKS},
                                                     "by_design": 0}
        entry["count"] += 1
        entry["by_design"] += by_design
        for name in CLOCKS:
            entry["steps"][name].add(self.clocks[name])

    def tick(self, clock: str) -> None:
        self.clocks[clock] += 1

    def as_json(self) -> List[Dict[str, Any]]:
        return [
            {"kind": kind, "key": key, "row": row, "count": entry["count"], "by_design": entry["by_design"],
             "steps": {name: sorted(steps) for name, steps in entry["steps"].items()}}
            for (kind, key, row), entry in self.events.items()
        ]


def sync_kind(func: Any, args: tuple, kwargs: Dict[str, Any]) -> Optional[str]:
    """The host sync an op forces when its input is on the device, or None."""
    name = func._schema.name
    if not args:
        return None
    source = args[0]
    if name == "aten::_local_scalar_dense":
        return "item" if _on_device(source) else None
    if name in ("aten::_to_copy", "aten::to"):
        device = kwargs.get("device")
        if _on_device(source) and device is not None and torch.device(device).type == "cpu":
            return "to_host"
        return None
    if name in ("aten::copy_", "aten::_copy_from"):
        target, src = (args[0], args[1]) if len(args) > 1 else (None, None)
        if isinstance(target, torch.Tensor) and target.device.type == "cpu" and _on_device(src):
            return "to_host"
        return None
    if name in _DATA_DEPENDENT:
        if name == "aten::repeat_interleave" and kwargs.get("output_size") is not None:
            return None
        return "data_dependent" if any(_on_device(a) for a in pytree.tree_leaves(args)) else None
    if name in _BOOL_INDEXED and _on_device(source) and len(args) > 1:
        indices = args[1] or ()
        if any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices):
            return "data_dependent"
    return None


class ProbeMode(TorchDispatchMode):
    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.recorder = recorder
        # set_warn_always(True) makes PyTorch's warn-once warnings repeat; a registry
        # gives them back the once-per-location of Python's default filter.
        self.registry: Dict[Any, Any] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        kind = sync_kind(func, args, kwargs)
        if kind is not None:
            self.recorder.record("sync", kind)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = func(*args, **kwargs)
        for warning in caught:
            op = messages.fallback_op(str(warning.message))
            if op is not None:
                self.recorder.record("fallback", op)
            else:  # not ours: back through the script's own filters
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno,
                                       registry=self.registry, source=warning.source)
        return out


def install_clocks(recorder: Recorder, max_steps: Optional[int]) -> None:
    """Step clocks, and ``--max-steps``: every DataLoader iteration ends after N batches."""
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from torch.utils.data import dataloader

    register_optimizer_step_post_hook(lambda *_: recorder.tick("optimizer"))

    base = dataloader._BaseDataLoaderIter
    original_next = base.__next__

    def __next__(self):
        taken = getattr(self, "_mpslint_taken", 0)
        if max_steps is not None and taken >= max_steps:
            raise StopIteration
        batch = original_next(self)
        self._mpslint_taken = taken + 1
        recorder.tick("batches")
        return batch

    base.__next__ = __next__

    depth = [0]

    def pre(module, args):
        depth[0] += 1

    def post(module, args, output):
        depth[0] = max(0, depth[0] - 1)
        if depth[0] == 0:
            recorder.tick("forward")

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


def install_line_tracer(recorder: Recorder) -> None:
    """Which lines of the script ran: a static finding on a line that never ran is "not-reached"."""
    script = recorder.script
    lines = recorder.lines
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:  # Python >= 3.12: each location reports once, then is disabled
        tool = monitoring.PROFILER_ID
        try:
            monitoring.use_tool_id(tool, "mpslint-verify")
        except ValueError:  # the id is taken (a profiler or coverage runs the verifier): fall back to settrace
            pass
        else:
            def on_line(code, line):
                if code.co_filename == script:
                    lines.add(line)
                return monitoring.DISABLE

            monitoring.register_callback(tool, monitoring.events.LINE, on_line)
            monitoring.set_events(tool, monitoring.events.LINE)
            return

    def local(frame, event, arg):
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    def global_trace(frame, event, arg):
        if frame.f_code.co_filename == script:
            lines.add(frame.f_lineno)
            return local
        return None

    sys.settrace(global_trace)
    threading.settrace(global_trace)


def remove_line_tracer() -> None:
    sys.settrace(None)
    threading.settrace(None)  # type: ignore[arg-type]
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None and monitoring.get_tool(monitoring.PROFILER_ID) == "mpslint-verify":
        monitoring.set_events(monitoring.PROFILER_ID, 0)
        monitoring.free_tool_id(monitoring.PROFILER_ID)
