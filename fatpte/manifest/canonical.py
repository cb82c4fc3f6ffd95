"""The canonical record encoding of manifest entries and named-data keys (specs/nfat-signature.md
section 4): the bytes a signed statement's `record_sha256` digests are computed over.

The flatbuffer bytes of a manifest are not stable: thinning re-encodes the manifest (vtables are
shared differently, segments renumbered), and two writers may lay out the same tables in any order.
The canonical encoding is a function of the decoded records alone, field by field in schema order,
so every encoder of the same records, and every thinned copy, gives the same bytes. It covers every
field manifest revision 2 defines; a segment index, the manifest's revision and the position of a
table in the buffer are not part of it.

Primitives: `u8`, `u32`, `i32`, `u64` little-endian; `str` a u32 byte length then the UTF-8 bytes;
`opt(X)` a u8 0 (absent) or 1 followed by X; `list(X)` a u32 count then the items.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Final, TypeVar

from fatpte.manifest.model import (
    AbiRange,
    AcceleratorRequirement,
    Dim,
    ManifestEntry,
    Method,
    Requirements,
    Signature,
    TensorLayout,
    TensorSpec,
    VersionConstraint,
)

# The first field of every record: the record kind and the encoding's revision, so a digest of one
# kind can never equal a digest of another, and a later revision of the encoding is told apart.
ENTRY_RECORD_TAG: Final = "nfat.manifest.entry/1"
NAMED_DATA_RECORD_TAG: Final = "nfat.named_data/1"

T = TypeVar("T")

_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")


class _Writer:
    """Appends the primitives of the encoding to one growing buffer."""

    def __init__(self) -> None:
        self.out = bytearray()

    def u8(self, value: int) -> None:
        self.out += _U8.pack(value)

    def u32(self, value: int) -> None:
        self.out += _U32.pack(value)

    def i32(self, value: int) -> None:
        self.out += _I32.pack(value)

    def u64(self, value: int) -> None:
        self.out += _U64.pack(value)

    def raw(self, data: bytes) -> None:
        self.u32(len(data))
        self.out += data

    def text(self, text: str) -> None:
        self.raw(text.encode("utf-8"))

    def opt(self, value: T | None, item: Callable[[T], None]) -> None:
        if value is None:
            self.u8(0)
        else:
            self.u8(1)
            item(value)

    def seq(self, items: Iterable[T], item: Callable[[T], None]) -> None:
        values = list(items)
        self.u32(len(values))
        for v in values:
            item(v)

    def strings(self, items: Iterable[str]) -> None:
        self.seq(items, self.text)

    def pair(self, kv: tuple[str, str]) -> None:
        self.text(kv[0])
        self.text(kv[1])


def entry_record(entry: ManifestEntry | None) -> bytes:
    """The canonical bytes of a manifest entry; None (no manifest entry, or no manifest) too."""
    w = _Writer()
    w.text(ENTRY_RECORD_TAG)
    w.opt(entry, lambda e: _entry(w, e))
    return bytes(w.out)


def named_data_record(key: str, layout: TensorLayout | None) -> bytes:
    """The canonical bytes of one named-data key and its tensor layout (its segment index is not
    part of it: thinning renumbers segments)."""
    w = _Writer()
    w.text(NAMED_DATA_RECORD_TAG)
    w.text(key)
    w.opt(layout, lambda lay: _layout(w, lay))
    return bytes(w.out)


def _entry(w: _Writer, e: ManifestEntry) -> None:
    w.text(e.name)
    _requirements(w, e.requires)
    w.opt(e.signature, lambda s: _signature(w, s))
    w.strings(e.named_data)
    w.opt(e.source_digest, w.text)
    w.opt(e.payload_sha256, w.raw)
    w.seq(e.provenance, w.pair)
    w.opt(e.executorch_backends, w.strings)


def _requirements(w: _Writer, r: Requirements) -> None:
    w.strings(r.os)
    w.strings(r.arch)
    w.strings(r.cpu_features)

    def target(t: VersionConstraint) -> None:
        w.u8(t.match)
        w.u32(t.major)
        w.u32(t.minor)

    def accelerator(a: AcceleratorRequirement) -> None:
        w.text(a.kind)
        w.seq(a.targets, target)
        w.u64(a.min_memory_bytes)

    def abi(r: AbiRange) -> None:
        w.u32(r.min)
        w.u32(r.max)

    w.seq(r.accelerators, accelerator)
    w.u64(r.min_memory_bytes)
    w.opt(r.backend_abi, abi)


def _signature(w: _Writer, s: Signature) -> None:
    def dim(d: Dim) -> None:
        w.u64(d.size)
        w.opt(d.symbol, w.text)

    def tensor(t: TensorSpec) -> None:
        w.text(t.dtype)
        w.seq(t.shape, dim)
        w.opt(t.name, w.text)

    def method(m: Method) -> None:
        w.text(m.name)
        for part in (m.inputs, m.outputs, m.buffers):
            w.seq(part, tensor)

    w.seq(s.methods, method)


def _layout(w: _Writer, lay: TensorLayout) -> None:
    w.text(lay.dtype)
    w.seq(lay.sizes, w.i32)
    w.seq(lay.dim_order, w.u8)
