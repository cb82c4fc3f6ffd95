"""Structural checks: the header, the tables and the placement of every region.

This module reads the header and the tables and nothing else: it never touches a payload, a
segment or the manifest bytes, so opening a container of any size costs the same. It checks
rules in the canonical order of specs/nfat.md section 6, which the C++ loader follows too: the
first error found here is the error code both implementations report for a file.

Findings are collected rather than raised so that `validate` can list every problem; `open`
raises the first error.
"""

from __future__ import annotations

from typing import Any

from fatpte.errors import MAX_FINDINGS_PER_CODE, ErrorCode, Finding, Severity, finding
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.checksum import crc32c
from fatpte.format import layout as L
from fatpte.format.codec import decode
from fatpte.format.model import Entry, Header, Region, Segment

_V1_HEADER = L.RECORDS["v1_header"]
_V1_ENTRY = L.RECORDS["v1_entry"]
_V2_HEADER = L.RECORDS["v2_header"]
_V2_ENTRY = L.RECORDS["v2_entry"]
_V2_SEGMENT = L.RECORDS["v2_segment"]
_V2_SLOT = L.RECORDS["v2_signature_slot"]

# Ranks of the overlap sweep (specs/nfat.md 6.3 step 31): header, entries, segments, manifest,
# signature.
MANIFEST_RANK = 1 + L.MAX_ENTRIES + L.MAX_SEGMENTS
SIGNATURE_RANK = MANIFEST_RANK + 1


class Structure:
    """What the structural pass learned. `header` is None when the header itself is unusable.

    A plain slotted class rather than a dataclass: `dataclasses` is not imported on the read path
    (see fatpte/format/model.py), and this record is mutable internal state, so NamedTuple does not fit.
    """

    __slots__ = (
        "entries",
        "findings",
        "header",
        "kept",
        "manifest_placed",
        "omitted",
        "placed_entries",
        "placed_segments",
        "regions",
        "segments",
        "signature_placed",
        "size",
        "source",
    )

    def __init__(
        self,
        source: str | None,
        size: int,
        header: Header | None = None,
        entries: list[Entry] | None = None,
        segments: list[Segment] | None = None,
        findings: list[Finding] | None = None,
        regions: list[Region] | None = None,
        placed_entries: set[int] | None = None,
        placed_segments: set[int] | None = None,
        manifest_placed: bool = False,
        signature_placed: bool = False,
    ) -> None:
        self.source = source
        self.size = size
        self.header = header
        self.entries: list[Entry] = [] if entries is None else entries
        self.segments: list[Segment] = [] if segments is None else segments
        self.findings: list[Finding] = [] if findings is None else findings
        # Regions whose placement is sound, in table order; the integrity pass reads only these.
        self.regions: list[Region] = [] if regions is None else regions
        self.placed_entries: set[int] = set() if placed_entries is None else placed_entries
        self.placed_segments: set[int] = set() if placed_segments is None else placed_segments
        self.manifest_placed = manifest_placed
        # At most MAX_FINDINGS_PER_CODE findings of a code are kept; the rest are counted here.
        self.kept: dict[ErrorCode, int] = {}
        self.omitted: dict[ErrorCode, int] = {}
        self.signature_placed = signature_placed

    def __repr__(self) -> str:
        return (
            f"Structure(source={self.source!r}, size={self.size}, header={self.header!r}, "
            f"entries={len(self.entries)}, segments={len(self.segments)}, findings={self.findings!r})"
        )

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    def add(self, f: Finding) -> None:
        kept = self.kept.get(f.code, 0)
        if kept >= MAX_FINDINGS_PER_CODE:
            self.omit(f.code, 1)
            return
        self.kept[f.code] = kept + 1
        self.findings.append(f)

    def omit(self, code: ErrorCode, count: int) -> None:
        """Count findings of `code` not kept (a check that caps its own, manifest.rules.consistency)."""
        self.omitted[code] = self.omitted.get(code, 0) + count


