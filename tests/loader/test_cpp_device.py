"""`fatpte-run --device-json` (the C++ host probe) prints exactly what Python's host probe does.

Both probe the same machine by different means (C++: cpuid + xgetbv, getauxval, sysctl and the
CUDA driver through dlopen; Python: /proc, sysctl and the driver through ctypes), so agreement
here checks both probes as well as the printer. Skipped with the reason when the loader is not
built; `make test` builds it first.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fatpte.device.fatpte_run import environment
from fatpte.device.profile import DeviceProfile


def test_device_json_is_byte_identical_to_python(exe: Path) -> None:  # `exe`: tests/loader/conftest.py
    # OpenVINO's devices withheld on both sides: the ASan build never loads its runtime, and the
    # release build's agreement on them is tests/loader/test_openvino_runtime.py's.
    proc = subprocess.run([str(exe), "--device-json", "--vendor-runtime", "openvino="], check=False,
                          capture_output=True, timeout=60, env=environment())
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    host = DeviceProfile.host(vendor_runtimes={"openvino": ""})
    assert proc.stdout.decode("ascii") == host.to_json_text()
    # And it is a profile Python accepts.
    assert DeviceProfile.from_json(json.loads(proc.stdout)) == host


@pytest.mark.loader_build("fatpte-run", only="release")
def test_fatpte_run_refuses_what_it_does_not_implement(exe: Path) -> None:
    proc = subprocess.run([str(exe), "model.nfat"], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "usage: fatpte-run" in proc.stderr
