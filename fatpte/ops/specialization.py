"""What `pack` takes: `Specialization` (one payload and what the manifest says of it) and
`NamedData` (named-data bytes with an explicit alignment), with the precise forms each field
accepts. The mapping forms are the ones pack.toml and `fatpte.Specialization(...)` callers write;
fatpte.manifest.model reads them (`Requirements.from_mapping`, `Signature.from_mapping`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TypedDict

from fatpte.fileio.sources import PayloadSource
from fatpte.manifest.model import GoldenCall, Requirements, Signature, TensorLayout


class LayoutMapping(TypedDict, total=False):
    """A tensor layout: `{"dtype": "float32", "sizes": [2, 3], "dim_order": [0, 1]}`."""

    dtype: str
    sizes: Sequence[int]
    dim_order: Sequence[int]


@dataclass(frozen=True)
class NamedData:
    """Named-data bytes (`bytes` or a path, as payloads) with an explicit segment alignment
    and, when the bytes are a tensor a runtime loads by key, its layout (dtype, sizes, dim order:
    what ExecuTorch's `NamedDataMap.get_tensor_layout` answers)."""

    source: PayloadSource
    alignment: int | None = None
    layout: TensorLayout | LayoutMapping | None = None


# A named-data value: bytes or a path, or either with an explicit alignment.
NamedDataValue = PayloadSource | NamedData


class AbiMapping(TypedDict, total=False):
    min: int
    max: int


class AcceleratorMapping(TypedDict, total=False):
    kind: str  # "cuda", "metal", "vulkan", "opencl", "npu"
    targets: str | Sequence[str]  # "sm_80", "sm_90a", "compute_90", ">=1.3", "~8.0", "==9.0"
    min_memory_bytes: int


class RequirementsMapping(TypedDict, total=False):
    """`requires` in the device-profile vocabulary (specs/nfat-manifest.md, "Requirements")."""

    os: Sequence[str]
    arch: Sequence[str]
    cpu_features: Sequence[str]
    accelerators: Sequence[AcceleratorMapping]
    min_memory_bytes: int
    backend_abi: AbiMapping


class _TensorRequired(TypedDict):
    dtype: str


class TensorMapping(_TensorRequired, total=False):
    """A tensor of a signature; `shape` holds sizes and symbol names ("batch")."""

    name: str
    shape: Sequence[int | str]


class _MethodRequired(TypedDict):
    name: str


class MethodMapping(_MethodRequired, total=False):
    inputs: Sequence[TensorMapping]
    outputs: Sequence[TensorMapping]
    buffers: Sequence[TensorMapping]


class SignatureMapping(TypedDict):
    """`{"methods": [...]}` (specs/nfat-manifest.md, "Signature")."""

    methods: Sequence[MethodMapping]


@dataclass(frozen=True)
class Specialization:
    """One backend-specific payload to pack. `payload` is bytes, or a path to stream from."""

    backend_id: str
    payload: PayloadSource
    _: KW_ONLY
    name: str | None = None
    priority: int = 0
    alignment: int | None = None
    # The manifest (specs/nfat-manifest.md); any of these makes pack write one.
    requires: Requirements | RequirementsMapping | None = None
    # Keys mapped to their bytes (defined here), or keys defined by pack(named_data=...).
    named_data: Mapping[str, NamedDataValue] | Sequence[str] | None = None
    signature: Signature | SignatureMapping | None = None
    source_digest: str | None = None  # "<algorithm>:<hex>" of the source program
    provenance: Mapping[str, str] | None = None
    payload_sha256: bool = False  # store the payload's SHA-256 in the manifest
    # The ExecuTorch backend ids (delegate ids, e.g. "XnnpackBackend") the program needs; None: not
    # known, []: none. pte_specialization derives them from the program.
    executorch_backends: Sequence[str] | None = None
    # Golden calls (specs/nfat-manifest.md section 11): the entry's own, as the manifest states them
    # (pack(golden=...) fills them from calls.json for every entry), and how far this entry's outputs
    # may be from the golden ones at least: {"atol": 1e-5, "rtol": 0.04} for a quantized entry.
    golden: Sequence[GoldenCall] = ()
    golden_tolerance: Mapping[str, float] | None = None

    @property
    def entry_name(self) -> str:
        return self.name if self.name is not None else self.backend_id


def with_requirements(spec: Specialization, added: Mapping[str, object]) -> Specialization:
    """`spec` with the `requires` keys of `added` (pack.toml's words) set over its own, checked as
    pack.toml's are (INVALID_ARGUMENT naming `NAME.requires.KEY`): `fatpte pack --require`."""
    import dataclasses

    base = spec.requires if isinstance(spec.requires, Requirements) else Requirements.from_mapping(spec.requires)
    merged = Requirements.from_mapping({**base.to_json(), **added}, f"{spec.entry_name}.requires")
    return dataclasses.replace(spec, requires=merged)
