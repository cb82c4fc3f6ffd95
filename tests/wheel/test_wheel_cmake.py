"""The wheel's CMake project (the top-level CMakeLists.txt) refuses, naming what to do, to run
outside scikit-build-core and to build without the ExecuTorch SDK (docs/wheels.md)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import ROOT


def configure(build: Path, *defines: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("cmake") is None:
        pytest.fail("cmake is not on PATH")
    return subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), *defines], capture_output=True, text=True,
                          timeout=120, check=False)


def test_it_runs_only_under_scikit_build_core(tmp_path: Path) -> None:
    done = configure(tmp_path / "b")
    assert done.returncode != 0
    assert "builds the fatpte wheel under scikit-build-core" in done.stderr and "make loader" in done.stderr


def test_it_names_the_missing_sdk_and_the_pure_fallback(tmp_path: Path) -> None:
    done = configure(tmp_path / "b", "-DSKBUILD=ON", f"-DFATPTE_EXECUTORCH_SDK={tmp_path / 'none'}")
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert f"no ExecuTorch SDK at {tmp_path / 'none'}" in said, said
    assert "make executorch-sdk" in said and "-C wheel.cmake=false" in said
