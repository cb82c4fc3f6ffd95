"""Content checks that read the bytes of the regions: padding, manifest, payloads, segments.

Runs after `structure.read_structure` and only over regions whose placement it found sound.
Each region is hashed straight from the buffer (a mapping for files) in bounded chunks, and a
payload shared by several entries is hashed once. Order follows specs/nfat.md section 6.
"""

from __future__ import annotations

from fatpte.errors import ErrorCode, finding
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.checksum import crc32c
from fatpte.fileio.streams import Advance, Progress, progress_counter
from fatpte.format import layout as L
from fatpte.format.structure import Structure

_SCAN_CHUNK = 1 << 20
_ZEROS = bytes(_SCAN_CHUNK)


def check_integrity(buf: BytesLike, st: Structure, progress: Progress | None = None) -> None:
    """Append to `st.findings` every content problem of a structurally read v2 container;
    `progress(done, total)` follows the bytes hashed."""
    h = st.header
    if h is None or h.version != L.VERSION_2:
        return
    advance = None if progress is None else progress_counter(progress, _hashed_bytes(st))
    if not st.errors:
        _check_padding(buf, st)
    if st.manifest_placed:
        _check_manifest(buf, st, advance)
    _check_payloads(buf, st, advance)
    _check_segments(buf, st, advance)
    if st.signature_placed:
        _check_signature(buf, st, advance)
    # Last in the canonical order: the manifest's own rules and its consistency with the tables.
    from fatpte.manifest.rules import check_container

    check_container(buf, st)


def first_nonzero(buf: BytesLike, start: int, end: int) -> int | None:
    """Offset of the first non-zero byte of buf[start:end], or None."""
    view = memoryview(buf)
    try:
        pos = start
        while pos < end:
            nxt = min(end, pos + _SCAN_CHUNK)
            chunk = bytes(view[pos:nxt])
            if chunk != _ZEROS[: nxt - pos]:  # memcmp: the common all-zero chunk costs a copy and a compare
                return nxt - len(chunk.lstrip(b"\0"))
            pos = nxt
    finally:
        view.release()
    return None


def _check_padding(buf: BytesLike, st: Structure) -> None:
    assert st.header is not None
    reach = 0
    spans = sorted({(r.start, r.end) for r in st.regions if r.end > r.start})
    spans.append((st.header.container_size, st.header.container_size))
    for start, end in spans:
        if start > reach:
            bad = first_nonzero(buf, reach, start)
            if bad is not None:
                st.add(finding(ErrorCode.PADDING_NOT_ZERO,
                               f"byte {bad:#x} is {buf[bad]:#04x}; it lies in the padding {reach:#x}..{start:#x} "
                               f"between regions, which must be zero", offset=bad, expected=0, actual=buf[bad]))
                return
        reach = max(reach, end)


def _hashed_bytes(st: Structure) -> int:
    """How many bytes the content checks hash: the manifest, each distinct payload region and
    each segment whose placement is sound."""
    assert st.header is not None
    payloads = {(e.offset, e.size) for e in st.entries if e.index in st.placed_entries}
    total = sum(size for _, size in payloads)
    total += sum(s.size for s in st.segments if s.index in st.placed_segments)
    total += st.header.signature_size if st.signature_placed else 0
    return total + (st.header.manifest_size if st.manifest_placed else 0)


def _check_manifest(buf: BytesLike, st: Structure, advance: Advance | None) -> None:
    assert st.header is not None
    h = st.header
    actual = crc32c(buf, h.manifest_offset, h.manifest_offset + h.manifest_size, advance=advance)
    if actual != h.manifest_checksum:
        st.add(finding(ErrorCode.MANIFEST_CHECKSUM_MISMATCH,
                       f"the manifest ({h.manifest_offset:#x}..{h.manifest_offset + h.manifest_size:#x}) has "
                       f"CRC32C {actual:08x}, but manifest_checksum says {h.manifest_checksum:08x}",
                       offset=L.RECORDS["v2_header"].offsets["manifest_checksum"][0], field="header.manifest_checksum",
                       expected=h.manifest_checksum, actual=actual))
        return
    ident = bytes(buf[h.manifest_offset + 4 : h.manifest_offset + 8]) if h.manifest_size >= 8 else b""
    if ident != L.MANIFEST_IDENTIFIER:
        st.add(finding(ErrorCode.BAD_MANIFEST_IDENTIFIER,
                       f"the manifest's bytes 4..8 are {ident!r}, not the identifier {L.MANIFEST_IDENTIFIER!r}",
                       offset=h.manifest_offset + 4, field="manifest", expected=L.MANIFEST_IDENTIFIER,
                       actual=ident))


