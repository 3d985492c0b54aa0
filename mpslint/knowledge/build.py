"""Regenerate the bundled MPS kernel table from an installed torch.

    python -m mpslint.knowledge.build [--yaml PATH --torch-version X.Y.Z] [--out DIR]

Reads ``torchgen/packaged/ATen/native/native_functions.yaml`` (the installed
torch's by default, located without importing torch) and writes
``data/mps_ops_<major>_<minor>.json``. The file keeps only what the table needs:
op names per class (MPS kernel direct / through its structured delegate,
Composite* kernel, neither), the delegate of each MPS-through-delegate op (so a
derived older-floor table can drop a functional op with its ``.out``), and the
first-version table (``data/first_mps_version.json``: the first release whose
yaml lists an MPS kernel for an op, read from every macOS wheel's yaml 2.0-2.13).
That table is the only source for floors older than the bundled table; ops it
does not name are assumed to have had their kernel at every floor.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, Optional

from mpslint.knowledge import mps_kernels
from mpslint.knowledge.mps_kernels import COMPOSITE_KEYS, KernelTable, Version, version_text, version_tuple

# The first-version table is data (data/first_mps_version.json); the build copies it into the table it writes.
FIRST_MPS_VERSION: Dict[str, Version] = mps_kernels.first_mps_versions()


def table_to_json(table: KernelTable) -> Dict[str, object]:
    delegated = {op: t for op, t in sorted(table.delegates.items()) if op in table.mps}
    composite: Dict[str, list] = {key: [] for key in COMPOSITE_KEYS}
    for op, key in sorted(table.composite.items()):
        if op not in table.mps:
            composite[key].append(op)
    grouped = set(table.mps) | {op for names in composite.values() for op in names}
    return {
        "torch_version": table.version,
        "generated_by": "python -m mpslint.knowledge.build",
        "mps_direct": sorted(table.mps - set(delegated)),
        "mps_delegated": delegated,
        "composite": composite,
        "other": sorted(op for op in table.ops if op not in grouped and op not in table.explicit_cpu_fallbacks),
        "first_mps_version": {op: version_text(v) for op, v in sorted(FIRST_MPS_VERSION.items())},
    }


def build(yaml_path: Path, torch_version: str, out_dir: Path) -> Path:
    table = KernelTable.from_yaml_text(yaml_path.read_text(encoding="utf-8"), torch_version,
                                       source=str(yaml_path), first_versions=FIRST_MPS_VERSION)
    unknown = sorted(op for op in FIRST_MPS_VERSION if not table.knows(op))
    if unknown:
        raise SystemExit(f"first-version table names ops this yaml lacks: {', '.join(unknown)}")
    major, minor = version_tuple(torch_version)
    out = out_dir / f"mps_ops_{major}_{minor}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table_to_json(table), indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return out


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpslint.knowledge.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--yaml", type=Path, help="native_functions.yaml (default: the installed torch's)")
    parser.add_argument("--torch-version", help="torch version the yaml belongs to (default: the installed torch's)")
    parser.add_argument("--out", type=Path, default=mps_kernels.DATA_DIR, help="output directory")
    args = parser.parse_args(argv)
    yaml_path = args.yaml or mps_kernels.installed_yaml_path()
    version = args.torch_version or (mps_kernels._installed_torch_version_text() if args.yaml is None else None)
    if yaml_path is None or version is None:
        parser.error("no installed torch found: pass --yaml and --torch-version")
    out = build(yaml_path, version.split("+", 1)[0], args.out)
    print(f"wrote {out} from {yaml_path} (torch {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
