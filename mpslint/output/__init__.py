"""Output formats: one module per format, imported only when a run uses it.

Every format module has ``render(diagnostics, options) -> str``. ``concise``
and ``full`` are for people (the CLI adds summary lines); the others are for
machines and the CLI prints nothing else on stdout with them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from mpslint.diagnostic import Diagnostic

FORMATS = ("concise", "full", "json", "sarif", "github", "junit")
TEXT_FORMATS = frozenset({"concise", "full"})


@dataclass
class Options:
    unsafe: bool = False  # whether unsafe fixes count as applicable (the `[*]` marker)
    # display path -> the file's current text (for `full`), or None when unavailable
    source: Callable[[str], Optional[str]] = field(default=lambda path: None)


def fix_applicable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.fix is not None and bool(diagnostic.fix.edits) and diagnostic.fix.is_applicable(unsafe)


def render(name: str, diagnostics: Sequence[Diagnostic], options: Options) -> str:
    if name not in FORMATS:
        raise ValueError(f"unknown output format {name!r}")
    module = importlib.import_module(f"mpslint.output.{name}")
    return module.render(diagnostics, options)