def in_bounds(offset: int, size: int, total: int) -> bool:
    """True when [offset, offset + size) lies inside [0, total); written so it cannot overflow."""
    return size <= total and offset <= total - size


def is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def valid_alignment(value: int) -> bool:
    return is_power_of_two(value) and L.MIN_ALIGNMENT <= value <= L.MAX_ALIGNMENT


def decode_text(raw: bytes) -> str:
    """The text of a NUL-padded id field, printable even when the bytes are not valid."""
    return raw.split(b"\0", 1)[0].decode("ascii", "backslashreplace")


def id_problem(raw: bytes) -> str | None:
    """Why a v2 name or backend id field is invalid, or None when it is valid."""
    text = raw.split(b"\0", 1)[0]
    if not text:
        return "is empty"
    bad = next((b for b in text if b not in L.ID_ALPHABET), None)
    if bad is not None:
        return f"has the byte {bad:#04x} ({chr(bad)!r}), outside [A-Za-z0-9_.-]"
    if any(raw[len(text) :]):
        return "has non-zero bytes after its terminating NUL"
    return None


def read_structure(buf: BytesLike, *, source: str | None = None, size: int | None = None) -> Structure:
    """Run every structural check on `buf`, a whole container; or, with `size`, on a file of
    `size` bytes of which `buf` holds the first bytes, at least the ranges `metadata_ranges`
    names below the end of the tables (a file read by ranges, fatpte/container/remote.py)."""
    st = Structure(source=source, size=len(buf) if size is None else size)
    n = st.size
    if n < 4:
        st.add(_short(n, 4, "magic"))
        return st
    magic = bytes(buf[0:4])
    if magic != L.MAGIC:
        st.add(
            finding(
                ErrorCode.BAD_MAGIC,
                f"the file starts with {magic!r}, not b'NFAT': this is not an NFAT container",
                offset=0,
                field="header.magic",
                expected=L.MAGIC,
                actual=magic,
            )
        )
        return st
    if n < L.PREAMBLE_SIZE:
        st.add(_short(n, L.PREAMBLE_SIZE, "version"))
        return st
    version = int.from_bytes(buf[4:8], "little")
    if version == L.VERSION_1:
        _read_v1(buf, st)
    elif version == L.VERSION_2:
        _read_v2(buf, st)
    else:
        st.add(
            finding(
                ErrorCode.UNSUPPORTED_VERSION,
                f"version {version} is not supported (this reader knows 1 and 2)",
                offset=4,
                field="header.version",
                expected=list(L.SUPPORTED_VERSIONS),
                actual=version,
            )
        )
    return st


def metadata_ranges(head: BytesLike, size: int) -> list[tuple[int, int]]:
    """The byte ranges `[start, end)` of a file of `size` bytes that opening it reads: the header
    and tables that `read_structure` checks, then the manifest that `Container.manifest` decodes.
    `head` holds the file's first bytes, at least min(size, 64) of them.

    A reader that fetches a file by ranges fetches these, then runs `read_structure` on them:
    the tables are named only when the header's sizes and counts pass the very checks that
    `read_structure` makes before it reads them (`_v1_table_end`, `_v2_table_end`), so it never
    reads past what was fetched, and a hostile header costs no more than its first bytes. The
    manifest's range is named when it lies inside the file and within the size limit."""
    st = Structure(source=None, size=size)
    if size < L.PREAMBLE_SIZE or len(head) < L.PREAMBLE_SIZE or bytes(head[0:4]) != L.MAGIC:
        return [(0, min(size, len(head)))]
    version = int.from_bytes(head[4:8], "little")
    if version == L.VERSION_1:
        counted = _v1_table_end(head, st)
        return [(0, min(size, len(head)) if counted is None else counted[1])]
    if version != L.VERSION_2:
        return [(0, min(size, len(head)))]
    bounded = _v2_table_end(head, st)
    if bounded is None:
        return [(0, min(size, len(head)))]
    h, table_end = bounded
    ranges = [(0, table_end)]
    offset, length = h["manifest_offset"], h["manifest_size"]
    if 0 < length <= L.MAX_MANIFEST_SIZE and in_bounds(offset, length, size):
        ranges.append((offset, offset + length))
    return ranges


