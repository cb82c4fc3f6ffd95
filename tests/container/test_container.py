"""fatpte.open / Container: reading v1 and v2, lookups, zero-copy views, closing, structural errors."""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

import pytest

import fatpte
from fatpte.container.reader import Container
from fatpte.errors import ErrorCode, FatpteError
from fatpte.ops.specialization import Specialization
from tests.paths import ROOT

VECTORS = ROOT / "specs" / "vectors"


def _v1(entries: list[tuple[bytes, int, int]], data: bytes) -> bytes:
    out = b"NFAT" + struct.pack("<II", 1, len(entries))
    for ident, off, size in entries:
        out += ident.ljust(32, b"\0")[:32] + struct.pack("<QQ", off, size)
    return out + data


@pytest.fixture
def packed(tmp_path: Path) -> Path:
    return fatpte.pack(
        [
            Specialization("portable", b"P" * 10, priority=-1),
            Specialization("xnnpack", b"\x10\0\0\0XN01" + b"x" * 100, name="xnnpack-fp32", alignment=256),
            Specialization("xnnpack", b"int8", name="xnnpack-int8", priority=5),
        ],
        tmp_path / "c.nfat",
    )


def test_open_reads_every_field(packed: Path) -> None:
    with fatpte.open(packed) as c:
        assert c.version == 2 and c.size == packed.stat().st_size
        assert [e.name for e in c.entries] == ["portable", "xnnpack-fp32", "xnnpack-int8"]
        assert [e.backend_id for e in c.entries] == ["portable", "xnnpack", "xnnpack"]
        assert [e.priority for e in c.entries] == [-1, 0, 5]
        assert [e.payload_kind for e in c.entries] == [b"\0\0\0\0", b"XN01", b"\0\0\0\0"]
        assert c.entries[1].alignment == 256 and c.entries[1].offset % 256 == 0
        assert c.entry("xnnpack-int8").size == 4
        assert c.entries[1].payload_kind_text == "XN01" and c.entries[0].payload_kind_text == "-"


def test_payload_is_a_zero_copy_read_only_view(packed: Path) -> None:
    with fatpte.open(packed) as c:
        view = c.payload("portable", verify=True)
        assert view == b"P" * 10 and view.readonly
        assert isinstance(c.buffer, mmap.mmap)
        with pytest.raises(TypeError):
            view[0] = 0  # type: ignore[index]
        view.release()


def test_views_outliving_close_stay_valid(packed: Path) -> None:
    c = fatpte.open(packed)
    view = c.payload("xnnpack-int8")
    c.close()
    assert bytes(view) == b"int8"  # the mapping lives until the last view goes
    with pytest.raises(FatpteError):
        c.payload("portable")


def test_find_by_name_or_unique_backend_id(packed: Path) -> None:
    with fatpte.open(packed) as c:
        assert c.find("portable").index == 0
        assert c.find("xnnpack-int8").index == 2
        with pytest.raises(FatpteError) as info:
            c.find("xnnpack")
        assert info.value.code is ErrorCode.AMBIGUOUS_ENTRY
        assert "'xnnpack-fp32'" in info.value.message and "'xnnpack-int8'" in info.value.message
        with pytest.raises(FatpteError) as info:
            c.find("vulkan")
        assert info.value.code is ErrorCode.ENTRY_NOT_FOUND
        assert "portable" in info.value.message


def test_verify_detects_a_flipped_payload_byte(packed: Path) -> None:
    data = bytearray(packed.read_bytes())
    with fatpte.open(packed) as c:
        e = c.entry("xnnpack-fp32")
    data[e.offset + 50] ^= 0x01
    c2 = Container.from_buffer(bytes(data))  # structure is intact: opens
    with pytest.raises(FatpteError) as info:
        c2.payload("xnnpack-fp32", verify=True)
    assert info.value.code is ErrorCode.PAYLOAD_CHECKSUM_MISMATCH
    assert info.value.field == "entries[1].checksum"


def test_v1_blob_written_by_the_published_layout(tmp_path: Path) -> None:
    blob = _v1([(b"portable", 0, 3), (b"x" * 32, 3, 2)], b"abcde")
    c = Container.from_buffer(blob)
    assert c.version == 1
    assert [(e.backend_id, bytes(c.payload(e))) for e in c.entries] == [("portable", b"abc"), ("x" * 32, b"de")]
    assert c.entries[0].checksum is None and c.entries[0].alignment == 1


def test_v1_duplicate_ids_resolve_to_the_first() -> None:
    c = Container.from_buffer(_v1([(b"cpu", 0, 1), (b"cpu", 1, 1)], b"ab"))
    assert bytes(c.payload(c.find("cpu"))) == b"a"


