"""What a summary says about a value: one short string per name or function return.

Strings, not objects: a summary is stored as JSON and compared by digest.
"""

from __future__ import annotations

from typing import Optional, Tuple

DEVICE = "device"  # a device handle that may name the accelerator ("cuda", torch.device("cuda", i))
CPU = "cpu"  # a device handle naming the CPU
DEVICE_TENSOR = "device_tensor"  # a tensor on the accelerator
HOST_TENSOR = "host_tensor"  # a tensor on the CPU
HOST = "host"  # a Python or numpy value
FLOAT64 = "float64"  # a float64 numpy array (or tensor made from one on the host)
CUDA_FLAG = "cuda_flag"  # whether CUDA is available (torch.cuda.is_available())
# "arg:K": computed from the K-th positional argument, so on its device; "arg:0,1": from both (tensors
# combined must share a device, so the result is where the tensor among them is).
ARGUMENT = "arg:"
KWARGS = "kwargs:"  # "kwargs:pin_memory,num_workers": a dict of keyword arguments holding these keys set
# A function's return read on the host from its K-th argument: a wait for the device when that argument is on it.
HOST_READ = "host_read:"  # `.item()`, `.tolist()`, `float(t)`: Python values (MPS201's shape)
HOST_COPY = "host_copy:"  # `.cpu()`, `.numpy()`, `np.asarray(t)`: a copy of the tensor (MPS202's shape)


def argument(*positions: int) -> str:
    return ARGUMENT + ",".join(map(str, sorted(set(positions))))


def _positions(fact: Optional[str], prefix: str) -> Optional[Tuple[int, ...]]:
    """The positions a ``prefix`` fact (``"arg:0,1"``) lists; None for a fact of another kind."""
    if fact is not None and fact.startswith(prefix):
        return tuple(int(p) for p in fact[len(prefix):].split(","))
    return None


def argument_positions(fact: Optional[str]) -> Tuple[int, ...]:
    """The argument positions an ``arg:`` fact is computed from; () for any other fact."""
    return _positions(fact, ARGUMENT) or ()


def argument_position(fact: Optional[str]) -> Optional[int]:
    """The first argument position of an ``arg:`` fact (whether it is one at all), else None."""
    positions = argument_positions(fact)
    return positions[0] if positions else None


def combined(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """``a + b`` / ``a == b``: arguments combine; a host value leaves the tensor side; a device tensor wins."""
    if a == b:
        return a
    for read, other in ((a, b), (b, a)):
        if host_read_of(read) is not None and (other in (None, HOST) or argument_positions(other)):
            return read  # `float(t) / n`: a number read on the host, whatever it is then divided by
    left, right = argument_positions(a), argument_positions(b)
    if left and right:
        return argument(*left, *right)
    if left and b in (None, HOST):
        return a
    if right and a in (None, HOST):
        return b
    if DEVICE_TENSOR in (a, b):
        return DEVICE_TENSOR  # combined with a device tensor, a result is on the device (or raises)
    return None


# "float64_items:0": a tuple whose items at these positions a DataLoader's default collate makes float64 tensors
# (float64 arrays, Python floats): a dataset's item, such as (features, label).
FLOAT64_ITEMS = "float64_items:"


def float64_items(positions) -> str:
    return FLOAT64_ITEMS + ",".join(map(str, sorted(set(positions))))


def float64_positions(fact: Optional[str]) -> Optional[Tuple[int, ...]]:
    """The items of a tuple that are float64 (``FLOAT64_ITEMS``); None for any other fact."""
    return _positions(fact, FLOAT64_ITEMS)


def host_read(how: str, positions: Tuple[int, ...]) -> str:
    """``how`` (HOST_READ or HOST_COPY) of the arguments at ``positions``."""
    return how + ",".join(map(str, sorted(set(positions))))


def host_read_of(fact: Optional[str]) -> Optional[Tuple[str, Tuple[int, ...]]]:
    """(HOST_READ or HOST_COPY, the argument positions) of a host-read fact; None for any other fact."""
    for how in (HOST_READ, HOST_COPY):
        positions = _positions(fact, how)
        if positions is not None:
            return how, positions
    return None


def join(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """Either value (two returns, ``x if c else y``): equal facts stay, a device or the CPU may be the device."""
    if a == b:
        return a
    left, right = item_facts(a), item_facts(b)
    if left is not None or right is not None:
        # two returns of one shape, item by item; a tuple whose items all agree has their fact, so its items
        # are what indexing that fact gives (a number or an unknown value beside a tuple: nothing is known)
        if not ((left is not None or _tensor(a)) and (right is not None or _tensor(b))):
            return None
        left = left if left is not None else tuple(item(a, i) for i in range(len(right)))  # type: ignore[arg-type]
        right = right if right is not None else tuple(item(b, i) for i in range(len(left)))
        return items([join(x, y) for x, y in zip(left, right)]) if len(left) == len(right) else None
    for read, other in ((a, b), (b, a)):
        # `if isinstance(x, np.ndarray): return x` beside `return x.detach().cpu().numpy()`: for a tensor on
        # the device, the read is the way taken
        found = host_read_of(read)
        if found is not None and (other == HOST or argument_positions(other) == found[1]):
            return read
    if {a, b} == {DEVICE, CPU}:
        return DEVICE
    return None


# "items:device_tensor|host": a tuple whose items have these facts ("" where one is not known), so that
# `pred, true = self.step(batch)` gives each name its own item's fact when the items do not agree.
ITEMS = "items:"


def items(found) -> Optional[str]:
    """The fact of a tuple of items with these facts. Even when no item's fact is known it says something:
    the helper returns a tuple, so ``model_data, meta = load_checkpoint(path, device)`` does not make each
    part a tensor placed on ``device``, as a call the model knows nothing of would."""
    if not found:
        return None
    return ITEMS + "|".join(f or "" for f in found)


def item_facts(fact: Optional[str]) -> Optional[Tuple[Optional[str], ...]]:
    """The facts of the items of an ``ITEMS`` fact (None where one is not known); None for any other fact."""
    if fact is None or not fact.startswith(ITEMS):
        return None
    return tuple(f or None for f in fact[len(ITEMS):].split("|"))


def item(fact: Optional[str], index: int) -> Optional[str]:
    """The fact of item ``index`` of a tuple with fact ``fact``: its own item's fact, or the whole's fact when
    it is a tensor's (an index of a tensor is where the tensor is)."""
    found = item_facts(fact)
    if found is not None:
        return found[index] if -len(found) <= index < len(found) else None
    return fact if fact in (DEVICE_TENSOR, HOST_TENSOR) or argument_positions(fact) else None


def _tensor(fact: Optional[str]) -> bool:
    return fact in (DEVICE_TENSOR, HOST_TENSOR) or bool(argument_positions(fact))


def some_call(a: Optional[str], b: Optional[str]) -> Optional[str]:
    """What a parameter holds when two calls pass ``a`` and ``b``: a tensor on the device (or a float64 array)
    passed by one call is reason enough, since that call is the one that fails on a Mac; otherwise ``join``."""
    for strong in (DEVICE_TENSOR, FLOAT64):
        if strong in (a, b):
            return strong
    return join(a, b)
