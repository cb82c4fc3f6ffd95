"""Write the conformance vectors of specs/vectors/ and their index, deterministically.

Each valid vector is a container written by `fatpte.pack` (or, for grown record sizes, which pack
cannot write, by `assemble` below, built on fatpte/format/layout.py). Each invalid vector takes one valid vector and changes exactly the bytes of
one defect, named in its file name; when the defect lies in the header or the tables and the
changed header still delimits its tables inside the file, header_checksum is recomputed so that
the rule the vector is about, not the checksum, is what fails.

The expected outcome of every vector (error code, offset, field path) is declared here from the
layout, independently of the validator; generation fails when `fatpte.validate_buffer` or
`fatpte.open` disagree with a declaration, and tests/conformance/test_vectors.py fails when the committed
files differ from what this script writes. The entry chosen on each named device profile
(specs/devices) is recorded from `fatpte.select`, so that the C++ loader is held to it and any
change of choice shows as a diff of the index.

Invalid vectors whose defect is inside the manifest change one field of it (found by following
the flatbuffer's offsets) and update manifest_checksum and header_checksum, so that the
manifest's own rule fails.

    python tools/gen_vectors.py            # rewrite specs/vectors/
    python tools/gen_vectors.py --out DIR  # write elsewhere (the tests do)
"""

from __future__ import annotations

import argparse
import builtins
import hashlib
import json
import math
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

import fatpte
from fatpte.errors import ErrorCode, Severity
from fatpte.fileio.checksum import crc32c
from fatpte.format import layout as L
from tools import gen_calls_vectors, gen_identity_vectors, gen_openvino_vectors, gen_verdicts_vectors

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "specs" / "vectors"
INDEX = "index.json"
SUFFIX = ".nfat"

_HDR = L.RECORDS["v2_header"]
_ENT = L.RECORDS["v2_entry"]
_SEG = L.RECORDS["v2_segment"]
_HDR1 = L.RECORDS["v1_header"]
_ENT1 = L.RECORDS["v1_entry"]

# Codes found by reading the payload, segment, manifest or padding bytes (the content checks
# after the structural pass, spec section 6), and the manifest's own rules. `fatpte.open` reads
# the header and tables only, so it opens such files; every other code is structural and `open`
# raises it.
CONTENT_CODES = frozenset({
    ErrorCode.PADDING_NOT_ZERO,
    ErrorCode.PAYLOAD_CHECKSUM_MISMATCH,
    ErrorCode.PAYLOAD_KIND_MISMATCH,
    ErrorCode.SEGMENT_CHECKSUM_MISMATCH,
    ErrorCode.MANIFEST_CHECKSUM_MISMATCH,
    ErrorCode.BAD_MANIFEST_IDENTIFIER,
    ErrorCode.MANIFEST_CORRUPT,
    ErrorCode.MANIFEST_ENTRY_MISSING,
    ErrorCode.MANIFEST_ENTRY_UNKNOWN,
    ErrorCode.DUPLICATE_MANIFEST_ENTRY,
    ErrorCode.SIGNATURE_MISMATCH,
    ErrorCode.SOURCE_DIGEST_MISMATCH,
    ErrorCode.NAMED_DATA_KEY_MISSING,
    ErrorCode.NAMED_DATA_BAD_SEGMENT,
    ErrorCode.NAMED_DATA_KEYS_UNSORTED,
    ErrorCode.SEGMENT_UNREFERENCED,
    ErrorCode.PAYLOAD_DIGEST_MISMATCH,
    ErrorCode.MANIFEST_VALUE_INVALID,
    ErrorCode.NAMED_DATA_LAYOUT_MISMATCH,
    ErrorCode.MANIFEST_OVER_BUDGET,
    ErrorCode.SIGNATURE_CHECKSUM_MISMATCH,
    ErrorCode.GOLDEN_KEY_INVALID,
    ErrorCode.GOLDEN_CALL_MISMATCH,
    ErrorCode.GOLDEN_DIGEST_MISMATCH,
    ErrorCode.ET_BAD_IDENTIFIER,
    ErrorCode.ET_TRUNCATED,
    ErrorCode.ET_BAD_HEADER,
    ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS,
    ErrorCode.ET_FLATBUFFER_TOO_COMPLEX,
    ErrorCode.ET_BAD_REFERENCE,
    ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS,
    ErrorCode.ET_BAD_VALUE,
    ErrorCode.PROGRAM_SIGNATURE_MISMATCH,
    ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM,
    ErrorCode.EXECUTORCH_BACKENDS_MISMATCH,
    ErrorCode.PROGRAM_DIGEST_MISMATCH,
    ErrorCode.FAT_DELEGATE_TOO_DEEP,
})

U64_MAX = (1 << 64) - 1
PROGRAM_FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "executorch" / "mlp_portable.pte"
U32_MAX = (1 << 32) - 1


# ---------------------------------------------------------------------------------------------
# Deterministic payload bytes
# ---------------------------------------------------------------------------------------------


