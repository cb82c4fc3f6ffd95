"""The fixed headers of ExecuTorch files, from pinned bytes: eh00 (.pte), XH00 (XNNPACK), FH01 (.ptd)."""

from __future__ import annotations

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import pte, read_ptd, xnnpack
from tests.paths import ET_FIXTURES

# root offset, ET12, eh00, length 32, program_size 0x40, segment_base_offset 0x80, segment_data_size 0x10
EH00 = bytes.fromhex(
    "3c000000" "45543132" "65683030" "20000000" "4000000000000000" "8000000000000000" "1000000000000000"
)


def test_eh00_fields() -> None:
    data = EH00 + bytes(0x90 - len(EH00))
    assert pte.read_header(data, None) == pte.ExtendedHeader(32, 0x40, 0x80, 0x10)


def test_no_eh00_magic_means_no_header() -> None:
    assert pte.read_header(bytes(8) + b"eh01" + bytes(40), None) is None


@pytest.mark.parametrize(
    ("at", "value", "field"),
    [(12, (16).to_bytes(4, "little"), "extended_header.length"),
     (16, (0x1000).to_bytes(8, "little"), "extended_header.program_size"),
     (24, (0x20).to_bytes(8, "little"), "extended_header.segment_base_offset"),
     (32, (0x11).to_bytes(8, "little"), "extended_header.segment_data_size")],
)
def test_eh00_out_of_range(at: int, value: bytes, field: str) -> None:
    data = bytearray(EH00 + bytes(0x90 - len(EH00)))
    data[at : at + len(value)] = value
    with pytest.raises(FatpteError) as e:
        pte.read_header(bytes(data), "x.pte")
    assert e.value.code is ErrorCode.ET_BAD_HEADER and e.value.field == field


# zero pad, XH00, u16 length 30, flatbuffer at 32 (8 bytes), constants at 40 (8 bytes)
XH00 = bytes.fromhex("00000000" "58483030" "1e00" "20000000" "08000000" "28000000" "0800000000000000")


def test_xh00_fields() -> None:
    payload = XH00 + bytes(48 - len(XH00))
    assert xnnpack.read_header(payload, None) == xnnpack.XnnHeader(30, 32, 8, 40, 8)


def test_xh00_constants_past_the_end() -> None:
    with pytest.raises(FatpteError) as e:
        xnnpack.read_header(XH00 + bytes(47 - len(XH00)), "p", base=0x100)
    assert e.value.code is ErrorCode.ET_BAD_HEADER and e.value.offset == 0x100 + 18


def test_ptd_header_of_a_fixture() -> None:
    data = (ET_FIXTURES / "mlp_native_external.native_weights.ptd").read_bytes()
    assert data[4:12] == b"FT01FH01"
    h = read_ptd(data).header
    assert (h.length, h.segment_base_offset + h.segment_data_size) == (40, len(data))
