"""Which rules exist: the code -> rule class table.

Rule classes live in ``mpslint/checks/<family>.py``; each family module lists
its rules in ``RULES``. Engine-owned codes (MPS000, MPS001, MPS900) have no class.

Codes and names come from ``CATALOG`` without importing a rule: a run
served from the cache, or one that only prints a rule, needs neither the
rules nor LibCST (importing them is most of mpslint's start-up).
``tests/test_catalog.py`` keeps ``CATALOG`` equal to the classes.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Tuple

if TYPE_CHECKING:
    from mpslint.checks.base import RuleClass

# Family modules, in code order. Each defines RULES = [RuleClass, ...].
FAMILIES: Tuple[str, ...] = (
    "mpslint.checks.cuda",
    "mpslint.checks.hotloop",
    "mpslint.checks.placement",
    "mpslint.checks.dataloading",
    "mpslint.checks.ops",
)

SHIPPED = FAMILIES  # tests swap FAMILIES for families of their own

# Code -> name of every rule of the shipped families.
CATALOG: Dict[str, str] = {
    "MPS101": "cuda-method",
    "MPS102": "cuda-device-literal",
    "MPS103": "cuda-only-device-choice",
    "MPS104": "torch-cuda-api",
    "MPS105": "cuda-amp",
    "MPS106": "cudnn-setting",
    "MPS107": "legacy-cuda-tensor-type",
    "MPS108": "cuda-only-feature",
    "MPS201": "item-in-hot-loop",
    "MPS202": "host-copy-in-hot-loop",
    "MPS203": "synchronize-in-hot-loop",
    "MPS204": "tensor-condition-in-hot-loop",
    "MPS301": "numpy-on-device-tensor",
    "MPS302": "placement-mismatch",
    "MPS303": "float64-to-device",
    "MPS304": "non-blocking-to-host",
    "MPS401": "pin-memory",
    "MPS402": "fork-start-method",
    "MPS403": "unguarded-workers",
    "MPS501": "op-without-mps-kernel",
    "MPS502": "op-cpu-fallback",
    "MPS503": "unsupported-dtype-on-mps",
    "MPS504": "feature-needs-newer-torch",
}

# Codes the engine itself emits.
ENGINE_CODES: Dict[str, str] = {
    "MPS000": "invalid-syntax",
    "MPS001": "io-error",
    "MPS900": "internal-error",
}


@lru_cache(maxsize=None)
def rule_classes() -> Tuple["RuleClass", ...]:
    classes: List["RuleClass"] = []
    for name in FAMILIES:
        classes.extend(importlib.import_module(name).RULES)
    classes.sort(key=lambda cls: cls.CODE)
    return tuple(classes)


def _names() -> Dict[str, str]:
    """Code -> name of every rule, importing the rules only for families other than the shipped ones."""
    if FAMILIES == SHIPPED:
        return CATALOG
    return {cls.CODE: cls.NAME for cls in rule_classes()}


@lru_cache(maxsize=None)
def rule_codes() -> FrozenSet[str]:
    return frozenset(_names())


@lru_cache(maxsize=None)
def codes_by_name() -> Dict[str, str]:
    names = {name: code for code, name in _names().items()}
    names.update({name: code for code, name in ENGINE_CODES.items()})
    return names


@lru_cache(maxsize=None)
def name_of(code: str) -> str:
    if code in ENGINE_CODES:
        return ENGINE_CODES[code]
    return _names().get(code, code.lower())


def classes_for(codes: FrozenSet[str]) -> Tuple["RuleClass", ...]:
    return tuple(cls for cls in rule_classes() if cls.CODE in codes)
