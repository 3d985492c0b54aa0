"""What the editor tells the server: ``initializationOptions`` and the ``mpslint`` configuration section.

The same keys work in both places; values from ``workspace/configuration``
(or a ``workspace/didChangeConfiguration`` push) replace those given at
initialization. Everything else comes from the project's own config files,
exactly as on the command line; these keys are the command line's overrides:

- ``unsafeFixes`` (bool): offer unsafe fixes too (``--unsafe-fixes``);
- ``configuration`` (path): one config file for every document (``--config``),
  relative to the workspace folder;
- ``select``, ``extendSelect``, ``ignore`` (lists of rule selectors) and
  ``torchVersion`` (``"2.4"``): as ``--select``, ``--extend-select``,
  ``--ignore`` and ``--torch-version``.

A bad value is reported (``problems``) and left out, so a typo in the editor's
settings never stops the linting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from mpslint.config import ConfigError, Overrides, parse_torch_version, select_codes

SECTION = "mpslint"

_LISTS = {"select": "select", "extendSelect": "extend_select", "ignore": "ignore"}
KEYS = ("unsafeFixes", "configuration", "torchVersion") + tuple(_LISTS)


@dataclass(frozen=True)
class ClientSettings:
    unsafe_fixes: bool = False
    configuration: Optional[str] = None
    select: Optional[Tuple[str, ...]] = None
    extend_select: Tuple[str, ...] = ()
    ignore: Tuple[str, ...] = ()
    torch_version: Optional[str] = None
    problems: Tuple[str, ...] = field(default=(), compare=False)

    def overrides(self) -> Overrides:
        """The command-line overrides these settings stand for (ConfigError on an unknown selector)."""
        return Overrides(
            select=self.select,
            ignore=self.ignore,
            extend_select=self.extend_select,
            torch_version=parse_torch_version(self.torch_version) if self.torch_version else None,
        )


def combine(*layers: Any) -> Dict[str, Any]:
    """One raw settings object from several, later ones winning key by key (objects only)."""
    merged: Dict[str, Any] = {}
    for layer in layers:
        if isinstance(layer, Mapping):
            merged.update(layer)
    return merged


def parse(raw: Any, where: str) -> ClientSettings:
    """Settings from a JSON object; ``where`` names the source in problem messages."""
    if raw is None:
        return ClientSettings()
    if not isinstance(raw, Mapping):
        return ClientSettings(problems=(f"{where}: expected an object with mpslint settings, got {raw!r}",))
    problems: List[str] = []
    values: Dict[str, Any] = {}
    for key, value in raw.items():
        if key == "unsafeFixes":
            if isinstance(value, bool):
                values["unsafe_fixes"] = value
            else:
                problems.append(f"{where}: `unsafeFixes` must be true or false, got {value!r}")
        elif key == "configuration":
            if value is None or (isinstance(value, str) and value.strip()):
                values["configuration"] = value
            else:
                problems.append(f"{where}: `configuration` must be the path of a config file, got {value!r}")
        elif key == "torchVersion":
            if value is None:
                continue
            try:
                parse_torch_version(value if isinstance(value, str) else "")
            except ConfigError:
                problems.append(f"{where}: `torchVersion` must be a string such as \"2.4\", got {value!r}")
            else:
                values["torch_version"] = value
        elif key in _LISTS:
            if value is None:
                continue
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                values[_LISTS[key]] = tuple(value)
            else:
                problems.append(f"{where}: `{key}` must be a list of rule codes, prefixes or names, got {value!r}")
        else:
            problems.append(f"{where}: unknown setting `{key}` (known: {', '.join(KEYS)})")
    settings = ClientSettings(**values, problems=tuple(problems))
    try:
        select_codes(settings.select, settings.ignore, settings.extend_select)
    except ConfigError as exc:
        return ClientSettings(
            unsafe_fixes=settings.unsafe_fixes,
            configuration=settings.configuration,
            torch_version=settings.torch_version,
            problems=settings.problems + (f"{where}: {exc}; rule selection settings ignored",),
        )
    return settings
