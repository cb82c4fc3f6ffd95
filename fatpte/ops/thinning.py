"""`fatpte.thin`: a smaller valid container holding only the chosen entries and the named data
they use.

For a device, the entries kept are every entry eligible on it, in the container's table order (so
the device ranks them as before): the one it gets and those a loader falls back to when that one
cannot load, fails its self-test or fails after load (specs/nfat-manifest.md section 6). With
`only_chosen`, the one it gets alone.

Payload and segment bytes are copied by the kernel from the source file (never read into Python),
keep their alignment, and keep their CRC32C and SHA-256 values: nothing is recomputed over them.
Only the header, the tables and the manifest (which index the kept regions) are written anew.
From a URL only those regions are fetched, with range requests, and each is checked against its
CRC32C as it arrives: bytes that crossed a network are hashed at no cost next to the transfer,
and a damaged one publishes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fatpte.container.locations import open as open_container
from fatpte.container.reader import Container, key_segments
from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output
from fatpte.fileio.checksum import crc32c
from fatpte.format import layout as L
from fatpte.format.codec import encode
from fatpte.format.model import Entry
from fatpte.manifest.codec import encode as encode_manifest
from fatpte.manifest.model import Manifest


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _chosen(c: Container, device: DeviceProfile | None, names: Sequence[str] | None,
            prefer: Sequence[str], exclude: Sequence[str], only_chosen: bool = False) -> list[Entry]:
    if device is None and names is None:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "thin needs a device, names, or both", field="device")
    if isinstance(names, str):
        names = [names]
    picked = None if names is None else [c.find(n) for n in names]
    if device is None:
        assert picked is not None
        keep = {e.index for e in picked}
        return [e for e in c.entries if e.index in keep]
    from fatpte.device.selection import select

    others = [] if picked is None else [e.name for e in c.entries if e not in picked]
    selection = select(c, device, prefer=prefer, exclude=[*exclude, *others])
    if only_chosen:
        return [selection.chosen]
    eligible = {v.entry.index for v in selection.ranked}
    return [e for e in c.entries if e.index in eligible]


def thin(
    path: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    device: DeviceProfile | None = None,
    names: Sequence[str] | None = None,
    prefer: Sequence[str] = (),
    exclude: Sequence[str] = (),
    only_chosen: bool = False,
) -> Path:
    """Write to `dest` a container with the entries eligible on `device` (`only_chosen`: the one
    it gets), or the entries `names`, or the entries among `names` eligible on `device`, of the
    container at `path` (a path or a URL)."""
    with open_container(path) as c:
        return thin_container(c, dest, device=device, names=names, prefer=prefer, exclude=exclude,
                              only_chosen=only_chosen)


def thin_container(
    c: Container,
    dest: str | os.PathLike[str],
    *,
    device: DeviceProfile | None = None,
    names: Sequence[str] | None = None,
    prefer: Sequence[str] = (),
    exclude: Sequence[str] = (),
    only_chosen: bool = False,
) -> Path:
    """`thin` of a container already open (the command line reports its size too). From a
    version 1 container at a URL, the kept payloads are held in memory while they are packed."""
    target = Path(dest)
    keep = _chosen(c, device, names, prefer, exclude, only_chosen)
    if c.version == L.VERSION_1:
        from fatpte.ops.packing import pack
        from fatpte.ops.specialization import Specialization

        return pack([Specialization(e.backend_id, c.payload(e)) for e in keep], target, version=L.VERSION_1)
    _write_v2(_plan_v2(c, keep, c.manifest), c, target)
    return target


def thinned_size(c: Container, names: Sequence[str]) -> int:
    """The size in bytes of the container `thin(..., names=names)` writes from `c`, computed from
    the tables alone: nothing is written or read beyond the header, tables and manifest."""
    keep = _chosen(c, None, names, (), ())
    if c.version == L.VERSION_1:
        # Version 1 stores the payloads back to back after the header and table (specs/nfat.md).
        return L.V1_HEADER_SIZE + len(keep) * L.V1_ENTRY_SIZE + sum(e.size for e in keep)
    return _plan_v2(c, keep, c.manifest).total


@dataclass(frozen=True, slots=True)
class _Copy:
    """One region to copy, with the CRC32C it must have and the field that states it."""

    src: int
    dst: int
    size: int
    checksum: int
    field: str
    label: str


@dataclass(frozen=True, slots=True)
class _Plan:
    prefix: bytes  # header, tables, padding and manifest, written at offset 0
    copies: list[_Copy]
    total: int  # the container's size


def _plan_v2(c: Container, keep: list[Entry], manifest: Manifest | None) -> _Plan:
    segments: list[int] = []  # old segment indices, in their original order
    new_manifest = b""
    if manifest is not None:
        kept_names = {e.name for e in keep}
        entries = tuple(me for me in manifest.entries if me.name in kept_names)
        used = {k for me in entries for k in (*me.named_data, *me.golden_keys())}  # golden tensors too (spec 8)
        by_key = key_segments(c)  # E0414 for a key past the segment table, before anything is planned
        segments = sorted({by_key[k].index for k in used if k in by_key})
        renumber = {old: new for new, old in enumerate(segments)}
        named = tuple((k, renumber[s]) for k, s in manifest.named_data if k in used)
        layouts = tuple((k, lay) for k, lay in manifest.layouts if k in used)
        new_manifest = encode_manifest(Manifest(manifest.revision, entries, named, layouts))
    # A signature travels with the entries it describes (specs/nfat-signature.md): the region is
    # copied unchanged, after every other region, and the statement still matches what is kept.
    h = c.header
    signed = h.signature_size > 0
    header_size = L.SIGNED_HEADER_SIZE if signed else L.V2_HEADER_SIZE
    table_end = header_size + len(keep) * L.V2_ENTRY_SIZE + len(segments) * L.V2_SEGMENT_SIZE
    cursor = table_end
    manifest_at = 0
    if new_manifest:
        manifest_at = cursor = _align_up(cursor, L.MANIFEST_ALIGNMENT)
        cursor += len(new_manifest)
    copies: list[_Copy] = []
    placed: dict[tuple[int, int], int] = {}  # entries sharing one payload region keep sharing it
    rows = []
    for e in keep:
        region = (e.offset, e.size)
        if region not in placed:
            align = max(x.alignment for x in keep if (x.offset, x.size) == region)
            placed[region] = _align_up(cursor, align)
            cursor = placed[region] + e.size
            assert e.checksum is not None  # version 2
            copies.append(_Copy(e.offset, placed[region], e.size, e.checksum, f"entries[{e.index}].checksum",
                                f"payload of {e.name!r}"))
        rows.append(e._replace(offset=placed[region]))
    seg_rows = []
    for old in segments:
        s = c.segments[old]
        at = _align_up(cursor, s.alignment)
        cursor = at + s.size
        copies.append(_Copy(s.offset, at, s.size, s.checksum, f"segments[{s.index}].checksum", f"segment {s.index}"))
        seg_rows.append({"offset": at, "size": s.size, "alignment": s.alignment, "checksum": s.checksum,
                         "flags": s.flags, "reserved": 0})
    signature_at = 0
    if signed:
        signature_at = _align_up(cursor, L.SIGNATURE_ALIGNMENT)
        cursor = signature_at + h.signature_size
        copies.append(_Copy(h.signature_offset, signature_at, h.signature_size, h.signature_checksum,
                            "header.signature_checksum", "signature region"))
    total = cursor
    header = {
        "magic": L.MAGIC, "version": L.VERSION_2, "header_size": header_size,
        "entry_size": L.V2_ENTRY_SIZE, "entry_count": len(keep), "segment_entry_size": L.V2_SEGMENT_SIZE,
        "segment_count": len(segments), "flags": 0, "container_size": total, "manifest_offset": manifest_at,
        "manifest_size": len(new_manifest), "manifest_checksum": crc32c(new_manifest) if new_manifest else 0,
        "header_checksum": 0,
    }
    prefix = bytearray(encode(L.RECORDS["v2_header"], header, "header"))
    if signed:
        prefix += encode(L.RECORDS["v2_signature_slot"], {
            "signature_offset": signature_at, "signature_size": h.signature_size,
            "signature_checksum": h.signature_checksum}, "header")
    for i, e in enumerate(rows):
        assert e.payload_kind is not None and e.checksum is not None
        name = e.name.encode("ascii").ljust(L.ID_FIELD_SIZE, b"\0")
        backend = e.backend_id.encode("ascii").ljust(L.ID_FIELD_SIZE, b"\0")
        prefix += encode(L.RECORDS["v2_entry"], {
            "name": name, "backend_id": backend, "offset": e.offset, "size": e.size,
            "payload_kind": e.payload_kind, "alignment": e.alignment, "checksum": e.checksum,
            "priority": e.priority, "flags": e.flags, "reserved": 0}, f"entries[{i}]")
    for i, row in enumerate(seg_rows):
        prefix += encode(L.RECORDS["v2_segment"], row, f"segments[{i}]")
    checksum = crc32c(prefix)
    prefix[L.HEADER_CHECKSUM_OFFSET : L.HEADER_CHECKSUM_OFFSET + 4] = checksum.to_bytes(4, "little")
    if new_manifest:
        prefix += bytes(manifest_at - len(prefix)) + new_manifest
    return _Plan(bytes(prefix), copies, total)


def _write_v2(plan: _Plan, c: Container, target: Path) -> None:
    from fatpte.fileio.streams import copy_range

    with atomic_output(target) as out:
        out.write(plan.prefix)
        out.flush()
        if c.fileno is not None:
            for copy in plan.copies:
                copy_range(c.fileno, copy.src, out.fileno(), copy.dst, copy.size)
        # Bytes that arrive (a container at a URL: near regions in one request) are checked.
        received = [] if c.fileno is not None else c.copy_ranges(
            [(copy.src, copy.size, copy.dst) for copy in plan.copies], out.fileno())
        for copy, actual in zip(plan.copies, received):
            if actual != copy.checksum:
                code = (ErrorCode.PAYLOAD_CHECKSUM_MISMATCH if copy.field.startswith("entries")
                        else ErrorCode.SIGNATURE_CHECKSUM_MISMATCH if copy.field.startswith("header")
                        else ErrorCode.SEGMENT_CHECKSUM_MISMATCH)
                raise FatpteError(code, f"the {copy.label} ({copy.src:#x}..{copy.src + copy.size:#x}) arrived with "
                                  f"CRC32C {actual:08x}, but the table says {copy.checksum:08x}: nothing was "
                                  "written", source=c.source, field=copy.field, expected=copy.checksum,
                                  actual=actual)
        # Padding is never written: the file system reads the gaps as zero, as the spec requires.
        os.ftruncate(out.fileno(), plan.total)
