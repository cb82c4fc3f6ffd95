"""`fatpte-run --device-json` (the C++ host probe) prints exactly what Python's host probe does.

Both probe the same machine by different means (C++: cpuid + xgetbv, getauxval, sysctl and the
CUDA driver through dlopen; Python: /proc, sysctl and the driver through ctypes), so agreement
here checks both probes as well as the printer. Skipped with the reason when the loader is not
built; `make test` builds it first.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from fatpte.device.profile import DeviceProfile
from tests.builds import missing_build
from tests.paths import ROOT

BUILDS = {"release": ROOT / "build" / "loader", "asan": ROOT / "build" / "loader-asan"}


@pytest.mark.parametrize("build", sorted(BUILDS))
def test_device_json_is_byte_identical_to_python(build: str) -> None:
    exe = BUILDS[build] / "fatpte-run"
    if not exe.exists():
        missing_build(f"{exe.relative_to(ROOT)} is not built: run `make loader` (make test builds it first)")
    proc = subprocess.run([str(exe), "--device-json"], check=False, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    expected = DeviceProfile.host().to_json_text()
    assert proc.stdout.decode("ascii") == expected
    # And it is a profile Python accepts.
    assert DeviceProfile.from_json(json.loads(proc.stdout)) == DeviceProfile.host()


def test_fatpte_run_refuses_what_it_does_not_implement() -> None:
    exe = BUILDS["release"] / "fatpte-run"
    if not exe.exists():
        missing_build(f"{exe.relative_to(ROOT)} is not built: run `make loader` (make test builds it first)")
    proc = subprocess.run([str(exe), "model.nfat"], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "usage: fatpte-run" in proc.stderr
