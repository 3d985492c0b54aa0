"""Which torch ops the code calls that have no MPS kernel at the project's floor, and which torch adds one.

The op comes from the finding (MPS501/MPS502 name the aten op they found,
``aten::linalg_eig``); the version facts come from the same kernel table the
rules consult (``mpslint.knowledge.mps_kernels``), at the floor of the file
the finding is in.
"""

from __future__ import annotations

import re
from typing import Dict, List, Mapping, Sequence, Tuple

from mpslint.config import Settings
from mpslint.diagnostic import Diagnostic
from mpslint.report.model import OpRow

KINDS = {"MPS501": "no-kernel", "MPS502": "cpu-fallback"}
_OP = re.compile(r"aten::(?P<op>[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)?)")
_CALL = re.compile(r"^`(?P<call>[^`]+)`")


def rows(diagnostics: Mapping[str, Sequence[Diagnostic]], settings_of: Mapping[str, Settings]) -> List[OpRow]:
    from mpslint.knowledge import mps_kernels

    latest = mps_kernels.load_table(None)
    newest = _short(latest.version)
    found: Dict[Tuple[str, str, str], OpRow] = {}
    files: Dict[Tuple[str, str, str], set] = {}
    for display, diags in diagnostics.items():
        for d in diags:
            kind = KINDS.get(d.code)
            match = _OP.search(d.message) if kind else None
            if match is None:
                continue
            op = match.group("op")
            floor = settings_of[display].torch_version if display in settings_of else None
            table = mps_kernels.load_table(floor)
            key = (op, kind, _short(table.version))
            row = found.get(key)
            if row is None:
                row = found[key] = OpRow(op, kind, key[2], newest_known=newest)
                first = table.first_mps_version(op)
                if first is not None and first > mps_kernels.version_tuple(table.version):
                    row.gains = mps_kernels.version_text(first)
                elif latest.has_mps_kernel(op) and latest.version != table.version:
                    row.latest = newest
            call = _CALL.match(d.message)
            if call and call.group("call") not in row.calls:
                row.calls.append(call.group("call"))
            row.count += 1
            files.setdefault(key, set()).add(display)
    for key, row in found.items():
        row.files = len(files[key])
        row.calls.sort()
    return sorted(found.values(), key=lambda r: (r.kind != "no-kernel", -r.count, r.op))


def _short(version: str) -> str:
    from mpslint.knowledge import mps_kernels

    return mps_kernels.version_text(mps_kernels.version_tuple(version))
