"""The ``torch-version`` floor: parsing ``"2.5"`` and checking it names a torch that can run on MPS."""

from __future__ import annotations

from typing import Any, Optional

from mpslint.config.settings import ConfigError, TorchVersion

# The first release with the mps device: https://pytorch.org/blog/introducing-accelerated-pytorch-training-on-mac/
# ("available in ... PyTorch v1.12") and https://github.com/pytorch/pytorch/releases/tag/v1.12.0.
FIRST_MPS_TORCH: TorchVersion = (1, 12)

_QUOTE_HINT = 'TOML reads an unquoted 2.10 as the number 2.1: quote it, as in torch-version = "2.10"'


def parse_torch_version(value: str) -> TorchVersion:
    """``"2.5"``, ``"2.5.1"``, ``"2.13.0+cpu"`` -> (2, 5)."""
    text = str(value).strip()
    parts = text.split("+", 1)[0].split(".")
    try:
        major, minor = int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ConfigError(f"invalid torch-version {value!r}: expected MAJOR.MINOR such as \"2.5\"") from None
    if major < 0 or minor < 0:
        raise ConfigError(f"invalid torch-version {value!r}: expected MAJOR.MINOR such as \"2.5\"")
    return (major, minor)


def torch_version_from_config(value: Any) -> TorchVersion:
    """A ``torch-version`` value read from TOML: a string only (a float has already lost its digits)."""
    if isinstance(value, bool) or not isinstance(value, str):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ConfigError(f"`torch-version` must be a string, got the number {value!r}; {_QUOTE_HINT}")
        raise ConfigError(f"`torch-version` must be a string such as \"2.5\", got {value!r}")
    return parse_torch_version(value)


def newest_known_torch() -> TorchVersion:
    """The newest torch mpslint has facts for: the version of its bundled op table."""
    from mpslint.knowledge.mps_kernels import latest_bundled_version

    return latest_bundled_version()


def check_torch_floor(version: TorchVersion, name: str = "torch-version") -> Optional[str]:
    """Reject a floor older than MPS itself; return a warning for one newer than mpslint knows, else None.

    ``name`` is how the messages name the setting (``--torch-version`` on the command line).
    """
    shown = f"{version[0]}.{version[1]}"
    if version < FIRST_MPS_TORCH:
        raise ConfigError(
            f"{name} {shown} is older than torch 1.12, the first release with the mps device; "
            "set the oldest torch your code supports on MPS (1.12 or newer)"
        )
    newest = newest_known_torch()
    if version > newest:
        known = f"{newest[0]}.{newest[1]}"
        return (
            f"{name} {shown} is newer than the newest torch mpslint knows ({known}): "
            f"op coverage follows torch {known} unless torch {shown} is installed"
        )
    return None