def _short(n: int, need: int, what: str) -> Finding:
    return finding(
        ErrorCode.TRUNCATED_HEADER,
        f"the file is {n} bytes long and ends inside the header, which needs at least {need} "
        f"bytes (reading header.{what})",
        offset=n,
        field=f"header.{what}",
        expected=need,
        actual=n,
    )


# ---------------------------------------------------------------------------------------------
# Version 1
# ---------------------------------------------------------------------------------------------


def _v1_table_end(buf: BytesLike, st: Structure) -> tuple[int, int] | None:
    """(entry_count, end of the entry table) when the header's counts hold; else a finding."""
    n = st.size
    if n < _V1_HEADER.size:
        st.add(_short(n, _V1_HEADER.size, "entry_count"))
        return None
    h = decode(_V1_HEADER, buf, 0, "header", source=st.source)
    count = h["entry_count"]
    count_at = _V1_HEADER.offsets["entry_count"][0]
    if count == 0:
        st.add(finding(ErrorCode.NO_ENTRIES, "entry_count is 0: the container holds nothing", offset=count_at,
                       field="header.entry_count", actual=0))
        return None
    if count > L.MAX_ENTRIES:
        st.add(_too_many(ErrorCode.TOO_MANY_ENTRIES, count, L.MAX_ENTRIES, count_at, "header.entry_count"))
        return None
    data_start = _V1_HEADER.size + count * _V1_ENTRY.size
    if data_start > n:
        st.add(_table_past_end(data_start, n, count_at, "header.entry_count", f"{count} entries of 48 bytes"))
        return None
    return count, data_start


def _read_v1(buf: BytesLike, st: Structure) -> None:
    n = st.size
    counted = _v1_table_end(buf, st)
    if counted is None:
        return
    count, data_start = counted
    st.header = Header(
        version=1, header_size=_V1_HEADER.size, entry_size=_V1_ENTRY.size, entry_count=count,
        segment_entry_size=0, segment_count=0, flags=0, container_size=n, manifest_offset=0,
        manifest_size=0, manifest_checksum=0, header_checksum=0, table_end=data_start,
    )
    data_len = n - data_start
    covered: list[tuple[int, int, int]] = []  # (start, end, index) of in-bounds payloads
    first_by_id: dict[bytes, int] = {}
    for i in range(count):
        base = _V1_HEADER.size + i * _V1_ENTRY.size
        e = decode(_V1_ENTRY, buf, base, f"entries[{i}]", source=st.source)
        raw = e["backend_id"]
        text = raw.split(b"\0", 1)[0]
        path = f"entries[{i}].backend_id"
        if not text or any(b > 0x7F for b in text):
            why = "is empty" if not text else "has bytes outside ASCII"
            st.add(finding(ErrorCode.V1_BAD_ID, f"backend id {decode_text(raw)!r} {why}", offset=base,
                           field=path, actual=raw))
        elif any(raw[len(text):]):
            st.add(finding(ErrorCode.V1_ID_PADDING_NOT_ZERO,
                           f"backend id {decode_text(raw)!r} has non-zero bytes after its NUL; they are ignored",
                           offset=base + len(text), field=path, actual=raw))
        rel, size = e["offset"], e["size"]
        ident = decode_text(raw)
        entry = Entry(index=i, name=ident, backend_id=ident, offset=data_start + rel, size=size,
                      payload_kind=None, alignment=1, checksum=None, priority=0, flags=0)
        st.entries.append(entry)
        if not in_bounds(rel, size, data_len):
            st.add(finding(
                ErrorCode.PAYLOAD_OUT_OF_BOUNDS,
                f"payload of {ident!r} spans data offsets {rel:#x}..{rel + size:#x} but the data section "
                f"holds {data_len:#x} bytes (file ends at {n:#x})",
                offset=base + _V1_ENTRY.offsets["size"][0], field=f"entries[{i}].size",
                expected=f"<= {data_len}", actual=rel + size))
            continue
        st.placed_entries.add(i)
        if size:
            covered.append((entry.offset, entry.end, i))
        if text in first_by_id:
            st.add(finding(ErrorCode.V1_DUPLICATE_ID,
                           f"backend id {ident!r} also names entry {first_by_id[text]}; lookups by id take the first",
                           offset=base, field=path, actual=ident))
        else:
            first_by_id[text] = i
    _v1_coverage(st, covered, data_start, n)


