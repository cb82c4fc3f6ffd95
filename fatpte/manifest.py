"""The NFAT v2 manifest (specs/nfat_manifest.fbs, specs/nfat-manifest.md): its Python model, a
bounded flatbuffer verifier that decodes it, and the writer.

The flatbuffers Python runtime has no verifier, and its accessors index the buffer directly: a
corrupt manifest would surface as IndexError or struct.error, or garbage. So reading never goes
through them. `decode` walks the buffer once, following `_SCHEMA` (the .fbs restated; a test
checks the two agree), applying the checks of the reference C++ verifier (every offset, vector
and string in bounds and aligned, strings NUL-terminated, required fields present, table nesting
and table count bounded), and builds immutable NamedTuple records (not dataclasses, whose import
alone costs `fatpte info` more than reading the manifest). Objects referenced several times are
decoded once and shared, so a buffer whose offsets form a DAG costs linear time; the table count
still counts every reference, as the C++ verifier does, so both reject the same inputs.

Writing goes through the code flatc generated from the schema (fatpte/_generated/).
"""

from __future__ import annotations

import enum
import importlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple, NoReturn, TypeGuard

from fatpte import layout as L
from fatpte.errors import ErrorCode, FatpteError

# flatc's output is untyped; it is used only to build, through this one handle, which encode()
# fills on first use: reading goes through _Reader, so `info` and `select` never import it or
# the flatbuffers package.
_fb: Any = None

REVISION: Final = 1
# The limits of the reference C++ verifier's defaults, stated in the spec so both sides agree.
MAX_DEPTH: Final = 64
MAX_TABLES: Final = 1_000_000
SHA256_SIZE: Final = 32
MAX_TEXT_BYTES: Final = 4096  # names, keys, dtypes, symbols: long enough for any FQN


class VersionMatch(enum.IntEnum):
    """How a device's accelerator version is compared with a constraint (schema enum)."""

    AT_LEAST = 0
    SAME_MAJOR = 1
    EXACT = 2


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------


class VersionConstraint(NamedTuple):
    match: int  # a VersionMatch; other values come from later revisions and never hold
    major: int
    minor: int

    def holds(self, version: tuple[int, int]) -> bool:
        want = (self.major, self.minor)
        if self.match == VersionMatch.AT_LEAST:
            return version >= want
        if self.match == VersionMatch.SAME_MAJOR:
            return version[0] == self.major and version[1] >= self.minor
        if self.match == VersionMatch.EXACT:
            return version == want
        return False

    def text(self, kind: str = "") -> str:
        """`sm_80`, `sm_90a`, `compute_90` for CUDA; `>=1.3`, `~8.0`, `==9.0` otherwise."""
        cuda = kind == "cuda" and self.minor < 10 and self.major < 1000  # what sm_XY can spell
        if self.match == VersionMatch.SAME_MAJOR:
            return f"sm_{self.major}{self.minor}" if cuda else f"~{self.major}.{self.minor}"
        if self.match == VersionMatch.AT_LEAST:
            return f"compute_{self.major}{self.minor}" if cuda else f">={self.major}.{self.minor}"
        if self.match == VersionMatch.EXACT:
            return f"sm_{self.major}{self.minor}a" if cuda else f"=={self.major}.{self.minor}"
        return f"<match {self.match}>{self.major}.{self.minor}"

    @classmethod
    def parse(cls, text: str, path: str) -> VersionConstraint:
        m = re.fullmatch(_TARGET, text) if isinstance(text, str) else None
        if m is None:
            raise _arg(path, f"{text!r} is not a version constraint: use sm_XY, sm_XYa, compute_XY, "
                       ">=X.Y, ~X.Y or ==X.Y", text)
        if m["cuda"]:
            digits = m["digits"]
            major, minor = int(digits[:-1]), int(digits[-1])
            match = (VersionMatch.AT_LEAST if m["cuda"] == "compute"
                     else VersionMatch.EXACT if m["a"] else VersionMatch.SAME_MAJOR)
        else:
            major, minor = int(m["major"]), int(m["minor"])
            match = {">=": VersionMatch.AT_LEAST, "~": VersionMatch.SAME_MAJOR, "==": VersionMatch.EXACT}[m["op"]]
        if major > _U32 or minor > _U32:
            raise _arg(path, f"{text!r}: version numbers must fit in 32 bits", text)
        return cls(int(match), major, minor)


# Patterns as text: `re` compiles each on first use (and caches it), so reading a manifest
# without targets or digests, as `fatpte info` mostly does, compiles neither.
_TARGET = (r"(?:(?P<cuda>sm|compute)_(?P<digits>[0-9]{2,4})(?P<a>a?)"
           r"|(?P<op>>=|~|==)(?P<major>[0-9]{1,10})\.(?P<minor>[0-9]{1,10}))")
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1