def blob(seed: str, size: int, kind: bytes | None = None) -> bytes:
    """`size` pseudo-random bytes derived from `seed`. With `kind`, the bytes start like a
    flatbuffer whose file identifier is `kind` (root offset 8, identifier at 4..8), which is
    what pack records as the payload kind."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{seed}/{counter}".encode()).digest()
        counter += 1
    data = out[:size]
    if kind is not None:
        assert size >= 16 and len(kind) == 4
        data[0:8] = (8).to_bytes(4, "little") + kind
    else:
        # A root offset that no flatbuffer can have keeps pack from taking bytes 4..8 for a kind.
        data[0:4] = b"\xff\xff\xff\xff"[: min(4, size)]
    return bytes(data)


# ---------------------------------------------------------------------------------------------
# Writers of valid containers
# ---------------------------------------------------------------------------------------------


def packed(specs: Sequence[fatpte.Specialization], *, version: int = 2, alignment: int | None = None,
           named_data: dict[str, bytes | fatpte.NamedData] | None = None) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "c.nfat"
        fatpte.pack(specs, dest, version=version, alignment=alignment, named_data=named_data)
        return dest.read_bytes()


@dataclass(frozen=True)
class Part:
    """One entry for `assemble`."""

    name: str
    backend_id: str
    payload: bytes
    alignment: int = L.DEFAULT_ALIGNMENT


def _align(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def assemble(parts: Sequence[Part], *, header_size: int, entry_size: int, segment_entry_size: int) -> bytes:
    """A v2 container with grown record sizes, which pack (writing this revision's sizes) cannot
    make: header, entry table, then each payload at the next multiple of its alignment; bytes
    past the fields this revision defines, and gaps, are zero."""
    cursor = header_size + len(parts) * entry_size
    payload_at: list[int] = []
    for p in parts:
        payload_at.append(_align(cursor, p.alignment))
        cursor = payload_at[-1] + len(p.payload)
    out = bytearray(cursor)
    out[0:L.V2_HEADER_SIZE] = _HDR.build({
        "magic": L.MAGIC, "version": L.VERSION_2, "header_size": header_size, "entry_size": entry_size,
        "entry_count": len(parts), "segment_entry_size": segment_entry_size, "segment_count": 0,
        "flags": 0, "container_size": cursor, "manifest_offset": 0, "manifest_size": 0, "manifest_checksum": 0,
        "header_checksum": 0,
    })
    for i, (p, at) in enumerate(zip(parts, payload_at)):
        base = header_size + i * entry_size
        out[base : base + _ENT.size] = _ENT.build({
            "name": p.name.encode().ljust(32, b"\0"), "backend_id": p.backend_id.encode().ljust(32, b"\0"),
            "offset": at, "size": len(p.payload), "payload_kind": b"\0\0\0\0", "alignment": p.alignment,
            "checksum": crc32c(p.payload), "priority": 0, "flags": 0, "reserved": 0,
        })
        out[at : at + len(p.payload)] = p.payload
    reseal(out)
    return bytes(out)


def reseal(buf: bytearray) -> bool:
    """Recompute header_checksum when the header delimits its tables inside `buf` (and covers
    the checksum field); returns whether it did."""
    if len(buf) < L.V2_HEADER_SIZE or bytes(buf[0:4]) != L.MAGIC or _u(buf, 4, 4) != L.VERSION_2:
        return False
    h = dict(zip(_HDR.fields, _HDR.codec.unpack_from(buf, 0)))
    end = h["header_size"] + h["entry_count"] * h["entry_size"] + h["segment_count"] * h["segment_entry_size"]
    if h["header_size"] < L.V2_HEADER_SIZE or end > len(buf):
        return False
    at = L.HEADER_CHECKSUM_OFFSET
    value = crc32c(bytes(buf[0:at]) + b"\0\0\0\0" + bytes(buf[at + 4 : end]))
    buf[at : at + 4] = value.to_bytes(4, "little")
    return True


def _u(buf: bytes | bytearray, at: int, size: int) -> int:
    return int.from_bytes(buf[at : at + size], "little")


# ---------------------------------------------------------------------------------------------
# Vectors
# ---------------------------------------------------------------------------------------------


@dataclass
class Vector:
    """One file and what a conforming reader must say about it."""

    name: str
    data: bytes
    description: str
    base: str | None = None
    code: ErrorCode | None = None  # None: valid
    offset: int | None = None
    field: str | None = None
    warnings: tuple[ErrorCode, ...] = ()
    changed: list[tuple[int, int]] = dc_field(default_factory=list)
    rule: str | None = None  # the rule of specs/nfat-manifest.md section 2 the defect breaks ("2.1.5")
    # Signed vectors: what `verify` with the trusted keys says (code, offset, field), and the
    # entries it reports as thinned. None: not a signing vector.
    verify: tuple[ErrorCode | None, int | None, str | None] | None = None
    thinned: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()  # the trusted-key files verify reads (default: TRUSTED_KEY_FILES)
    # What verify with the downgrade check for a device profile says (specs/nfat-signature.md
    # section 6 step 11): (device, code, offset, field); None: not declared.
    downgrade: tuple[str, ErrorCode | None, int | None, str | None] | None = None
    # A file written beside this one, named as it plus the suffix given (a detached signature that
    # must not be found: section 6 step 1), and its bytes.
    sidecar: tuple[str, bytes] | None = None
    # The signed entries whose golden calls the signature does not vouch for (section 6.1: a signed
    # self-test does not make them); None: not declared.
    unsigned_golden: tuple[str, ...] | None = None

    @property
    def file(self) -> str:
        return self.name + SUFFIX


class Edit:
    """A copy of a valid vector being given one defect; records every byte range it changes."""

    def __init__(self, base: Vector) -> None:
        self.base = base
        self.buf = bytearray(base.data)
        self.changed: list[tuple[int, int]] = []

    # Field locations, read from the (possibly edited) header of the copy.
    def entry_at(self, i: int, fld: str = "name") -> int:
        if _u(self.buf, 4, 4) == L.VERSION_1:
            return _HDR1.size + i * _ENT1.size + _ENT1.offsets[fld][0]
        return _u(self.buf, 8, 4) + i * _u(self.buf, 12, 4) + _ENT.offsets[fld][0]

    def segment_at(self, i: int, fld: str = "offset") -> int:
        header_size, entry_size, count = _u(self.buf, 8, 4), _u(self.buf, 12, 4), _u(self.buf, 16, 4)
        return header_size + count * entry_size + i * _u(self.buf, 20, 4) + _SEG.offsets[fld][0]

    def entry(self, i: int, fld: str) -> int:
        """An entry field's current value (integers only)."""
        rec = _ENT1 if _u(self.buf, 4, 4) == L.VERSION_1 else _ENT
        at, size = self.entry_at(i, fld), rec.offsets[fld][1]
        return int.from_bytes(self.buf[at : at + size], "little", signed=fld == "priority")

    def header(self, fld: str) -> int:
        at, size = _HDR.offsets[fld]
        return _u(self.buf, at, size)

    def put(self, at: int, data: bytes) -> int:
        self.buf[at : at + len(data)] = data
        self.changed.append((at, at + len(data)))
        return at

    def put_int(self, at: int, size: int, value: int, *, signed: bool = False) -> int:
        return self.put(at, value.to_bytes(size, "little", signed=signed))

    def set_header(self, fld: str, value: int | bytes) -> int:
        at, size = _HDR.offsets[fld]
        if _u(self.buf, 4, 4) == L.VERSION_1:
            at, size = _HDR1.offsets[fld]
        return self.put(at, value) if isinstance(value, bytes) else self.put_int(at, size, value)

    def set_entry(self, i: int, fld: str, value: int | bytes) -> int:
        rec = _ENT1 if _u(self.buf, 4, 4) == L.VERSION_1 else _ENT
        at, size = self.entry_at(i, fld), rec.offsets[fld][1]
        if isinstance(value, bytes):
            return self.put(at, value.ljust(size, b"\0") if fld in ("name", "backend_id") else value)
        return self.put_int(at, size, value, signed=fld == "priority")

    def set_segment(self, i: int, fld: str, value: int) -> int:
        return self.put_int(self.segment_at(i, fld), _SEG.offsets[fld][1], value)

    def manifest_field(self, path: str) -> tuple[int, int]:
        return ManifestMap(self.buf, self.header("manifest_offset")).locate(path)

    def set_manifest(self, path: str, value: int | bytes) -> int:
        """Change one manifest field (same size), then manifest_checksum and header_checksum."""
        at, size = self.manifest_field(path)
        data = value if isinstance(value, bytes) else value.to_bytes(size, "little")
        assert len(data) == size, (path, size, data)
        self.put(at, data)
        self.reseal_manifest()
        return at

    def reseal_manifest(self) -> None:
        off, size = self.header("manifest_offset"), self.header("manifest_size")
        self.set_header("manifest_checksum", crc32c(bytes(self.buf[off : off + size])))
        self.seal()

    def truncate(self, length: int) -> None:
        del self.buf[length:]

    def append(self, data: bytes) -> None:
        self.changed.append((len(self.buf), len(self.buf) + len(data)))
        self.buf += data

    def seal(self) -> None:
        before = bytes(self.buf[L.HEADER_CHECKSUM_OFFSET : L.HEADER_CHECKSUM_OFFSET + 4])
        if reseal(self.buf) and self.buf[L.HEADER_CHECKSUM_OFFSET : L.HEADER_CHECKSUM_OFFSET + 4] != before:
            self.changed.append((L.HEADER_CHECKSUM_OFFSET, L.HEADER_CHECKSUM_OFFSET + 4))

    def vector(self, name: str, description: str, code: ErrorCode | None, offset: int | None,
               fld: str | None, warnings: tuple[ErrorCode, ...] = ()) -> Vector:
        return Vector(name, bytes(self.buf), description, self.base.name, code, offset, fld, warnings,
                      sorted(set(self.changed)))


class ManifestMap:
    """Finds the bytes of one manifest field by its path (`entries[1].signature.methods[0].name`),
    following the flatbuffer's offsets with the slot numbers of fatpte.manifest.codec.SCHEMA. Just enough
    to aim a defect at one field of a valid manifest; it trusts the buffer."""

    def __init__(self, data: bytes | bytearray, base: int) -> None:
        self.d, self.base = bytes(data[base:]), base

    def _ref(self, at: int) -> int:
        return at + _u(self.d, at, 4)

    def _field(self, table: int, name: str, table_name: str) -> tuple[int, Any]:
        from fatpte.manifest.codec import SCHEMA

        fields = SCHEMA[table_name]
        slot = next(i for i, f in enumerate(fields) if f.name == name)
        vt = table - int.from_bytes(self.d[table : table + 4], "little", signed=True)
        off = _u(self.d, vt + 4 + 2 * slot, 2) if 4 + 2 * slot < _u(self.d, vt, 2) else 0
        if not off:
            raise KeyError(f"{table_name}.{name} is absent")
        return table + off, fields[slot]

    @property
    def root(self) -> int:
        """The root table's position in the manifest."""
        return self._ref(0)

    def _walk(self, path: str) -> tuple[int, str, int, Any]:
        """(table, its type, slot of the last part, its field) of a path whose last part is a
        field (`entries[1].name`) or an element (`entries[1]`), all relative to the manifest."""
        table, table_name = self._ref(0), "Manifest"
        parts = path.split(".")
        for n, part in enumerate(parts):
            name, _, index = part.partition("[")
            at, f = self._field(table, name, table_name)
            slot = at if not index else self._ref(at) + 4 + 4 * int(index[:-1])
            if n == len(parts) - 1:
                return table, table_name, slot, f
            table, table_name = self._ref(slot), f.target
        raise KeyError(path)

    def slot(self, path: str) -> int:
        """File offset where the value of `path` is stored: a scalar, or the uoffset of an offset
        field or of a vector element (`entries[1]`, `entries[0].named_data[1]`)."""
        return self.base + self._walk(path)[2]

    def target(self, path: str) -> int:
        """File offset of what the uoffset at `path` points to (a table, string or vector)."""
        return self.base + self._ref(self._walk(path)[2])

    def vtable(self, path: str) -> int:
        """File offset of the vtable of the table at `path` (the root for "")."""
        t = self.target(path) - self.base if path else self.root
        return self.base + t - int.from_bytes(self.d[t : t + 4], "little", signed=True)

    def locate(self, path: str) -> tuple[int, int]:
        """(file offset, size) of the field's value: a scalar, a string's bytes, a vector's u32
        length (path without index), one byte of a [u8] vector, or a table's start (size 0)."""
        table, table_name = self._ref(0), "Manifest"
        parts = path.split(".")
        for n, part in enumerate(parts):
            name, _, index = part.partition("[")
            at, f = self._field(table, name, table_name)
            last = n == len(parts) - 1
            if f.kind in ("u8", "u32", "u64", "f64"):
                return self.base + at, {"u8": 1, "u32": 4, "u64": 8, "f64": 8}[f.kind]
            target = self._ref(at)
            if f.kind == "string":
                return self.base + target + 4, _u(self.d, target, 4)
            if f.kind.startswith("[") and not index:
                return self.base + target, 4
            if f.kind == "[u8]":
                return self.base + target + 4 + int(index[:-1]), 1
            if f.kind == "[i32]":
                return self.base + target + 4 + 4 * int(index[:-1]), 4
            if f.kind.startswith("["):
                target = self._ref(target + 4 + 4 * int(index[:-1]))
                if f.kind == "[string]":
                    return self.base + target + 4, _u(self.d, target, 4)
            table, table_name = target, f.target
            if last:
                return self.base + table, 0
        raise KeyError(path)


def with_manifest(entries: Sequence[tuple[str, str, bytes]], manifest: bytes, segments: Sequence[bytes]) -> bytes:
    """A v2 container holding exactly these manifest bytes, in the layout pack writes: header,
    entry and segment tables, the manifest at the next multiple of 8, payloads and segments each
    at the next multiple of 64. For manifests pack cannot write (shared objects, defects); empty
    `manifest`: none (its offset 0), for entries pack would refuse (a program beside what it says)."""
    tables_end = L.V2_HEADER_SIZE + len(entries) * L.V2_ENTRY_SIZE + len(segments) * L.V2_SEGMENT_SIZE
    moff = _align(tables_end, L.MANIFEST_ALIGNMENT) if manifest else 0
    cursor = moff + len(manifest) if manifest else tables_end
    at: list[int] = []
    placed: dict[bytes, int] = {}  # identical payloads are stored once, as pack stores them
    for i, blob_ in enumerate([p for _, _, p in entries] + list(segments)):
        if i < len(entries) and blob_ and blob_ in placed:
            at.append(placed[blob_])
            continue
        at.append(_align(cursor, L.DEFAULT_ALIGNMENT))
        cursor = at[-1] + len(blob_)
        if i < len(entries):
            placed[blob_] = at[-1]
    out = bytearray(cursor)
    out[0:L.V2_HEADER_SIZE] = _HDR.build({
        "magic": L.MAGIC, "version": L.VERSION_2, "header_size": L.V2_HEADER_SIZE, "entry_size": L.V2_ENTRY_SIZE,
        "entry_count": len(entries), "segment_entry_size": L.V2_SEGMENT_SIZE, "segment_count": len(segments),
        "flags": 0, "container_size": cursor, "manifest_offset": moff, "manifest_size": len(manifest),
        "manifest_checksum": crc32c(manifest), "header_checksum": 0,
    })
    for i, (name, backend, payload) in enumerate(entries):
        base = L.V2_HEADER_SIZE + i * L.V2_ENTRY_SIZE
        out[base : base + _ENT.size] = _ENT.build({
            "name": name.encode().ljust(32, b"\0"), "backend_id": backend.encode().ljust(32, b"\0"),
            "offset": at[i], "size": len(payload), "payload_kind": b"\0\0\0\0", "alignment": L.DEFAULT_ALIGNMENT,
            "checksum": crc32c(payload), "priority": 0, "flags": 0, "reserved": 0,
        })
        out[at[i] : at[i] + len(payload)] = payload
    for k, seg in enumerate(segments):
        base = L.V2_HEADER_SIZE + len(entries) * L.V2_ENTRY_SIZE + k * L.V2_SEGMENT_SIZE
        where = at[len(entries) + k]
        out[base : base + _SEG.size] = _SEG.build({"offset": where, "size": len(seg),
                                                  "alignment": L.DEFAULT_ALIGNMENT, "checksum": crc32c(seg),
                                                  "flags": 0, "reserved": 0})
        out[where : where + len(seg)] = seg
    out[moff : moff + len(manifest)] = manifest
    reseal(out)
    return bytes(out)


# The manifest of v2-manifest-rules: every table type of the schema, objects shared the way a
# flatbuffers writer may share them (one key string for an entry's list and the key table, one
# signature table for both entries, one provenance pair referenced RULES_REFS times), and the
# strings its invalid derivations point offsets at (an empty one, one longer than 4096 bytes).
RULES_REFS = 600
RULES_PAYLOADS = (("cpu", "xnnpack", blob("rules-cpu", 48)), ("gpu", "cuda", blob("rules-gpu", 48, b"CUDA")))
RULES_SEGMENTS = (blob("rules-s0", 64), blob("rules-s1", 16))


class ManifestWriter:
    """A flatbuffers builder that writes manifest tables by the field names of
    fatpte.manifest.codec.SCHEMA and shares what it is told to share: strings by value, and any
    table or vector whose offset is used twice. For manifests fatpte's writer never makes."""

    def __init__(self) -> None:
        import flatbuffers

        self.b = flatbuffers.Builder(0)
        self._text: dict[str, int] = {}

    def string(self, value: str) -> int:
        if value not in self._text:
            self._text[value] = int(self.b.CreateString(value))
        return self._text[value]

    def bytes(self, value: bytes) -> int:
        return int(self.b.CreateByteVector(value))

    def table(self, table_name: str, /, **values: Any) -> int:
        from fatpte.manifest.codec import SCHEMA

        fields = SCHEMA[table_name]
        self.b.StartObject(len(fields))
        for slot, f in enumerate(fields):
            if f.name not in values:
                continue
            v = values[f.name]
            if f.kind == "u8":
                self.b.PrependUint8Slot(slot, v, 0)
            elif f.kind == "u32":
                self.b.PrependUint32Slot(slot, v, 0)
            elif f.kind == "u64":
                self.b.PrependUint64Slot(slot, v, 0)
            else:
                self.b.PrependUOffsetTRelativeSlot(slot, v, 0)
        return int(self.b.EndObject())

    def vector(self, items: Sequence[int]) -> int:
        self.b.StartVector(4, len(items), 4)
        for item in reversed(items):
            self.b.PrependUOffsetTRelative(item)
        return int(self.b.EndVector())

    def ints(self, values: Sequence[int]) -> int:
        """A vector of i32 (TensorLayout.sizes)."""
        self.b.StartVector(4, len(values), 4)
        for v in reversed(values):
            self.b.PrependInt32(v)
        return int(self.b.EndVector())

    def finish(self, root: int) -> builtins.bytes:  # `bytes` in this class is the method above
        self.b.Finish(root, L.MANIFEST_IDENTIFIER)
        return bytes(self.b.Output())


def rules_manifest() -> bytes:
    w = ManifestWriter()
    s, table, vector = w.string, w.table, w.vector
    for word in ("", "x" * 4200, "w.a", "w.b", "forward", "reset", "float32", "n", "state", "tool", "fatpte",
                 "note", "empty", "cpu", "gpu", "linux", "x86_64", "avx2", "cuda"):
        s(word)
    d3 = table("Dim", size=3)
    dn = table("Dim", symbol=s("n"))
    x = table("TensorSpec", dtype=s("float32"), shape=vector([d3, dn]))
    y = table("TensorSpec", dtype=s("float32"), shape=vector([d3]))
    state = table("TensorSpec", name=s("state"), dtype=s("float32"), shape=vector([]))
    forward = table("Method", name=s("forward"), inputs=vector([x]), outputs=vector([y]), buffers=vector([state]))
    reset = table("Method", name=s("reset"), inputs=vector([]), outputs=vector([]), buffers=vector([]))
    sig = table("Signature", methods=vector([forward, reset]))
    digest = s("sha256:" + hashlib.sha256(b"rules source").hexdigest())
    tool = table("KeyValue", key=s("tool"), value=s("fatpte"))
    note = table("KeyValue", key=s("note"), value=s("x" * 4200))
    empty = table("KeyValue", key=s("empty"), value=s(""))
    sha = w.bytes(hashlib.sha256(RULES_PAYLOADS[0][2]).digest())
    cpu = table("Entry", name=s("cpu"), signature=sig, named_data=vector([s("w.a"), s("w.b")]),
                source_digest=digest, payload_sha256=sha, provenance=vector([tool] * RULES_REFS + [note, empty]))
    target = table("VersionConstraint", match=1, major=8, minor=0)
    acc = table("AcceleratorRequirement", kind=s("cuda"), targets=vector([target]), min_memory_bytes=1 << 30)
    abi = table("AbiRange", min=1, max=3)
    req = table("Requirements", os=vector([s("linux")]), arch=vector([s("x86_64")]), cpu_features=vector([s("avx2")]),
                accelerators=vector([acc]), min_memory_bytes=1 << 30, backend_abi=abi)
    gpu = table("Entry", name=s("gpu"), requires=req, signature=sig, named_data=vector([s("w.a")]),
                source_digest=digest)
    keys = vector([table("NamedData", key=s("w.a")), table("NamedData", key=s("w.b"), segment=1)])
    return w.finish(table("Manifest", revision=1, entries=vector([cpu, gpu]), named_data=keys))


def _hat(fld: str) -> int:
    return _HDR.offsets[fld][0]


def valid_vectors() -> list[Vector]:
    S = fatpte.Specialization
    out: list[Vector] = []

    def add(name: str, data: bytes, description: str, warnings: tuple[ErrorCode, ...] = ()) -> None:
        out.append(Vector(name, data, description, warnings=warnings))

    add("v2-one-entry", packed([S("xnnpack", blob("one", 100, b"XNPK"))]),
        "one entry, default alignment 64, payload kind XNPK")
    add("v2-many-entries", packed([
        S("xnnpack", blob("fp32", 300, b"XH00"), name="xnnpack-fp32"),
        S("xnnpack", blob("int8", 120, b"XH00"), name="xnnpack-int8", priority=10),
        S("vulkan", blob("vk", 77), priority=-5),
        S("cuda", blob("cuda", 513, b"CUDA"), name="cuda-sm80", alignment=256, priority=2_000_000_000),
        S("portable", blob("portable", 33), alignment=8),
    ]), "five entries: two variants of one backend, priorities, per-entry alignments")
    shared = blob("shared", 200, b"SHRD")
    add("v2-shared-payload", packed([
        S("xnnpack", shared, name="a"), S("vulkan", blob("other", 64)), S("cuda", shared, name="c", alignment=128),
    ]), "entries a and c have byte-identical payloads stored once, at an offset fitting both alignments")
    add("v2-zero-size-payload", packed([S("first", blob("z1", 50)), S("empty", b""), S("last", blob("z2", 20))]),
        "an entry with an empty payload between two others")
    add("v2-only-zero-size-payload", packed([S("empty", b"")]),
        "the only entry has an empty payload, placed at the end of the container")
    for shift in range(17):
        a = 1 << shift
        # Two entries show the padding between payloads; past 1 KiB one keeps the files small.
        specs = [S("cpu", blob(f"align{a}", 40))] + ([S("gpu", blob(f"align{a}b", 24))] if a <= 1024 else [])
        add(f"v2-alignment-{a}", packed(specs, alignment=a), f"{len(specs)} entries aligned to {a}")
    add("v2-id-32-bytes", packed([S("b" * 32, blob("long", 24), name="N" * 32)]),
        "a name and a backend id of exactly 32 bytes, with no terminating NUL")
    add("v2-id-alphabet", packed([S("Az09_.-", blob("alpha", 24), name="-._zA9")]),
        "ids using every character class of [A-Za-z0-9_.-]")
    add("v2-priority-extremes", packed([
        S("low", blob("low", 24), priority=-(1 << 31)), S("high", blob("high", 24), priority=(1 << 31) - 1)]),
        "priorities at both ends of i32")
    add("v2-short-payload", packed([S("tiny", b"\x01\x02\x03")]),
        "a 3-byte payload: too short for a payload kind, so the kind is zero")
    signature: Any = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 3]}],
                              "outputs": [{"dtype": "float32", "shape": [1]}]}]}
    digest = "sha256:" + hashlib.sha256(b"source program").hexdigest()
    add("v2-manifest", packed([
        S("xnnpack", blob("man-e", 48), name="cpu", requires={"arch": ["x86_64"], "cpu_features": ["avx2"]}),
        S("cuda", blob("man-g", 48, b"CUDA"), name="gpu",
          requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80"]}]}),
    ]), "a manifest with requirements for both entries")
    add("v2-selection-matrix", packed([
        S("cuda", blob("sel-h100", 64, b"CUDA"), name="cuda-sm90a", priority=30,
          requires={"os": ["linux"], "accelerators": [{"kind": "cuda", "targets": ["sm_90a"]}]}),
        S("cuda", blob("sel-a100", 64, b"CUDA"), name="cuda-sm80", priority=20,
          requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80", "sm_86"],
                                      "min_memory_bytes": 16 << 30}]}),
        S("mps", blob("sel-metal", 64), name="metal", priority=20,
          requires={"os": ["macos", "ios"], "accelerators": [{"kind": "metal", "targets": [">=3.0"]}]}),
        S("xnnpack", blob("sel-amx", 64, b"XH00"), name="xnnpack-amx", priority=10,
          requires={"arch": ["x86_64"], "cpu_features": ["amx_tile", "amx_int8"]}),
        S("xnnpack", blob("sel-avx2", 64, b"XH00"), name="xnnpack-avx2", priority=5,
          requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}),
        S("xnnpack", blob("sel-i8mm", 64, b"XH00"), name="xnnpack-i8mm", priority=5,
          requires={"arch": ["aarch64"], "cpu_features": ["i8mm"], "min_memory_bytes": 4 << 30}),
        S("portable", blob("sel-portable", 64), name="portable", priority=-100),
    ]), "seven specializations whose requirements pick a different one on each named device profile")
    add("v2-named-data", packed([
        S("xnnpack", blob("nd-e0", 40), name="cpu", alignment=8, named_data=["w.a", "w.b"], signature=signature,
          source_digest=digest, payload_sha256=True),
        S("vulkan", blob("nd-e1", 40), name="gpu", alignment=128, named_data=["w.a"], signature=signature,
          source_digest=digest, payload_sha256=True),
    ], named_data={"w.a": blob("nd-s0", 96), "w.b": blob("nd-s1", 10)}),
        "two entries sharing named data in two segments, with signatures, source digests and payload SHA-256")
    def state(name: str | None) -> Any:
        buffer: dict[str, object] = {"dtype": "float32", "shape": [1, 8, 4]}
        return {"methods": [{**signature["methods"][0], "buffers": [{"name": name, **buffer} if name else buffer]}]}

    add("v2-signature-state", packed([
        S("portable", blob("st-e0", 40), signature=state(None)),
        S("xnnpack", blob("st-e1", 40), signature=state("k_cache")),
        S("native", blob("st-e2", 40), signature=state("k_cache")),
    ]), "three entries with one buffer each, named by two of them only: names are compared only where "
        "both entries have one, so they agree")
    layout: Any = {"dtype": "float32", "sizes": [2, 3, 4], "dim_order": [0, 2, 1]}
    add("v3-golden", golden_packed(), "v2-named-data's two entries with two golden calls each (specs/nfat-manifest.md "
        "section 11): four golden tensors as named data with layouts, entry 'gpu' with wider tolerances")
    add("v2-manifest-revision-2", packed([
        S("accel", blob("r2-e0", 40), name="accel", named_data=["w.a", "w.b"],
          executorch_backends=["MpsBackend", "QnnBackend"]),
        S("portable", blob("r2-e1", 40), name="portable", named_data=["w.a"], executorch_backends=[]),
    ], named_data={"w.a": fatpte.NamedData(blob("r2-s0", 96), layout=layout), "w.b": blob("r2-s1", 10)}),
        "manifest revision 2: each entry's ExecuTorch backends (two, and none), a named-data key with a "
        "tensor layout (float32[2, 3, 4], dim order 0, 2, 1: 96 bytes) and one of raw bytes")
    add("v2-manifest-rules", with_manifest(RULES_PAYLOADS, rules_manifest(), RULES_SEGMENTS),
        "a manifest using every table of the schema, with shared objects: both entries' signature is one "
        f"table, entry 0 lists one provenance pair {RULES_REFS} times; the base of the manifest rule vectors")
    add("v2-executorch-delegation", packed([
        S("portable", blob("dl-p", 40), executorch_backends=[]),
        S("xnnpack", blob("dl-x", 40), executorch_backends=["XnnpackBackend"]),
        S("native", blob("dl-n", 40), executorch_backends=["NativeBackend"], priority=-1),
    ]), "portable first in the table, then a program that delegates to XNNPACK: with equal priorities the "
        "one that delegates ranks first on every device (the native one, priority -1, last)")
    add("v2-header-size-grown", assemble([Part("cpu", "xnnpack", blob("grow-h", 40))], header_size=72,
                                         entry_size=L.V2_ENTRY_SIZE, segment_entry_size=L.V2_SEGMENT_SIZE),
        "header_size 72: 8 bytes of fields from a later revision (zero), which a reader skips")
    add("v2-record-sizes-grown", assemble(
        [Part("cpu", "xnnpack", blob("grow-e0", 40)), Part("gpu", "vulkan", blob("grow-e1", 40))],
        header_size=L.V2_HEADER_SIZE, entry_size=112, segment_entry_size=40),
        "entry_size 112 and segment_entry_size 40: records grown by a later revision")

    add("v2-program", packed([fatpte.pte_specialization(PROGRAM_FIXTURE, name="cpu")]),
        "one ExecuTorch program entry, tests/fixtures/executorch/mlp_portable.pte (portable operators, 20 values, "
        "two int lists), with the record pack derives from it: the base of the program reference vectors")
    add("v2-program-fat", packed([fatpte.pte_specialization(PROGRAM_FIXTURE.with_name("mlp_fat.pte"), name="fat")]),
        "one ExecuTorch program entry, tests/fixtures/executorch/mlp_fat.pte: a fat delegate (FatpteBackend, one "
        "compile spec) holding an XNNPACK payload and a nested portable program; the base of the delegate vectors")
    from tests.support.program_vectors import valid_program_vectors

    out.extend(valid_program_vectors())
    add("v1-one-entry", packed([S("xnnpack", blob("v1one", 100))], version=1), "version 1, one entry")
    add("v1-many-entries", packed([S("xnnpack", blob("v1a", 10)), S("vulkan", blob("v1b", 20)),
                                   S("cuda", blob("v1c", 30))], version=1),
        "version 1, three payloads back to back")
    add("v1-zero-size-payload", packed([S("empty", b"")], version=1), "version 1, an empty payload")
    add("v1-id-32-bytes", packed([S("x" * 32, blob("v1long", 8))], version=1),
        "version 1, a 32-byte backend id with no NUL")
    return out