def _v1_coverage(st: Structure, covered: list[tuple[int, int, int]], data_start: int, n: int) -> None:
    """Warn about overlapping payloads and about bytes of the data section no payload claims."""
    reach = data_start
    holder = -1
    for start, end, i in sorted(covered):
        if start < reach:
            st.add(finding(ErrorCode.V1_OVERLAPPING_PAYLOADS,
                           f"payload of entry {i} starts at {start:#x}, inside the payload of entry {holder}, "
                           f"which ends at {reach:#x}",
                           offset=start, field=f"entries[{i}].offset"))
        elif start > reach:
            st.add(finding(ErrorCode.V1_UNCOVERED_BYTES,
                           f"bytes {reach:#x}..{start:#x} belong to no payload (a gap)", offset=reach))
        if end > reach:
            reach, holder = end, i
    if reach < n:
        st.add(finding(ErrorCode.V1_UNCOVERED_BYTES,
                       f"bytes {reach:#x}..{n:#x} after the last payload belong to no payload (trailing bytes)",
                       offset=reach))


# ---------------------------------------------------------------------------------------------
# Version 2
# ---------------------------------------------------------------------------------------------


def _hfield(name: str) -> tuple[int, str]:
    return _V2_HEADER.offsets[name][0], f"header.{name}"


def _record_size_problem(value: int, minimum: int) -> str | None:
    if value < minimum:
        return f"is {value}, below the {minimum} bytes of the fields this revision defines"
    if value > L.MAX_RECORD_SIZE:
        return f"is {value}, above the limit of {L.MAX_RECORD_SIZE}"
    if value % L.RECORD_SIZE_MULTIPLE:
        return f"is {value}, not a multiple of {L.RECORD_SIZE_MULTIPLE}"
    return None


def _too_many(code: ErrorCode, count: int, limit: int, at: int, path: str) -> Finding:
    return finding(code, f"{path.split('.')[-1]} is {count}, above the limit of {limit}", offset=at, field=path,
                   expected=f"<= {limit}", actual=count)


def _table_past_end(end: int, total: int, at: int, path: str, what: str) -> Finding:
    return finding(ErrorCode.TABLE_OUT_OF_BOUNDS,
                   f"the header and tables ({what}) end at {end:#x}, past the end of the container at {total:#x}",
                   offset=at, field=path, expected=f"<= {total}", actual=end)


