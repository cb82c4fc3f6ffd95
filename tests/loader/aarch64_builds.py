"""What the aarch64 tests (tests/loader/test_aarch64*.py) need, and what happens when it is missing.

They run the loader cross-built for aarch64 (build/loader-aarch64, `make loader-aarch64`) under
qemu-aarch64 with the aarch64 ExecuTorch SDK, beside this machine's build (build/loader) and SDK.
`make test-aarch64`, part of `make test`, builds all of them and sets FATPTE_REQUIRE_AARCH64=1: a
missing one then fails the test. Elsewhere (a plain `pytest`) the test is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
from types import ModuleType

import pytest

from tests.paths import ROOT
from tests.scripts import load_script

REQUIRED = os.environ.get("FATPTE_REQUIRE_AARCH64") == "1"
MATRIX: ModuleType = load_script("tools/tier_matrix.py")
BUILD = MATRIX.AARCH64_BUILD
NATIVE_BUILD = MATRIX.NATIVE_BUILD


def missing(what: str) -> None:
    """Fail (under make test) or skip (elsewhere): `what` is not there."""
    message = f"{what}: run `make test-aarch64` (part of `make test`)"
    if REQUIRED:
        pytest.fail(message)
    pytest.skip(message)


def require(*, native: bool = False, probe: bool = False) -> None:
    """The aarch64 build, its SDK and qemu-aarch64 (and with `native`, this machine's build and SDK);
    with `probe`, only what `fatpte-run --device-json` needs: the aarch64 fatpte-run and qemu."""
    needed = [BUILD / "fatpte-run"] if probe else [
        BUILD / "fatpte-run", BUILD / "et_module_runner", BUILD / "libexecutorch_backend_fatpte.so",
        MATRIX.AARCH64_SDK_LIB / "libexecutorch_backend_xnnpack.so", MATRIX.AARCH64_DEBS_LIB / "libcrypto.so.3"]
    if native:
        needed += [NATIVE_BUILD / "fatpte-run", NATIVE_BUILD / "et_module_runner",
                   NATIVE_BUILD / "libexecutorch_backend_fatpte.so",
                   MATRIX.NATIVE_SDK_LIB / "libexecutorch_backend_xnnpack.so"]
    for path in needed:
        if not path.exists():
            missing(f"{path.relative_to(ROOT)} is not built")
    if shutil.which("qemu-aarch64") is None:
        missing("qemu-aarch64 (Debian's qemu-user) is not installed")
