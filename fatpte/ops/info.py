"""What `fatpte info` reports: a container's summary and its byte map, as JSON-ready data.

Both are plain dicts with stable, documented fields (docs/cli.md): the command line prints them
as text or as JSON, so the two views never disagree. The byte map is derived from the tables
alone; the summary reads payload bytes only to name the ExecuTorch backends an ExecuTorch
program's delegates need (the flatbuffer of an `ET12` payload, the header of a `.ptn`), and only
for such entries, so a container of other payloads never imports the ExecuTorch readers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from fatpte.container.reader import Container
from fatpte.format import layout as L
from fatpte.format.model import Entry

if TYPE_CHECKING:
    from fatpte.manifest.model import Manifest, Requirements


# `shared_with` lists at most this many of the entries that share a payload: a container of N
# entries sharing one would otherwise describe N * N names.
SHARED_LIMIT = 8


class MapRow(NamedTuple):
    """One byte range of the file: a region the spec names, or the bytes between regions.
    A NamedTuple rather than a dataclass, to keep `dataclasses` off the read path."""

    start: int
    end: int
    kind: str  # header | entry_table | segment_table | manifest | payload | segment | padding | unclaimed
    label: str

    @property
    def size(self) -> int:
        return self.end - self.start

    def to_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "size": self.size, "kind": self.kind,
                "label": self.label}


def requirements_text(req: Requirements | None) -> str:
    """Requirements in one short line (`Requirements.text()`); `-` when there are none."""
    return "-" if req is None else req.text()


def _named_data(container: Container, manifest: Manifest | None) -> tuple[list[dict[str, Any]], int]:
    """Every key with its segment, size and the key it aliases; and the bytes the keys reference."""
    rows: list[dict[str, Any]] = []
    first: dict[int, str] = {}
    referenced = 0
    for key, seg in ([] if manifest is None else manifest.named_data):
        size = container.segments[seg].size if seg < len(container.segments) else None
        rows.append({"key": key, "segment": seg, "size": size, "alias_of": first.get(seg)})
        first.setdefault(seg, key)
        referenced += size or 0
    return rows, referenced


PTE_KIND = b"ET12"
NATIVE_BACKEND = "NativeBackend"  # what runs a .ptn's program.ptg


def executorch_payload(container: Container, entry: Entry, recorded: tuple[str, ...] | None = None
                       ) -> tuple[str | None, list[str] | None]:
    """What the entry's payload is, `pte` (a program), `ptn` (a native package) or None, and the
    ExecuTorch backend ids it needs registered, sorted: `recorded` when the manifest records them
    (revision 2), else derived: a program's delegates' (`[]`: portable kernels only), the native
    backend for a package; None when it is neither, or cannot be read as one (`fatpte validate`
    reports what is wrong). A container at a URL is described from its table and manifest alone,
    as reading each payload would cost requests (docs/remote.md): `pte` when the table's
    payload_kind says so, with the backends the manifest records."""
    if container.is_remote:
        return ("pte" if entry.payload_kind == PTE_KIND else None), None if recorded is None else list(recorded)
    view = container.payload(entry)
    try:
        if recorded is not None:  # the manifest says: only the kind is read, from bytes 0..64
            if bytes(view[4:8]) == PTE_KIND:
                return "pte", list(recorded)
            if bytes(view[:4]) == b"PK\x03\x04":
                from fatpte.executorch.ptn import looks_like_ptn

                return ("ptn" if looks_like_ptn(view[:64]) else None), list(recorded)
            return None, list(recorded)
        if entry.payload_kind == PTE_KIND or bytes(view[4:8]) == PTE_KIND:
            from fatpte.errors import FatpteError
            from fatpte.executorch.pte import read_program

            try:
                program = read_program(view, source=f"{container.source}[{entry.name}]")
            except FatpteError:
                return None, None
            return "pte", sorted({d.backend_id for m in program.methods for d in m.delegates})
        if bytes(view[:4]) == b"PK\x03\x04":
            from fatpte.executorch.ptn import looks_like_ptn

            if looks_like_ptn(view[:64]):
                return "ptn", [NATIVE_BACKEND]
        return None, None
    finally:
        view.release()


def _signature_check_key() -> str:
    from fatpte.manifest.model import SIGNATURE_CHECK_KEY  # loaded with the manifest, not before

    return SIGNATURE_CHECK_KEY


def summary(container: Container) -> dict[str, Any]:
    """The container as `fatpte info --json` prints it."""
    # Only decoded when present: a container without one never loads the manifest codec.
    manifest = container.manifest if container.header.manifest_size else None
    described = {} if manifest is None else manifest.by_name()
    sharers: dict[tuple[int, int], list[Entry]] = {}  # one pass, not one per entry (65536 may share)
    for e in container.entries:
        if e.size:
            sharers.setdefault((e.offset, e.size), []).append(e)
    entries = []
    for e in container.entries:
        row = e.to_json()
        group = sharers.get((e.offset, e.size), [e])
        # The first SHARED_LIMIT others, in table order; shared_count says how many there are.
        row["shared_with"] = [o.name for o in group[: SHARED_LIMIT + 1] if o.index != e.index][:SHARED_LIMIT]
        row["shared_count"] = len(group) - 1
        m = described.get(e.name)
        row["requires"] = {} if m is None else m.requires.to_json()
        row["requires_text"] = requirements_text(None if m is None else m.requires)
        row["named_data"] = [] if m is None else list(m.named_data)
        row["signature"] = None if m is None or m.signature is None else m.signature.to_json()
        kind, row["executorch_backends"] = executorch_payload(container, e, None if m is None else
                                                              m.executorch_backends)
        # The keys above live in the container, not in the payload: an extracted program loads
        # them from a data file beside it (`fatpte extract --data-out`); a .ptn's tensors are put
        # back into the package by extract itself.
        row["needs_data_file"] = bool(row["named_data"]) and kind != "ptn"
        row["source_digest"] = None if m is None else m.source_digest
        row["payload_sha256"] = None if m is None or m.payload_sha256 is None else m.payload_sha256.hex()
        row["provenance"] = {} if m is None else dict(m.provenance)
        row["signature_check"] = None if m is None else dict(m.provenance).get(_signature_check_key())
        row["golden"] = [] if m is None else [c.to_json() for c in m.golden]
        entries.append(row)
    distinct = {(e.offset, e.size) for e in container.entries}
    stored = sum(size for _, size in distinct)
    keys, referenced = _named_data(container, manifest)
    return {
        "path": container.source,
        "version": container.version,
        "size": container.size,
        "entry_count": len(container.entries),
        "segment_count": len(container.segments),
        "manifest": container.header.manifest_size > 0,
        "payload_bytes": sum(e.size for e in container.entries),
        "payload_bytes_stored": stored,
        "entries": entries,
        "segments": [{"index": s.index, "offset": s.offset, "size": s.size, "alignment": s.alignment,
                      "checksum": f"{s.checksum:08x}"} for s in container.segments],
        "named_data": keys,
        "named_data_bytes": referenced,
        "named_data_bytes_stored": sum(s.size for s in container.segments),
    }


def byte_map(container: Container) -> list[MapRow]:
    """The file's regions in file order, with the bytes between them as `padding` (v2, must be
    zero) or `unclaimed` (v1 gaps and trailing bytes). Each byte appears once, except that
    overlapping v1 payloads are each listed in full, in start order."""
    h = container.header
    rows: list[MapRow] = []
    if container.version == L.VERSION_1:
        rows.append(MapRow(0, L.V1_HEADER_SIZE, "header", "header"))
        rows.append(MapRow(L.V1_HEADER_SIZE, h.table_end, "entry_table",
                           f"entry table ({h.entry_count} x {h.entry_size} bytes)"))
        gap_kind = "unclaimed"
    else:
        entries_end = h.header_size + h.entry_count * h.entry_size
        rows.append(MapRow(0, h.header_size, "header", "header"))
        rows.append(MapRow(h.header_size, entries_end, "entry_table",
                           f"entry table ({h.entry_count} x {h.entry_size} bytes)"))
        if h.segment_count:
            rows.append(MapRow(entries_end, h.table_end, "segment_table",
                               f"segment table ({h.segment_count} x {h.segment_entry_size} bytes)"))
        gap_kind = "padding"
    regions: list[MapRow] = []
    by_range: dict[tuple[int, int], list[str]] = {}
    for e in container.entries:
        by_range.setdefault((e.offset, e.end), []).append(e.name)
    for (start, end), names in by_range.items():
        if end > start:
            label = "payload of " + ", ".join(repr(n) for n in names)
            regions.append(MapRow(start, end, "payload", label))
    for s in container.segments:
        if s.size:
            regions.append(MapRow(s.offset, s.end, "segment", f"segment {s.index}"))
    if h.manifest_size:
        regions.append(MapRow(h.manifest_offset, h.manifest_offset + h.manifest_size, "manifest", "manifest"))
    reach = h.table_end
    for r in sorted(regions, key=lambda r: (r.start, r.end)):
        if r.start > reach:
            rows.append(MapRow(reach, r.start, gap_kind, gap_kind))
        rows.append(r)
        reach = max(reach, r.end)
    if reach < container.size:
        rows.append(MapRow(reach, container.size, gap_kind, gap_kind))
    return rows
