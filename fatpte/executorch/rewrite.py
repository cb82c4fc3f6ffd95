"""Replacing one segment of a .pte with bytes of another length, keeping the program valid.

The flatbuffer keeps its shape: only fixed-width scalars change, patched in place (each moved
DataSegment's offset, the replaced one's size, and the extended header's segment_data_size), so
nothing else in the program moves. Segments keep their order; each starts at the next multiple of
the segment alignment the file already uses (the largest power of two, at most 65536, dividing
every segment offset), so alignment guarantees the exporter gave still hold. The bytes of every
other segment are copied unchanged.
"""

from __future__ import annotations

import struct

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.pte import EXTENDED_HEADER_FULL_LENGTH, Program, Segment, read_program

MAX_SEGMENT_ALIGNMENT = 65536


def segment_alignment(program: Program) -> int:
    """The largest power of two, at most 65536, dividing every segment's offset from the base."""
    base = 0 if program.header is None else program.header.segment_base_offset
    align = MAX_SEGMENT_ALIGNMENT
    for seg in program.segments:
        rel = seg.offset - base
        while rel % align:
            align //= 2
    return align


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _patch(out: bytearray, seg: Segment, which: str, at: int | None, value: int, source: str | None) -> None:
    if at is None:
        if value == 0:
            return
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"segments[{seg.index}].{which} is stored as an absent default "
                          "and cannot be changed in place", source=source, field=f"segments[{seg.index}].{which}")
    struct.pack_into("<Q", out, at, value)


def replace_segment(data: bytes, index: int, new: bytes, *, source: str | None = None) -> bytes:
    """`data` (a whole .pte) with segment `index` holding `new` instead; FatpteError if it cannot."""
    program = read_program(data, source=source)
    header = program.header
    if header is None or not 0 <= index < len(program.segments):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"the program has no segment {index}", source=source,
                          field=f"segments[{index}]")
    if header.segment_data_size is None or header.length < EXTENDED_HEADER_FULL_LENGTH:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the extended header has no segment_data_size to update",
                          source=source, field="extended_header.segment_data_size")
    base = header.segment_base_offset
    align = segment_alignment(program)
    order = sorted(program.segments, key=lambda s: (s.offset, s.index))
    out = bytearray(data[:base])
    placed: dict[int, int] = {}  # segment index -> new relative offset
    end = 0
    for seg in order:
        body = new if seg.index == index else data[seg.offset : seg.offset + seg.size]
        rel = _align(end, align) if len(body) else min(_align(end, align), seg.offset - base)
        placed[seg.index] = rel
        out += bytes(base + rel - len(out)) if base + rel > len(out) else b""
        if len(body):
            out[base + rel : base + rel + len(body)] = body
        end = max(end, rel + len(body))
    out += bytes(base + end - len(out)) if base + end > len(out) else b""
    for seg in program.segments:
        if placed[seg.index] != seg.offset - base:
            _patch(out, seg, "offset", seg.offset_field, placed[seg.index], source)
    old = program.segments[index]
    if len(new) != old.size:
        _patch(out, old, "size", old.size_field, len(new), source)
    struct.pack_into("<Q", out, 32, end)
    result = bytes(out)
    read_program(result, source=source)  # what was written must read back
    return result
