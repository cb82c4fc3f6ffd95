"""The `dense_neon` example backend, cross-built for Linux aarch64 and run under qemu-aarch64.

`make test-aarch64` (not part of `make test`) installs Debian's cross compiler and qemu-user,
builds fatpte-run and the `dense_ref` and `dense_neon` backends into build/loader-aarch64 with
loader/cmake/aarch64-linux-gnu.cmake, then runs this file. Checked here: with the Raspberry Pi 5
profile (aarch64 + asimd) `dense_neon` is chosen, loads and runs, and its output equals a
forced `dense_ref` run and the Python reference within 1e-5; the host probe of the cross-built
loader, run under qemu, reports aarch64 with asimd. Skipped with the reason when the cross build
or qemu is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.loader.test_cpp_dispatch import _example, close, outputs
from tests.paths import ROOT

BUILD = ROOT / "build" / "loader-aarch64"
SYSROOT = "/usr/aarch64-linux-gnu"
PI5 = ROOT / "specs" / "devices" / "raspberry-pi-5.json"


@pytest.fixture
def qemu() -> list[str]:
    if not (BUILD / "fatpte-run").exists():
        pytest.skip(f"{BUILD.relative_to(ROOT)} is not built: run `make test-aarch64`")
    exe = shutil.which("qemu-aarch64")
    if exe is None:
        pytest.skip("qemu-aarch64 is not installed: run `make test-aarch64`")
    return [exe, "-L", SYSROOT, str(BUILD / "fatpte-run")]


def run(qemu: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*qemu, *args], check=False, capture_output=True, text=True, timeout=120)


def test_neon_runs_and_matches_dense_ref_and_python(qemu: list[str], tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack_example(tmp_path / "dense.nfat", neon=True)
    values = ex.example_input()
    inp = tmp_path / "input.txt"
    inp.write_text(" ".join(f"{v:.9g}" for v in values))
    want = ex.reference(values)
    common = (str(container), "--device", str(PI5), "--backend-path", str(BUILD / "backends"), "--input", str(inp))

    best = run(qemu, *common, "--explain")
    assert best.returncode == 0, best.stderr
    ran, got = outputs(best.stdout)
    assert ran == "ran: dense_neon [dense_neon]"
    assert "dispatch: dense_neon [dense_neon]: loaded" in best.stdout

    forced = run(qemu, *common, "--exclude", "dense_neon")
    assert forced.returncode == 0, forced.stderr
    ran_p, got_p = outputs(forced.stdout)
    assert ran_p == "ran: dense_ref [dense_ref]"

    assert close(got, want), (got, want)
    assert close(got_p, want), (got_p, want)
    assert close(got, got_p), (got, got_p)


def test_host_probe_under_qemu_reports_aarch64_with_asimd(qemu: list[str]) -> None:
    proc = run(qemu, "--device-json")
    assert proc.returncode == 0, proc.stderr
    profile = json.loads(proc.stdout)
    assert profile["arch"] == "aarch64"
    assert "asimd" in profile["cpu_features"]
