"""Selection: eligibility, the ranking rule, explanations, and one shared multi-entry container
checked against every named device profile and against this host's real CPU features."""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.container.reader import Container
from fatpte.device.accelerator import Accelerator
from fatpte.device.profile import DeviceProfile
from fatpte.device.selection import select
from fatpte.errors import ErrorCode, FatpteError, SelectionError
from fatpte.ops.packing import pack
from fatpte.ops.specialization import Specialization

AVX512 = ["avx512f", "avx512bw", "avx512vl"]

# One container for every named profile: CPU variants told apart by features, GPU variants by
# accelerator and priority.
SHARED: list[tuple[str, str, int, dict[str, Any]]] = [
    ("portable", "portable", -1, {}),
    ("x86_avx2", "xnnpack", 0, {"arch": "x86_64", "cpu_features": ["avx2", "fma"]}),
    ("x86_avx512", "xnnpack", 0, {"arch": "x86_64", "cpu_features": AVX512}),
    ("x86_amx", "xnnpack", 0, {"arch": "x86_64", "cpu_features": [*AVX512, "amx_tile", "amx_int8"]}),
    ("arm_dotprod", "xnnpack", 0, {"arch": "aarch64", "cpu_features": ["asimddp"]}),
    ("arm_i8mm_sve2", "xnnpack", 0, {"os": "android", "arch": "aarch64", "cpu_features": ["i8mm", "sve2"]}),
    ("apple_metal", "mps", 1, {"os": "macos", "accelerators": [{"kind": "metal", "targets": [">=3.1"]}]}),
    ("cuda_sm80", "cuda", 2, {"accelerators": [{"kind": "cuda", "targets": ["sm_80"],
                                                "min_memory_bytes": 40 << 30}]}),
    ("cuda_sm90a", "cuda", 2, {"accelerators": [{"kind": "cuda", "targets": ["sm_90a"]}]}),
    ("vulkan", "vulkan", 1, {"os": "android", "accelerators": [{"kind": "vulkan", "targets": [">=1.3"]}],
                             "min_memory_bytes": 12 << 30}),
]

EXPECTED = {
    "x86-64-v2": "portable",
    "x86-64-v3": "x86_avx2",
    "x86-64-v4": "x86_avx512",
    "sapphire-rapids-amx": "x86_amx",  # most specific of the eligible CPU entries
    "apple-m1": "arm_dotprod",  # Metal 3.0 is below the 3.1 apple_metal needs
    "apple-m3": "apple_metal",
    "android-arm64-dotprod": "arm_dotprod",  # Vulkan 1.1 is below 1.3
    "arm64-i8mm-sve2": "vulkan",
    "raspberry-pi-5": "arm_dotprod",
    "nvidia-sm80-server": "cuda_sm80",
    "nvidia-sm90-server": "cuda_sm90a",  # sm_80 SASS does not run on 9.0
    "jetson-orin": "cuda_sm80",  # capability 8.7 runs sm_80 SASS
    "cortex-a53": "portable",  # Armv8.0: no dot product
    "cortex-a55": "arm_dotprod",
    "cortex-a76": "arm_dotprod",
    "cortex-a78": "arm_dotprod",
    "cortex-x1": "arm_dotprod",
    "neoverse-n1": "arm_dotprod",
    "neoverse-v1": "arm_dotprod",  # no SVE2 (and not Android)
    "a64fx": "portable",  # SVE and fp16, no Advanced SIMD dot product
    "raspberry-pi-4": "portable",  # Cortex-A72, Armv8.0; Vulkan 1.2 on Linux
    "intel-core-ultra-7-155h": "x86_avx2",  # no entry asks for its OpenVINO devices
}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Container]:
    path = tmp_path_factory.mktemp("sel") / "shared.pte"
    pack([Specialization(b, name.encode().hex().encode() * 3, name=name, priority=p, requires=r)
          for name, b, p, r in SHARED], path)
    with fatpte.open(path) as c:
        yield c


