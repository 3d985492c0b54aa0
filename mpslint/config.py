"""Settings: what one file is checked with.

(Loading ``[tool.mpslint]`` from ``pyproject.toml``/``mpslint.toml`` and CLI
overrides lives below ``Settings``.)
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple

from mpslint import registry


class ConfigError(Exception):
    """A bad configuration value or selector; the CLI exits 2 with this message."""


TorchVersion = Tuple[int, int]


@dataclass(frozen=True)
class Settings:
    """The effective settings for a file. Hashable: it keys the cache."""

    select: FrozenSet[str] = field(default_factory=lambda: frozenset(registry.rule_codes()))
    torch_version: Optional[TorchVersion] = None
    device_helper: str = "inline"
    report_interval_guarded: bool = False

    def with_codes(self, codes: Iterable[str]) -> "Settings":
        return replace(self, select=frozenset(codes))


def resolve_selectors(selectors: Iterable[str], *, setting: str = "select") -> FrozenSet[str]:
    """Codes matched by selectors: full codes, prefixes (``MPS1``, ``MPS``) or names."""
    codes = registry.rule_codes()
    by_name = registry.codes_by_name()
    chosen = set()
    for raw in selectors:
        selector = raw.strip()
        if not selector:
            continue
        if selector.upper() == "ALL":
            chosen.update(codes)
            continue
        if selector in by_name:
            chosen.add(by_name[selector])
            continue
        if selector.upper() in registry.ENGINE_CODES:
            continue  # always reported; accepted so suppression lists can name them
        upper = selector.upper()
        matched = [c for c in codes if c.startswith(upper)]
        if not matched or not upper.startswith("MPS"):
            raise ConfigError(f"unknown rule selector {selector!r} in {setting}")
        chosen.update(matched)
    return frozenset(chosen)


def select_codes(
    select: Optional[Iterable[str]] = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
) -> FrozenSet[str]:
    """Ruff's semantics: ``select`` sets the base (default: every rule), ``extend-select`` adds, ``ignore`` removes."""
    base = registry.rule_codes() if select is None else resolve_selectors(select)
    chosen = set(base) | resolve_selectors(extend_select, setting="extend-select")
    chosen -= resolve_selectors(ignore, setting="ignore")
    return frozenset(chosen)


def parse_torch_version(value: str) -> TorchVersion:
    """``"2.5"``, ``"2.5.1"``, ``"2.13.0+cpu"`` -> (2, 5)."""
    text = str(value).strip()
    parts = text.split("+", 1)[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ConfigError(f"invalid torch-version {value!r}: expected MAJOR.MINOR such as \"2.5\"") from None
    return (major, minor)


# ---------------------------------------------------------------------------
# Loading: [tool.mpslint] in pyproject.toml, or mpslint.toml; CLI overrides.
# ---------------------------------------------------------------------------

CONFIG_FILES = ("mpslint.toml", "pyproject.toml")  # in this order: mpslint.toml wins in one directory

# Directories no user wants linted (Ruff's defaults, plus our cache).
DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".mpslint_cache", ".svn",
    ".tox", ".venv", ".vscode", "__pypackages__", "__pycache__", "_build", "buck-out", "build", "dist",
    "node_modules", "site-packages", "venv",
)

# Keys with their own handling; every other key maps onto a Settings field.
_SELECTION_KEYS = ("select", "ignore", "extend-select")
_SPECIAL_KEYS = _SELECTION_KEYS + ("per-file-ignores", "exclude", "extend-exclude", "respect-gitignore")
_DEVICE_HELPER = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    return tomllib


