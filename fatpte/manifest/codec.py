"""The manifest's bytes: `decode`, a bounded flatbuffer verifier that builds the records of
fatpte.manifest.model, and `encode`, the writer.

The flatbuffers Python runtime has no verifier, and its accessors index the buffer directly: a
corrupt manifest would surface as IndexError or struct.error, or garbage. So reading never goes
through them. `decode` walks the buffer once, following `SCHEMA` (the .fbs restated; a test
checks the two agree), applying the checks of the reference C++ verifier (every offset, vector
and string in bounds and aligned, strings NUL-terminated, required fields present, table nesting
and table count bounded), and builds immutable NamedTuple records (not dataclasses, whose import
alone costs `fatpte info` more than reading the manifest). Objects referenced several times are
decoded once and shared, so a buffer whose offsets form a DAG costs linear time; the table count
still counts every reference, as the C++ verifier does, so both reject the same inputs.

Writing goes through the code flatc generated from the schema (fatpte/_generated/).
"""

from __future__ import annotations

import importlib
import math
import re
import struct
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple, NoReturn

from fatpte.errors import ErrorCode, FatpteError, out_of_memory
from fatpte.format import layout as L
from fatpte.manifest.model import (
    DIGEST_PATTERN,
    EXPANSION_FACTOR,
    MAX_DEPTH,
    MAX_TABLES,
    MAX_TEXT_BYTES,
    SHA256_SIZE,
    U32_MAX,
    AbiRange,
    AcceleratorRequirement,
    Dim,
    GoldenCall,
    GoldenOutput,
    Manifest,
    ManifestEntry,
    Method,
    Requirements,
    Signature,
    TensorLayout,
    TensorSpec,
    VersionConstraint,
    required_revision,
    work_budget,
)
from fatpte.value.dtypes import adapter_problem

# flatc's output is untyped; it is used only to build, through this one handle, which encode()
# fills on first use: reading goes through _Reader, so `info` and `select` never import it or
# the flatbuffers package.
_fb: Any = None


# ---------------------------------------------------------------------------------------------
# The schema, restated for the verifier (tests/manifest/test_manifest.py checks it against the .fbs)
# ---------------------------------------------------------------------------------------------


class _F(NamedTuple):
    name: str
    kind: str  # "u8" "u32" "u64" "f64" "string" "table" "[string]" "[table]" "[u8]" "[i32]"
    target: str = ""  # table name for "table" and "[table]"
    required: bool = False
    default: int = 0


_SCALARS: Final = {"u8": 1, "u32": 4, "u64": 8, "f64": 8}
_ELEMENTS: Final = {"[u8]": 1, "[i32]": 4}  # vectors of scalars: element size

SCHEMA: Final[dict[str, tuple[_F, ...]]] = {
    "VersionConstraint": (_F("match", "u8"), _F("major", "u32"), _F("minor", "u32")),
    "AcceleratorRequirement": (_F("kind", "string", required=True), _F("targets", "[table]", "VersionConstraint"),
                               _F("min_memory_bytes", "u64"), _F("device", "string"),
                               _F("capabilities", "[string]")),
    "AbiRange": (_F("min", "u32"), _F("max", "u32", default=U32_MAX)),
    "Requirements": (_F("os", "[string]"), _F("arch", "[string]"), _F("cpu_features", "[string]"),
                     _F("accelerators", "[table]", "AcceleratorRequirement"), _F("min_memory_bytes", "u64"),
                     _F("backend_abi", "table", "AbiRange"), _F("cpu_cores", "[string]"),
                     _F("min_core", "string"), _F("soc", "[string]")),
    "Dim": (_F("size", "u64"), _F("symbol", "string")),
    "TensorSpec": (_F("name", "string"), _F("dtype", "string", required=True), _F("shape", "[table]", "Dim"),
                   _F("program_dtype", "string")),
    "Method": (_F("name", "string", required=True), _F("inputs", "[table]", "TensorSpec"),
               _F("outputs", "[table]", "TensorSpec"), _F("buffers", "[table]", "TensorSpec")),
    "Signature": (_F("methods", "[table]", "Method"),),
    "KeyValue": (_F("key", "string", required=True), _F("value", "string", required=True)),
    "Entry": (_F("name", "string", required=True), _F("requires", "table", "Requirements"),
              _F("signature", "table", "Signature"), _F("named_data", "[string]"), _F("source_digest", "string"),
              _F("payload_sha256", "[u8]"), _F("provenance", "[table]", "KeyValue"),
              _F("executorch_backends", "[string]"), _F("golden", "[table]", "GoldenCall")),
    "GoldenOutput": (_F("key", "string", required=True), _F("atol", "f64"), _F("rtol", "f64")),
    "GoldenCall": (_F("method", "string", required=True), _F("inputs", "[string]"),
                   _F("outputs", "[table]", "GoldenOutput")),
    "TensorLayout": (_F("dtype", "string", required=True), _F("sizes", "[i32]"), _F("dim_order", "[u8]")),
    "NamedData": (_F("key", "string", required=True), _F("segment", "u32"),
                  _F("layout", "table", "TensorLayout")),
    "Manifest": (_F("revision", "u32", default=1), _F("entries", "[table]", "Entry"),
                 _F("named_data", "[table]", "NamedData")),
}
ROOT_TABLE: Final = "Manifest"