def _v2_table_end(buf: BytesLike, st: Structure) -> tuple[dict[str, Any], int] | None:
    """(the header's fields, end of the tables) when the header's sizes and counts hold and the
    tables lie inside the file; else a finding. Reads the 64 bytes of the header only."""
    n = st.size
    if n < _V2_HEADER.size:
        st.add(_short(n, _V2_HEADER.size, "container_size"))
        return None
    h = decode(_V2_HEADER, buf, 0, "header", source=st.source)
    total = h["container_size"]
    at, path = _hfield("container_size")
    if total > n:
        st.add(finding(ErrorCode.TRUNCATED_CONTAINER,
                       f"the header says the container is {total} bytes ({total:#x}) but the file has {n} "
                       f"({n:#x}): it was cut short, e.g. by an interrupted copy or download",
                       offset=at, field=path, expected=total, actual=n))
        return None
    if total < n:
        st.add(finding(ErrorCode.TRAILING_BYTES,
                       f"the header says the container is {total} bytes ({total:#x}) but the file has {n} "
                       f"({n:#x}): {n - total} bytes follow the container",
                       offset=total, field=path, expected=n, actual=total))
        return None
    for name, minimum, code in (
        ("header_size", _V2_HEADER.size, ErrorCode.BAD_HEADER_SIZE),
        ("entry_size", _V2_ENTRY.size, ErrorCode.BAD_ENTRY_SIZE),
        ("segment_entry_size", _V2_SEGMENT.size, ErrorCode.BAD_SEGMENT_ENTRY_SIZE),
    ):
        problem = _record_size_problem(h[name], minimum)
        if problem:
            at, path = _hfield(name)
            st.add(finding(code, f"{name} {problem}", offset=at, field=path, actual=h[name]))
            return None
    unknown = h["flags"] & ~L.HEADER_FLAGS_KNOWN
    if unknown:
        at, path = _hfield("flags")
        st.add(finding(ErrorCode.UNKNOWN_HEADER_FLAGS,
                       f"flags sets bits {unknown:#x}, which this revision does not define; a newer fatpte may "
                       f"read this file", offset=at, field=path, expected=0, actual=h["flags"]))
        return None
    count, seg_count = h["entry_count"], h["segment_count"]
    if count == 0:
        at, path = _hfield("entry_count")
        st.add(finding(ErrorCode.NO_ENTRIES, "entry_count is 0: the container holds nothing", offset=at,
                       field=path, actual=0))
        return None
    if count > L.MAX_ENTRIES:
        st.add(_too_many(ErrorCode.TOO_MANY_ENTRIES, count, L.MAX_ENTRIES, *_hfield("entry_count")))
        return None
    if seg_count > L.MAX_SEGMENTS:
        st.add(_too_many(ErrorCode.TOO_MANY_SEGMENTS, seg_count, L.MAX_SEGMENTS, *_hfield("segment_count")))
        return None
    entries_at = h["header_size"]
    segments_at = entries_at + count * h["entry_size"]
    table_end = segments_at + seg_count * h["segment_entry_size"]
    if table_end > total:
        st.add(_table_past_end(table_end, total, *_hfield("entry_count"),
                               f"{count} entries and {seg_count} segments"))
        return None
    return h, table_end


def _read_v2(buf: BytesLike, st: Structure) -> None:
    bounded = _v2_table_end(buf, st)
    if bounded is None:
        return
    h, table_end = bounded
    total, count, seg_count = h["container_size"], h["entry_count"], h["segment_count"]
    entries_at = h["header_size"]
    segments_at = entries_at + count * h["entry_size"]
    stored = h["header_checksum"]
    ck_at = L.HEADER_CHECKSUM_OFFSET
    actual = crc32c(buf, 0, ck_at)
    actual = crc32c(b"\0\0\0\0", value=actual)
    actual = crc32c(buf, ck_at + 4, table_end, value=actual)
    if actual != stored:
        st.add(finding(ErrorCode.HEADER_CHECKSUM_MISMATCH,
                       f"the header and tables (bytes 0..{table_end:#x}) have CRC32C {actual:08x}, but "
                       f"header_checksum says {stored:08x}: the header or a table entry was altered or damaged",
                       offset=ck_at, field="header.header_checksum", expected=stored, actual=actual))
        return
    slot = {"signature_offset": 0, "signature_size": 0, "signature_checksum": 0}
    if h["header_size"] >= L.SIGNED_HEADER_SIZE:
        slot = decode(_V2_SLOT, buf, L.SIGNATURE_SLOT_OFFSET, "header", source=st.source)
    st.header = Header(
        version=2, header_size=h["header_size"], entry_size=h["entry_size"], entry_count=count,
        segment_entry_size=h["segment_entry_size"], segment_count=seg_count, flags=h["flags"],
        container_size=total, manifest_offset=h["manifest_offset"], manifest_size=h["manifest_size"],
        manifest_checksum=h["manifest_checksum"], header_checksum=stored, table_end=table_end,
        signature_offset=slot["signature_offset"], signature_size=slot["signature_size"],
        signature_checksum=slot["signature_checksum"],
    )
    st.regions.append(Region(0, table_end, "header and tables", "header.header_size", 8, 0))
    _read_v2_entries(buf, st, entries_at)
    _read_v2_segments(buf, st, segments_at)
    _check_manifest_fields(st)
    _check_signature_fields(st)
    _check_duplicate_names(st, entries_at)
    _check_overlaps(st)


