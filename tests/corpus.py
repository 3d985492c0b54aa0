"""The real-world corpus: the source of transformers 5.23.0, downloaded once.

Tests that need it are marked ``corpus`` and skip (with the reason) when the
package cannot be downloaded, e.g. offline. ``MPSLINT_CORPUS`` points at an
already unpacked tree instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Optional

import pytest

PACKAGE = "transformers==5.23.0"
ROOT = Path(__file__).resolve().parent.parent / "benchmarks" / ".corpus"
TREE = ROOT / "transformers-5.23.0"


def corpus_dir() -> Path:
    """The unpacked ``transformers`` package directory, or skip the test."""
    override = os.environ.get("MPSLINT_CORPUS")
    if override:
        return Path(override)
    ready = TREE / "transformers"
    if ready.is_dir():
        return ready
    wheel = _download()
    if wheel is None:
        pytest.skip(f"could not download {PACKAGE} (offline?)")
    with zipfile.ZipFile(wheel) as zf:
        members = [m for m in zf.namelist() if m.startswith("transformers/")]
        zf.extractall(TREE, members)
    return ready


def _download() -> Optional[Path]:
    ROOT.mkdir(parents=True, exist_ok=True)
    existing = sorted(ROOT.glob("transformers-5.23.0-*.whl"))
    if existing:
        return existing[0]
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", PACKAGE, "-d", str(ROOT)],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except (subprocess.SubprocessError, OSError):
        return None
    found = sorted(ROOT.glob("transformers-5.23.0-*.whl"))
    return found[0] if found else None
