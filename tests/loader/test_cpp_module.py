"""A container as an ExecuTorch Module (fatpte/module.hpp, issue 32): examples/cpp/run_model.cpp,
an ExecuTorch application whose only fatpte line is where its Module comes from, is built against
an installed fatpte that was moved away from its build tree (`cmake --install`, then the prefix
copied elsewhere: the SDK's libraries and headers came with it), and runs the mlp fixture packed
XNNPACK + portable through `module->forward(tensor)`: the XNNPACK entry, then with XNNPACK withheld
the portable one (fallback at load). Its outputs equal those of ExecuTorch's own Module runner on
each source program, and ExecuTorch's log stays quiet unless asked."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.builds import missing_build
from tests.loader.test_cpp_install import _run_paths
from tests.paths import ROOT
from tests.scripts import load_script

BUILD = ROOT / "build" / "loader"
SDK_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (BUILD / "libfatpte.so").exists() or not (BUILD / "et_module_runner").exists():
        missing_build("build/loader is not built: run `make loader`")
    tmp = tmp_path_factory.mktemp("module")
    installed = tmp / "installed"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(installed)], check=True, capture_output=True)
    moved = tmp / "moved"
    shutil.copytree(installed, moved, symlinks=True)
    shutil.rmtree(installed)
    out = tmp / "build"
    subprocess.run(["cmake", "-S", str(ROOT / "examples" / "cpp"), "-B", str(out), f"-DCMAKE_PREFIX_PATH={moved}"],
                   check=True, capture_output=True, text=True)
    subprocess.run(["cmake", "--build", str(out), "-j2"], check=True, capture_output=True, text=True)
    return out / "run_model"


def _plain(program: Path, values: list[float], tmp: Path) -> list[float]:
    """ExecuTorch's own Module runner on the program, with the SDK's kernels and XNNPACK."""
    import struct

    raw = tmp / f"{program.stem}.bin"
    raw.write_bytes(struct.pack(f"<{len(values)}f", *values))
    proc = subprocess.run([str(BUILD / "et_module_runner"), "--lib", str(SDK_LIB / "libexecutorch_kernels_optimized.so"),
                           "--lib", str(SDK_LIB / "libexecutorch_backend_xnnpack.so"), str(program), str(raw)],
                          check=True, capture_output=True, text=True, timeout=120)
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("call 0 output 0:")]
    return [float(v) for v in line.split("]", 1)[1].split()]


def test_the_module_api_runs_the_chosen_entry_and_falls_back(app: Path, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack("mlp", tmp_path / "mlp.nfat")
    call = ex.fixture("mlp_portable.pte")["calls"][0]
    values = call["inputs"][0]["values"]
    for extra, entry, program in (((), "xnnpack", "mlp_xnnpack.pte"),
                                  (("--withhold", "XnnpackBackend"), "portable", "mlp_portable.pte")):
        proc = subprocess.run([str(app), str(container), *extra, *(repr(v) for v in values)], capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == f"entry {entry}"
        got = [float(v) for v in lines[1:]]
        assert got == _plain(FIXTURES / program, values, tmp_path)  # the same bytes ExecuTorch's runner gives
        assert ex.mismatches([[{"dtype": "float32", "shape": [1, 3], "values": got}]],
                             [[call["outputs"][0]]]) == []
        assert proc.stderr == ""  # no ExecuTorch log line unless the application asks


def test_the_moved_install_stands_alone(app: Path) -> None:
    """Nothing of the build tree is named by what the application runs with: its run paths and the
    installed library's lead to the moved prefix (the SDK path of the build tree is only a fallback
    after $ORIGIN), and the dynamic loader takes libexecutorch.so from there."""
    proc = subprocess.run([str(app)], capture_output=True, text=True, env={"LD_DEBUG": "libs"}, check=False)
    found = [line for line in proc.stderr.splitlines() if "libexecutorch.so" in line and "trying file=" in line]
    assert found and "/moved/lib/libexecutorch.so" in found[0], found
    assert any("/moved/" in path for path in _run_paths(app)), _run_paths(app)