def _read_v2_entries(buf: BytesLike, st: Structure, entries_at: int) -> None:
    assert st.header is not None
    total, stride = st.header.container_size, st.header.entry_size
    offs = _V2_ENTRY.offsets
    for i in range(st.header.entry_count):
        base = entries_at + i * stride
        e = decode(_V2_ENTRY, buf, base, f"entries[{i}]", source=st.source)
        name, backend = decode_text(e["name"]), decode_text(e["backend_id"])

        def at(fld: str, base: int = base) -> int:
            return base + offs[fld][0]

        p = f"entries[{i}]."
        if e["reserved"]:
            st.add(finding(ErrorCode.RESERVED_NOT_ZERO, f"entry {name!r}: reserved is {e['reserved']:#x}, must be 0",
                           offset=at("reserved"), field=p + "reserved", expected=0, actual=e["reserved"]))
        unknown = e["flags"] & ~L.ENTRY_FLAGS_KNOWN
        if unknown:
            st.add(finding(ErrorCode.UNKNOWN_ENTRY_FLAGS,
                           f"entry {name!r}: flags sets bits {unknown:#x}, which this revision does not define",
                           offset=at("flags"), field=p + "flags", expected=0, actual=e["flags"]))
        problem = id_problem(e["name"])
        if problem:
            st.add(finding(ErrorCode.BAD_NAME, f"entry name {name!r} {problem}", offset=at("name"),
                           field=p + "name", actual=e["name"]))
        problem = id_problem(e["backend_id"])
        if problem:
            st.add(finding(ErrorCode.BAD_BACKEND_ID, f"entry {name!r}: backend id {backend!r} {problem}",
                           offset=at("backend_id"), field=p + "backend_id", actual=e["backend_id"]))
        entry = Entry(index=i, name=name, backend_id=backend, offset=e["offset"], size=e["size"],
                      payload_kind=e["payload_kind"], alignment=e["alignment"], checksum=e["checksum"],
                      priority=e["priority"], flags=e["flags"])
        st.entries.append(entry)
        align_ok = valid_alignment(entry.alignment)
        if not align_ok:
            st.add(finding(ErrorCode.BAD_ALIGNMENT,
                           f"entry {name!r}: alignment {entry.alignment} is not a power of two from "
                           f"{L.MIN_ALIGNMENT} to {L.MAX_ALIGNMENT}", offset=at("alignment"),
                           field=p + "alignment", actual=entry.alignment))
        if not in_bounds(entry.offset, entry.size, total):
            st.add(finding(ErrorCode.PAYLOAD_OUT_OF_BOUNDS,
                           f"payload of {name!r} ends at {entry.offset + entry.size:#x}, past the end of the "
                           f"container at {total:#x}", offset=at("size"), field=p + "size",
                           expected=f"<= {total}", actual=entry.offset + entry.size))
            continue
        if align_ok and entry.offset % entry.alignment:
            st.add(finding(ErrorCode.MISALIGNED_PAYLOAD,
                           f"payload of {name!r} starts at {entry.offset:#x}, not a multiple of its alignment "
                           f"{entry.alignment}", offset=at("offset"), field=p + "offset",
                           expected=f"multiple of {entry.alignment}", actual=entry.offset))
            continue
        if align_ok:
            st.placed_entries.add(i)
            st.regions.append(Region(entry.offset, entry.end, f"payload of {name!r}", p + "offset",
                                     at("offset"), 1 + i))


