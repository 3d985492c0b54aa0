"""An emulated ``mps`` device for machines without one (``mpslint verify --simulate``).

Tensors on the emulated device are ``SimulatedMPSTensor``: ordinary CPU tensors
underneath (so autograd, optimizers and numerics are the CPU's) that report
``device='mps:0'``. Every op that touches one is checked against the MPS kernel
table of the installed torch before it runs, and fails or warns the way PyTorch
on a Mac does, with PyTorch's own texts (``messages``):

* no MPS kernel: ``NotImplementedError``, or with ``PYTORCH_ENABLE_MPS_FALLBACK=1``
  the fallback ``UserWarning`` and a CPU run;
* a float64 tensor allocated on the device: ``TypeError``;
* an op mixing a device tensor with a non-scalar CPU tensor: ``RuntimeError``;
* ``.numpy()`` on a device tensor: ``TypeError``.

Placement reaches the device through the dispatcher: a factory with
``device="mps"`` and ``_to_copy(..., device="mps")`` (which ``.to("mps")``,
``.to(device)`` and ``nn.Module.to`` all end in) arrive at ``_DeviceMode``,
which computes on the CPU and wraps the result. ``platform_patches`` makes
torch report what a Mac reports: MPS available and built, no CUDA.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode
from torch.utils._mode_utils import no_dispatch
from torch.utils._python_dispatch import TorchDispatchMode

from mpslint.verify import messages, restrictions
from mpslint.verify.kernels import COMPOSITE, EXPLICIT_FALLBACK, MISSING, KernelOracle


def _leaves(tree: Any) -> List[Any]:
    return pytree.tree_flatten(tree)[0]  # tree_leaves is newer than the oldest torch supported (2.1)

MPS = torch.device("mps", 0)
CPU = torch.device("cpu")

# What the emulation cannot reproduce; printed with every simulated report.
LIMITATIONS = (
    "simulated mps: ops run on the CPU, so speed, memory and numerics are not emulated; checks that depend on the "
    "macOS version are emulated as on the oldest macOS this torch supports",
    "simulated mps: of the restrictions inside existing MPS kernels, these are emulated: the dtype limits PyTorch's "
    "own MPS tests expect (a table generated from common_mps.py, for the ops it can name), non-float linear, "
    "non-float and oversized convolutions, ConvTranspose3d in fp16/bf16, adaptive pooling with non-divisible "
    "sizes, float64 and complex128; other checks inside kernels (shapes, strides, arguments) are not",
    "simulated mps: autocast(device_type=\"mps\") does not lower precision; torch.Generator(device=\"mps\"), "
    "torch.load(map_location=\"mps\") and device moves inside torch's own Python code are not emulated; tensors "
    "saved from mps load back on the CPU (a Mac loads them on mps)",
)

_aten = torch.ops.aten

# Ops whose arguments legitimately mix devices: copies between host and device,
# and indexing, whose CPU index tensors PyTorch moves to the indexed tensor's device.
_MIXING_OK = {
    "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::_to_copy", "aten::to",
    "aten::index", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_", "aten::set_",
    "aten::lift_fresh", "aten::lift_fresh_copy", "aten::_has_compatible_shallow_copy_type",
}

# Public entry points that reach ``linalg_svd``, which aten/src/ATen/mps/MPSFallback.mm
# registers on the MPS key with the CPU fallback (it warns, with or without the
# switch); on the CPU build it decomposes before the dispatcher could tell, so it
# is recognised here.
_SVD_ENTRY_POINTS = (
    torch.linalg.svd, torch.svd, torch.Tensor.svd, torch.pinverse, torch.Tensor.pinverse, torch.linalg.pinv,
)


def _hermitian(func: Any, args: tuple, kwargs: Dict[str, Any]) -> bool:
    """``linalg.pinv(A, hermitian=True)`` (``linalg.pinv(A, rcond, True)``) takes linalg_eigh, not linalg_svd:
    _linalg_eigh has no MPS kernel and no by-design fallback."""
    if func is not torch.linalg.pinv:
        return False
    return bool(kwargs.get("hermitian", len(args) > 2 and isinstance(args[2], bool) and args[2]))


def _is_mps(device: Any) -> bool:
    if device is None:
        return False
    try:
        return torch.device(device).type == "mps"
    except (RuntimeError, TypeError):
        return False


class SimulatedMPSTensor(torch.Tensor):
    """A CPU tensor that reports the ``mps`` device; its ops go through ``Simulator.dispatch``."""

    simulator: "Simulator"
    __torch_function__ = torch._C._disabled_torch_function_impl

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return MPS

    @property
    def is_mps(self) -> bool:  # type: ignore[override]
        return True

    @property
    def is_cpu(self) -> bool:  # type: ignore[override]
        return False

    def get_device(self) -> int:  # type: ignore[override]
        return 0

    # Methods, not Router cases: torch's own Python code (printing) calls them
    # while the Router is suspended.
    def numpy(self, *, force: bool = False):  # type: ignore[override]
        raise TypeError(messages.NUMPY)

    def __array__(self, dtype: Any = None, copy: Any = None):  # type: ignore[override]
        raise TypeError(messages.NUMPY)

    def tolist(self):  # type: ignore[override]
        return _to_host(self).tolist()

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        # torch prints a subclass under its class name; a Mac prints tensor(..., device='mps:0').
        text = torch._tensor_str._str(self, tensor_contents=tensor_contents)
        name = type(self).__name__
        if not text.startswith(name + "("):
            return text
        shift = len(name) - len("tensor")
        lines = text.split("\n")
        return "\n".join(["tensor" + lines[0][len(name):]] + [line[shift:] if line[:shift].isspace() else line
                                                             for line in lines[1:]])

    def __format__(self, spec: str) -> str:
        if self.dim() == 0:
            return self.detach().item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, proto: Any):
        # torch.save: pickled as the host tensor it holds, a plain tensor that a weights-only torch.load
        # accepts (this class is no allowed global). A Mac tags the storage "mps" and loads it back there;
        # here it loads on the CPU, where load_state_dict copies it into the model's device tensors.
        with torch.no_grad():
            host = _to_host(self.detach())
        host.requires_grad_(self.requires_grad)
        return host.__reduce_ex__(proto)

    # Makes nn.Module.to() swap parameters in place (torch.utils.swap_tensors), as
    # set_data does on a real device, so optimizers built before .to() keep working.
    def __tensor_flatten__(self) -> Tuple[List[str], None]:
        return [], None

    @staticmethod
    def __tensor_unflatten__(inner: Dict[str, Any], meta: Any, size: Any, stride: Any) -> "SimulatedMPSTensor":
        raise NotImplementedError("a simulated mps tensor has no inner tensors")

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[override]
        return cls.simulator.dispatch(func, args, kwargs or {})


class Simulator:
    def __init__(self, oracle: KernelOracle, *, fallback: bool,
                 on_fallback: Optional[Callable[[str], None]] = None) -> None:
        self.oracle = oracle
        self.fallback = fallback
        self.on_fallback = on_fallback  # told each op that runs on the CPU (the probe records it)
        self.version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
        self.sha = getattr(torch.version, "git_version", "") or "unknown"
        self.explicit_depth = 0  # > 0 inside an explicit CPU fallback run by the Router
        # > 0 inside a composite kernel: its scratch tensors come from CPU tensor
        # options (they would be on the device on a Mac), so devices were checked
        # once, on the composite's own arguments.
        self.composite_depth = 0
        # Composite kernels running on a device tensor, innermost last ("aten::one_hot"): the factory
        # calls they make with the input's options (CPU underneath) create scratch tensors that a Mac
        # creates on the device, so ``_DeviceMode`` places them there.
        self.composites: List[Optional[str]] = []  # None: a copy

    # -- the device -------------------------------------------------------
    def to_device(self, tensor: torch.Tensor) -> torch.Tensor:
        """Allocate ``tensor``'s data "on the device": empty_mps's dtype checks, then the wrapper."""
        _check_dtype(tensor.dtype)
        return torch.Tensor._make_subclass(SimulatedMPSTensor, tensor)

    def dispatch(self, func, args, kwargs):
        if func.namespace == "c10d":
            _check_collective(args)
        # The dispatcher picks the kernel first: the boxed CPU fallback moves every
        # argument to the CPU itself, so only a real MPS kernel checks devices.
        decision = self.oracle.decide(func)
        if _names_cpu(kwargs.get("device")) and (
                (func is _aten._to_copy.default and self.composites and self.composites[-1])
                or (func._schema.name not in _MIXING_OK and self.in_formula())
                or (func is _aten._to_copy.default and self.in_formula()
                    and _node_on_device(torch._C._current_autograd_node()))):  # a copy goes where it is asked
            # ``t.to(t.options().dtype(...))`` in a composite, ``grad.new_zeros(sizes, grad.options())`` in a backward
            # formula: the options name the device tensor's device, which C++ sees as the CPU; mps on a Mac.
            # ToCopyBackward0 copies to the forward input's options: a dtype change only, as moves between the
            # devices are the simulator's own autograd Functions (_ToDevice, _ToHost), never this C++ node.
            kwargs = dict(kwargs, device=MPS)
        if decision.kind == COMPOSITE:
            self._check_devices(func, args, kwargs)
            restrictions.before(func, args, kwargs)
            self.composite_depth += 1
            # A copy's composite (_to_copy to the CPU) makes its result where it was asked: no scratch there.
            moves = func._schema.name in _MIXING_OK or ("device" in kwargs and not _is_mps(kwargs["device"]))
            self.composites.append(None if moves else func._schema.name)
            try:
                with _DeviceMode(self):
                    out = func._op_dk(decision.key, *args, **kwargs)
            finally:
                self.composite_depth -= 1
                self.composites.pop()
            restrictions.after(func, args, kwargs, out)
            return self._wrap(args, kwargs, out)
        if not self._falls_back(decision):
            self._check_devices(func, args, kwargs)
            restrictions.before(func, args, kwargs)
        with no_dispatch():
            func, args = _scalar_overload(func, args)
            out = func(*args, **_cpu_kwargs(kwargs))
        if decision.kind not in (MISSING, EXPLICIT_FALLBACK):
            restrictions.after(func, args, kwargs, out)
        return self._wrap(args, kwargs, out)

    def factory(self, func, args, kwargs):
        """An op asked to create its result on the device (``device="mps"``)."""
        decision = self.oracle.decide(func)
        if decision.kind == COMPOSITE:
            with _DeviceMode(self):
                return func._op_dk(decision.key, *args, **kwargs)
        self._falls_back(decision)
        if kwargs.get("dtype") is not None:
            _check_dtype(kwargs["dtype"])
        out = func(*args, **_cpu_kwargs(kwargs))
        return self._wrap(args, {}, out)

    @staticmethod
    def in_formula() -> bool:
        """Whether the op is called by a C++ backward formula (IndexSelectBackward0's ``grad.new_zeros``): a node of
        C++ autograd is running, not a Python ``autograd.Function``'s backward, whose options are the user's."""
        current = getattr(torch._C, "_current_autograd_node", None)
        node = current() if current is not None else None
        return node is not None and not isinstance(node, torch.autograd.function.BackwardCFunction)

    # -- checks ------------------------------------------------------------
    def _falls_back(self, decision) -> bool:
        """Whether the op runs through PyTorch's CPU fallback (raising first when the switch is off)."""
        if self.explicit_depth or decision.kind not in (MISSING, EXPLICIT_FALLBACK):
            return False
        if decision.kind == MISSING and not self.fallback:
            raise NotImplementedError(messages.not_implemented(decision.op, self.version, self.sha))
        if self.on_fallback is not None:
            self.on_fallback(decision.op)
        warn_from_user(messages.FALLBACK_WARNING.format(op=decision.op))
        return True

    def _check_devices(self, func, args, kwargs) -> None:
        if self.composite_depth or func._schema.name in _MIXING_OK:
            return
        order: List[str] = []
        for leaf in _leaves((args, kwargs)):
            if isinstance(leaf, SimulatedMPSTensor):
                order.append("mps:0")
            elif isinstance(leaf, torch.Tensor) and leaf.device.type == "cpu" and leaf.dim() > 0:
                order.append("cpu")
        if "mps:0" not in order or "cpu" not in order:
            return
        if torch.Tag.pointwise in func.tags:
            second = "cpu" if order[0] == "mps:0" else "mps:0"
            raise RuntimeError(messages.SAME_DEVICE.format(first=order[0], second=second))
        if func._schema.name in ("aten::convolution", "aten::_convolution") and args and args[0].dim() == 4 \
                and not isinstance(args[0], SimulatedMPSTensor):
            raise RuntimeError(messages.SLOW_CONV2D)
        raise RuntimeError(messages.PLACEHOLDER)

    def _wrap(self, args, kwargs, out):
        to_host = "device" in kwargs and kwargs["device"] is not None and not _is_mps(kwargs["device"])
        inputs = {id(t) for t in _leaves((args, kwargs)) if isinstance(t, torch.Tensor)}

        def wrap(t: torch.Tensor) -> torch.Tensor:
            if isinstance(t, SimulatedMPSTensor) or id(t) in inputs or to_host or t.device.type != "cpu":
                return t
            return self.to_device(t)

        return pytree.tree_map_only(torch.Tensor, wrap, out)


def _check_collective(args: tuple) -> None:
    """A collective on device tensors asks its process group for the backend of ``mps``, as ProcessGroup::getBackend
    does with the tensors' device on a Mac: gloo (``cpu:gloo``) has none, and raises PyTorch's own error."""
    try:
        from torch.distributed import ProcessGroup
    except ImportError:
        return
    unbox = getattr(ProcessGroup, "unbox", None)
    if unbox is None:
        return
    for value in args:
        if isinstance(value, torch.ScriptObject):
            try:
                group = unbox(value)
            except (RuntimeError, TypeError):
                continue
            group._get_backend(MPS)  # "No backend type associated with device type mps"


def _scalar_overload(func: Any, args: tuple) -> Tuple[Any, tuple]:
    """What a ``.Tensor`` overload that received a number computes: the ``.Scalar`` overload, or a 0-dim tensor.

    A composite kernel passes C++ "wrapped number" tensors, which reach Python
    as plain numbers; the Scalar overload computes what the wrapped number would.
    A number in ``self`` (``100 - t`` is ``rsub``, which calls ``sub(wrapped, t)``)
    has no Scalar overload to go to: it becomes a 0-dim tensor of the dtype the
    wrapped number promotes to (``torch.result_type``), so the result's dtype is the same.
    """
    if func._overloadname != "Tensor":
        return func, args
    for index, (value, argument) in enumerate(zip(args, func._schema.arguments)):
        if isinstance(value, (int, float, bool, complex)) and str(argument.type) == "Tensor":
            if index == 0:
                other = next((a for a in args[1:] if isinstance(a, torch.Tensor)), None)
                dtype = torch.result_type(value, other) if other is not None else None
                return func, (torch.tensor(value, dtype=dtype),) + tuple(args[1:])
            return getattr(func.overloadpacket, "Scalar", func), args
    return func, args


def _numbers_as_tensors(func: Any, args: tuple) -> tuple:
    """A ``.Tensor`` overload's numbers (C++ wrapped numbers) as the 0-dim tensors they stand for, of the dtype the
    number promotes to with the op's first tensor (``torch.result_type``): the result's dtype is the same. A
    ``.Scalar`` overload would do as well, except for the composite ones, which call the ``.Tensor`` one again."""
    if func._overloadname != "Tensor" or not any(isinstance(a, (int, float, bool, complex)) for a in args):
        return args
    other = next((a for a in args if isinstance(a, torch.Tensor)), None)
    converted = []
    for value, argument in zip(args, func._schema.arguments):
        if isinstance(value, (int, float, bool, complex)) and str(argument.type) == "Tensor":
            dtype = torch.result_type(value, other) if other is not None else None
            with no_dispatch():
                value = torch.tensor(value, dtype=dtype)
        converted.append(value)
    return tuple(converted) + tuple(args[len(converted):])


def _names_cpu(device: Any) -> bool:
    return device is not None and torch.device(device).type == "cpu"


def _cpu_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    if _is_mps(kwargs.get("device")):
        kwargs = dict(kwargs, device=CPU)
    return kwargs


class _DeviceMode(TorchDispatchMode):
    """Sends ops asked to create tensors on ``mps`` to the simulator."""

    def __init__(self, simulator: Simulator) -> None:
        super().__init__()
        self.simulator = simulator

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not any(issubclass(t, SimulatedMPSTensor) for t in types):
            if _is_mps(kwargs.get("device")):
                return self.simulator.factory(func, args, kwargs)
            if self.simulator.composites and self.simulator.composites[-1] and _is_scratch(func, args, kwargs):
                return self.simulator.factory(func, args, _scratch_kwargs(kwargs))
        # A composite's parts that reach this mode (take_along_dim's index arithmetic) pass C++ wrapped numbers too.
        return func(*_numbers_as_tensors(func, args), **kwargs)


_BACKWARD_ENTRY_POINTS = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)


