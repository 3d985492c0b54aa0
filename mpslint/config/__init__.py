"""Configuration: ``[tool.mpslint]`` in ``pyproject.toml`` or ``mpslint.toml``, and the command line's overrides.

One module per concern:

- ``settings``: ``Settings`` (what one file is checked with), ``Overrides`` (the command line), ``ConfigError``;
- ``selectors``: rule selectors (codes, prefixes, names, ``ALL``) -> codes;
- ``torch_version``: parsing and checking a ``torch-version`` floor;
- ``torch_floor``: inferring the floor from a project's declared dependencies;
- ``toml_file``: reading config files;
- ``values``: config values -> typed ``Settings`` fields;
- ``globs``: the ``exclude`` and ``per-file-ignores`` patterns;
- ``project``: ``ProjectConfig``, one project's root, settings and excludes;
- ``table``: one ``[tool.mpslint]`` table + overrides -> ``ProjectConfig``;
- ``resolver``: which ``ProjectConfig`` governs a file.

The names below are the package's public API.
"""

from mpslint.config.globs import PerFileIgnore, glob_match
from mpslint.config.project import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, ProjectConfig
from mpslint.config.resolver import ConfigResolver
from mpslint.config.selectors import engine_codes, resolve_selectors, select_codes
from mpslint.config.settings import ConfigError, Overrides, Settings, TorchVersion
from mpslint.config.table import build_config, load_config_file
from mpslint.config.toml_file import CONFIG_FILES, mpslint_table, read_toml
from mpslint.config.torch_floor import infer_torch_version
from mpslint.config.torch_version import FIRST_MPS_TORCH, check_torch_floor, parse_torch_version
from mpslint.config.values import validate_device_helper

__all__ = [
    "CONFIG_FILES",
    "DEFAULT_EXCLUDE",
    "DEFAULT_INCLUDE",
    "FIRST_MPS_TORCH",
    "ConfigError",
    "ConfigResolver",
    "Overrides",
    "PerFileIgnore",
    "ProjectConfig",
    "Settings",
    "TorchVersion",
    "build_config",
    "check_torch_floor",
    "engine_codes",
    "glob_match",
    "infer_torch_version",
    "load_config_file",
    "mpslint_table",
    "parse_torch_version",
    "read_toml",
    "resolve_selectors",
    "select_codes",
    "validate_device_helper",
]
