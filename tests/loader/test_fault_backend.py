"""The test backend that fails on purpose (loader/backends/faulty.cpp, tests/support/faulty.py) does
what each mode says when a program's delegate runs on it in the loading process, with nothing to
protect the process: the faults the isolation and fallback tests (issue 38) must survive. Each
run is fatpte-run with only the faulty entry tried (--entry faulty0, --no-fallback)."""

from __future__ import annotations

import json
import math
import signal
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripts import load_script
from tests.support import faulty

pytestmark = pytest.mark.loader_build("fatpte-run", f"{faulty.FOLDER}/{faulty.LIBRARY}", sdk=True, only="release")


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


def _alone(build: Path, tmp_path: Path, mode: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    container = faulty.container(tmp_path / f"{mode}.nfat", "add", [mode])
    calls = _example().write_calls("add", tmp_path / "calls.json")
    return subprocess.run([str(build / "fatpte-run"), str(container), "--inputs", str(calls), "--entry", "faulty0",
                           "--no-fallback", "--json", "--backend-lib",
                           f"{faulty.BACKEND_ID}={faulty.library(build)}"],
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.mark.parametrize(("mode", "signum"), [("segv_init", signal.SIGSEGV), ("sigill_init", signal.SIGILL)])
def test_a_fault_in_init_kills_the_loading_process(build: Path, tmp_path: Path, mode: str, signum: int) -> None:
    proc = _alone(build, tmp_path, mode)
    assert proc.returncode == -signum, (proc.returncode, proc.stderr)


def test_good_computes_the_portable_function(build: Path, tmp_path: Path) -> None:
    proc = _alone(build, tmp_path, "good")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["chosen"] == "faulty0"
    ex = _example()
    assert ex.mismatches([c["outputs"] for c in doc["calls"]], ex.recorded_outputs("add")) == []


def test_execute_error_fails_the_call(build: Path, tmp_path: Path) -> None:
    proc = _alone(build, tmp_path, "execute_error")
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["chosen"] == "faulty0" and doc["error"]["code"] == "E0702"
    assert "call 0" in doc["error"]["message"]


def test_nan_outputs_are_served_as_they_are(build: Path, tmp_path: Path) -> None:
    proc = _alone(build, tmp_path, "nan")
    assert proc.returncode == 0, proc.stderr
    values = json.loads(proc.stdout)["calls"][0]["outputs"][0]["values"]
    assert values and all(isinstance(v, float) and math.isnan(v) or v == "nan" for v in values), values


def test_hang_never_returns(build: Path, tmp_path: Path) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        _alone(build, tmp_path, "hang", timeout=5)


def test_a_mode_from_a_later_call(tmp_path: Path) -> None:
    """"@N": the payload the backend parses, and the program keeps the fixture's signature."""
    from fatpte.executorch.pte import read_program

    data = faulty.program("buffer", "execute_error", 1)
    (method,) = read_program(data).methods
    (delegate,) = method.delegates
    assert delegate.backend_id == faulty.BACKEND_ID
    assert bytes(read_program(data).payload(delegate)) == b"FAULTY1 execute_error@1"
    portable = read_program(faulty.portable("buffer").read_bytes()).methods[0]
    assert [method.tensors[i].shape for i in method.inputs] == [portable.tensors[i].shape for i in portable.inputs]
    with pytest.raises(ValueError):
        faulty.payload("melt")
