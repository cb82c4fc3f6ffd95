"""The NFAT v2 manifest's records (specs/nfat_manifest.fbs, specs/nfat-manifest.md): requirements,
signatures, golden calls, entries, the manifest itself, and the strict readers of the mappings
Python callers and pack.toml give for them (`Requirements.from_mapping`, `Signature.from_mapping`, ...).

The records are NamedTuples, not dataclasses, whose import alone costs `fatpte info` more than
reading the manifest. Their bytes are read and written by fatpte.manifest.codec.
"""

from __future__ import annotations

import enum
import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple, TypeGuard

from fatpte.errors import ErrorCode, FatpteError
from fatpte.format.vocabulary import CAPABILITY_PATTERN, DEVICE_NAME_PATTERN
from fatpte.value.dtypes import LAYOUT_DTYPES as _LAYOUT_DTYPES
from fatpte.value.dtypes import adapter_problem

# The highest revision this implementation reads and writes. A writer states the lowest revision
# whose fields its manifest uses (`required_revision`), so a manifest without revision-2 fields
# keeps the bytes revision 1 gave it.
REVISION: Final = 4
# The limits of the reference C++ verifier's defaults, stated in the spec so both sides agree.
MAX_DEPTH: Final = 64
MAX_TABLES: Final = 1_000_000
SHA256_SIZE: Final = 32
MAX_TEXT_BYTES: Final = 4096  # names, keys, dtypes, symbols: long enough for any FQN
_LARGEST: Final = sys.float_info.max  # where a golden bound saturates (11.1)
# The work budget (specs/nfat-manifest.md 2.3): a manifest of n bytes may expand, counting every
# object again at each reference to it, to at most EXPANSION_FACTOR * n + EXPANSION_ALLOWANCE bytes.
EXPANSION_FACTOR: Final = 16
EXPANSION_ALLOWANCE: Final = 1 << 20


def work_budget(size: int) -> int:
    """The most a manifest of `size` bytes may expand to (specs/nfat-manifest.md 2.3)."""
    return EXPANSION_FACTOR * size + EXPANSION_ALLOWANCE
# The provenance key that records a packer's decision about the signature check: "skipped" (no
# entry states a signature) or "from:NAME" (every entry states entry NAME's); spec section 3.2.
SIGNATURE_CHECK_KEY: Final = "fatpte.signature_check"
# The provenance key that records the SHA-256 of an entry's golden calls (specs/nfat-manifest.md
# 11.3), through which a signature covers them.
GOLDEN_DIGEST_KEY: Final = "fatpte.golden.sha256"


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
        if major > U32_MAX or minor > U32_MAX:
            raise _arg(path, f"{text!r}: version numbers must fit in 32 bits", text)
        return cls(int(match), major, minor)


# Patterns as text: `re` compiles each on first use (and caches it), so reading a manifest
# without targets or digests, as `fatpte info` mostly does, compiles neither.
_TARGET = (r"(?:(?P<cuda>sm|compute)_(?P<digits>[0-9]{2,4})(?P<a>a?)"
           r"|(?P<op>>=|~|==)(?P<major>[0-9]{1,10})\.(?P<minor>[0-9]{1,10}))")
U32_MAX: Final = (1 << 32) - 1
_U64 = (1 << 64) - 1
# A source digest, "<algorithm>:<lowercase hex>"; compiled on first use, as _TARGET.
DIGEST_PATTERN: Final = r"[a-z0-9][a-z0-9_-]{0,31}:(?:[0-9a-f]{2}){1,64}"


class AcceleratorRequirement(NamedTuple):
    kind: str
    targets: tuple[VersionConstraint, ...] = ()
    min_memory_bytes: int = 0
    # Revision 4: the vendor runtime's device type ("GPU"; "": any) and the capabilities the
    # accelerator must list (specs/nfat-manifest.md 4.1).
    device: str = ""
    capabilities: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "targets": [t.text(self.kind) for t in self.targets],
                               "min_memory_bytes": self.min_memory_bytes}
        if self.device:
            out["device"] = self.device
        if self.capabilities:
            out["capabilities"] = list(self.capabilities)
        return out

    def text(self) -> str:
        """`openvino GPU`, `cuda sm_80|compute_90 mem>=16 GiB`, `openvino NPU +int8`: one short part."""
        text = self.kind + (f" {self.device}" if self.device else "")
        if self.targets:
            text += " " + "|".join(t.text(self.kind) for t in self.targets)
        if self.capabilities:
            text += " +" + "+".join(self.capabilities)
        if self.min_memory_bytes:
            text += f" mem>={_size_text(self.min_memory_bytes)}"
        return text

    def device_met(self, device: str) -> bool:
        """Whether an accelerator whose `device` is `device` is of this requirement's device type:
        the type itself, or the type then "." and an index ("GPU" is met by "GPU" and "GPU.1")."""
        if not self.device:
            return True
        index = device[len(self.device) + 1:] if device.startswith(self.device + ".") else ""
        return device == self.device or (index.isdigit() and index.isascii())


