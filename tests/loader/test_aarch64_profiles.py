"""The named ARM device profiles (specs/devices/) checked against the real probe (issues 29, 39).

Each aarch64 profile is compared with what the C++ probe (`fatpte-run --device-json`, the aarch64
build under qemu-aarch64) reports under the qemu 7.2 CPU model closest to the device's cores. The
table says which model and why, and every difference between the profile's `cpu_features` and
the probe's, with its reason; a difference not in the table, or one listed that is not there,
fails. Under qemu-user the probe reads the emulated CPU's AT_HWCAP/AT_HWCAP2 (its
/proc/cpuinfo is this machine's, without a `Features` line), so this checks the hwcap path of the
probe and the feature words each profile states. What a user-mode emulator cannot say about a
device (its OS when that is Android or macOS, its memory, its accelerators) is not compared.
docs/executorch.md ("Targeting ARM feature levels") has the same table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.loader.aarch64_builds import MATRIX, require
from tests.paths import ROOT

DEVICES = ROOT / "specs" / "devices"


class Closest(NamedTuple):
    cpu: str  # qemu-aarch64 -cpu
    why: str  # why this model
    missing: frozenset[str] = frozenset()  # in the profile, not reported by the probe under `cpu`
    extra: frozenset[str] = frozenset()  # reported by the probe, not in the profile
    difference: str = ""  # why they differ


# qemu 7.2 has no Cortex-A55, A78, X1, X2, A710, A510, no Neoverse V1 and no Apple core. Where it has not the core
# itself, the closest model is one with the same architecture level and the same optional
# features of the vocabulary (specs/device-profile.md 3.4).
CLOSEST: dict[str, Closest] = {
    "raspberry-pi-5": Closest("cortex-a76", "BCM2712 is four Cortex-A76: the core itself"),
    "android-arm64-dotprod": Closest(
        "cortex-a76", "Snapdragon 855: Kryo 485 is Cortex-A76 (and A55) cores; both are Armv8.2-A with FP16 and "
        "DotProd, and qemu has the A76"),
    "jetson-orin": Closest(
        "cortex-a76", "Cortex-A78AE is Armv8.2-A with FP16 and DotProd, no I8MM, BF16 or SVE, as the A76; qemu has "
        "no A78"),
    "apple-m1": Closest(
        "cortex-a76", "Apple Firestorm/Icestorm are Armv8.5-A; of the vocabulary they have FP16 and DotProd and "
        "not I8MM, BF16, SVE or SME: the A76's set (qemu has no Apple core)"),
    "apple-m3": Closest(
        "max,sve=off,sme=off", "Apple M3 cores are Armv8.6-A with I8MM and BF16 and without SVE and SME: qemu's "
        "max with SVE and SME turned off"),
    "arm64-i8mm-sve2": Closest(
        "max,sme=off", "Cortex-X2/A710/A510 are Armv9.0-A: SVE2, I8MM, BF16, no SME; qemu's max without SME (its "
        "SME int8 is also computed wrongly by qemu 7.2)"),
    # The fleet's cores (issue 39): the core itself where qemu 7.2 models it.
    "cortex-a53": Closest("cortex-a53", "the core itself"),
    "raspberry-pi-4": Closest("cortex-a72", "BCM2711 is four Cortex-A72: the core itself"),
    "cortex-a76": Closest("cortex-a76", "the core itself"),
    "neoverse-n1": Closest("neoverse-n1", "the core itself (AWS Graviton2)"),
    "a64fx": Closest("a64fx", "the core itself"),
    "cortex-a55": Closest("cortex-a76", "qemu 7.2 has no A55; both are Armv8.2-A with FP16 and DotProd"),
    "cortex-a78": Closest("cortex-a76", "qemu 7.2 has no A78; both are Armv8.2-A with FP16 and DotProd, without "
                          "I8MM, BF16, SVE"),
    "cortex-x1": Closest("cortex-a76", "qemu 7.2 has no X1; both are Armv8.2-A with FP16 and DotProd, without "
                         "I8MM, BF16, SVE"),
    "neoverse-v1": Closest(
        "max,sme=off", "qemu 7.2 has no Neoverse V1 (AWS Graviton3); max without SME has its SVE, I8MM and BF16",
        extra=frozenset({"sve2"}),
        difference="max implements Armv9's SVE2, which the Armv8.4-A Neoverse V1 lacks, and qemu 7.2 cannot turn "
                   "SVE2 off alone (max has no sve2 property)"),
}


def profiles() -> list[str]:
    return sorted(p.stem for p in DEVICES.glob("*.json")
                  if json.loads(p.read_text(encoding="utf-8"))["arch"] == "aarch64")


def test_every_aarch64_profile_has_its_closest_qemu_model() -> None:
    assert sorted(CLOSEST) == profiles()


@pytest.fixture(scope="module")
def probed() -> dict[str, set[str]]:
    require(probe=True)
    out = {}
    for cpu in sorted({c.cpu for c in CLOSEST.values()}):
        device = MATRIX.emulated_cpu(cpu).probe()
        assert device["arch"] == "aarch64"
        out[cpu] = set(device["cpu_features"])
    return out


@pytest.mark.parametrize("name", sorted(CLOSEST))
def test_the_profile_states_what_the_probe_reports_under_the_closest_model(probed: dict[str, set[str]],
                                                                           name: str) -> None:
    closest = CLOSEST[name]
    profile = json.loads((DEVICES / f"{name}.json").read_text(encoding="utf-8"))
    stated, reported = frozenset(profile["cpu_features"]), frozenset(probed[closest.cpu])
    assert (stated - reported, reported - stated) == (closest.missing, closest.extra), closest.difference
    assert bool(closest.missing or closest.extra) == bool(closest.difference)


def test_the_table_is_in_the_docs() -> None:
    # docs/executorch.md repeats the table: each profile with its model.
    text = Path(ROOT / "docs" / "executorch.md").read_text(encoding="utf-8")
    for name, closest in CLOSEST.items():
        assert f"| `{name}` | `{closest.cpu}` |" in text, name
