"""fatpte.pack: exact bytes, streaming from paths, atomicity, determinism, argument errors."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import layout as L
from fatpte.ops.packing import detect_payload_kind
from fatpte.ops.specialization import Specialization


def _id(text: bytes) -> bytes:
    return text.ljust(32, b"\0")


def test_v1_exact_bytes(tmp_path: Path) -> None:
    out = fatpte.pack([Specialization("portable", b"abc"), Specialization("xnnpack", b"defg")], tmp_path / "a",
                      version=1)
    expected = (
        b"NFAT" + struct.pack("<II", 1, 2)
        + _id(b"portable") + struct.pack("<QQ", 0, 3)
        + _id(b"xnnpack") + struct.pack("<QQ", 3, 4)
        + b"abcdefg"
    )
    assert out.read_bytes() == expected


def test_v2_exact_bytes(tmp_path: Path) -> None:
    gpu_payload = b"\x08\0\0\0XN01\0\0\0\0"  # a flatbuffer-shaped payload: root offset 8, identifier XN01
    out = fatpte.pack(
        [Specialization("cpu", b"\x01\x02\x03"), Specialization("gpu", gpu_payload, alignment=16)],
        tmp_path / "a",
        alignment=8,
    )
    header = b"NFAT" + struct.pack("<7I3Q2I", 2, 64, 104, 2, 32, 0, 0, 0x12C, 0, 0, 0, 0)
    cpu = _id(b"cpu") * 2 + struct.pack("<QQ4sIIiII", 0x110, 3, b"\0\0\0\0", 8, 0xF130F21E, 0, 0, 0)
    gpu = _id(b"gpu") * 2 + struct.pack("<QQ4sIIiII", 0x120, 12, b"XN01", 16, 0xD1505F83, 0, 0, 0)
    table = header + cpu + gpu
    # header_checksum: CRC32C of the header and table with the checksum field itself as zero
    table = table[:60] + struct.pack("<I", crc32c.crc32c(table)) + table[64:]
    expected = table + b"\x01\x02\x03" + b"\0" * 13 + gpu_payload
    assert out.read_bytes() == expected


def test_payloads_stream_from_paths_and_match_bytes_input(tmp_path: Path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 5)
    src = tmp_path / "weights.bin"
    src.write_bytes(data)
    a = fatpte.pack([Specialization("cpu", src)], tmp_path / "from-path")
    b = fatpte.pack([Specialization("cpu", data)], tmp_path / "from-bytes")
    assert a.read_bytes() == b.read_bytes()
    with fatpte.open(a) as c:
        assert c.payload("cpu") == data


def test_empty_payload_file_is_packed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    out = fatpte.pack([Specialization("cpu", empty), Specialization("gpu", b"x")], tmp_path / "a")
    with fatpte.open(out) as c:
        assert c.payload("cpu") == b"" and c.payload("gpu") == b"x"
    assert fatpte.validate(out).ok


def test_deterministic(tmp_path: Path) -> None:
    specs = [Specialization("cpu", b"a" * 100), Specialization("gpu", b"b" * 7, priority=3)]
    assert fatpte.pack(specs, tmp_path / "1").read_bytes() == fatpte.pack(specs, tmp_path / "2").read_bytes()


def test_identical_payloads_share_one_region_aligned_for_all(tmp_path: Path) -> None:
    blob = os.urandom(1000)
    out = fatpte.pack(
        [Specialization("a", blob), Specialization("b", b"other"), Specialization("c", bytearray(blob), alignment=4096)],
        tmp_path / "x",
    )
    with fatpte.open(out) as c:
        a, b, cc = c.entries
        assert (a.offset, a.size) == (cc.offset, cc.size)
        assert a.offset % 4096 == 0
        assert b.offset % 64 == 0
    assert out.stat().st_size < 4096 + 1000 + 64 + 64
    assert fatpte.validate(out).ok


def test_every_v2_payload_offset_is_a_multiple_of_its_alignment(tmp_path: Path) -> None:
    specs = [Specialization(f"b{i}", os.urandom(i * 37 + 1), alignment=1 << (i % 17)) for i in range(20)]
    with fatpte.open(fatpte.pack(specs, tmp_path / "x")) as c:
        for e, s in zip(c.entries, specs):
            assert e.alignment == s.alignment and e.offset % e.alignment == 0


def test_payload_kind_is_detected_from_bytes_4_to_8() -> None:
    assert detect_payload_kind(b"\x08\0\0\0NPTG....") == b"NPTG"
    assert detect_payload_kind(b"\0\0\0\0XH00") == b"XH00"
    assert detect_payload_kind(b"\0\0\0\0\xff\0\0\0") == b"\0\0\0\0"
    assert detect_payload_kind(b"short") == b"\0\0\0\0"
    assert detect_payload_kind(b"PPPPPPPPPPPP") == b"\0\0\0\0"  # root offset 0x50505050 is past the end
    assert detect_payload_kind(b"\x04\0\0\0NPTG") == b"\0\0\0\0"  # root inside the identifier


def test_atomic_write_leaves_nothing_on_error(tmp_path: Path) -> None:
    dest = tmp_path / "out.nfat"
    dest.write_bytes(b"precious")
    with pytest.raises(FatpteError) as info:
        fatpte.pack([Specialization("cpu", b"x"), Specialization("gpu", tmp_path / "missing.bin")], dest)
    assert info.value.code is ErrorCode.IO_ERROR
    assert "missing.bin" in str(info.value)
    assert dest.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.nfat"]


def test_output_replaces_existing_file_with_normal_permissions(tmp_path: Path) -> None:
    dest = tmp_path / "out.nfat"
    dest.write_bytes(b"old")
    fatpte.pack([Specialization("cpu", b"x")], dest)
    assert fatpte.validate(dest).ok
    assert dest.stat().st_mode & 0o644 == 0o644


@pytest.mark.parametrize(
    ("specs", "kwargs", "code", "field"),
    [
        ([], {}, ErrorCode.NO_SPECIALIZATIONS, None),
        ([Specialization("cpu", b"x")], {"version": 3}, ErrorCode.INVALID_ARGUMENT, "version"),
        ([Specialization("", b"x")], {}, ErrorCode.BAD_NAME, "specialization[0].name"),
        ([Specialization("cpu", b"x", name="bad name")], {}, ErrorCode.BAD_NAME, "specialization[0].name"),
        ([Specialization("c/u", b"x", name="ok")], {}, ErrorCode.BAD_BACKEND_ID, "specialization[0].backend_id"),
        ([Specialization("x" * 33, b"x")], {}, ErrorCode.BAD_NAME, "specialization[0].name"),
        ([Specialization("cpu", b"x"), Specialization("cpu", b"y")], {}, ErrorCode.DUPLICATE_NAME,
         "specialization[1].name"),
        ([Specialization("cpu", b"x", alignment=3)], {}, ErrorCode.BAD_ALIGNMENT, "specialization[0].alignment"),
        ([Specialization("cpu", b"x", alignment=1 << 17)], {}, ErrorCode.BAD_ALIGNMENT,
         "specialization[0].alignment"),
        ([Specialization("cpu", b"x")], {"alignment": 0}, ErrorCode.BAD_ALIGNMENT, "alignment"),
        ([Specialization("cpu", b"x", priority=1 << 31)], {}, ErrorCode.INVALID_ARGUMENT,
         "specialization[0].priority"),
        ([Specialization("cpu", 12)], {}, ErrorCode.INVALID_ARGUMENT, "specialization[0].payload"),  # type: ignore[arg-type]
        ([Specialization("cpu", b"x", name="other")], {"version": 1}, ErrorCode.NOT_REPRESENTABLE_IN_V1,
         "specialization[0].name"),
        ([Specialization("cpu", b"x", priority=1)], {"version": 1}, ErrorCode.NOT_REPRESENTABLE_IN_V1,
         "specialization[0]"),
        ([Specialization("cpu", b"x")], {"version": 1, "alignment": 64}, ErrorCode.NOT_REPRESENTABLE_IN_V1,
         "specialization[0]"),
        ([Specialization("cpu\0", b"x")], {"version": 1}, ErrorCode.V1_BAD_ID, "specialization[0].backend_id"),
        ([Specialization("caf\u00e9", b"x")], {"version": 1}, ErrorCode.V1_BAD_ID, "specialization[0].backend_id"),
    ],
)
def test_bad_arguments(tmp_path: Path, specs: list[Specialization], kwargs: dict[str, int], code: ErrorCode,
                       field: str | None) -> None:
    dest = tmp_path / "out"
    with pytest.raises(FatpteError) as info:
        fatpte.pack(specs, dest, **kwargs)
    assert info.value.code is code
    assert info.value.field == field
    assert not dest.exists()
    assert list(tmp_path.iterdir()) == []


def test_v1_accepts_any_ascii_id_up_to_32_bytes(tmp_path: Path) -> None:
    ident = "A b!~" + "x" * 27
    assert len(ident) == 32
    out = fatpte.pack([Specialization(ident, b"p")], tmp_path / "a", version=1)
    with fatpte.open(out) as c:
        assert c.entries[0].backend_id == ident
    assert out.read_bytes()[12:44] == ident.encode()


def test_limit_on_entries_is_checked_before_opening_payloads(tmp_path: Path) -> None:
    specs = [Specialization(f"b{i}", tmp_path / "does-not-exist") for i in range(L.MAX_ENTRIES + 1)]
    with pytest.raises(FatpteError) as info:
        fatpte.pack(specs, tmp_path / "x")
    assert info.value.code is ErrorCode.TOO_MANY_ENTRIES


# -- ranking ties (specs/nfat-manifest.md 6.2) ---------------------------------------------------


def _ties(tmp_path: Path, specs: list[Specialization]) -> list[str]:
    import warnings

    from fatpte.errors import ErrorCode, FatpteWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fatpte.pack(specs, tmp_path / "t.nfat")
    return [str(w.message) for w in caught
            if isinstance(w.message, FatpteWarning) and w.message.code is ErrorCode.RANKING_TIE]


def test_entries_only_the_table_order_tells_apart_are_a_warning(tmp_path: Path) -> None:
    S = Specialization
    [tie] = _ties(tmp_path, [S("cpu", b"a"), S("gpu", b"b")])
    assert tie.startswith("E0709 (specialization): entries 'cpu' and 'gpu' can both be eligible on one device")
    assert "only their place in the table chooses 'cpu'" in tie
    # A priority, a delegation or a requirement breaks the tie; so do requirements no one device meets
    # together (another architecture, another OS, features of two architectures).
    assert _ties(tmp_path, [S("cpu", b"a"), S("gpu", b"b", priority=1)]) == []
    assert _ties(tmp_path, [S("portable", b"a", executorch_backends=[]),
                            S("xnnpack", b"b", executorch_backends=["XnnpackBackend"])]) == []
    assert _ties(tmp_path, [S("cpu", b"a"), S("avx2", b"b", requires={"cpu_features": ["avx2"]})]) == []
    assert _ties(tmp_path, [S("x", b"a", requires={"arch": "x86_64"}), S("y", b"b", requires={"arch": "aarch64"})]) == []
    assert _ties(tmp_path, [S("x", b"a", requires={"os": "linux"}), S("y", b"b", requires={"os": "macos"})]) == []
    assert _ties(tmp_path, [S("x", b"a", requires={"cpu_features": ["avx2"]}),
                            S("y", b"b", requires={"cpu_features": ["sve2"]})]) == []
    # Two that delegate, with the same requirements count, still tie.
    assert len(_ties(tmp_path, [S("xnnpack", b"a", executorch_backends=["XnnpackBackend"]),
                                S("native", b"b", executorch_backends=["NativeBackend"])])) == 1
    assert len(_ties(tmp_path, [S("a", b"a"), S("b", b"b"), S("c", b"c")])) == 2  # b and c, each with a


def test_ranking_ties_follow_the_identity_requirements(tmp_path: Path) -> None:
    """cpu_cores and min_core keep two entries apart exactly when no one core meets both: a device
    meets a core requirement only when every core it lists does (specs/nfat-manifest.md 4.4, 6.2)."""
    S = Specialization

    def tie(a: dict[str, object], b: dict[str, object]) -> bool:
        found = _ties(tmp_path, [S("a", b"a", requires=a), S("b", b"b", requires=b)])
        assert len(found) <= 1
        return bool(found)

    # Disjoint core lists: a big.LITTLE part with both cores meets neither entry.
    assert not tie({"cpu_cores": ["cortex-a55"]}, {"cpu_cores": ["cortex-a76"]})
    # A part of cortex-a76 cores alone meets both.
    assert tie({"cpu_cores": ["cortex-a55", "cortex-a76"]}, {"cpu_cores": ["cortex-a76"]})
    assert tie({"cpu_cores": ["0x41:0xfff"]}, {"cpu_cores": ["0x41:0xfff", "cortex-a76"]})  # an unnamed core's id
    # min_core: a core of its architecture and generation, in the other's list where there is one.
    assert not tie({"min_core": "cortex-a76"}, {"cpu_cores": ["cortex-a55"]})
    assert tie({"min_core": "cortex-a76"}, {"cpu_cores": ["cortex-a55", "cortex-a78"]})
    assert not tie({"min_core": "cortex-a76"}, {"cpu_cores": ["0x41:0xfff"]})  # an unnamed core meets no minimum
    assert tie({"min_core": "cortex-a76"}, {"min_core": "cortex-a510"})
    assert not tie({"min_core": "cortex-a76"}, {"min_core": "znver4"})  # two architectures
    # The core's architecture is the device's: it must also allow the other's arch and features.
    assert not tie({"arch": "aarch64"}, {"cpu_cores": ["znver4"]})
    assert not tie({"cpu_features": ["avx2"]}, {"cpu_cores": ["cortex-a76"]})
    assert tie({"cpu_features": ["asimddp"]}, {"cpu_cores": ["cortex-a76"]})
    # soc never keeps two entries apart: one device lists its model and its device-tree words.
    assert tie({"soc": ["brcm,bcm2712"]}, {"soc": ["Raspberry Pi 5 Model B Rev 1.0"]})
    assert tie({"soc": ["brcm,bcm2712"]}, {"cpu_cores": ["cortex-a76"]})


def test_ranking_tie_warnings_are_capped_and_counted(tmp_path: Path) -> None:
    """65 entries that all tie: 16 warnings name their pair, one more counts the other 48."""
    from fatpte.ops.pack_manifest import TIE_WARNINGS

    ties = _ties(tmp_path, [Specialization("portable", bytes([i]) * 8, name=f"e{i:02d}") for i in range(65)])
    assert len(ties) == TIE_WARNINGS + 1
    assert ties[0].startswith("E0709 (specialization): entries 'e00' and 'e01' can both be eligible")
    assert ties[-1] == ("E0709 (specialization): 48 more entries tie with an earlier entry in the same way (64 in "
                        "all; the first 16 are named above)")