class AbiRange(NamedTuple):
    min: int = 0
    max: int = U32_MAX

    def holds(self, version: int) -> bool:
        return self.min <= version <= self.max

    def text(self) -> str:
        return f"{self.min}..{self.max}" if self.max != U32_MAX else f">= {self.min}"


class Requirements(NamedTuple):
    """What an entry needs from a device. Empty fields state no requirement."""

    os: tuple[str, ...] = ()
    arch: tuple[str, ...] = ()
    cpu_features: tuple[str, ...] = ()
    accelerators: tuple[AcceleratorRequirement, ...] = ()
    min_memory_bytes: int = 0
    backend_abi: AbiRange | None = None
    # Revision 4: the device's identity (specs/nfat-manifest.md 4.4).
    cpu_cores: tuple[str, ...] = ()
    min_core: str | None = None
    soc: tuple[str, ...] = ()

    @property
    def names_device(self) -> bool:
        """It states a core or an SoC: met, the entry's fit is `exact` (section 6.3)."""
        return bool(self.cpu_cores) or self.min_core is not None or bool(self.soc)

    def text(self) -> str:
        """One short line: `arch=x86_64, +avx2+fma, cuda sm_80|compute_90, mem>=1 GiB`; `-` when none."""
        parts = []
        if self.os:
            parts.append("os=" + "|".join(self.os))
        if self.arch:
            parts.append("arch=" + "|".join(self.arch))
        if self.cpu_features:
            parts.append("+" + "+".join(self.cpu_features))
        parts += [acc.text() for acc in self.accelerators]
        if self.min_memory_bytes:
            parts.append(f"mem>={_size_text(self.min_memory_bytes)}")
        if self.backend_abi is not None:
            parts.append(f"abi {self.backend_abi.text()}")
        if self.cpu_cores:
            parts.append("cores=" + "|".join(self.cpu_cores))
        if self.min_core is not None:
            parts.append(f"core>={self.min_core}")
        if self.soc:
            parts.append("soc=" + "|".join(self.soc))
        return ", ".join(parts) or "-"

    @property
    def specificity(self) -> int:
        """The number of requirements stated (spec section "Ranking")."""
        return (bool(self.os) + bool(self.arch) + len(set(self.cpu_features)) + len(self.accelerators)
                + bool(self.min_memory_bytes) + (self.backend_abi is not None) + bool(self.cpu_cores)
                + (self.min_core is not None) + bool(self.soc))

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
        if self.cpu_cores:
            out["cpu_cores"] = list(self.cpu_cores)
        if self.min_core is not None:
            out["min_core"] = self.min_core
        if self.soc:
            out["soc"] = list(self.soc)
        return out

    @classmethod
    def from_mapping(cls, obj: Any, path: str = "requires") -> Requirements:
        """Read the `requires` mapping of a Specialization or pack.toml (device-profile words)."""
        from fatpte.format import vocabulary

        if isinstance(obj, Requirements):
            return obj
        if obj is None:
            return cls()
        if not isinstance(obj, Mapping):
            raise _arg(path, f"must be a mapping, not {type(obj).__name__}", obj)
        _only(obj, ("os", "arch", "cpu_features", "accelerators", "min_memory_bytes", "backend_abi", "cpu_cores",
                    "min_core", "soc"), path)
        os_ = _words(obj.get("os"), f"{path}.os", vocabulary.OS_NAMES)
        arch = _words(obj.get("arch"), f"{path}.arch", vocabulary.ARCHES)
        known = frozenset().union(*vocabulary.CPU_FEATURES.values())
        features = _words(obj.get("cpu_features"), f"{path}.cpu_features", tuple(sorted(known)))
        if arch:
            # A feature of an architecture the entry does not run on is a mistake, never a requirement.
            allowed = frozenset().union(*(vocabulary.CPU_FEATURES[a] for a in arch))
            for i, feat in enumerate(features):
                if feat not in allowed:
                    raise _arg(f"{path}.cpu_features[{i}]", f"{feat!r} is not a feature of {', '.join(arch)}", feat)
        accs: list[AcceleratorRequirement] = []
        raw_accs = obj.get("accelerators", ())
        if not _is_list(raw_accs):
            raise _arg(f"{path}.accelerators", "must be a list of tables", raw_accs)
        for i, a in enumerate(raw_accs):
            p = f"{path}.accelerators[{i}]"
            accs.append(_accelerator_requirement(a, p))
        abi = obj.get("backend_abi")
        backend_abi = None
        if abi is not None:
            if not isinstance(abi, Mapping):
                raise _arg(f"{path}.backend_abi", "must be a mapping with min and/or max", abi)
            _only(abi, ("min", "max"), f"{path}.backend_abi")
            lo = _uint(abi.get("min", 0), f"{path}.backend_abi.min", U32_MAX)
            hi = _uint(abi.get("max", U32_MAX), f"{path}.backend_abi.max", U32_MAX)
            if lo > hi:
                raise _arg(f"{path}.backend_abi", f"min {lo} is above max {hi}", abi)
            backend_abi = AbiRange(lo, hi)
        cores, min_core, soc = _identity(obj, path, arch)
        return cls(os_, arch, features, tuple(accs),
                   _uint(obj.get("min_memory_bytes", 0), f"{path}.min_memory_bytes", _U64), backend_abi,
                   cores, min_core, soc)


