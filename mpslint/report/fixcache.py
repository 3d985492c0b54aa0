"""Fix outcomes of unchanged files, kept next to the check's cache entries.

On a warm cache the check costs next to nothing, while the in-memory fix
runs would parse and check every fixable file again. An outcome depends on
exactly what a check result depends on (the bytes, the path, the settings,
mpslint's code) plus whether unsafe fixes apply, so it is keyed by the check
cache's own key and stored inside that cache's directory for this code:
entries of older mpslint code go when the cache prunes that directory. Like
the check cache, any problem here is a miss, never a failure.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Counter as CounterType, List, NamedTuple, Optional

from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic


class Outcome(NamedTuple):
    """What the report keeps of a fix run (``fixer.FixOutcome`` without the fixed text).

    Its own type so that a run served from here imports neither the fixer nor LibCST.
    """

    fixed: CounterType[str]
    diagnostics: List[Diagnostic]
    error: Optional[str]
    passes: int
    device_choice: int = 0  # what the fixed text does about the device (``entry_points.device_choice``)


class FixCache:
    def __init__(self, cache_dir: Path) -> None:
        from mpslint.cache import Cache

        self._cache = Cache(cache_dir)
        self.root = self._cache.entries / "report-fixes"

    def key(self, data: bytes, display: str, settings: Settings, *, unsafe: bool) -> str:
        return self._cache.key(data, display, settings) + ("-unsafe" if unsafe else "-safe")

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key[2:]}.json"

    def get(self, key: str) -> Optional[Outcome]:
        from mpslint.cache import diagnostic_from_json

        try:
            with open(self._path(key), "rb") as handle:
                payload = json.loads(handle.read())
            if payload.get("key") != key:
                return None
            return Outcome(
                Counter({str(code): int(n) for code, n in payload["fixed"].items()}),
                [diagnostic_from_json(d) for d in payload["remaining"]],
                payload["error"],
                int(payload["passes"]),
                int(payload["device_choice"]),
            )
        except Exception:  # noqa: BLE001 - missing, corrupt or foreign: a miss
            return None

    def put(self, key: str, outcome: Outcome) -> None:
        from mpslint.cache import diagnostic_to_json

        payload = {
            "key": key,
            "fixed": dict(outcome.fixed),
            "remaining": [diagnostic_to_json(d) for d in outcome.diagnostics],
            "error": outcome.error,
            "passes": outcome.passes,
            "device_choice": outcome.device_choice,
        }
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=str(target.parent))
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(json.dumps(payload, separators=(",", ":")).encode("utf-8"))
                os.replace(temp, target)
            except BaseException:
                os.unlink(temp)
                raise
        except Exception:  # noqa: BLE001 - a read-only or full disk costs speed, never the report
            pass
