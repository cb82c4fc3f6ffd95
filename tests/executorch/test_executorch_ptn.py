"""fatpte.executorch.ptn: the native packages (.ptn) ExecuTorch's `to_native(...).save()` wrote
(tests/fixtures/executorch/*.ptn, made by `make test-executorch`), and every rule of
specs/executorch.md section 5 broken one at a time."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import describe, native_signature, read_ptn, sniff
from fatpte.executorch.ptn import MAX_MEMBERS, looks_like_ptn
from tests.paths import ET_FIXTURES

PACKAGES: dict[str, Any] = json.loads((ET_FIXTURES / "fixtures.json").read_text())["packages"]


def test_fixtures_hold_every_model_and_an_alias() -> None:
    assert sorted(PACKAGES) == ["add.ptn", "buffer.ptn", "kvcache.ptn", "mlp.ptn", "tied.ptn"]


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_signature_and_tensors_match_the_exporter(name: str) -> None:
    data = (ET_FIXTURES / name).read_bytes()
    assert sniff(data[:64]) == "ptn" and looks_like_ptn(data)
    package = read_ptn(data, source=name)
    expected = PACKAGES[name]["signature"]
    (method,) = native_signature(package.program)["methods"]
    assert method["inputs"] == expected["user_inputs"]
    assert method["outputs"] == expected["user_outputs"]
    assert method["buffers"] == expected["mutable_buffers"]
    # Every key the program loads is in the package; the tensors are where the zip says.
    assert package.missing_keys == ()
    assert {t.key for t in package.tensors} == set(package.program.named_data_keys)
    with zipfile.ZipFile(ET_FIXTURES / name) as z:
        assert [m.name for m in package.members] == z.namelist()
        for m in package.members:
            assert data[m.offset:m.offset + m.size] == z.read(m.name)


def test_buffer_state_and_tied_aliases() -> None:
    buffer = read_ptn((ET_FIXTURES / "buffer.ptn").read_bytes())
    total = next(t for t in buffer.tensors if t.key == "total")
    assert (total.dtype, total.shape, total.size) == ("float32", (2, 3), 24)
    tied = read_ptn((ET_FIXTURES / "tied.ptn").read_bytes())
    by_key = {t.key: t for t in tied.tensors}
    assert by_key["b.weight"].alias_of == "a.weight"
    assert (by_key["b.weight"].offset, by_key["b.weight"].size) == (by_key["a.weight"].offset, 64)
    assert by_key["a.weight"].alias_of is None


def test_describe_text_and_json() -> None:
    d = describe(ET_FIXTURES / "tied.ptn")
    assert d.kind == "ptn"
    assert set(d.to_json()) == {"kind", "source", "size", "members", "program", "signature", "tensors",
                                "missing_keys", "metadata"}
    lines = d.text().splitlines()
    assert lines[0].endswith("tied.ptn: ExecuTorch ptn (3232 bytes)")
    assert "  b.weight: float32[4, 4] same bytes as a.weight" in lines
    assert "tensors: 4 (80 bytes stored)" in lines


# -- the rules, broken one at a time ------------------------------------------------------------


def _package(members: list[tuple[str, bytes]], method: int = zipfile.ZIP_STORED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, blob in members:
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, blob)
    return out.getvalue()


def _safetensors(header: dict[str, Any], data: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


PTG = zipfile.ZipFile(ET_FIXTURES / "mlp.ptn").read("program.ptg")
TENSORS = zipfile.ZipFile(ET_FIXTURES / "mlp.ptn").read("program.safetensors")


def _code(data: bytes) -> tuple[ErrorCode, str]:
    with pytest.raises(FatpteError) as info:
        read_ptn(data, source="bad.ptn")
    return info.value.code, info.value.message


def test_a_well_formed_package_built_here_reads() -> None:
    package = read_ptn(_package([("program.ptg", PTG), ("program.safetensors", TENSORS)]))
    assert len(package.tensors) == 4


def test_compressed_member() -> None:
    code, message = _code(_package([("program.ptg", PTG)], zipfile.ZIP_DEFLATED))
    assert code is ErrorCode.ET_BAD_PACKAGE
    assert message == ("member 'program.ptg' is compressed (method 8): a package is a stored zip, its members "
                       "usable in place")


def test_encrypted_member() -> None:
    data = bytearray(_package([("program.ptg", PTG)]))
    central = data.rindex(b"PK\x01\x02")
    assert data[6] == 0 and data[central + 8] == 0  # the flags of the local and central headers
    data[6] |= 1
    data[central + 8] |= 1
    assert _code(bytes(data)) == (ErrorCode.ET_BAD_PACKAGE, "member 'program.ptg' is encrypted")


@pytest.mark.parametrize("name", ["../program.ptg", "dir/program.ptg", "c:program.ptg", "a\\b", ".."])
def test_member_names_with_path_tricks(name: str) -> None:
    code, message = _code(_package([("program.ptg", PTG), (name, b"x")]))
    assert code is ErrorCode.ET_BAD_PACKAGE
    assert message.startswith(f"member name {name!r} is not a plain file name")


def test_duplicate_member() -> None:
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = _package([("program.ptg", PTG), ("program.ptg", PTG)])
    assert _code(data) == (ErrorCode.ET_BAD_PACKAGE, "member 'program.ptg' appears twice")


def test_too_many_members() -> None:
    members = [("program.ptg", PTG)] + [(f"m{i}", b"") for i in range(MAX_MEMBERS)]
    assert _code(_package(members)) == (ErrorCode.ET_BAD_PACKAGE,
                                        f"{MAX_MEMBERS + 1} members exceed the limit of {MAX_MEMBERS}")


def test_crc_mismatch() -> None:
    data = bytearray((ET_FIXTURES / "mlp.ptn").read_bytes())
    at = 41 + 100  # a byte of program.ptg
    original = data[at]
    data[at] ^= 0xFF
    code, message = _code(bytes(data))
    assert code is ErrorCode.ET_BAD_PACKAGE and original != data[at]
    assert message.startswith("member 'program.ptg': CRC-32 ")


def test_no_program_member() -> None:
    assert _code(_package([("program.safetensors", TENSORS)])) == (
        ErrorCode.ET_BAD_PACKAGE, "no member program.ptg (members: program.safetensors)")


def test_not_a_zip() -> None:
    assert _code(b"PK\x03\x04" + bytes(60))[0] is ErrorCode.ET_BAD_PACKAGE


@pytest.mark.parametrize(("header", "data", "expected"), [
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "v": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(8),
     "program.safetensors['v']: its bytes overlap another tensor's"),
    ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(8),
     "program.safetensors['w']: data_offsets [0, 16] are not [begin, end] within the 8 bytes of data"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8),
     "program.safetensors['w']: 8 bytes, but float32[3] takes 12"),
    ({"w": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 1]}}, bytes(1),
     ("program.safetensors['w']: dtype 'Q4' is not one of BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, "
      "I32, U32, F32, C64, I64, U64, F64")),
])
def test_safetensors_rules(header: dict[str, Any], data: bytes, expected: str) -> None:
    package = _package([("program.ptg", PTG), ("program.safetensors", _safetensors(header, data))])
    assert _code(package) == (ErrorCode.ET_BAD_PACKAGE, expected)


def test_safetensors_header_longer_than_the_member() -> None:
    blob = struct.pack("<Q", 1 << 40) + b"{}"
    code, message = _code(_package([("program.ptg", PTG), ("program.safetensors", blob)]))
    assert code is ErrorCode.ET_BAD_PACKAGE
    assert message.startswith("program.safetensors: a header of 1099511627776 bytes does not fit")


def test_aliases_must_name_a_tensor() -> None:
    members = [("program.ptg", PTG), ("program.safetensors", TENSORS),
               ("aliases.json", json.dumps({"x": "nowhere"}).encode())]
    assert _code(_package(members)) == (ErrorCode.ET_BAD_PACKAGE,
                                        "aliases.json['x']: names 'nowhere', which program.safetensors does not hold")


def test_member_past_the_end_of_the_file(tmp_path: Path) -> None:
    data = bytearray(_package([("program.ptg", PTG)]))
    central = data.rindex(b"PK\x01\x02")
    sizes = central + 20  # compressed size, then size, in the central directory
    assert struct.unpack_from("<II", data, sizes) == (len(PTG), len(PTG))
    struct.pack_into("<II", data, sizes, len(data), len(data))
    code, message = _code(bytes(data))
    assert code is ErrorCode.ET_BAD_PACKAGE
    assert "ends past the end of the file" in message



def test_overlapping_members_are_refused_before_any_is_hashed() -> None:
    data = bytearray(_package([("program.ptg", PTG), ("x", b"abc")]))
    central = data.index(b"PK\x01\x02")  # program.ptg's central header comes first
    sizes = central + 20
    assert struct.unpack_from("<II", data, sizes) == (len(PTG), len(PTG))
    grown = len(PTG) + 30 + len("x") + 3  # to the end of x's bytes, over its local header
    struct.pack_into("<II", data, sizes, grown, grown)
    at = 41 + len(PTG) + 31  # x's bytes: after program.ptg's, its local header and name
    assert _code(bytes(data)) == (ErrorCode.ET_BAD_PACKAGE, f"member 'x' at {at:#x} overlaps the member before it")
