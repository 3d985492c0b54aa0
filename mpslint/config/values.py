"""Config values -> typed ``Settings`` fields, with an error that names the key and the file.

Keys map onto ``Settings`` fields generically (``report-interval-guarded`` ->
``report_interval_guarded``, checked against the field's type), so a new
setting needs only its field; ``torch-version`` and ``device-helper`` have
their own checks.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any, Dict, FrozenSet, Tuple

from mpslint.config.selectors import resolve_selectors
from mpslint.config.settings import ConfigError, Settings
from mpslint.config.torch_version import torch_version_from_config

_DEVICE_HELPER = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def settings_fields() -> Dict[str, str]:
    """Config key -> Settings field, for every field a config sets directly (``select`` is layered instead)."""
    return {f.name.replace("_", "-"): f.name for f in dataclasses.fields(Settings)
            if f.name != "select" and f.metadata.get("config", True)}


def string_list(value: Any, key: str, source: str) -> Tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def codes_in(value: Any, key: str, source: str) -> FrozenSet[str]:
    selectors = string_list(value, key, source)
    try:
        return resolve_selectors(selectors, setting=key)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def validate_device_helper(value: Any, source: str = "device-helper") -> str:
    if not isinstance(value, str) or not (value == "inline" or _DEVICE_HELPER.match(value)):
        raise ConfigError(
            f"{source}: invalid `device-helper` {value!r}: expected \"inline\" or \"package.module:function\""
        )
    return value


def coerce_field(name: str, value: Any, source: str) -> Any:
    """A config value for a Settings field, checked against the field's type."""
    key = name.replace("_", "-")
    if name == "torch_version":
        try:
            return torch_version_from_config(value)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    if name == "device_helper":
        return validate_device_helper(value, source)
    spec = next(f for f in dataclasses.fields(Settings) if f.name == name)
    parse = spec.metadata.get("parse") if spec.metadata else None
    if parse is not None:  # a field that knows how to read its own config value
        try:
            return parse(value)
        except (ValueError, TypeError, ConfigError) as exc:
            raise ConfigError(f"{source}: invalid `{key}` {value!r}: {exc}") from None
    hint = typing.get_type_hints(Settings).get(name, Any)
    ok, coerced = _check_type(value, hint)
    if not ok:
        shown = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
        raise ConfigError(f"{source}: invalid `{key}` {value!r}: expected {shown}")
    return coerced


def _check_type(value: Any, hint: Any) -> Tuple[bool, Any]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is Any:
        return True, value
    if origin is typing.Union:
        if value is None and type(None) in args:
            return True, None
        for arg in args:
            if arg is type(None):
                continue
            ok, coerced = _check_type(value, arg)
            if ok:
                return True, coerced
        return False, None
    if hint is bool:
        return isinstance(value, bool), value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool), float(value) if isinstance(value, (int, float)) else None
    if hint is str:
        return isinstance(value, str), value
    if origin in (tuple, frozenset, list, set):
        if not isinstance(value, list):
            return False, None
        item = args[0] if args else Any
        items = []
        for element in value:
            ok, coerced = _check_type(element, item)
            if not ok:
                return False, None
            items.append(coerced)
        return True, (frozenset(items) if origin in (frozenset, set) else tuple(items))
    if isinstance(hint, type):
        return isinstance(value, hint), value
    return True, value
