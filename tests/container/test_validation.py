"""fatpte.validate: every finding with its code, offset and field; corruption tests change one
thing, after checking the original value, and expect the exact code."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import crc32c
import pytest

import fatpte
from fatpte.container.validation import validate_buffer
from fatpte.errors import ErrorCode, Severity
from fatpte.format import layout as L
from fatpte.ops.specialization import Specialization

ENTRY = L.RECORDS["v2_entry"]
HEADER = L.RECORDS["v2_header"]


def _reseal(data: bytearray) -> bytearray:
    """Recompute header_checksum so that the defect under test, not the checksum, is what fails."""
    h = HEADER.codec.unpack_from(data, 0)
    fields = dict(zip(HEADER.fields, h))
    end = fields["header_size"] + fields["entry_count"] * fields["entry_size"]
    end += fields["segment_count"] * fields["segment_entry_size"]
    data[60:64] = b"\0\0\0\0"
    data[60:64] = struct.pack("<I", crc32c.crc32c(bytes(data[:end])))
    return data


def _entry_at(i: int, field: str) -> int:
    return L.V2_HEADER_SIZE + i * L.V2_ENTRY_SIZE + ENTRY.offsets[field][0]


def _set(data: bytearray, at: int, fmt: str, value: object, *, was: object) -> bytearray:
    assert struct.unpack_from(fmt, data, at)[0] == was  # the original, before the change
    struct.pack_into(fmt, data, at, value)
    return data


@pytest.fixture
def base(tmp_path: Path) -> bytes:
    path = fatpte.pack(
        [Specialization("portable", b"portable-payload" * 4),
         Specialization("xnnpack", b"\x08\0\0\0XN01" + bytes(range(200)), name="xnnpack-fp32")],
        tmp_path / "base.nfat",
    )
    return path.read_bytes()


def test_a_packed_container_is_valid(base: bytes) -> None:
    report = validate_buffer(base)
    assert report.ok and report.findings == () and report.version == 2


def test_flipped_payload_byte_names_the_entry_and_offset(base: bytes) -> None:
    c = fatpte.Container.from_buffer(base)
    e = c.entry("xnnpack-fp32")
    data = bytearray(base)
    data[e.offset + 77] ^= 0x20
    report = validate_buffer(bytes(data), source="m.nfat")
    assert [f.code for f in report.findings] == [ErrorCode.PAYLOAD_CHECKSUM_MISMATCH]
    f = report.findings[0]
    assert f.offset == _entry_at(1, "checksum") and f.field == "entries[1].checksum"
    assert "'xnnpack-fp32'" in f.message and f"{e.offset:#x}" in f.message
    assert f.describe().startswith(f"E0208 at {_entry_at(1, 'checksum'):#x} (entries[1].checksum): payload of")


def test_flipped_table_byte_is_a_header_checksum_error(base: bytes) -> None:
    data = bytearray(base)
    data[_entry_at(0, "priority")] ^= 1
    report = validate_buffer(bytes(data))
    assert [f.code for f in report.findings] == [ErrorCode.HEADER_CHECKSUM_MISMATCH]
    assert report.first_error is not None and report.first_error.offset == 60


@pytest.mark.parametrize(
    ("at", "fmt", "was", "value", "code", "field"),
    [
        (_entry_at(1, "alignment"), "<I", 64, 0, ErrorCode.BAD_ALIGNMENT, "entries[1].alignment"),
        (_entry_at(1, "alignment"), "<I", 64, 48, ErrorCode.BAD_ALIGNMENT, "entries[1].alignment"),
        (_entry_at(1, "alignment"), "<I", 64, 1 << 17, ErrorCode.BAD_ALIGNMENT, "entries[1].alignment"),
        (_entry_at(1, "alignment"), "<I", 64, 4096, ErrorCode.MISALIGNED_PAYLOAD, "entries[1].offset"),
        (_entry_at(0, "reserved"), "<I", 0, 7, ErrorCode.RESERVED_NOT_ZERO, "entries[0].reserved"),
        (_entry_at(0, "flags"), "<I", 0, 1, ErrorCode.UNKNOWN_ENTRY_FLAGS, "entries[0].flags"),
        (_entry_at(0, "size"), "<Q", 64, 1 << 40, ErrorCode.PAYLOAD_OUT_OF_BOUNDS, "entries[0].size"),
        (_entry_at(0, "offset"), "<Q", 320, (1 << 64) - 64, ErrorCode.PAYLOAD_OUT_OF_BOUNDS, "entries[0].size"),
        (_entry_at(0, "offset"), "<Q", 320, 0, ErrorCode.REGIONS_OVERLAP, "entries[0].offset"),
        (_entry_at(1, "offset"), "<Q", 384, 320, ErrorCode.REGIONS_OVERLAP, "entries[1].offset"),
        (_entry_at(1, "payload_kind"), "4s", b"XN01", b"XN02", ErrorCode.PAYLOAD_KIND_MISMATCH,
         "entries[1].payload_kind"),
        (28, "<I", 0, 0x10, ErrorCode.UNKNOWN_HEADER_FLAGS, "header.flags"),
        (8, "<I", 64, 60, ErrorCode.BAD_HEADER_SIZE, "header.header_size"),
        (12, "<I", 104, 100, ErrorCode.BAD_ENTRY_SIZE, "header.entry_size"),
        (20, "<I", 32, 8192, ErrorCode.BAD_SEGMENT_ENTRY_SIZE, "header.segment_entry_size"),
        (16, "<I", 2, 0, ErrorCode.NO_ENTRIES, "header.entry_count"),
        (16, "<I", 2, 70000, ErrorCode.TOO_MANY_ENTRIES, "header.entry_count"),
        (16, "<I", 2, 9, ErrorCode.TABLE_OUT_OF_BOUNDS, "header.entry_count"),
        (24, "<I", 0, 1 << 21, ErrorCode.TOO_MANY_SEGMENTS, "header.segment_count"),
        (48, "<Q", 0, 64 << 20, ErrorCode.MANIFEST_OUT_OF_BOUNDS, "header.manifest_size"),
        (40, "<Q", 0, 8, ErrorCode.ABSENT_MANIFEST_NOT_ZERO, "header.manifest_offset"),
        (48, "<Q", 0, (64 << 20) + 1, ErrorCode.MANIFEST_TOO_LARGE, "header.manifest_size"),
    ],
)
def test_one_defect_one_code(base: bytes, at: int, fmt: str, was: object, value: object, code: ErrorCode,
                             field: str) -> None:
    data = _reseal(_set(bytearray(base), at, fmt, value, was=was))
    report = validate_buffer(bytes(data))
    first = report.first_error
    assert first is not None and first.code is code, report.findings
    assert first.field == field
    assert not report.ok


def test_misaligned_manifest_is_reported(base: bytes) -> None:
    data = bytearray(base)
    _set(data, 40, "<Q", 4, was=0)
    _set(data, 48, "<Q", 8, was=0)
    report = validate_buffer(bytes(_reseal(data)))
    assert report.first_error is not None and report.first_error.code is ErrorCode.MISALIGNED_MANIFEST


def test_container_size_checks_come_first(base: bytes) -> None:
    assert validate_buffer(base[:-1]).first_error.code is ErrorCode.TRUNCATED_CONTAINER  # type: ignore[union-attr]
    report = validate_buffer(base + b"\0")
    assert report.first_error is not None and report.first_error.code is ErrorCode.TRAILING_BYTES
    assert report.first_error.offset == len(base)


def test_nonzero_padding_is_reported_at_its_byte(tmp_path: Path) -> None:
    base = fatpte.pack([Specialization("a", b"x" * 10), Specialization("b", b"y" * 10)], tmp_path / "p").read_bytes()
    c = fatpte.Container.from_buffer(base)
    gap = c.entries[0].end  # padding runs from here to the next payload
    assert gap % 64 and base[gap] == 0
    data = bytearray(base)
    data[gap + 1] = 0xAA
    report = validate_buffer(bytes(data))
    assert [(f.code, f.offset) for f in report.findings] == [(ErrorCode.PADDING_NOT_ZERO, gap + 1)]


def test_duplicate_names_are_reported_with_both_indexes(tmp_path: Path) -> None:
    path = fatpte.pack([Specialization("aaa", b"1"), Specialization("bbb", b"2")], tmp_path / "d")
    data = bytearray(path.read_bytes())
    data[_entry_at(1, "name") : _entry_at(1, "name") + 3] = b"aaa"
    report = validate_buffer(bytes(_reseal(data)))
    assert [f.code for f in report.findings] == [ErrorCode.DUPLICATE_NAME]
    assert "entry 1" in report.findings[0].message and "entry 0" in report.findings[0].message


@pytest.mark.parametrize(
    ("raw", "why"),
    [(b"", "is empty"), (b"a b", "outside [A-Za-z0-9_.-]"), (b"ab\0c", "non-zero bytes after")],
)
def test_bad_names_and_ids(base: bytes, raw: bytes, why: str) -> None:
    for field, code in (("name", ErrorCode.BAD_NAME), ("backend_id", ErrorCode.BAD_BACKEND_ID)):
        data = bytearray(base)
        at = _entry_at(0, field)
        assert data[at : at + 8] == b"portable"
        data[at : at + 32] = raw.ljust(32, b"\0")
        report = validate_buffer(bytes(_reseal(data)))
        assert report.first_error is not None and report.first_error.code is code
        assert why in report.first_error.message


def test_all_findings_are_listed_in_canonical_order(base: bytes) -> None:
    data = bytearray(base)
    _set(data, _entry_at(0, "reserved"), "<I", 1, was=0)
    _set(data, _entry_at(1, "flags"), "<I", 2, was=0)
    _set(data, _entry_at(1, "alignment"), "<I", 3, was=64)
    report = validate_buffer(bytes(_reseal(data)))
    assert [f.code for f in report.findings] == [
        ErrorCode.RESERVED_NOT_ZERO, ErrorCode.UNKNOWN_ENTRY_FLAGS, ErrorCode.BAD_ALIGNMENT]


def test_v1_quirks_are_warnings_and_the_file_stays_valid() -> None:
    table = b"NFAT" + struct.pack("<II", 1, 3)
    table += b"cpu\0junk".ljust(32, b"\0") + struct.pack("<QQ", 0, 4)
    table += b"gpu".ljust(32, b"\0") + struct.pack("<QQ", 2, 4)  # overlaps cpu
    table += b"cpu".ljust(32, b"\0") + struct.pack("<QQ", 10, 1)  # duplicate id, leaves a gap
    report = validate_buffer(table + b"abcdefghijkXYZ")
    assert report.ok
    assert all(f.severity is Severity.WARNING for f in report.findings)
    assert [f.code for f in report.findings] == [
        ErrorCode.V1_ID_PADDING_NOT_ZERO, ErrorCode.V1_DUPLICATE_ID, ErrorCode.V1_OVERLAPPING_PAYLOADS,
        ErrorCode.V1_UNCOVERED_BYTES, ErrorCode.V1_UNCOVERED_BYTES]
    assert "warning" in report.findings[0].describe()


def test_report_json_is_serialisable(base: bytes) -> None:
    data = bytearray(base)
    data[-1] ^= 1
    doc = validate_buffer(bytes(data), source="x.nfat").to_json()
    text = json.dumps(doc)
    assert json.loads(text)["findings"][0]["code"] == "E0208"
    assert doc["ok"] is False and doc["path"] == "x.nfat"


def test_validate_reads_files(tmp_path: Path, base: bytes) -> None:
    p = tmp_path / "f.nfat"
    p.write_bytes(base)
    assert fatpte.validate(p).ok
    p.write_bytes(b"")
    assert fatpte.validate(p).first_error.code is ErrorCode.TRUNCATED_HEADER  # type: ignore[union-attr]
