"""`fatpte coverage --devices @fleet` (issue 39): the fleet's named profiles, one per x86-64 level and
per Arm core, choose every tier of the committed five-tier container, and the sets of named
profiles (`@fleet`, `@all`) expand where `--devices` takes a list."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from fatpte.cli.main import main
from fatpte.device import profile as D
from fatpte.ops.coverage import device_profiles
from tests.paths import ROOT

TIERS = ROOT / "tests" / "fixtures" / "executorch" / "mlp_tiers.pack.toml"
# Which tier each profile of the fleet gets, by the requirements the pack.toml states (int8 needs
# asimddp, fp16 asimdhp, fp32 aarch64 any ARM core, avx2 AVX2 and FMA, portable nothing).
CHOSEN = {
    "x86-64-v2": "portable",  # SSE4.2 only: no AVX2
    "x86-64-v3": "xnnpack-fp32-avx2",
    "x86-64-v4": "xnnpack-fp32-avx2",
    "cortex-a53": "xnnpack-fp32-aarch64",  # Armv8.0: neither fp16 arithmetic nor the dot product
    "raspberry-pi-4": "xnnpack-fp32-aarch64",  # Cortex-A72, Armv8.0
    "cortex-a55": "xnnpack-int8-asimddp",
    "cortex-a76": "xnnpack-int8-asimddp",
    "cortex-a78": "xnnpack-int8-asimddp",
    "cortex-x1": "xnnpack-int8-asimddp",
    "neoverse-n1": "xnnpack-int8-asimddp",
    "neoverse-v1": "xnnpack-int8-asimddp",
    "a64fx": "xnnpack-fp16-asimdhp",  # fp16 arithmetic and SVE, no Advanced SIMD dot product
}


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def tiers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet") / "mlp_tiers.nfat"
    code, _, err = run("pack", "-o", out, "--from", TIERS)
    assert code == 0, err
    return out


def test_the_fleet_chooses_every_tier_of_the_five_tier_container(tiers: Path) -> None:
    code, out, err = run("coverage", tiers, "--devices", "@fleet", "--json", "--strict")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert {r["device"]: r["entry"] for r in data["devices"]} == CHOSEN
    assert [r["device"] for r in data["devices"]] == list(D.FLEET)  # in the set's order
    assert data["uncovered"] == [] and data["unused_entries"] == []
    assert len(set(CHOSEN.values())) == 5  # the five tiers, each chosen by some device
    code, out, _ = run("coverage", tiers, "--devices", "@fleet")
    assert code == 0 and "chosen by no device" not in out


def test_the_fleet_is_named_profiles_that_cite_their_sources() -> None:
    assert set(D.FLEET) <= set(D.DeviceProfile.names())
    for name in D.FLEET:
        profile = D.DeviceProfile.load(name)
        assert profile.sources, name  # each fleet profile says where its features come from
        assert profile.accelerators == () or name == "raspberry-pi-4", name  # a CPU, not a machine's GPU


def test_sets_expand_in_order_each_profile_once() -> None:
    names = [p.name for p in device_profiles("x86-64-v3,@fleet,apple-m1")]
    assert names == ["x86-64-v3", *[n for n in D.FLEET if n != "x86-64-v3"], "apple-m1"]
    assert [p.name for p in device_profiles("@all")] == D.DeviceProfile.names()


def test_an_unknown_set_names_the_sets(tiers: Path) -> None:
    code, _, err = run("coverage", tiers, "--devices", "@phones")
    assert code == 2
    assert "E0702" in err and "'@phones'" in err and "@all, @fleet" in err


def test_device_show_prints_the_sources() -> None:
    code, out, _ = run("device", "show", "cortex-a55")
    assert code == 0
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("sources:"))
    sources = D.DeviceProfile.load("cortex-a55").sources or ()
    assert [line[14:] for line in lines[first:first + len(sources)]] == list(sources)
    assert all(line.startswith(" " * 14) for line in lines[first + 1:first + len(sources)])
    assert "sources:" not in run("device", "show", "apple-m1")[1]  # none cited, no line


def test_the_spec_lists_the_fleet_in_order() -> None:
    text = " ".join((ROOT / "specs" / "device-profile.md").read_text(encoding="utf-8").split())
    lead = "`@fleet` is the CPUs fleets run,"
    start = text.index(lead) + len(lead)
    listed = re.findall(r"`([^`]+)`", text[start:text.index("(fatpte/device/profile.py", start)])
    assert listed == list(D.FLEET)