def read_toml(path: Path) -> Dict[str, Any]:
    tomllib = _toml()
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def mpslint_table(path: Path, data: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The mpslint settings in a config file, or None when a pyproject.toml has none."""
    section = data.get("tool", {}).get("mpslint") if isinstance(data.get("tool"), dict) else None
    if path.name == "pyproject.toml":
        return section
    # mpslint.toml: keys at the top level (like ruff.toml); a [tool.mpslint] table is accepted too.
    return section if section is not None else {k: v for k, v in data.items() if k != "tool"}


@dataclass(frozen=True)
class PerFileIgnore:
    pattern: str
    negated: bool
    codes: FrozenSet[str]

    def applies(self, relative: str) -> bool:
        hit = _glob_match(self.pattern, relative)
        return hit != self.negated


def _glob_match(pattern: str, relative: str) -> bool:
    """Ruff-style globs: a pattern with a ``/`` is relative to the project root, else it matches a name.

    ``*`` stays within one path segment and ``**`` crosses segments, as in ``.gitignore``.
    """
    pattern = pattern.rstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if "/" in pattern:
        return _glob_regex(pattern).fullmatch(relative) is not None
    return _glob_regex(pattern).fullmatch(relative.rsplit("/", 1)[-1]) is not None


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> "re.Pattern[str]":
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


@dataclass(frozen=True)
class Overrides:
    """What the command line says; it beats every config file."""

    select: Optional[Tuple[str, ...]] = None
    ignore: Tuple[str, ...] = ()
    extend_select: Tuple[str, ...] = ()
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()
    torch_version: Optional[TorchVersion] = None


@dataclass
class ProjectConfig:
    """One config file (or the defaults) and everything derived from it."""

    root: Path
    path: Optional[Path]
    settings: Settings
    per_file_ignores: Tuple[PerFileIgnore, ...] = ()
    exclude: Tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: Tuple[str, ...] = ()
    respect_gitignore: bool = True

    def __post_init__(self) -> None:
        self._by_codes: Dict[FrozenSet[str], Settings] = {}
        self._root_prefix = os.path.join(os.path.abspath(self.root), "")

    def relative(self, path: Path) -> str:
        """``path`` relative to the root, with ``/``; absolute when outside the root."""
        absolute = os.path.abspath(path)
        root = self._root_prefix
        if absolute.startswith(root):
            absolute = absolute[len(root):]
        return absolute.replace(os.sep, "/") if os.sep != "/" else absolute

    def settings_for(self, path: Path) -> Settings:
        """The settings for one file: per-file-ignores applied (Settings objects are shared)."""
        if not self.per_file_ignores:
            return self.settings
        relative = self.relative(path)
        ignored = set()
        for entry in self.per_file_ignores:
            if entry.applies(relative):
                ignored |= entry.codes
        if not ignored:
            return self.settings
        codes = frozenset(self.settings.select - ignored)
        cached = self._by_codes.get(codes)
        if cached is None:
            cached = self._by_codes[codes] = self.settings.with_codes(codes)
        return cached

    def exclude_patterns(self) -> Tuple[str, ...]:
        return tuple(self.exclude) + tuple(self.extend_exclude)

    def is_excluded(self, path: Path, *, check_parents: bool = False) -> bool:
        """Whether ``path`` (or, with ``check_parents``, a directory above it up to the root) is excluded."""
        relative = self.relative(path)
        if not check_parents:
            return self._excluder()(relative)
        parts = relative.split("/")
        excluded = self._excluder()
        return any(excluded("/".join(parts[: i + 1])) for i in range(len(parts)))

    def _excluder(self):
        """One matcher for all patterns; discovery calls it for every entry of every directory."""
        matcher = getattr(self, "_exclude_matcher", None)
        if matcher is None:
            names = set()
            name_regexes = []
            path_regexes = []
            for raw in self.exclude_patterns():
                pattern = raw.rstrip("/")
                if pattern.startswith("./"):
                    pattern = pattern[2:]
                if "/" in pattern:
                    path_regexes.append(_glob_regex(pattern).pattern)
                elif any(ch in pattern for ch in "*?["):
                    name_regexes.append(_glob_regex(pattern).pattern)
                else:
                    names.add(pattern)
            name_re = re.compile("|".join(f"(?:{r})" for r in name_regexes)) if name_regexes else None
            path_re = re.compile("|".join(f"(?:{r})" for r in path_regexes)) if path_regexes else None

            def matcher(relative: str) -> bool:
                name = relative.rsplit("/", 1)[-1]
                if name in names:
                    return True
                if name_re is not None and name_re.fullmatch(name):
                    return True
                return path_re is not None and path_re.fullmatch(relative) is not None

            self._exclude_matcher = matcher
        return matcher


def _string_list(value: Any, key: str, source: str) -> Tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def _codes_in(value: Any, key: str, source: str) -> FrozenSet[str]:
    selectors = _string_list(value, key, source)
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


def _coerce_field(name: str, value: Any, source: str) -> Any:
    """A config value for a Settings field, checked against the field's type."""
    key = name.replace("_", "-")
    if name == "torch_version":
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(f"{source}: `torch-version` must be a string such as \"2.5\", got {value!r}")
        try:
            return parse_torch_version(str(value))
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    if name == "device_helper":
        return validate_device_helper(value, source)
    import dataclasses
    import typing

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
    import typing

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


def _settings_fields() -> Dict[str, str]:
    import dataclasses

    return {f.name.replace("_", "-"): f.name for f in dataclasses.fields(Settings) if f.name != "select"}


def build_config(
    table: Dict[str, Any],
    *,
    root: Path,
    path: Optional[Path],
    overrides: Overrides = Overrides(),
) -> ProjectConfig:
    """Validate one ``[tool.mpslint]`` table and combine it with the command line."""
    source = str(path) if path is not None else "command line"
    fields = _settings_fields()
    for key in table:
        if key not in _SPECIAL_KEYS and key not in fields:
            known = ", ".join(sorted(set(_SPECIAL_KEYS) | set(fields)))
            raise ConfigError(f"{source}: unknown key `{key}` in [tool.mpslint] (known keys: {known})")

    # Ruff's layering: the config file, then the command line. A layer's `select` resets the choice.
    codes = set(registry.rule_codes())
    if "select" in table:
        codes = set(_codes_in(table["select"], "select", source))
    if "extend-select" in table:
        codes |= _codes_in(table["extend-select"], "extend-select", source)
    if "ignore" in table:
        codes -= _codes_in(table["ignore"], "ignore", source)
    if overrides.select is not None:
        codes = set(resolve_selectors(overrides.select, setting="--select"))
    codes |= resolve_selectors(overrides.extend_select, setting="--extend-select")
    codes -= resolve_selectors(overrides.ignore, setting="--ignore")

    values: Dict[str, Any] = {}
    for key, name in fields.items():
        if key in table:
            values[name] = _coerce_field(name, table[key], source)
    if overrides.torch_version is not None:
        values["torch_version"] = overrides.torch_version
    elif values.get("torch_version") is None:
        inferred = infer_torch_version(root)
        if inferred is not None:
            values["torch_version"] = inferred
    settings = Settings(select=frozenset(codes), **values)

    per_file: List[PerFileIgnore] = []
    raw = table.get("per-file-ignores", {})
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: `per-file-ignores` must be a table of glob = [codes], got {raw!r}")
    for pattern, selectors in raw.items():
        negated = pattern.startswith("!")
        key = f"per-file-ignores.{pattern!r}"
        per_file.append(PerFileIgnore(pattern[1:] if negated else pattern, negated, _codes_in(selectors, key, source)))

    exclude = DEFAULT_EXCLUDE
    if "exclude" in table:
        exclude = _string_list(table["exclude"], "exclude", source)
    if overrides.exclude is not None:
        exclude = overrides.exclude
    extend = _string_list(table.get("extend-exclude", []), "extend-exclude", source) + overrides.extend_exclude
    respect = table.get("respect-gitignore", True)
    if not isinstance(respect, bool):
        raise ConfigError(f"{source}: `respect-gitignore` must be true or false, got {respect!r}")
    return ProjectConfig(
        root=root,
        path=path,
        settings=settings,
        per_file_ignores=tuple(per_file),
        exclude=exclude,
        extend_exclude=extend,
        respect_gitignore=respect,
    )


def load_config_file(path: Path, overrides: Overrides = Overrides()) -> ProjectConfig:
    path = Path(os.path.abspath(path))
    data = read_toml(path)
    table = mpslint_table(path, data)
    return build_config(table or {}, root=path.parent, path=path, overrides=overrides)


# `torch>=2.1`, `torch ~= 2.3`, `torch[opt]==2.4.1`, `torch>=2.1,<3` -> the floor.
_TORCH_REQ = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?:\([^)]*\))?(?P<specs>[^;#]*)", re.IGNORECASE)
_FLOOR = re.compile(r"(>=|~=|==|>)\s*(\d+)\.(\d+)")


def _torch_floor(requirement: str) -> Optional[TorchVersion]:
    match = _TORCH_REQ.match(requirement)
    if not match:
        return None
    rest = match.group("specs")
    if rest and rest[0].isalnum() or rest.startswith(("-", "_", ".")):
        return None  # torchvision, torch-audio, ...: another package
    floors = [(int(m.group(2)), int(m.group(3))) for m in _FLOOR.finditer(rest)]
    return max(floors) if floors else None


def infer_torch_version(root: Path) -> Optional[TorchVersion]:
    """The lowest torch floor the project at ``root`` declares, or None."""
    requirements: List[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            project = read_toml(pyproject).get("project", {})
        except ConfigError:
            project = {}
        if isinstance(project, dict):
            deps = project.get("dependencies", [])
            if isinstance(deps, list):
                requirements.extend(d for d in deps if isinstance(d, str))
            optional = project.get("optional-dependencies", {})
            if isinstance(optional, dict):
                for group in optional.values():
                    if isinstance(group, list):
                        requirements.extend(d for d in group if isinstance(d, str))
    try:
        names = sorted(n for n in os.listdir(root) if n.startswith("requirements") and n.endswith(".txt"))
    except OSError:
        names = []
    for name in names:
        try:
            with open(root / name, encoding="utf-8", errors="replace") as handle:
                requirements.extend(line.split("#", 1)[0] for line in handle)
        except OSError:
            continue
    floors = [f for f in (_torch_floor(r) for r in requirements) if f is not None]
    return min(floors) if floors else None


class ConfigResolver:
    """Finds the config for each file: ``--config`` for all, else the nearest one (cached per directory)."""

    def __init__(self, overrides: Overrides = Overrides(), config_path: Optional[Path] = None, cwd: Optional[Path] = None):
        self.overrides = overrides
        self.cwd = Path(os.path.abspath(cwd or os.getcwd()))
        self._by_dir: Dict[Path, ProjectConfig] = {}
        self._by_file: Dict[Path, ProjectConfig] = {}
        self.fixed: Optional[ProjectConfig] = load_config_file(config_path, overrides) if config_path else None
        self._default: Optional[ProjectConfig] = None

    def default(self) -> ProjectConfig:
        """No config file: defaults, rooted at the current directory."""
        if self._default is None:
            self._default = build_config({}, root=self.cwd, path=None, overrides=self.overrides)
        return self._default

    def for_path(self, path: Path) -> ProjectConfig:
        """The config governing ``path`` (a file or a directory)."""
        if self.fixed is not None:
            return self.fixed
        path = Path(os.path.abspath(path))
        directory = path if path.is_dir() else path.parent
        return self.for_directory(directory)

    def for_directory(self, directory: Path) -> ProjectConfig:
        if self.fixed is not None:
            return self.fixed
        found = self._by_dir.get(directory)
        if found is not None:
            return found
        visited = []
        current: Optional[Path] = directory
        config = None
        while current is not None:
            cached = self._by_dir.get(current)
            if cached is not None:
                config = cached
                break
            visited.append(current)
            config = self._config_in(current)
            if config is not None:
                break
            parent = current.parent
            current = parent if parent != current else None
        if config is None:
            config = self.default()
        for seen in visited:
            self._by_dir[seen] = config
        return config

    def _config_in(self, directory: Path) -> Optional[ProjectConfig]:
        for name in CONFIG_FILES:
            candidate = directory / name
            if not candidate.is_file():
                continue
            cached = self._by_file.get(candidate)
            if cached is not None:
                return cached
            data = read_toml(candidate)
            table = mpslint_table(candidate, data)
            if table is None:
                continue  # a pyproject.toml without [tool.mpslint]: keep looking upwards
            config = build_config(table, root=directory, path=candidate, overrides=self.overrides)
            self._by_file[candidate] = config
            return config
        return None

    def cache_root(self) -> Path:
        """Where ``.mpslint_cache`` lives: the project root of the current directory."""
        config = self.fixed or self.for_directory(self.cwd)
        return config.root if config.path is not None else self.cwd
