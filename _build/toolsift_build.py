"""toolsift's build backend: maturin's, after a check that Rust is there.

Without ``cargo`` on PATH, maturin's own backend quietly downloads a Rust toolchain of several
hundred megabytes into a temporary folder. A user who meant to install a prebuilt wheel (or who
has no network) gets a long silent wait instead of a reason. This backend stops first with what
to install; ``TOOLSIFT_BOOTSTRAP_RUST=1`` lets maturin download Rust as before.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import maturin
from maturin import build_sdist, get_requires_for_build_sdist  # noqa: F401  (re-exported hooks)

RUST_VERSION = "1.85"  # rust-version of Cargo.toml

MESSAGE = f"""
toolsift: building from source needs Rust {RUST_VERSION} or newer, and `cargo` is not on PATH.

  * To install without building, use a prebuilt wheel: pip install toolsift
    (manylinux, macOS and Windows wheels for CPython 3.10+; see README.md, Install).
  * To build from source, install Rust first: https://rustup.rs
    (curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh), then retry.
  * Or set TOOLSIFT_BOOTSTRAP_RUST=1 to let maturin download a temporary Rust toolchain
    (several hundred MB) for this build.
"""


class RustMissingError(RuntimeError):
    """Raised by the build hooks when no Rust toolchain is available."""


def _check_rust() -> None:
    if os.environ.get("TOOLSIFT_BOOTSTRAP_RUST") == "1" or os.environ.get("MATURIN_NO_INSTALL_RUST"):
        return
    if shutil.which("cargo") is None:
        raise RustMissingError(MESSAGE)


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    _check_rust()
    return list(maturin.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    _check_rust()
    return list(maturin.get_requires_for_build_wheel(config_settings))


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    _check_rust()
    return str(maturin.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    _check_rust()
    return str(maturin.build_editable(wheel_directory, config_settings, metadata_directory))


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    _check_rust()
    return str(maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings))