def profile(**kw: Any) -> DeviceProfile:
    base: dict[str, Any] = {"name": "test", "os": "linux", "arch": "x86_64", "cpu_features": frozenset(),
                            "accelerators": (), "memory_bytes": 8 << 30, "backends": {}}
    base.update(kw)
    return DeviceProfile(**base)


def test_every_named_profile_has_an_expectation() -> None:
    assert sorted(DeviceProfile.names()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_named_profile(shared: Container, name: str) -> None:
    sel = select(shared, DeviceProfile.load(name))
    assert sel.chosen.name == EXPECTED[name], sel.explain()
    assert [v.entry.name for v in sel.verdicts] == [n for n, *_ in SHARED]
    assert sel.ranked[0].entry == sel.chosen and sel.ranked[0].rank == 1


def _host_flags() -> set[str]:
    flags: set[str] = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
                break
    return flags


@pytest.mark.skipif(platform.machine() != "x86_64" or not Path("/proc/cpuinfo").exists(),
                    reason="needs a Linux x86_64 host")
def test_host_selects_by_its_real_features(tmp_path: Path) -> None:
    path = pack([
        Specialization("portable", b"p" * 64, priority=-1),
        Specialization("xnnpack", b"2" * 64, name="x86_avx2", requires={"cpu_features": ["avx2", "fma"]}),
        Specialization("xnnpack", b"5" * 64, name="x86_avx512", requires={"cpu_features": AVX512}),
    ], tmp_path / "host.pte")
    flags = _host_flags()
    if all(f in flags for f in AVX512):
        expected = "x86_avx512"
    elif {"avx2", "fma"} <= flags:
        expected = "x86_avx2"
    else:
        expected = "portable"
    with fatpte.open(path) as c:
        sel = select(c, DeviceProfile.host())
    assert sel.chosen.name == expected, sel.explain()
    text = sel.explain()
    for v in sel.verdicts:
        if not v.eligible:
            [failure] = v.failures
            missing = [f for f in failure.needed.split(", ") if f not in flags]
            assert missing and all(m in failure.has for m in missing)
            assert v.entry.name in text and all(m in text for m in missing)


def test_explanation_names_missing_features(shared: Container) -> None:
    sel = select(shared, DeviceProfile.load("x86-64-v3"))
    v = next(v for v in sel.verdicts if v.entry.name == "x86_avx512")
    assert not v.eligible and v.rank is None
    [f] = v.failures
    assert f.requirement == "cpu_features" and "no avx512f, avx512bw, avx512vl" in f.has
    assert "x86_avx512 [xnnpack]: rejected: cpu_features" in sel.explain()
    doc = sel.to_json()
    assert doc["chosen"] == "x86_avx2" and len(doc["verdicts"]) == len(SHARED)


def test_no_fit_lists_every_entry_and_why(tmp_path: Path) -> None:
    path = pack([Specialization("cuda", b"1", requires={"accelerators": [{"kind": "cuda", "targets": ["sm_90"]}]}),
                 Specialization("xnnpack", b"2", requires={"arch": "aarch64", "cpu_features": ["sve2"]})],
                tmp_path / "x.pte")
    dev = profile(accelerators=(Accelerator("cuda", "T4", "7.5", 16 << 30),), cpu_features=frozenset({"avx2"}))
    with fatpte.open(path) as c, pytest.raises(SelectionError) as info:
        select(c, dev)
    err = info.value
    assert err.code is ErrorCode.NO_SPECIALIZATION_FITS
    assert "cuda [cuda]: rejected: accelerators[0]: needs cuda sm_90; the device has cuda 7.5 (T4" in err.message
    assert "xnnpack [xnnpack]: rejected: arch: needs one of aarch64; the device has x86_64" in err.message
    assert "cpu_features: needs sve2" in err.message


def test_ranking_priority_then_preference_then_specificity_then_table_order(tmp_path: Path) -> None:
    path = pack([
        Specialization("a", b"1", name="plain"),
        Specialization("b", b"2", name="specific", requires={"arch": "x86_64", "cpu_features": ["avx2"]}),
        Specialization("c", b"3", name="plain2"),
        Specialization("d", b"4", name="low", priority=-5, requires={"cpu_features": ["avx2", "fma", "f16c"]}),
    ], tmp_path / "x.pte")
    dev = profile(cpu_features=frozenset({"avx2", "fma", "f16c"}))
    with fatpte.open(path) as c:
        assert select(c, dev).chosen.name == "specific"  # specificity
        assert [v.rank for v in select(c, dev).verdicts] == [2, 1, 3, 4]  # then table order
        assert select(c, dev, prefer=["c"]).chosen.name == "plain2"  # preference beats specificity
        assert select(c, dev, prefer=["low", "plain"]).chosen.name == "plain"  # priority beats preference
        assert select(c, dev, exclude=["specific", "a"]).chosen.name == "plain2"
        sel = select(c, dev, exclude=["b"])
        v = next(v for v in sel.verdicts if v.entry.name == "specific")
        assert [f.requirement for f in v.failures] == ["exclude"]
        with pytest.raises(FatpteError) as info:
            select(c, dev, prefer="plain")
        assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_backend_abi(tmp_path: Path) -> None:
    path = pack([Specialization("xnnpack", b"1", requires={"backend_abi": {"min": 2, "max": 3}}),
                 Specialization("portable", b"2", priority=-1)], tmp_path / "x.pte")
    with fatpte.open(path) as c:
        assert select(c, profile(backends={"xnnpack": 3})).chosen.name == "xnnpack"
        sel = select(c, profile(backends={"xnnpack": 4}))
        assert sel.chosen.name == "portable"
        assert sel.verdicts[0].failures[0].text() == "backend_abi: needs xnnpack ABI 2..3; the device has ABI 4"
        sel = select(c, profile())
        assert sel.chosen.name == "xnnpack"
        assert "not checked" in sel.verdicts[0].notes[0] and "not checked" in sel.explain()


def test_memory_and_os(tmp_path: Path) -> None:
    path = pack([Specialization("big", b"1", requires={"min_memory_bytes": 16 << 30, "os": ["linux", "android"]}),
                 Specialization("small", b"2", priority=-1)], tmp_path / "x.pte")
    with fatpte.open(path) as c:
        assert select(c, profile(memory_bytes=16 << 30)).chosen.name == "big"
        sel = select(c, profile(memory_bytes=8 << 30, os="macos"))
        assert [f.requirement for f in sel.verdicts[0].failures] == ["os", "min_memory_bytes"]


def test_v1_and_manifestless_entries_are_eligible_by_backend_id(tmp_path: Path) -> None:
    for version in (1, 2):
        path = pack([Specialization("vulkan", b"1"), Specialization("xnnpack", b"2")], tmp_path / f"v{version}.pte",
                    version=version)
        with fatpte.open(path) as c:
            assert c.manifest is None
            dev = DeviceProfile.load("x86-64-v2")
            assert select(c, dev).chosen.name == "vulkan"
            assert select(c, dev, prefer=["xnnpack"]).chosen.name == "xnnpack"
            assert select(c, dev, exclude=["vulkan"]).chosen.name == "xnnpack"
            with pytest.raises(SelectionError):
                select(c, dev, exclude=["vulkan", "xnnpack"])


def test_selection_reads_no_payload(tmp_path: Path) -> None:
    path = pack([Specialization("a", b"x" * 100, requires={"arch": "x86_64"})], tmp_path / "x.pte")
    data = bytearray(path.read_bytes())
    with fatpte.open(path) as c:
        start = c.entries[0].offset
    data[start] ^= 0xFF  # a damaged payload does not change the choice
    path.write_bytes(bytes(data))
    with fatpte.open(path) as c:
        assert select(c, profile()).chosen.name == "a"


# -- the runtime's ExecuTorch backends, delegation, and the caller's words ------------------------


def _programs(tmp_path: Path) -> Container:
    """Three lowerings of one program as the manifest describes them, portable first in the table."""
    return fatpte.open(pack([
        Specialization("portable", b"p" * 8, executorch_backends=[]),
        Specialization("xnnpack", b"x" * 8, executorch_backends=["XnnpackBackend"]),
        Specialization("native", b"n" * 8, executorch_backends=["NativeBackend"], priority=-1),
    ], tmp_path / "et.nfat"))


def _runtime(backends: list[str] | None) -> DeviceProfile:
    return DeviceProfile.load("x86-64-v2")._replace(name="runtime", executorch_backends=backends)


def test_a_program_that_delegates_ranks_above_the_portable_one(tmp_path: Path) -> None:
    with _programs(tmp_path) as c:
        sel = select(c, DeviceProfile.load("x86-64-v2"))
        assert sel.chosen.name == "xnnpack"
        assert [v.entry.name for v in sel.ranked] == ["xnnpack", "portable", "native"]  # priority first
        assert sel.verdicts[1].delegates and not sel.verdicts[0].delegates
        # The caller's preference still comes before it, and so does a priority.
        assert select(c, DeviceProfile.load("x86-64-v2"), prefer=["portable"]).chosen.name == "portable"
        lines = sel.explain().splitlines()
        assert "  #2 portable [portable]: eligible, fallback (priority 0, portable operators, specificity 0)" in lines
        assert "  #1 xnnpack [xnnpack]: eligible, fallback (priority 0, delegates to XnnpackBackend, specificity 0)" in lines


def test_a_runtime_without_the_backend_never_gets_the_entry(tmp_path: Path) -> None:
    with _programs(tmp_path) as c:
        sel = select(c, _runtime(["XnnpackBackend"]), prefer=["native"])
        assert sel.chosen.name == "xnnpack"
        (native,) = [v for v in sel.verdicts if v.entry.name == "native"]
        assert not native.eligible
        assert [f.text() for f in native.failures] == [
            ("executorch_backends: needs NativeBackend; the device has no NativeBackend (its runtime has "
             "XnnpackBackend)")]
        assert "native [native]: rejected: executorch_backends: needs NativeBackend" in sel.explain()
        assert sel.to_json()["verdicts"][2]["executorch_backends"] == ["NativeBackend"]
        # A runtime with no backend at all runs only the portable program.
        assert select(c, _runtime([])).chosen.name == "portable"
        with pytest.raises(SelectionError) as e:
            select(c, _runtime([]), exclude=["portable"])
        assert "its runtime has no backend" in e.value.message


def test_a_profile_that_does_not_say_checks_nothing_and_notes_it(tmp_path: Path) -> None:
    with _programs(tmp_path) as c:
        sel = select(c, DeviceProfile.load("x86-64-v2"))
        (native,) = [v for v in sel.verdicts if v.entry.name == "native"]
        assert native.eligible and native.rank == 3
        assert native.notes == (("ExecuTorch backends not checked: the profile does not list the "
                                 "backends its runtime has (`fatpte device` lists them when it finds the runtime: "
                                 "fatpte-run, or ExecuTorch's Python runtime)"),)
        assert sel.verdicts[0].notes == ()  # nothing to check for the portable program


@pytest.mark.parametrize("strict", [False, True])
def test_unknown_prefer_and_exclude_words(tmp_path: Path, strict: bool) -> None:
    with _programs(tmp_path) as c:
        if strict:
            with pytest.raises(FatpteError) as e:
                select(c, DeviceProfile.load("x86-64-v2"), prefer=["xnnpak"], strict=True)
            assert e.value.code is ErrorCode.INVALID_ARGUMENT and e.value.field == "prefer"
            assert "'xnnpak' names no entry" in e.value.message
            return
        with pytest.warns(fatpte.FatpteWarning) as caught:
            sel = select(c, DeviceProfile.load("x86-64-v2"), prefer=["xnnpak", "portable"], exclude=["xnnpak"])
        assert sel.chosen.name == "portable"  # the known word still counts
        assert [(w.message.code, w.message.field) for w in caught if isinstance(w.message, fatpte.FatpteWarning)] == [
            (ErrorCode.UNKNOWN_WORD, "prefer"), (ErrorCode.UNKNOWN_WORD, "exclude")]
        assert ("prefer 'xnnpak' names no entry and no backend id of the container (entries: portable, xnnpack, "
                "native; backend ids: portable, xnnpack, native)") in str(caught[0].message)