def _identity(obj: Mapping[str, Any], path: str, arch: tuple[str, ...]) -> tuple[tuple[str, ...], str | None,
                                                                                tuple[str, ...]]:
    """`cpu_cores` (core names or ids of an unnamed core), `min_core` (a core name: it needs a
    generation) and `soc` (1 to 256 printable ASCII characters each) of a `requires` mapping."""
    import re

    from fatpte.format import vocabulary

    arches = arch or vocabulary.ARCHES
    cores = _list([obj["cpu_cores"]] if isinstance(obj.get("cpu_cores"), str) else obj.get("cpu_cores", ()),
                  f"{path}.cpu_cores")
    for i, word in enumerate(cores):
        core = vocabulary.CORE_BY_NAME.get(word) if isinstance(word, str) else None
        by_id = isinstance(word, str) and any(re.fullmatch(vocabulary.CORE_ID_PATTERNS[a], word) for a in arches)
        if (core is None or core.arch not in arches) and not by_id:
            raise _arg(f"{path}.cpu_cores[{i}]", f"{word!r} is not a core of {', '.join(arches)}: a name of the "
                       "core table (specs/device-profile.md 3.6: cortex-a76, neoverse-n1, znver4, ...) or the id of "
                       "a core it does not name (0x41:0xd0b, GenuineIntel:6:143)", word)
        if by_id and word in vocabulary.CORE_BY_ID:
            raise _arg(f"{path}.cpu_cores[{i}]", f"{word!r} is the core {vocabulary.CORE_BY_ID[word].name}: "
                       "write its name", word)
    min_core = obj.get("min_core")
    if min_core is not None:
        core = vocabulary.CORE_BY_NAME.get(min_core) if isinstance(min_core, str) else None
        if core is None or core.arch not in arches:
            raise _arg(f"{path}.min_core", f"{min_core!r} is not a core name of the table for "
                       f"{', '.join(arches)} (specs/device-profile.md 3.6)", min_core)
    soc = _list([obj["soc"]] if isinstance(obj.get("soc"), str) else obj.get("soc", ()), f"{path}.soc")
    for i, word in enumerate(soc):
        if not isinstance(word, str) or not re.fullmatch(r"[ -~]{1,256}", word):
            raise _arg(f"{path}.soc[{i}]", "must be 1 to 256 printable ASCII characters: a device-tree "
                       "compatible string (brcm,bcm2712), a machine model or a /sys/devices/soc0 value", word)
    return tuple(dict.fromkeys(cores)), min_core, tuple(dict.fromkeys(soc))


class Dim(NamedTuple):
    size: int = 0
    symbol: str | None = None

    def to_json(self) -> int | str:
        return self.symbol if self.symbol is not None else self.size