def _v1_quirks(by: dict[str, Vector]) -> Iterator[Vector]:
    """Version 1 files that are valid, with the warning the spec gives for each quirk."""
    e = Edit(by["v1-many-entries"])
    e.set_entry(0, "backend_id", b"xnnpack\0junk")
    yield e.vector("v1-id-padding-not-zero", "bytes after the NUL of a backend id are not zero", None, None,
                   None, (ErrorCode.V1_ID_PADDING_NOT_ZERO,))
    e = Edit(by["v1-many-entries"])
    e.set_entry(0, "size", 15)
    yield e.vector("v1-overlapping-payloads", "payload 0 grows 5 bytes into payload 1", None, None, None,
                   (ErrorCode.V1_OVERLAPPING_PAYLOADS,))
    e = Edit(by["v1-many-entries"])
    e.set_entry(1, "size", 15)
    yield e.vector("v1-gap", "payload 1 shrinks by 5 bytes, leaving a gap before payload 2", None, None, None,
                   (ErrorCode.V1_UNCOVERED_BYTES,))
    e = Edit(by["v1-many-entries"])
    e.append(b"trailing")
    yield e.vector("v1-trailing-bytes", "8 bytes after the last payload", None, None, None,
                   (ErrorCode.V1_UNCOVERED_BYTES,))
    e = Edit(by["v1-many-entries"])
    e.set_entry(2, "backend_id", b"xnnpack")
    yield e.vector("v1-duplicate-id", "entries 0 and 2 share the backend id 'xnnpack'", None, None, None,
                   (ErrorCode.V1_DUPLICATE_ID,))
    e = Edit(by["v1-one-entry"])
    e.set_entry(0, "backend_id", b"\x01ctl\x7f")
    yield e.vector("v1-id-control-bytes", "a backend id with bytes 0x01 and 0x7f, which v1 allows", None, None,
                   None)


