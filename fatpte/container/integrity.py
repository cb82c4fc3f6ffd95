"""Content checks that read the bytes of the regions: padding, manifest, payloads, segments.

Runs after `structure.read_structure` and only over regions whose placement it found sound.
The bytes are asked for through a `RangeReader` (fatpte/fileio/ranges.py): over a mapping, each
region is hashed straight from it in bounded chunks when asked; over a file read by ranges,
`scan_questions` plans every question first and one streaming pass answers them. A payload
shared by several entries is hashed once. Order follows specs/nfat.md section 6.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fatpte.errors import ErrorCode, finding
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.ranges import BufferRanges, Question, RangeReader, ScannedRanges
from fatpte.fileio.streams import Advance, Progress, progress_counter
from fatpte.format import layout as L
from fatpte.format.structure import Structure

if TYPE_CHECKING:
    from fatpte.manifest.model import Manifest


def check_integrity(src: BufferRanges | ScannedRanges | BytesLike, st: Structure, progress: Progress | None = None) -> None:
    """Append to `st.findings` every content problem of a structurally read v2 container, reading
    through `src` (a buffer holding the whole file, or a RangeReader); `progress(done, total)`
    follows the bytes hashed."""
    h = st.header
    if h is None or h.version != L.VERSION_2:
        return
    reader = src if isinstance(src, (BufferRanges, ScannedRanges)) else BufferRanges(src)
    advance = None if progress is None else progress_counter(progress, _hashed_bytes(st))
    if not st.errors:
        _check_padding(reader, st)
    if st.manifest_placed:
        _check_manifest(reader, st, advance)
    _check_payloads(reader, st, advance)
    _check_segments(reader, st, advance)
    if st.signature_placed:
        _check_signature(reader, st, advance)
    # Last in the canonical order: the manifest's own rules and its consistency with the tables.
    from fatpte.manifest.rules import check_container

    check_container(reader, st)


def scan_questions(st: Structure, manifest: Manifest | None) -> list[Question]:
    """Every question `check_integrity` may ask of the bytes of a container whose structure is
    `st` and whose manifest (decoded beforehand, None when it has none or cannot be read) is
    `manifest`: what one streaming pass must answer (fatpte/container/remote.py). It asks a
    subset of these, depending on earlier answers."""
    h = st.header
    if h is None or h.version != L.VERSION_2:
        return []
    out: list[Question] = []
    if not st.errors:
        out += [Question("first_nonzero", start, end) for start, end in _padding(st)]
    if st.manifest_placed:
        start, end = h.manifest_offset, h.manifest_offset + h.manifest_size
        out += [Question("crc32c", start, end), Question("bytes", start, end)]
    for e in st.entries:
        if e.index in st.placed_entries and e.checksum is not None:
            out.append(Question("crc32c", e.offset, e.end))
            if e.size >= 8:
                out.append(Question("bytes", e.offset + 4, e.offset + 8))
    out += [Question("crc32c", s.offset, s.end) for s in st.segments if s.index in st.placed_segments]
    if st.signature_placed:
        out.append(Question("crc32c", h.signature_offset, h.signature_offset + h.signature_size))
    if manifest is not None:
        by_name = {e.name: e for e in st.entries}
        for me in manifest.entries:
            entry = by_name.get(me.name)
            if me.payload_sha256 is not None and entry is not None and entry.index in st.placed_entries:
                out.append(Question("sha256", entry.offset, entry.end))
    return out


def _padding(st: Structure) -> list[tuple[int, int]]:
    """The gaps between the placed regions, in file order: what must be zero."""
    assert st.header is not None
    gaps = []
    reach = 0
    spans = sorted({(r.start, r.end) for r in st.regions if r.end > r.start})
    spans.append((st.header.container_size, st.header.container_size))
    for start, end in spans:
        if start > reach:
            gaps.append((reach, start))
        reach = max(reach, end)
    return gaps


def _check_padding(src: RangeReader, st: Structure) -> None:
    for start, end in _padding(st):
        bad = src.first_nonzero(start, end)
        if bad is not None:
            at, value = bad
            st.add(finding(ErrorCode.PADDING_NOT_ZERO,
                           f"byte {at:#x} is {value:#04x}; it lies in the padding {start:#x}..{end:#x} "
                           f"between regions, which must be zero", offset=at, expected=0, actual=value))
            return


def _hashed_bytes(st: Structure) -> int:
    """How many bytes the content checks hash: the manifest, each distinct payload region and
    each segment whose placement is sound."""
    assert st.header is not None
    payloads = {(e.offset, e.size) for e in st.entries if e.index in st.placed_entries}
    total = sum(size for _, size in payloads)
    total += sum(s.size for s in st.segments if s.index in st.placed_segments)
    total += st.header.signature_size if st.signature_placed else 0
    return total + (st.header.manifest_size if st.manifest_placed else 0)


def _check_manifest(src: RangeReader, st: Structure, advance: Advance | None) -> None:
    assert st.header is not None
    h = st.header
    actual = src.crc32c(h.manifest_offset, h.manifest_offset + h.manifest_size, advance=advance)
    if actual != h.manifest_checksum:
        st.add(finding(ErrorCode.MANIFEST_CHECKSUM_MISMATCH,
                       f"the manifest ({h.manifest_offset:#x}..{h.manifest_offset + h.manifest_size:#x}) has "
                       f"CRC32C {actual:08x}, but manifest_checksum says {h.manifest_checksum:08x}",
                       offset=L.RECORDS["v2_header"].offsets["manifest_checksum"][0], field="header.manifest_checksum",
                       expected=h.manifest_checksum, actual=actual))
        return
    ident = src.bytes(h.manifest_offset, h.manifest_offset + h.manifest_size)[4:8] if h.manifest_size >= 8 else b""
    if ident != L.MANIFEST_IDENTIFIER:
        st.add(finding(ErrorCode.BAD_MANIFEST_IDENTIFIER,
                       f"the manifest's bytes 4..8 are {ident!r}, not the identifier {L.MANIFEST_IDENTIFIER!r}",
                       offset=h.manifest_offset + 4, field="manifest", expected=L.MANIFEST_IDENTIFIER,
                       actual=ident))


def _entry_field_at(st: Structure, index: int, field: str) -> int:
    assert st.header is not None
    rec = L.RECORDS["v2_entry"]
    return st.header.header_size + index * st.header.entry_size + rec.offsets[field][0]


def _check_payloads(src: RangeReader, st: Structure, advance: Advance | None) -> None:
    computed: dict[tuple[int, int], int] = {}
    for e in st.entries:
        if e.index not in st.placed_entries or e.checksum is None:
            continue
        key = (e.offset, e.size)
        actual = computed.get(key)
        if actual is None:
            actual = computed[key] = src.crc32c(e.offset, e.end, advance=advance)
        if actual != e.checksum:
            st.add(finding(ErrorCode.PAYLOAD_CHECKSUM_MISMATCH,
                           f"payload of {e.name!r} ({e.offset:#x}..{e.end:#x}) has CRC32C {actual:08x}, but its "
                           f"entry says {e.checksum:08x}: the payload bytes were altered or damaged",
                           offset=_entry_field_at(st, e.index, "checksum"), field=f"entries[{e.index}].checksum",
                           expected=e.checksum, actual=actual))
            continue
        kind = e.payload_kind
        if kind and kind != b"\0\0\0\0":
            found = src.bytes(e.offset + 4, e.offset + 8) if e.size >= 8 else b""
            if found != kind:
                st.add(finding(ErrorCode.PAYLOAD_KIND_MISMATCH,
                               f"entry {e.name!r} says its payload kind is {kind!r}, but the payload's bytes "
                               f"4..8 are {found!r}", offset=_entry_field_at(st, e.index, "payload_kind"),
                               field=f"entries[{e.index}].payload_kind", expected=kind, actual=found))


def _check_segments(src: RangeReader, st: Structure, advance: Advance | None) -> None:
    assert st.header is not None
    h = st.header
    rec = L.RECORDS["v2_segment"]
    base = h.header_size + h.entry_count * h.entry_size
    for s in st.segments:
        if s.index not in st.placed_segments:
            continue
        actual = src.crc32c(s.offset, s.end, advance=advance)
        if actual != s.checksum:
            st.add(finding(ErrorCode.SEGMENT_CHECKSUM_MISMATCH,
                           f"segment {s.index} ({s.offset:#x}..{s.end:#x}) has CRC32C {actual:08x}, but its "
                           f"entry says {s.checksum:08x}",
                           offset=base + s.index * h.segment_entry_size + rec.offsets["checksum"][0],
                           field=f"segments[{s.index}].checksum", expected=s.checksum, actual=actual))


def _check_signature(src: RangeReader, st: Structure, advance: Advance | None) -> None:
    assert st.header is not None
    h = st.header
    end = h.signature_offset + h.signature_size
    actual = src.crc32c(h.signature_offset, end, advance=advance)
    if actual != h.signature_checksum:
        at = L.SIGNATURE_SLOT_OFFSET + L.RECORDS["v2_signature_slot"].offsets["signature_checksum"][0]
        st.add(finding(ErrorCode.SIGNATURE_CHECKSUM_MISMATCH,
                       f"the signature region ({h.signature_offset:#x}..{end:#x}) has CRC32C {actual:08x}, but "
                       f"signature_checksum says {h.signature_checksum:08x}",
                       offset=at, field="header.signature_checksum", expected=h.signature_checksum, actual=actual))