class TensorSpec(NamedTuple):
    dtype: str
    shape: tuple[Dim, ...] = ()
    name: str | None = None
    # Revision 4: the entry's program's dtype here when it is not `dtype` (a signature adapter,
    # specs/nfat-manifest.md 5.3); None: `dtype`. Never part of agreement between entries.
    program_dtype: str | None = None

    def text(self) -> str:
        dims = ", ".join(str(d.to_json()) for d in self.shape)
        who = f"{self.name}: " if self.name is not None else ""
        behind = f" (program {self.program_dtype})" if self.program_dtype is not None else ""
        return f"{who}{self.dtype}[{dims}]{behind}"

    @property
    def in_program(self) -> str:
        """The dtype the entry's program has here."""
        return self.program_dtype if self.program_dtype is not None else self.dtype

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dtype": self.dtype, "shape": [d.to_json() for d in self.shape]}
        if self.name is not None:
            out = {"name": self.name, **out}
        if self.program_dtype is not None:
            out["program_dtype"] = self.program_dtype
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
    """The program's methods. Two signatures agree (`fatpte.manifest.rules.signature_difference`
    is None) when their methods do, in any order, names of tensors compared only where both
    sides have one (specs/nfat-manifest.md section 5); `==` compares everything, in order."""

    methods: tuple[Method, ...] = ()

    def method(self, name: str) -> Method | None:
        return next((m for m in self.methods if m.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {"methods": [m.to_json() for m in self.methods]}

    @classmethod
    def from_mapping(cls, obj: Any, path: str = "signature") -> Signature:
        """`{"methods": [{"name", "inputs", "outputs", "buffers"}]}`; tensors are
        `{"name"?, "dtype", "shape": [int | "symbol", ...]}`, buffers in the program's order."""
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
            lists = [tuple(_tensor(t, f"{p}.{part}[{j}]") for j, t in
                           enumerate(_list(m.get(part, ()), f"{p}.{part}"))) for part in ("inputs", "outputs",
                                                                                         "buffers")]
            methods.append(Method(name, *lists))
        return cls(tuple(methods))


class GoldenOutput(NamedTuple):
    """One output a golden call must give: the named-data key of the expected tensor and how far
    the entry's may be from it, `max|got - want| <= atol + rtol * max|want|` (revision 3)."""

    key: str
    atol: float = 0.0
    rtol: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "atol": self.atol, "rtol": self.rtol}

    def bound(self, max_want: float) -> float:
        """`atol + rtol * max_want`, the largest difference this output may show (golden_bound)."""
        return golden_bound(self.atol, self.rtol, max_want)


def golden_bound(atol: float, rtol: float, max_want: float) -> float:
    """`atol + rtol * max_want` without overflow (specs/nfat-manifest.md 11.1): where the sum would
    pass the largest finite double it is that double, so that no difference that is not finite
    fits under it. The loader computes the same (loader/src/container/golden.cpp)."""
    return min(atol + rtol * max_want, _LARGEST)


def within(difference: float, bound: float) -> bool:
    """Whether a difference is within a bound (11.1): one that is not finite (a NaN or an infinity
    against another value) never is, however large the bound."""
    return math.isfinite(difference) and difference <= bound


class GoldenCall(NamedTuple):
    """One reference call of a method (revision 3): the named-data keys of its inputs, in call
    order, and the outputs it must give (specs/nfat-manifest.md section 11)."""

    method: str
    inputs: tuple[str, ...] = ()
    outputs: tuple[GoldenOutput, ...] = ()

    def tensor_keys(self) -> tuple[str, ...]:
        return (*self.inputs, *(o.key for o in self.outputs))

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "inputs": list(self.inputs), "outputs": [o.to_json() for o in self.outputs]}


def golden_encoding(calls: Sequence[GoldenCall]) -> bytes:
    """The canonical encoding of an entry's golden calls (specs/nfat-manifest.md 11.3): the
    primitives of specs/nfat-signature.md section 4, a tolerance as the u64 of its binary64 bits."""
    from fatpte.value.canonical import CanonicalWriter

    w = CanonicalWriter()
    w.text("nfat.golden/1")

    def output(o: GoldenOutput) -> None:
        w.text(o.key)
        w.f64(o.atol)
        w.f64(o.rtol)

    def call(c: GoldenCall) -> None:
        w.text(c.method)
        w.strings(c.inputs)
        w.seq(c.outputs, output)

    w.seq(calls, call)
    return w.result()


