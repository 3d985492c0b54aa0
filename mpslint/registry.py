"""Which rules exist: each rule's identity comes from its page in ``rules/``.

A page's front matter says the code, the name and the summary once; its
``check:`` key names the class that implements the rule (``module:Class``
under ``mpslint.checks``), and the registry gives that class its ``CODE`` and
``NAME`` when it loads it. Pages without ``check:`` are the engine's own codes
(MPS000, MPS001, MPS900). Adding a rule is its module and its page.

Codes and names are read from the pages without importing a rule: a run
served from the cache, or one that only prints a rule, needs neither the
rules nor LibCST.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Dict, FrozenSet, List, Tuple

from mpslint import catalog

# A rule class is a subclass of ``mpslint.checks.base.Rule``. It is named here by ``type`` only:
# the rules import the configuration, which asks this module for the codes, so even a type-only
# import of ``checks.base`` would close a circle (config -> registry -> checks.base -> config).
RuleClass = type

# The shipped rules are the catalog's pages. Tests swap FAMILIES for modules of
# their own, each defining RULES = [RuleClass, ...] with CODE and NAME set.
SHIPPED: Tuple[str, ...] = ("rules/",)
FAMILIES: Tuple[str, ...] = SHIPPED
CHECKS_PACKAGE = "mpslint.checks"


def _read_catalog() -> Tuple[Dict[str, str], Dict[str, str], Dict[str, str]]:
    rules: Dict[str, str] = {}
    engine: Dict[str, str] = {}
    checks: Dict[str, str] = {}
    for code, doc in catalog.load().items():
        check = doc.front.get("check")
        if check:
            rules[code] = doc.name
            checks[code] = check
        else:
            engine[code] = doc.name
    return rules, engine, checks


# Code -> name of every shipped rule; of the engine's own codes; code -> "module:Class".
CATALOG, ENGINE_CODES, CHECKS = _read_catalog()


@lru_cache(maxsize=None)
def rule_classes() -> Tuple[RuleClass, ...]:
    classes: List[RuleClass] = []
    if FAMILIES == SHIPPED:
        for code, check in CHECKS.items():
            module, _, name = check.partition(":")
            cls = getattr(importlib.import_module(f"{CHECKS_PACKAGE}.{module}"), name)
            cls.CODE = code
            cls.NAME = CATALOG[code]
            classes.append(cls)
    else:
        for family in FAMILIES:
            classes.extend(importlib.import_module(family).RULES)
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


def classes_for(codes: FrozenSet[str]) -> Tuple[RuleClass, ...]:
    return tuple(cls for cls in rule_classes() if cls.CODE in codes)
