"""The fat delegate refuses an OpenVINO entry compiled for a device the machine lacks, as fatpte-run
does (issue 40): `fatpte merge` records the device an OpenVINO delegate was compiled for as its
entry's requirement, and ExecuTorch running the fat program (et_module_runner, the fat delegate
library loaded) rejects the GPU entry at selection, with the reason in its log, and runs the nested
portable program with the eager outputs. The GPU program is the CPU fixture with its compile spec
rewritten in place (tests/loader/test_openvino_selection.py says why); it is never run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.builds import SDK_LIB
from tests.loader.test_fat_delegate_runtime import FIXTURES, _example, call_files, module_run, parsed
from tests.loader.test_openvino_selection import NEEDS_GPU, gpu_program

pytestmark = pytest.mark.loader_build("et_module_runner", sdk=True)  # `build`: tests/loader/conftest.py
FATPTE = [sys.executable, "-m", "fatpte"]


def test_the_fat_delegate_refuses_the_gpu_entry_and_runs_the_nested_program(build: Path, tmp_path: Path) -> None:
    fat = tmp_path / "mlp_openvino_gpu_fat.pte"
    subprocess.run([*FATPTE, "merge", "-o", str(fat), str(gpu_program(tmp_path)), str(FIXTURES / "mlp_portable.pte")],
                   check=True, capture_output=True, text=True)
    described = subprocess.run([*FATPTE, "info", str(fat)], check=True, capture_output=True, text=True).stdout
    assert "entry openvino: openvino, -, " in described and "requires openvino GPU" in described, described
    calls = call_files("mlp", tmp_path)
    libs = (SDK_LIB / "libexecutorch_kernels_optimized.so", SDK_LIB / "libexecutorch_backend_openvino.so")
    ran = module_run(build, fat, libs=libs, calls=calls)
    assert ran.returncode == 0, ran.stderr
    assert "openvino [openvino]: rejected: " + NEEDS_GPU in ran.stderr, ran.stderr
    assert "running entry portable [portable] as a nested program" in ran.stderr, ran.stderr
    assert "running entry openvino" not in ran.stderr
    assert _example().mismatches(parsed(ran.stdout), _example().recorded_outputs("mlp")) == []
