"""Reader of the XNNPACK backend's delegate payload: an XH00 header, an XN01 flatbuffer, constants.

Header (little-endian, 30 bytes): bytes 0..4 zero (so the magic sits where a flatbuffer keeps its
identifier), 4..8 magic `XH00`, u16 header length at 8, u32 flatbuffer_offset at 10, u32
flatbuffer_size at 14, u32 constant_data_offset at 18, u64 constant_data_size at 22. The
flatbuffer (schema backends/xnnpack/serialization/schema.fbs, root XNNGraph, identifier XN01)
describes the graph; its constant_data entries point either into the constant data region
(offset relative to constant_data_offset) or, by named_key, into the program's named data.
A payload that is a bare XN01 flatbuffer (older exporters) is read with no header.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.flatbuf import Buffer

MAGIC = b"XH00"
FLATBUFFER_IDENTIFIER = b"XN01"
HEADER_LENGTH = 30
_HEADER = struct.Struct("<4s4sHIIIQ")
_NO_OFFSET = 2**64 - 1  # ConstantDataOffset.offset when the data is named instead


@dataclass(frozen=True, slots=True)
class XnnHeader:
    length: int
    flatbuffer_offset: int
    flatbuffer_size: int
    constant_data_offset: int
    constant_data_size: int


@dataclass(frozen=True, slots=True)
class ConstantData:
    index: int
    offset: int | None  # relative to the constant data region; None when named
    size: int
    named_key: str | None


@dataclass(frozen=True, slots=True)
class XnnGraph:
    header: XnnHeader | None
    version: str | None
    node_count: int
    value_count: int
    num_externs: int
    input_ids: tuple[int, ...]
    output_ids: tuple[int, ...]
    constants: tuple[ConstantData, ...]

    @property
    def named_data_keys(self) -> tuple[str, ...]:
        return tuple(sorted({c.named_key for c in self.constants if c.named_key}))


def read_header(data: bytes | memoryview, source: str | None, base: int = 0) -> XnnHeader:
    size = len(data)
    if size < HEADER_LENGTH:
        raise FatpteError(ErrorCode.ET_TRUNCATED, f"{size} bytes cannot hold the {HEADER_LENGTH}-byte XH00 header",
                          source=source, offset=base + size, field="xh00")
    _pad, magic, length, fb_off, fb_size, const_off, const_size = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise FatpteError(ErrorCode.ET_BAD_IDENTIFIER, f"bytes 4..8 are {magic!r}, not {MAGIC!r}", source=source,
                          offset=base + 4, field="xh00.magic", expected=MAGIC, actual=magic)

    def bad(message: str, at: int, name: str) -> FatpteError:
        return FatpteError(ErrorCode.ET_BAD_HEADER, message, source=source, offset=base + at, field=f"xh00.{name}")

    if length < HEADER_LENGTH:
        raise bad(f"header length {length} is below {HEADER_LENGTH}", 8, "length")
    if fb_off < length or fb_size > size or fb_off > size - fb_size:
        raise bad(f"flatbuffer of {fb_size:#x} bytes at {fb_off:#x} lies outside the header-free part of the "
                  f"payload (header {length} bytes, payload {size:#x})", 10, "flatbuffer_offset")
    if const_off < fb_off + fb_size or const_size > size or const_off > size - const_size:
        raise bad(f"constant data of {const_size:#x} bytes at {const_off:#x} overlaps the flatbuffer or reaches "
                  f"past the end of the payload at {size:#x}", 18, "constant_data_offset")
    return XnnHeader(length, fb_off, fb_size, const_off, const_size)


def read_xnnpack(data: bytes | memoryview, *, source: str | None = None, base: int = 0) -> XnnGraph:
    """Decode an XNNPACK payload (XH00-wrapped or bare XN01); `base` is its offset in `source`."""
    view = memoryview(data)
    header = None
    fb_base = 0
    fb_view = view
    if len(view) >= 8 and bytes(view[4:8]) == FLATBUFFER_IDENTIFIER:
        pass
    else:
        header = read_header(view, source, base)
        fb_base = header.flatbuffer_offset
        fb_view = view[fb_base : fb_base + header.flatbuffer_size]
    buf = Buffer(fb_view, source=source, base=base + fb_base)
    root = buf.root(FLATBUFFER_IDENTIFIER, "XNNPACK graph (XN01)")
    const_size = None if header is None else header.constant_data_size
    constants = []
    for i, c in enumerate(root.tables(8, "constant_data")):
        off = c.integer(0, "Q", "offset")
        sz = c.integer(1, "Q", "size")
        key = c.string(2, "named_key") or None
        if off == _NO_OFFSET or key:
            constants.append(ConstantData(i, None, sz, key))
            continue
        if const_size is None or sz > const_size or off > const_size - sz:
            raise buf.error(ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS, f"constant of {sz:#x} bytes at {off:#x} reaches "
                            f"past the constant data ({const_size or 0:#x} bytes)", c.pos, c.field)
        constants.append(ConstantData(i, off, sz, None))
    return XnnGraph(
        header=header,
        version=root.string(0, "version"),
        node_count=len(root.tables(1, "xnodes")),
        value_count=len(root.tables(2, "xvalues")),
        num_externs=root.integer(3, "I", "num_externs"),
        input_ids=root.scalars(4, "I", "input_ids"),
        output_ids=root.scalars(5, "I", "output_ids"),
        constants=tuple(constants),
    )