def invalid_vectors(by: dict[str, Vector]) -> Iterator[Vector]:
    C = ErrorCode
    one, many = by["v2-one-entry"], by["v2-many-entries"]
    tail = len(one.data)

    def edit(base: Vector, fn: Callable[[Edit], object], name: str, description: str, code: ErrorCode,
             offset: int | None, fld: str | None, *, seal: bool = True) -> Vector:
        e = Edit(base)
        fn(e)
        if seal:
            e.seal()
        return e.vector(name, description, code, offset, fld)

    def hdr(base: Vector, fld: str, value: int | bytes, name: str, description: str, code: ErrorCode,
            offset: int | None = None, path: str | None = None) -> Vector:
        return edit(base, lambda e: e.set_header(fld, value), name, description, code,
                    _hat(fld) if offset is None else offset, f"header.{fld}" if path is None else path)

    def ent(base: Vector, i: int, fld: str, value: int | bytes, name: str, description: str, code: ErrorCode,
            at_field: str | None = None) -> Vector:
        report = at_field or fld
        return edit(base, lambda e: e.set_entry(i, fld, value), name, description, code,
                    Edit(base).entry_at(i, report), f"entries[{i}].{report}")

    # -- 1xx header ------------------------------------------------------------------------
    yield hdr(one, "magic", b"NFAX", "v2-bad-magic", "the magic reads NFAX", C.BAD_MAGIC)
    yield hdr(by["v1-one-entry"], "magic", b"nfat", "v1-bad-magic", "the magic is lower case", C.BAD_MAGIC,
              0, "header.magic")
    yield Vector("not-nfat-elf", b"\x7fELF" + bytes(60), "an ELF header, not a container", code=C.BAD_MAGIC,
                 offset=0, field="header.magic")
    for version in (0, 3, U32_MAX):
        yield hdr(one, "version", version, f"v2-version-{version}", f"version {version}", C.UNSUPPORTED_VERSION)
    yield Vector("empty-file", b"", "a file of 0 bytes", code=C.TRUNCATED_HEADER, offset=0, field="header.magic")
    yield edit(one, lambda e: e.truncate(3), "truncated-magic", "cut after 3 bytes", C.TRUNCATED_HEADER, 3,
               "header.magic", seal=False)
    yield edit(one, lambda e: e.truncate(6), "truncated-version", "cut inside the version", C.TRUNCATED_HEADER,
               6, "header.version", seal=False)
    yield edit(one, lambda e: e.truncate(L.V2_HEADER_SIZE - 1), "v2-truncated-header",
               "cut one byte before the end of the v2 header", C.TRUNCATED_HEADER, L.V2_HEADER_SIZE - 1,
               "header.container_size", seal=False)
    yield edit(by["v1-one-entry"], lambda e: e.truncate(10), "v1-truncated-header",
               "cut inside the v1 entry_count", C.TRUNCATED_HEADER, 10, "header.entry_count", seal=False)
    yield edit(one, lambda e: e.truncate(100), "v2-truncated-table", "cut inside the entry table",
               C.TRUNCATED_CONTAINER, _hat("container_size"), "header.container_size", seal=False)
    yield edit(one, lambda e: e.truncate(tail - 1), "v2-truncated-payload", "the last payload byte is missing",
               C.TRUNCATED_CONTAINER, _hat("container_size"), "header.container_size", seal=False)
    man = by["v2-manifest"]
    yield edit(man, lambda e: e.truncate(Edit(man).header("manifest_offset") + 4), "v2-truncated-manifest",
               "cut inside the manifest", C.TRUNCATED_CONTAINER, _hat("container_size"), "header.container_size",
               seal=False)
    yield hdr(one, "container_size", U64_MAX, "v2-container-size-max", "container_size is 2^64-1",
              C.TRUNCATED_CONTAINER)
    yield edit(one, lambda e: e.append(b"GARBAGE!"), "v2-trailing-garbage", "8 bytes follow the container",
               C.TRAILING_BYTES, tail, "header.container_size", seal=False)
    yield edit(one, lambda e: e.append(b"\0"), "v2-trailing-zero-byte", "one zero byte follows the container",
               C.TRAILING_BYTES, tail, "header.container_size", seal=False)
    for value, why in ((0, "zero"), (56, "below-minimum"), (68, "not-multiple-of-8"), (4104, "above-limit"),
                       (U32_MAX, "max")):
        yield hdr(one, "header_size", value, f"v2-header-size-{why}", f"header_size is {value}", C.BAD_HEADER_SIZE)
    for value, why in ((0, "zero"), (96, "below-minimum"), (108, "not-multiple-of-8"), (4104, "above-limit")):
        yield hdr(one, "entry_size", value, f"v2-entry-size-{why}", f"entry_size is {value}", C.BAD_ENTRY_SIZE)
    for value, why in ((0, "zero"), (24, "below-minimum"), (36, "not-multiple-of-8"), (8192, "above-limit")):
        yield hdr(one, "segment_entry_size", value, f"v2-segment-entry-size-{why}",
                  f"segment_entry_size is {value}", C.BAD_SEGMENT_ENTRY_SIZE)
    yield hdr(one, "flags", 1, "v2-header-flags-bit0", "header flags bit 0 set", C.UNKNOWN_HEADER_FLAGS)
    yield hdr(one, "flags", 1 << 31, "v2-header-flags-bit31", "header flags bit 31 set", C.UNKNOWN_HEADER_FLAGS)
    yield hdr(one, "entry_count", 0, "v2-no-entries", "entry_count is 0", C.NO_ENTRIES)
    yield hdr(by["v1-one-entry"], "entry_count", 0, "v1-no-entries", "entry_count is 0", C.NO_ENTRIES,
              8, "header.entry_count")
    yield hdr(one, "entry_count", L.MAX_ENTRIES + 1, "v2-entry-count-above-limit", "entry_count is 65537",
              C.TOO_MANY_ENTRIES)
    yield hdr(one, "entry_count", U32_MAX, "v2-entry-count-max", "entry_count is 2^32-1", C.TOO_MANY_ENTRIES)
    yield hdr(by["v1-one-entry"], "entry_count", U32_MAX, "v1-entry-count-max", "entry_count is 2^32-1",
              C.TOO_MANY_ENTRIES, 8, "header.entry_count")
    yield hdr(one, "segment_count", L.MAX_SEGMENTS + 1, "v2-segment-count-above-limit",
              "segment_count is 2^20+1", C.TOO_MANY_SEGMENTS)
    yield hdr(one, "segment_count", U32_MAX, "v2-segment-count-max", "segment_count is 2^32-1",
              C.TOO_MANY_SEGMENTS)
    yield hdr(one, "entry_count", 1000, "v2-entry-count-beyond-file", "1000 entries cannot fit in the file",
              C.TABLE_OUT_OF_BOUNDS)
    assert tail < L.V2_HEADER_SIZE + 3 * L.V2_ENTRY_SIZE
    yield hdr(one, "entry_count", 3, "v2-entry-count-past-end",
              "3 entry records would end past the end of the container", C.TABLE_OUT_OF_BOUNDS)
    yield hdr(one, "segment_count", 100, "v2-segment-count-beyond-file", "100 segment records cannot fit",
              C.TABLE_OUT_OF_BOUNDS, _hat("entry_count"), "header.entry_count")
    yield hdr(one, "header_size", 4096, "v2-header-size-beyond-file", "a 4096-byte header cannot fit",
              C.TABLE_OUT_OF_BOUNDS, _hat("entry_count"), "header.entry_count")
    yield hdr(by["v1-one-entry"], "entry_count", 7, "v1-entry-count-beyond-file",
              "7 entries of 48 bytes cannot fit", C.TABLE_OUT_OF_BOUNDS, 8, "header.entry_count")
    yield edit(one, lambda e: e.put_int(L.HEADER_CHECKSUM_OFFSET, 4, e.header("header_checksum") ^ 1),
               "v2-header-checksum-wrong", "header_checksum has its lowest bit flipped",
               C.HEADER_CHECKSUM_MISMATCH, L.HEADER_CHECKSUM_OFFSET, "header.header_checksum", seal=False)
    yield edit(one, lambda e: e.set_entry(0, "priority", 7), "v2-header-checksum-stale",
               "entry 0's priority changed without updating header_checksum", C.HEADER_CHECKSUM_MISMATCH,
               L.HEADER_CHECKSUM_OFFSET, "header.header_checksum", seal=False)

    # -- 2xx entries -------------------------------------------------------------------------
    for text, why in ((b"", "empty"), (b"x y", "space"), (b"a/b", "slash"), (b"caf\xc3\xa9", "utf8"),
                      (b"ok\0junk", "padding-not-zero")):
        yield ent(many, 1, "name", text, f"v2-name-{why}", f"entry 1's name is {text!r}", C.BAD_NAME)
    for text, why in ((b"", "empty"), (b"xnn:pack", "colon"), (b"\x7f", "del"), (b"vk\0\x01", "padding-not-zero")):
        yield ent(many, 2, "backend_id", text, f"v2-backend-id-{why}", f"entry 2's backend id is {text!r}",
                  C.BAD_BACKEND_ID)
    size0 = Edit(many).entry(0, "size")
    off0 = Edit(many).entry(0, "offset")
    total = len(many.data)
    yield ent(many, 0, "size", total, "v2-payload-past-end", "entry 0's size reaches past the end",
              C.PAYLOAD_OUT_OF_BOUNDS)
    yield ent(many, 0, "offset", total - size0 + 64, "v2-payload-offset-past-end",
              "entry 0's payload starts too late to fit", C.PAYLOAD_OUT_OF_BOUNDS, "size")
    yield ent(many, 0, "size", U64_MAX, "v2-payload-size-max", "entry 0's size is 2^64-1",
              C.PAYLOAD_OUT_OF_BOUNDS)
    yield ent(many, 0, "offset", (1 << 64) - 64, "v2-offset-plus-size-overflows",
              "entry 0's offset + size wraps around 2^64", C.PAYLOAD_OUT_OF_BOUNDS, "size")
    yield ent(by["v2-zero-size-payload"], 1, "offset", U64_MAX - 63, "v2-zero-size-payload-out-of-bounds",
              "an empty payload placed at 2^64-64, far past the end", C.PAYLOAD_OUT_OF_BOUNDS, "size")
    for value, why in ((0, "zero"), (3, "not-power-of-two"), (48, "not-power-of-two-even"),
                       (1 << 17, "too-large"), (1 << 31, "bit31")):
        yield ent(one, 0, "alignment", value, f"v2-alignment-{why}", f"entry 0's alignment is {value}",
                  C.BAD_ALIGNMENT)
    assert Edit(one).entry(0, "offset") % 128 == 64
    yield ent(one, 0, "alignment", 128, "v2-misaligned-payload-alignment",
              "entry 0 claims alignment 128 but its payload starts 64 bytes past a multiple of it",
              C.MISALIGNED_PAYLOAD, "offset")
    yield ent(one, 0, "offset", Edit(one).entry(0, "offset") - 1, "v2-misaligned-payload-offset",
              "entry 0's payload moved one byte earlier, off its 64-byte alignment", C.MISALIGNED_PAYLOAD)
    yield ent(many, 4, "name", b"xnnpack-fp32", "v2-duplicate-name", "entries 0 and 4 are both 'xnnpack-fp32'",
              C.DUPLICATE_NAME)
    yield ent(many, 2, "flags", 1, "v2-entry-flags-bit0", "entry 2 sets flag bit 0", C.UNKNOWN_ENTRY_FLAGS)
    yield ent(many, 2, "flags", 1 << 31, "v2-entry-flags-bit31", "entry 2 sets flag bit 31",
              C.UNKNOWN_ENTRY_FLAGS)
    yield edit(one, lambda e: e.put(e.entry(0, "offset") + 50, bytes([one.data[e.entry(0, "offset") + 50] ^ 0x10])),
               "v2-payload-byte-flipped", "one bit of the payload flipped", C.PAYLOAD_CHECKSUM_MISMATCH,
               Edit(one).entry_at(0, "checksum"), "entries[0].checksum", seal=False)
    yield ent(one, 0, "checksum", Edit(one).entry(0, "checksum") ^ 0x80000000, "v2-payload-checksum-wrong",
              "entry 0's checksum has its top bit flipped", C.PAYLOAD_CHECKSUM_MISMATCH)
    sh = by["v2-shared-payload"]
    yield edit(sh, lambda e: e.put(e.entry(0, "offset") + 199, bytes([sh.data[e.entry(0, "offset") + 199] ^ 1])),
               "v2-shared-payload-byte-flipped", "the last byte of a payload two entries share flipped",
               C.PAYLOAD_CHECKSUM_MISMATCH, Edit(sh).entry_at(0, "checksum"), "entries[0].checksum", seal=False)
    yield ent(one, 0, "payload_kind", b"ABCD", "v2-payload-kind-mismatch",
              "entry 0 says kind ABCD, the payload says XNPK", C.PAYLOAD_KIND_MISMATCH)
    yield ent(by["v2-short-payload"], 0, "payload_kind", b"TINY", "v2-payload-kind-on-short-payload",
              "a 3-byte payload cannot carry the kind TINY at bytes 4..8", C.PAYLOAD_KIND_MISMATCH)

    # -- 3xx segments --------------------------------------------------------------------------
    seg = by["v2-named-data"]
    sg = Edit(seg)
    seg_total = len(seg.data)

    def sgm(i: int, fld: str, value: int, name: str, description: str, code: ErrorCode,
            report: str | None = None) -> Vector:
        r = report or fld
        return edit(seg, lambda e: e.set_segment(i, fld, value), name, description, code,
                    sg.segment_at(i, r), f"segments[{i}].{r}")

    yield sgm(1, "size", seg_total, "v2-segment-past-end", "segment 1's size reaches past the end",
              C.SEGMENT_OUT_OF_BOUNDS)
    yield sgm(0, "offset", U64_MAX - 7, "v2-segment-offset-overflows", "segment 0's offset + size wraps 2^64",
              C.SEGMENT_OUT_OF_BOUNDS, "size")
    yield sgm(0, "alignment", 0, "v2-segment-alignment-zero", "segment 0's alignment is 0", C.BAD_SEGMENT_ALIGNMENT)
    yield sgm(0, "alignment", 24, "v2-segment-alignment-not-power-of-two", "segment 0's alignment is 24",
              C.BAD_SEGMENT_ALIGNMENT)
    yield sgm(0, "alignment", 1 << 20, "v2-segment-alignment-too-large", "segment 0's alignment is 2^20",
              C.BAD_SEGMENT_ALIGNMENT)
    yield sgm(0, "offset", _u(seg.data, sg.segment_at(0, "offset"), 8) + 1,
              "v2-misaligned-segment", "segment 0 moved one byte later, off its 64-byte alignment",
              C.MISALIGNED_SEGMENT)
    yield sgm(0, "flags", 2, "v2-segment-flags-bit1", "segment 0 sets flag bit 1", C.UNKNOWN_SEGMENT_FLAGS)
    yield sgm(0, "reserved", 1, "v2-segment-reserved-not-zero", "segment 0's reserved field is 1",
              C.RESERVED_NOT_ZERO)
    seg0 = _u(seg.data, sg.segment_at(0, "offset"), 8)
    yield edit(seg, lambda e: e.put(seg0 + 5, bytes([seg.data[seg0 + 5] ^ 4])),
               "v2-segment-byte-flipped", "one bit of segment 0 flipped", C.SEGMENT_CHECKSUM_MISMATCH,
               sg.segment_at(0, "checksum"), "segments[0].checksum", seal=False)

    # -- 4xx manifest ----------------------------------------------------------------------------
    me = Edit(man)
    moff, msize = me.header("manifest_offset"), me.header("manifest_size")
    man_total = len(man.data)
    yield hdr(man, "manifest_size", man_total, "v2-manifest-past-end", "manifest_size reaches past the end",
              C.MANIFEST_OUT_OF_BOUNDS)
    yield hdr(man, "manifest_offset", U64_MAX - 7, "v2-manifest-offset-overflows",
              "manifest_offset + manifest_size wraps 2^64", C.MANIFEST_OUT_OF_BOUNDS, _hat("manifest_size"),
              "header.manifest_size")
    yield hdr(man, "manifest_offset", moff + 4, "v2-misaligned-manifest", "manifest_offset is 4 mod 8",
              C.MISALIGNED_MANIFEST)
    yield hdr(man, "manifest_size", L.MAX_MANIFEST_SIZE + 8, "v2-manifest-too-large",
              "manifest_size is 64 MiB + 8", C.MANIFEST_TOO_LARGE)
    yield edit(man, lambda e: e.put(moff + msize - 1, bytes([man.data[moff + msize - 1] ^ 1])),
               "v2-manifest-byte-flipped", "the manifest's last byte flipped", C.MANIFEST_CHECKSUM_MISMATCH,
               _hat("manifest_checksum"), "header.manifest_checksum", seal=False)
    yield hdr(man, "manifest_checksum", me.header("manifest_checksum") ^ 1, "v2-manifest-checksum-wrong",
              "manifest_checksum has its lowest bit flipped", C.MANIFEST_CHECKSUM_MISMATCH)

    def bad_ident(e: Edit) -> None:
        e.put(moff + 4, b"NFMX")
        e.put_int(_hat("manifest_checksum"), 4, crc32c(bytes(e.buf[moff : moff + msize])))

    yield edit(man, bad_ident, "v2-manifest-bad-identifier",
               "the manifest's identifier is NFMX (manifest_checksum updated to match)", C.BAD_MANIFEST_IDENTIFIER,
               moff + 4, "manifest")
    yield hdr(one, "manifest_offset", 64, "v2-absent-manifest-offset-not-zero",
              "no manifest (size 0) but manifest_offset is 64", C.ABSENT_MANIFEST_NOT_ZERO)
    yield hdr(one, "manifest_checksum", 0x1234, "v2-absent-manifest-checksum-not-zero",
              "no manifest (size 0) but manifest_checksum is 0x1234", C.ABSENT_MANIFEST_NOT_ZERO)

    # -- 4xx manifest content (specs/nfat-manifest.md): one field of a valid manifest changed,
    # manifest_checksum and header_checksum updated so that the manifest's own rule fails.
    nd = by["v2-named-data"]
    ndm = Edit(nd)
    moff_nd = ndm.header("manifest_offset")

    def mfield(path: str, value: int | bytes | Callable[[bytes], bytes], name: str, description: str,
               code: ErrorCode, offset: int | None, report: str | None) -> Vector:
        def change(e: Edit) -> None:
            if callable(value):
                at, size = e.manifest_field(path)
                e.set_manifest(path, value(bytes(e.buf[at : at + size])))
            else:
                e.set_manifest(path, value)
        return edit(nd, change, name, description, code, offset, report, seal=False)

    def where(path: str) -> int:
        return ndm.manifest_field(path)[0]

    def corrupt_root(e: Edit) -> None:
        e.put_int(moff_nd, 4, 0xFFFFFF00)
        e.reseal_manifest()

    yield edit(nd, corrupt_root, "v2-manifest-corrupt-root-offset", "the manifest's root offset points far "
               "past its end", C.MANIFEST_CORRUPT, moff_nd, "manifest", seal=False)
    yield mfield("entries", 1, "v2-manifest-entry-missing", "the manifest's entries vector claims 1 entry; "
                 "the table has 2", C.MANIFEST_ENTRY_MISSING, Edit(nd).entry_at(1), "entries[1].name")
    yield mfield("entries[1].name", b"gpx", "v2-manifest-entry-unknown", "manifest entry 1 is named 'gpx', "
                 "which no table entry is", C.MANIFEST_ENTRY_UNKNOWN, where("entries[1]"),
                 "manifest.entries[1].name")
    yield mfield("entries[1].name", b"cpu", "v2-manifest-entry-duplicate", "manifest entries 0 and 1 are both "
                 "'cpu'", C.DUPLICATE_MANIFEST_ENTRY, where("entries[1]"), "manifest.entries[1].name")
    yield mfield("entries[1].signature.methods[0].inputs[0].dtype", b"float16", "v2-signature-mismatch",
                 "entry 'gpu' takes a float16 input where 'cpu' takes float32", C.SIGNATURE_MISMATCH,
                 where("entries[1]"), "manifest.entries[1].signature")
    yield edit(by["v2-signature-state"],
               lambda e: e.set_manifest("entries[2].signature.methods[0].buffers[0].name", b"v_cache"),
               "v2-signature-buffer-renamed", "entry 'native' names its buffer 'v_cache' where 'xnnpack' "
               "names it 'k_cache'; each agrees with the unnamed 'portable', not with each other",
               C.SIGNATURE_MISMATCH, Edit(by["v2-signature-state"]).manifest_field("entries[2]")[0],
               "manifest.entries[2].signature", seal=False)
    yield mfield("entries[1].source_digest", lambda old: old[:-1] + (b"0" if old[-1:] != b"0" else b"1"),
                 "v2-source-digest-mismatch", "entry 'gpu' names another source program digest than 'cpu'",
                 C.SOURCE_DIGEST_MISMATCH, where("entries[1]"), "manifest.entries[1].source_digest")
    yield mfield("entries[1].source_digest", lambda old: old.upper(), "v2-source-digest-upper-case",
                 "entry 'gpu''s source digest is written in upper case", C.MANIFEST_VALUE_INVALID,
                 where("entries[1]"), "manifest.entries[1].source_digest")
    yield mfield("entries[1].named_data[0]", b"w.z", "v2-named-data-key-missing", "entry 'gpu' needs key "
                 "'w.z', which the manifest does not define", C.NAMED_DATA_KEY_MISSING, where("entries[1]"),
                 "manifest.entries[1].named_data[0]")
    yield mfield("named_data[1].segment", 99, "v2-named-data-bad-segment", "key 'w.b' points at segment 99 of 2",
                 C.NAMED_DATA_BAD_SEGMENT, moff_nd, "manifest.named_data[1].segment")
    yield mfield("named_data[1].segment", 0, "v2-segment-unreferenced", "key 'w.b' points at segment 0 like "
                 "'w.a', so no key names segment 1", C.SEGMENT_UNREFERENCED, ndm.segment_at(1, "offset"),
                 "segments[1]")
    yield mfield("named_data[1].key", b"w.0", "v2-named-data-keys-unsorted", "key 'w.b' renamed 'w.0', which "
                 "sorts before 'w.a'", C.NAMED_DATA_KEYS_UNSORTED, where("named_data[1]"),
                 "manifest.named_data[1].key")
    yield mfield("entries[0].payload_sha256[0]", lambda old: bytes([old[0] ^ 1]), "v2-payload-digest-mismatch",
                 "the first byte of entry 'cpu''s payload SHA-256 flipped", C.PAYLOAD_DIGEST_MISMATCH,
                 where("entries[0]"), "manifest.entries[0].payload_sha256")

    r2 = by["v2-manifest-revision-2"]
    r2m = Edit(r2)

    def r2field(path: str, value: int | bytes, name: str, description: str, code: ErrorCode, offset: int,
                report: str) -> Vector:
        return edit(r2, lambda e: e.set_manifest(path, value), name, description, code, offset, report, seal=False)

    def r2where(path: str) -> int:
        return r2m.manifest_field(path)[0]

    yield r2field("entries[0].executorch_backends[1]", b"MpsBackend", "v2-executorch-backend-twice",
                  "entry 'accel' lists ExecuTorch backend 'MpsBackend' twice (its second id overwritten)",
                  C.MANIFEST_VALUE_INVALID, r2where("entries[0]"), "manifest.entries[0].executorch_backends[1]")
    yield r2field("named_data[0].layout.dtype", b"floatXX", "v2-layout-dtype-unknown",
                  "key 'w.a''s layout names dtype 'floatXX', which is not in the spec's table",
                  C.MANIFEST_VALUE_INVALID, r2where("named_data[0].layout"), "manifest.named_data[0].layout")
    yield r2field("named_data[0].layout.sizes[1]", (1 << 32) - 3, "v2-layout-size-negative",
                  "key 'w.a''s layout has size -3", C.MANIFEST_VALUE_INVALID, r2where("named_data[0].layout"),
                  "manifest.named_data[0].layout")
    yield r2field("named_data[0].layout.dim_order[2]", 2, "v2-layout-dim-order-not-permutation",
                  "key 'w.a''s dim order is 0, 2, 2", C.MANIFEST_VALUE_INVALID, r2where("named_data[0].layout"),
                  "manifest.named_data[0].layout")
    yield r2field("named_data[0].layout.sizes[2]", 5, "v2-layout-size-mismatch",
                  "key 'w.a''s layout float32[2, 3, 5] is 120 bytes; its segment holds 96",
                  C.NAMED_DATA_LAYOUT_MISMATCH, r2m.header("manifest_offset"), "manifest.named_data[0].layout")

    yield from _manifest_rule_vectors(by)
    yield from _golden_vectors(by)
    yield from _adapter_vectors(by)
    yield from _program_vectors(by)
    from tests.support.program_vectors import program_record_vectors

    yield from program_record_vectors(by)

    # -- 5xx version 1 ----------------------------------------------------------------------------
    v1 = by["v1-many-entries"]
    for text, why in ((b"", "empty"), (b"caf\xc3\xa9", "non-ascii"), (b"\xff", "byte-ff")):
        e = Edit(v1)
        e.set_entry(1, "backend_id", text)
        yield e.vector(f"v1-id-{why}", f"entry 1's backend id is {text!r}", C.V1_BAD_ID,
                       Edit(v1).entry_at(1, "backend_id"), "entries[1].backend_id")
    v1total = len(v1.data) - (L.V1_HEADER_SIZE + 3 * L.V1_ENTRY_SIZE)
    for fld, value, why in (("size", v1total, "payload-past-end"), ("offset", U64_MAX - 4, "offset-overflows"),
                            ("size", U64_MAX, "size-max")):
        e = Edit(v1)
        e.set_entry(2, fld, value)
        yield e.vector(f"v1-{why}", f"entry 2's {fld} is {value}", C.PAYLOAD_OUT_OF_BOUNDS,
                       Edit(v1).entry_at(2, "size"), "entries[2].size")
    e = Edit(v1)
    e.truncate(len(v1.data) - 1)
    yield e.vector("v1-truncated-payload", "the last payload byte is missing", C.PAYLOAD_OUT_OF_BOUNDS,
                   Edit(v1).entry_at(2, "size"), "entries[2].size")
    e = Edit(v1)
    e.truncate(L.V1_HEADER_SIZE + 60)
    yield e.vector("v1-truncated-table", "cut inside the second entry record", C.TABLE_OUT_OF_BOUNDS, 8,
                   "header.entry_count")

    # -- 6xx regions -------------------------------------------------------------------------------
    yield ent(many, 1, "offset", off0 + 64, "v2-payloads-overlap",
              "entry 1's payload moved into entry 0's, partially overlapping it", C.REGIONS_OVERLAP)
    yield edit(many, lambda e: e.set_entry(1, "size", e.entry(2, "offset") - e.entry(1, "offset") + 8),
               "v2-payload-grows-into-next", "entry 1's payload grows 8 bytes into entry 2's", C.REGIONS_OVERLAP,
               Edit(many).entry_at(2, "offset"), "entries[2].offset")
    # Regions are swept by (start, table rank): of two starting together, the later entry is reported.
    yield edit(many, lambda e: e.set_entry(2, "offset", off0),
               "v2-payloads-same-start-different-size",
               "entry 2 points at entry 0's offset with a different size (a shared region must be identical)",
               C.REGIONS_OVERLAP, Edit(many).entry_at(2, "offset"), "entries[2].offset")
    yield ent(one, 0, "offset", 64, "v2-payload-overlaps-table",
              "entry 0's payload starts at 64, inside its own table record", C.REGIONS_OVERLAP)
    yield ent(one, 0, "offset", 0, "v2-payload-overlaps-header",
              "entry 0's payload starts at byte 0, covering the header", C.REGIONS_OVERLAP)
    sm = by["v2-named-data"]
    smo = Edit(sm)
    yield edit(sm, lambda e: e.set_entry(0, "offset", smo.header("manifest_offset")),
               "v2-payload-overlaps-manifest",
               "entry 0's payload starts at the manifest's offset; the manifest, later in table order, is reported",
               C.REGIONS_OVERLAP, _hat("manifest_offset"), "header.manifest_offset")
    yield edit(sm, lambda e: e.set_segment(0, "offset", smo.entry(1, "offset")),
               "v2-segment-overlaps-payload", "segment 0 moved onto entry 1's payload", C.REGIONS_OVERLAP,
               smo.segment_at(0, "offset"), "segments[0].offset")
    yield edit(sm, lambda e: e.set_header("manifest_offset", 8), "v2-manifest-overlaps-header",
               "the manifest placed at byte 8, inside the header", C.REGIONS_OVERLAP, _hat("manifest_offset"),
               "header.manifest_offset")
    first = Edit(many).entry(0, "offset")
    table_end = L.V2_HEADER_SIZE + 5 * L.V2_ENTRY_SIZE
    assert first > table_end
    yield edit(many, lambda e: e.put(table_end + 1, b"\x01"), "v2-padding-after-table-not-zero",
               "a byte of the padding between the table and the first payload is 1", C.PADDING_NOT_ZERO,
               table_end + 1, None, seal=False)
    gap = Edit(many).entry(0, "offset") + size0
    assert gap < Edit(many).entry(1, "offset")
    yield edit(many, lambda e: e.put(gap, b"\x80"), "v2-padding-between-payloads-not-zero",
               "the first padding byte after payload 0 is 0x80", C.PADDING_NOT_ZERO, gap, None, seal=False)
    yield ent(many, 3, "reserved", 1, "v2-entry-reserved-not-zero", "entry 3's reserved field is 1",
              C.RESERVED_NOT_ZERO)
    yield ent(many, 3, "reserved", U32_MAX, "v2-entry-reserved-max", "entry 3's reserved field is 2^32-1",
              C.RESERVED_NOT_ZERO)
    grown = by["v2-header-size-grown"]
    yield edit(grown, lambda e: e.put(L.V2_HEADER_SIZE, b"\x01"), "v2-header-extension-changed",
               "a byte of the grown header changed without updating header_checksum",
               C.HEADER_CHECKSUM_MISMATCH, L.HEADER_CHECKSUM_OFFSET, "header.header_checksum", seal=False)


# Vectors among the others that break a rule of specs/nfat-manifest.md section 2.
RULE_OF = {"v2-manifest-bad-identifier": "2.1.1", "v2-manifest-corrupt-root-offset": "2.1.2",
           "v2-source-digest-upper-case": "2.2.4", "v2-executorch-backend-twice": "2.2.8",
           "v2-layout-dtype-unknown": "2.2.9", "v2-layout-size-negative": "2.2.9",
           "v2-layout-dim-order-not-permutation": "2.2.9", "v2-named-data-keys-unsorted": "2.2.10"}


