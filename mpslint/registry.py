"""Which rules exist: the code -> rule class table.

Rule classes live in ``mpslint/checks/<family>.py``; each family module lists
its rules in ``RULES``. Engine-owned codes (MPS000, MPS900) have no class.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Dict, FrozenSet, List, Tuple

from mpslint.checks.base import RuleClass

# Family modules, in code order. Each defines RULES = [RuleClass, ...].
FAMILIES: Tuple[str, ...] = (
    "mpslint.checks.cuda",
    "mpslint.checks.hotloop",
    "mpslint.checks.placement",
    "mpslint.checks.dataloading",
    "mpslint.checks.ops",
)

# Codes the engine itself emits.
ENGINE_CODES: Dict[str, str] = {
    "MPS000": "invalid-syntax",
    "MPS900": "internal-error",
}


@lru_cache(maxsize=None)
def rule_classes() -> Tuple[RuleClass, ...]:
    classes: List[RuleClass] = []
    for name in FAMILIES:
        classes.extend(importlib.import_module(name).RULES)
    classes.sort(key=lambda cls: cls.CODE)
    return tuple(classes)


@lru_cache(maxsize=None)
def rule_codes() -> FrozenSet[str]:
    return frozenset(cls.CODE for cls in rule_classes())


@lru_cache(maxsize=None)
def codes_by_name() -> Dict[str, str]:
    names = {cls.NAME: cls.CODE for cls in rule_classes()}
    names.update({name: code for code, name in ENGINE_CODES.items()})
    return names


@lru_cache(maxsize=None)
def name_of(code: str) -> str:
    if code in ENGINE_CODES:
        return ENGINE_CODES[code]
    for cls in rule_classes():
        if cls.CODE == code:
            return cls.NAME
    return code.lower()


def classes_for(codes: FrozenSet[str]) -> Tuple[RuleClass, ...]:
    return tuple(cls for cls in rule_classes() if cls.CODE in codes)