@pytest.mark.parametrize(
    ("blob", "code", "offset"),
    [
        (b"", ErrorCode.TRUNCATED_HEADER, 0),
        (b"NFA", ErrorCode.TRUNCATED_HEADER, 3),
        (b"MZ\x90\x00abcd", ErrorCode.BAD_MAGIC, 0),
        (b"NFAT\x03\0\0\0" + b"\0" * 60, ErrorCode.UNSUPPORTED_VERSION, 4),
        (b"NFAT\x01\0\0\0\x01\0", ErrorCode.TRUNCATED_HEADER, 10),
        (b"NFAT\x02\0\0\0" + b"\0" * 20, ErrorCode.TRUNCATED_HEADER, 28),
        (_v1([], b""), ErrorCode.NO_ENTRIES, 8),
        (b"NFAT" + struct.pack("<II", 1, 0xFFFFFFFF), ErrorCode.TOO_MANY_ENTRIES, 8),
        (b"NFAT" + struct.pack("<II", 1, 2) + b"\0" * 48, ErrorCode.TABLE_OUT_OF_BOUNDS, 8),
        (_v1([(b"cpu", 0xFFFFFFFFFFFFFFFF, 2)], b"ab"), ErrorCode.PAYLOAD_OUT_OF_BOUNDS, 52),
        (_v1([(b"\xffcpu", 0, 2)], b"ab"), ErrorCode.V1_BAD_ID, 12),
        (_v1([(b"", 0, 2)], b"ab"), ErrorCode.V1_BAD_ID, 12),
    ],
)
def test_structural_errors(blob: bytes, code: ErrorCode, offset: int) -> None:
    with pytest.raises(FatpteError) as info:
        Container.from_buffer(blob, source="x.nfat")
    assert info.value.code is code
    assert info.value.offset == offset
    assert str(info.value).startswith(f"x.nfat: {code.tag} at {offset:#x}")


def test_open_of_an_empty_or_missing_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.nfat"
    empty.write_bytes(b"")
    with pytest.raises(FatpteError) as info:
        fatpte.open(empty)
    assert info.value.code is ErrorCode.TRUNCATED_HEADER
    with pytest.raises(FatpteError) as info:
        fatpte.open(tmp_path / "nope.nfat")
    assert info.value.code is ErrorCode.IO_ERROR and "nope.nfat" in str(info.value)
    with pytest.raises(FatpteError) as info:
        fatpte.open(tmp_path)
    assert info.value.code is ErrorCode.NOT_A_FILE  # a directory, refused before it is read


def test_repr_names_source_and_shape(packed: Path) -> None:
    with fatpte.open(packed) as c:
        assert repr(c) == f"<fatpte.Container {str(packed)!r} v2 3 entries>"


def test_map_view_is_the_file_and_its_slices_outlive_the_call(tmp_path: Path) -> None:
    from fatpte.fileio.mapping import map_view

    data = os.urandom(10_000)
    (tmp_path / "f").write_bytes(data)
    tail = map_view(tmp_path / "f")[9000:]  # the whole view is gone; the slice keeps the mapping
    assert tail.readonly and bytes(tail) == data[9000:]
    (tmp_path / "empty").write_bytes(b"")
    assert bytes(map_view(tmp_path / "empty")) == b""  # mmap cannot map an empty file
    with pytest.raises(FatpteError) as info:
        map_view(tmp_path / "missing")
    assert info.value.code is ErrorCode.IO_ERROR


def test_paths_are_reported_as_the_caller_spelled_them(packed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `./c.nfat`, not the `c.nfat` a pathlib.Path would make of it: every reader says the same.
    monkeypatch.chdir(packed.parent)
    with fatpte.open("./c.nfat") as c:
        assert c.source == "./c.nfat"
    assert fatpte.validate("./c.nfat").source == "./c.nfat"
    with pytest.raises(FatpteError) as info:
        fatpte.open("./missing.nfat")
    assert info.value.source == "./missing.nfat" and info.value.code is ErrorCode.IO_ERROR
    out = fatpte.extract("./c.nfat", "portable", "./p.bin")
    assert isinstance(out, Path) and out == Path("p.bin") and out.read_bytes() == b"P" * 10


def test_records_are_immutable_named_tuples(packed: Path) -> None:
    with fatpte.open(packed) as c:
        entry, header = c.entries[1], c.header
    with pytest.raises(AttributeError):
        entry.offset = 0  # type: ignore[misc]
    moved = entry._replace(offset=0)
    assert moved.offset == 0 and moved.name == entry.name and entry.offset != 0
    # `index` keeps its public meaning (the table position), shadowing tuple.index.
    assert entry.index == 1 and entry._fields[0] == "index"
    assert list(header.to_json()) == list(header._fields) and header.to_json()["entry_count"] == 3


def test_a_key_past_the_segment_table_is_e0414_where_validate_reports_it() -> None:
    """key_segments and segment_of, which every path that reads named data goes through, report a
    key whose segment index is past the table with validate's code, offset and field."""
    from fatpte.container.reader import key_segments, segment_of

    data = (VECTORS / "v2-named-data-bad-segment.nfat").read_bytes()
    first = fatpte.validate_buffer(data).first_error
    assert first is not None and first.code is ErrorCode.NAMED_DATA_BAD_SEGMENT
    with Container.from_buffer(data) as c:
        assert segment_of(c, "w.a").index == 0
        for call in (lambda: key_segments(c), lambda: segment_of(c, "w.b"), lambda: c.named_data("w.b")):
            with pytest.raises(FatpteError) as info:
                call()
            assert (info.value.code, info.value.offset, info.value.field) == (first.code, first.offset, first.field)
    with Container.from_buffer((VECTORS / "v2-named-data.nfat").read_bytes()) as c:
        assert [(k, s.index) for k, s in key_segments(c).items()] == [("w.a", 0), ("w.b", 1)]
