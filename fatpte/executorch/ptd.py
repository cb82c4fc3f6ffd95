"""Reader of ExecuTorch data files (.ptd): flatbuffer identifier FT01, with an FH01 header at byte 8.

Layout (little-endian, extension/flat_tensor/serialize/flat_tensor.fbs): bytes 4..8 `FT01`; at
byte 8 the header: magic `FH01`, u32 header length (>= 40), u64 flatbuffer_offset, u64
flatbuffer_size, u64 segment_base_offset, u64 segment_data_size. The FlatTensor root lists data
segments (offsets relative to segment_base_offset) and named data: a key, the segment holding
its bytes, and optionally the tensor's dtype and shape.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.flatbuf import Buffer, enum_name
from fatpte.value.dtypes import PROGRAM_SCALAR_TYPES

IDENTIFIER = b"FT01"
HEADER_MAGIC = b"FH01"
HEADER_OFFSET = 8
HEADER_LENGTH = 40
_HEADER = struct.Struct("<4sIQQQQ")


@dataclass(frozen=True, slots=True)
class PtdHeader:
    length: int
    flatbuffer_offset: int
    flatbuffer_size: int
    segment_base_offset: int
    segment_data_size: int


@dataclass(frozen=True, slots=True)
class PtdTensor:
    key: str
    segment_index: int
    offset: int  # absolute in the file
    size: int
    dtype: str | None
    shape: tuple[int, ...] | None
    dim_order: tuple[int, ...] | None = None  # None with no layout; () when the layout has none


@dataclass(frozen=True, slots=True)
class DataFile:
    source: str | None
    size: int
    version: int
    header: PtdHeader
    segments: tuple[tuple[int, int], ...]  # (absolute offset, size)
    named_data: tuple[PtdTensor, ...]


def read_ptd(data: bytes | memoryview, *, source: str | None = None) -> DataFile:
    size = len(data)
    if size < HEADER_OFFSET + HEADER_LENGTH:
        raise FatpteError(ErrorCode.ET_TRUNCATED, f"{size} bytes cannot hold the identifier and the "
                          f"{HEADER_LENGTH}-byte FH01 header", source=source, offset=size, field="header")
    if bytes(data[4:8]) != IDENTIFIER:
        found = bytes(data[4:8])
        raise FatpteError(ErrorCode.ET_BAD_IDENTIFIER, f"bytes 4..8 are {found!r}, not the .ptd identifier "
                          f"{IDENTIFIER!r}", source=source, offset=4, field="file_identifier",
                          expected=IDENTIFIER, actual=found)
    magic, length, fb_off, fb_size, base, data_size = _HEADER.unpack_from(data, HEADER_OFFSET)

    def bad(message: str, at: int, name: str) -> FatpteError:
        return FatpteError(ErrorCode.ET_BAD_HEADER, message, source=source, offset=at, field=f"header.{name}")

    if magic != HEADER_MAGIC:
        raise bad(f"bytes 8..12 are {magic!r}, not the header magic {HEADER_MAGIC!r}", 8, "magic")
    if length < HEADER_LENGTH or length > 4096:
        raise bad(f"header length {length} is outside {HEADER_LENGTH}..4096", 12, "length")
    if fb_size > size or fb_off > size - fb_size:
        raise bad(f"flatbuffer of {fb_size:#x} bytes at {fb_off:#x} reaches past the end of the file at {size:#x}",
                  16, "flatbuffer_size")
    if base > size or data_size > size - base:
        raise bad(f"segment data of {data_size:#x} bytes at {base:#x} reaches past the end of the file at "
                  f"{size:#x}", 32, "segment_base_offset")
    header = PtdHeader(length, fb_off, fb_size, base, data_size)
    # The header sits inside the flatbuffer (after its root offset and identifier), so the
    # flatbuffer is read from byte 0 up to where the segment data begins.
    end = base if base else size
    buf = Buffer(memoryview(data)[:end], source=source)
    root = buf.root(IDENTIFIER, "ExecuTorch data file (.ptd)")
    segments = []
    for i, s in enumerate(root.tables(1, "segments")):
        off = s.integer(0, "Q", "offset")
        sz = s.integer(1, "Q", "size")
        if sz > data_size or off > data_size - sz:
            raise FatpteError(ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS, f"segment of {sz:#x} bytes at {base:#x}+{off:#x} "
                              f"reaches past the segment data ({data_size:#x} bytes)", source=source,
                              offset=s.pos, field=f"segments[{i}]")
        segments.append((base + off, sz))
    named = []
    for n in root.tables(2, "named_data"):
        key = n.required_string(0, "key")
        index = n.integer(1, "I", "segment_index")
        if index >= len(segments):
            raise buf.error(ErrorCode.ET_BAD_REFERENCE, f"segment index {index} is past the {len(segments)} "
                            "segments", n.pos, n.field + ".segment_index")
        layout = n.table(2, "tensor_layout")
        dtype = shape = dim_order = None
        if layout is not None:
            dtype = enum_name(PROGRAM_SCALAR_TYPES, layout.integer(0, "b", "scalar_type"), buf, layout.pos,
                              layout.field + ".scalar_type")
            shape = layout.scalars(1, "i", "sizes")
            dim_order = layout.scalars(2, "B", "dim_order")
        off, sz = segments[index]
        named.append(PtdTensor(key, index, off, sz, dtype, shape, dim_order))
    return DataFile(source, size, root.integer(0, "I", "version"), header, tuple(segments), tuple(named))
