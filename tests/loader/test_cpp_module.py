"""A container as an ExecuTorch Module (fatpte/module.hpp, issue 32): examples/cpp/run_model.cpp,
an ExecuTorch application whose only fatpte line is where its Module comes from, is built against
an installed fatpte that was moved away from its build tree (`cmake --install`, then the prefix
copied elsewhere: the SDK's libraries and headers came with it), and runs the mlp fixture packed
XNNPACK + portable through `module->forward`: the XNNPACK entry, then with XNNPACK withheld
the portable one (fallback at load). Its outputs equal those of ExecuTorch's own Module runner on
each source program, and ExecuTorch's log stays quiet unless asked. Issue 37: it reads the calls.json
`fatpte-run --inputs` takes (or makes one call from MethodMeta) and runs every fixture model, the
two-input and the stateful ones included, with their recorded outputs; every error is printed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

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


def _outputs(stdout: str) -> list[list[dict[str, Any]]]:
    """run_model's `call C output K: {tensor}` lines as calls' outputs."""
    calls: list[list[dict[str, Any]]] = []
    for line in stdout.splitlines()[1:]:
        head, _, tensor = line.partition(": ")
        c = int(head.split()[1])
        calls += [[] for _ in range(c + 1 - len(calls))]
        calls[c].append(json.loads(tensor))
    return calls


def test_the_module_api_runs_the_chosen_entry_and_falls_back(app: Path, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack("mlp", tmp_path / "mlp.nfat")
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    call = ex.fixture("mlp_portable.pte")["calls"][0]
    values = call["inputs"][0]["values"]
    for extra, entry, program in (((), "xnnpack", "mlp_xnnpack.pte"),
                                  (("--withhold", "XnnpackBackend"), "portable", "mlp_portable.pte")):
        proc = subprocess.run([str(app), str(container), "--inputs", str(calls), *extra], capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[0] == f"entry {entry}"
        got = _outputs(proc.stdout)
        assert got[0][0]["values"] == _plain(FIXTURES / program, values, tmp_path)  # as ExecuTorch's runner gives
        assert ex.mismatches(got, ex.recorded_outputs("mlp")) == []
        assert proc.stderr == ""  # no ExecuTorch log line unless the application asks


@pytest.mark.parametrize("model", ["mlp", "add", "buffer", "kvcache", "kvpair"])
def test_every_fixture_model_runs_its_recorded_calls(app: Path, tmp_path: Path, model: str) -> None:
    """The calls.json `fatpte-run --inputs` takes, every call in order on one Module: add takes two
    inputs, kvcache and kvpair a float32 and an int64 and carry a KV cache from call to call (the
    second call's recorded outputs hold only with the first call's state); each entry in turn."""
    ex = _example()
    container = ex.pack(model, tmp_path / f"{model}.nfat")
    calls = ex.write_calls(model, tmp_path / "calls.json")
    for extra, entry in (((), "xnnpack"), (("--withhold", "XnnpackBackend"), "portable")):
        proc = subprocess.run([str(app), str(container), "--inputs", str(calls), *extra], capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines()[0] == f"entry {entry}"
        assert ex.mismatches(_outputs(proc.stdout), ex.recorded_outputs(model)) == [], (model, entry)


@pytest.mark.parametrize("model", ["add", "kvcache"])
def test_without_inputs_one_call_is_made_from_method_meta(app: Path, tmp_path: Path, model: str) -> None:
    """Each input's shape and dtype from the method's MethodMeta, values 0, 1, ...: the outputs have
    the recorded shapes and dtypes."""
    ex = _example()
    container = ex.pack(model, tmp_path / f"{model}.nfat")
    proc = subprocess.run([str(app), str(container)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    (got,) = _outputs(proc.stdout)
    want = ex.recorded_outputs(model)[0]
    assert [(t["dtype"], t["shape"]) for t in got] == [(t["dtype"], t["shape"]) for t in want]


def test_every_error_is_printed(app: Path, tmp_path: Path) -> None:
    """A call that does not fit the method (one input for add's two) fails with ExecuTorch's error
    named on stderr, and a calls.json that is not one with the field that is wrong."""
    ex = _example()
    container = ex.pack("add", tmp_path / "add.nfat")
    one_input = tmp_path / "one.json"
    one_input.write_text(json.dumps([{"inputs": [ex.fixture("add_portable.pte")["calls"][0]["inputs"][0]]}]))
    proc = subprocess.run([str(app), str(container), "--inputs", str(one_input)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 1
    assert "call 0: forward failed: " in proc.stderr and "ExecuTorch error 0x" in proc.stderr, proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('[{"inputs": [{"dtype": "float32", "shape": [2], "values": [1]}]}]')
    proc = subprocess.run([str(app), str(container), "--inputs", str(bad)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2 and "calls[0].inputs[0]" in proc.stderr, proc.stderr


def test_the_moved_install_stands_alone(app: Path) -> None:
    """Nothing of the build tree is named by what the application runs with: its run paths and the
    installed library's lead to the moved prefix (the SDK path of the build tree is only a fallback
    after $ORIGIN), and the dynamic loader takes libexecutorch.so from there."""
    proc = subprocess.run([str(app)], capture_output=True, text=True, env={"LD_DEBUG": "libs"}, check=False)
    found = [line for line in proc.stderr.splitlines() if "libexecutorch.so" in line and "trying file=" in line]
    assert found and "/moved/lib/libexecutorch.so" in found[0], found
    assert any("/moved/" in path for path in _run_paths(app)), _run_paths(app)
