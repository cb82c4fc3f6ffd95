"""Moving a container's regions to resize its header (specs/nfat.md section 4.9): adding the
signature slot when signing, taking it away when unsigning, and writing the container so moved,
its tables rewritten and its bytes copied by the kernel, with a signature region or none.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from fatpte.container.reader import Container
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output
from fatpte.fileio.checksum import crc32c
from fatpte.fileio.streams import copy_range
from fatpte.format import layout as L
from fatpte.format.codec import encode

_SLOT = L.RECORDS["v2_signature_slot"]


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _max_alignment(c: Container) -> int:
    aligns = [L.MANIFEST_ALIGNMENT, L.SIGNATURE_ALIGNMENT]
    aligns += [e.alignment for e in c.entries] + [s.alignment for s in c.segments]
    return max(aligns)


def _content_regions(c: Container) -> list[tuple[int, int]]:
    """Every region but the header, tables and signature: (start, end), empty ones included."""
    h = c.header
    out = [(e.offset, e.end) for e in c.entries] + [(s.offset, s.end) for s in c.segments]
    if h.manifest_size:
        out.append((h.manifest_offset, h.manifest_offset + h.manifest_size))
    return out


class Layout(NamedTuple):
    """A container rewritten with another header size: every region moves by `shift`."""

    header_size: int
    shift: int
    end: int  # end of the last region after the move, before any signature


def plan_layout(c: Container, header_size: int) -> Layout:
    """Move every region by the smallest (growing) or largest (shrinking) multiple of the largest
    alignment in the container that keeps them clear of the resized tables: alignments, order and
    the gaps between regions stay, and shrinking undoes growing exactly."""
    h = c.header
    grow = header_size - h.header_size
    table_end = h.table_end + grow
    align = _max_alignment(c)
    regions = _content_regions(c)
    filled = [start for start, end in regions if end > start]
    first = min(filled, default=h.table_end)
    if grow >= 0:
        shift = _align_up(max(0, table_end - first), align)
    else:
        shift = -((first - table_end) // align * align)
    ends = [end for _, end in regions]
    end = max([h.table_end, *ends]) + shift
    return Layout(header_size, shift, max(end, table_end))


def write_container(c: Container, dest: Path, lay: Layout, bundle: bytes | None) -> None:
    """Write `c` to `dest` with its header resized and its regions moved as `lay` says, and
    `bundle` as its signature region (or none)."""
    h = c.header
    fd = c.fileno
    if fd is None:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "signing reads from a file, not a buffer", source=c.source)
    signed = bundle is not None
    sig_at = _align_up(lay.end, L.SIGNATURE_ALIGNMENT) if signed else 0
    total = sig_at + len(bundle) if bundle is not None else lay.end
    fields = dict(zip(L.RECORDS["v2_header"].fields, L.RECORDS["v2_header"].codec.unpack_from(c.buffer, 0)))
    fields.update(header_size=lay.header_size, container_size=total, header_checksum=0)
    if h.manifest_size:
        fields["manifest_offset"] = h.manifest_offset + lay.shift
    prefix = bytearray(encode(L.RECORDS["v2_header"], fields, "header"))
    if lay.header_size >= L.SIGNED_HEADER_SIZE:
        slot = {"signature_offset": sig_at, "signature_size": len(bundle) if bundle else 0,
                "signature_checksum": crc32c(bundle) if bundle else 0}
        prefix += encode(_SLOT, slot, "header")
        # Fields of a later revision, past the slot, are kept as they were.
        prefix += bytes(c.buffer[L.SIGNED_HEADER_SIZE:h.header_size])
    entries_at = h.header_size
    ent, seg = L.RECORDS["v2_entry"], L.RECORDS["v2_segment"]
    for e in c.entries:
        rec = bytearray(c.buffer[entries_at + e.index * h.entry_size: entries_at + (e.index + 1) * h.entry_size])
        ent_off = ent.offsets["offset"][0]
        rec[ent_off:ent_off + 8] = (e.offset + lay.shift).to_bytes(8, "little")
        prefix += rec
    segments_at = entries_at + h.entry_count * h.entry_size
    for s in c.segments:
        at = segments_at + s.index * h.segment_entry_size
        rec = bytearray(c.buffer[at: at + h.segment_entry_size])
        rec[seg.offsets["offset"][0]:seg.offsets["offset"][0] + 8] = (s.offset + lay.shift).to_bytes(8, "little")
        prefix += rec
    value = crc32c(prefix)
    prefix[L.HEADER_CHECKSUM_OFFSET:L.HEADER_CHECKSUM_OFFSET + 4] = value.to_bytes(4, "little")
    filled = [start for start, end in _content_regions(c) if end > start]
    body_end = max(h.table_end, lay.end - lay.shift)
    body_start = min(filled, default=body_end)  # what lies before it is zero padding
    old_sig = (h.signature_offset, h.signature_offset + h.signature_size) if h.signature_size else None
    with atomic_output(dest) as out:
        out.write(prefix)
        out.flush()
        ofd = out.fileno()
        pieces = [(body_start, body_end)]
        if old_sig is not None and old_sig[0] < body_end:
            # The old signature sits between other regions: it is not carried over.
            pieces = [(body_start, old_sig[0]), (old_sig[1], body_end)]
        for start, end in pieces:
            if end > start:
                copy_range(fd, start, ofd, start + lay.shift, end - start)
        if bundle is not None:
            os.pwrite(ofd, bundle, sig_at)
        os.ftruncate(ofd, total)