def _manifest_rule_vectors(by: dict[str, Vector]) -> Iterator[Vector]:
    """One vector (or more) for each rule of specs/nfat-manifest.md section 2 (verifying the
    buffer, its values and the work budget), each one defect in v2-manifest-rules: an offset,
    a length or a vtable slot changed, manifest_checksum and header_checksum updated. The
    table-count rule (2.1.8) needs a manifest too large for this folder: tests/loader/
    test_cpp_parity.py builds it."""
    C = ErrorCode
    base = by["v2-manifest-rules"]
    probe = Edit(base)
    moff = probe.header("manifest_offset")
    msize = probe.header("manifest_size")
    m = ManifestMap(probe.buf, moff)
    empty, long_ = m.target("entries[0].provenance[601].value"), m.target("entries[0].provenance[600].value")

    def vec(name: str, rule: str, description: str, changes: Sequence[tuple[int, int, int]], code: ErrorCode,
            offset: int | None, fld: str | None) -> Vector:
        e = Edit(base)
        for at, size, value in changes:
            e.put_int(at, size, value)
        e.reseal_manifest()
        v = e.vector(name, description, code, offset, fld)
        v.rule = rule
        return v

    def point(path: str, to: int) -> tuple[int, int, int]:
        """The uoffset at `path` made to point at file offset `to`."""
        at = m.slot(path)
        return (at, 4, to - at)

    def table_of(path: str) -> int:
        return m.target(path)

    # 2.1.2 offsets
    yield vec("v2-manifest-root-offset-zero", "2.1.2", "the manifest's root offset is 0", [(moff, 4, 0)],
              C.MANIFEST_CORRUPT, moff, "manifest")
    yield vec("v2-manifest-entry-offset-zero", "2.1.2", "the second element of the entries vector is offset 0",
              [(m.slot("entries[1]"), 4, 0)], C.MANIFEST_CORRUPT, m.slot("entries[1]"), "manifest.entries[1]")
    yield vec("v2-manifest-key-offset-zero", "2.1.2", "the second element of entry 0's named_data is offset 0",
              [(m.slot("entries[0].named_data[1]"), 4, 0)], C.MANIFEST_CORRUPT,
              m.slot("entries[0].named_data[1]"), "manifest.entries[0].named_data[1]")
    at = m.slot("entries[1].name")
    yield vec("v2-manifest-offset-past-end", "2.1.2", "entry 1's name offset points at the manifest's end",
              [(at, 4, moff + msize - at)], C.MANIFEST_CORRUPT, at, "manifest.entries[1].name")
    root_vt = m.vtable("")
    entries_voff = _u(probe.buf, root_vt + 4 + 2 * 1, 2)
    yield vec("v2-manifest-offset-misaligned", "2.1.2", "the root vtable places Manifest.entries 2 bytes later, "
              "at an offset not a multiple of 4", [(root_vt + 6, 2, entries_voff + 2)], C.MANIFEST_CORRUPT,
              moff + m.root + entries_voff + 2, "manifest.entries")
    # 2.1.3 tables and vtables
    at = m.slot("entries[1]")
    yield vec("v2-manifest-table-misaligned", "2.1.3", "entries[1] points 2 bytes into its table",
              [(at, 4, table_of("entries[1]") + 2 - at)], C.MANIFEST_CORRUPT, table_of("entries[1]") + 2,
              "manifest.entries[1]")
    yield vec("v2-manifest-vtable-outside", "2.1.3", "entries[1]'s soffset puts its vtable before the manifest",
              [(table_of("entries[1]"), 4, 0x7FFFFFF0)], C.MANIFEST_CORRUPT, table_of("entries[1]"),
              "manifest.entries[1]")
    yield vec("v2-manifest-vtable-size-odd", "2.1.3", "the root table's vtable is 9 bytes long",
              [(root_vt, 2, 9)], C.MANIFEST_CORRUPT, root_vt, "manifest")
    yield vec("v2-manifest-vtable-past-end", "2.1.3", "the root table's vtable claims 65534 bytes",
              [(root_vt, 2, 0xFFFE)], C.MANIFEST_CORRUPT, root_vt, "manifest")
    # 2.1.4 scalars
    abi = "entries[1].requires.backend_abi"
    abi_vt = m.vtable(abi)
    max_voff = _u(probe.buf, abi_vt + 4 + 2 * 1, 2)
    yield vec("v2-manifest-scalar-misaligned", "2.1.4", "the vtable of the AbiRange table (which named_data[1] "
              "shares) moves its u32 second field by 1 byte", [(abi_vt + 6, 2, max_voff + 1)], C.MANIFEST_CORRUPT,
              table_of(abi) + max_voff + 1, f"manifest.{abi}.max")
    # 2.1.5 strings
    wb = m.target("named_data[1].key")
    yield vec("v2-manifest-string-past-end", "2.1.5", "the key 'w.b' claims 2^31 bytes", [(wb, 4, 1 << 31)],
              C.MANIFEST_CORRUPT, wb, "manifest.entries[0].named_data[1]")
    gpu = m.target("entries[1].name")
    yield vec("v2-manifest-string-not-terminated", "2.1.5", "the NUL after entry 1's name 'gpu' is 'x'",
              [(gpu + 7, 1, ord("x"))], C.MANIFEST_CORRUPT, gpu + 7, "manifest.entries[1].name")
    fw = m.target("entries[0].signature.methods[0].name")
    yield vec("v2-manifest-string-not-utf8", "2.1.5", "the third byte of the method name 'forward' is 0xff",
              [(fw + 6, 1, 0xFF)], C.MANIFEST_CORRUPT, fw + 6, "manifest.entries[0].signature.methods[0].name")
    # 2.1.6 vectors
    prov = m.target("entries[0].provenance")
    yield vec("v2-manifest-vector-too-long", "2.1.6", "entry 0's provenance vector claims 2^28 elements",
              [(prov, 4, 1 << 28)], C.MANIFEST_CORRUPT, prov, "manifest.entries[0].provenance")
    # 2.1.7 required fields
    kv_vt = m.vtable("entries[0].provenance[0]")
    yield vec("v2-manifest-required-field-absent", "2.1.7", "the vtable of the provenance pairs has no value "
              "field", [(kv_vt + 6, 2, 0)], C.MANIFEST_CORRUPT, table_of("entries[0].provenance[0]"),
              "manifest.entries[0].provenance[0].value")
    # 2.2 values
    e1 = table_of("entries[1]")
    yield vec("v2-manifest-name-empty", "2.2.1", "entry 1's name points at an empty string",
              [point("entries[1].name", empty)], C.MANIFEST_VALUE_INVALID, e1, "manifest.entries[1].name")
    yield vec("v2-manifest-name-too-long", "2.2.1", "entry 1's name points at a string of 4200 bytes",
              [point("entries[1].name", long_)], C.MANIFEST_VALUE_INVALID, e1, "manifest.entries[1].name")
    x = "entries[0].signature.methods[0].inputs[0]"
    yield vec("v2-manifest-dtype-empty", "2.2.1", "the first input's dtype points at an empty string",
              [point(f"{x}.dtype", empty)], C.MANIFEST_VALUE_INVALID, table_of(x),
              "manifest.entries[0].signature.methods[0].inputs[0].dtype")
    yield vec("v2-manifest-named-data-key-empty", "2.2.2", "entry 0's second named-data key is an empty string",
              [point("entries[0].named_data[1]", empty)], C.MANIFEST_VALUE_INVALID, table_of("entries[0]"),
              "manifest.entries[0].named_data[1]")
    sha = m.target("entries[0].payload_sha256")
    yield vec("v2-manifest-sha256-short", "2.2.3", "entry 0's payload_sha256 holds 31 bytes", [(sha, 4, 31)],
              C.MANIFEST_VALUE_INVALID, table_of("entries[0]"), "manifest.entries[0].payload_sha256")
    yield vec("v2-manifest-method-twice", "2.2.5", "the second method is also named 'forward'",
              [point("entries[0].signature.methods[1].name", fw)], C.MANIFEST_VALUE_INVALID,
              table_of("entries[0].signature.methods[1]"), "manifest.entries[0].signature.methods[1].name")
    st = "entries[0].signature.methods[0].buffers[0]"
    yield vec("v2-manifest-buffer-name-empty", "2.2.6", "the mutable buffer's name points at an empty string "
              "(a buffer may have no name, but a name present must not be empty)",
              [point(f"{st}.name", empty)], C.MANIFEST_VALUE_INVALID, table_of(st),
              "manifest.entries[0].signature.methods[0].buffers[0].name")
    dim = "entries[0].signature.methods[0].inputs[0].shape[1]"
    yield vec("v2-manifest-dim-symbol-empty", "2.2.7", "the symbolic dimension's symbol is an empty string",
              [point(f"{dim}.symbol", empty)], C.MANIFEST_VALUE_INVALID, table_of(dim),
              "manifest.entries[0].signature.methods[0].inputs[0].shape[1]")
    # 2.3 the work budget: the provenance pair referenced 600 times now holds the 4200-byte value
    over = Edit(base)
    at = m.slot("entries[0].provenance[0].value")
    over.put_int(at, 4, long_ - at)
    over.reseal_manifest()
    got = outcome(bytes(over.buf))  # where the running total first passes the budget: fatpte's walk says
    v = over.vector("v2-manifest-over-budget", f"the provenance pair entry 0 references {RULES_REFS} times "
                    "holds the 4200-byte string: the manifest expands past 16 bytes per byte plus 1 MiB",
                    C.MANIFEST_OVER_BUDGET, got["offset"], got["field"])
    v.rule = "2.3.1"
    yield v


# ---------------------------------------------------------------------------------------------
# Signing vectors (specs/nfat-signature.md)
# ---------------------------------------------------------------------------------------------

TRUSTED_KEY_FILES = ("trusted-ed25519.pub.pem", "trusted-p256.pub.pem")
# The same P-256 key written with its point compressed: the same key id (section 5.2).
COMPRESSED_P256 = "trusted-p256-compressed.pub.pem"


def _seed(label: str) -> bytes:
    return hashlib.sha256(f"fatpte conformance key {label}".encode()).digest()


def test_key(label: str) -> Any:
    """A private key derived from a fixed seed, so the vectors are the same on every run (Ed25519
    and RFC 6979 ECDSA signatures are deterministic): for these vectors only, never for signing."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if label.startswith("p256"):
        order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
        return ec.derive_private_key(int.from_bytes(_seed(label), "big") % (order - 1) + 1, ec.SECP256R1())
    return ed25519.Ed25519PrivateKey.from_private_bytes(_seed(label))


def trusted_keys() -> list[Any]:
    return [test_key("ed25519"), test_key("p256")]


def _public_pem(private: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    pem: bytes = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
    return pem


def key_files() -> dict[str, tuple[bytes, ErrorCode | None, str]]:
    """The trusted-key files of specs/vectors (specs/nfat-signature.md section 5.4): name -> (bytes,
    None and the key id when a verifier must accept the file, or the code it must refuse it with
    and why). Deterministic: the keys come from fixed seeds, the certificate is signed with Ed25519
    over fixed dates."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import NameOID

    from fatpte.ops.signing import key_id

    ed, p256 = trusted_keys()
    pub = p256.public_key()
    spki = pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    point = pub.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
    compressed = b"\x30\x39" + spki[2:23] + b"\x03\x22\x00" + point
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fatpte conformance")])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(ed.public_key())
            .serial_number(1).not_valid_before(start).not_valid_after(start + datetime.timedelta(days=3650))
            .sign(ed, None).public_bytes(serialization.Encoding.PEM))
    private = p256.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    ok = None
    C = ErrorCode.INVALID_ARGUMENT
    return {
        TRUSTED_KEY_FILES[0]: (_public_pem(ed), ok, key_id(ed.public_key())),
        TRUSTED_KEY_FILES[1]: (_public_pem(p256), ok, key_id(pub)),
        COMPRESSED_P256: (_pem(compressed), ok, key_id(pub)),
        "refused-p256-explicit-parameters.pub.pem": (_pem(_explicit_p256(pub)), C, ("P-256 with explicit curve "
                                                     "parameters (RFC 5480 forbids them)")),
        "refused-certificate-first.pub.pem": (cert + _public_pem(ed), C, "a certificate before the public key"),
        "refused-private-key-first.pub.pem": (private + _public_pem(p256), C, "a private key before the public key"),
        "refused-text-first.pub.pem": (b"release key, 2026\n" + _public_pem(ed), C, "a line of text before the key"),
        "refused-two-keys.pub.pem": (_public_pem(ed) + _public_pem(p256), C, "two public keys"),
        "refused-certificate.pub.pem": (cert, C, "a certificate and no PUBLIC KEY block"),
        # Found by the trusted_keys fuzz target: Python let cryptography's UnsupportedAlgorithm escape.
        "refused-unknown-algorithm.pub.pem": (_pem(bytes.fromhex("302a3005060300656e032100") + bytes(range(32))), C,
                                              ("an algorithm OID no library knows (1.3.101.110 without its first "
                                               "byte)")),
    }


def _pem(der: bytes) -> bytes:
    import base64

    text = base64.b64encode(der).decode()
    lines = [text[i:i + 64] for i in range(0, len(text), 64)]
    return ("-----BEGIN PUBLIC KEY-----\n" + "\n".join(lines) + "\n-----END PUBLIC KEY-----\n").encode()


