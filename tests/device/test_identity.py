"""Device identity: the core table, the Linux probe of cores, distribution, machine and SoC over
recorded samples and a folder standing for /, the profile keys' canonical form, requirements on
them (revision 4, `fatpte pack --require`), grades, and notes said once."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main
from fatpte.device import probe_identity as P
from fatpte.device.profile import DeviceProfile
from fatpte.device.selection import Candidate, Verdict, explain_lines, rank
from fatpte.format import vocabulary as V
from fatpte.format.model import Entry
from fatpte.manifest.model import Requirements

# Two processors of a Snapdragon 855 (Kryo 485: one Gold, one Silver) as its kernel prints them.
SD855 = """processor\t: 0
BogoMIPS\t: 38.40
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp
CPU implementer\t: 0x51
CPU architecture: 8
CPU variant\t: 0x7
CPU part\t: 0x805
CPU revision\t: 14

processor\t: 7
CPU implementer\t: 0x51
CPU architecture: 8
CPU variant\t: 0xd
CPU part\t: 0x804
CPU revision\t: 14
"""
X86 = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 183
"""


def test_core_table_is_one_truth() -> None:
    ids = [i for c in V.CORES for i in c.ids]
    assert len(ids) == len(set(ids)), "an id names two cores"
    assert len(V.CORE_BY_NAME) == len(V.CORES)
    for c in V.CORES:
        assert c.arch in V.ARCHES
        for i in c.ids:
            assert __import__("re").fullmatch(V.CORE_ID_PATTERNS[c.arch], i), i


def test_cpuinfo_cores_read_each_processor_of_the_architecture() -> None:
    assert P.cpuinfo_cores(SD855, "aarch64") == ["cortex-a55", "cortex-a76"]
    assert P.cpuinfo_cores(SD855, "x86_64") == []  # qemu-user shows the host's file: never mixed
    assert P.cpuinfo_cores(X86, "x86_64") == ["sapphirerapids", "AuthenticAMD:25:183"]
    assert P.cpuinfo_cores(X86, "aarch64") == []
    odd = "CPU implementer: 41\nCPU part: 0xd0b\nCPU implementer: 0x100\nCPU part: 0xd0b\nCPU implementer: 0x41\nCPU part: 0x1d0b\n"
    assert P.cpuinfo_cores(odd, "aarch64") == []  # no 0x; implementer past 0xff; part past 0xfff
    assert P.cpuinfo_cores("vendor_id: Genuine Intel\ncpu family: 6\nmodel: 143\n", "x86_64") == []
    assert P.cpuinfo_cores("vendor_id: GenuineIntel\ncpu family: 06\nmodel: 143\n", "x86_64") == []


def test_midr_and_os_release() -> None:
    assert P.midr_core("0x00000000410fd0b1\n") == "cortex-a76"
    assert P.midr_core("0x00000000461f0010") == "a64fx"
    assert P.midr_core("0x00000000410fd991") == "0x41:0xd99"
    assert P.midr_core("410fd0b1") is None
    assert P.os_release_of('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n') == "debian 12"
    assert P.os_release_of("ID='ubuntu'\nVERSION_ID=24.04\nID=ubuntu\r\n") == "ubuntu 24.04"
    assert P.os_release_of("ID=arch\n") == "arch"
    assert P.os_release_of("ID=arch linux\nVERSION_ID=1\n") is None
    assert P.os_release_of("NAME=x\n") is None


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_identity_of_a_folder_standing_for_slash(tmp_path: Path) -> None:
    _write(tmp_path, "proc/cpuinfo", b"processor: 0\nFeatures: fp asimd\n")
    for n, midr in enumerate([b"0x00000000410fd0b1\n", b"0x00000000410fd0b1\n", b"0x00000000410fd051\n"]):
        _write(tmp_path, f"sys/devices/system/cpu/cpu{n}/regs/identification/midr_el1", midr)
    _write(tmp_path, "usr/lib/os-release", b'ID=debian\nVERSION_ID="12"\n')
    _write(tmp_path, "proc/device-tree/model", b"Raspberry Pi 5 Model B Rev 1.0\0")
    _write(tmp_path, "proc/device-tree/compatible", b"raspberrypi,5-model-b\0brcm,bcm2712\0")
    _write(tmp_path, "sys/devices/soc0/family", b"BCM2712\n")
    _write(tmp_path, "sys/devices/soc0/soc_id", b"\xff\xfe\n")  # not printable ASCII: left out
    got = P.identity("aarch64", root=str(tmp_path))
    assert got == P.Identity(cpu_cores=frozenset({"cortex-a76", "cortex-a55"}), os_release="debian 12",
                             machine="Raspberry Pi 5 Model B Rev 1.0",
                             soc=frozenset({"raspberrypi,5-model-b", "brcm,bcm2712", "BCM2712"}))
    assert P.identity("aarch64", root=str(tmp_path / "empty")) == P.Identity()


