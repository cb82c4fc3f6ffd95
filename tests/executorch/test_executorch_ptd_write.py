"""ptd_write: .ptd files written from the published layout, read back by our reader (ptd.py), with
exact bytes pinned for a small case. The ExecuTorch runtime loading them is checked in
tests/executorch/test_executorch_e2e.py (make test-executorch)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import read_program, read_ptd
from fatpte.executorch.ptd_write import TensorLayout, external_layouts, ptd_bytes, write_ptd
from tests.paths import ET_FIXTURES

PTDS = sorted(p.name for p in ET_FIXTURES.glob("*.ptd"))

SMALL = bytes.fromhex(
    # root uoffset 0x3c (the flatbuffer's 0x14 + the 40-byte header), identifier FT01
    "3c000000" "46543031"
    # FH01 header: length 40, flatbuffer_offset 48, flatbuffer_size 160, segment_base_offset 208,
    # segment_data_size 4
    "46483031" "28000000" "3000000000000000" "a000000000000000" "d000000000000000" "0400000000000000"
    # the flatbuffer body as the flatbuffers Builder lays it out
    "00000a000c000000080004000a0000000800000010000000020000004400000028000000010000000c00000008000e"
    "0000000400080000000400000000000000000006000800040006000000040000000100000062000a000e0008000000"
    "04000a000000140000003000000000000a0010000f00080004000a0000000c000000100000000000000601000000"
    "000000000100000002000000010000006100"
    "0000"  # padding to segment_base_offset
    # the one segment at 208: two keys with the same bytes share it
    "01020304"
)


def test_small_file_exact_bytes() -> None:
    got = ptd_bytes({"a": b"\x01\x02\x03\x04", "b": b"\x01\x02\x03\x04"}, {"a": TensorLayout(6, (2,), (0,))},
                    segment_alignment=8)
    assert got == SMALL
    f = read_ptd(got)
    assert [(t.key, t.segment_index, t.offset, t.size, t.dtype, t.shape) for t in f.named_data] == [
        ("a", 0, 208, 4, "float32", (2,)), ("b", 0, 208, 4, None, None)]


@pytest.mark.parametrize("name", PTDS)
def test_the_exporters_files_written_again_read_back_the_same(name: str) -> None:
    src = (ET_FIXTURES / name).read_bytes()
    theirs = read_ptd(src)
    program = read_program((ET_FIXTURES / (name.split(".")[0] + ".pte")).read_bytes())
    layouts = external_layouts(program)
    ours = read_ptd(ptd_bytes({t.key: src[t.offset : t.offset + t.size] for t in theirs.named_data},
                              layouts if name.startswith("mlp_portable") else {
                                  t.key: TensorLayout(6, t.shape or (), tuple(range(len(t.shape or ()))))
                                  for t in theirs.named_data}))
    assert ours.header == theirs.header  # same sizes and offsets as ExecuTorch's own writer
    assert [(t.key, t.dtype, t.shape, t.size) for t in ours.named_data] == [
        (t.key, t.dtype, t.shape, t.size) for t in theirs.named_data]
    assert all(o.offset % 128 == 0 for o in ours.named_data)


def test_layouts_come_from_the_programs_external_tensors() -> None:
    program = read_program((ET_FIXTURES / "mlp_portable_external.pte").read_bytes())
    assert external_layouts(program) == {
        "fc1.weight": TensorLayout(6, (8, 4), (0, 1)), "fc1.bias": TensorLayout(6, (8,), (0,)),
        "fc2.weight": TensorLayout(6, (3, 8), (0, 1)), "fc2.bias": TensorLayout(6, (3,), (0,))}
    assert external_layouts(read_program((ET_FIXTURES / "mlp_xnnpack.pte").read_bytes())) == {}


def test_empty_and_zero_length_values() -> None:
    empty = read_ptd(ptd_bytes({}))
    assert empty.named_data == () and empty.segments == () and empty.header.segment_data_size == 0
    f = read_ptd(ptd_bytes({"z": b"", "x": b"\xff" * 3}))
    assert [(t.key, t.size) for t in f.named_data] == [("z", 0), ("x", 3)]


@pytest.mark.parametrize("alignment", [0, 4, 48])
def test_bad_segment_alignment(alignment: int) -> None:
    with pytest.raises(FatpteError) as e:
        ptd_bytes({"a": b"x"}, segment_alignment=alignment)
    assert e.value.code is ErrorCode.INVALID_ARGUMENT


def test_write_ptd_is_atomic_and_reads_back(tmp_path: Path) -> None:
    dest = write_ptd(tmp_path / "w.ptd", {"k": memoryview(b"abc")})
    data = dest.read_bytes()
    assert struct.unpack_from("<4sI", data, 8) == (b"FH01", 40)
    (t,) = read_ptd(data).named_data
    assert data[t.offset : t.offset + t.size] == b"abc"
    assert [p.name for p in tmp_path.iterdir()] == ["w.ptd"]
