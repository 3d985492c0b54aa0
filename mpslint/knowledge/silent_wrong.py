"""Ops with known silently wrong results on MPS, per torch release (``data/mps_silent_wrong.json``).

Each entry cites the public PyTorch issue that shows it, the trigger as the issue
states it (shapes, strides, dtypes), the releases affected and the fix. This module
only reads the table (no torch import: the report reads it in the parent
process); ``mpslint.verify.silent_wrong`` matches calls against it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

TABLE = Path(__file__).with_name("data") / "mps_silent_wrong.json"


def release(version: str) -> Tuple[int, int]:
    """(major, minor) of "2.13.0+cpu", "2.14.0.dev20260709" or "2.4"."""
    parts = version.split("+")[0].split(".")
    return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)


@lru_cache(maxsize=None)
def entries() -> Tuple[Dict[str, Any], ...]:
    with open(TABLE, encoding="utf-8") as handle:
        return tuple(json.load(handle)["entries"])


def by_id() -> Dict[str, Dict[str, Any]]:
    return {entry["id"]: entry for entry in entries()}


def affects(entry: Dict[str, Any], version: str) -> bool:
    return release(entry["affected_from"]) <= release(version) < release(entry["affected_before"])


def for_version(version: str) -> List[Dict[str, Any]]:
    """The entries whose affected releases include ``version``."""
    return [entry for entry in entries() if affects(entry, version)]


def releases(entry: Dict[str, Any]) -> str:
    """The affected releases in words: "torch 2.4 to 2.14, no release with a fix cited"."""
    before = release(entry["affected_before"])
    last = f"{before[0]}.{before[1] - 1}" if before[1] else None
    span = entry["affected_from"] if last == entry["affected_from"] else f"{entry['affected_from']} to {last}"
    fixed: Optional[str] = entry.get("fixed_in")
    return f"torch {span}, " + (f"fixed in {fixed}" if fixed else "no release with a fix cited")
