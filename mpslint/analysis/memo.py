"""Values computed once per key, where computing one may ask for others and come back to itself."""

from __future__ import annotations

from typing import Callable, Dict, Generic, Hashable, Set, TypeVar

V = TypeVar("V")


class CycleMemo(Generic[V]):
    """``get(key, compute)`` computes each key's value once; a key asked for while it is being computed
    (a function returning its own call, two that call each other) gets ``in_cycle`` instead, and
    ``cycles`` counts how often: what the others then computed depends on which key was asked first."""

    def __init__(self, in_cycle: V) -> None:
        self.values: Dict[Hashable, V] = {}
        self.in_cycle = in_cycle
        self.cycles = 0
        self._busy: Set[Hashable] = set()

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        values = self.values
        if key in values:
            return values[key]
        if key in self._busy:
            self.cycles += 1
            return self.in_cycle
        self._busy.add(key)
        try:
            result = compute()
        finally:
            self._busy.discard(key)
        values[key] = result
        return result