def golden_digest(calls: Sequence[GoldenCall]) -> str:
    """The SHA-256 of `golden_encoding(calls)`, lowercase hex: what `GOLDEN_DIGEST_KEY` records."""
    import hashlib

    return hashlib.sha256(golden_encoding(calls)).hexdigest()


# The value kinds of ExecuTorch a signature names for a scalar argument or result (not a tensor),
# and the dtype of the one-element tensor a golden call gives for each (specs/nfat-manifest.md 11.2).
GOLDEN_SCALAR_KINDS: Final[dict[str, str]] = {"Int": "int64", "Double": "float64", "Bool": "bool"}


def golden_fit_problem(spec: TensorSpec, layout: TensorLayout) -> str | None:
    """Why a golden tensor of `layout` does not fit `spec`, a method's input or output
    (specs/nfat-manifest.md 11.2), or None."""
    kind = GOLDEN_SCALAR_KINDS.get(spec.dtype)
    if kind is not None:
        numel = 1
        for d in layout.sizes:
            numel *= d
        if layout.dtype != kind or numel != 1:
            return f"the method takes a {spec.dtype} value, given as one {kind} element, not {layout.text()}"
        return None
    if spec.dtype not in LAYOUT_DTYPES:
        return f"the method's {spec.text()} is a {spec.dtype} value, which no golden tensor can give"
    if layout.dtype != spec.dtype or len(layout.sizes) != len(spec.shape) or any(
            d.symbol is None and d.size != s for d, s in zip(spec.shape, layout.sizes)):
        return f"the method's is {spec.text()}, the golden tensor is {layout.text()}"
    return None


class ManifestEntry(NamedTuple):
    """What the manifest says about one table entry."""

    name: str
    requires: Requirements = Requirements()
    signature: Signature | None = None
    named_data: tuple[str, ...] = ()
    source_digest: str | None = None
    payload_sha256: bytes | None = None
    provenance: tuple[tuple[str, str], ...] = ()
    # The ExecuTorch backend ids the program's delegates need (revision 2): None when not known,
    # () when none (a program of portable operators only).
    executorch_backends: tuple[str, ...] | None = None
    golden: tuple[GoldenCall, ...] = ()  # revision 3: reference calls (specs/nfat-manifest.md 11)
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
            "executorch_backends": None if self.executorch_backends is None else list(self.executorch_backends),
            "golden": [c.to_json() for c in self.golden],
        }

    def golden_keys(self) -> tuple[str, ...]:
        """Every named-data key its golden calls name, each once, in the order they name them."""
        return tuple(dict.fromkeys(k for c in self.golden for k in c.tensor_keys()))


# The dtypes a TensorLayout may name, and the bytes of one element: fatpte.value.dtypes's.
LAYOUT_DTYPES: Final[dict[str, int]] = _LAYOUT_DTYPES
I32_MAX: Final = (1 << 31) - 1


