"""fatpte.format.layout: the construct definitions and the fast decoders derived from them agree."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import construct as cs
import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import layout as L
from fatpte.format.codec import decode, encode
from tests.paths import ROOT
from tests.scripts import assert_check_mode_flags_stale_output, load_script


def test_sizes_are_the_published_ones() -> None:
    # v1 is ExecuTorch's layout: 12-byte header, 48-byte entries.
    assert (L.V1_HEADER_SIZE, L.V1_ENTRY_SIZE) == (12, 48)
    assert (L.V2_HEADER_SIZE, L.V2_ENTRY_SIZE, L.V2_SEGMENT_SIZE) == (64, 104, 32)
    assert L.HEADER_CHECKSUM_OFFSET == 60


@pytest.mark.parametrize("name", sorted(L.structures()))
def test_record_sizes_keep_u64_fields_aligned(name: str) -> None:
    rec = L.RECORDS[name]
    assert rec.size == rec.structure.sizeof()
    for sub in rec.structure.subcons:
        if isinstance(sub.subcon, cs.FormatField):
            off, size = rec.offsets[sub.name]
            assert off % size == 0, sub.name
    if name.startswith("v2"):
        assert rec.size % L.RECORD_SIZE_MULTIPLE == 0


@pytest.mark.parametrize("name", sorted(L.structures()))
def test_struct_decoder_matches_construct(name: str) -> None:
    rec = L.RECORDS[name]
    rng = random.Random(name)
    for _ in range(200):
        raw = bytes(rng.getrandbits(8) for _ in range(rec.size))
        expected = {k: v for k, v in rec.structure.parse(raw).items() if not k.startswith("_")}
        assert decode(rec, raw, 0, name) == expected
        assert encode(rec, expected, name) == raw




def _generator() -> ModuleType:
    return load_script("tools/gen_layout_records.py")


def test_committed_record_formats_are_what_the_generator_writes() -> None:
    committed = (ROOT / "fatpte" / "_generated" / "layout_records.py").read_text(encoding="utf-8")
    assert committed == _generator().generate(), (
        "fatpte/_generated/layout_records.py is out of date: run `make format-header`"
    )


@pytest.mark.parametrize("name", sorted(L.structures()))
def test_records_are_derived_from_the_construct_definitions(name: str) -> None:
    rec, structure = L.RECORDS[name], L.structures()[name]
    assert rec.fields == tuple(sub.name for sub in structure.subcons)
    assert rec.offsets == L.field_offsets(structure)
    assert rec.codec.format == "<" + "".join(L._format_char(sub) for sub in structure.subcons)


def test_check_mode_flags_stale_record_formats(tmp_path: Path) -> None:
    assert_check_mode_flags_stale_output(_generator(), tmp_path / "layout_records.py", '"Q"', '"L"')


def test_reading_a_container_does_not_import_construct(tmp_path: Path) -> None:
    # construct's import costs more than a whole `fatpte info`; only writers may pay for it.
    code = ("import sys, fatpte; c = fatpte.open(sys.argv[1]); c.entries; c.close(); "
            "print('construct' in sys.modules)")
    src = tmp_path / "p.bin"
    src.write_bytes(b"payload")
    out = tmp_path / "c.nfat"
    fatpte_pack = "import fatpte, sys; fatpte.pack([fatpte.Specialization('cpu', sys.argv[1])], sys.argv[2])"
    subprocess.run([sys.executable, "-c", fatpte_pack, str(src), str(out)], check=True, cwd=ROOT)
    result = subprocess.run([sys.executable, "-c", code, str(out)], check=True, capture_output=True,
                            text=True, cwd=ROOT)
    assert result.stdout.strip() == "False"


def test_field_offsets_follow_the_declaration_order() -> None:
    offs = L.field_offsets(L.structures()["v2_entry"])
    assert list(offs) == ["name", "backend_id", "offset", "size", "payload_kind", "alignment", "checksum",
                          "priority", "flags", "reserved"]
    assert offs["offset"] == (64, 8) and offs["reserved"] == (100, 4)


def test_decode_past_the_end_is_a_fatpte_error() -> None:
    with pytest.raises(FatpteError) as info:
        decode(L.RECORDS["v2_entry"], b"\0" * 50, 0, "entries[0]")
    assert info.value.code is ErrorCode.TRUNCATED_HEADER
    assert info.value.field == "entries[0]"


def test_encode_errors_keep_the_field_path() -> None:
    values = dict.fromkeys(L.RECORDS["v2_segment"].fields, 0)
    values["alignment"] = -1
    with pytest.raises(FatpteError) as info:
        encode(L.RECORDS["v2_segment"], values, "segments[3]")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.field is not None and info.value.field.startswith("segments[3]")


def test_unsupported_field_type_is_refused() -> None:
    with pytest.raises(TypeError):
        L._format_char(cs.Renamed(cs.GreedyBytes, newname="x"))


def test_limits_are_sane() -> None:
    assert L.MAX_ALIGNMENT & (L.MAX_ALIGNMENT - 1) == 0
    assert L.DEFAULT_ALIGNMENT & (L.DEFAULT_ALIGNMENT - 1) == 0
    assert L.MAX_RECORD_SIZE % L.RECORD_SIZE_MULTIPLE == 0
    assert L.MAX_MANIFEST_SIZE < 1 << 32