class AcceleratorRequirement(NamedTuple):
    kind: str
    targets: tuple[VersionConstraint, ...] = ()
    min_memory_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "targets": [t.text(self.kind) for t in self.targets],
                "min_memory_bytes": self.min_memory_bytes}


class AbiRange(NamedTuple):
    min: int = 0
    max: int = _U32

    def holds(self, version: int) -> bool:
        return self.min <= version <= self.max

    def text(self) -> str:
        return f"{self.min}..{self.max}" if self.max != _U32 else f">= {self.min}"


class Requirements(NamedTuple):
    """What an entry needs from a device. Empty fields state no requirement."""

    os: tuple[str, ...] = ()
    arch: tuple[str, ...] = ()
    cpu_features: tuple[str, ...] = ()
    accelerators: tuple[AcceleratorRequirement, ...] = ()
    min_memory_bytes: int = 0
    backend_abi: AbiRange | None = None

    @property
    def specificity(self) -> int:
        """The number of requirements stated (spec section "Ranking")."""
        return (bool(self.os) + bool(self.arch) + len(set(self.cpu_features)) + len(self.accelerators)
                + bool(self.min_memory_bytes) + (self.backend_abi is not None))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.os:
            out["os"] = list(self.os)
        if self.arch:
            out["arch"] = list(self.arch)
        if self.cpu_features:
            out["cpu_features"] = list(self.cpu_features)
        if self.accelerators:
            out["accelerators"] = [a.to_json() for a in self.accelerators]
        if self.min_memory_bytes:
            out["min_memory_bytes"] = self.min_memory_bytes
        if self.backend_abi is not None:
            out["backend_abi"] = {"min": self.backend_abi.min, "max": self.backend_abi.max}
        return out

    @classmethod
    def from_mapping(cls, obj: Any, path: str = "requires") -> Requirements:
        """Read the `requires` mapping of a Specialization or pack.toml (device-profile words)."""
        from fatpte import device

        if isinstance(obj, Requirements):
            return obj
        if obj is None:
            return cls()
        if not isinstance(obj, Mapping):
            raise _arg(path, f"must be a mapping, not {type(obj).__name__}", obj)
        _only(obj, ("os", "arch", "cpu_features", "accelerators", "min_memory_bytes", "backend_abi"), path)
        os_ = _words(obj.get("os"), f"{path}.os", device.OS_NAMES)
        arch = _words(obj.get("arch"), f"{path}.arch", device.ARCHES)
        known = frozenset().union(*device.CPU_FEATURES.values())
        features = _words(obj.get("cpu_features"), f"{path}.cpu_features", tuple(sorted(known)))
        if arch:
            # A feature of an architecture the entry does not run on is a mistake, never a requirement.
            allowed = frozenset().union(*(device.CPU_FEATURES[a] for a in arch))
            for i, feat in enumerate(features):
                if feat not in allowed:
                    raise _arg(f"{path}.cpu_features[{i}]", f"{feat!r} is not a feature of {', '.join(arch)}", feat)
        accs: list[AcceleratorRequirement] = []
        raw_accs = obj.get("accelerators", ())
        if not _is_list(raw_accs):
            raise _arg(f"{path}.accelerators", "must be a list of tables", raw_accs)
        for i, a in enumerate(raw_accs):
            p = f"{path}.accelerators[{i}]"
            if not isinstance(a, Mapping):
                raise _arg(p, "must be a mapping with kind, targets, min_memory_bytes", a)
            _only(a, ("kind", "targets", "min_memory_bytes"), p)
            kind = a.get("kind")
            if kind not in device.ACCELERATOR_KINDS:
                raise _arg(f"{p}.kind", f"{kind!r} is not one of {', '.join(device.ACCELERATOR_KINDS)}", kind)
            targets = a.get("targets", ())
            if isinstance(targets, str):
                targets = [targets]
            if not _is_list(targets):
                raise _arg(f"{p}.targets", "must be a list of version constraints", targets)
            accs.append(AcceleratorRequirement(
                str(kind), tuple(VersionConstraint.parse(t, f"{p}.targets[{j}]") for j, t in enumerate(targets)),
                _uint(a.get("min_memory_bytes", 0), f"{p}.min_memory_bytes", _U64)))
        abi = obj.get("backend_abi")
        backend_abi = None
        if abi is not None:
            if not isinstance(abi, Mapping):
                raise _arg(f"{path}.backend_abi", "must be a mapping with min and/or max", abi)
            _only(abi, ("min", "max"), f"{path}.backend_abi")
            lo = _uint(abi.get("min", 0), f"{path}.backend_abi.min", _U32)
            hi = _uint(abi.get("max", _U32), f"{path}.backend_abi.max", _U32)
            if lo > hi:
                raise _arg(f"{path}.backend_abi", f"min {lo} is above max {hi}", abi)
            backend_abi = AbiRange(lo, hi)
        return cls(os_, arch, features, tuple(accs),
                   _uint(obj.get("min_memory_bytes", 0), f"{path}.min_memory_bytes", _U64), backend_abi)


