"""Static checks that guard the public surface: the hand-written stub matches the binary, and the
Python sources pass ruff."""

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
