"""Rule selectors (``MPS101``, ``MPS1``, ``cuda-method``, ``ALL``) -> rule codes, with Ruff's layering."""

from __future__ import annotations

from typing import FrozenSet, Iterable, Optional

from mpslint.config.settings import ConfigError


def engine_codes() -> FrozenSet[str]:
    """Codes the engine reports itself (MPS000, MPS001, MPS900): named, but never selected or ignored."""
    from mpslint import registry

    return frozenset(registry.codes_by_name().values()) - registry.rule_codes()


def resolve_selectors(selectors: Iterable[str], *, setting: str = "select") -> FrozenSet[str]:
    """Codes matched by selectors: full codes, prefixes (``MPS1``, ``MPS``) or names."""
    from mpslint import registry

    codes = registry.rule_codes()
    by_name = registry.codes_by_name()
    engine = engine_codes()
    chosen = set()
    for raw in selectors:
        selector = raw.strip()
        if not selector:
            continue
        upper = selector.upper()
        if upper == "ALL":
            chosen.update(codes)
            continue
        if selector in by_name:
            if by_name[selector] not in engine:
                chosen.add(by_name[selector])
            continue
        if upper in engine:
            continue  # always reported; accepted so suppression lists can name them
        matched = [c for c in codes if c.startswith(upper)]
        if not matched or not upper.startswith("MPS"):
            raise ConfigError(f"unknown rule selector {selector!r} in {setting}")
        chosen.update(matched)
    return frozenset(chosen)


def select_codes(
    select: Optional[Iterable[str]] = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
) -> FrozenSet[str]:
    """Ruff's semantics: ``select`` sets the base (default: every rule), ``extend-select`` adds, ``ignore`` removes."""
    from mpslint import registry

    base = registry.rule_codes() if select is None else resolve_selectors(select)
    chosen = set(base) | resolve_selectors(extend_select, setting="extend-select")
    chosen -= resolve_selectors(ignore, setting="ignore")
    return frozenset(chosen)