class Dim(NamedTuple):
    size: int = 0
    symbol: str | None = None

    def to_json(self) -> int | str:
        return self.symbol if self.symbol is not None else self.size


class TensorSpec(NamedTuple):
    dtype: str
    shape: tuple[Dim, ...] = ()
    name: str | None = None

    def text(self) -> str:
        dims = ", ".join(str(d.to_json()) for d in self.shape)
        who = f"{self.name}: " if self.name is not None else ""
        return f"{who}{self.dtype}[{dims}]"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype, "shape": [d.to_json() for d in self.shape]}
        if self.name is not None:
            out = {"name": self.name, **out}
        return out


class Method(NamedTuple):
    name: str
    inputs: tuple[TensorSpec, ...] = ()
    outputs: tuple[TensorSpec, ...] = ()
    buffers: tuple[TensorSpec, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "inputs": [t.to_json() for t in self.inputs],
                "outputs": [t.to_json() for t in self.outputs], "buffers": [t.to_json() for t in self.buffers]}


class Signature(NamedTuple):
    """The program's methods. Two signatures agree (`signature_difference` is None) when their
    methods do, in any order; `==` compares the methods in order."""

    methods: tuple[Method, ...] = ()

    def method(self, name: str) -> Method | None:
        return next((m for m in self.methods if m.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"methods": [m.to_json() for m in self.methods]}

    @classmethod
    def from_mapping(cls, obj: Any, path: str = "signature") -> Signature:
        """`{"methods": [{"name", "inputs", "outputs", "buffers"}]}`; tensors are
        `{"name"?, "dtype", "shape": [int | "symbol", ...]}`."""
        if isinstance(obj, Signature):
            return obj
        if not isinstance(obj, Mapping):
            raise _arg(path, f"must be a mapping with a methods list, not {type(obj).__name__}", obj)
        _only(obj, ("methods",), path)
        raw = obj.get("methods", ())
        if not _is_list(raw):
            raise _arg(f"{path}.methods", "must be a list", raw)
        methods: list[Method] = []
        for i, m in enumerate(raw):
            p = f"{path}.methods[{i}]"
            if not isinstance(m, Mapping):
                raise _arg(p, "must be a mapping with name, inputs, outputs, buffers", m)
            _only(m, ("name", "inputs", "outputs", "buffers"), p)
            name = _text(m.get("name"), f"{p}.name")
            if any(x.name == name for x in methods):
                raise _arg(f"{p}.name", f"method {name!r} is listed twice", name)
            lists = [tuple(_tensor(t, f"{p}.{part}[{j}]", part == "buffers") for j, t in
                           enumerate(_list(m.get(part, ()), f"{p}.{part}"))) for part in ("inputs", "outputs",
                                                                                         "buffers")]
            methods.append(Method(name, *lists))
        return cls(tuple(methods))


class ManifestEntry(NamedTuple):
    """What the manifest says about one table entry."""

    name: str
    requires: Requirements = Requirements()
    signature: Signature | None = None
    named_data: tuple[str, ...] = ()
    source_digest: str | None = None
    payload_sha256: bytes | None = None
    provenance: tuple[tuple[str, str], ...] = ()
    position: int = 0  # of its table in the manifest, for messages; not part of equality

    # Equality and hash leave out `position`, where the manifest happened to place the table: two
    # manifests that say the same thing hold equal entries. NamedTuple allows these in its body.
    def _key(self) -> tuple[Any, ...]:
        return self[:-1]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ManifestEntry):
            return self._key() == other._key()
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, ManifestEntry):
            return self._key() != other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "requires": self.requires.to_json(),
            "signature": None if self.signature is None else self.signature.to_json(),
            "named_data": list(self.named_data),
            "source_digest": self.source_digest,
            "payload_sha256": None if self.payload_sha256 is None else self.payload_sha256.hex(),
            "provenance": dict(self.provenance),
        }


class Manifest(NamedTuple):
    revision: int = REVISION
    entries: tuple[ManifestEntry, ...] = ()
    named_data: tuple[tuple[str, int], ...] = ()  # (key, segment index), sorted by key bytes

    def entry(self, name: str) -> ManifestEntry | None:
        return next((e for e in self.entries if e.name == name), None)

    @property
    def keys(self) -> dict[str, int]:
        return dict(self.named_data)

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, "entries": [e.to_json() for e in self.entries],
                "named_data": {k: s for k, s in self.named_data}}


def _arg(path: str, message: str, actual: Any = None) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, f"{path}: {message}", field=path, actual=actual)


