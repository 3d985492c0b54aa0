"""Torch version gates for MPS features.

Sources: MPS autocast landed in 2.5 (https://github.com/pytorch/pytorch/pull/99272)
and took bfloat16 in 2.6 (https://github.com/pytorch/pytorch/pull/139390);
GradScaler.unscale_ stopped going through float64 on MPS in 2.8
(torch/amp/grad_scaler.py); torch.compile on MPS (MPSInductor) is a 2.8
release feature (https://github.com/pytorch/pytorch/issues/157957), a
prototype in 2.7 (https://github.com/pytorch/pytorch/pull/143893).

A gate is the first torch release where a feature works on ``mps``. Rules
compare it with the project's floor (``torch-version``); with no floor set the
floor is ``LATEST_KNOWN``, so version-gated findings need an explicit floor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

Version = Tuple[int, int]

# The newest torch this knowledge was checked against (the bundled op table's version).
LATEST_KNOWN: Version = (2, 13)


@dataclass(frozen=True)
class Gate:
    key: str
    since: Version
    what: str  # how a message names the feature
    why: str  # what happens on an older torch


GATES: Dict[str, Gate] = {
    gate.key: gate
    for gate in (
        Gate("autocast-mps", (2, 5), 'autocast on "mps"',
             "older torch has no MPS autocast and disables it with a warning"),
        Gate("autocast-mps-bfloat16", (2, 6), 'bfloat16 autocast on "mps"',
             "torch 2.5 supports float16 only and disables autocast with a warning"),
        Gate("grad-scaler-mps", (2, 8), 'GradScaler on "mps"',
             "older torch unscales through a float64 tensor, which MPS cannot hold"),
        Gate("compile-mps", (2, 8), "torch.compile on mps",
             "Inductor has no MPS backend before 2.7 and only a prototype in 2.7"),
    )
}


def floor_of(torch_version: Optional[Tuple[int, ...]]) -> Version:
    """The floor rules use: the configured one, else the newest known torch."""
    return LATEST_KNOWN if torch_version is None else (torch_version[0], torch_version[1])


def missing(key: str, torch_version: Optional[Tuple[int, ...]]) -> Optional[Gate]:
    """The gate when the floor is older than the feature, else None."""
    gate = GATES[key]
    return gate if floor_of(torch_version) < gate.since else None


def text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"
