"""The named x86-64 device profiles (specs/devices/) checked against the real probe (issue 39).

Each x86_64 profile is compared with what this machine's C++ probe (`fatpte-run --device-json`,
build/loader) reports under `qemu-x86_64 -cpu MODEL`, the qemu 7.2 model of the profile's CPU or
the closest one. The probe reads cpuid and xgetbv, which qemu answers for the emulated model, so
this checks the x86 path of the probe and the feature words each profile states. The table says
which model and why, and every difference between the profile's `cpu_features` and the probe's,
with its reason; a difference not in the table, or one listed that is not there, fails. What a
user-mode emulator cannot say (memory, accelerators) is not compared. The aarch64 profiles have
the same check in tests/loader/test_aarch64_profiles.py; specs/device-profile.md section 8 and
docs/executorch.md ("Targeting ARM feature levels") list the differences. It runs in `make
test-aarch64` (part of `make test`), which builds this machine's loader and installs qemu-user.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess

import pytest

from fatpte.device.profile import DeviceProfile, devices_dir
from tests.loader.aarch64_builds import NATIVE_BUILD, missing
from tests.loader.test_aarch64_profiles import Closest
from tests.paths import ROOT

# qemu 7.2's TCG emulates no AVX-512: under any model the probe reports at most x86-64-v3's words.
AVX512_V4 = frozenset({"avx512f", "avx512bw", "avx512vl"})
NO_AVX512 = ("qemu 7.2's TCG emulates no AVX-512 (it masks those cpuid bits of every model), so the probe "
             "reports x86-64-v3's words; the AVX-512 words are checked only natively, on a host that has them")

CLOSEST: dict[str, Closest] = {
    "x86-64-v2": Closest("Nehalem", "the first x86-64-v2 CPU: SSE4.2, no AVX"),
    "x86-64-v3": Closest("Haswell", "the first x86-64-v3 CPU: AVX2, FMA, F16C"),
    "x86-64-v4": Closest("Skylake-Server", "the first x86-64-v4 CPU: AVX-512 F, BW, VL", missing=AVX512_V4,
                         difference=NO_AVX512),
    "intel-core-ultra-7-155h": Closest("Haswell", "Meteor Lake's CPU is x86-64-v3 in the vocabulary's words"),
    "nvidia-sm80-server": Closest("EPYC-Milan", "the host's CPU itself (Zen 3, x86-64-v3)"),
    "nvidia-sm90-server": Closest(
        "EPYC-Milan", "qemu 7.2 has no Zen 4 (EPYC-Genoa); Zen 3 is the closest AMD model",
        missing=AVX512_V4 | {"avx512_vnni", "avx512_bf16"}, difference=NO_AVX512),
    "sapphire-rapids-amx": Closest(
        "Cascadelake-Server", "qemu 7.2 has no Sapphire Rapids; Cascade Lake is the newest Intel server model",
        missing=AVX512_V4 | {"avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16"},
        difference=NO_AVX512 + "; AMX and AVX512-FP16 are in no qemu 7.2 model"),
}


def profiles() -> list[str]:
    return sorted(n for n in DeviceProfile.names() if DeviceProfile.load(n).arch == "x86_64")


def test_every_x86_profile_has_its_closest_qemu_model() -> None:
    assert sorted(CLOSEST) == profiles()


@pytest.fixture(scope="module")
def probed() -> dict[str, set[str]]:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the x86 probe runs under qemu-x86_64 from an x86_64 build of fatpte-run")
    exe = NATIVE_BUILD / "fatpte-run"
    if not exe.exists():
        missing(f"{exe.relative_to(ROOT)} is not built")
    if shutil.which("qemu-x86_64") is None:
        missing("qemu-x86_64 (Debian's qemu-user) is not installed")
    out = {}
    for cpu in sorted({c.cpu for c in CLOSEST.values()}):
        done = subprocess.run(["qemu-x86_64", "-cpu", cpu, str(exe), "--device-json"], capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{cpu}: {done.stderr.strip()}"
        device = json.loads(done.stdout)
        assert device["arch"] == "x86_64"
        out[cpu] = set(device["cpu_features"])
    return out


@pytest.mark.parametrize("name", sorted(CLOSEST))
def test_the_profile_states_what_the_probe_reports_under_the_closest_model(probed: dict[str, set[str]],
                                                                           name: str) -> None:
    closest = CLOSEST[name]
    profile = json.loads((devices_dir() / f"{name}.json").read_text(encoding="utf-8"))
    stated, reported = frozenset(profile["cpu_features"]), frozenset(probed[closest.cpu])
    assert (stated - reported, reported - stated) == (closest.missing, closest.extra), closest.difference
    assert bool(closest.missing or closest.extra) == bool(closest.difference)


def test_the_table_is_in_the_docs() -> None:
    text = (ROOT / "docs" / "executorch.md").read_text(encoding="utf-8")
    for name, closest in CLOSEST.items():
        assert f"| `{name}` | `{closest.cpu}` |" in text, name
