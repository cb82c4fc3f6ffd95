"""Host probing: recorded /proc samples, sysctl tables and a fake CUDA driver through the probe
functions, then the real host this runs on."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import platform
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fatpte.device import host as probe_host
from fatpte.device import probe_cuda, probe_linux, probe_macos
from fatpte.device.accelerator import Accelerator
from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format.vocabulary import ARM_FEATURES, X86_FEATURES
from tests.paths import ROOT

SCHEMA = json.loads((ROOT / "specs" / "device_profile.schema.json").read_text())

# Recorded /proc/cpuinfo lines (one processor each, trimmed to the lines that matter).
HASWELL = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse \
sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc \
cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 \
x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm cpuid_fault epb invpcid_single pti \
ssbd ibrs ibpb stibp tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid \
xsaveopt dtherm ida arat pln pts md_clear flush_l1d
"""
SAPPHIRE_RAPIDS_FLAGS = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall "
    "nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 "
    "fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm "
    "abm 3dnowprefetch bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb "
    "avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 wbnoinvd arat avx512vbmi "
    "umip pku ospke avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote "
    "movdiri movdir64b fsrm md_clear serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d"
)
# Raspberry Pi 5 (Cortex-A76).
PI5 = """processor\t: 0
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x41
CPU part\t: 0xd0b

processor\t: 1
BogoMIPS\t: 108.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU part\t: 0xd0b
"""
# A Cortex-X2/A710 phone: SVE2 with the SVE forms of i8mm and bf16 alongside the plain ones.
CORTEX_X2 = """processor\t: 0
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop \
sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes svepmull \
svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti mte
"""
MEMINFO = "MemTotal:       24684084 kB\nMemFree:        1000 kB\n"


def _bits(*pairs: tuple[int, int]) -> tuple[int, int]:
    words = {probe_linux.AT_HWCAP: 0, probe_linux.AT_HWCAP2: 0}
    for entry, bit in pairs:
        words[entry] |= 1 << bit
    return words[probe_linux.AT_HWCAP], words[probe_linux.AT_HWCAP2]


# -- Linux ------------------------------------------------------------------------------------


def test_x86_flags() -> None:
    assert probe_linux.cpuinfo_features(HASWELL, "x86_64") == {"sse4_2", "avx", "avx2", "fma", "f16c"}
    spr = f"processor\t: 0\nflags\t\t: {SAPPHIRE_RAPIDS_FLAGS}\n"
    assert probe_linux.cpuinfo_features(spr, "x86_64") == set(X86_FEATURES)


def test_x86_takes_features_every_processor_has() -> None:
    two = HASWELL + "\n" + HASWELL.replace(" avx2 ", " ").replace("processor\t: 0", "processor\t: 1")
    assert probe_linux.cpuinfo_features(two, "x86_64") == {"sse4_2", "avx", "fma", "f16c"}


def test_no_feature_line_is_none() -> None:
    assert probe_linux.cpuinfo_features("processor\t: 0\n", "x86_64") is None
    assert probe_linux.cpuinfo_features(PI5, "x86_64") is None
    assert probe_linux.cpuinfo_features(HASWELL, "aarch64") is None
    assert probe_linux.cpuinfo_features("", "aarch64") is None


