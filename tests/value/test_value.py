"""fatpte.value: the one dtype table, tensor encode/decode, the one canonical writer."""

from __future__ import annotations

import hashlib
import math
import struct

import pytest

from fatpte.manifest.model import GoldenCall, GoldenOutput, golden_encoding
from fatpte.value import canonical, dtypes, tensors


def test_each_schema_table_is_derived_from_the_one_table() -> None:
    assert dtypes.PROGRAM_SCALAR_TYPES[15] == "bfloat16" and dtypes.PROGRAM_ELEMENT_SIZES[15] == 2
    assert dtypes.PROGRAM_SCALAR_TYPES.keys() == dtypes.PROGRAM_ELEMENT_SIZES.keys()
    assert dtypes.NATIVE_SCALAR_TYPES[16] == "uint16" and dtypes.PROGRAM_SCALAR_TYPES[27] == "uint16"
    assert dtypes.SAFETENSORS_DTYPES["BF16"] == ("bfloat16", 2)
    assert "quint4x2" not in dtypes.LAYOUT_DTYPES and dtypes.LAYOUT_DTYPES["float8_e4m3fn"] == 1
    for name in dtypes.CALLS_DTYPES:
        assert tensors.encodes(name)
    for d in dtypes.DTYPES:
        if d.fmt is not None:
            assert struct.calcsize("<" + d.fmt) == d.size, d.name
    assert dtypes.INTEGER_RANGES["int8"] == (-128, 127) and dtypes.INTEGER_RANGES["uint64"] == (0, (1 << 64) - 1)


@pytest.mark.parametrize(("dtype", "values", "data"), [
    ("float16", [1.0, 65520.0, -1e300], bytes.fromhex("003c007c00fc")),  # past the range: infinity
    ("bfloat16", [1.0, 1.00390625, float("nan")], bytes.fromhex("803f803fc07f")),  # nearest even; NaN 0x7FC0
    ("int16", [-2, 3], bytes.fromhex("feff0300")),
    ("bool", [True, 0], b"\x01\x00"),
    ("float32", [1 << 2000], struct.pack("<f", math.inf)),  # an integer past the double range
])
def test_encode_pins_bytes(dtype: str, values: list[object], data: bytes) -> None:
    assert tensors.encode(dtype, values) == data


def test_decode_is_exact_and_inverts_encode() -> None:
    assert tensors.decode("bfloat16", bytes.fromhex("803f80bf")) == [1.0, -1.0]
    assert tensors.decode("float16", tensors.encode("float16", [0.5, -2.0])) == [0.5, -2.0]
    assert tensors.decode("uint64", tensors.encode("uint64", [(1 << 64) - 1])) == [(1 << 64) - 1]
    assert tensors.decode_floats("int8", b"\xff\x01") == [-1.0, 1.0]
    assert tensors.decode("int32", b"\x01\x00\x00\x00\x02") == [1]  # a partial element is left out


def test_canonical_writer_primitives() -> None:
    w = canonical.CanonicalWriter()
    w.text("ab")
    w.opt(None, w.u8)
    w.opt(7, w.u64)
    w.seq([-1], w.i32)
    w.f64(1.0)
    assert w.result() == bytes.fromhex("020000006162" "00" "010700000000000000" "01000000ffffffff"
                                       "000000000000f03f")


def test_golden_encoding_is_written_with_the_canonical_writer() -> None:
    calls = [GoldenCall("forward", ("k1",), (GoldenOutput("k2", 1e-5, 0.5),))]
    text = lambda s: len(s.encode()).to_bytes(4, "little") + s.encode()
    want = (text("nfat.golden/1") + (1).to_bytes(4, "little") + text("forward") + (1).to_bytes(4, "little")
            + text("k1") + (1).to_bytes(4, "little") + text("k2") + struct.pack("<dd", 1e-5, 0.5))
    assert golden_encoding(calls) == want
    assert hashlib.sha256(want).hexdigest() == hashlib.sha256(golden_encoding(calls)).hexdigest()
