"""The canonical record encoding of manifest entries and named-data keys (specs/nfat-signature.md
section 4): the bytes a signed statement's `record_sha256` digests are computed over.

The flatbuffer bytes of a manifest are not stable: thinning re-encodes the manifest (vtables are
shared differently, segments renumbered), and two writers may lay out the same tables in any order.
The canonical encoding is a function of the decoded records alone, field by field in schema order,
so every encoder of the same records, and every thinned copy, gives the same bytes. It covers every
field manifest revision 2 defines; a segment index, the manifest's revision and the position of a
table in the buffer are not part of it.

The primitives (`u8`, `u32`, `i32`, `u64`, `str`, `opt(X)`, `list(X)`) are written by the one
canonical writer, fatpte.value.canonical.
"""

from __future__ import annotations

from typing import Final

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
from fatpte.value.canonical import CanonicalWriter

# The first field of every record: the record kind and the encoding's revision, so a digest of one
# kind can never equal a digest of another, and a later revision of the encoding is told apart.
ENTRY_RECORD_TAG: Final = "nfat.manifest.entry/1"
# The record of an entry that states a requirement of manifest revision 4 (an accelerator's
# `device` or `capabilities`, or the device's identity: `cpu_cores`, `min_core`, `soc`): revision
# 1's fields, each accelerator followed by its `device` and `capabilities`, and the identity
# requirements after `backend_abi` (specs/nfat-signature.md 4), so a signature covers them and a
# verifier that knows only /1 computes another digest (it fails closed).
ENTRY_RECORD_TAG_R4: Final = "nfat.manifest.entry/2"
NAMED_DATA_RECORD_TAG: Final = "nfat.named_data/1"


def entry_record(entry: ManifestEntry | None) -> bytes:
    """The canonical bytes of a manifest entry; None (no manifest entry, or no manifest) too."""
    w = CanonicalWriter()
    r4 = entry is not None and uses_revision4_requirements(entry.requires)
    w.text(ENTRY_RECORD_TAG_R4 if r4 else ENTRY_RECORD_TAG)
    w.opt(entry, lambda e: _entry(w, e, r4))
    return w.result()


def uses_revision4_requirements(r: Requirements) -> bool:
    """Whether `r` states a requirement manifest revision 4 added: an accelerator's `device` or
    `capabilities`, or the device's identity."""
    return r.names_device or any(a.device or a.capabilities for a in r.accelerators)


def named_data_record(key: str, layout: TensorLayout | None) -> bytes:
    """The canonical bytes of one named-data key and its tensor layout (its segment index is not
    part of it: thinning renumbers segments)."""
    w = CanonicalWriter()
    w.text(NAMED_DATA_RECORD_TAG)
    w.text(key)
    w.opt(layout, lambda lay: _layout(w, lay))
    return w.result()


def _entry(w: CanonicalWriter, e: ManifestEntry, r4: bool) -> None:
    w.text(e.name)
    _requirements(w, e.requires, r4)
    w.opt(e.signature, lambda s: _signature(w, s))
    w.strings(e.named_data)
    w.opt(e.source_digest, w.text)
    w.opt(e.payload_sha256, w.raw)
    w.seq(e.provenance, w.pair)
    w.opt(e.executorch_backends, w.strings)


def _requirements(w: CanonicalWriter, r: Requirements, r4: bool) -> None:
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
        if r4:  # record /2: str device ("" when absent), list(str) capabilities
            w.text(a.device)
            w.strings(a.capabilities)

    def abi(r: AbiRange) -> None:
        w.u32(r.min)
        w.u32(r.max)

    w.seq(r.accelerators, accelerator)
    w.u64(r.min_memory_bytes)
    w.opt(r.backend_abi, abi)
    if r4:  # record /2: the identity requirements
        w.strings(r.cpu_cores)
        w.opt(r.min_core, w.text)
        w.strings(r.soc)


def _signature(w: CanonicalWriter, s: Signature) -> None:
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


def _layout(w: CanonicalWriter, lay: TensorLayout) -> None:
    w.text(lay.dtype)
    w.seq(lay.sizes, w.i32)
    w.seq(lay.dim_order, w.u8)