def _explicit_p256(public: Any) -> bytes:
    """The SubjectPublicKeyInfo of a P-256 key with the curve's parameters written out
    (specifiedCurve), as `openssl ec -param_enc explicit` writes it."""
    from cryptography.hazmat.primitives import serialization

    def tlv(tag: int, body: bytes) -> bytes:
        n = len(body)
        if n < 0x80:
            return bytes([tag, n]) + body
        size = n.to_bytes((n.bit_length() + 7) // 8, "big")
        return bytes([tag, 0x80 | len(size)]) + size + body

    def integer(v: int) -> bytes:
        return tlv(0x02, v.to_bytes((v.bit_length() + 8) // 8, "big"))

    p = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
    b = 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
    g = bytes.fromhex("046B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296"
                      "4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5")
    n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    field = tlv(0x30, tlv(0x06, bytes.fromhex("2a8648ce3d0101")) + integer(p))
    curve = tlv(0x30, tlv(0x04, (p - 3).to_bytes(32, "big")) + tlv(0x04, b.to_bytes(32, "big")))
    params = tlv(0x30, integer(1) + field + curve + tlv(0x04, g) + integer(n) + integer(1))
    point = public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return tlv(0x30, tlv(0x30, tlv(0x06, bytes.fromhex("2a8648ce3d0201")) + params) + tlv(0x03, b"\0" + point))


def loaded_keys(names: Sequence[str]) -> list[Any]:
    """The trusted keys of the key files `names`, read as a verifier reads them (load_public_key)."""
    from fatpte.ops.signing import load_public_key

    files = key_files()
    with tempfile.TemporaryDirectory() as tmp:
        out = []
        for name in names:
            (Path(tmp) / name).write_bytes(files[name][0])
            out.append(load_public_key(Path(tmp) / name)._replace(source=name))
        return out


def verify_outcome(data: bytes, keys: Sequence[str] = TRUSTED_KEY_FILES, downgrade: str | None = None,
                   ) -> tuple[tuple[ErrorCode | None, int | None, str | None], tuple[str, ...], str]:
    """What verifying `data` with the trusted-key files `keys` (with the downgrade check for the
    named profile `downgrade`) reports first, the entries it finds thinned, and the first error's
    message. A container that does not open reports its structural error, as one whose manifest
    cannot be read or whose keys name no segment does (specs/nfat-signature.md section 6)."""
    from fatpte.device.profile import DeviceProfile
    from fatpte.ops.signing import verify_buffer

    profile = None if downgrade is None else DeviceProfile.load(downgrade)
    try:
        report = verify_buffer(data, loaded_keys(keys), downgrade=profile)
    except fatpte.FatpteError as exc:
        return (exc.code, exc.offset, exc.field), (), str(exc)
    first = report.first_error
    if first is None:
        return (None, None, None), report.thinned, ""
    return (first.code, first.offset, first.field), report.thinned, first.describe()


def signed(data: bytes, key: Any) -> bytes:
    from fatpte.ops.signing import sign

    with tempfile.TemporaryDirectory() as tmp:
        src, dest = Path(tmp) / "c.nfat", Path(tmp) / "s.nfat"
        src.write_bytes(data)
        sign(src, key, dest)
        return dest.read_bytes()


def region(data: bytes) -> tuple[int, int]:
    slot = L.SIGNATURE_SLOT_OFFSET
    return _u(data, slot, 8), _u(data, slot + 8, 4)


def bundle_of(data: bytes) -> bytes:
    off, size = region(data)
    return data[off : off + size]


def with_bundle(data: bytes, bundle: bytes) -> bytearray:
    """`data`, a signed container whose signature region is last, with `bundle` in that region."""
    off, _ = region(data)
    buf = bytearray(data[:off]) + bundle
    slot = L.SIGNATURE_SLOT_OFFSET
    buf[slot + 8 : slot + 12] = len(bundle).to_bytes(4, "little")
    buf[slot + 12 : slot + 16] = crc32c(bundle).to_bytes(4, "little")
    buf[_hat("container_size") : _hat("container_size") + 8] = len(buf).to_bytes(8, "little")
    reseal(buf)
    return buf


def rebundle(bundle: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    """The bundle with its JSON changed by `change` (the signature is left as it was)."""
    doc = json.loads(bundle)
    change(doc)
    return json.dumps(doc, separators=(",", ":")).encode()


def restate(bundle: bytes, change: Callable[[dict[str, Any]], None]) -> bytes:
    """The bundle with its statement changed by `change`, not signed again."""
    import base64

    def edit_payload(doc: dict[str, Any]) -> None:
        env = doc["dsseEnvelope"]
        statement = json.loads(base64.b64decode(env["payload"]))
        change(statement)
        env["payload"] = base64.b64encode(json.dumps(statement, separators=(",", ":")).encode()).decode()

    return rebundle(bundle, edit_payload)


def signed_vectors(by: dict[str, Vector]) -> Iterator[Vector]:
    """Signed containers (valid, and verifying) and one vector per threat of issue 18."""
    C = ErrorCode
    S = fatpte.Specialization
    ed, p256, stranger = test_key("ed25519"), test_key("p256"), test_key("untrusted")
    ok: tuple[None, None, None] = (None, None, None)

    base = signed(by["v2-named-data"].data, ed)
    yield Vector("v2-signed", base, "v2-named-data signed with Ed25519: two entries, two named-data keys", verify=ok)
    r2 = signed(by["v2-manifest-revision-2"].data, p256)
    yield Vector("v2-signed-p256", r2, "v2-manifest-revision-2 signed with ECDSA P-256",
                 verify=ok)
    req = signed(by["v2-manifest"].data, ed)
    yield Vector("v2-signed-requirements", req, "v2-manifest (requirements on both entries) signed with Ed25519", verify=ok)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "s.nfat").write_bytes(base)
        fatpte.thin(Path(tmp) / "s.nfat", Path(tmp) / "t.nfat", names=["gpu"])
        thin = (Path(tmp) / "t.nfat").read_bytes()
    yield Vector("v2-signed-thinned", thin, "v2-signed thinned to entry 'gpu': the statement still vouches for "
                 "it; 'cpu' and key 'w.b' are reported as thinned; with the downgrade check, refused on a "
                 "device where 'cpu' would win", verify=ok,
                 thinned=("cpu",), downgrade=("x86-64-v3", ErrorCode.SIGNED_RECORD_MISMATCH, region(thin)[0],
                                              "signature.statement.predicate.entries[0]"))

    def sv(src: bytes, base_name: str, fn: Callable[[Edit], object], name: str, description: str,
           code: ErrorCode | None, offset: int | None, fld: str | None,
           verify: tuple[ErrorCode | None, int | None, str | None] | None = None, *, seal: bool = True,
           derived: bool = True) -> Vector:
        """A copy of `src` changed by `fn`. Derived: one defect of the valid vector `base_name`,
        its changed bytes declared; else (a threat that changes several fields) not derived."""
        e = Edit(Vector(base_name, src, ""))
        fn(e)
        if seal:
            e.seal()
        v = e.vector(name, description, code, offset, fld)
        v.verify = verify if verify is not None else ok
        if not derived:
            v.base, v.changed = None, []
        return v

    sig_off, sig_size = region(base)
    slot = L.SIGNATURE_SLOT_OFFSET
    # -- 12xx the signature region (validate) -----------------------------------------------
    yield sv(base, "v2-signed", lambda e: e.put_int(slot + 8, 4, L.MAX_SIGNATURE_SIZE + 1), "v2-signature-too-large",
             "signature_size is 64 MiB + 1", C.SIGNATURE_TOO_LARGE, slot + 8, "header.signature_size",
             (C.SIGNATURE_TOO_LARGE, slot + 8, "header.signature_size"))
    yield sv(base, "v2-signed", lambda e: e.put_int(slot + 8, 4, sig_size + 8), "v2-signature-past-end",
             "the signature region reaches 8 bytes past the end", C.SIGNATURE_OUT_OF_BOUNDS, slot + 8,
             "header.signature_size", (C.SIGNATURE_OUT_OF_BOUNDS, slot + 8, "header.signature_size"))
    yield sv(base, "v2-signed", lambda e: e.put_int(slot, 8, sig_off - 4) and e.put_int(slot + 8, 4, sig_size + 4),
             "v2-misaligned-signature", "the signature region starts 4 bytes earlier, off its 8-byte alignment",
             C.MISALIGNED_SIGNATURE, slot, "header.signature_offset",
             (C.MISALIGNED_SIGNATURE, slot, "header.signature_offset"))
    flip = sig_off + 20
    yield sv(base, "v2-signed", lambda e: e.put(flip, bytes([base[flip] ^ 0x20])), "v2-signature-byte-flipped",
             "one bit of the bundle flipped, its CRC32C not updated (verify, which does not validate, reads "
             "the flipped mediaType)", C.SIGNATURE_CHECKSUM_MISMATCH, slot + 12, "header.signature_checksum",
             (C.SIGNATURE_UNSUPPORTED, sig_off, "signature.mediaType"), seal=False)
    grown_empty = sv(base, "v2-signed", lambda e: e.put_int(slot + 8, 4, 0) and e.put_int(slot + 12, 4, 0),
                     "v2-absent-signature-offset-not-zero",
                     "signature_size and signature_checksum are 0 but signature_offset is not",
                     C.ABSENT_SIGNATURE_NOT_ZERO, slot, "header.signature_offset",
                     (C.ABSENT_SIGNATURE_NOT_ZERO, slot, "header.signature_offset"))
    yield grown_empty
    first = Edit(Vector("v2-signed", base, "")).entry(0, "offset")
    yield sv(base, "v2-signed", lambda e: e.put_int(slot, 8, first), "v2-signature-overlaps-payload",
             "the signature region placed on entry 0's payload", C.REGIONS_OVERLAP, slot, "header.signature_offset",
             (C.REGIONS_OVERLAP, slot, "header.signature_offset"))

    # -- 13xx threats (valid containers that must not verify) ------------------------------
    be = Edit(Vector("v2-signed", base, ""))
    p0 = be.entry(0, "offset")

    def payload_changed(e: Edit) -> None:
        e.put(p0 + 3, bytes([base[p0 + 3] ^ 1]))
        e.set_entry(0, "checksum", crc32c(bytes(e.buf[p0 : p0 + e.entry(0, "size")])))
        # The manifest's payload_sha256 of 'cpu' would catch it too: the attacker rewrites it.
        digest = hashlib.sha256(bytes(e.buf[p0 : p0 + e.entry(0, "size")])).digest()
        at, _ = e.manifest_field("entries[0].payload_sha256[0]")
        e.put(at, digest)
        e.reseal_manifest()

    yield sv(base, "v2-signed", payload_changed, "v2-sig-payload-modified",
             "entry 'cpu''s payload changed after signing, with its CRC32C and manifest SHA-256 recomputed: "
             "the manifest record differs too, and is reported first", None, None, None,
             (C.SIGNED_RECORD_MISMATCH, be.header("manifest_offset") + _entry_position(base, 0),
              "manifest.entries[0]"), derived=False)
    r2e = Edit(Vector("v2-signed-p256", r2, ""))
    q0 = r2e.entry(0, "offset")

    def payload_only(e: Edit) -> None:
        e.put(q0 + 9, bytes([r2[q0 + 9] ^ 0x40]))
        e.set_entry(0, "checksum", crc32c(bytes(e.buf[q0 : q0 + e.entry(0, "size")])))

    yield sv(r2, "v2-signed-p256", payload_only, "v2-sig-payload-bytes-modified",
             "entry 'accel''s payload changed after signing, its CRC32C recomputed", None, None, None,
             (C.SIGNED_PAYLOAD_MISMATCH, r2e.entry_at(0, "offset"), "entries[0].offset"))
    s1 = be.segment_at(1, "offset")
    seg1 = _u(base, s1, 8)

    def segment_changed(e: Edit) -> None:
        e.put(seg1 + 2, bytes([base[seg1 + 2] ^ 4]))
        e.set_segment(1, "checksum", crc32c(bytes(e.buf[seg1 : seg1 + _u(base, s1 + 8, 8)])))

    yield sv(base, "v2-signed", segment_changed, "v2-sig-named-data-modified",
             "the bytes of key 'w.b' (segment 1) changed after signing, its CRC32C recomputed", None, None, None,
             (C.SIGNED_NAMED_DATA_MISMATCH, s1, "segments[1].offset"))
    yield sv(r2, "v2-signed-p256", lambda e: e.set_manifest("entries[0].executorch_backends[0]", b"MpxBackend"),
             "v2-sig-manifest-record-modified",
             "entry 'accel''s ExecuTorch backend renamed in the manifest after signing", None, None, None,
             (C.SIGNED_RECORD_MISMATCH, r2e.header("manifest_offset") + _entry_position(r2, 0),
              "manifest.entries[0]"), seal=False)
    rq = Edit(Vector("v2-signed-requirements", req, ""))
    yield sv(req, "v2-signed-requirements", lambda e: e.set_manifest("entries[0].requires.cpu_features[0]",
                                                                     b"sse2"),
             "v2-sig-requirements-modified",
             "entry 'cpu' now requires sse2 instead of avx2, changed after signing", None, None, None,
             (C.SIGNED_RECORD_MISMATCH, rq.header("manifest_offset") + _entry_position(req, 0),
              "manifest.entries[0]"), seal=False)
    yield sv(req, "v2-signed-requirements", lambda e: e.set_entry(1, "priority", 100), "v2-sig-priority-modified",
             "entry 'gpu''s priority raised to 100 after signing", None, None, None,
             (C.SIGNED_RECORD_MISMATCH, rq.entry_at(1, "priority"), "entries[1].priority"))

    def swapped(e: Edit) -> None:
        for fld in ("offset", "checksum"):
            a, b = e.entry(0, fld), e.entry(1, fld)
            e.set_entry(0, fld, b)
            e.set_entry(1, fld, a)

    yield sv(r2, "v2-signed-p256", swapped, "v2-sig-entries-swapped",
             "entries 'accel' and 'portable' point at each other's payload", None, None, None,
             (C.SIGNED_PAYLOAD_MISMATCH, r2e.entry_at(0, "offset"), "entries[0].offset"), derived=False)
    grown3 = packed([*_named_data_specs(), S("cuda", blob("added", 40), name="extra")],
                    named_data={"w.a": blob("nd-s0", 96), "w.b": blob("nd-s1", 10)})
    added = bytes(with_bundle(signed(grown3, ed), bundle_of(base)))
    more_keys = packed(_named_data_specs(), named_data={"w.a": blob("nd-s0", 96), "w.b": blob("nd-s1", 10),
                                                         "w.c": blob("extra-key", 16)})
    key_added = bytes(with_bundle(signed(more_keys, ed), bundle_of(base)))
    with fatpte.Container.from_buffer(key_added) as c:
        assert c.manifest is not None and [k for k, _ in c.manifest.named_data] == ["w.a", "w.b", "w.c"]
        key_at = c.header.manifest_offset
    yield Vector("v2-sig-named-data-added", key_added, "v2-signed with a named-data key 'w.c' added and the "
                 "original signature kept", verify=(C.NAMED_DATA_NOT_SIGNED, key_at, "manifest.named_data[2]"))
    ae = Edit(Vector("x", added, ""))
    yield Vector("v2-sig-entry-added", added, "v2-signed with an entry 'extra' added and the original "
                 "signature kept", verify=(C.ENTRY_NOT_SIGNED, ae.entry_at(2, "name"),
                                                             "entries[2].name"))
    other = signed(by["v2-many-entries"].data, ed)
    replayed = bytes(with_bundle(base, bundle_of(other)))
    yield Vector("v2-sig-replayed", replayed, "v2-signed carrying the signature of v2-many-entries (signed by a "
                 "trusted key)", verify=(C.SIGNATURE_NOT_FOR_CONTAINER, sig_off, "signature"))
    untrusted = signed(by["v2-named-data"].data, stranger)
    yield Vector("v2-sig-untrusted-key", untrusted, "v2-named-data signed by a key that is not trusted", verify=(C.SIGNATURE_UNTRUSTED, sig_off,
                                               "signature.dsseEnvelope.signatures[0].sig"))
    yield Vector("v2-sig-stripped", by["v2-named-data"].data, "v2-signed with its signature region removed "
                 "(fatpte unsign gives back v2-named-data byte for byte); the signature lies beside it, as "
                 "v2-sig-stripped.nfat.sig, and is not read unless given",
                 verify=(C.SIGNATURE_REQUIRED, None, "signature"), sidecar=(".sig", bundle_of(base)))

    def threat(name: str, bundle: bytes, description: str, code: ErrorCode, fld: str) -> Vector:
        return Vector(name, bytes(with_bundle(base, bundle)), description,
                      verify=(code, sig_off, fld))

    b0 = bundle_of(base)
    yield threat("v2-sig-statement-modified", restate(b0, lambda st: st["predicate"]["entries"][1].update(
        priority=50)), "the statement raises 'gpu''s priority without being signed again", C.SIGNATURE_INVALID,
        "signature.dsseEnvelope.signatures[0].sig")
    yield threat("v2-sig-bad-base64", rebundle(b0, lambda d: d["dsseEnvelope"].update(
        payload="!" + d["dsseEnvelope"]["payload"][1:])), "the envelope's payload is not base64",
        C.SIGNATURE_MALFORMED, "signature.dsseEnvelope.payload")
    yield threat("v2-sig-wrong-payload-type", rebundle(b0, lambda d: d["dsseEnvelope"].update(
        payloadType="application/json")), "the envelope's payloadType is application/json",
        C.SIGNATURE_UNSUPPORTED, "signature.dsseEnvelope.payloadType")
    yield threat("v2-sig-wrong-media-type", rebundle(b0, lambda d: d.update(
        mediaType="application/vnd.dev.sigstore.bundle.v0.1+json")), "the bundle's media type is v0.1",
        C.SIGNATURE_UNSUPPORTED, "signature.mediaType")
    yield threat("v2-sig-huge-signature-field", rebundle(b0, lambda d: d["dsseEnvelope"]["signatures"][0].update(
        sig="A" * (1 << 20))), "a 1 MiB sig field: refused by its length before it is decoded",
        C.SIGNATURE_MALFORMED, "signature.dsseEnvelope.signatures[0].sig")
    yield threat("v2-sig-too-many-signatures", rebundle(b0, lambda d: d["dsseEnvelope"].update(
        signatures=d["dsseEnvelope"]["signatures"] * 17)), "17 signatures in the envelope",
        C.SIGNATURE_MALFORMED, "signature.dsseEnvelope.signatures")
    yield threat("v2-sig-deep-json", b'{"mediaType":' + b"[" * 5000 + b"]" * 5000 + b"}",
                 "JSON nested 5000 levels deep", C.SIGNATURE_MALFORMED, "signature")
    yield threat("v2-sig-duplicate-key", b0[:-2] + b',"mediaType":"x"}\n',
                 "the bundle names mediaType twice", C.SIGNATURE_MALFORMED, "signature")
    yield threat("v2-sig-not-json", b"\x00\x01 this is not a bundle", "the region holds bytes that are not JSON",
                 C.SIGNATURE_MALFORMED, "signature")
    yield threat("v2-sig-float", rebundle(b0, lambda d: d.update(extra=1.5)), "a member holds the number 1.5",
                 C.SIGNATURE_MALFORMED, "signature")
    yield threat("v2-sig-bundle-too-many-values", rebundle(b0, lambda d: d.update(extra=[0] * 5000)),
                 "an ignored member of 5000 zeros, added without any key: the bundle holds more than 4096 values",
                 C.SIGNATURE_MALFORMED, "signature")

    # -- issue 33: what must be readable before the signature, and key ids --------------------
    bm = Edit(Vector("v2-signed", base, ""))
    moff = bm.header("manifest_offset")
    wb = ManifestMap(bm.buf, moff).target("named_data[1].key")
    yield sv(base, "v2-signed", lambda e: e.set_manifest("named_data[1].segment", 99), "v2-sig-key-past-segment-table",
             "signed, then key 'w.b' pointed at segment 99 of 2: the key cannot be resolved, so nothing is verified "
             "(validate's E0414)", C.NAMED_DATA_BAD_SEGMENT, moff, "manifest.named_data[1].segment",
             (C.NAMED_DATA_BAD_SEGMENT, moff, "manifest.named_data[1].segment"), seal=False)
    yield sv(base, "v2-signed", lambda e: e.set_manifest("named_data[1].key", b"w.a"), "v2-sig-key-duplicated",
             "signed, then key 'w.b' renamed 'w.a', so 'w.a' is listed twice: the manifest cannot be read (E0415)",
             C.NAMED_DATA_KEYS_UNSORTED, bm.manifest_field("named_data[1]")[0], "manifest.named_data[1].key",
             (C.NAMED_DATA_KEYS_UNSORTED, bm.manifest_field("named_data[1]")[0], "manifest.named_data[1].key"),
             seal=False)
    yield sv(base, "v2-signed", lambda e: e.set_manifest("named_data[1].key", b"w.\xff"), "v2-sig-key-not-utf8",
             "signed, then key 'w.b' given the byte 0xff: the manifest cannot be read (E0407), not E1309",
             C.MANIFEST_CORRUPT, wb + 6, "manifest.named_data[1].key",
             (C.MANIFEST_CORRUPT, wb + 6, "manifest.named_data[1].key"), seal=False)
    r2_sig, _ = region(r2)
    altered = restate(bundle_of(r2), lambda st: st["predicate"]["entries"][0].update(priority=7))
    yield Vector("v2-sig-statement-modified-compressed-key", bytes(with_bundle(r2, altered)),
                 "v2-signed-p256 with its statement altered, verified with the P-256 key read from a "
                 "compressed-point file: the key has the id the hint names, so E1304, not E1305",
                 verify=(C.SIGNATURE_INVALID, r2_sig, "signature.dsseEnvelope.signatures[0].sig"),
                 keys=(TRUSTED_KEY_FILES[0], COMPRESSED_P256))
    yield Vector("v2-sig-compressed-key", r2, "v2-signed-p256 verified with the P-256 key read from a "
                 "compressed-point file", verify=ok, keys=(COMPRESSED_P256,))


# -- issue 42, G1: golden calls a signature vouches for (specs/nfat-signature.md section 6.1) -----


def remanifested(data: bytes, change: Callable[[Any], Any]) -> bytes:
    """`data`, an unsigned v2 container, with its manifest decoded, changed by `change` and written
    again: every entry and segment keeps its table fields (name, backend id, kind, priority,
    alignment, flags), each region moved to the next offset its alignment allows. What anyone
    without a key can do to a container's golden calls."""
    from fatpte.manifest.codec import encode

    with fatpte.Container.from_buffer(data) as c:
        assert c.manifest is not None and c.header.header_size == L.V2_HEADER_SIZE
        manifest = encode(change(c.manifest))
        entries = [(e, bytes(c.payload(e))) for e in c.entries]
        segments = [(s, bytes(c.buffer[s.offset : s.end])) for s in c.segments]
        flags = c.header.flags
    table_end = L.V2_HEADER_SIZE + len(entries) * L.V2_ENTRY_SIZE + len(segments) * L.V2_SEGMENT_SIZE
    moff = _align(table_end, L.MANIFEST_ALIGNMENT)
    cursor = moff + len(manifest)
    at: dict[int, int] = {}  # old offset -> new: a payload stored once for several entries stays so
    for old, alignment, size in [(e.offset, e.alignment, len(b)) for e, b in entries] + \
            [(g.offset, g.alignment, len(b)) for g, b in segments]:
        if old not in at:
            at[old] = _align(cursor, alignment)
            cursor = at[old] + size
    out = bytearray(cursor)
    out[0:L.V2_HEADER_SIZE] = _HDR.build({
        "magic": L.MAGIC, "version": L.VERSION_2, "header_size": L.V2_HEADER_SIZE, "entry_size": L.V2_ENTRY_SIZE,
        "entry_count": len(entries), "segment_entry_size": L.V2_SEGMENT_SIZE, "segment_count": len(segments),
        "flags": flags, "container_size": cursor, "manifest_offset": moff, "manifest_size": len(manifest),
        "manifest_checksum": crc32c(manifest), "header_checksum": 0,
    })
    for i, (e, payload) in enumerate(entries):
        base = L.V2_HEADER_SIZE + i * L.V2_ENTRY_SIZE
        out[base : base + _ENT.size] = _ENT.build({
            "name": e.name.encode().ljust(32, b"\0"), "backend_id": e.backend_id.encode().ljust(32, b"\0"),
            "offset": at[e.offset], "size": e.size, "payload_kind": e.payload_kind, "alignment": e.alignment,
            "checksum": e.checksum, "priority": e.priority, "flags": e.flags, "reserved": 0})
        out[at[e.offset] : at[e.offset] + e.size] = payload
    for k, (g, seg) in enumerate(segments):
        base = table_end - (len(segments) - k) * L.V2_SEGMENT_SIZE
        out[base : base + _SEG.size] = _SEG.build({"offset": at[g.offset], "size": g.size, "alignment": g.alignment,
                                                  "checksum": g.checksum, "flags": g.flags, "reserved": 0})
        out[at[g.offset] : at[g.offset] + g.size] = seg
    out[moff : moff + len(manifest)] = manifest
    reseal(out)
    return bytes(out)


def with_golden(data: bytes, name: str, calls: Sequence[Any], *, digest: bool = False) -> bytes:
    """`data` (unsigned) with entry `name`'s golden calls set to `calls` (GoldenCalls) and its
    provenance's `fatpte.golden.sha256` removed, or (`digest`) stating their digest."""
    from fatpte.manifest.model import GOLDEN_DIGEST_KEY, golden_digest

    def change(m: Any) -> Any:
        def one(e: Any) -> Any:
            if e.name != name:
                return e
            prov = tuple(kv for kv in e.provenance if kv[0] != GOLDEN_DIGEST_KEY)
            if digest and calls:
                prov += ((GOLDEN_DIGEST_KEY, golden_digest(tuple(calls))),)
            return e._replace(golden=tuple(calls), provenance=prov)
        return m._replace(entries=tuple(one(e) for e in m.entries))
    return remanifested(data, change)


def golden_of_entries(data: bytes) -> dict[str, Any]:
    """Each entry's golden calls (GoldenCalls), by name."""
    with fatpte.Container.from_buffer(data) as c:
        assert c.manifest is not None
        return {e.name: e.golden for e in c.manifest.entries}


def signed_before_golden(data: bytes, key: Any) -> bytes:
    """`data`, signed, signed again with its statement as revision 2 wrote it: no `golden_sha256`
    (specs/nfat-signature.md section 3.2), so its golden calls are covered only by a digest the
    signed provenance states."""
    import base64

    from fatpte.ops.signing import bundle_for

    statement = json.loads(base64.b64decode(json.loads(bundle_of(data))["dsseEnvelope"]["payload"]))
    for e in statement["predicate"]["entries"]:
        del e["golden_sha256"]
    return bytes(with_bundle(data, bundle_for(statement, key)))


def golden_signing_vectors() -> Iterator[Vector]:
    """Golden calls added to a signed entry that had none, replaced, and removed, under a statement
    of revision 3 (E1308 at the entry's golden calls: a signed load refuses the container) and one
    of revision 2 (verifies; the calls no signed record vouches for are reported as unsigned, and a
    signed self-test does not make them). The base is v3-golden with entry 'cpu''s calls stated
    without a digest in its provenance (a writer that does not record it: 11.3 says SHOULD) and
    entry 'gpu' without calls; every forged copy keeps the golden tensors, signed named data."""
    C = ErrorCode
    ed = test_key("ed25519")
    golden = golden_packed()
    calls = golden_of_entries(golden)
    base = with_golden(with_golden(golden, "cpu", calls["cpu"]), "gpu", ())
    forged = {
        "added": (with_golden(base, "gpu", calls["gpu"]), "gpu", 1,
                  "golden calls added to entry 'gpu', which had none (the golden tensors are signed keys)"),
        "replaced": (with_golden(base, "cpu", calls["cpu"][::-1]), "cpu", 0,
                     "entry 'cpu''s two golden calls swapped (the same keys, the other order)"),
        "removed": (with_golden(base, "cpu", ()), "cpu", 0, "entry 'cpu''s golden calls removed"),
    }
    for revision, sign_base in (("", signed), ("-r2", lambda d, k: signed_before_golden(signed(d, k), k))):
        signed_base = sign_base(base, ed)
        before = " (a statement of revision 2: no golden_sha256)" if revision else ""
        yield Vector(f"v3-sig{revision}-golden", signed_base,
                     f"v3-golden with 'cpu''s calls and no digest in its provenance, 'gpu' without calls, "
                     f"signed{before}", verify=(None, None, None),
                     unsigned_golden=("cpu",) if revision else ())
        for what, (data, name, index, description) in forged.items():
            v = bytes(with_bundle(signed(data, ed), bundle_of(signed_base)))
            if revision:  # nothing in the statement speaks of golden calls: they are unsigned
                verify: tuple[ErrorCode | None, int | None, str | None] = (None, None, None)
                unsigned = tuple(n for n, c in golden_of_entries(v).items() if c)
            else:
                verify = (C.SIGNED_RECORD_MISMATCH, _u(v, _hat("manifest_offset"), 8) + _entry_position(v, index),
                          f"manifest.entries[{index}].golden")
                unsigned = ()
            yield Vector(f"v3-sig{revision}-golden-{what}", v, f"v3-sig{revision}-golden with {description} "
                         "after signing, the signature kept", verify=verify, unsigned_golden=unsigned)
    import base64

    from fatpte.ops.signing import bundle_for

    statement = json.loads(base64.b64decode(json.loads(bundle_of(signed(base, ed)))["dsseEnvelope"]["payload"]))
    statement["predicate"]["entries"][1]["golden_sha256"] = "0" * 63 + "G"
    bad = bytes(with_bundle(signed(base, ed), bundle_for(statement, ed)))
    yield Vector("v3-sig-golden-digest-not-hex", bad, "v3-sig-golden signed with a statement whose entry 'gpu' "
                 "states golden_sha256 with a character that is not a lowercase hexadecimal digit",
                 verify=(C.SIGNATURE_MALFORMED, region(bad)[0], "signature.statement.predicate.entries[1].golden_sha256"))
    digested = signed_before_golden(signed(golden, ed), ed)
    yield Vector("v3-sig-r2-golden-digested", digested, "v3-golden signed with a statement of revision 2: both "
                 "entries' provenance states fatpte.golden.sha256, which the signed records cover, so their "
                 "calls are signed", verify=(None, None, None), unsigned_golden=())


def golden_calls() -> list[dict[str, Any]]:
    """Two golden calls of the signature of v2-named-data's entries: forward(float32[1, 3]) -> float32[1]."""
    def tensor(shape: list[int], values: list[float]) -> dict[str, Any]:
        return {"dtype": "float32", "shape": shape, "values": values}
    return [{"inputs": [tensor([1, 3], [0.5, -1.0, 2.0])], "outputs": [tensor([1], [1.5])]},
            {"inputs": [tensor([1, 3], [0.25, 0.0, -4.0])], "outputs": [tensor([1], [-3.75])]}]


def golden_packed() -> bytes:
    """v2-named-data's entries with golden calls: entry 'gpu' with a wider tolerance."""
    import dataclasses

    cpu, gpu = _named_data_specs()
    gpu = dataclasses.replace(gpu, golden_tolerance={"atol": 1e-3, "rtol": 1e-2})
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "c.nfat"
        fatpte.pack([cpu, gpu], dest, named_data={"w.a": blob("nd-s0", 96), "w.b": blob("nd-s1", 10)},
                    golden=golden_calls())
        return dest.read_bytes()


def _golden_vectors(by: dict[str, Vector]) -> Iterator[Vector]:
    """Defects of golden calls (specs/nfat-manifest.md section 11), each one edit of v3-golden."""
    import struct

    C = ErrorCode
    base = by["v3-golden"]
    probe = Edit(base)
    moff = probe.header("manifest_offset")
    m = ManifestMap(probe.buf, moff)
    e0 = moff + _entry_position(base.data, 0)
    out0 = "entries[0].golden[0].outputs[0]"

    def vec(name: str, description: str, fn: Callable[[Edit], object], code: ErrorCode, offset: int,
            fld: str, rule: str | None = None) -> Vector:
        e = Edit(base)
        fn(e)
        e.reseal_manifest()
        v = e.vector(name, description, code, offset, fld)
        v.rule = rule
        return v

    def f64(value: float) -> bytes:
        return struct.pack("<d", value)

    yield vec("v3-golden-atol-negative", "entry 'cpu''s first golden output has atol -1",
              lambda e: e.put(e.manifest_field(f"{out0}.atol")[0], f64(-1.0)), C.MANIFEST_VALUE_INVALID,
              m.target(out0), f"manifest.{out0}.atol", "2.2.11")
    yield vec("v3-golden-rtol-nan", "entry 'cpu''s first golden output has rtol NaN",
              lambda e: e.put(e.manifest_field(f"{out0}.rtol")[0], f64(math.nan)), C.MANIFEST_VALUE_INVALID,
              m.target(out0), f"manifest.{out0}.rtol", "2.2.11")
    yield vec("v3-golden-digest-mismatch", "entry 'cpu''s first golden output's atol changed from 1e-05 to 2e-05: "
              "its calls no longer hash to its provenance's fatpte.golden.sha256",
              lambda e: e.put(e.manifest_field(f"{out0}.atol")[0], f64(2e-5)), C.GOLDEN_DIGEST_MISMATCH, e0,
              "manifest.entries[0].provenance")
    method = m.target("entries[0].golden[0].method")
    yield vec("v3-golden-method-unknown", "the golden calls' method 'forward' reads 'fxrward' (a string both "
              "entries' calls share)", lambda e: e.put(method + 4 + 1, b"x"), C.GOLDEN_CALL_MISMATCH, e0,
              "manifest.entries[0].golden[0].method")
    key = m.target("entries[0].golden[0].inputs[0]")
    yield vec("v3-golden-key-undefined", "the first golden call's input key ends in 'z' (a string both entries' "
              "calls share): no named-data key has that name",
              lambda e: e.put(key + 4 + _u(probe.buf, key, 4) - 1, b"z"), C.GOLDEN_KEY_INVALID, e0,
              "manifest.entries[0].golden[0].inputs[0]")
    with fatpte.Container.from_buffer(base.data) as c:
        assert c.manifest is not None
        wanted = c.manifest.entries[0].golden[0].inputs[0]
        k = next(i for i, (name, _) in enumerate(c.manifest.named_data) if name == wanted)

    def transposed(e: Edit) -> None:  # sizes[0] and sizes[1] lie side by side: one 8-byte write
        e.put(e.manifest_field(f"named_data[{k}].layout.sizes[0]")[0], (3).to_bytes(4, "little") + (1).to_bytes(4, "little"))
    yield vec("v3-golden-shape-mismatch", "the first golden call's input tensor has layout float32[3, 1] (its "
              "segment's 12 bytes still), the method takes float32[1, 3]", transposed, C.GOLDEN_CALL_MISMATCH, e0,
              "manifest.entries[0].golden[0].inputs[0]")
    yield rewritten(base, "v3-golden-key-without-layout", "the first golden call's input key has no tensor "
                    "layout: it names bytes with no dtype or shape",
                    lambda man: man._replace(layouts=tuple(kv for kv in man.layouts if kv[0] != wanted)),
                    C.GOLDEN_KEY_INVALID, "entries[0]", "manifest.entries[0].golden[0].inputs[0]")
    yield rewritten(base, "v3-golden-entry-without-signature", "entry 'cpu' states golden calls and no program "
                    "signature to check them against",
                    lambda man: man._replace(entries=(man.entries[0]._replace(signature=None), *man.entries[1:])),
                    C.GOLDEN_CALL_MISMATCH, "entries[0]", "manifest.entries[0].golden[0]")


def _adapter_vectors(by: dict[str, Vector]) -> Iterator[Vector]:
    """Signature adapters (specs/nfat-manifest.md 5.3, revision 4): v3-golden's manifest written
    again with entry 'gpu''s input and output declaring a program dtype; the valid pair, and pairs
    value rule 2.2.12 refuses."""
    from fatpte.manifest.codec import encode

    base = by["v3-golden"]
    tensor = "entries[1].signature.methods[0].inputs[0]"

    def adapted(program_dtype: str, dtype: str = "float32") -> Callable[[Any], Any]:
        def change(man: Any) -> Any:
            e = man.entries[1]
            m = e.signature.methods[0]
            t_in = m.inputs[0]._replace(dtype=dtype, program_dtype=program_dtype)
            t_out = m.outputs[0]._replace(program_dtype="float16")
            sig = e.signature._replace(methods=(m._replace(inputs=(t_in,), outputs=(t_out,)),))
            return man._replace(entries=(man.entries[0], e._replace(signature=sig), *man.entries[2:]))
        return change

    with fatpte.Container.from_buffer(base.data) as c:
        assert c.manifest is not None
        manifest = adapted("float16")(c.manifest)
        entries = [(e.name, e.backend_id, bytes(c.payload(e))) for e in c.entries]
        segments = [bytes(c.named_data(next(k for k, s in c.manifest.named_data if s == i)))
                    for i in range(len(c.segments))]
    yield Vector("v4-adapter", with_manifest(entries, encode(manifest), segments),
                 "v3-golden with entry 'gpu''s input and output float32 in the signature and float16 in its "
                 "program (program_dtype): a signature adapter; its golden calls stay float32 (manifest revision 4)")
    for name, program_dtype, dtype, what in (
            ("v4-adapter-program-dtype-int64", "int64", "float32", "int64 behind float32"),
            ("v4-adapter-float16-behind-float16", "float16", "float16", "float16 behind float16")):
        v = rewritten(base, name, f"entry 'gpu''s input declares program_dtype {what}: no adapter converts it",
                      adapted(program_dtype, dtype), ErrorCode.MANIFEST_VALUE_INVALID, tensor,
                      f"manifest.{tensor}.program_dtype")
        v.rule = "2.2.12"
        yield v


def _program_vectors(by: dict[str, Vector]) -> Iterator[Vector]:
    """References and fields of v2-program's and v2-program-fat's programs that ExecuTorch's
    runtime aborts or crashes on, or refuses (specs/executorch.md sections 3 and 4): each one edit
    of the payload, its CRC32C recomputed. The error is the program reader's, at the payload offset
    plus the table holding the reference or lacking the field."""
    from tests.support import hostile

    C = ErrorCode

    def payload(base: str) -> bytes:
        e = Edit(by[base])
        return by[base].data[e.entry(0, "offset") : e.entry(0, "offset") + e.entry(0, "size")]

    def vec(base: str, name: str, description: str, changed: tuple[bytes, int], code: ErrorCode) -> Vector:
        data, table = changed
        e = Edit(by[base])
        at, program = e.entry(0, "offset"), payload(base)
        differ = [i for i, (x, y) in enumerate(zip(program, data, strict=True)) if x != y]
        e.put(at + differ[0], data[differ[0] : differ[-1] + 1])
        e.put_int(e.entry_at(0, "checksum"), 4, crc32c(data))
        e.seal()
        return e.vector(name, description, code, at + table, "entries[0].payload")

    program = payload("v2-program")
    yield vec("v2-program", "v2-program-input-past-values", "the program's input is value 20 of its 20 values "
              "(ExecuTorch's Method::get_value aborts at set_input)", hostile.with_value_index(program, "inputs[0]"),
              C.ET_BAD_REFERENCE)
    yield vec("v2-program", "v2-program-output-negative", "the program's output is value -1 (ExecuTorch's "
              "Method::get_value aborts at get_output)", hostile.with_value_index(program, "outputs[0]", -1),
              C.ET_BAD_REFERENCE)
    yield vec("v2-program", "v2-program-kernel-arg-past-values", "the second instruction's third argument is value "
              "20 of 20", hostile.with_value_index(program, "instructions[1].args[2]"), C.ET_BAD_REFERENCE)
    yield vec("v2-program", "v2-program-free-call-past-values", "the second instruction is a FreeCall of value 20 "
              "of 20", hostile.with_instruction_kind(program, 1, 5, 20), C.ET_BAD_REFERENCE)
    listed, table, _ = hostile.with_int_list_item(program, 4)
    yield vec("v2-program", "v2-program-int-list-item-not-int", "the first int list's first item is value 4, a "
              "tensor (EValue::toInt aborts when a kernel reads the list)", (listed, table), C.ET_BAD_VALUE)
    yield vec("v2-program", "v2-program-size-negative", "the program's input tensor (value 4) has size -1 "
              "(ExecuTorch's own verification lets it pass for a dynamic-shape input)",
              hostile.with_tensor_size(program, 4, 1, -1), C.ET_BAD_VALUE)
    fat = payload("v2-program-fat")
    yield vec("v2-program-fat", "v2-program-delegate-without-processed", "the fat delegate has no processed data "
              "reference (ExecuTorch's Method::init dereferences it: SIGSEGV)",
              hostile.without_delegate_field(fat, "processed"), C.ET_BAD_VALUE)
    yield vec("v2-program-fat", "v2-program-compile-spec-without-value", "the fat delegate's compile spec has no "
              "value (ExecuTorch's Method::init dereferences it: SIGSEGV)", hostile.without_delegate_field(fat, "value"),
              C.ET_BAD_VALUE)
    yield from _damaged_program_vectors(vec, program, fat)


def _damaged_program_vectors(vec: Callable[..., Vector], program: bytes, fat: bytes) -> Iterator[Vector]:
    """The program reader's own rules (specs/executorch.md section 3), one damage each, as both
    languages' readers report them: at the table, vtable, vector or string they are about, or at
    the payload for a vtable before the buffer and for what only the flatbuffers verifier refuses."""
    from tests.support import program_mutants as pm

    C = ErrorCode

    def at(damage: tuple[bytes, int | None]) -> tuple[bytes, int]:
        return damage[0], 0 if damage[1] is None else damage[1]

    rows = (
        ("string-not-utf8", "the method's name starts with byte 0xff (not UTF-8)", pm.string_not_utf8, C.ET_BAD_VALUE),
        ("string-without-nul", ("the method's name ends in 'x', not its terminating NUL (ExecuTorch's c_str() reads "
         "past it)"), pm.string_without_nul, C.ET_BAD_VALUE),
        ("vtable-size-odd", "the method's vtable size is 23: odd", pm.vtable_size_odd, C.ET_FLATBUFFER_OUT_OF_BOUNDS),
        ("vector-past-end", "the method's values vector claims 0x3fffffff elements, past the end of the flatbuffer",
         pm.vector_past_end, C.ET_FLATBUFFER_OUT_OF_BOUNDS),
        ("field-outside-table", ("the method's name field lies at table offset 38 of a 40-byte table, its 4 bytes "
         "past the table"), pm.field_outside_table, C.ET_FLATBUFFER_OUT_OF_BOUNDS),
        ("vtable-before-buffer", ("the method table's soffset puts its vtable 64 bytes before the program's first "
         "byte (reported at the payload)"), pm.table_before_buffer, C.ET_FLATBUFFER_OUT_OF_BOUNDS),
        ("method-without-name", "the method has no name (ExecuTorch finds a method by its name)",
         pm.method_without_name, C.ET_BAD_VALUE),
        ("subsegment-past-segment", "the constant segment's last sub-offset is one past the end of its segment",
         pm.subsegment_past_segment, C.ET_SEGMENT_OUT_OF_BOUNDS),
        ("verifier-field-past-end", ("the Int values' int_val field, which fatpte's reader never reads, lies past the "
         "end of the flatbuffer: the flatbuffers verifier the loader runs refuses it (reported at the payload)"),
         pm.int_value_field_past_end, C.ET_FLATBUFFER_OUT_OF_BOUNDS),
    )
    for name, description, damage, code in rows:
        yield vec("v2-program", f"v2-program-{name}", description, at(damage(program)), code)
    yield vec("v2-program-fat", "v2-program-delegate-without-id", "the fat delegate has no backend id (ExecuTorch's "
              "BackendDelegate::Init reads it: SIGSEGV)", at(pm.delegate_without_id(fat)), C.ET_BAD_VALUE)


def rewritten(base: Vector, name: str, description: str, change: Callable[[Any], Any], code: ErrorCode,
              at_table: str, fld: str) -> Vector:
    """`base` with its manifest decoded, changed and written again (with_manifest): for defects a
    same-size edit cannot make (flatbuffers shares one vtable between tables of several types)."""
    from fatpte.manifest.codec import encode

    with fatpte.Container.from_buffer(base.data) as c:
        assert c.manifest is not None
        manifest = change(c.manifest)
        entries = [(e.name, e.backend_id, bytes(c.payload(e))) for e in c.entries]
        segments = [bytes(c.named_data(next(k for k, s in c.manifest.named_data if s == i)))
                    for i in range(len(c.segments))]
    data = with_manifest(entries, encode(manifest), segments)
    moff = _u(data, _HDR.offsets["manifest_offset"][0], 8)
    # No base: the manifest is written anew, not edited in place.
    return Vector(name, data, f"{description} (v3-golden's manifest written again)", None, code,
                  ManifestMap(data, moff).target(at_table), fld)


def _named_data_specs() -> list[fatpte.Specialization]:
    """The two entries of v2-named-data, to pack again with something added."""
    S = fatpte.Specialization
    signature: Any = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 3]}],
                              "outputs": [{"dtype": "float32", "shape": [1]}]}]}
    digest = "sha256:" + hashlib.sha256(b"source program").hexdigest()
    return [S("xnnpack", blob("nd-e0", 40), name="cpu", alignment=8, named_data=["w.a", "w.b"], signature=signature,
              source_digest=digest, payload_sha256=True),
            S("vulkan", blob("nd-e1", 40), name="gpu", alignment=128, named_data=["w.a"], signature=signature,
              source_digest=digest, payload_sha256=True)]


