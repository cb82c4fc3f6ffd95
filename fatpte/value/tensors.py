"""A tensor's elements to and from its bytes (row-major, little-endian), for every dtype with a
struct format and for bfloat16, which struct lacks (packed by hand, rounded to nearest even). The
conversions are C++'s (loader/src/value/tensor.cpp reads the same calls.json): a float past its
format's range is that format's infinity, an integer past the double range is a double infinity.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

from fatpte.value.dtypes import BY_NAME, INTEGER_RANGES

_BF16_NAN = 0x7FC0


def as_float(value: float) -> float:
    """A number as a double: an integer past the double range is infinity, as strtod reads it."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _pack(fmt: str, value: float) -> bytes:
    """`value` as a float of struct format `fmt`; one past the format's range is its infinity."""
    try:
        return struct.pack("<" + fmt, value)
    except OverflowError:
        return struct.pack("<" + fmt, math.copysign(math.inf, value))


def _bfloat16(value: float) -> bytes:
    if math.isnan(value):
        return struct.pack("<H", _BF16_NAN)
    bits = struct.unpack("<I", _pack("f", value))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    return struct.pack("<H", (bits >> 16) & 0xFFFF)


def encodes(dtype: str) -> bool:
    """Whether `encode` and `decode` take `dtype`."""
    d = BY_NAME.get(dtype)
    return d is not None and (d.fmt is not None or dtype == "bfloat16")


def encode(dtype: str, values: Sequence[Any]) -> bytes:
    """The bytes of `values`, elements of `dtype` (integers within its range, bools, or numbers of
    a float dtype, as calls.json gives them: the caller checks them)."""
    if dtype == "bfloat16":
        return b"".join(_bfloat16(as_float(v)) for v in values)
    fmt = BY_NAME[dtype].fmt
    assert fmt is not None, dtype
    if dtype in INTEGER_RANGES or dtype == "bool":
        return struct.pack(f"<{len(values)}{fmt}", *values)
    return b"".join(_pack(fmt, as_float(v)) for v in values)


def decode(dtype: str, data: bytes) -> list[Any]:
    """The elements of `data` (whole elements of `dtype`; a partial one at the end is left out),
    each exact: an int, a bool or a float (a bfloat16 widened to the float it is)."""
    if dtype == "bfloat16":
        count = len(data) // 2
        halves = struct.unpack(f"<{count}H", data[: count * 2])
        return [struct.unpack("<f", struct.pack("<I", v << 16))[0] for v in halves]
    fmt = BY_NAME[dtype].fmt
    assert fmt is not None, dtype
    size = struct.calcsize(fmt)
    count = len(data) // size
    return list(struct.unpack(f"<{count}{fmt}", data[: count * size]))


def decode_floats(dtype: str, data: bytes) -> list[float]:
    """`decode`, each element as a float: what a comparison of two outputs counts with."""
    return [float(v) for v in decode(dtype, data)]