def _read_v2_segments(buf: BytesLike, st: Structure, segments_at: int) -> None:
    assert st.header is not None
    total, stride = st.header.container_size, st.header.segment_entry_size
    offs = _V2_SEGMENT.offsets
    for i in range(st.header.segment_count):
        base = segments_at + i * stride
        s = decode(_V2_SEGMENT, buf, base, f"segments[{i}]", source=st.source)

        def at(fld: str, base: int = base) -> int:
            return base + offs[fld][0]

        p = f"segments[{i}]."
        if s["reserved"]:
            st.add(finding(ErrorCode.RESERVED_NOT_ZERO, f"segment {i}: reserved is {s['reserved']:#x}, must be 0",
                           offset=at("reserved"), field=p + "reserved", expected=0, actual=s["reserved"]))
        unknown = s["flags"] & ~L.SEGMENT_FLAGS_KNOWN
        if unknown:
            st.add(finding(ErrorCode.UNKNOWN_SEGMENT_FLAGS,
                           f"segment {i}: flags sets bits {unknown:#x}, which this revision does not define",
                           offset=at("flags"), field=p + "flags", expected=0, actual=s["flags"]))
        seg = Segment(index=i, offset=s["offset"], size=s["size"], alignment=s["alignment"],
                      checksum=s["checksum"], flags=s["flags"])
        st.segments.append(seg)
        align_ok = valid_alignment(seg.alignment)
        if not align_ok:
            st.add(finding(ErrorCode.BAD_SEGMENT_ALIGNMENT,
                           f"segment {i}: alignment {seg.alignment} is not a power of two from "
                           f"{L.MIN_ALIGNMENT} to {L.MAX_ALIGNMENT}", offset=at("alignment"),
                           field=p + "alignment", actual=seg.alignment))
        if not in_bounds(seg.offset, seg.size, total):
            st.add(finding(ErrorCode.SEGMENT_OUT_OF_BOUNDS,
                           f"segment {i} ends at {seg.offset + seg.size:#x}, past the end of the container at "
                           f"{total:#x}", offset=at("size"), field=p + "size", expected=f"<= {total}",
                           actual=seg.offset + seg.size))
            continue
        if align_ok and seg.offset % seg.alignment:
            st.add(finding(ErrorCode.MISALIGNED_SEGMENT,
                           f"segment {i} starts at {seg.offset:#x}, not a multiple of its alignment "
                           f"{seg.alignment}", offset=at("offset"), field=p + "offset",
                           expected=f"multiple of {seg.alignment}", actual=seg.offset))
            continue
        if align_ok:
            st.placed_segments.add(i)
            st.regions.append(Region(seg.offset, seg.end, f"segment {i}", p + "offset", at("offset"),
                                     1 + L.MAX_ENTRIES + i))


def _check_manifest_fields(st: Structure) -> None:
    assert st.header is not None
    h = st.header
    off, size = h.manifest_offset, h.manifest_size
    if size == 0:
        if off or h.manifest_checksum:
            at, path = _hfield("manifest_offset" if off else "manifest_checksum")
            st.add(finding(ErrorCode.ABSENT_MANIFEST_NOT_ZERO,
                           f"manifest_size is 0 (no manifest) but manifest_offset is {off:#x} and "
                           f"manifest_checksum is {h.manifest_checksum:08x}; both must be 0",
                           offset=at, field=path, expected=0))
        return
    if size > L.MAX_MANIFEST_SIZE:
        at, path = _hfield("manifest_size")
        st.add(_too_many(ErrorCode.MANIFEST_TOO_LARGE, size, L.MAX_MANIFEST_SIZE, at, path))
        return
    if not in_bounds(off, size, h.container_size):
        at, path = _hfield("manifest_size")
        st.add(finding(ErrorCode.MANIFEST_OUT_OF_BOUNDS,
                       f"the manifest ends at {off + size:#x}, past the end of the container at "
                       f"{h.container_size:#x}", offset=at, field=path, expected=f"<= {h.container_size}",
                       actual=off + size))
        return
    if off % L.MANIFEST_ALIGNMENT:
        at, path = _hfield("manifest_offset")
        st.add(finding(ErrorCode.MISALIGNED_MANIFEST,
                       f"manifest_offset {off:#x} is not a multiple of {L.MANIFEST_ALIGNMENT}", offset=at,
                       field=path, expected=f"multiple of {L.MANIFEST_ALIGNMENT}", actual=off))
        return
    st.manifest_placed = True
    at, path = _hfield("manifest_offset")
    st.regions.append(Region(off, off + size, "manifest", path, at, MANIFEST_RANK))


