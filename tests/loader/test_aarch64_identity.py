"""What the aarch64 probe (`fatpte-run --device-json`, cross-built, under qemu-aarch64) reports of
the device's identity under each qemu 7.2 CPU model (specs/device-profile.md section 9, "What
qemu-user does not report"): qemu-user shows the host's /proc and /sys, so no cores (the host's
x86 /proc/cpuinfo has no `CPU implementer` line, and the x86 keys are never read on aarch64), no
machine or SoC (no device tree), and the host's kernel and distribution. Requirements on cores and
SoCs are therefore tested with profiles (specs/vectors/identity/), not with the probe under qemu."""

from __future__ import annotations

import pytest

from fatpte.device import probe_identity
from tests.loader.aarch64_builds import MATRIX, require

MODELS = ("cortex-a53", "cortex-a76", "neoverse-n1", "a64fx", "max,sme=off")


@pytest.mark.parametrize("cpu", MODELS)
def test_qemu_user_reports_no_core_machine_or_soc(cpu: str) -> None:
    require()
    device = MATRIX.emulated_cpu(cpu).probe()
    assert device["arch"] == "aarch64"
    assert "cpu_cores" not in device and "machine" not in device and "soc" not in device, device
    assert device.get("kernel") == probe_identity.kernel_release()  # the host's
