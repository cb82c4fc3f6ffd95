"""Damaged ExecuTorch files give a FatpteError with the right code, and never anything else.

Each targeted test checks the original bytes first, then changes them, then expects the exact
code; the properties mutate the committed fixtures at random (tests/strategies.py `mutations`).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import describe, read_nptg, read_program, read_ptd, read_xnnpack
from fatpte.executorch.flatbuf import MAX_DEPTH, Buffer, Table
from tests.paths import ET_FIXTURES
from tests.strategies import mutations

ALL = sorted(p.name for p in ET_FIXTURES.iterdir() if p.suffix in (".pte", ".ptd"))


def _code(data: bytes) -> ErrorCode:
    with pytest.raises(FatpteError) as e:
        describe(data)
    return e.value.code


def _bytes(name: str) -> bytearray:
    return bytearray((ET_FIXTURES / name).read_bytes())


def _payload(name: str) -> tuple[bytearray, int]:
    p = read_program(bytes(_bytes(name)))
    (dl,) = p.methods[0].delegates
    return bytearray(p.payload(dl)), dl.offset


def test_wrong_identifier() -> None:
    data = _bytes("add_portable.pte")
    assert data[4:8] == b"ET12"
    data[4:8] = b"ET11"
    with pytest.raises(FatpteError) as e:
        read_program(bytes(data))
    assert e.value.code is ErrorCode.ET_BAD_IDENTIFIER and e.value.offset == 4


def test_program_size_past_the_end() -> None:
    data = _bytes("mlp_xnnpack.pte")
    assert data[8:12] == b"eh00"
    assert struct.unpack_from("<Q", data, 16)[0] < len(data)
    struct.pack_into("<Q", data, 16, len(data) + 1)
    assert _code(bytes(data)) is ErrorCode.ET_BAD_HEADER


def test_truncated_inside_the_segments() -> None:
    data = _bytes("mlp_xnnpack.pte")
    base = struct.unpack_from("<Q", data, 24)[0]
    assert base < len(data)
    with pytest.raises(FatpteError) as e:
        read_program(bytes(data[: base + 16]))
    assert e.value.code is ErrorCode.ET_BAD_HEADER
    assert e.value.field == "extended_header.segment_data_size"


def test_truncated_inside_the_extended_header() -> None:
    data = _bytes("mlp_xnnpack.pte")
    assert _code(bytes(data[:20])) is ErrorCode.ET_TRUNCATED


def test_segment_past_the_segment_data() -> None:
    data = _bytes("mlp_xnnpack.pte")
    data_size = struct.unpack_from("<Q", data, 32)[0]
    struct.pack_into("<Q", data, 32, data_size - 1)  # the last segment now ends past the data
    with pytest.raises(FatpteError) as e:
        read_program(bytes(data))
    assert e.value.code is ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS
    assert e.value.field is not None and e.value.field.startswith("segments[")


def test_segments_of_a_program_whose_segment_base_offset_is_zero() -> None:
    """segment_base_offset 0 means no segment data (ExecuTorch's Program::LoadSegment refuses every
    segment then): a non-empty segment would be read from the program's own first bytes, and
    replacing it (what `thin` does) wrote past the flatbuffer's copy (struct.error, found by the
    executorch fuzz target). It is out of bounds, and the rewrite says so."""
    from fatpte.executorch.rewrite import replace_segment

    data = _bytes("mlp_xnnpack.pte")
    program = read_program(bytes(data))
    (dl,) = program.methods[0].delegates
    assert dl.location == "segment" and program.segments[dl.data_index].size > 0
    struct.pack_into("<Q", data, 24, 0)
    for action in (lambda: read_program(bytes(data)),
                   lambda: replace_segment(bytes(data), dl.data_index, b"NFAT" * 3, source="x.pte")):
        with pytest.raises(FatpteError) as e:
            action()
        assert e.value.code is ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS
        assert e.value.field is not None and e.value.field.startswith("segments[")
        assert "its segment_base_offset is 0" in str(e.value)


def test_root_offset_past_the_end() -> None:
    data = _bytes("add_portable.pte")
    assert struct.unpack_from("<I", data, 0)[0] < len(data)
    struct.pack_into("<I", data, 0, 0xFFFFFFF0)
    assert _code(bytes(data)) is ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS


def test_xh00_flatbuffer_offset_out_of_range() -> None:
    payload, base = _payload("add_xnnpack.pte")
    assert payload[4:8] == b"XH00"
    struct.pack_into("<I", payload, 10, len(payload))
    with pytest.raises(FatpteError) as e:
        read_xnnpack(bytes(payload), source="p", base=base)
    assert e.value.code is ErrorCode.ET_BAD_HEADER and e.value.offset == base + 10


def test_xh00_constant_data_overlapping_the_flatbuffer() -> None:
    payload, _ = _payload("add_xnnpack.pte")
    fb_off, fb_size, const_off = struct.unpack_from("<III", payload, 10)
    assert const_off >= fb_off + fb_size
    struct.pack_into("<I", payload, 18, fb_off)
    with pytest.raises(FatpteError) as e:
        read_xnnpack(bytes(payload))
    assert e.value.code is ErrorCode.ET_BAD_HEADER and e.value.field == "xh00.constant_data_offset"


def test_nptg_vector_longer_than_the_buffer() -> None:
    payload, _ = _payload("add_native.pte")
    assert payload[4:8] == b"NPTG"
    root = struct.unpack_from("<I", payload, 0)[0]
    vt = root - struct.unpack_from("<i", payload, root)[0]
    methods_field = struct.unpack_from("<H", payload, vt + 6)[0]  # slot 1: methods
    at = root + methods_field
    vec = at + struct.unpack_from("<I", payload, at)[0]
    assert struct.unpack_from("<I", payload, vec)[0] == 1
    struct.pack_into("<I", payload, vec, 0x7FFFFFFF)
    with pytest.raises(FatpteError) as e:
        read_nptg(bytes(payload))
    assert e.value.code is ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS and e.value.field == "root.methods"


def test_ptd_header_magic() -> None:
    data = _bytes("mlp_native_external.native_weights.ptd")
    assert data[8:12] == b"FH01"
    data[8:12] = b"FH02"
    with pytest.raises(FatpteError) as e:
        read_ptd(bytes(data))
    assert e.value.code is ErrorCode.ET_BAD_HEADER and e.value.offset == 8


def test_ptd_segment_data_past_the_end() -> None:
    data = _bytes("mlp_native_external.native_weights.ptd")
    base, size = struct.unpack_from("<QQ", data, 32)
    assert base + size == len(data)
    struct.pack_into("<Q", data, 40, size + 1)
    assert _code(bytes(data)) is ErrorCode.ET_BAD_HEADER


def test_nesting_is_bounded() -> None:
    buf = Buffer(bytes(64), source="x")
    with pytest.raises(FatpteError) as e:
        buf.table_at(0, "root", MAX_DEPTH + 1)
    assert e.value.code is ErrorCode.ET_FLATBUFFER_TOO_COMPLEX


def test_shared_tables_cannot_multiply_the_work() -> None:
    """Levels of tables whose vectors all point at the next level: n**levels visits, stopped by the budget.

    uoffsets only point forward, so a flatbuffer has no cycles, but a chain of shared tables makes a
    DAG whose naive walk grows exponentially while the file stays small."""
    n, levels = 16, 6
    data = bytearray(16)
    struct.pack_into("<I", data, 0, 16)
    data[4:8] = b"TEST"
    struct.pack_into("<HHH", data, 8, 6, 8, 4)  # the one vtable: 8-byte tables, slot 0 at offset 4
    for level in range(levels):
        table = len(data)
        nxt = table + 12 + 4 * n
        count = n if level < levels - 1 else 0
        data += struct.pack("<iII", table - 8, 4, count)
        for i in range(count):
            at = table + 12 + 4 * i
            data += struct.pack("<I", nxt - at)
        if count == 0:
            data += bytes(4 * n)
    buf = Buffer(bytes(data), source="x", budget=10_000)
    root = buf.root(b"TEST", "test")

    def walk(t: Table) -> None:
        for child in t.tables(0, "next"):
            walk(child)

    assert len(root.tables(0, "next")) == n  # well-formed: every element is the same next table
    with pytest.raises(FatpteError) as e:
        walk(root)
    assert e.value.code is ErrorCode.ET_FLATBUFFER_TOO_COMPLEX


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_fixtures_raise_only_fatpte_error(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(ALL))
    blob = (ET_FIXTURES / name).read_bytes()
    for _ in range(data.draw(st.integers(1, 3))):
        blob = data.draw(mutations(blob))
    try:
        describe(blob).text()
    except FatpteError:
        pass


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mutated_payloads_raise_only_fatpte_error(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(["mlp_xnnpack.pte", "kvcache_native.pte", "buffer_native.pte",
                                      "add_xnnpack.pte"]))
    payload, _ = _payload(name)
    blob = data.draw(mutations(bytes(payload)))
    try:
        describe(blob).text()
    except FatpteError:
        pass


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([b"ET12", b"FT01", b"NPTG", b"XH00", b"XN01"]), st.binary(max_size=200))
def test_random_bytes_behind_a_known_identifier(ident: bytes, tail: bytes) -> None:
    blob = tail[:4].ljust(4, b"\0") + ident + tail[4:]
    try:
        describe(blob)
    except FatpteError:
        pass


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_thinning_a_mutated_fat_program_raises_only_fatpte_error(data: st.DataObject) -> None:
    import tempfile

    from fatpte.ops.fat_delegate import thin_pte

    blob = data.draw(mutations((ET_FIXTURES / "buffer_nfat.pte").read_bytes()))
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "in.pte")
        src.write_bytes(blob)
        try:
            out = thin_pte(src, Path(tmp, "out.pte"), names=["native-generic"])
        except FatpteError:
            return
        read_program(out.read_bytes())  # what thinning wrote reads back
