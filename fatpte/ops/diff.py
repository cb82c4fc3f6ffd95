"""`fatpte diff`: what changed between two containers, entry by entry, as JSON-ready data.

Entries are matched by name (in version 1 the name is the backend id); named data by key. An
entry is `changed` when any compared field differs: its table fields, and what the manifest says
of it (requirements, signature, named-data keys, source digest, payload SHA-256). Payloads and
named data are compared by size and CRC32C (for version 1, which stores no checksum, the CRC32C
is computed from the payload bytes). Nothing is printed here; the command line renders it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fatpte.container.reader import Container
from fatpte.fileio.checksum import crc32c
from fatpte.format.model import Entry

if TYPE_CHECKING:
    from fatpte.manifest.model import ManifestEntry

# Fields compared for an entry present in both containers, in report order.
COMPARED = ("backend_id", "size", "checksum", "payload_kind", "alignment", "priority", "requires", "signature",
            "named_data", "source_digest", "payload_sha256")


def _entry_views(container: Container) -> dict[str, dict[str, Any]]:
    """Each entry's compared fields by name; the manifest is indexed once for all of them."""
    manifest = container.manifest if container.header.manifest_size else None
    described = {} if manifest is None else manifest.by_name()
    return {e.name: _entry_view(container, e, described.get(e.name)) for e in container.entries}


def _entry_view(container: Container, e: Entry, m: ManifestEntry | None) -> dict[str, Any]:
    checksum = e.checksum if e.checksum is not None else _crc32c(container, e)
    return {
        "backend_id": e.backend_id,
        "size": e.size,
        "checksum": f"{checksum:08x}",
        "payload_kind": e.payload_kind_text,
        "alignment": e.alignment,
        "priority": e.priority,
        "requires": {} if m is None else m.requires.to_json(),
        "signature": None if m is None or m.signature is None else m.signature.to_json(),
        "named_data": [] if m is None else list(m.named_data),
        "source_digest": None if m is None else m.source_digest,
        "payload_sha256": None if m is None or m.payload_sha256 is None else m.payload_sha256.hex(),
    }


def _crc32c(container: Container, e: Entry) -> int:
    """The CRC32C of a payload that states none (version 1), read in bounded chunks."""
    value = 0
    for chunk in container.stream(e.offset, e.size):
        value = crc32c(chunk, value=value)
    return value


def _named_data_view(container: Container) -> dict[str, dict[str, Any]]:
    manifest = container.manifest if container.header.manifest_size else None
    out: dict[str, dict[str, Any]] = {}
    for key, index in ([] if manifest is None else manifest.named_data):
        seg = container.segments[index] if index < len(container.segments) else None
        out[key] = {"size": None if seg is None else seg.size,
                    "checksum": None if seg is None else f"{seg.checksum:08x}"}
    return out


def _changes(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]],
             fields: tuple[str, ...], id_field: str) -> tuple[list[Any], list[Any], list[Any]]:
    added = [{id_field: k, **new[k]} for k in new if k not in old]
    removed = [{id_field: k, **old[k]} for k in old if k not in new]
    changed = []
    for k in old:
        if k in new:
            diff = {f: {"old": old[k][f], "new": new[k][f]} for f in fields if old[k][f] != new[k][f]}
            if diff:
                changed.append({id_field: k, "fields": diff})
    return added, removed, changed


def compare(a: Container, b: Container) -> dict[str, Any]:
    """The changes from `a` to `b`, as `fatpte diff --json` prints them."""
    va, vb = _entry_views(a), _entry_views(b)
    added, removed, changed = _changes(va, vb, COMPARED, "name")
    nd_added, nd_removed, nd_changed = _changes(_named_data_view(a), _named_data_view(b), ("size", "checksum"),
                                                "key")
    order_a = [n for n in va if n in vb]
    order_b = [n for n in vb if n in va]
    same = not (added or removed or changed or nd_added or nd_removed or nd_changed)
    return {
        "a": a.source,
        "b": b.source,
        "version": {"old": a.version, "new": b.version},
        "size": {"old": a.size, "new": b.size, "delta": b.size - a.size},
        "added": added,
        "removed": removed,
        "changed": changed,
        "reordered": order_a != order_b,
        "named_data": {"added": nd_added, "removed": nd_removed, "changed": nd_changed},
        "unchanged": same and order_a == order_b and a.version == b.version,
    }
