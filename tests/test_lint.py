"""Static checks, run by CI with the tests: the hand-written stub matches the binary, the Python
sources pass ruff, ruff format and mypy --strict, the Rust sources cargo fmt and clippy with
warnings as errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_core_stub_matches_the_compiled_module() -> None:
    pytest.importorskip("mypy")
    run = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "toolsift._core"], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_python_sources_pass_ruff() -> None:
    run = subprocess.run(["ruff", "check", "python", "tests", "benches"], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr


def _run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_python_sources_are_formatted() -> None:
    run = _run(["ruff", "format", "--check", "python", "tests", "benches", "_build"])
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_package_passes_mypy_strict() -> None:
    pytest.importorskip("mypy")
    run = _run([sys.executable, "-m", "mypy", "python"])
    assert run.returncode == 0, run.stdout + run.stderr


def test_rust_sources_are_formatted() -> None:
    run = _run(["cargo", "fmt", "--check"])
    assert run.returncode == 0, run.stdout + run.stderr


def test_clippy_finds_nothing() -> None:
    run = _run(["cargo", "clippy", "--all-features", "--all-targets", "--", "-D", "warnings"])
    assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-5000:]


def test_emitters_feed_the_sdk_clients_under_mypy_strict() -> None:
    pytest.importorskip("mypy")
    check = ROOT / "tests" / "typecheck" / "sdk_clients.py"
    run = _run([sys.executable, "-m", "mypy", "--strict", str(check)])
    assert run.returncode == 0, run.stdout + run.stderr
