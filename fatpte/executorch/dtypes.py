"""ScalarType codes of ExecuTorch's schemas, as the dtype names fatpte prints and compares.

Two enums exist: executorch_flatbuffer.ScalarType (schema/scalar_type.fbs, shared by .pte and
.ptd) and native_backend.ScalarType (the NPTG graph schema), which numbers the unsigned types
differently. Both map to torch's dtype names so signatures read from either compare equal.
"""

from __future__ import annotations

PROGRAM_SCALAR_TYPES: dict[int, str] = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    12: "qint8",
    13: "quint8",
    14: "qint32",
    15: "bfloat16",
    16: "quint4x2",
    17: "quint2x4",
    22: "bits16",
    23: "float8_e5m2",
    24: "float8_e4m3fn",
    25: "float8_e5m2fnuz",
    26: "float8_e4m3fnuz",
    27: "uint16",
    28: "uint32",
    29: "uint64",
}

# The bytes of one element of each program ScalarType (ExecuTorch's elementSize: the C type's size).
PROGRAM_ELEMENT_SIZES: dict[int, int] = {
    0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 12: 1, 13: 1, 14: 4, 15: 2, 16: 1, 17: 1, 22: 2,
    23: 1, 24: 1, 25: 1, 26: 1, 27: 2, 28: 4, 29: 8,
}
assert PROGRAM_ELEMENT_SIZES.keys() == PROGRAM_SCALAR_TYPES.keys()

NATIVE_SCALAR_TYPES: dict[int, str] = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    11: "bool",
    15: "bfloat16",
    16: "uint16",
    17: "uint32",
    18: "uint64",
}
