"""The C++ format header is generated from layout.py and errors.py and committed up to date."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from fatpte.errors import ErrorCode
from fatpte.format import layout as L
from tests.paths import ROOT
from tests.scripts import assert_check_mode_flags_stale_output, load_script

HEADER = ROOT / "loader" / "include" / "fatpte" / "format_generated.h"


def _generator() -> ModuleType:
    return load_script("tools/gen_format_header.py")


def test_committed_header_is_what_the_generator_writes() -> None:
    text = _generator().generate()
    assert HEADER.read_text(encoding="utf-8") == text, (
        "loader/include/fatpte/format_generated.h is out of date: run `.venv/bin/python tools/gen_format_header.py`"
    )


def test_check_mode_flags_a_stale_header(tmp_path: Path) -> None:
    stale = tmp_path / "format_generated.h"
    assert_check_mode_flags_stale_output(_generator(), stale, "= 65536;", "= 65535;")


def _constexprs() -> dict[str, int]:
    pattern = re.compile(r"inline constexpr std::u?int\d+_t (k\w+) = (\d+);")
    return {m[1]: int(m[2]) for m in pattern.finditer(HEADER.read_text(encoding="utf-8"))}


def test_every_field_of_every_record_has_its_offset_and_size() -> None:
    values = _constexprs()
    gen = _generator()
    for name, rec in L.RECORDS.items():
        cname = gen.camel(name)
        for fld in rec.fields:
            off, size = rec.offsets[fld]
            assert values[f"k{cname}_{fld}_offset"] == off, (name, fld)
            assert values[f"k{cname}_{fld}_size"] == size, (name, fld)
    assert values["kV2Entry_alignment_offset"] == 84
    assert values["kMaxEntries"] == L.MAX_ENTRIES
    assert values["kHeaderChecksumOffset"] == L.HEADER_CHECKSUM_OFFSET


def test_every_error_code_is_in_the_c_enum_and_the_table() -> None:
    text = HEADER.read_text(encoding="utf-8")
    for code in ErrorCode:
        assert f"  FATPTE_E_{code.name} = {code.value}," in text
        assert f"  {code.name} = {code.value},\n" in text
        assert f'{{{code.value}, "{code.name}", "{code.tag}", ' in text
    assert f"kErrorCount = {len(ErrorCode)};" in text