def _entry_position(data: bytes, index: int) -> int:
    """The position, in the manifest, of the table of manifest entry `index`."""
    with fatpte.Container.from_buffer(data) as c:
        assert c.manifest is not None
        return c.manifest.entries[index].position


# ---------------------------------------------------------------------------------------------
# Checking and writing
# ---------------------------------------------------------------------------------------------


def all_vectors() -> list[Vector]:
    valid = valid_vectors()
    by = {v.name: v for v in valid}
    vectors = valid + list(_v1_quirks(by)) + list(invalid_vectors(by)) + list(signed_vectors(by)) + \
        list(golden_signing_vectors())
    names = [v.name for v in vectors]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"duplicate vector names: {sorted(dupes)}")
    return sorted(vectors, key=lambda v: v.name)


def outcome(data: bytes) -> dict[str, Any]:
    """What fatpte says about `data`: the first error, the warnings, and whether open raises."""
    report = fatpte.validate_buffer(data)
    first = report.first_error
    try:
        with fatpte.Container.from_buffer(data):
            open_code = None
    except fatpte.FatpteError as exc:
        open_code = exc.code
    return {
        "code": None if first is None else first.code,
        "offset": None if first is None else first.offset,
        "field": None if first is None else first.field,
        "warnings": tuple(f.code for f in report.findings if f.severity is Severity.WARNING),
        "open_code": open_code,
        "entries": [] if first is not None else _entries(data),
    }


