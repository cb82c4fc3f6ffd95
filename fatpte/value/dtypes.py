"""The dtypes fatpte knows, in one table: each by the name torch spells it (what fatpte prints and
compares), with the bytes of one element and its code in each schema that numbers it.

ExecuTorch has two ScalarType enums: executorch_flatbuffer.ScalarType (schema/scalar_type.fbs,
shared by .pte and .ptd) and native_backend.ScalarType (the NPTG graph schema), which numbers the
unsigned types differently. Both map to the same names, so signatures read from either compare
equal. safetensors (inside a .ptn) has codes of its own. Every other table of dtypes is derived
from `DTYPES` below, never retyped.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class DType(NamedTuple):
    """One dtype: its name, the bytes of one element (ExecuTorch's elementSize: the C type's size),
    its codes (None: the schema has none), and the struct format of one element (None: read by
    hand, as bfloat16 is, or not read as numbers at all)."""

    name: str
    size: int
    program: int | None = None  # executorch_flatbuffer.ScalarType
    native: int | None = None  # native_backend.ScalarType (NPTG)
    safetensors: str | None = None
    fmt: str | None = None
    packed: bool = False  # sub-byte elements (quint4x2, quint2x4): no whole element size


# In the order of the program codes (the order error messages list them in), then the dtypes no
# program names.
DTYPES: Final[tuple[DType, ...]] = (
    DType("uint8", 1, 0, 0, "U8", "B"),
    DType("int8", 1, 1, 1, "I8", "b"),
    DType("int16", 2, 2, 2, "I16", "h"),
    DType("int32", 4, 3, 3, "I32", "i"),
    DType("int64", 8, 4, 4, "I64", "q"),
    DType("float16", 2, 5, 5, "F16", "e"),
    DType("float32", 4, 6, 6, "F32", "f"),
    DType("float64", 8, 7, 7, "F64", "d"),
    DType("bool", 1, 11, 11, "BOOL", "?"),
    DType("qint8", 1, 12, fmt="b"),
    DType("quint8", 1, 13, fmt="B"),
    DType("qint32", 4, 14, fmt="i"),
    DType("bfloat16", 2, 15, 15, "BF16"),
    DType("quint4x2", 1, 16, packed=True),
    DType("quint2x4", 1, 17, packed=True),
    DType("bits16", 2, 22),
    DType("float8_e5m2", 1, 23, safetensors="F8_E5M2"),
    DType("float8_e4m3fn", 1, 24, safetensors="F8_E4M3"),
    DType("float8_e5m2fnuz", 1, 25),
    DType("float8_e4m3fnuz", 1, 26),
    DType("uint16", 2, 27, 16, "U16", "H"),
    DType("uint32", 4, 28, 17, "U32", "I"),
    DType("uint64", 8, 29, 18, "U64", "Q"),
    DType("complex64", 8, safetensors="C64"),
)
BY_NAME: Final[dict[str, DType]] = {d.name: d for d in DTYPES}

# Program ScalarType code -> name, and -> the bytes of one element.
PROGRAM_SCALAR_TYPES: Final[dict[int, str]] = {d.program: d.name for d in DTYPES if d.program is not None}
PROGRAM_ELEMENT_SIZES: Final[dict[int, int]] = {d.program: d.size for d in DTYPES if d.program is not None}
# NPTG ScalarType code -> name.
NATIVE_SCALAR_TYPES: Final[dict[int, str]] = {d.native: d.name for d in sorted(DTYPES, key=lambda d: d.native or 0)
                                              if d.native is not None}
# safetensors code -> (name, bytes of one element), in safetensors' own order (by element size).
SAFETENSORS_DTYPES: Final[dict[str, tuple[str, int]]] = {
    code: (BY_NAME[name].name, BY_NAME[name].size) for code, name in (
        ("BOOL", "bool"), ("U8", "uint8"), ("I8", "int8"), ("F8_E5M2", "float8_e5m2"), ("F8_E4M3", "float8_e4m3fn"),
        ("I16", "int16"), ("U16", "uint16"), ("F16", "float16"), ("BF16", "bfloat16"), ("I32", "int32"),
        ("U32", "uint32"), ("F32", "float32"), ("C64", "complex64"), ("I64", "int64"), ("U64", "uint64"),
        ("F64", "float64"))
}  # fmt: skip
assert all(BY_NAME[name].safetensors == code for code, (name, _) in SAFETENSORS_DTYPES.items())

# The dtypes a TensorLayout may name and the bytes of one element: ExecuTorch's ScalarType names
# (schema/scalar_type.fbs). Sub-byte packed types have no whole element size and are left out: a
# layout cannot describe them.
LAYOUT_DTYPES: Final[dict[str, int]] = {d.name: d.size for d in DTYPES if d.program is not None and not d.packed}

# The dtypes a calls.json tensor may give its values in (the C++ reader's, loader/src/value/tensor.cpp),
# in the order its messages list them.
CALLS_DTYPES: Final[tuple[str, ...]] = (
    "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool", "uint16", "uint32", "uint64",
    "bfloat16",
)  # fmt: skip
# The floating dtypes whose elements read as numbers (fatpte.value.tensors.decode_floats): what a
# weight or an output of a model is perturbed or judged in (check --mutants, golden-call warnings).
FLOAT_DTYPES: Final[tuple[str, ...]] = tuple(d for d in CALLS_DTYPES if d.startswith(("float", "bfloat")))
INTEGER_RANGES: Final[dict[str, tuple[int, int]]] = {
    d.name: ((0, (1 << 8 * d.size) - 1) if d.name.startswith("uint") else (-(1 << 8 * d.size - 1), (1 << 8 * d.size - 1) - 1))
    for d in DTYPES if d.name in CALLS_DTYPES and d.name.startswith(("int", "uint"))
}


# Signature adapters (specs/nfat-manifest.md 5.3): the signature's dtype -> the program dtypes an
# entry may declare behind it (TensorSpec.program_dtype); the loader converts at the edge.
ADAPTER_DTYPES: Final[dict[str, tuple[str, ...]]] = {"float32": ("float16", "bfloat16")}


def adapter_problem(dtype: str, program_dtype: str) -> str | None:
    """Why a tensor of the signature's `dtype` cannot stand before a program's `program_dtype`
    (specs/nfat-manifest.md 5.3), or None when the pair is an adapter's."""
    if program_dtype in ADAPTER_DTYPES.get(dtype, ()):
        return None
    pairs = ", ".join(f"{p} behind {s}" for s, ps in ADAPTER_DTYPES.items() for p in ps)
    return f"program_dtype {program_dtype!r} cannot stand behind dtype {dtype!r}; an adapter converts only {pairs}"


def element_size(name: str) -> int | None:
    """The bytes of one element of dtype `name`, or None for a name the table lacks."""
    d = BY_NAME.get(name)
    return None if d is None else d.size
