"""The torch floor a project declares: the lowest ``torch>=``/``~=``/``==`` in its dependencies.

Read from ``pyproject.toml`` (``[project]`` dependencies and optional
dependencies) and ``requirements*.txt`` in the project root; used when
``torch-version`` is not set.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import List, Optional, Tuple

from mpslint.config.settings import ConfigError, TorchVersion
from mpslint.config.toml_file import read_toml

# `torch>=2.1`, `torch ~= 2.3`, `torch[opt]==2.4.1`, `torch>=2.1,<3` -> the floor.
_TORCH_REQ = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?:\([^)]*\))?(?P<specs>[^;#]*)", re.IGNORECASE)
_FLOOR = re.compile(r"(>=|~=|==|>)\s*(\d+)\.(\d+)")


def requirement_floor(requirement: str) -> Optional[TorchVersion]:
    """The torch floor of one requirement line, or None (no floor, or another package)."""
    match = _TORCH_REQ.match(requirement)
    if not match:
        return None
    rest = match.group("specs")
    if rest and rest[0].isalnum() or rest.startswith(("-", "_", ".")):
        return None  # torchvision, torch-audio, ...: another package
    floors = [(int(m.group(2)), int(m.group(3))) for m in _FLOOR.finditer(rest)]
    return max(floors) if floors else None


def requirement_files(root: Path) -> List[str]:
    """The ``requirements*.txt`` names in ``root``, sorted."""
    try:
        return sorted(filter(is_requirements_file, os.listdir(root)))
    except OSError:
        return []


def is_requirements_file(name: str) -> bool:
    return name.startswith("requirements") and name.endswith(".txt")


def infer_torch_version(root: Path) -> Optional[TorchVersion]:
    """The lowest torch floor the project at ``root`` declares, or None."""
    found = infer_torch_floor(root)
    return found[0] if found is not None else None


def infer_torch_floor(root: Path) -> Optional[Tuple[TorchVersion, str]]:
    """The lowest torch floor the project at ``root`` declares, and where (``torch>=2.4 in requirements.txt``)."""
    requirements: List[Tuple[str, str]] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            project = read_toml(pyproject).get("project", {})
        except ConfigError:
            project = {}
        if isinstance(project, dict):
            deps = project.get("dependencies", [])
            if isinstance(deps, list):
                requirements.extend((d, "pyproject.toml") for d in deps if isinstance(d, str))
            optional = project.get("optional-dependencies", {})
            if isinstance(optional, dict):
                for group in optional.values():
                    if isinstance(group, list):
                        requirements.extend((d, "pyproject.toml") for d in group if isinstance(d, str))
    for name in requirement_files(root):
        try:
            with open(root / name, encoding="utf-8", errors="replace") as handle:
                requirements.extend((line.split("#", 1)[0], name) for line in handle)
        except OSError:
            continue
    floors = [(floor, f"{line.strip()} in {name}") for line, name in requirements
              for floor in (requirement_floor(line),) if floor is not None]
    return min(floors) if floors else None