class TensorLayout(NamedTuple):
    """How a runtime reads a named-data segment as a tensor (revision 2): what ExecuTorch's
    `NamedDataMap.get_tensor_layout` answers. `dim_order` () means contiguous."""

    dtype: str
    sizes: tuple[int, ...] = ()
    dim_order: tuple[int, ...] = ()

    @property
    def nbytes(self) -> int | None:
        """The bytes the tensor holds, or None for a dtype outside LAYOUT_DTYPES."""
        size = LAYOUT_DTYPES.get(self.dtype)
        if size is None:
            return None
        for d in self.sizes:
            size *= d
        return size

    def problem(self) -> str | None:
        """Why the layout breaks the spec's value rules (section 3.3), or None."""
        if self.dtype not in LAYOUT_DTYPES:
            return f"dtype {self.dtype!r} is not one of {', '.join(LAYOUT_DTYPES)}"
        for k, d in enumerate(self.sizes):
            if not 0 <= d <= I32_MAX:
                return f"sizes[{k}] is {d}; a size is 0 to {I32_MAX}"
        if self.dim_order and sorted(self.dim_order) != list(range(len(self.sizes))):
            return (f"dim_order {list(self.dim_order)} is not a permutation of 0..{len(self.sizes) - 1} "
                    f"for {len(self.sizes)} sizes")
        return None

    def same_as(self, other: TensorLayout) -> bool:
        """Equal, reading an empty dim_order as the contiguous one it stands for."""
        contiguous = tuple(range(len(self.sizes)))
        return (self.dtype == other.dtype and self.sizes == other.sizes
                and (self.dim_order or contiguous) == (other.dim_order or contiguous))

    def text(self) -> str:
        order = "" if not self.dim_order or list(self.dim_order) == sorted(self.dim_order) else \
            f" dim_order {list(self.dim_order)}"
        return f"{self.dtype}[{', '.join(map(str, self.sizes))}]{order}"

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "sizes": list(self.sizes), "dim_order": list(self.dim_order)}

    @classmethod
    def from_mapping(cls, obj: Any, path: str = "layout") -> TensorLayout:
        """`{"dtype": "float32", "sizes": [2, 3], "dim_order": [0, 1]}` (dim_order optional)."""
        if isinstance(obj, TensorLayout):
            layout = obj
        else:
            if not isinstance(obj, Mapping):
                raise _arg(path, f"must be a mapping with dtype, sizes and dim_order, not {type(obj).__name__}",
                           obj)
            _only(obj, ("dtype", "sizes", "dim_order"), path)
            layout = cls(_text(obj.get("dtype"), f"{path}.dtype"),
                         tuple(_uint(d, f"{path}.sizes[{k}]", I32_MAX)
                               for k, d in enumerate(_list(obj.get("sizes", ()), f"{path}.sizes"))),
                         tuple(_uint(d, f"{path}.dim_order[{k}]", 255)
                               for k, d in enumerate(_list(obj.get("dim_order", ()), f"{path}.dim_order"))))
        problem = layout.problem()
        if problem is not None:
            raise _arg(path, problem, obj)
        return layout


class Manifest(NamedTuple):
    revision: int = 1
    entries: tuple[ManifestEntry, ...] = ()
    named_data: tuple[tuple[str, int], ...] = ()  # (key, segment index), sorted by key bytes
    layouts: tuple[tuple[str, TensorLayout], ...] = ()  # (key, layout) for the keys that have one, sorted

    def entry(self, name: str) -> ManifestEntry | None:
        """The first manifest entry with this name (one lookup; for many, use `by_name`)."""
        return next((e for e in self.entries if e.name == name), None)

    def by_name(self) -> dict[str, ManifestEntry]:
        """Every manifest entry by name, the first of a name as `entry` finds it: built once by a
        caller that looks up every table entry, so that it costs one pass, not one per entry."""
        out: dict[str, ManifestEntry] = {}
        for e in self.entries:
            out.setdefault(e.name, e)
        return out

    @property
    def keys(self) -> dict[str, int]:
        return dict(self.named_data)

    def layout(self, key: str) -> TensorLayout | None:
        return next((lay for k, lay in self.layouts if k == key), None)

    def to_json(self) -> dict[str, Any]:
        return {"revision": self.revision, "entries": [e.to_json() for e in self.entries],
                "named_data": {k: s for k, s in self.named_data},
                "layouts": {k: lay.to_json() for k, lay in self.layouts}}


def adapted(signature: Signature | None) -> bool:
    """Whether `signature` declares a program dtype anywhere (a signature adapter, revision 4)."""
    return signature is not None and any(t.program_dtype is not None for m in signature.methods
                                         for part in (m.inputs, m.outputs, m.buffers) for t in part)


def required_revision(manifest: Manifest) -> int:
    """The lowest revision whose fields `manifest` uses."""
    if any(adapted(e.signature) or e.requires.names_device
           or any(a.device or a.capabilities for a in e.requires.accelerators) for e in manifest.entries):
        return 4
    if any(e.golden for e in manifest.entries):
        return 3
    uses_2 = bool(manifest.layouts) or any(e.executorch_backends is not None for e in manifest.entries)
    return 2 if uses_2 else 1


