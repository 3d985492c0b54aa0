"""What a value can be (``Kind``), how kinds combine, and the names and calls that tell them apart."""

from __future__ import annotations

import ast
import enum
import re
from typing import Iterable, Optional

from mpslint.analysis.project import facts


class Kind(enum.Enum):
    DEVICE = "device"  # a tensor that may live on the accelerator
    HOST_TENSOR = "host tensor"  # a torch tensor known to be on the CPU
    HOST = "host"  # a Python or numpy value, or tensor metadata
    MODULE = "module"  # a module placed on the accelerator
    ACCEL = "accelerator"  # a device handle that may name the accelerator
    CPU = "cpu"  # a device handle naming the CPU
    UNKNOWN = "unknown"


FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor "
    "zeros_like ones_like empty_like full_like rand_like randn_like randint_like as_tensor asarray "
    "normal bernoulli multinomial".split()
)


# Factories whose result has a shape taken from the arguments (not a 0-dim scalar).
SIZED_FACTORIES = frozenset("zeros ones empty full rand randn randint randperm arange linspace logspace eye normal".split())


DTYPES = frozenset(
    "float float32 float64 double half float16 bfloat16 int int8 int16 int32 int64 long short uint8 bool "
    "complex64 complex128 cfloat cdouble".split()
)


META_ATTRS = frozenset(
    "shape ndim dtype is_cuda is_mps is_cpu requires_grad is_leaf layout is_sparse is_floating_point names".split()
)


HOST_METHODS = frozenset(
    "item tolist numpy size dim ndimension numel nelement element_size is_contiguous get_device data_ptr "
    "stride storage_offset is_floating_point is_complex __len__ __repr__ __str__ __format__".split()
)


# Methods of a module that return the module itself.
MODULE_METHODS = frozenset("eval train to cuda cpu float half double bfloat16 requires_grad_ apply to_empty share_memory".split())


HOST_BUILTINS = frozenset(
    "float int bool str repr len isinstance issubclass range enumerate print round hash id type format "
    "open hasattr getattr callable".split()
)


JOIN_BUILTINS = frozenset("sum max min abs".split())


HOST_MODULES = ("numpy", "math", "random", "time", "os", "json", "pandas", "sklearn", "scipy", "logging", "statistics")


from mpslint.analysis.project.evaluate import DEVICE_NAMES, MODULE_LIKE  # noqa: E402  (the project model names them too)


# Objects whose ``.device`` is the training device (not some tensor's own device).
OBJECT_OWNERS = frozenset("self args accelerator trainer training_args state config cfg opt opts hparams".split())


DEVICE_NAME = re.compile(DEVICE_NAMES)


NO_GRAD = ("no_grad", "inference_mode")


# A prefilter group (Rule.REQUIRES) for rules that need a value on the accelerator: this analysis
# says DEVICE only through `.to(`, `.cuda(`, a placed module, a `.backward()` graph,
# `device=`/`.device`/names like `dev`, `*_device`, or a string literal starting with a device
# type ("cuda:0", 'mps', "xla").
DEVICE_EVIDENCE = ("backward", "to(", "to_empty", "cuda", "prepare", "dev") + tuple(
    quote + device for device in ("mps", "xpu", "npu", "hpu", "xla", "meta") for quote in "\"'"
)


# Calls that move something onto a device (DeviceFlow.places_on_a_device).
MOVES = frozenset(("to", "cuda", "to_empty", "prepare", "prepare_model"))


# Device types that hold data on an accelerator (`meta` is a device too, with no data).
ACCELERATOR_TYPES = frozenset(("cuda", "mps", "xpu", "npu", "hpu", "xla"))


# What a summary's fact (analysis/project/facts.py) is in this analysis's terms.
FACT_KINDS = {
    facts.DEVICE: Kind.ACCEL,
    facts.CPU: Kind.CPU,
    facts.DEVICE_TENSOR: Kind.DEVICE,
    facts.HOST_TENSOR: Kind.HOST_TENSOR,
    facts.HOST: Kind.HOST,
    facts.FLOAT64: Kind.HOST,
    facts.CUDA_FLAG: Kind.HOST,
    facts.KWARGS: Kind.HOST,
}


# Deeper than this, an expression's kind is unknown: real code never nests evaluation this deep,
# generated chains of distinct names would otherwise overflow the stack.
MAX_DEPTH = 120


_CALL, _NAME, _ATTRIBUTE = ast.Call, ast.Name, ast.Attribute


def _fact_kind(fact: str) -> Optional[Kind]:
    if facts.host_read_of(fact) is not None:
        return Kind.HOST  # a Python number or a numpy array: a host tensor copy is rarely what such helpers give
    return FACT_KINDS.get(facts.KWARGS if fact.startswith(facts.KWARGS) else fact)


def builds_module(callee: str) -> bool:
    """A call of ``callee`` (qualified where it can be) returns a module: ``Net()``, ``resnet18()``, ``from_pretrained``."""
    last = callee.rsplit(".", 1)[-1]
    return (
        last[:1].isupper()
        or last == "from_pretrained"
        or bool(MODULE_LIKE.search(last))
        or callee.startswith(("torchvision.models", "timm"))
    )


def string_kind(value: object) -> Kind:
    """A literal's kind: ``"cpu"`` a CPU device, ``"cuda:0"``/``"mps"`` an accelerator, anything else a host value."""
    if not isinstance(value, str):
        return Kind.HOST
    device = value.split(":", 1)[0]
    if device == "cpu":
        return Kind.CPU
    if (device in ACCELERATOR_TYPES or device == "meta") and value == value.strip():
        return Kind.ACCEL
    return Kind.HOST


def names_a_dtype(name: str) -> bool:
    """``name`` (qualified where it can be) is a dtype: ``torch.float64``, ``self.dtype``, ``compute_dtype``."""
    last = name.rsplit(".", 1)[-1]
    if name.startswith("torch.") and last in DTYPES:
        return True
    return "dtype" in last.lower()


def join(a: Kind, b: Kind) -> Kind:
    """Either value: what a name assigned in two places, or ``x if c else y``, holds."""
    if a is b:
        return a
    pair = {a, b}
    if Kind.DEVICE in pair:
        return Kind.DEVICE
    if pair <= {Kind.ACCEL, Kind.CPU, Kind.UNKNOWN}:
        return Kind.ACCEL if Kind.ACCEL in pair else Kind.UNKNOWN
    if Kind.MODULE in pair:
        return Kind.MODULE
    if pair == {Kind.HOST, Kind.HOST_TENSOR}:
        return Kind.HOST_TENSOR
    return Kind.UNKNOWN


def join_all(kinds: Iterable[Kind]) -> Kind:
    result: Optional[Kind] = None
    for kind in kinds:
        result = kind if result is None else join(result, kind)
    return Kind.UNKNOWN if result is None else result


def arithmetic(a: Kind, b: Kind) -> Kind:
    """The result of ``a + b`` / ``a < b``: on the device if either operand is."""
    if Kind.DEVICE in (a, b):
        return Kind.DEVICE
    if {a, b} <= {Kind.HOST, Kind.HOST_TENSOR}:
        return Kind.HOST_TENSOR if Kind.HOST_TENSOR in (a, b) else Kind.HOST
    return Kind.UNKNOWN
