"""A finite tolerance no longer accepts a NaN, end to end (issue 42, G3; specs/nfat-manifest.md 11.1).

`atol = rtol = 1.7e308` passes the tolerance rule (finite, at least 0), but `atol + rtol *
max|want|` overflowed to infinity, and an output infinitely far from its golden tensor (a NaN or an
infinity against a number) then passed `fatpte-run --self-test`, `--golden-report`, `fatpte check`
and the fat delegate's self-test. The committed add program (x + y) is packed with three golden
calls, tolerances 1.7e308 or the largest double: one whose input holds a NaN (so does its output),
one whose output overflows to infinity, both against finite recorded sums, and one whose finite
output is 3e38 from the recorded value, which the largest finite tolerance lets pass. The cases are those of
loader/tests/golden_test.cpp and tests/manifest/test_golden_bound.py. Release build.
"""

from __future__ import annotations

import json
import math
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fatpte
from tests.builds import SDK_LIB, loader_build
from tests.paths import ROOT

BUILD = ROOT / "build" / "loader"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
HUGE = 1.7e308
LARGEST = sys.float_info.max
Y = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]


def _tensor(values: list[float], **tolerance: float) -> dict[str, Any]:
    return {"dtype": "float32", "shape": [2, 3], "values": values, **tolerance}


def _call(x: list[float], want: list[float], tol: float, y: list[float] = Y) -> dict[str, Any]:
    return {"inputs": [_tensor(x), _tensor(y)], "outputs": [_tensor(want, atol=tol, rtol=tol)]}


BIG = [3e38, 2, 3, 4, 5, 6]  # 3e38 + 3e38 is past float32: infinity from finite inputs
CALLS = [
    _call([math.nan, 2, 3, 4, 5, 6], [11, 22, 33, 44, 55, 66], HUGE),  # gives NaN, 22, ...
    _call(BIG, [11, 4, 6, 8, 10, 12], HUGE, y=BIG),  # gives inf, 4, ...
    _call([1, 2, 3, 4, 5, 6], [-3e38, 22, 33, 44, 55, 66], LARGEST),  # 3e38 off: finite, within
]
VERDICTS = [False, False, True]


@pytest.fixture(scope="module")
def container(tmp_path_factory: pytest.TempPathFactory) -> Path:
    loader_build("release", "fatpte-run", sdk=True)
    out = tmp_path_factory.mktemp("golden") / "add.nfat"
    spec = fatpte.pte_specialization(FIXTURES / "add_portable.pte", backend_id="portable", name="portable")
    fatpte.pack([spec], out, golden=CALLS)
    assert fatpte.validate(out).ok  # the tolerances are valid: only the bound's arithmetic was wrong
    return out


def run(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BUILD / "fatpte-run"), *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_golden_report_fails_a_nan_and_an_infinity(container: Path) -> None:
    done = run(container, "--golden-report", "--json")
    assert done.returncode == 6, done.stderr
    calls = json.loads(done.stdout)["golden"]["calls"]
    outputs = [c["outputs"][0] for c in calls]
    assert [o["passed"] for o in outputs] == VERDICTS
    assert all(o["bound"] == LARGEST for o in outputs)  # saturated, never infinity
    assert [math.isinf(o["max_abs"]) for o in outputs] == [True, True, False]


def test_the_self_test_refuses_the_entry(container: Path) -> None:
    done = run(container, "--self-test", "--explain")
    assert done.returncode == 3, done.stdout
    assert "self-test failed: E1401: golden call 0 of method 'forward', output 0" in done.stderr
    assert "max abs inf (rel inf) > 1.7e+308 + 1.7e+308 * max|want| = 1.8e+308" in done.stderr


def test_check_agrees(container: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(BUILD / "fatpte-run"), "check",
                           str(container), "--json"], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 6, done.stderr
    report = json.loads(done.stdout)
    (entry,) = report["entries"]
    assert entry["state"] == "disagrees" and report["error"]["code"] == "E1401"
    assert [o["passed"] for o in entry["outputs"]] == VERDICTS
    assert all(o["bound"] == LARGEST for o in entry["outputs"])


def test_the_fat_delegate_self_test_refuses_it_too(tmp_path: Path) -> None:
    """The same calls in a fat .pte (XNNPACK + the nested portable program), its self-test asked for
    and XNNPACK's library absent: the nested program runs them and is refused on the NaN."""
    runner, fat = BUILD / "et_module_runner", BUILD / "libexecutorch_backend_fatpte.so"
    loader_build("release", runner.name, fat.name)
    program = fatpte.merge_programs([FIXTURES / "add_xnnpack.pte", FIXTURES / "add_portable.pte"],
                                    tmp_path / "add_fat.pte", golden=CALLS)
    x, y = tmp_path / "x.bin", tmp_path / "y.bin"
    x.write_bytes(struct.pack("<6f", 1, 2, 3, 4, 5, 6))
    y.write_bytes(struct.pack("<6f", *Y))
    done = subprocess.run([str(runner), "--lib", str(SDK_LIB / "libexecutorch_kernels_optimized.so"), "--lib",
                           str(fat), "--option", "FatpteBackend:self_test=1", str(program), f"{x},{y}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0, done.stdout
    assert "self-test failed: E1401: golden call 0 of method 'forward', output 0" in done.stderr, done.stderr