def _entry_field_at(st: Structure, index: int, field: str) -> int:
    assert st.header is not None
    rec = L.RECORDS["v2_entry"]
    return st.header.header_size + index * st.header.entry_size + rec.offsets[field][0]


def _check_payloads(buf: BytesLike, st: Structure, advance: Advance | None) -> None:
    computed: dict[tuple[int, int], int] = {}
    for e in st.entries:
        if e.index not in st.placed_entries or e.checksum is None:
            continue
        key = (e.offset, e.size)
        actual = computed.get(key)
        if actual is None:
            actual = computed[key] = crc32c(buf, e.offset, e.end, advance=advance)
        if actual != e.checksum:
            st.add(finding(ErrorCode.PAYLOAD_CHECKSUM_MISMATCH,
                           f"payload of {e.name!r} ({e.offset:#x}..{e.end:#x}) has CRC32C {actual:08x}, but its "
                           f"entry says {e.checksum:08x}: the payload bytes were altered or damaged",
                           offset=_entry_field_at(st, e.index, "checksum"), field=f"entries[{e.index}].checksum",
                           expected=e.checksum, actual=actual))
            continue
        kind = e.payload_kind
        if kind and kind != b"\0\0\0\0":
            found = bytes(buf[e.offset + 4 : e.offset + 8]) if e.size >= 8 else b""
            if found != kind:
                st.add(finding(ErrorCode.PAYLOAD_KIND_MISMATCH,
                               f"entry {e.name!r} says its payload kind is {kind!r}, but the payload's bytes "
                               f"4..8 are {found!r}", offset=_entry_field_at(st, e.index, "payload_kind"),
                               field=f"entries[{e.index}].payload_kind", expected=kind, actual=found))


def _check_segments(buf: BytesLike, st: Structure, advance: Advance | None) -> None:
    assert st.header is not None
    h = st.header
    rec = L.RECORDS["v2_segment"]
    base = h.header_size + h.entry_count * h.entry_size
    for s in st.segments:
        if s.index not in st.placed_segments:
            continue
        actual = crc32c(buf, s.offset, s.end, advance=advance)
        if actual != s.checksum:
            st.add(finding(ErrorCode.SEGMENT_CHECKSUM_MISMATCH,
                           f"segment {s.index} ({s.offset:#x}..{s.end:#x}) has CRC32C {actual:08x}, but its "
                           f"entry says {s.checksum:08x}",
                           offset=base + s.index * h.segment_entry_size + rec.offsets["checksum"][0],
                           field=f"segments[{s.index}].checksum", expected=s.checksum, actual=actual))


def _check_signature(buf: BytesLike, st: Structure, advance: Advance | None) -> None:
    assert st.header is not None
    h = st.header
    end = h.signature_offset + h.signature_size
    actual = crc32c(buf, h.signature_offset, end, advance=advance)
    if actual != h.signature_checksum:
        at = L.SIGNATURE_SLOT_OFFSET + L.RECORDS["v2_signature_slot"].offsets["signature_checksum"][0]
        st.add(finding(ErrorCode.SIGNATURE_CHECKSUM_MISMATCH,
                       f"the signature region ({h.signature_offset:#x}..{end:#x}) has CRC32C {actual:08x}, but "
                       f"signature_checksum says {h.signature_checksum:08x}",
                       offset=at, field="header.signature_checksum", expected=h.signature_checksum, actual=actual))