def test_arm_features() -> None:
    assert probe_linux.cpuinfo_features(PI5, "aarch64") == {"asimd", "fphp", "asimdhp", "asimddp"}
    assert probe_linux.cpuinfo_features(CORTEX_X2, "aarch64") == {
        "asimd", "fphp", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2"}
    # The SVE forms alone do not imply the Advanced SIMD instructions of the same name.
    only_sve_forms = CORTEX_X2.replace(" i8mm bf16 ", " ")
    assert not {"i8mm", "bf16"} & probe_linux.cpuinfo_features(only_sve_forms, "aarch64")  # type: ignore[operator]


def test_hwcaps_match_the_kernel_header() -> None:
    H, H2 = probe_linux.AT_HWCAP, probe_linux.AT_HWCAP2
    # Values from arch/arm64/include/uapi/asm/hwcap.h.
    pi5 = _bits((H, 0), (H, 1), (H, 2), (H, 3), (H, 4), (H, 5), (H, 6), (H, 7), (H, 8), (H, 9), (H, 10), (H, 11),
                (H, 12), (H, 15), (H, 16), (H, 20))
    assert probe_linux.hwcap_features(*pi5) == probe_linux.cpuinfo_features(PI5, "aarch64")
    x2 = _bits(*[(H, b) for b in (1, 9, 10, 20, 22)], (H2, 1), (H2, 9), (H2, 12), (H2, 13), (H2, 14))
    assert probe_linux.hwcap_features(*x2) == probe_linux.cpuinfo_features(CORTEX_X2, "aarch64")
    assert probe_linux.hwcap_features(*_bits((H2, 23))) == {"sme"}
    assert probe_linux.hwcap_features(0, 0) == frozenset()
    assert set(probe_linux.ARM_HWCAP_BITS) == set(ARM_FEATURES)


def test_meminfo() -> None:
    assert probe_linux.meminfo_total(MEMINFO) == 24684084 * 1024
    assert probe_linux.meminfo_total("MemFree: 1 kB\n") is None
    assert probe_linux.meminfo_total("MemTotal: lots\n") is None
    assert probe_linux.meminfo_total("MemTotal: 12 MB\n") is None


def _root(tmp_path: Path, cpuinfo: str | None, meminfo: str | None = MEMINFO, android: bool = False) -> Path:
    (tmp_path / "proc").mkdir()
    if cpuinfo is not None:
        (tmp_path / "proc" / "cpuinfo").write_text(cpuinfo)
    if meminfo is not None:
        (tmp_path / "proc" / "meminfo").write_text(meminfo)
    if android:
        (tmp_path / "system").mkdir()
        (tmp_path / "system" / "build.prop").write_text("ro.build.version.sdk=34\n")
    return tmp_path


def test_probe_linux_x86(tmp_path: Path) -> None:
    root = _root(tmp_path, HASWELL)
    assert probe_linux.probe("x86_64", root=root, environ={}) == (
        "linux", frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"}), 24684084 * 1024)


def test_probe_android_arm(tmp_path: Path) -> None:
    root = _root(tmp_path, CORTEX_X2, android=True)
    os_name, features, memory = probe_linux.probe("aarch64", root=root, environ={})
    assert os_name == "android" and "sve2" in features and memory == 24684084 * 1024


def test_android_by_environment(tmp_path: Path) -> None:
    root = _root(tmp_path, PI5)
    assert probe_linux.probe("aarch64", root=root, environ={"ANDROID_ROOT": "/system"})[0] == "android"
    assert probe_linux.probe("aarch64", root=root, environ={})[0] == "linux"


def test_arm_falls_back_to_hwcaps(tmp_path: Path) -> None:
    root = _root(tmp_path, None, meminfo=None)
    caps = _bits((probe_linux.AT_HWCAP, 1), (probe_linux.AT_HWCAP2, 13))
    assert probe_linux.probe("aarch64", root=root, environ={}, hwcaps=caps) == (
        "linux", frozenset({"asimd", "i8mm"}), 0)


def test_unreadable_proc_means_nothing(tmp_path: Path) -> None:
    root = _root(tmp_path, None, meminfo="garbage")
    assert probe_linux.probe("x86_64", root=root, environ={}) == ("linux", frozenset(), 0)


# -- macOS ------------------------------------------------------------------------------------

M1 = {"hw.optional.AdvSIMD": 1, "hw.optional.neon": 1, "hw.optional.neon_fp16": 1, "hw.optional.arm.FEAT_FP16": 1,
      "hw.optional.arm.FEAT_DotProd": 1, "hw.optional.arm.FEAT_I8MM": 0, "hw.optional.arm.FEAT_BF16": 0,
      "hw.memsize": 8 << 30, "kern.osproductversion": "13.6.1", "machdep.cpu.brand_string": "Apple M1"}
M3 = M1 | {"hw.optional.arm.FEAT_I8MM": 1, "hw.optional.arm.FEAT_BF16": 1, "hw.memsize": 16 << 30,
           "kern.osproductversion": "14.5", "machdep.cpu.brand_string": "Apple M3"}
# An Ice Lake MacBook: AVX-512 with VNNI, which only the leaf-7 word list reports.
ICE_LAKE_MAC = {"hw.optional.sse4_2": 1, "hw.optional.avx1_0": 1, "hw.optional.avx2_0": 1, "hw.optional.fma": 1,
                "hw.optional.f16c": 1, "hw.optional.avx512f": 1, "hw.optional.avx512bw": 1,
                "hw.optional.avx512vl": 1, "hw.memsize": 16 << 30,
                "machdep.cpu.leaf7_features": "RDWRFSGS TSC_THREAD_OFFSET BMI1 AVX2 FDPEO SMEP BMI2 ERMS INVPCID "
                                              "FPU_CSDS AVX512F AVX512DQ RDSEED ADX SMAP AVX512IFMA CLFSOPT IPT "
                                              "AVX512CD SHA AVX512BW AVX512VL AVX512VBMI UMIP PKU GFNI VAES VPCLMULQDQ "
                                              "AVX512VNNI AVX512BITALG AVX512VPOPCNTDQ RDPID SGXLC FSREPMOV MDCLEAR"}


def _reader(table: dict[str, int | str]) -> Any:
    return table.get


def test_macos_apple_silicon() -> None:
    features, memory, accs = probe_macos.probe("aarch64", _reader(M1))
    assert features == {"asimd", "fphp", "asimdhp", "asimddp"}
    assert memory == 8 << 30
    assert accs == (Accelerator("metal", "Apple M1", "3.0", 8 << 30),)
    features, memory, accs = probe_macos.probe("aarch64", _reader(M3))
    assert features == {"asimd", "fphp", "asimdhp", "asimddp", "i8mm", "bf16"}
    assert accs == (Accelerator("metal", "Apple M3", "3.1", 16 << 30),)


def test_macos_profiles_match_the_named_ones() -> None:
    for table, name in ((M1, "apple-m1"), (M3, "apple-m3")):
        named = DeviceProfile.load(name)
        features, memory, accs = probe_macos.probe("aarch64", _reader(table))
        assert (features, memory, accs) == (named.cpu_features, named.memory_bytes, named.accelerators)


def test_macos_old_keys_and_metal_versions() -> None:
    old = {"hw.optional.neon": 1, "hw.optional.neon_fp16": 1, "kern.osproductversion": "12.7"}
    assert probe_macos.cpu_features("aarch64", _reader(old)) == {"asimd", "fphp", "asimdhp"}
    assert probe_macos.metal("aarch64", _reader(old))[0].version == "2.4"
    assert probe_macos.metal("aarch64", _reader({"kern.osproductversion": "26.1"}))[0].version == "4.0"
    assert probe_macos.metal("aarch64", _reader({"kern.osproductversion": "27.0"}))[0].version == "4.0"
    assert probe_macos.metal("aarch64", _reader({"kern.osproductversion": "10.15"})) == ()
    assert probe_macos.metal("aarch64", _reader({})) == ()
    assert probe_macos.metal("x86_64", _reader(M1)) == ()
    assert probe_macos.metal("aarch64", _reader({"kern.osproductversion": "14.0",
                                                 "machdep.cpu.brand_string": "\x01"}))[0].name == "Apple GPU"


def test_macos_intel() -> None:
    features, memory, accs = probe_macos.probe("x86_64", _reader(ICE_LAKE_MAC))
    assert features == {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"}
    assert (memory, accs) == (16 << 30, ())
    assert probe_macos.probe("x86_64", _reader({})) == (frozenset(), 0, ())


# -- CUDA -------------------------------------------------------------------------------------


class FakeDriver:
    """The driver API functions the probe calls, over a table of devices.

    Each function takes what ctypes would pass to libcuda (pointers, a string buffer) and writes
    through them, so the probe runs exactly the code it runs against the real library."""

    def __init__(self, devices: list[tuple[str, int, int, int]], *, init: int = 0, fail: dict[str, int] | None = None,
                 raise_in: str | None = None) -> None:
        self.devices = devices
        self.init = init
        self.fail = fail or {}  # function name -> ordinal on which it returns an error
        self.raise_in = raise_in
        self.calls: list[str] = []

    def _enter(self, name: str, ordinal: int | None = None) -> int:
        self.calls.append(name)
        if name == self.raise_in:
            raise OSError("driver crashed")
        return 1 if name in self.fail and self.fail[name] == ordinal else 0

    def cuInit(self, flags: int) -> int:
        assert flags == 0
        return self._enter("cuInit") or self.init

    def cuDeviceGetCount(self, count: Any) -> int:
        count.contents.value = len(self.devices)
        return self._enter("cuDeviceGetCount")

    def cuDeviceGet(self, device: Any, ordinal: int) -> int:
        device.contents.value = 100 + ordinal  # a handle that is not the ordinal
        return self._enter("cuDeviceGet", ordinal)

    def cuDeviceGetAttribute(self, value: Any, attribute: int, device: int) -> int:
        _, major, minor, _ = self.devices[device - 100]
        value.contents.value = {75: major, 76: minor}[attribute]
        return self._enter("cuDeviceGetAttribute", device - 100)

    def cuDeviceTotalMem_v2(self, size: Any, device: int) -> int:
        size.contents.value = self.devices[device - 100][3]
        return self._enter("cuDeviceTotalMem_v2", device - 100)

    def cuDeviceGetName(self, buffer: Any, length: int, device: int) -> int:
        raw = self.devices[device - 100][0].encode("utf-8")[: length - 1]
        ctypes.memmove(buffer, raw + b"\0", len(raw) + 1)
        return self._enter("cuDeviceGetName", device - 100)


H100 = ("NVIDIA H100 80GB HBM3", 9, 0, 85_045_231_616)
A100 = ("NVIDIA A100-SXM4-80GB", 8, 0, 85_097_971_712)


def test_cuda_devices() -> None:
    driver = FakeDriver([H100, A100])
    assert probe_cuda.accelerators(driver) == (
        Accelerator("cuda", "NVIDIA H100 80GB HBM3", "9.0", 85_045_231_616),
        Accelerator("cuda", "NVIDIA A100-SXM4-80GB", "8.0", 85_097_971_712),
    )
    assert driver.calls[:2] == ["cuInit", "cuDeviceGetCount"]


def test_cuda_capability_formats() -> None:
    got = probe_cuda.accelerators(FakeDriver([("Orin", 8, 7, 64 << 30), ("B200", 10, 0, 180 << 30),
                                              ("RTX PRO 6000", 12, 0, 96 << 30)]))
    assert [a.version for a in got] == ["8.7", "10.0", "12.0"]


@pytest.mark.parametrize("driver", [
    FakeDriver([H100], init=100),  # CUDA_ERROR_NO_DEVICE
    FakeDriver([H100], init=3),  # CUDA_ERROR_NOT_INITIALIZED
    FakeDriver([]),
    FakeDriver([H100], fail={"cuDeviceGetCount": None}),
    FakeDriver([H100], raise_in="cuDeviceGetName"),
    FakeDriver([("GPU", 10000, 0, 1)]),  # a capability outside the version rule
    object(),  # a library without the driver API
], ids=["no-device", "init-error", "zero", "count-error", "raises", "absurd", "not-a-driver"])
def test_cuda_failure_is_no_device(driver: Any) -> None:
    assert probe_cuda.accelerators(driver) == ()


@pytest.mark.parametrize("function", ["cuDeviceGet", "cuDeviceGetAttribute", "cuDeviceTotalMem_v2",
                                      "cuDeviceGetName"])
def test_cuda_device_that_fails_is_left_out(function: str) -> None:
    got = probe_cuda.accelerators(FakeDriver([H100, A100], fail={function: 0}))
    assert [a.name for a in got] == [A100[0]]


def test_cuda_name_is_made_printable() -> None:
    got = probe_cuda.accelerators(FakeDriver([("GPU\u00e9\x07 ", 8, 6, 1 << 30), ("", 8, 9, 1 << 30)]))
    assert [a.name for a in got] == ["GPU??", "CUDA device 1"]


@pytest.mark.skipif(ctypes.util.find_library("cuda") is not None, reason="this machine has a CUDA driver")
def test_cuda_absent_driver_is_no_device() -> None:
    assert probe_cuda.load_driver() is None
    assert probe_cuda.probe() == ()


# -- the host ---------------------------------------------------------------------------------


def test_normalize() -> None:
    assert [probe_host.normalize_arch(m) for m in ("x86_64", "AMD64", "arm64", "aarch64", "armv7l", "riscv64")] == [
        "x86_64", "x86_64", "aarch64", "aarch64", None, None]
    assert [probe_host.normalize_os(s) for s in ("Linux", "Darwin", "Windows", "Android", "iOS", "FreeBSD")] == [
        "linux", "macos", "windows", "android", "ios", None]


@pytest.mark.parametrize(("machine", "system", "word"), [("riscv64", "Linux", "riscv64"), ("x86_64", "FreeBSD",
                                                                                           "FreeBSD")])
def test_unsupported_host(monkeypatch: pytest.MonkeyPatch, machine: str, system: str, word: str) -> None:
    monkeypatch.setattr(probe_host, "machine_and_system", lambda: (machine, system))
    with pytest.raises(FatpteError) as info:
        DeviceProfile.host()
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and word in info.value.message


def test_host_names_the_machine_as_platform_does() -> None:
    assert probe_host.machine_and_system() == (platform.machine(), platform.system())


def test_host_with_fake_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_cuda, "load_driver", lambda: FakeDriver([H100]))
    host = DeviceProfile.host()
    cuda = [a for a in host.accelerators if a.kind == "cuda"]  # vendor runtimes' devices follow
    assert cuda[-1] == Accelerator("cuda", H100[0], "9.0", H100[3])
    jsonschema.Draft202012Validator(SCHEMA).validate(host.to_json())


@pytest.mark.skipif(platform.system() != "Linux", reason="reads the Linux /proc files")
def test_real_host_matches_proc() -> None:
    host = DeviceProfile.host()
    cpuinfo = Path("/proc/cpuinfo").read_text()
    arch = {"x86_64": "x86_64", "aarch64": "aarch64"}[platform.machine()]
    key, vocabulary = ("flags", X86_FEATURES) if arch == "x86_64" else ("Features", ARM_FEATURES)
    # Computed independently of the probe: the first processor's feature line.
    line = next(line for line in cpuinfo.splitlines() if line.split(":")[0].strip() == key)
    assert host.cpu_features == set(line.split(":", 1)[1].split()) & set(vocabulary)
    memtotal = next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:"))
    assert host.memory_bytes == int(memtotal.split()[1]) * 1024
    assert (host.name, host.arch, dict(host.backends)) == ("host", arch, {})
    assert host.os in ("linux", "android")
    jsonschema.Draft202012Validator(SCHEMA).validate(host.to_json())
    assert DeviceProfile.from_json(json.loads(host.to_json_text())) == host


def test_spec_states_the_hwcap_bits() -> None:
    spec = (ROOT / "specs" / "device-profile.md").read_text()
    rows = re.findall(r"^\| `(\w+)` +\|[^|]+\| (AT_HWCAP2?) bit (\d+) *\|$", spec, re.MULTILINE)
    entries = {"AT_HWCAP": probe_linux.AT_HWCAP, "AT_HWCAP2": probe_linux.AT_HWCAP2}
    assert {word: (entries[entry], int(bit)) for word, entry, bit in rows} == probe_linux.ARM_HWCAP_BITS


# The ExecuTorch backends of this machine's runtime, as a fatpte-run answers (probe_executorch).
# Fake fatpte-run scripts here; the real one: tests/loader/test_host_runtime.py.

def _fake_runtime(folder: Path, body: str) -> Path:
    path = folder / "fatpte-run"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


ANSWER = 'echo \'{"name": "host", "executorch_backends": ["XnnpackBackend", "FatpteBackend"]}\''


def test_the_runtime_named_by_fatpte_run_is_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fatpte.device import probe_executorch

    args = tmp_path / "args"
    runtime = _fake_runtime(tmp_path, f'echo "$@" > {args}\n{ANSWER}')
    monkeypatch.setenv("FATPTE_RUN", str(runtime))
    assert probe_executorch.runtime_backends() == ("FatpteBackend", "XnnpackBackend")
    assert args.read_text() == "--device-json --with-executorch\n"
    profile = DeviceProfile.host()
    assert profile.executorch_backends == frozenset({"FatpteBackend", "XnnpackBackend"})


def test_fatpte_run_on_path_or_beside_python_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fatpte.device import probe_executorch

    monkeypatch.delenv("FATPTE_RUN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    runtime = _fake_runtime(tmp_path, ANSWER)
    assert probe_executorch.find_runtime() == (str(runtime), False)
    assert probe_executorch.runtime_backends() == ("FatpteBackend", "XnnpackBackend")
    beside = tmp_path / "venv" / "bin"
    beside.mkdir(parents=True)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr("sys.executable", str(beside / "python"))
    assert probe_executorch.find_runtime() == (None, False)
    found = _fake_runtime(beside, ANSWER)
    assert probe_executorch.find_runtime() == (str(found), False)


@pytest.mark.parametrize("body", ["exit 2", "echo not json", 'echo \'{"name": "host"}\'',
                                  'echo \'{"executorch_backends": [1]}\''])
def test_a_found_runtime_that_does_not_answer_means_not_known(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              body: str) -> None:
    from fatpte.device import probe_executorch

    monkeypatch.delenv("FATPTE_RUN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    _fake_runtime(tmp_path, body)
    assert probe_executorch.runtime_backends() is None
    assert DeviceProfile.host().executorch_backends is None


@pytest.mark.parametrize(("body", "code", "said"), [
    ("echo 'fatpte-run: unexpected argument' >&2; exit 2", ErrorCode.INVALID_ARGUMENT,
     "exited 2 (fatpte-run: unexpected argument); a fatpte-run built with the ExecuTorch SDK answers it"),
    ('echo \'{"name": "host"}\'', ErrorCode.INVALID_ARGUMENT,
     "its answer is not a device profile with executorch_backends"),
    (None, ErrorCode.IO_ERROR, "cannot run FATPTE_RUN="),
])
def test_a_named_runtime_that_does_not_answer_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          body: str | None, code: ErrorCode, said: str) -> None:
    runtime = tmp_path / "fatpte-run" if body is None else _fake_runtime(tmp_path, body)
    monkeypatch.setenv("FATPTE_RUN", str(runtime))
    with pytest.raises(FatpteError) as info:
        DeviceProfile.host()
    assert (info.value.code, info.value.field, info.value.source) == (code, "FATPTE_RUN", str(runtime))
    assert said in info.value.message


def test_an_empty_fatpte_run_asks_no_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fatpte.device import probe_executorch

    monkeypatch.setenv("PATH", str(tmp_path))
    _fake_runtime(tmp_path, ANSWER)
    monkeypatch.setenv("FATPTE_RUN", "")
    assert probe_executorch.find_runtime() == (None, True)
    assert DeviceProfile.host().executorch_backends is None