def _entries(data: bytes) -> list[str]:
    with fatpte.Container.from_buffer(data) as c:
        return [e.name for e in c.entries]


def selections(data: bytes) -> dict[str, str | None]:
    """The entry `fatpte.select` chooses on every named device profile (specs/devices), None when
    none fits (NO_SPECIALIZATION_FITS). Recorded from fatpte: the index then holds Python and
    the C++ loader to the same choice, and a change of choice shows up as a diff to review."""
    from fatpte.device.profile import DeviceProfile
    from fatpte.errors import SelectionError

    out: dict[str, str | None] = {}
    with fatpte.Container.from_buffer(data) as c:
        for name in sorted(DeviceProfile.names()):
            try:
                out[name] = fatpte.select(c, DeviceProfile.load(name)).chosen.name
            except SelectionError:
                out[name] = None
    return out


def check(v: Vector) -> list[str]:
    """Disagreements between the declaration of `v` and what fatpte says."""
    got = outcome(v.data)
    problems = []
    if (got["code"], got["offset"], got["field"]) != (v.code, v.offset, v.field):
        problems.append(f"declared {v.code!r} at {v.offset} ({v.field}), validate_buffer says {got['code']!r} at "
                        f"{got['offset']} ({got['field']})")
    if v.code is None and got["warnings"] != v.warnings:
        problems.append(f"declared warnings {v.warnings}, got {got['warnings']}")
    expect_open = v.code if v.code is not None and v.code not in CONTENT_CODES else None
    if got["open_code"] != expect_open:
        problems.append(f"open should raise {expect_open!r}, raised {got['open_code']!r}")
    if v.verify is not None:
        said, thinned, message = verify_outcome(v.data, v.keys or TRUSTED_KEY_FILES)
        if said != v.verify:
            problems.append(f"declared verify {v.verify}, verify says {said}: {message}")
        if thinned != v.thinned:
            problems.append(f"declared thinned {v.thinned}, verify says {thinned}")
    if v.unsigned_golden is not None:
        from fatpte.ops.signing import verify_buffer

        said_unsigned = verify_buffer(v.data, loaded_keys(v.keys or TRUSTED_KEY_FILES)).unsigned_golden
        if said_unsigned != v.unsigned_golden:
            problems.append(f"declared unsigned golden calls {v.unsigned_golden}, verify says {said_unsigned}")
    if v.downgrade is not None:
        device, *declared = v.downgrade
        said, _, message = verify_outcome(v.data, v.keys or TRUSTED_KEY_FILES, device)
        if said != tuple(declared):
            problems.append(f"declared downgrade {v.downgrade}, verify says {said}: {message}")
    return [f"{v.file}: {p}" for p in problems]


def index_of(vectors: Sequence[Vector]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for v in vectors:
        row: dict[str, Any] = {
            "valid": v.code is None,
            "description": v.description,
            "size": len(v.data),
            "sha256": hashlib.sha256(v.data).hexdigest(),
        }
        rule = v.rule or RULE_OF.get(v.name)
        if rule is not None:
            row["rule"] = rule
        if v.base is not None:
            row["base"] = v.base + SUFFIX
            row["changed"] = [list(r) for r in v.changed]
        if v.verify is not None:
            code, offset, fld = v.verify
            row["verify"] = {
                "keys": list(v.keys or TRUSTED_KEY_FILES),
                "code": None if code is None else code.tag,
                "name": None if code is None else code.name,
                "offset": offset,
                "field": fld,
                "thinned": list(v.thinned),
            }
            if v.downgrade is not None:
                device, dcode, doffset, dfield = v.downgrade
                row["verify"]["refuse_downgrade"] = {
                    "device": device, "code": None if dcode is None else dcode.tag,
                    "name": None if dcode is None else dcode.name, "offset": doffset, "field": dfield}
            if v.sidecar is not None:
                row["verify"]["beside"] = v.file + v.sidecar[0]
            if v.unsigned_golden is not None:
                row["verify"]["unsigned_golden"] = list(v.unsigned_golden)
        if v.code is None:
            row["warnings"] = [c.tag for c in v.warnings]
            row["entries"] = _entries(v.data)
            row["selection"] = selections(v.data)
        else:
            row["error"] = {
                "code": v.code.tag,
                "name": v.code.name,
                "offset": v.offset,
                "field": v.field,
                "open_raises": v.code not in CONTENT_CODES,
            }
        rows[v.file] = row
    keys: dict[str, Any] = {}
    for name, (_, code, why) in key_files().items():
        keys[name] = ({"accepted": True, "key_id": why} if code is None else
                      {"accepted": False, "code": code.tag, "name": code.name, "field": "key", "why": why})
    return {
        "generator": "tools/gen_vectors.py",
        "about": "NFAT conformance vectors: per file, valid (with the warnings it carries) or the first error "
                 "a conforming reader reports (code, byte offset, field path); open_raises is false for "
                 "errors found only by reading payload, segment, manifest or padding bytes",
        "vectors": rows,
        "trusted_key_files": keys,
    }


def render_index(vectors: Sequence[Vector]) -> str:
    return json.dumps(index_of(vectors), indent=2, sort_keys=False) + "\n"


README = """\
# NFAT conformance vectors

Written by `tools/gen_vectors.py` (do not edit by hand: change the script and run it;
`tests/conformance/test_vectors.py` fails when these files differ from what it writes). {count} files:
{valid} valid, {invalid} invalid. Every reader of NFAT must give each file the outcome
`index.json` states; Python runs them in tests/conformance/test_vectors.py, the C++ loader in
tests/loader/test_cpp_parity.py (`fatpte-validate`) and fuzz/fuzz_differential.py.
`calls/` holds the calls.json vectors (tools/gen_calls_vectors.py, its own `index.json`: accepted,
or the E0702 and field both readers give), run by tests/conformance/test_calls_vectors.py.
`verdicts/` holds the verdict store vectors (tools/gen_verdicts_vectors.py, specs/verdicts.md
section 6), run by tests/conformance/test_verdicts_vectors.py and loader/tests/verdicts_test.cpp.
`openvino/` holds the vendor-device vectors (tools/gen_openvino_vectors.py, its own `index.json`:
profiles whose accelerators name an OpenVINO device and its capabilities, accepted or refused, and
the selection over a revision-4 container on each), run by tests/conformance/test_openvino_vectors.py
against both fatpte and fatpte-run.

`identity/` holds the device-identity vectors (tools/gen_identity_vectors.py: profiles with cores,
machine and SoC, accepted or refused, and containers whose entries require them, with the entry
chosen, each entry's grade and failed requirements per profile), run by
tests/conformance/test_identity_vectors.py and tests/loader/test_cpp_identity.py.
`receipts/fallback.jsonl` is not generated here: it is the line the C++ receipt writer gives for a
fixed fallback event, pinned byte for byte by loader/tests/receipts_test.cpp and held to
specs/receipt.schema.json by tests/conformance/test_receipt_vectors.py.

Each invalid file is a valid one (`base`) with exactly one defect, which its name says; `changed`
lists the byte ranges `[start, end)` that differ from the base (the defect and, when the header
or tables changed, `header_checksum`; a file shorter than its base was cut).

`index.json` maps each file name to:

- `valid`: true when a conforming reader accepts the file;
- `description`, `size`, `sha256`, and for derived files `base` and `changed`;
- `rule`, for files that break a rule of specs/nfat-manifest.md section 2 (verifying the
  manifest buffer, its values, its work budget): the rule's number, such as `2.1.5`;
- valid files: `warnings` (codes such as `E0503`, in the order reported), `entries` (names, in
  table order), and `selection`: the entry chosen on every device profile of specs/devices/
  (`null` when none fits: NO_SPECIALIZATION_FITS);
- invalid files: `error`, the first error in the canonical check order of specs/nfat.md:
  `code` (`E0204`), `name` (`BAD_ALIGNMENT`), `offset` (decimal byte offset, or null), `field`
  (field path such as `entries[0].alignment`, or null), and `open_raises`: false when the error
  is found only by reading payload, segment, manifest or padding bytes, which opening a
  container does not do.
- signing vectors (`v2-signed-*`, `v2-sig-*`): `verify`, what verifying the file against the
  public keys `keys` (the `*.pub.pem` files here, test keys derived from fixed seeds by the
  generator; never trust them elsewhere) reports first, in the order of specs/nfat-signature.md
  section 6: `code` (null when it verifies), `name`, `offset`, `field`, and `thinned`, the
  signed entries the file no longer holds. The threats of issue 18 each have one: a payload,
  named data, a manifest record or requirement changed after signing, an entry added, two
  entries' bytes swapped, a signature replayed from another container, an untrusted key, the
  region stripped, malformed bundles; and those of issue 33: a named-data key past the segment
  table, duplicated or not UTF-8 (the manifest and the keys are read before the signature, so
  these are the container errors E0414, E0415 and E0407), a bundle of more than 4096 values, a
  P-256 key read from a compressed-point file (the same key id, so an altered statement is E1304,
  not E1305). Where present, `refuse_downgrade` is what verifying with the downgrade check for the
  named device profile reports (section 6 step 11), and `beside` names a file of this folder
  holding a valid detached signature of the vector that a verifier must not read unless given it
  (section 6 step 1: `v2-sig-stripped.nfat` stays E1301).

`trusted_key_files` maps each `*.pub.pem` file here to what a verifier must do with it as a
trusted key (specs/nfat-signature.md section 5.4): `accepted` with its `key_id` (section 5.2), or
refused with `code` (`E0702`) at field `key`, and `why`.
"""


def write(out: Path, vectors: Sequence[Vector]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*" + SUFFIX):
        old.unlink()
    for v in vectors:
        (out / v.file).write_bytes(v.data)
    for old in out.glob("*.pem"):
        old.unlink()
    for old in out.glob("*" + SUFFIX + ".sig"):
        old.unlink()
    for name, (data, _, _) in key_files().items():
        (out / name).write_bytes(data)
    for v in vectors:
        if v.sidecar is not None:
            (out / (v.file + v.sidecar[0])).write_bytes(v.sidecar[1])
    (out / INDEX).write_text(render_index(vectors))
    gen_calls_vectors.write(out / "calls")
    gen_verdicts_vectors.write(out / "verdicts")
    gen_openvino_vectors.write(out / "openvino")
    gen_identity_vectors.write(out / "identity")
    valid = sum(v.code is None for v in vectors)
    (out / "README.md").write_text(README.format(count=len(vectors), valid=valid, invalid=len(vectors) - valid))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=VECTORS, help="directory to write (default specs/vectors)")
    args = parser.parse_args(argv)
    # The vectors are made on purpose as they are: what pack would warn about (entries that tie,
    # named data nobody loads) is part of what some of them test.
    warnings.simplefilter("ignore", fatpte.FatpteWarning)
    vectors = all_vectors()
    problems = [p for v in vectors for p in check(v)]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    write(args.out, vectors)
    valid = sum(v.code is None for v in vectors)
    print(f"wrote {len(vectors)} vectors ({valid} valid, {len(vectors) - valid} invalid) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
