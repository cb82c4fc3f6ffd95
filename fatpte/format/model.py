"""The decoded, version-independent view of a container: header, entries, segments, regions.

The records are `typing.NamedTuple`s rather than dataclasses: they are built on every read, and
a NamedTuple class costs a fraction of a frozen dataclass at import (no `dataclasses`, `inspect`
or generated-code compile), which is most of what `fatpte info` spends before it reads a byte.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Header(NamedTuple):
    """The header fields; for version 1 the v2-only fields hold what v1 implies."""

    version: int
    header_size: int
    entry_size: int
    entry_count: int
    segment_entry_size: int
    segment_count: int
    flags: int
    container_size: int
    manifest_offset: int
    manifest_size: int
    manifest_checksum: int
    header_checksum: int
    table_end: int  # first byte after the header and its tables
    # The signature slot (header bytes 64..80 when header_size >= 80); all 0 without one.
    signature_offset: int = 0
    signature_size: int = 0
    signature_checksum: int = 0

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._fields}


class Entry(NamedTuple):
    """One specialization. Offsets are absolute in both versions.

    Version 1 has no name, alignment, checksum, kind or priority: there `name` is the backend
    id, `alignment` is 1, `checksum` and `payload_kind` are None and `priority` is 0.
    """

    # The field shadows tuple.index on purpose: it is the public name in the spec and the JSON.
    index: int  # type: ignore[assignment]
    name: str
    backend_id: str
    offset: int
    size: int
    payload_kind: bytes | None
    alignment: int
    checksum: int | None
    priority: int
    flags: int

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def payload_kind_text(self) -> str:
        """The kind as printed: `NPTG`, `-` when zero or absent, hex when not printable."""
        kind = self.payload_kind
        if not kind or kind == b"\0\0\0\0":
            return "-"
        if all(0x20 < b < 0x7F for b in kind):
            return kind.decode("ascii")
        return "0x" + kind.hex()

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "backend_id": self.backend_id,
            "offset": self.offset,
            "size": self.size,
            "payload_kind": self.payload_kind_text,
            "alignment": self.alignment,
            "checksum": None if self.checksum is None else f"{self.checksum:08x}",
            "priority": self.priority,
            "flags": self.flags,
        }


class Segment(NamedTuple):
    """One shared named-data segment (version 2)."""

    # Shadows tuple.index on purpose, as in Entry.
    index: int  # type: ignore[assignment]
    offset: int
    size: int
    alignment: int
    checksum: int
    flags: int

    @property
    def end(self) -> int:
        return self.offset + self.size


class Region(NamedTuple):
    """A byte range the spec gives a meaning to, with the field that locates it."""

    start: int
    end: int
    label: str  # human name: "header and tables", "manifest", "payload of 'cpu'"
    field: str  # field path of the offset that places it, e.g. "entries[2].offset"
    field_offset: int  # where that field lies in the file
    rank: int  # position in table order, the tie-break of the overlap sweep
