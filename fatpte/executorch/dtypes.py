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