class _FormulaMode(TorchDispatchMode):
    """While a backward pass of device tensors runs: the scratch tensors a C++ backward formula creates from the
    options of a device tensor (``at::zeros(sizes, grad.options())`` in trace_backward, ``ones`` in prod_backward)
    name the CPU, which C++ sees underneath the emulated tensor; a Mac creates them on mps. A factory call with no
    tensor argument, made by a formula of a node whose graph reaches device tensors, goes to the device."""

    def __init__(self, simulator: Simulator) -> None:
        super().__init__()
        self.simulator = simulator

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not any(issubclass(t, SimulatedMPSTensor) for t in types) and _is_scratch(func, args, kwargs) \
                and self.simulator.in_formula() and _node_on_device(torch._C._current_autograd_node()):
            return self.simulator.factory(func, args, dict(kwargs, device=MPS))
        return func(*args, **kwargs)


_ON_DEVICE_KEY = "mpslint.on_device"


def _node_on_device(node: Any, limit: int = 256) -> bool:
    """Whether the autograd graph below ``node`` reaches a device tensor: the leaves it accumulates into, or a node
    already known (breadth first, at most ``limit`` nodes; the answer is kept in the nodes' metadata)."""
    seen, queue, found = set(), [node], False
    while queue and len(seen) < limit and not found:
        current = queue.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        metadata = getattr(current, "metadata", None)
        if isinstance(metadata, dict) and _ON_DEVICE_KEY in metadata:
            found = metadata[_ON_DEVICE_KEY]
            break
        variable = getattr(current, "variable", None)
        if isinstance(variable, torch.Tensor):
            found = isinstance(variable, SimulatedMPSTensor)
            break
        queue.extend(child for child, _ in getattr(current, "next_functions", ()))
    if node is not None and isinstance(getattr(node, "metadata", None), dict):
        node.metadata[_ON_DEVICE_KEY] = found
    return found


