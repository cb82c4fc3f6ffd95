"""What `fatpte info` reports: a container's summary and its byte map, as JSON-ready data.

Both are plain dicts with stable, documented fields (docs/cli.md): the command line prints them
as text or as JSON, so the two views never disagree. Nothing here reads a payload byte; the
byte map is derived from the tables alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from fatpte.container.reader import Container
from fatpte.format import layout as L

if TYPE_CHECKING:
    from fatpte.manifest.model import Manifest, Requirements


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
    """Requirements in one short line: `arch=x86_64, +avx2+fma, cuda sm_80|compute_90, mem>=1 GiB`."""
    if req is None:
        return "-"
    parts = []
    if req.os:
        parts.append("os=" + "|".join(req.os))
    if req.arch:
        parts.append("arch=" + "|".join(req.arch))
    if req.cpu_features:
        parts.append("+" + "+".join(req.cpu_features))
    for acc in req.accelerators:
        text = acc.kind
        if acc.targets:
            text += " " + "|".join(t.text(acc.kind) for t in acc.targets)
        if acc.min_memory_bytes:
            text += f" mem>={_bytes(acc.min_memory_bytes)}"
        parts.append(text)
    if req.min_memory_bytes:
        parts.append(f"mem>={_bytes(req.min_memory_bytes)}")
    if req.backend_abi is not None:
        parts.append(f"abi {req.backend_abi.text()}")
    return ", ".join(parts) or "-"


def _bytes(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


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


def _signature_check_key() -> str:
    from fatpte.manifest.model import SIGNATURE_CHECK_KEY  # loaded with the manifest, not before

    return SIGNATURE_CHECK_KEY


def summary(container: Container) -> dict[str, Any]:
    """The container as `fatpte info --json` prints it."""
    # Only decoded when present: a container without one never loads the manifest codec.
    manifest = container.manifest if container.header.manifest_size else None
    entries = []
    for e in container.entries:
        row = e.to_json()
        row["shared_with"] = [o.name for o in container.entries
                              if o.index != e.index and o.size and (o.offset, o.size) == (e.offset, e.size)]
        m = None if manifest is None else manifest.entry(e.name)
        row["requires"] = {} if m is None else m.requires.to_json()
        row["requires_text"] = requirements_text(None if m is None else m.requires)
        row["named_data"] = [] if m is None else list(m.named_data)
        row["signature_check"] = None if m is None else dict(m.provenance).get(_signature_check_key())
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