# ---------------------------------------------------------------------------------------------
# Verifying decoder
# ---------------------------------------------------------------------------------------------


class _Bad(Exception):
    def __init__(self, pos: int, path: str, message: str, code: ErrorCode = ErrorCode.MANIFEST_CORRUPT) -> None:
        super().__init__(message)
        self.pos, self.path, self.message, self.code = pos, path, message, code


class _Reader:
    """One pass over a manifest buffer. Every read is preceded by its bounds and alignment check.

    Objects reached again through another offset are decoded once and shared: tables by
    (position, type), vectors of offsets by (position, element type), strings by position. Two
    counts keep a hostile buffer's DAG of references in check, and both count every reference
    (specs/nfat-manifest.md 2.1 rule 8 and 2.3): `tables`, the tables visited, and `spent`, the
    bytes the manifest expands to. A shared object adds its whole count again at each further
    reference, so both totals are those of a reader that decodes every reference anew. The C++
    loader (loader/src/manifest/verify.cpp) makes the same calls in the same order, so both
    report the same first error."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.n = len(buf)
        self.depth = 0
        self.tables = 0
        self.spent = 0
        self.budget = work_budget(self.n)
        # value, tables counted, bytes spent: what a further reference adds again
        self._tables: dict[tuple[int, str], tuple[dict[str, Any], int, int]] = {}
        self._vectors: dict[tuple[int, str], tuple[list[Any], int, int]] = {}
        self._strings: dict[int, tuple[str, int]] = {}

    def need(self, pos: int, size: int, align: int, path: str, what: str) -> None:
        if pos < 0 or size > self.n or pos > self.n - size:
            raise _Bad(pos, path, f"{what} at {pos:#x} ({size} bytes) lies outside the manifest of {self.n:#x} bytes")
        if pos % align:
            raise _Bad(pos, path, f"{what} at {pos:#x} is not aligned to {align}")

    def uint(self, pos: int, size: int, path: str, what: str) -> int:
        self.need(pos, size, size, path, what)
        return int.from_bytes(self.buf[pos : pos + size], "little")

    def spend(self, amount: int, pos: int, path: str) -> None:
        self.spent += amount
        if self.spent > self.budget:
            raise _Bad(pos, path, f"the manifest of {self.n} bytes expands past its work budget of "
                       f"{self.budget} bytes ({EXPANSION_FACTOR} per byte plus 1 MiB): its offsets reach the "
                       "same objects too many times", ErrorCode.MANIFEST_OVER_BUDGET)

    def offset(self, pos: int, path: str) -> int:
        rel = self.uint(pos, 4, path, "offset")
        if rel == 0 or rel >= 1 << 31:
            raise _Bad(pos, path, f"offset {rel:#x} at {pos:#x} is zero or negative as a signed offset")
        target = pos + rel
        if target >= self.n:
            raise _Bad(pos, path, f"offset at {pos:#x} points to {target:#x}, past the end of the manifest "
                       f"at {self.n:#x}")
        self.spend(4, pos, path)
        return target

    def string(self, pos: int, path: str) -> str:
        hit = self._strings.get(pos)
        if hit is not None:
            self.spend(hit[1], pos, path)
            return hit[0]
        length = self.uint(pos, 4, path, "string length")
        if length > self.n - pos - 5:  # length, bytes and the terminating NUL must all fit
            raise _Bad(pos, path, f"string at {pos:#x} of {length} bytes runs past the end of the manifest")
        end = pos + 4 + length
        if self.buf[end] != 0:
            raise _Bad(end, path, f"string at {pos:#x} is not NUL-terminated")
        try:
            text = self.buf[pos + 4 : end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Bad(pos + 4 + exc.start, path, f"string at {pos:#x} is not valid UTF-8") from None
        self.spend(4 + length, pos, path)
        self._strings[pos] = (text, 4 + length)
        return text

    def vector(self, pos: int, elem: int, path: str) -> tuple[int, int]:
        count = self.uint(pos, 4, path, "vector length")
        if count > (self.n - pos - 4) // elem:
            raise _Bad(pos, path, f"vector at {pos:#x} claims {count} elements of {elem} bytes, more than the "
                       "manifest holds")
        return pos + 4, count

    def table(self, pos: int, name: str, path: str) -> dict[str, Any]:
        hit = self._tables.get((pos, name))
        if hit is not None:
            self.count(hit[1], pos, path)
            self.spend(hit[2], pos, path)
            return hit[0]
        tables, spent = self.tables, self.spent
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Bad(pos, path, f"tables nest deeper than {MAX_DEPTH}")
        self.count(1, pos, path)
        self.need(pos, 4, 4, path, f"table {name}")
        vt = pos - int.from_bytes(self.buf[pos : pos + 4], "little", signed=True)
        if vt < 0 or vt > self.n - 2 or vt % 2:  # reported at the soffset that points there
            raise _Bad(pos, path, f"the vtable of table {name} at {pos:#x} would be at {vt:#x}, outside the "
                       "manifest or not aligned to 2")
        vsize = int.from_bytes(self.buf[vt : vt + 2], "little")
        if vsize & 1:
            raise _Bad(vt, path, f"vtable of {name} at {vt:#x} has odd size {vsize}")
        self.need(vt, vsize, 2, path, f"vtable of {name}")
        self.spend(4, pos, path)
        out: dict[str, Any] = {"@pos": pos}
        for i, f in enumerate(SCHEMA[name]):
            slot = 4 + 2 * i
            voff = int.from_bytes(self.buf[vt + slot : vt + slot + 2], "little") if slot + 2 <= vsize else 0
            fpath = f"{path}.{f.name}"
            if voff == 0:
                if f.required:
                    raise _Bad(pos, fpath, f"required field {name}.{f.name} is absent")
                out[f.name] = f.default if f.kind in _SCALARS else None
                continue
            out[f.name] = self.field(pos + voff, f, fpath)
        self.depth -= 1
        self._tables[(pos, name)] = (out, self.tables - tables, self.spent - spent)
        return out

    def count(self, tables: int, pos: int, path: str) -> None:
        self.tables += tables
        if self.tables > MAX_TABLES:
            raise _Bad(pos, path, f"the manifest references more than {MAX_TABLES} tables")

    def field(self, fp: int, f: _F, path: str) -> Any:
        if f.kind in _SCALARS:
            value = self.uint(fp, _SCALARS[f.kind], path, f"field {f.name}")
            self.spend(_SCALARS[f.kind], fp, path)
            if f.kind == "f64":
                return struct.unpack("<d", value.to_bytes(8, "little"))[0]
            return value
        target = self.offset(fp, path)
        if f.kind == "string":
            return self.string(target, path)
        if f.kind == "table":
            return self.table(target, f.target, path)
        if f.kind == "[u8]":
            start, count = self.vector(target, 1, path)
            self.spend(4 + count, target, path)
            return self.buf[start : start + count]
        if f.kind == "[i32]":
            start, count = self.vector(target, 4, path)
            self.spend(4 + 4 * count, target, path)
            return [int.from_bytes(self.buf[q : q + 4], "little", signed=True) for q in range(start, start + 4 * count, 4)]
        key = (target, f.kind + f.target)
        hit = self._vectors.get(key)
        if hit is not None:
            self.count(hit[1], target, path)
            self.spend(hit[2], target, path)
            return hit[0]
        tables, spent = self.tables, self.spent
        start, count = self.vector(target, 4, path)
        self.spend(4, target, path)
        items: list[Any] = []
        for k in range(count):
            ep = start + 4 * k
            epath = f"{path}[{k}]"
            if f.kind == "[string]":
                items.append(self.string(self.offset(ep, epath), epath))
            else:
                items.append(self.table(self.offset(ep, epath), f.target, epath))
        self._vectors[key] = (items, self.tables - tables, self.spent - spent)
        return items


def decode(buf: bytes | bytearray | memoryview, *, base: int = 0, source: str | None = None) -> Manifest:
    """Verify and decode a manifest buffer. Raises FatpteError, nothing else.

    `base` is the manifest's offset in its container: error offsets are absolute in the file.
    """
    data = bytes(buf)
    try:
        if len(data) < 8:
            raise _Bad(0, "manifest", f"the manifest is {len(data)} bytes, too short for a root offset and "
                       "an identifier")
        if data[4:8] != L.MANIFEST_IDENTIFIER:
            raise _Bad(4, "manifest", f"bytes 4..8 are {data[4:8]!r}, not {L.MANIFEST_IDENTIFIER!r}",
                       ErrorCode.BAD_MANIFEST_IDENTIFIER)
        reader = _Reader(data)
        root = reader.table(reader.offset(0, "manifest"), ROOT_TABLE, "manifest")
        return _build(root)
    except _Bad as bad:
        raise FatpteError(bad.code, bad.message, source=source, offset=base + bad.pos, field=bad.path) from None
    except MemoryError:
        raise out_of_memory(source, "reading the manifest") from None
    except RecursionError:  # unreachable for this non-recursive schema; kept as the last guard
        raise FatpteError(ErrorCode.MANIFEST_CORRUPT, "the manifest nests too deeply", source=source,
                          offset=base, field="manifest") from None


def _invalid(obj: dict[str, Any], path: str, message: str) -> NoReturn:
    raise _Bad(int(obj["@pos"]), path, message, ErrorCode.MANIFEST_VALUE_INVALID)


def _nonempty(obj: dict[str, Any], key: str, path: str) -> str:
    value = obj[key]
    if not value or len(value.encode("utf-8")) > MAX_TEXT_BYTES:
        _invalid(obj, f"{path}.{key}", f"{key} must be 1 to {MAX_TEXT_BYTES} bytes, got {len(value.encode())}")
    return str(value)


def _build(root: dict[str, Any]) -> Manifest:
    entries: list[ManifestEntry] = []
    for i, e in enumerate(root["entries"] or ()):
        p = f"manifest.entries[{i}]"
        sha = e["payload_sha256"]
        if sha is not None and len(sha) not in (0, SHA256_SIZE):
            _invalid(e, f"{p}.payload_sha256", f"payload_sha256 has {len(sha)} bytes; a SHA-256 has 32")
        digest = e["source_digest"]
        if digest is not None and not re.fullmatch(DIGEST_PATTERN, digest):
            _invalid(e, f"{p}.source_digest", f"source_digest {digest!r} is not '<algorithm>:<lowercase hex>'")
        keys = tuple(e["named_data"] or ())
        for k, key in enumerate(keys):
            if not key:
                _invalid(e, f"{p}.named_data[{k}]", "a named-data key is empty")
        backends = None if e["executorch_backends"] is None else tuple(e["executorch_backends"])
        seen_backends: set[str] = set()
        for k, backend in enumerate(backends or ()):
            if not backend or len(backend.encode("utf-8")) > MAX_TEXT_BYTES:
                _invalid(e, f"{p}.executorch_backends[{k}]", f"a backend id must be 1 to {MAX_TEXT_BYTES} bytes")
            if backend in seen_backends:
                _invalid(e, f"{p}.executorch_backends[{k}]", f"backend id {backend!r} is listed twice")
            seen_backends.add(backend)
        name = _nonempty(e, "name", p)
        requires = _requirements(e["requires"], f"{p}.requires")
        signature = None if e["signature"] is None else _signature(e["signature"], f"{p}.signature")
        entries.append(ManifestEntry(
            name=name,
            requires=requires,
            signature=signature,
            named_data=keys,
            source_digest=digest,
            payload_sha256=bytes(sha) if sha else None,
            provenance=tuple((kv["key"], kv["value"]) for kv in e["provenance"] or ()),
            executorch_backends=backends,
            golden=_golden(e["golden"], f"{p}.golden"),
            position=int(e["@pos"]),
        ))
    named: list[tuple[str, int]] = []
    layouts: list[tuple[str, TensorLayout]] = []
    previous: bytes | None = None
    for i, nd in enumerate(root["named_data"] or ()):
        key = _nonempty(nd, "key", f"manifest.named_data[{i}]")
        raw = key.encode("utf-8")
        if previous is not None and raw <= previous:
            raise _Bad(int(nd["@pos"]), f"manifest.named_data[{i}].key",
                       f"key {key!r} is not after {previous.decode('utf-8')!r}: keys must be unique and "
                       "sorted bytewise", ErrorCode.NAMED_DATA_KEYS_UNSORTED)
        previous = raw
        named.append((key, int(nd["segment"])))
        lay = nd["layout"]
        if lay is not None:
            layout = TensorLayout(_nonempty(lay, "dtype", f"manifest.named_data[{i}].layout"),
                                  tuple(lay["sizes"] or ()), tuple(lay["dim_order"] or ()))
            problem = layout.problem()
            if problem is not None:
                _invalid(lay, f"manifest.named_data[{i}].layout", problem)
            layouts.append((key, layout))
    return Manifest(int(root["revision"]), tuple(entries), tuple(named), tuple(layouts))




def _requirements(obj: dict[str, Any] | None, path: str) -> Requirements:
    if obj is None:
        return Requirements()
    accs = []
    for a in obj["accelerators"] or ():
        targets = tuple(VersionConstraint(int(t["match"]), int(t["major"]), int(t["minor"]))
                        for t in a["targets"] or ())
        accs.append(AcceleratorRequirement(a["kind"], targets, int(a["min_memory_bytes"]), a["device"] or "",
                                           tuple(a["capabilities"] or ())))
    abi = obj["backend_abi"]
    backend_abi = None if abi is None else AbiRange(int(abi["min"]), int(abi["max"]))
    return Requirements(tuple(obj["os"] or ()), tuple(obj["arch"] or ()), tuple(obj["cpu_features"] or ()),
                        tuple(accs), int(obj["min_memory_bytes"]), backend_abi, tuple(obj["cpu_cores"] or ()),
                        obj["min_core"], tuple(obj["soc"] or ()))


def _golden(calls: list[dict[str, Any]] | None, path: str) -> tuple[GoldenCall, ...]:
    """Value rule 2.2.11: keys and methods 1 to 4096 bytes, tolerances finite and at least 0."""
    out: list[GoldenCall] = []
    for c, call in enumerate(calls or ()):
        p = f"{path}[{c}]"
        method = _nonempty(call, "method", p)
        inputs = []
        for j, key in enumerate(call["inputs"] or ()):
            if not key or len(key.encode("utf-8")) > MAX_TEXT_BYTES:
                _invalid(call, f"{p}.inputs[{j}]", f"a golden input key must be 1 to {MAX_TEXT_BYTES} bytes")
            inputs.append(key)
        outputs = []
        for j, o in enumerate(call["outputs"] or ()):
            op = f"{p}.outputs[{j}]"
            key = _nonempty(o, "key", op)
            for name in ("atol", "rtol"):
                value = o[name]
                if not math.isfinite(value) or value < 0:
                    _invalid(o, f"{op}.{name}", f"{name} is {value!r}; a tolerance is a finite number at least 0")
            outputs.append(GoldenOutput(key, float(o["atol"]), float(o["rtol"])))
        out.append(GoldenCall(method, tuple(inputs), tuple(outputs)))
    return tuple(out)


def _program_dtype(t: dict[str, Any], dtype: str, path: str) -> str | None:
    """Value rule 2.2.12: a program dtype, when present, is one an adapter converts `dtype` to."""
    program_dtype = t["program_dtype"]
    if program_dtype is None:
        return None
    problem = adapter_problem(dtype, program_dtype)
    if problem is not None:
        _invalid(t, f"{path}.program_dtype", problem)
    return str(program_dtype)


def _signature(obj: dict[str, Any], path: str) -> Signature:
    methods: list[Method] = []
    for i, m in enumerate(obj["methods"] or ()):
        p = f"{path}.methods[{i}]"
        name = _nonempty(m, "name", p)
        if any(x.name == name for x in methods):
            _invalid(m, f"{p}.name", f"method {name!r} appears twice")
        parts = []
        for part in ("inputs", "outputs", "buffers"):
            specs = []
            for j, t in enumerate(m[part] or ()):
                tp = f"{p}.{part}[{j}]"
                if part == "buffers" and t["name"] is not None and not t["name"]:
                    _invalid(t, f"{tp}.name", "a mutable buffer's name, when present, must not be empty")
                dims = []
                for k, d in enumerate(t["shape"] or ()):
                    if d["symbol"] is not None and (d["size"] or not d["symbol"]):
                        _invalid(d, f"{tp}.shape[{k}]", "a symbolic dimension has a non-empty symbol and size 0")
                    dims.append(Dim(int(d["size"]), d["symbol"]))
                dtype = _nonempty(t, "dtype", tp)
                specs.append(TensorSpec(dtype, tuple(dims), t["name"], _program_dtype(t, dtype, tp)))
            parts.append(tuple(specs))
        methods.append(Method(name, *parts))
    return Signature(tuple(methods))


# ---------------------------------------------------------------------------------------------
# Writer
# ---------------------------------------------------------------------------------------------


def encode(manifest: Manifest) -> bytes:
    """The manifest as a flatbuffer with identifier NFMF. Deterministic for equal input."""
    global _fb
    import flatbuffers

    if _fb is None:
        _fb = importlib.import_module("fatpte._generated.nfat_manifest_generated")
    b = flatbuffers.Builder(1024)
    golden_strings: dict[str, int] = {}
    entries = [_write_entry(b, e, golden_strings) for e in manifest.entries]
    named = []
    layouts = dict(manifest.layouts)
    for key, segment in sorted(manifest.named_data, key=lambda kv: kv[0].encode("utf-8")):
        k = b.CreateString(key)
        layout = layouts.get(key)
        lay = None if layout is None else _write_layout(b, layout)
        _fb.NamedDataStart(b)
        _fb.NamedDataAddKey(b, k)
        _fb.NamedDataAddSegment(b, segment)
        if lay is not None:
            _fb.NamedDataAddLayout(b, lay)
        named.append(_fb.NamedDataEnd(b))
    entries_vec = _offsets(b, _fb.ManifestStartEntriesVector, entries)
    named_vec = _offsets(b, _fb.ManifestStartNamedDataVector, named)
    _fb.ManifestStart(b)
    # The revision the fields need (spec 3.1), whatever the record says: what a reader saw of a later
    # revision and did not know is not written back.
    _fb.ManifestAddRevision(b, required_revision(manifest))
    _fb.ManifestAddEntries(b, entries_vec)
    _fb.ManifestAddNamedData(b, named_vec)
    root = _fb.ManifestEnd(b)
    b.Finish(root, file_identifier=L.MANIFEST_IDENTIFIER)
    return bytes(b.Output())


def _offsets(b: Any, start: Any, items: Sequence[int]) -> int:
    start(b, len(items))
    for item in reversed(items):
        b.PrependUOffsetTRelative(item)
    return int(b.EndVector())


def _strings(b: Any, start: Any, items: Iterable[str]) -> int:
    return _offsets(b, start, [b.CreateString(s) for s in items])


def _write_entry(b: Any, e: ManifestEntry, golden_strings: dict[str, int]) -> int:
    name = b.CreateString(e.name)
    requires = _write_requirements(b, e.requires)
    signature = None if e.signature is None else _write_signature(b, e.signature)
    keys = _strings(b, _fb.EntryStartNamedDataVector, e.named_data) if e.named_data else None
    digest = None if e.source_digest is None else b.CreateString(e.source_digest)
    sha = None if e.payload_sha256 is None else b.CreateByteVector(e.payload_sha256)
    backends = (None if e.executorch_backends is None
                else _strings(b, _fb.EntryStartExecutorchBackendsVector, e.executorch_backends))
    golden = _write_golden(b, e.golden, golden_strings) if e.golden else None
    prov = None
    if e.provenance:
        pairs = []
        for k, v in e.provenance:
            ko, vo = b.CreateString(k), b.CreateString(v)
            _fb.KeyValueStart(b)
            _fb.KeyValueAddKey(b, ko)
            _fb.KeyValueAddValue(b, vo)
            pairs.append(_fb.KeyValueEnd(b))
        prov = _offsets(b, _fb.EntryStartProvenanceVector, pairs)
    _fb.EntryStart(b)
    _fb.EntryAddName(b, name)
    if requires is not None:
        _fb.EntryAddRequires(b, requires)
    if signature is not None:
        _fb.EntryAddSignature(b, signature)
    if keys is not None:
        _fb.EntryAddNamedData(b, keys)
    if digest is not None:
        _fb.EntryAddSourceDigest(b, digest)
    if sha is not None:
        _fb.EntryAddPayloadSha256(b, sha)
    if prov is not None:
        _fb.EntryAddProvenance(b, prov)
    if backends is not None:
        _fb.EntryAddExecutorchBackends(b, backends)
    if golden is not None:
        _fb.EntryAddGolden(b, golden)
    return int(_fb.EntryEnd(b))


def _write_golden(b: Any, calls: Sequence[GoldenCall], strings: dict[str, int]) -> int:
    # Keys and method names repeat across calls and entries (one golden tensor, several entries):
    # each string is written once and shared, as flatbuffers allows and the work budget (2.3) is
    # sized for.
    def text(s: str) -> int:
        if s not in strings:
            strings[s] = b.CreateString(s)
        return strings[s]

    items = []
    for call in calls:
        method = text(call.method)
        inputs = _offsets(b, _fb.GoldenCallStartInputsVector, [text(k) for k in call.inputs])
        outs = []
        for o in call.outputs:
            key = text(o.key)
            _fb.GoldenOutputStart(b)
            _fb.GoldenOutputAddKey(b, key)
            _fb.GoldenOutputAddAtol(b, o.atol)
            _fb.GoldenOutputAddRtol(b, o.rtol)
            outs.append(_fb.GoldenOutputEnd(b))
        outputs = _offsets(b, _fb.GoldenCallStartOutputsVector, outs)
        _fb.GoldenCallStart(b)
        _fb.GoldenCallAddMethod(b, method)
        _fb.GoldenCallAddInputs(b, inputs)
        _fb.GoldenCallAddOutputs(b, outputs)
        items.append(_fb.GoldenCallEnd(b))
    return _offsets(b, _fb.EntryStartGoldenVector, items)


def _write_layout(b: Any, layout: TensorLayout) -> int:
    dtype = b.CreateString(layout.dtype)
    sizes = None
    if layout.sizes:
        _fb.TensorLayoutStartSizesVector(b, len(layout.sizes))
        for d in reversed(layout.sizes):
            b.PrependInt32(d)
        sizes = b.EndVector()
    order = b.CreateByteVector(bytes(layout.dim_order)) if layout.dim_order else None
    _fb.TensorLayoutStart(b)
    _fb.TensorLayoutAddDtype(b, dtype)
    if sizes is not None:
        _fb.TensorLayoutAddSizes(b, sizes)
    if order is not None:
        _fb.TensorLayoutAddDimOrder(b, order)
    return int(_fb.TensorLayoutEnd(b))


def _write_requirements(b: Any, r: Requirements) -> int | None:
    if r == Requirements():
        return None
    os_ = _strings(b, _fb.RequirementsStartOsVector, r.os) if r.os else None
    arch = _strings(b, _fb.RequirementsStartArchVector, r.arch) if r.arch else None
    feats = _strings(b, _fb.RequirementsStartCpuFeaturesVector, r.cpu_features) if r.cpu_features else None
    accs = None
    if r.accelerators:
        items = []
        for a in r.accelerators:
            kind = b.CreateString(a.kind)
            targets = []
            for t in a.targets:
                _fb.VersionConstraintStart(b)
                _fb.VersionConstraintAddMatch(b, t.match)
                _fb.VersionConstraintAddMajor(b, t.major)
                _fb.VersionConstraintAddMinor(b, t.minor)
                targets.append(_fb.VersionConstraintEnd(b))
            tvec = _offsets(b, _fb.AcceleratorRequirementStartTargetsVector, targets) if targets else None
            device = b.CreateString(a.device) if a.device else None
            caps = (_strings(b, _fb.AcceleratorRequirementStartCapabilitiesVector, a.capabilities)
                    if a.capabilities else None)
            _fb.AcceleratorRequirementStart(b)
            _fb.AcceleratorRequirementAddKind(b, kind)
            if tvec is not None:
                _fb.AcceleratorRequirementAddTargets(b, tvec)
            _fb.AcceleratorRequirementAddMinMemoryBytes(b, a.min_memory_bytes)
            if device is not None:
                _fb.AcceleratorRequirementAddDevice(b, device)
            if caps is not None:
                _fb.AcceleratorRequirementAddCapabilities(b, caps)
            items.append(_fb.AcceleratorRequirementEnd(b))
        accs = _offsets(b, _fb.RequirementsStartAcceleratorsVector, items)
    cores = _strings(b, _fb.RequirementsStartCpuCoresVector, r.cpu_cores) if r.cpu_cores else None
    min_core = b.CreateString(r.min_core) if r.min_core is not None else None
    soc = _strings(b, _fb.RequirementsStartSocVector, r.soc) if r.soc else None
    abi = None
    if r.backend_abi is not None:
        _fb.AbiRangeStart(b)
        _fb.AbiRangeAddMin(b, r.backend_abi.min)
        _fb.AbiRangeAddMax(b, r.backend_abi.max)
        abi = _fb.AbiRangeEnd(b)
    _fb.RequirementsStart(b)
    for value, add in ((os_, _fb.RequirementsAddOs), (arch, _fb.RequirementsAddArch),
                       (feats, _fb.RequirementsAddCpuFeatures), (accs, _fb.RequirementsAddAccelerators),
                       (abi, _fb.RequirementsAddBackendAbi), (cores, _fb.RequirementsAddCpuCores),
                       (min_core, _fb.RequirementsAddMinCore), (soc, _fb.RequirementsAddSoc)):
        if value is not None:
            add(b, value)
    _fb.RequirementsAddMinMemoryBytes(b, r.min_memory_bytes)
    return int(_fb.RequirementsEnd(b))


def _write_tensor(b: Any, t: TensorSpec) -> int:
    name = None if t.name is None else b.CreateString(t.name)
    dtype = b.CreateString(t.dtype)
    program_dtype = None if t.program_dtype is None else b.CreateString(t.program_dtype)
    dims = []
    for d in t.shape:
        sym = None if d.symbol is None else b.CreateString(d.symbol)
        _fb.DimStart(b)
        _fb.DimAddSize(b, d.size)
        if sym is not None:
            _fb.DimAddSymbol(b, sym)
        dims.append(_fb.DimEnd(b))
    shape = _offsets(b, _fb.TensorSpecStartShapeVector, dims) if dims else None
    _fb.TensorSpecStart(b)
    if name is not None:
        _fb.TensorSpecAddName(b, name)
    _fb.TensorSpecAddDtype(b, dtype)
    if shape is not None:
        _fb.TensorSpecAddShape(b, shape)
    if program_dtype is not None:
        _fb.TensorSpecAddProgramDtype(b, program_dtype)
    return int(_fb.TensorSpecEnd(b))


def _write_signature(b: Any, s: Signature) -> int:
    methods = []
    for m in s.methods:
        name = b.CreateString(m.name)
        vecs = []
        for specs, start in ((m.inputs, _fb.MethodStartInputsVector), (m.outputs, _fb.MethodStartOutputsVector),
                             (m.buffers, _fb.MethodStartBuffersVector)):
            vecs.append(_offsets(b, start, [_write_tensor(b, t) for t in specs]))
        _fb.MethodStart(b)
        _fb.MethodAddName(b, name)
        _fb.MethodAddInputs(b, vecs[0])
        _fb.MethodAddOutputs(b, vecs[1])
        _fb.MethodAddBuffers(b, vecs[2])
        methods.append(_fb.MethodEnd(b))
    vec = _offsets(b, _fb.SignatureStartMethodsVector, methods)
    _fb.SignatureStart(b)
    _fb.SignatureAddMethods(b, vec)
    return int(_fb.SignatureEnd(b))