# A composite kernel picks its scratch tensors' dtype for the device it runs on: ``at::toAccumulateType(dtype,
# input.device().type())`` (aten/src/ATen/AccumulateType.h: float and double accumulate in float on MPS, in double
# on the CPU; complex64 in complex64 on MPS) in _batch_norm_impl_index's empty-input branch, and ``device().type() ==
# kMPS`` in LinearAlgebra.cpp's get_atol_rtol (pinv, matrix_rank). Running on the CPU underneath, the composite asks
# for the CPU's double; a Mac allocates the MPS accumulate type. Device tensors are never float64/complex128, so a
# double scratch tensor of a composite on them is that accumulate type.
_MPS_ACCUMULATE = {torch.float64: torch.float32, torch.complex128: torch.complex64}


def _is_scratch(func: Any, args: tuple, kwargs: Dict[str, Any]) -> bool:
    """A factory call (no tensor argument) asking for the CPU, made by a composite kernel running on a device tensor."""
    device = kwargs.get("device")
    if device is not None and torch.device(device).type != "cpu":
        return False
    if not any(argument.name == "device" for argument in func._schema.arguments):
        return False
    return not any(isinstance(leaf, torch.Tensor) for leaf in _leaves((args, kwargs)))


def _scratch_kwargs(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    kwargs = dict(kwargs, device=MPS)
    if kwargs.get("dtype") in _MPS_ACCUMULATE:
        kwargs["dtype"] = _MPS_ACCUMULATE[kwargs["dtype"]]
    return kwargs


def _has_device_tensor(args: tuple, kwargs: Dict[str, Any]) -> bool:
    return any(isinstance(leaf, SimulatedMPSTensor) for leaf in _leaves((args, kwargs)))


_IMPLICIT: Dict[str, Optional[str]] = {}
# Composites whose copies go where the caller asked, never where the input is.
_MOVES = {"to", "cpu", "type", "type_as", "new_tensor", "copy_", "to_dense", "numpy", "tolist", "item"}


def _implicit_composite(func: Any) -> Optional[str]:
    """``aten::name`` when the public function ``func`` is an aten op with a CompositeImplicitAutograd kernel."""
    name = getattr(func, "__name__", None)
    if not isinstance(name, str) or name in _MOVES:
        return None
    known = _IMPLICIT.get(name, "")
    if known != "":
        return known
    found = None
    packet = getattr(torch.ops.aten, name, None) if not name.startswith("_") else None
    if packet is not None:
        for overload in packet.overloads():
            qualified = f"aten::{name}" + ("" if overload == "default" else f".{overload}")
            try:
                implicit = torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd")
            except RuntimeError:  # an overload only TorchScript knows (aten::ne.int_list)
                continue
            if implicit:
                found = f"aten::{name}"
                break
    _IMPLICIT[name] = found
    return found


class _Router(TorchFunctionMode):
    """What must be decided above the dispatcher, where the public function is still known."""

    def __init__(self, simulator: Simulator) -> None:
        super().__init__()
        self.simulator = simulator
        self.svd_fallback = "linalg_svd" in simulator.oracle.table.explicit_cpu_fallbacks

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        first = args[0] if args else None
        on_device = isinstance(first, SimulatedMPSTensor)
        if on_device and func is torch.Tensor.cpu:
            return _to_host(first)
        if func is torch.Tensor.to and isinstance(first, torch.Tensor):
            target = _parse_to(args[1:], kwargs)
            if on_device and target is not None and target[0] is not None and target[0].type == "cpu":
                return _to_host(first, dtype=target[1])
            if target is not None and target[0] is not None and target[0].type == "mps":
                return self._to_device(first, target, bool(kwargs.get("copy") or (len(args) > 4 and args[4])))
        if func in _CONSTRUCTORS and _is_mps(kwargs.get("device")):
            return _construct_on_device(self.simulator, func, args, kwargs)
        if func in (torch.ctc_loss, torch.nn.functional.ctc_loss) and on_device and len(args) > 3 \
                and isinstance(args[2], torch.Tensor):
            return _ctc_loss_as_on_mps(self.simulator, func, args, kwargs)
        if func in (torch.nn.functional.linear, torch._C._nn.linear) and len(args) > 1:
            restrictions.linear(first, args[1], args[2] if len(args) > 2 else kwargs.get("bias"))
        if func in _BACKWARD_ENTRY_POINTS and _has_device_tensor(args, kwargs):
            with _FormulaMode(self.simulator):
                return self._call(func, args, kwargs, on_device)
        composite = _implicit_composite(func) if _has_device_tensor(args, kwargs) else None
        if composite is not None:
            # Decomposed above the dispatcher (the Autograd key): the simulator sees only its parts.
            self.simulator.composites.append(composite)
            try:
                return self._call(func, args, kwargs, on_device)
            finally:
                self.simulator.composites.pop()
        return self._call(func, args, kwargs, on_device)

    def _call(self, func, args, kwargs, on_device):
        if self.svd_fallback and func in _SVD_ENTRY_POINTS and on_device and not _hermitian(func, args, kwargs):
            if self.simulator.on_fallback is not None:
                self.simulator.on_fallback("aten::linalg_svd")
            warn_from_user(messages.FALLBACK_WARNING.format(op="aten::linalg_svd"))
            self.simulator.explicit_depth += 1
            try:
                return func(*args, **kwargs)
            finally:
                self.simulator.explicit_depth -= 1
        return func(*args, **kwargs)


    def _to_device(self, tensor: torch.Tensor, target: tuple, copy: bool) -> torch.Tensor:
        _device, dtype, _non_blocking, memory_format = target
        if isinstance(tensor, SimulatedMPSTensor):
            if not copy and (dtype is None or dtype == tensor.dtype) and memory_format is None:
                return tensor  # PyTorch returns the tensor itself when nothing changes
            return tensor.to(dtype=dtype or tensor.dtype, memory_format=memory_format or torch.preserve_format,
                             copy=copy)
        if dtype is not None or memory_format is not None:
            tensor = tensor.to(dtype=dtype or tensor.dtype, memory_format=memory_format or torch.preserve_format)
        return _ToDevice.apply(tensor, self.simulator)


_CONSTRUCTORS = (torch.tensor, torch.as_tensor)


def _construct_on_device(simulator: Simulator, func: Any, args: tuple, kwargs: Dict[str, Any]) -> torch.Tensor:
    """``torch.tensor(..., device="mps")``: the C++ constructor hides from dispatch modes and would look for a device
    guard the CPU build does not have."""
    requires_grad = bool(kwargs.get("requires_grad", False))
    host = dict(kwargs, device=CPU)
    host.pop("requires_grad", None)
    with torch.no_grad():
        tensor = simulator.to_device(func(*args, **host))
    return tensor.requires_grad_(requires_grad)


def _constructor(simulator: Simulator, original: Any) -> Any:
    """``torch.tensor``/``torch.as_tensor`` as torch's own Python code calls them too (``torch.functional``'s
    ``unravel_index`` makes ``torch.tensor(..., device=indices.device)``), where no torch function mode runs."""

    def construct(*args: Any, **kwargs: Any) -> torch.Tensor:
        if _is_mps(kwargs.get("device")):
            return _construct_on_device(simulator, original, args, kwargs)
        return original(*args, **kwargs)

    construct.__doc__ = original.__doc__
    construct.__wrapped__ = original  # type: ignore[attr-defined]
    return construct


def _ctc_loss_as_on_mps(simulator: Simulator, func: Any, args: tuple, kwargs: Dict[str, Any]) -> torch.Tensor:
    """ctc_loss with tensor lengths, down the path a Mac takes (aten/src/ATen/native/LossCTC.cpp).

    The Tensor-lengths overload copies the lengths to the CPU and calls the
    IntArrayRef one, which moves the targets to the log-probs' device, calls
    ``_ctc_loss`` and reduces with a lengths tensor made on that device. For a
    tensor subclass PyTorch takes another path, which no Mac takes.
    """
    functional = func is torch.nn.functional.ctc_loss
    names = ("blank", "reduction", "zero_infinity")
    rest = dict(zip(names, args[4:]), **kwargs)
    reduction = rest.pop("reduction", "mean" if functional else 1)
    reduction = reduction if isinstance(reduction, str) else {0: "none", 1: "mean", 2: "sum"}[int(reduction)]
    input_lengths, target_lengths = ([int(v) for v in t.to("cpu", torch.long).tolist()] for t in args[2:4])
    per_sample = func(args[0], args[1], input_lengths, target_lengths, reduction="none" if functional else 0,
                      **rest) if functional else func(args[0], args[1], input_lengths, target_lengths,
                                                      rest.get("blank", 0), 0, rest.get("zero_infinity", False))
    if reduction == "mean":
        divisor = simulator.to_device(torch.tensor(target_lengths, dtype=per_sample.dtype)).clamp_min(1)
        return (per_sample / divisor).mean()
    return per_sample.sum() if reduction == "sum" else per_sample


class _ToDevice(torch.autograd.Function):
    """The host-to-device copy; its gradient is the device-to-host copy, as for ``_to_copy``."""

    @staticmethod
    def forward(ctx, tensor, simulator):  # type: ignore[override]
        return simulator.to_device(tensor.detach().clone())

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        # grad.to("cpu") would return the device gradient itself (C++ sees a CPU tensor): the input's leaves then
        # got device gradients, and formulas below mixed them with their own CPU tensors.
        return _to_host(grad), None


def _to_host(tensor: torch.Tensor, dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """The device-to-host copy. C++ sees a CPU tensor and would return it unchanged."""
    if tensor.requires_grad and torch.is_grad_enabled():
        return _ToHost.apply(tensor, dtype)
    return torch.ops.aten._to_copy.default(tensor, device=CPU, dtype=dtype)


class _ToHost(torch.autograd.Function):
    """The device-to-host copy; its gradient goes back to the device, as ToCopyBackward0's does on a Mac (C++ would
    see the CPU as the input's device and leave it there: ``loss(out.cpu(), y).backward()`` then gave the
    parameters CPU gradients)."""

    @staticmethod
    def forward(ctx, tensor, dtype):  # type: ignore[override]
        ctx.dtype = tensor.dtype
        return torch.ops.aten._to_copy.default(tensor, device=CPU, dtype=dtype)

    @staticmethod
    def backward(ctx, grad):  # type: ignore[override]
        return SimulatedMPSTensor.simulator.to_device(grad.to(ctx.dtype)), None


def _parse_to(args: tuple, kwargs: Dict[str, Any]) -> Optional[tuple]:
    """(device, dtype, non_blocking, memory_format) of a ``Tensor.to`` call, as PyTorch parses it."""
    args = args[:3] if len(args) > 3 else args
    rest = {k: v for k, v in kwargs.items() if k != "copy"}
    try:
        return torch._C._nn._parse_to(*args, **rest)
    except (TypeError, RuntimeError):
        return None


class _Event:
    """``torch.mps.Event`` on the emulated device: there is nothing to wait for."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.enable_timing = enable_timing

    def record(self) -> None:
        pass

    def wait(self) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end_event: "_Event") -> float:
        return 0.0


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _capture_enabled() -> bool:
    """MPSProfiler::isCaptureEnabled asks Metal whether it can write a GPU trace document: only with
    MTL_CAPTURE_ENABLED=1 in the environment."""
    return os.environ.get("MTL_CAPTURE_ENABLED") == "1"


class _MetalCapture:
    """``torch.mps.profiler.metal_capture`` (MPSProfiler::startCapture/stopCapture, aten/src/ATen/mps/MPSProfiler.mm):
    refused as Metal refuses it without MTL_CAPTURE_ENABLED=1; with it, nothing is written (no GPU to trace)."""

    def __init__(self) -> None:
        self.count = 0
        self.capturing = False

    def start(self, name: str) -> None:
        fname = f"{self.count:04d}-{name}.gputrace"
        self.count += 1
        if not _capture_enabled():
            raise RuntimeError(messages.CAPTURE_FAILED.format(
                fname=fname, error="(MTL_CAPTURE_ENABLED=1 is not set: Metal cannot capture to a GPU trace document)"))
        self.capturing = True

    def stop(self) -> None:
        self.capturing = False

    def is_capturing(self) -> bool:
        return self.capturing


def _grouping(original: Any) -> Any:
    """Optimizers and clip_grad_norm_ group tensors by device in C++, which sees the CPU; report mps."""

    def group(tensorlistlist: Any, with_indices: bool = False) -> Any:
        grouped = original(tensorlistlist, with_indices)
        remapped = {}
        for (device, dtype), value in grouped.items():
            tensors = [t for tensors in value[0] for t in tensors if t is not None]
            if device.type == "cpu" and any(isinstance(t, SimulatedMPSTensor) for t in tensors):
                device = MPS
            remapped[(device, dtype)] = value
        return remapped

    return group


def _module_apply(original: Any) -> Any:
    """``nn.Module._apply`` that replaces the parameters it cannot swap in place.

    A Mac moves parameters with ``param.data = ...`` (set_data), which never
    fails; the emulated device swaps them (``__tensor_flatten__``), which fails
    for a parameter something else holds: the legacy ``weight_norm`` hook's
    computed weight, a ScriptModule's C++ slots. Those are replaced in the
    module by a new Parameter, as ``_apply`` does for a type change.
    """
    from torch.nn.modules import module as module_file

    if not hasattr(module_file, "is_traceable_wrapper_subclass"):
        return original  # older torch: swaps only under torch.__future__, which a script sets itself

    def _apply(self: torch.nn.Module, fn: Any, recurse: bool = True) -> torch.nn.Module:
        try:
            return original(self, fn, recurse)
        except RuntimeError as exc:
            if not str(exc).startswith("_apply(): Couldn't swap"):
                raise
        # The children are done; the parameters swapped so far are moved already (fn returns them unchanged).
        saved = (module_file.is_traceable_wrapper_subclass, torch._has_compatible_shallow_copy_type)
        module_file.is_traceable_wrapper_subclass = lambda t: False
        torch._has_compatible_shallow_copy_type = lambda a, b: False
        try:
            return original(self, fn, False)
        finally:
            module_file.is_traceable_wrapper_subclass, torch._has_compatible_shallow_copy_type = saved

    return _apply


def platform_patches() -> Dict[Tuple[object, str], Any]:
    """What a Mac with Apple silicon reports, as (owner, attribute) -> value."""
    patches: Dict[Tuple[object, str], Any] = {
        (torch.backends.mps, "is_available"): lambda: True,
        (torch.backends.mps, "is_built"): lambda: True,
        (torch.backends.mps, "is_macos13_or_newer"): lambda minor=0: True,
        (torch.backends.mps, "is_macos_or_newer"): lambda major, minor: True,
        (torch.cuda, "is_available"): lambda: False,
        (torch.cuda, "device_count"): lambda: 0,
        (torch.mps, "is_available"): lambda: True,
        (torch.mps, "device_count"): lambda: 1,
        (torch.mps, "synchronize"): _nothing,
        (torch.mps, "empty_cache"): _nothing,
        (torch.mps, "manual_seed"): _nothing,
        (torch.mps, "seed"): _nothing,
        (torch.mps, "get_rng_state"): lambda device="mps": torch.get_rng_state(),
        (torch.mps, "set_rng_state"): _nothing,
        (torch.mps, "set_per_process_memory_fraction"): _nothing,
        (torch.mps, "current_allocated_memory"): lambda: 0,
        (torch.mps, "driver_allocated_memory"): lambda: 0,
        (torch.mps, "recommended_max_memory"): lambda: 0,
        (torch.mps, "Event"): _Event,
        (torch.mps.event, "Event"): _Event,
        (torch._C, "_group_tensors_by_device_and_dtype"): _grouping(torch._C._group_tensors_by_device_and_dtype),
        (torch.nn.Module, "_apply"): _module_apply(torch.nn.Module._apply),
    }
    # torch.mps.profiler (signposts and Metal captures) on the emulated device: nothing to trace; a capture is
    # refused as on a Mac without MTL_CAPTURE_ENABLED=1 in the environment.
    capture = _MetalCapture()
    for name, value in (("_mps_profilerStartTrace", _nothing), ("_mps_profilerStopTrace", _nothing),
                        ("_mps_isCaptureEnabled", _capture_enabled), ("_mps_isCapturing", capture.is_capturing),
                        ("_mps_startCapture", capture.start), ("_mps_stopCapture", capture.stop)):
        patches[(torch._C, name)] = value  # the CPU build may lack them: removed again on exit
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None:
        for name, value in (
            ("is_available", lambda: True),
            ("current_accelerator", lambda check_available=False: torch.device("mps")),
            ("device_count", lambda: 1),
            ("current_device_index", lambda: 0),
            ("current_device_idx", lambda: 0),
            ("set_device_index", _nothing),
            ("set_device_idx", _nothing),
            ("synchronize", _nothing),
            ("empty_cache", _nothing),
        ):
            if hasattr(accelerator, name):
                patches[(accelerator, name)] = value
    return patches


_ABSENT = object()


@contextlib.contextmanager
def simulated_device(oracle: Optional[KernelOracle] = None, *, fallback: bool = True,
                     on_fallback: Optional[Callable[[str], None]] = None) -> Iterator[Simulator]:
    """Run the body on the emulated device; everything is restored on exit."""
    simulator = Simulator(oracle or KernelOracle(), fallback=fallback, on_fallback=on_fallback)
    SimulatedMPSTensor.simulator = simulator
    saved = {}
    patches = platform_patches()
    patches.update({(torch, f.__name__): _constructor(simulator, f) for f in _CONSTRUCTORS})
    for (owner, name), value in patches.items():
        saved[(owner, name)] = getattr(owner, name, _ABSENT)
        setattr(owner, name, value)
    try:
        with _Router(simulator), _DeviceMode(simulator):
            yield simulator
    finally:
        for (owner, name), value in saved.items():
            if value is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


def _check_dtype(dtype: torch.dtype) -> None:
    if dtype == torch.float64:
        raise TypeError(messages.FLOAT64)
    if dtype == torch.complex128:
        raise TypeError(messages.UNSUPPORTED_DTYPE.format(dtype="ComplexDouble"))


_HERE = os.path.dirname(os.path.abspath(__file__))
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))


def warn_from_user(message: str) -> None:
    """Warn at the line that called into torch, as the fallback's C++ warning surfaces, never at the simulator's own.

    The simulator runs below torch's own Python frames (the dispatcher's
    ``_ops.py``), which a C++ kernel has no frames for, so those are skipped too.
    """
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith((_HERE, _TORCH)):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, UserWarning)
        return
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, UserWarning, frame.f_code.co_filename, frame.f_lineno,
                           module=frame.f_globals.get("__name__"), registry=registry)


def fallback_enabled() -> bool:
    """PyTorch's own reading of the flag (MPSFallback.mm: ``std::stoi(value) != 0``)."""
    value = os.environ.get("PYTORCH_ENABLE_MPS_FALLBACK")
    try:
        return value is not None and int(value) != 0
    except ValueError:
        return False