def _sfield(name: str) -> tuple[int, str]:
    return L.SIGNATURE_SLOT_OFFSET + _V2_SLOT.offsets[name][0], f"header.{name}"


def _check_signature_fields(st: Structure) -> None:
    """The signature slot (specs/nfat.md 4.9), only in a header long enough to hold it."""
    assert st.header is not None
    h = st.header
    if h.header_size < L.SIGNED_HEADER_SIZE:
        return
    off, size = h.signature_offset, h.signature_size
    if size == 0:
        if off or h.signature_checksum:
            at, path = _sfield("signature_offset" if off else "signature_checksum")
            st.add(finding(ErrorCode.ABSENT_SIGNATURE_NOT_ZERO,
                           f"signature_size is 0 (no signature) but signature_offset is {off:#x} and "
                           f"signature_checksum is {h.signature_checksum:08x}; both must be 0",
                           offset=at, field=path, expected=0))
        return
    if size > L.MAX_SIGNATURE_SIZE:
        st.add(_too_many(ErrorCode.SIGNATURE_TOO_LARGE, size, L.MAX_SIGNATURE_SIZE, *_sfield("signature_size")))
        return
    if not in_bounds(off, size, h.container_size):
        at, path = _sfield("signature_size")
        st.add(finding(ErrorCode.SIGNATURE_OUT_OF_BOUNDS,
                       f"the signature region ends at {off + size:#x}, past the end of the container at "
                       f"{h.container_size:#x}", offset=at, field=path, expected=f"<= {h.container_size}",
                       actual=off + size))
        return
    if off % L.SIGNATURE_ALIGNMENT:
        at, path = _sfield("signature_offset")
        st.add(finding(ErrorCode.MISALIGNED_SIGNATURE,
                       f"signature_offset {off:#x} is not a multiple of {L.SIGNATURE_ALIGNMENT}", offset=at,
                       field=path, expected=f"multiple of {L.SIGNATURE_ALIGNMENT}", actual=off))
        return
    st.signature_placed = True
    at, path = _sfield("signature_offset")
    st.regions.append(Region(off, off + size, "signature", path, at, SIGNATURE_RANK))


def _check_duplicate_names(st: Structure, entries_at: int) -> None:
    assert st.header is not None
    seen: dict[str, int] = {}
    for e in st.entries:
        if e.name in seen:
            st.add(finding(ErrorCode.DUPLICATE_NAME,
                           f"entry {e.index} is named {e.name!r}, like entry {seen[e.name]}; names must be unique",
                           offset=entries_at + e.index * st.header.entry_size, field=f"entries[{e.index}].name",
                           actual=e.name))
        else:
            seen[e.name] = e.index


def _check_overlaps(st: Structure) -> None:
    """Sweep the placed regions in (start, rank) order; report each one that starts before the
    furthest end seen so far. Ordering ties by table rank makes the header and tables, which
    cannot move, the region others are reported against. Entries pointing at exactly the same
    payload region share it lawfully."""
    shared: set[tuple[int, int]] = set()
    regions: list[Region] = []
    for r in st.regions:
        if r.start == r.end:
            continue
        if r.field.startswith("entries["):
            if (r.start, r.end) in shared:
                continue
            shared.add((r.start, r.end))
        regions.append(r)
    reach, holder = 0, None
    for r in sorted(regions, key=lambda r: (r.start, r.rank)):
        if holder is not None and r.start < reach:
            st.add(finding(ErrorCode.REGIONS_OVERLAP,
                           f"the {r.label} ({r.start:#x}..{r.end:#x}) overlaps the {holder.label} "
                           f"({holder.start:#x}..{holder.end:#x})", offset=r.field_offset, field=r.field,
                           actual=r.start))
        if r.end > reach:
            reach, holder = r.end, r
