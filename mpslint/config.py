"""Settings: what one file is checked with.

(Loading ``[tool.mpslint]`` from ``pyproject.toml``/``mpslint.toml`` and CLI
overrides lives below ``Settings``.)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import FrozenSet, Iterable, Optional, Tuple

from mpslint import registry


class ConfigError(Exception):
    """A bad configuration value or selector; the CLI exits 2 with this message."""


TorchVersion = Tuple[int, int]


@dataclass(frozen=True)
class Settings:
    """The effective settings for a file. Hashable: it keys the cache."""

    select: FrozenSet[str] = field(default_factory=lambda: frozenset(registry.rule_codes()))
    torch_version: Optional[TorchVersion] = None
    device_helper: str = "inline"
    report_interval_guarded: bool = False

    def with_codes(self, codes: Iterable[str]) -> "Settings":
        return replace(self, select=frozenset(codes))


def resolve_selectors(selectors: Iterable[str], *, setting: str = "select") -> FrozenSet[str]:
    """Codes matched by selectors: full codes, prefixes (``MPS1``, ``MPS``) or names."""
    codes = registry.rule_codes()
    by_name = registry.codes_by_name()
    chosen = set()
    for raw in selectors:
        selector = raw.strip()
        if not selector:
            continue
        if selector.upper() == "ALL":
            chosen.update(codes)
            continue
        if selector in by_name:
            chosen.add(by_name[selector])
            continue
        if selector.upper() in registry.ENGINE_CODES:
            continue  # always reported; accepted so `# noqa`-style lists can name them
        upper = selector.upper()
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
    base = registry.rule_codes() if select is None else resolve_selectors(select)
    chosen = set(base) | resolve_selectors(extend_select, setting="extend-select")
    chosen -= resolve_selectors(ignore, setting="ignore")
    return frozenset(chosen)


def parse_torch_version(value: str) -> TorchVersion:
    """``"2.5"``, ``"2.5.1"``, ``"2.13.0+cpu"`` -> (2, 5)."""
    text = str(value).strip()
    parts = text.split("+", 1)[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ConfigError(f"invalid torch-version {value!r}: expected MAJOR.MINOR such as \"2.5\"") from None
    return (major, minor)
