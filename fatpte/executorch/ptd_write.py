"""Writer of ExecuTorch data files (.ptd): named data (key -> bytes, optionally a tensor layout) as
an FT01 flatbuffer with its FH01 header, followed by the data segments.

Written from the published layout that ptd.py reads (flat_tensor.fbs): the FlatTensor root
(version, segments, named_data) is built with the flatbuffers runtime's Builder; the 40-byte FH01
header (magic, length, flatbuffer_offset, flatbuffer_size, segment_base_offset, segment_data_size)
is then inserted after the root offset and identifier, which only moves the root table (every
other flatbuffer offset is relative, and 40 keeps the 8-byte alignment of the u64 fields). The
segment data starts at the next multiple of the segment alignment after the flatbuffer, each
segment at the next multiple after the previous one. Identical bytes under several keys are
stored once (the keys share a segment index). `plan_ptd` needs only the segments' sizes, so
many-GB weights are streamed into place rather than held in memory. What is written is read back
with read_ptd.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import flatbuffers

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.ptd import HEADER_LENGTH, HEADER_MAGIC, HEADER_OFFSET, IDENTIFIER, read_ptd
from fatpte.executorch.pte import Program
from fatpte.fileio.atomic import atomic_output

DEFAULT_SEGMENT_ALIGNMENT = 128  # what ExecuTorch's own .ptd writer uses: enough for any SIMD load
_HEADER = struct.Struct("<4sIQQQQ")
_FLATBUFFER_OFFSET = HEADER_OFFSET + HEADER_LENGTH  # the flatbuffer's body follows the header


@dataclass(frozen=True, slots=True)
class TensorLayout:
    """What a .ptd records of a tensor beside its bytes (flat_tensor.fbs TensorLayout)."""

    scalar_type: int  # executorch_flatbuffer.ScalarType code
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]


def external_layouts(program: Program) -> dict[str, TensorLayout]:
    """The layout each external tensor of `program` expects of its key (its fully qualified name):
    the runtime checks a .ptd's TensorLayout against the program's tensor before loading it."""
    out: dict[str, TensorLayout] = {}
    for plan in program.methods:
        for t in plan.tensors.values():
            if t.external and t.fqn:
                out.setdefault(t.fqn, TensorLayout(t.scalar_type, t.shape, t.dim_order))
    return out


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _offsets_vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return int(b.EndVector())


@dataclass(frozen=True, slots=True)
class PtdPlan:
    """A .ptd laid out from the sizes of its segments: everything before the segment data, and
    where each segment goes, so the data can be streamed in from wherever it lives."""

    prefix: bytes  # FH01 header and FT01 flatbuffer, zero-padded to segment_base_offset
    offsets: tuple[int, ...]  # each segment's absolute offset in the file
    size: int  # the whole file's size


def plan_ptd(
    key_segment: Mapping[str, int],
    sizes: list[int],
    layouts: Mapping[str, TensorLayout] | None = None,
    *,
    segment_alignment: int = DEFAULT_SEGMENT_ALIGNMENT,
) -> PtdPlan:
    """Lay out a .ptd whose keys map to segments (`key_segment`, indices into `sizes`), in key order."""
    if segment_alignment < 8 or segment_alignment & (segment_alignment - 1):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"segment alignment {segment_alignment} is not a power of "
                          "two of at least 8", field="segment_alignment", actual=segment_alignment)
    layouts = layouts or {}
    rel: list[int] = []
    end = 0
    for size in sizes:
        start = _align(end, segment_alignment) if size else end
        rel.append(start)
        end = start + size

    b = flatbuffers.Builder(1024)
    named: list[int] = []
    for key, segment in key_segment.items():
        key_off = b.CreateString(key)
        layout_off = None
        layout = layouts.get(key)
        if layout is not None:
            b.StartVector(4, len(layout.sizes), 4)
            for dim in reversed(layout.sizes):
                b.PrependInt32(dim)
            dims = b.EndVector()
            b.StartVector(1, len(layout.dim_order), 1)
            for d in reversed(layout.dim_order):
                b.PrependUint8(d)
            dim_order = b.EndVector()
            b.StartObject(3)
            b.PrependInt8Slot(0, layout.scalar_type, 0)
            b.PrependUOffsetTRelativeSlot(1, dims, 0)
            b.PrependUOffsetTRelativeSlot(2, dim_order, 0)
            layout_off = b.EndObject()
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(0, key_off, 0)
        b.PrependUint32Slot(1, segment, 0)
        if layout_off is not None:
            b.PrependUOffsetTRelativeSlot(2, layout_off, 0)
        named.append(b.EndObject())
    segments: list[int] = []
    for offset, size in zip(rel, sizes, strict=True):
        b.StartObject(2)
        b.PrependUint64Slot(0, offset, 0)
        b.PrependUint64Slot(1, size, 0)
        segments.append(b.EndObject())
    segments_vec = _offsets_vector(b, segments)
    named_vec = _offsets_vector(b, named)
    b.StartObject(3)
    b.PrependUint32Slot(0, 0, 0)
    b.PrependUOffsetTRelativeSlot(1, segments_vec, 0)
    b.PrependUOffsetTRelativeSlot(2, named_vec, 0)
    b.Finish(b.EndObject(), file_identifier=IDENTIFIER)
    fb = bytes(b.Output())

    size = len(fb) + HEADER_LENGTH
    base = _align(size, segment_alignment)
    header = _HEADER.pack(HEADER_MAGIC, HEADER_LENGTH, _FLATBUFFER_OFFSET, size - _FLATBUFFER_OFFSET, base, end)
    root = struct.unpack_from("<I", fb, 0)[0] + HEADER_LENGTH
    prefix = struct.pack("<I", root) + fb[4:HEADER_OFFSET] + header + fb[HEADER_OFFSET:]
    return PtdPlan(prefix + bytes(base - len(prefix)), tuple(base + r for r in rel), base + end)


def ptd_bytes(
    tensors: Mapping[str, bytes | memoryview],
    layouts: Mapping[str, TensorLayout] | None = None,
    *,
    segment_alignment: int = DEFAULT_SEGMENT_ALIGNMENT,
) -> bytes:
    """A whole .ptd holding `tensors` (in the order given), with `layouts` for the keys that have one.
    Identical bytes under several keys are stored once. For data too large to hold in memory,
    lay the file out with `plan_ptd` and stream the segments in (fatpte.ops.ptd_export does)."""
    blobs: list[bytes] = []
    index_of: dict[bytes, int] = {}
    key_segment: dict[str, int] = {}
    for key, value in tensors.items():
        blob = bytes(value)
        key_segment[key] = index_of.setdefault(blob, len(blobs))
        if key_segment[key] == len(blobs):
            blobs.append(blob)
    plan = plan_ptd(key_segment, [len(b) for b in blobs], layouts, segment_alignment=segment_alignment)
    out = bytearray(plan.prefix)
    for offset, blob in zip(plan.offsets, blobs, strict=True):
        out += bytes(offset - len(out)) + blob
    out += bytes(plan.size - len(out))
    result = bytes(out)
    read_ptd(result, source="<written .ptd>")  # what was written must read back
    return result


def write_ptd(
    dest: str | os.PathLike[str],
    tensors: Mapping[str, bytes | memoryview],
    layouts: Mapping[str, TensorLayout] | None = None,
) -> Path:
    """Write `ptd_bytes(tensors, layouts)` to `dest`, atomically."""
    data = ptd_bytes(tensors, layouts)
    target = Path(dest)
    with atomic_output(target) as f:
        f.write(data)
    return target