def _only(obj: Mapping[Any, Any], allowed: tuple[str, ...], path: str) -> None:
    extra = [k for k in obj if k not in allowed]
    if extra:
        raise _arg(f"{path}.{extra[0]}", f"unknown key {extra[0]!r}; allowed: {', '.join(allowed)}", extra[0])


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value or len(value.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise _arg(path, f"must be a non-empty string of at most {MAX_TEXT_BYTES} bytes", value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _arg(path, "must be valid Unicode (no lone surrogates)", value) from None
    return value


def _is_list(value: Any) -> TypeGuard[list[Any] | tuple[Any, ...]]:
    """A list or a plain tuple. The records here are tuples too (NamedTuple), and one given where a
    list belongs must be refused, not iterated as its fields."""
    return isinstance(value, list) or (isinstance(value, tuple) and not hasattr(value, "_fields"))


def _list(value: Any, path: str) -> Sequence[Any]:
    if not _is_list(value):
        raise _arg(path, f"must be a list, not {type(value).__name__}", value)
    return value


def _words(value: Any, path: str, vocabulary: Sequence[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else _list(value, path)
    for i, w in enumerate(items):
        if w not in vocabulary:
            raise _arg(f"{path}[{i}]", f"{w!r} is not one of {', '.join(vocabulary)}", w)
    return tuple(dict.fromkeys(items))


def _uint(value: Any, path: str, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
        raise _arg(path, f"must be an integer from 0 to {high}", value)
    return value


def _tensor(obj: Any, path: str, named: bool) -> TensorSpec:
    if isinstance(obj, TensorSpec):
        spec = obj
    else:
        if not isinstance(obj, Mapping):
            raise _arg(path, "must be a mapping with dtype and shape", obj)
        _only(obj, ("name", "dtype", "shape"), path)
        name = None if obj.get("name") is None else _text(obj.get("name"), f"{path}.name")
        dims: list[Dim] = []
        for k, d in enumerate(_list(obj.get("shape", ()), f"{path}.shape")):
            if isinstance(d, str):
                dims.append(Dim(0, _text(d, f"{path}.shape[{k}]")))
            else:
                dims.append(Dim(_uint(d, f"{path}.shape[{k}]", _U64)))
        spec = TensorSpec(_text(obj.get("dtype"), f"{path}.dtype"), tuple(dims), name)
    if named and spec.name is None:
        raise _arg(f"{path}.name", "a mutable buffer must have a name", None)
    return spec


# ---------------------------------------------------------------------------------------------
# The schema, restated for the verifier (tests/test_manifest.py checks it against the .fbs)
# ---------------------------------------------------------------------------------------------


class _F(NamedTuple):
    name: str
    kind: str  # "u8" "u32" "u64" "string" "table" "[string]" "[table]" "[u8]"
    target: str = ""  # table name for "table" and "[table]"
    required: bool = False
    default: int = 0


_SCALARS: Final = {"u8": 1, "u32": 4, "u64": 8}

SCHEMA: Final[dict[str, tuple[_F, ...]]] = {
    "VersionConstraint": (_F("match", "u8"), _F("major", "u32"), _F("minor", "u32")),
    "AcceleratorRequirement": (_F("kind", "string", required=True), _F("targets", "[table]", "VersionConstraint"),
                               _F("min_memory_bytes", "u64")),
    "AbiRange": (_F("min", "u32"), _F("max", "u32", default=_U32)),
    "Requirements": (_F("os", "[string]"), _F("arch", "[string]"), _F("cpu_features", "[string]"),
                     _F("accelerators", "[table]", "AcceleratorRequirement"), _F("min_memory_bytes", "u64"),
                     _F("backend_abi", "table", "AbiRange")),
    "Dim": (_F("size", "u64"), _F("symbol", "string")),
    "TensorSpec": (_F("name", "string"), _F("dtype", "string", required=True), _F("shape", "[table]", "Dim")),
    "Method": (_F("name", "string", required=True), _F("inputs", "[table]", "TensorSpec"),
               _F("outputs", "[table]", "TensorSpec"), _F("buffers", "[table]", "TensorSpec")),
    "Signature": (_F("methods", "[table]", "Method"),),
    "KeyValue": (_F("key", "string", required=True), _F("value", "string", required=True)),
    "Entry": (_F("name", "string", required=True), _F("requires", "table", "Requirements"),
              _F("signature", "table", "Signature"), _F("named_data", "[string]"), _F("source_digest", "string"),
              _F("payload_sha256", "[u8]"), _F("provenance", "[table]", "KeyValue")),
    "NamedData": (_F("key", "string", required=True), _F("segment", "u32")),
    "Manifest": (_F("revision", "u32", default=REVISION), _F("entries", "[table]", "Entry"),
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
    """One pass over a manifest buffer. Every read is preceded by its bounds and alignment check."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.n = len(buf)
        self.depth = 0
        self.tables = 0
        self._tables: dict[tuple[int, str], tuple[dict[str, Any], int]] = {}
        self._strings: dict[int, str] = {}

    def need(self, pos: int, size: int, align: int, path: str, what: str) -> None:
        if pos < 0 or size > self.n or pos > self.n - size:
            raise _Bad(pos, path, f"{what} at {pos:#x} ({size} bytes) lies outside the manifest of {self.n:#x} bytes")
        if pos % align:
            raise _Bad(pos, path, f"{what} at {pos:#x} is not aligned to {align}")

    def uint(self, pos: int, size: int, path: str, what: str) -> int:
        self.need(pos, size, size, path, what)
        return int.from_bytes(self.buf[pos : pos + size], "little")

    def offset(self, pos: int, path: str) -> int:
        rel = self.uint(pos, 4, path, "offset")
        if rel == 0 or rel >= 1 << 31:
            raise _Bad(pos, path, f"offset {rel:#x} at {pos:#x} is zero or negative as a signed offset")
        target = pos + rel
        if target >= self.n:
            raise _Bad(pos, path, f"offset at {pos:#x} points to {target:#x}, past the end of the manifest "
                       f"at {self.n:#x}")
        return target

    def string(self, pos: int, path: str) -> str:
        hit = self._strings.get(pos)
        if hit is not None:
            return hit
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
        self._strings[pos] = text
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
            return hit[0]
        before = self.tables
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Bad(pos, path, f"tables nest deeper than {MAX_DEPTH}")
        self.count(1, pos, path)
        self.need(pos, 4, 4, path, f"table {name}")
        vt = pos - int.from_bytes(self.buf[pos : pos + 4], "little", signed=True)
        self.need(vt, 2, 2, path, f"vtable of {name}")
        vsize = int.from_bytes(self.buf[vt : vt + 2], "little")
        if vsize & 1:
            raise _Bad(vt, path, f"vtable of {name} at {vt:#x} has odd size {vsize}")
        self.need(vt, vsize, 2, path, f"vtable of {name}")
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
        self._tables[(pos, name)] = (out, self.tables - before)
        return out

    def count(self, tables: int, pos: int, path: str) -> None:
        self.tables += tables
        if self.tables > MAX_TABLES:
            raise _Bad(pos, path, f"the manifest references more than {MAX_TABLES} tables")

    def field(self, fp: int, f: _F, path: str) -> Any:
        if f.kind in _SCALARS:
            return self.uint(fp, _SCALARS[f.kind], path, f"field {f.name}")
        target = self.offset(fp, path)
        if f.kind == "string":
            return self.string(target, path)
        if f.kind == "table":
            return self.table(target, f.target, path)
        if f.kind == "[u8]":
            start, count = self.vector(target, 1, path)
            return self.buf[start : start + count]
        start, count = self.vector(target, 4, path)
        items: list[Any] = []
        for k in range(count):
            ep = start + 4 * k
            epath = f"{path}[{k}]"
            if f.kind == "[string]":
                items.append(self.string(self.offset(ep, epath), epath))
            else:
                items.append(self.table(self.offset(ep, epath), f.target, epath))
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
        if digest is not None and not re.fullmatch(_DIGEST, digest):
            _invalid(e, f"{p}.source_digest", f"source_digest {digest!r} is not '<algorithm>:<lowercase hex>'")
        keys = tuple(e["named_data"] or ())
        for k, key in enumerate(keys):
            if not key:
                _invalid(e, f"{p}.named_data[{k}]", "a named-data key is empty")
        entries.append(ManifestEntry(
            name=_nonempty(e, "name", p),
            requires=_requirements(e["requires"], f"{p}.requires"),
            signature=None if e["signature"] is None else _signature(e["signature"], f"{p}.signature"),
            named_data=keys,
            source_digest=digest,
            payload_sha256=bytes(sha) if sha else None,
            provenance=tuple((kv["key"], kv["value"]) for kv in e["provenance"] or ()),
            position=int(e["@pos"]),
        ))
    named: list[tuple[str, int]] = []
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
    return Manifest(int(root["revision"]), tuple(entries), tuple(named))


_DIGEST = r"[a-z0-9][a-z0-9_-]{0,31}:(?:[0-9a-f]{2}){1,64}"  # compiled on first use, as _TARGET


def _requirements(obj: dict[str, Any] | None, path: str) -> Requirements:
    if obj is None:
        return Requirements()
    accs = []
    for a in obj["accelerators"] or ():
        targets = tuple(VersionConstraint(int(t["match"]), int(t["major"]), int(t["minor"]))
                        for t in a["targets"] or ())
        accs.append(AcceleratorRequirement(a["kind"], targets, int(a["min_memory_bytes"])))
    abi = obj["backend_abi"]
    backend_abi = None if abi is None else AbiRange(int(abi["min"]), int(abi["max"]))
    return Requirements(tuple(obj["os"] or ()), tuple(obj["arch"] or ()), tuple(obj["cpu_features"] or ()),
                        tuple(accs), int(obj["min_memory_bytes"]), backend_abi)


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
                if part == "buffers" and not t["name"]:
                    _invalid(t, f"{tp}.name", "a mutable buffer must have a name")
                dims = []
                for k, d in enumerate(t["shape"] or ()):
                    if d["symbol"] is not None and (d["size"] or not d["symbol"]):
                        _invalid(d, f"{tp}.shape[{k}]", "a symbolic dimension has a non-empty symbol and size 0")
                    dims.append(Dim(int(d["size"]), d["symbol"]))
                specs.append(TensorSpec(_nonempty(t, "dtype", tp), tuple(dims), t["name"]))
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
    entries = [_write_entry(b, e) for e in manifest.entries]
    named = []
    for key, segment in sorted(manifest.named_data, key=lambda kv: kv[0].encode("utf-8")):
        k = b.CreateString(key)
        _fb.NamedDataStart(b)
        _fb.NamedDataAddKey(b, k)
        _fb.NamedDataAddSegment(b, segment)
        named.append(_fb.NamedDataEnd(b))
    entries_vec = _offsets(b, _fb.ManifestStartEntriesVector, entries)
    named_vec = _offsets(b, _fb.ManifestStartNamedDataVector, named)
    _fb.ManifestStart(b)
    _fb.ManifestAddRevision(b, manifest.revision)
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


def _write_entry(b: Any, e: ManifestEntry) -> int:
    name = b.CreateString(e.name)
    requires = _write_requirements(b, e.requires)
    signature = None if e.signature is None else _write_signature(b, e.signature)
    keys = _strings(b, _fb.EntryStartNamedDataVector, e.named_data) if e.named_data else None
    digest = None if e.source_digest is None else b.CreateString(e.source_digest)
    sha = None if e.payload_sha256 is None else b.CreateByteVector(e.payload_sha256)
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
    return int(_fb.EntryEnd(b))


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
            _fb.AcceleratorRequirementStart(b)
            _fb.AcceleratorRequirementAddKind(b, kind)
            if tvec is not None:
                _fb.AcceleratorRequirementAddTargets(b, tvec)
            _fb.AcceleratorRequirementAddMinMemoryBytes(b, a.min_memory_bytes)
            items.append(_fb.AcceleratorRequirementEnd(b))
        accs = _offsets(b, _fb.RequirementsStartAcceleratorsVector, items)
    abi = None
    if r.backend_abi is not None:
        _fb.AbiRangeStart(b)
        _fb.AbiRangeAddMin(b, r.backend_abi.min)
        _fb.AbiRangeAddMax(b, r.backend_abi.max)
        abi = _fb.AbiRangeEnd(b)
    _fb.RequirementsStart(b)
    for value, add in ((os_, _fb.RequirementsAddOs), (arch, _fb.RequirementsAddArch),
                       (feats, _fb.RequirementsAddCpuFeatures), (accs, _fb.RequirementsAddAccelerators),
                       (abi, _fb.RequirementsAddBackendAbi)):
        if value is not None:
            add(b, value)
    _fb.RequirementsAddMinMemoryBytes(b, r.min_memory_bytes)
    return int(_fb.RequirementsEnd(b))


def _write_tensor(b: Any, t: TensorSpec) -> int:
    name = None if t.name is None else b.CreateString(t.name)
    dtype = b.CreateString(t.dtype)
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


# ---------------------------------------------------------------------------------------------
# Consistency (specs/nfat-manifest.md section "Consistency"), shared by validate and pack
# ---------------------------------------------------------------------------------------------


def signature_difference(a: Signature, b: Signature) -> str | None:
    """The first difference between two signatures, in words, or None when they agree."""
    names_a, names_b = [m.name for m in a.methods], [m.name for m in b.methods]
    if sorted(names_a) != sorted(names_b):
        return f"methods {sorted(names_a)} differ from {sorted(names_b)}"
    for ma in a.methods:
        mb = b.method(ma.name)
        assert mb is not None
        for part in ("inputs", "outputs", "buffers"):
            ta, tb = getattr(ma, part), getattr(mb, part)
            if ta != tb:
                return (f"method {ma.name!r} {part} differ: [{', '.join(t.text() for t in ta)}] vs "
                f"[{', '.join(t.text() for t in tb)}]")
    return None


def consistency_problems(
    manifest: Manifest, table_names: Sequence[str], segment_count: int
) -> list[tuple[ErrorCode, str, str, int | None]]:
    """Every consistency problem as (code, field path, message, manifest position or None)."""
    out: list[tuple[ErrorCode, str, str, int | None]] = []

    def add(code: ErrorCode, path: str, message: str, position: int | None) -> None:
        out.append((code, path, message, position))

    seen: dict[str, int] = {}
    table = set(table_names)
    for i, e in enumerate(manifest.entries):
        path = f"manifest.entries[{i}].name"
        if e.name in seen:
            add(ErrorCode.DUPLICATE_MANIFEST_ENTRY, path,
                f"manifest entries {seen[e.name]} and {i} are both named {e.name!r}", e.position)
            continue
        seen[e.name] = i
        if e.name not in table:
            add(ErrorCode.MANIFEST_ENTRY_UNKNOWN, path,
                f"manifest entry {e.name!r} names no entry of the table "
                f"(the table holds {', '.join(repr(n) for n in table_names)})", e.position)
    for i, name in enumerate(table_names):
        if name not in seen:
            add(ErrorCode.MANIFEST_ENTRY_MISSING, f"entries[{i}].name",
                f"entry {name!r} has no entry in the manifest; every entry must have exactly one", None)
    keys = manifest.keys
    referenced: set[int] = set()
    for i, (key, segment) in enumerate(manifest.named_data):
        if segment >= segment_count:
            add(ErrorCode.NAMED_DATA_BAD_SEGMENT, f"manifest.named_data[{i}].segment",
                f"named-data key {key!r} points at segment {segment}, but the segment table has "
                f"{segment_count}", None)
        referenced.add(segment)
    for s in range(segment_count):
        if s not in referenced:
            add(ErrorCode.SEGMENT_UNREFERENCED, f"segments[{s}]",
                f"segment {s} is named by no named-data key: its bytes are unreachable", None)
    for i, e in enumerate(manifest.entries):
        for k, key in enumerate(e.named_data):
            if key not in keys:
                add(ErrorCode.NAMED_DATA_KEY_MISSING, f"manifest.entries[{i}].named_data[{k}]",
                    f"entry {e.name!r} needs named-data key {key!r}, which the manifest does not define",
                    e.position)
    first_sig: ManifestEntry | None = None
    first_digest: ManifestEntry | None = None
    for i, e in enumerate(manifest.entries):
        if e.signature is not None:
            if first_sig is None:
                first_sig = e
            else:
                assert first_sig.signature is not None
                diff = signature_difference(first_sig.signature, e.signature)
                if diff is not None:
                    add(ErrorCode.SIGNATURE_MISMATCH, f"manifest.entries[{i}].signature",
                        f"entries {first_sig.name!r} and {e.name!r} declare different program "
                        f"signatures: {diff}", e.position)
        if e.source_digest is not None:
            if first_digest is None:
                first_digest = e
            elif e.source_digest != first_digest.source_digest:
                add(ErrorCode.SOURCE_DIGEST_MISMATCH, f"manifest.entries[{i}].source_digest",
                    f"entries {first_digest.name!r} and {e.name!r} were built from different source "
                    f"programs: {first_digest.source_digest} vs {e.source_digest}", e.position)
    return out


def read_manifest(buf: Any, header: Any, *, source: str | None = None) -> Manifest | None:
    """The manifest of a structurally sound v2 container (None when it has none), after checking
    its CRC32C: bounds-checked, FatpteError on any defect."""
    if header is None or header.version != L.VERSION_2 or header.manifest_size == 0:
        return None
    from fatpte.checksum import crc32c

    start, end = header.manifest_offset, header.manifest_offset + header.manifest_size
    actual = crc32c(buf, start, end)
    if actual != header.manifest_checksum:
        raise FatpteError(ErrorCode.MANIFEST_CHECKSUM_MISMATCH,
                          f"the manifest ({start:#x}..{end:#x}) has CRC32C {actual:08x}, but manifest_checksum "
                          f"says {header.manifest_checksum:08x}", source=source, field="header.manifest_checksum",
                          offset=L.RECORDS["v2_header"].offsets["manifest_checksum"][0],
                          expected=header.manifest_checksum, actual=actual)
    view = memoryview(buf)
    try:
        return decode(view[start:end], base=start, source=source)
    finally:
        view.release()


def manifest_for_pack(specs: Sequence[Any], sources: Sequence[Any], nd: Any) -> bytes:
    """The manifest bytes `pack` writes, or b"" when no specialization asks for one."""
    import hashlib

    wanted = bool(nd.segments) or any(
        s.requires or s.named_data or s.signature or s.source_digest or s.provenance or s.payload_sha256
        for s in specs)
    if not wanted:
        return b""
    entries: list[ManifestEntry] = []
    for i, (s, src) in enumerate(zip(specs, sources)):
        label = f"specializations[{i}]"
        digest = s.source_digest
        if digest is not None and (not isinstance(digest, str) or not re.fullmatch(_DIGEST, digest)):
            raise _arg(f"{label}.source_digest", f"{digest!r} is not '<algorithm>:<lowercase hex>', "
                       "e.g. 'sha256:9f86...'", digest)
        prov: list[tuple[str, str]] = []
        if s.provenance is not None:
            if not isinstance(s.provenance, Mapping):
                raise _arg(f"{label}.provenance", "must map strings to strings", s.provenance)
            for k, v in s.provenance.items():
                prov.append((_text(k, f"{label}.provenance"), _text(v, f"{label}.provenance[{k!r}]")))
        sha = None
        if s.payload_sha256:
            h = hashlib.sha256()
            view = memoryview(src.buf)
            try:
                for pos in range(0, src.size, 8 << 20):
                    h.update(view[pos : pos + (8 << 20)])
            finally:
                view.release()
            sha = h.digest()
        entries.append(ManifestEntry(
            name=s.entry_name,
            requires=Requirements.from_mapping(s.requires, f"{label}.requires"),
            signature=None if s.signature is None else Signature.from_mapping(s.signature, f"{label}.signature"),
            named_data=nd.entry_keys[i], source_digest=digest, payload_sha256=sha, provenance=tuple(prov)))
    named = tuple(sorted(nd.key_segment.items(), key=lambda kv: kv[0].encode("utf-8")))
    manifest = Manifest(REVISION, tuple(entries), named)
    problems = consistency_problems(manifest, [s.entry_name for s in specs], len(nd.segments))
    if problems:
        code, path, message, _ = problems[0]
        raise FatpteError(code, message, field=path.replace("manifest.entries", "specializations"))
    data = encode(manifest)
    if len(data) > L.MAX_MANIFEST_SIZE:
        raise FatpteError(ErrorCode.MANIFEST_TOO_LARGE, f"the manifest would be {len(data)} bytes, above the "
                          f"limit of {L.MAX_MANIFEST_SIZE}", field="manifest", actual=len(data))
    return data


def check_container(buf: Any, st: Any) -> None:
    """Append the manifest findings of a v2 container to `st.findings` (the last checks of the
    canonical order): decoding, then the consistency rules, then payload SHA-256 digests."""
    import hashlib

    from fatpte.errors import finding

    h = st.header
    if h is None or h.version != L.VERSION_2:
        return
    entry_at = {e.index: h.header_size + e.index * h.entry_size for e in st.entries}
    seg_at = h.header_size + h.entry_count * h.entry_size
    if h.manifest_size == 0:
        for s in st.segments:
            st.add(finding(ErrorCode.SEGMENT_UNREFERENCED,
                           f"segment {s.index} is named by no named-data key (the container has no manifest)",
                           offset=seg_at + s.index * h.segment_entry_size, field=f"segments[{s.index}]"))
        return
    if not st.manifest_placed or any(f.code in (ErrorCode.MANIFEST_CHECKSUM_MISMATCH,
                                                ErrorCode.BAD_MANIFEST_IDENTIFIER) for f in st.findings):
        return
    try:
        manifest = read_manifest(buf, h, source=st.source)
    except FatpteError as exc:
        st.add(exc.finding)
        return
    assert manifest is not None
    for code, path, message, position in consistency_problems(manifest, [e.name for e in st.entries],
                                                              len(st.segments)):
        if position is not None:
            offset: int | None = h.manifest_offset + position
        elif path.startswith("entries["):
            offset = entry_at[int(path[8 : path.index("]")])]
        elif path.startswith("segments["):
            offset = seg_at + int(path[9 : path.index("]")]) * h.segment_entry_size
        else:
            offset = h.manifest_offset
        st.add(finding(code, message, offset=offset, field=path))
    by_name = {e.name: e for e in st.entries}
    for i, me in enumerate(manifest.entries):
        e = by_name.get(me.name)
        if me.payload_sha256 is None or e is None or e.index not in st.placed_entries:
            continue
        digest = hashlib.sha256()
        view = memoryview(buf)
        try:
            for pos in range(e.offset, e.end, 8 << 20):
                digest.update(view[pos : min(e.end, pos + (8 << 20))])
        finally:
            view.release()
        if digest.digest() != me.payload_sha256:
            st.add(finding(ErrorCode.PAYLOAD_DIGEST_MISMATCH,
                           f"payload of {e.name!r} has SHA-256 {digest.hexdigest()}, but its manifest entry says "
                           f"{me.payload_sha256.hex()}", offset=h.manifest_offset + me.position,
                           field=f"manifest.entries[{i}].payload_sha256", expected=me.payload_sha256.hex(),
                           actual=digest.hexdigest()))
