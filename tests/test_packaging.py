"""Packaging: the wheel is manylinux and abi3 and installs and runs where no Rust is; a source
build without Rust says what to install instead of downloading a toolchain; the release workflow
is a valid GitHub workflow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def without_rust() -> dict[str, str]:
    """This environment with every folder holding ``cargo`` or ``rustc`` left off PATH."""
    folders = [
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if p and not any((Path(p) / x).exists() for x in ("cargo", "rustc"))
    ]
    skip = ("CARGO", "RUSTUP", "MATURIN", "TOOLSIFT", "PYTHONPATH", "VIRTUAL_ENV")  # a checkout on PYTHONPATH
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}  # would shadow the wheel
    env["PATH"] = os.pathsep.join(folders)
    # the interpreter itself must stay reachable
    assert shutil.which("cargo", path=env["PATH"]) is None
    return env


def test_a_source_build_without_rust_says_what_to_install(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        env=without_rust(),
        timeout=300,
    )
    out = run.stdout + run.stderr
    assert run.returncode != 0
    assert "needs Rust 1.85 or newer" in out and "https://rustup.rs" in out and "TOOLSIFT_BOOTSTRAP_RUST" in out
    assert "puccinialin" not in out  # no toolchain was fetched
    assert not list(tmp_path.glob("*.whl"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release wheel built for manylinux 2.17 (glibc 2.17, CentOS 7 and newer) with zig as
    the linker, as `maturin build --release --zig --compatibility manylinux_2_17` builds it."""
    pytest.importorskip("ziglang")
    out = tmp_path_factory.mktemp("wheel")
    env = dict(os.environ, CARGO_TARGET_DIR=str(ROOT / "target" / "wheel"))
    command = [sys.executable, "-m", "maturin", "build", "--release", "--zig", "--compatibility", "manylinux_2_17"]
    run = subprocess.run([*command, "-o", str(out)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=1500)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (found,) = out.glob("*.whl")
    return found


def test_the_wheel_is_abi3_manylinux_and_holds_the_package(wheel: Path) -> None:
    assert "-cp310-abi3-" in wheel.name and "manylinux_2_17_x86_64" in wheel.name
    show = subprocess.run([sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True)
    assert show.returncode == 0, show.stderr
    assert 'platform tag to "manylinux_2_17_x86_64"' in " ".join(show.stdout.split())
    names = zipfile.ZipFile(wheel).namelist()
    assert "toolsift/_core.abi3.so" in names and "toolsift/py.typed" in names and "toolsift/index.py" in names


def test_the_wheel_installs_without_rust_and_runs_the_quickstart(wheel: Path, tmp_path: Path) -> None:
    env = without_rust()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    run = subprocess.run(
        [str(python), str(ROOT / "tests" / "quickstart.py"), str(ROOT / "README.md")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # not the checkout: the installed package, not python/toolsift
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"quickstart ok with {venv}" in run.stdout


def test_the_release_workflow_is_a_valid_github_workflow() -> None:
    workflow = ROOT / ".github" / "workflows" / "release.yml"
    run = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(workflow)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    text = workflow.read_text(encoding="utf-8")
    for platform in ("ubuntu-latest, target: x86_64", "target: aarch64", "macos-14", "windows-latest"):
        assert platform in text
    assert "tests/quickstart.py" in text
