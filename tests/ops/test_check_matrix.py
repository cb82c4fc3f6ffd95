"""The CPU matrix and the strict gate of `fatpte check` without a runner (issue 36 points 1-3):
which qemu model each device profile maps to (the written table held to its rule), how `--cpus`
names are read, which (entry, CPU) pairs are eligible, the gate's verdict and report fields, the
slices of `--shard`, the merge's refusal of files that are no check report, and that qemu-x86_64
enforces the models the matrix relies on (a program using AVX gets SIGILL under Nehalem)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, FatpteError
from fatpte.manifest.model import Requirements
from fatpte.ops import check as C
from fatpte.ops import check_matrix as M
from fatpte.ops import check_shards, runner
from tests.builds import missing_build
from tests.paths import ROOT

SCHEMA = json.loads((ROOT / "specs" / "check_report.schema.json").read_text())


def closest(profile: DeviceProfile) -> str:
    """The rule PROFILE_MODELS is written by: the weakest model of the profile's architecture
    (the default-choice tables) with every feature it states; native when none has them."""
    table = runner.QEMU_AARCH64_MODELS if profile.arch == "aarch64" else runner.QEMU_X86_64_MODELS
    return next((m for m, features in table if profile.cpu_features <= features), M.NATIVE)


def test_every_named_profile_maps_to_its_closest_qemu_model() -> None:
    assert sorted(M.PROFILE_MODELS) == sorted(DeviceProfile.names())
    for name, model in M.PROFILE_MODELS.items():
        assert model == closest(DeviceProfile.load(name)), name
    assert M.PROFILE_MODELS["x86-64-v2"] == "Nehalem" and M.PROFILE_MODELS["x86-64-v3"] == "Haswell"
    assert M.PROFILE_MODELS["x86-64-v4"] == M.NATIVE and M.PROFILE_MODELS["raspberry-pi-5"] == "cortex-a76"


def test_cpus_are_models_profiles_or_native() -> None:
    cpus = M.parse_cpus("cortex-a53, raspberry-pi-5,Nehalem,native,cortex-a53", "x86_64")
    assert [(c.asked, c.arch, c.model) for c in cpus] == [
        ("cortex-a53", "aarch64", "cortex-a53"), ("raspberry-pi-5", "aarch64", "cortex-a76"),
        ("Nehalem", "x86_64", "Nehalem"), ("native", "x86_64", None)]
    # qemu's own property syntax stays one model: `max,sme=off` is not `max` and `sme=off`.
    assert [c.model for c in M.parse_cpus("max,sme=off,max,a64fx", "x86_64")] == ["max,sme=off", "max", "a64fx"]
    with pytest.raises(FatpteError) as info:
        M.parse_cpus("graviton2", "x86_64")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "use neoverse-n1" in info.value.message
    # A core qemu 7.2 does not model is its profile, run under the closest model.
    assert [(c.asked, c.model) for c in M.parse_cpus("cortex-a55,neoverse-v1", "x86_64")] == [
        ("cortex-a55", "cortex-a76"), ("neoverse-v1", "max,sme=off")]
    with pytest.raises(FatpteError) as info:
        M.parse_cpus("cortex-a53,,Haswell", "x86_64")
    assert info.value.field == "cpus"
    with pytest.raises(FatpteError) as info:
        M.parse_cpus("pentium", "x86_64")
    assert "a64fx" in info.value.message and "x86-64-v3" in info.value.message


def test_eligibility_follows_each_models_features() -> None:
    a53, a76, a64fx, nehalem, haswell = M.parse_cpus("cortex-a53,cortex-a76,a64fx,Nehalem,Haswell", "x86_64")
    fp16 = Requirements(arch=("aarch64",), cpu_features=("asimdhp",))
    dot = Requirements(arch=("aarch64",), cpu_features=("asimddp",))
    assert "cortex-a53 lacks asimdhp" in M.ineligible(fp16, a53)
    assert M.ineligible(fp16, a76) == M.ineligible(fp16, a64fx) == ""
    assert M.ineligible(dot, a76) == "" and "a64fx lacks asimddp" in M.ineligible(dot, a64fx)
    assert "arch: needs one of aarch64" in M.ineligible(dot, haswell)
    v2 = Requirements(arch=("x86_64",), cpu_features=("sse4_2",))
    v3 = Requirements(arch=("x86_64",), cpu_features=("avx2", "fma"))
    assert M.ineligible(v2, nehalem) == M.ineligible(v2, haswell) == M.ineligible(v3, haswell) == ""
    assert "Nehalem lacks avx2, fma" in M.ineligible(v3, nehalem)
    v4 = Requirements(arch=("x86_64",), cpu_features=("avx512f",))
    assert "checked natively only" in M.ineligible(v4, haswell)
    assert M.ineligible(Requirements(), a53) == M.ineligible(Requirements(), haswell) == ""
    # Without --cpus: the weakest model that has the features (x86 too); none for AVX-512.
    assert runner.qemu_model(v2, "x86_64") == "Nehalem" and runner.qemu_model(v3, "x86_64") == "Haswell"
    assert runner.qemu_model(v4, "x86_64") is None and runner.native_only(v4) == ["avx512f"]
    assert runner.qemu_model(fp16) == "cortex-a76" and runner.qemu_model(Requirements()) == "cortex-a53"


def row(name: str, state: str, cpu: str | None = None, reason: str = "") -> C.EntryCheck:
    return C.EntryCheck(name, "xnnpack", state, reason=reason, cpu=cpu)


def test_the_gate_fails_on_unchecked_entries_unless_allowed() -> None:
    rows = [row("portable", C.AGREES), row("arm", C.CANNOT_RUN, reason="no aarch64 fatpte-run"),
            row("none", C.NO_CALLS)]
    report = C.CheckReport("c.nfat", rows, [])
    assert report.error is None and report.gate is not None and "arm" in report.gate and not report.ok
    doc = report.to_json()
    jsonschema.validate(doc, SCHEMA)
    assert doc["ok"] is False and doc["error"] == {"code": None, "message": report.gate}
    assert doc["unchecked"] == [{"name": "arm", "cpu": None, "reason": "no aarch64 fatpte-run", "allowed": False}]
    assert doc["counts"] == {"ran": 1, "failed_to_run": 0, "could_not_run": 1, "not_eligible": 0,
                             "no_golden_calls": 1}
    assert "1 of 3 entries ran their golden calls, 0 failed to run, 1 could not run" in report.text()
    for allowed in (["arm"], [C.ALL]):
        report.allow_unchecked = allowed
        assert report.ok and report.gate is None and report.to_json()["unchecked"][0]["allowed"]
        assert "allowed unchecked: arm" in report.text()


def test_a_call_that_could_not_run_is_counted_as_failed_to_run() -> None:
    broken = row("xnnpack", C.DISAGREES, reason="golden call 1 could not run: E1401")
    broken.call_errors = 1
    report = C.CheckReport("c.nfat", [row("portable", C.AGREES), broken], [])
    assert report.counts()["ran"] == 1 and report.counts()["failed_to_run"] == 1
    assert report.error is not None and report.error.code is ErrorCode.GOLDEN_MISMATCH
    assert "1 of 2 entries ran their golden calls, 1 failed to run" in report.text()


def test_an_entry_eligible_on_none_of_the_cpus_is_unchecked() -> None:
    rows = [row("portable", C.AGREES, "cortex-a53"), row("avx2", C.NOT_ELIGIBLE, "cortex-a53", "arch: ..."),
            row("avx2", C.NOT_ELIGIBLE, "Nehalem", "cpu_features: Nehalem lacks avx2")]
    report = C.CheckReport("c.nfat", rows, [], cpus=["cortex-a53", "Nehalem"])
    gaps = report.unchecked
    assert [(g.name, g.cpu) for g in gaps] == [("avx2", None)] and "eligible on none" in gaps[0].reason
    assert report.gate is not None and report.counts()["not_eligible"] == 2
    # A shard cannot tell (the entry's other rows may be in another shard): the merge decides.
    report.shard = (1, 2)
    assert report.unchecked == [] and report.gate is None


def test_shards_split_the_rows_cpu_by_cpu_once_each() -> None:
    # 2 rows of no CPU, then 3 entries on CPUs 0, 1 and 2 in report order (entry by entry).
    cpus = [-1, 0, 1, 2, 0, 1, 2, 0, 1, 2, -1]
    for n in (1, 2, 3, 7, 11, 12):
        slices = [check_shards.select(cpus, (k, n)) for k in range(1, n + 1)]
        assert sorted(i for s in slices for i in s) == list(range(len(cpus)))
        assert max(map(len, slices)) - min(map(len, slices)) <= 1
    # Three shards of three CPUs: the rows of no CPU go first, then CPU by CPU, each shard meeting
    # at most two CPUs (dealing row by row, every shard would meet all three).
    slices = [check_shards.select(cpus, (k, 3)) for k in (1, 2, 3)]
    assert slices == [{0, 10, 1}, {4, 7, 2, 5}, {8, 3, 6, 9}]
    assert check_shards.select(cpus, None) == set(range(len(cpus)))
    assert check_shards.parse_shard("2/4") == (2, 4)
    for bad in ("0/2", "3/2", "1/0", "a/b", "1", "-1/2"):
        with pytest.raises(FatpteError) as info:
            check_shards.parse_shard(bad)
        assert info.value.field == "shard"


def test_qemu_x86_64_refuses_avx_under_nehalem(tmp_path: Path) -> None:
    """The rows' claim "under qemu-x86_64 -cpu Nehalem" means no AVX: a program that runs one AVX
    instruction gets SIGILL there and exits 0 under Haswell."""
    cc, qemu = shutil.which("gcc") or shutil.which("cc"), shutil.which("qemu-x86_64")
    if cc is None or qemu is None:
        missing_build("needs a C compiler and qemu-x86_64 (Debian's qemu-user)")
    source = tmp_path / "avx.c"
    source.write_text("int main(void) { __asm__ volatile(\"vxorps %%ymm0, %%ymm0, %%ymm0\" ::: \"xmm0\"); "
                      "return 0; }\n")
    binary = tmp_path / "avx"
    subprocess.run([cc, "-O0", "-o", str(binary), str(source)], check=True, timeout=120)
    nehalem = subprocess.run([qemu, "-cpu", "Nehalem", str(binary)], capture_output=True, timeout=60, check=False)
    haswell = subprocess.run([qemu, "-cpu", "Haswell", str(binary)], capture_output=True, timeout=60, check=False)
    assert nehalem.returncode == -4, nehalem  # SIGILL
    assert haswell.returncode == 0, haswell


def test_the_merge_refuses_files_that_are_no_check_report(tmp_path: Path) -> None:
    from fatpte.ops import check_merge

    report = C.CheckReport("c.nfat", [row("portable", C.AGREES)], [], shard=(1, 1))
    report.shard_data = {"digest": "0" * 64, "rows": 1, "entries": [{"row": 0, "code": None, "inputs": {},
                                                                      "saved": {}}]}
    good = report.to_json()
    jsonschema.validate(good, SCHEMA)
    cases = {"not json": "not a check report (JSON)", json.dumps({**good, "entries": 3}): "entries has the wrong type",
             json.dumps({k: v for k, v in good.items() if k != "pairs"}): "pairs is missing",
             json.dumps({**good, "shard_data": {**good["shard_data"], "entries": []}}): "one item per row"}
    for text, said in cases.items():
        path = tmp_path / "shard.json"
        path.write_text(text)
        with pytest.raises(FatpteError) as info:
            check_merge.merge([str(path)])
        assert info.value.code is ErrorCode.INVALID_ARGUMENT and said in info.value.message, info.value.message
        assert info.value.source == str(path)
    path = tmp_path / "shard.json"
    path.write_text(json.dumps(good))
    merged = check_merge.merge([str(path)])
    assert merged.shard is None and [e.name for e in merged.entries] == ["portable"] and merged.ok