def _accelerator_requirement(a: Any, p: str) -> AcceleratorRequirement:
    """One table of `requires.accelerators` (docs/pack-toml.md): kind, targets, min_memory_bytes,
    and the vendor runtime's device type and capabilities (revision 4)."""
    from fatpte.format import vocabulary

    if not isinstance(a, Mapping):
        raise _arg(p, "must be a mapping with kind, targets, min_memory_bytes, device, capabilities", a)
    _only(a, ("kind", "targets", "min_memory_bytes", "device", "capabilities"), p)
    kind = a.get("kind")
    if kind not in vocabulary.ACCELERATOR_KINDS:
        raise _arg(f"{p}.kind", f"{kind!r} is not one of {', '.join(vocabulary.ACCELERATOR_KINDS)}", kind)
    targets = a.get("targets", ())
    if isinstance(targets, str):
        targets = [targets]
    if not _is_list(targets):
        raise _arg(f"{p}.targets", "must be a list of version constraints", targets)
    device = a.get("device", "")
    if not isinstance(device, str) or (device and not re.fullmatch(DEVICE_NAME_PATTERN, device)):
        raise _arg(f"{p}.device", f"{device!r} is not a device type of the runtime (1 to 64 characters from "
                   "[A-Za-z0-9_.-], e.g. CPU, GPU, NPU)", device)
    caps = a.get("capabilities", ())
    caps = [caps] if isinstance(caps, str) else _list(caps, f"{p}.capabilities")
    for j, word in enumerate(caps):
        if not isinstance(word, str) or not re.fullmatch(CAPABILITY_PATTERN, word):
            raise _arg(f"{p}.capabilities[{j}]", f"{word!r} is not a capability (1 to 32 characters from "
                       "[a-z0-9_], lower-case, e.g. fp16, int8)", word)
        if word in caps[:j]:
            raise _arg(f"{p}.capabilities[{j}]", f"{word!r} is listed twice", word)
    return AcceleratorRequirement(
        str(kind), tuple(VersionConstraint.parse(t, f"{p}.targets[{j}]") for j, t in enumerate(targets)),
        _uint(a.get("min_memory_bytes", 0), f"{p}.min_memory_bytes", _U64), device, tuple(caps))


def parse_executorch_backends(value: Any, path: str) -> tuple[str, ...] | None:
    """A Specialization's `executorch_backends`: None (not known) or backend ids, none twice."""
    if value is None:
        return None
    if isinstance(value, str) or not _is_list(value):
        raise _arg(path, "must be a list of ExecuTorch backend ids, e.g. ['XnnpackBackend']", value)
    ids = tuple(_text(v, f"{path}[{k}]") for k, v in enumerate(value))
    for k, v in enumerate(ids):
        if v in ids[:k]:
            raise _arg(f"{path}[{k}]", f"backend id {v!r} is listed twice", v)
    return ids


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


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


def _tensor(obj: Any, path: str) -> TensorSpec:
    if isinstance(obj, TensorSpec):
        return obj
    if not isinstance(obj, Mapping):
        raise _arg(path, "must be a mapping with dtype and shape", obj)
    _only(obj, ("name", "dtype", "shape", "program_dtype"), path)
    name = None if obj.get("name") is None else _text(obj.get("name"), f"{path}.name")
    dims: list[Dim] = []
    for k, d in enumerate(_list(obj.get("shape", ()), f"{path}.shape")):
        if isinstance(d, str):
            dims.append(Dim(0, _text(d, f"{path}.shape[{k}]")))
        else:
            dims.append(Dim(_uint(d, f"{path}.shape[{k}]", _U64)))
    dtype = _text(obj.get("dtype"), f"{path}.dtype")
    program_dtype = None
    if obj.get("program_dtype") is not None:
        program_dtype = _text(obj.get("program_dtype"), f"{path}.program_dtype")
        problem = adapter_problem(dtype, program_dtype)
        if problem is not None:
            raise _arg(f"{path}.program_dtype", problem, program_dtype)
    return TensorSpec(dtype, tuple(dims), name, program_dtype)




def parse_source_digest(value: Any, path: str) -> str | None:
    """A Specialization's `source_digest`: None, or "<algorithm>:<lowercase hex>"."""
    if value is not None and (not isinstance(value, str) or not re.fullmatch(DIGEST_PATTERN, value)):
        raise _arg(path, f"{value!r} is not '<algorithm>:<lowercase hex>', e.g. 'sha256:9f86...'", value)
    return value


def parse_provenance(obj: Any, path: str) -> tuple[tuple[str, str], ...]:
    """A Specialization's `provenance` mapping of strings to strings, as manifest pairs."""
    if obj is None:
        return ()
    if not isinstance(obj, Mapping):
        raise _arg(path, "must map strings to strings", obj)
    return tuple((_text(k, path), _text(v, f"{path}[{k!r}]")) for k, v in obj.items())