def test_identity_keys_print_after_executorch_backends_in_canonical_order() -> None:
    p = DeviceProfile("t", "linux", "aarch64", ["asimd"], executorch_backends=["XnnpackBackend"],
                      soc=["b", "a"], machine="M", os_release="debian 12", kernel="6.1", cpu_cores=["cortex-a76"])
    keys = list(json.loads(p.to_json_text()))
    assert keys[-6:] == ["executorch_backends", "cpu_cores", "kernel", "os_release", "machine", "soc"]
    assert json.loads(p.to_json_text())["soc"] == ["a", "b"]
    assert DeviceProfile.from_json(json.loads(p.to_json_text())) == p


def test_requirements_on_identity_need_revision_4_and_pack_refuses_bad_words(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"aaaa")
    (tmp_path / "b.bin").write_bytes(b"bbbb")
    out = tmp_path / "c.nfat"
    runner = CliRunner()
    args = ["pack", "-o", str(out), f"a76:xnnpack={tmp_path / 'a.bin'}", f"portable={tmp_path / 'b.bin'}",
            "--require", "a76:min_core=cortex-a76", "--require", "a76:cpu_cores=cortex-a76",
            "--require", "a76:cpu_cores=cortex-a55", "--require", "a76:soc=brcm,bcm2712",
            "--require", "a76:min_memory_bytes=4294967296"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    with fatpte.open(out) as c:
        assert c.manifest.revision == 4
        req = c.manifest.entry("a76").requires
        assert req == Requirements(min_memory_bytes=1 << 32, cpu_cores=("cortex-a76", "cortex-a55"),
                                   min_core="cortex-a76", soc=("brcm,bcm2712",))
        assert c.manifest.entry("portable").requires == Requirements()
    for bad, why in (("a76:min_core=cortex-a99", "not a core name"), ("a76:cpu_cores=0x41:0xd0b", "write its name"),
                     ("nope:soc=x", "no entry is named"), ("a76:cores=x", "NAME:KEY=VALUE")):
        result = runner.invoke(main, [*args[:5], "--force", "--require", bad])
        assert result.exit_code == 2 and why in result.output, result.output


def _verdicts(reqs: list[Requirements], device: DeviceProfile,
              needs: list[tuple[str, ...] | None]) -> tuple[Verdict, ...]:
    entries = [Entry(i, f"e{i}", "xnnpack", 0, 1, None, 1, None, 0, 0) for i in range(len(reqs))]
    return rank([Candidate(e, r, n) for e, r, n in zip(entries, reqs, needs)], device)[0]


def test_grades_and_a_shared_note_said_once() -> None:
    device = DeviceProfile("d", "linux", "aarch64", ["asimd", "asimddp"], cpu_cores=["cortex-a76", "cortex-a55"])
    reqs = [Requirements(min_core="cortex-a55"), Requirements(cpu_features=("asimddp",)), Requirements(arch=("aarch64",)),
            Requirements(min_core="cortex-a76")]
    verdicts = _verdicts(reqs, device, [("XnnpackBackend",)] * 4)
    assert [v.grade for v in verdicts] == ["exact", "compatible", "fallback", None]
    assert [f.requirement for f in verdicts[3].failures] == ["min_core"]
    lines = explain_lines(verdicts)
    assert sum("not checked" in line for line in lines) == 1
    assert lines[-1].startswith("  note, for every entry: ExecuTorch backends not checked")


def test_schema_carries_the_core_table_and_accepts_the_vector_profiles() -> None:
    import jsonschema

    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "specs" / "device_profile.schema.json").read_text())
    names = schema["properties"]["cpu_cores"]["items"]["anyOf"][0]["enum"]
    assert names == [c.name for c in V.CORES]
    for rule in schema["allOf"]:
        arch = rule["if"]["properties"]["arch"]["const"]
        assert rule["then"]["properties"]["cpu_cores"]["items"]["anyOf"][0]["enum"] == [
            c.name for c in V.CORES if c.arch == arch]
    for path in sorted((root / "specs" / "vectors" / "identity").glob("device-*.json")):
        jsonschema.validate(json.loads(path.read_text()), schema)
