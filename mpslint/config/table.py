"""One ``[tool.mpslint]`` table, validated and layered under the command line, becomes a ``ProjectConfig``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional

from mpslint.config.extend import extended_table
from mpslint.config.globs import PerFileIgnore
from mpslint.config.project import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, ProjectConfig
from mpslint.config.selectors import resolve_selectors
from mpslint.config.settings import ConfigError, Overrides, Settings, every_rule
from mpslint.config.toml_file import mpslint_table, read_toml
from mpslint.config.torch_floor import infer_torch_floor
from mpslint.config.torch_version import check_torch_floor
from mpslint.config.values import codes_in, coerce_field, settings_fields, string_list

# Keys with their own handling; every other key maps onto a Settings field.
_SELECTION_KEYS = ("select", "ignore", "extend-select")
_SPECIAL_KEYS = _SELECTION_KEYS + (
    "per-file-ignores", "exclude", "extend-exclude", "include", "extend-include", "respect-gitignore",
)


def build_config(
    table: Dict[str, Any],
    *,
    root: Path,
    path: Optional[Path],
    overrides: Overrides = Overrides(),
    infer_torch: bool = True,
) -> ProjectConfig:
    """Validate one ``[tool.mpslint]`` table and combine it with the command line.

    Without a ``torch-version`` (here or on the command line), the floor is
    inferred from the dependencies declared in ``root``, unless ``infer_torch``
    is false (defaults for a file that belongs to no project).
    """
    source = str(path) if path is not None else "command line"
    fields = settings_fields()
    _check_keys(table, source, fields)
    if overrides.inline:
        # `--config "key = value"` beats the file, key by key; its mistakes are the option's.
        _check_keys(overrides.inline, "--config", fields)
        table = {**table, **overrides.inline}
        if any(key in overrides.inline for key in _SELECTION_KEYS):
            source = f"{source} with --config"

    # Ruff's layering: the config file, then the command line. A layer's `select` resets the choice.
    codes = set(every_rule())
    if "select" in table:
        codes = set(codes_in(table["select"], "select", source))
    if "extend-select" in table:
        codes |= codes_in(table["extend-select"], "extend-select", source)
    if "ignore" in table:
        codes -= codes_in(table["ignore"], "ignore", source)
    if overrides.select is not None:
        codes = set(resolve_selectors(overrides.select, setting="--select"))
    codes |= resolve_selectors(overrides.extend_select, setting="--extend-select")
    codes -= resolve_selectors(overrides.ignore, setting="--ignore")

    values: Dict[str, Any] = {"ignore_noqa": overrides.ignore_noqa}
    for key, name in fields.items():
        if key in table:
            values[name] = coerce_field(name, table[key], source)
    warnings: List[str] = []
    if values.get("torch_version") is not None:
        try:
            warning = check_torch_floor(values["torch_version"])
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        if warning is not None and overrides.torch_version is None:
            warnings.append(f"{source}: {warning}")
    if overrides.torch_version is not None:
        values["torch_version"] = overrides.torch_version
        values["torch_version_origin"] = "--torch-version"
    elif values.get("torch_version") is not None:
        values["torch_version_origin"] = f"torch-version in {path.name if path is not None else 'the configuration'}"
    elif infer_torch:
        inferred = infer_torch_floor(root)
        if inferred is not None:
            values["torch_version"], values["torch_version_origin"] = inferred
    settings = Settings(select=frozenset(codes), **values)

    per_file: List[PerFileIgnore] = []
    raw = table.get("per-file-ignores", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: `per-file-ignores` must be a table of glob = [codes], got {raw!r}")
    for pattern, selectors in [*raw.items(), *((p, list(c)) for p, c in overrides.extend_per_file_ignores.items())]:
        negated = pattern.startswith("!")
        key = f"per-file-ignores.{pattern!r}"
        per_file.append(PerFileIgnore(pattern[1:] if negated else pattern, negated, codes_in(selectors, key, source)))

    exclude = DEFAULT_EXCLUDE
    if "exclude" in table:
        exclude = string_list(table["exclude"], "exclude", source)
    if overrides.exclude is not None:
        exclude = overrides.exclude
    extend = string_list(table.get("extend-exclude", []), "extend-exclude", source) + overrides.extend_exclude
    include = string_list(table["include"], "include", source) if "include" in table else DEFAULT_INCLUDE
    extend_include = string_list(table.get("extend-include", []), "extend-include", source)
    respect = table.get("respect-gitignore", True)
    if not isinstance(respect, bool):
        raise ConfigError(f"{source}: `respect-gitignore` must be true or false, got {respect!r}")
    if overrides.respect_gitignore is not None:
        respect = overrides.respect_gitignore
    return ProjectConfig(
        root=root,
        path=path,
        settings=settings,
        per_file_ignores=tuple(per_file),
        exclude=exclude,
        extend_exclude=extend,
        respect_gitignore=respect,
        warnings=tuple(warnings),
        include=include,
        extend_include=extend_include,
    )


def _check_keys(table: Dict[str, Any], source: str, fields: Dict[str, str]) -> None:
    for key in table:
        if key not in _SPECIAL_KEYS and key not in fields:
            inline = source == "--config"
            known = ", ".join(sorted(set(_SPECIAL_KEYS) | set(fields) | (set() if inline else {"extend"})))
            where = "" if inline else " in [tool.mpslint]"
            raise ConfigError(f"{source}: unknown key `{key}`{where} (known keys: {known})")


def load_config_file(path: Path, overrides: Overrides = Overrides()) -> ProjectConfig:
    """``--config FILE``: that file's settings, rooted at its directory."""
    path = Path(os.path.abspath(path))
    table = extended_table(path, mpslint_table(path, read_toml(path)) or {})
    return build_config(table, root=path.parent, path=path, overrides=overrides)
