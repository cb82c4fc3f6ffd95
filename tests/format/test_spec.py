"""specs/nfat.md agrees with the code: byte tables with fatpte.format.layout, error tables (of every
specs/*.md) with fatpte.errors, limits with fatpte.format.layout, the example dumps with what
fatpte.pack writes today, and the canonical validation order with what fatpte.validate reports."""

from __future__ import annotations

import ast
import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import construct as cs
import pytest

from fatpte.container.reader import Container
from fatpte.container.validation import validate_buffer
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.checksum import crc32c
from fatpte.format import layout as L
from tests.paths import ROOT
from tests.scripts import load_script

SPECS = ROOT / "specs"
SPEC = SPECS / "nfat.md"

STRUCTURE_HEADER = "| offset | size | type | field | description |"
ERROR_HEADER = "| code | name | severity | rule |"
LIMIT_HEADER = "| name | value | applies to | reason |"


spec_example = load_script("tools/spec_example.py")


def spec_text() -> str:
    return SPEC.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Markdown tables
# ---------------------------------------------------------------------------------------------


def table_rows(lines: list[str], start: int, header: str) -> Iterator[list[str]]:
    """The cells of each row of the table whose header line is lines[start]."""
    assert lines[start].strip() == header
    columns = header.count("|") - 1
    assert re.fullmatch(r"\|(---\|)+", lines[start + 1].strip()), f"line {start + 2}: no separator row"
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            return
        cells = [c.strip() for c in line.strip()[1:-1].split("|", columns - 1)]
        assert len(cells) == columns, f"malformed row {line!r}"
        yield cells


def tables(text: str, header: str) -> Iterator[tuple[int, list[list[str]]]]:
    """Every table of `text` with this exact header line, with the index of that line."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == header:
            yield i, list(table_rows(lines, i, header))


# ---------------------------------------------------------------------------------------------
# Byte tables
# ---------------------------------------------------------------------------------------------

_TYPE_NAMES: dict[object, str] = {
    cs.Int8ul: "u8",
    cs.Int16ul: "u16",
    cs.Int32ul: "u32",
    cs.Int64ul: "u64",
    cs.Int8sl: "i8",
    cs.Int16sl: "i16",
    cs.Int32sl: "i32",
    cs.Int64sl: "i64",
}


def type_name(sub: cs.Construct) -> str:
    inner = sub.subcon if isinstance(sub, cs.Renamed) else sub
    if isinstance(inner, cs.Bytes):
        return f"bytes[{inner.sizeof()}]"
    name = _TYPE_NAMES.get(inner)
    if name is None:
        raise AssertionError(f"no spec type name for {inner!r}; extend _TYPE_NAMES and section 2.2")
    return name


def expected_rows(structure: cs.Struct) -> list[tuple[int, int, str, str]]:
    rows = []
    offset = 0
    for sub in structure.subcons:
        size = sub.sizeof()
        rows.append((offset, size, type_name(sub), sub.name))
        offset += size
    return rows


def structure_tables(text: str) -> dict[str, list[list[str]]]:
    """Each `### Structure: NAME` heading with the byte table that follows it."""
    lines = text.split("\n")
    found: dict[str, list[list[str]]] = {}
    for i, line in enumerate(lines):
        m = re.fullmatch(r"### Structure: (\S+)", line.rstrip())
        if not m:
            continue
        name = m.group(1)
        assert name not in found, f"two byte tables for {name}"
        start = next(j for j in range(i + 1, len(lines)) if lines[j].strip())
        assert lines[start].strip() == STRUCTURE_HEADER, f"Structure: {name} is not followed by its byte table"
        found[name] = list(table_rows(lines, start, STRUCTURE_HEADER))
    return found


def test_every_structure_has_a_byte_table() -> None:
    assert sorted(structure_tables(spec_text())) == sorted(L.structures())


def documented_rows(text: str, name: str) -> list[tuple[int, int, str, str]]:
    rows = structure_tables(text)[name]
    assert all(desc for *_, desc in rows), f"{name}: every field needs a description"
    return [(int(off), int(size), typ.strip("`"), field.strip("`")) for off, size, typ, field, _ in rows]


@pytest.mark.parametrize("name", sorted(L.structures()))
def test_byte_table_matches_layout(name: str) -> None:
    assert documented_rows(spec_text(), name) == expected_rows(L.structures()[name])


@pytest.mark.parametrize("wrong", ["| 84 | 4 | u32 | align |", "| 84 | 4 | i32 | alignment |",
                                   "| 84 | 8 | u32 | alignment |", "| 88 | 4 | u32 | alignment |"])
def test_byte_table_check_catches_a_wrong_row(wrong: str) -> None:
    right = "| 84 | 4 | u32 | alignment |"
    text = spec_text()
    assert right in text
    assert documented_rows(text.replace(right, wrong), "v2_entry") != expected_rows(L.structures()["v2_entry"])


@pytest.mark.parametrize("name", sorted(L.structures()))
def test_every_field_has_a_paragraph(name: str) -> None:
    text = spec_text()
    section = text.split(f"### Structure: {name}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    missing = [f for f in L.structures()[name].subcons if f"**{f.name}**" not in section]
    assert not missing, f"{name}: no paragraph for {[f.name for f in missing]}"


def test_type_names_cover_what_a_change_would_introduce() -> None:
    # The derivation itself must be able to fail: a field of a type the spec has no name for.
    with pytest.raises(AssertionError):
        type_name(cs.Float32l)
    assert type_name("x" / cs.Int32sl) == "i32"
    assert type_name("x" / cs.Bytes(7)) == "bytes[7]"


# ---------------------------------------------------------------------------------------------
# Error tables
# ---------------------------------------------------------------------------------------------


def spec_files() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in sorted(SPECS.glob("*.md"))}


def documented_codes(files: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """(code, name, severity, file) of every row of every error table of `files`."""
    out = []
    for file, text in files.items():
        for _, rows in tables(text, ERROR_HEADER):
            for code, name, severity, rule in rows:
                assert rule, f"{file}: {code} has no rule"
                out.append((code.strip("`"), name.strip("`"), severity, file))
    return out


def code_table_problems(files: dict[str, str]) -> list[str]:
    """Why the error tables of `files` and fatpte.errors.ErrorCode disagree; empty when they agree."""
    rows = documented_codes(files)
    codes = [code for code, *_ in rows]
    problems = [f"{c} is documented more than once" for c in sorted({c for c in codes if codes.count(c) > 1})]
    documented = {(code, name, severity): file for code, name, severity, file in rows}
    actual = {(c.tag, c.name, c.severity.value) for c in ErrorCode}
    problems += [f"{row} in {file} is not in fatpte/errors.py (or its name or severity differs)"
                 for row, file in sorted(documented.items()) if row not in actual]
    problems += [f"{row} is in fatpte/errors.py but in no specs/*.md error table"
                 for row in sorted(actual - set(documented))]
    return problems


def test_error_tables_list_every_code_exactly_once() -> None:
    problems = code_table_problems(spec_files())
    hint = f"each code needs one row in a table headed '{ERROR_HEADER}' of the spec that states its rule"
    assert not problems, "\n".join([*problems, hint])


def test_error_table_check_catches_a_missing_row_and_a_wrong_severity() -> None:
    files = spec_files()
    core = files["nfat.md"]
    row = "| E0503 | V1_OVERLAPPING_PAYLOADS | warning |"
    assert row in core
    missing = dict(files, **{"nfat.md": "\n".join(line for line in core.split("\n") if not line.startswith(row))})
    assert any("E0503" in p and "no specs/*.md" in p for p in code_table_problems(missing))
    wrong = dict(files, **{"nfat.md": core.replace(row, "| E0503 | V1_OVERLAPPING_PAYLOADS | error |")})
    assert any("E0503" in p and "not in fatpte/errors.py" in p for p in code_table_problems(wrong))
    twice = dict(files, **{"extra.md": f"{ERROR_HEADER}\n|---|---|---|---|\n{row} again |\n"})
    assert "E0503 is documented more than once" in code_table_problems(twice)


def test_core_spec_documents_every_code_of_the_core_format() -> None:
    """Codes of the bytes of a container that specs/nfat.md defines rules for are listed there."""
    core = {code for code, _, _, file in documented_codes(spec_files()) if file == "nfat.md"}
    text = spec_text()
    cited = set(re.findall(r"`(E\d{4}) [A-Z0-9_]+`", text.split("## 7. Error codes", 1)[0]))
    assert cited, "sections 3 to 6 cite no code; the pattern above is out of date"
    assert cited <= core, f"codes the rules cite but the table lacks: {sorted(cited - core)}"
    named = dict(re.findall(r"`(E\d{4}) ([A-Z0-9_]+)`", text))
    tags = {c.tag: c.name for c in ErrorCode}
    assert {code: tags.get(code) for code in named} == named, "the text cites a code by a wrong name"
    unknown = set(re.findall(r"\bE\d{4}\b", text)) - set(tags)
    assert not unknown, f"the text cites codes that do not exist: {sorted(unknown)}"


# ---------------------------------------------------------------------------------------------
# Limits
# ---------------------------------------------------------------------------------------------


def test_limits_table_matches_layout() -> None:
    found = list(tables(spec_text(), LIMIT_HEADER))
    assert len(found) == 1
    rows = found[0][1]
    documented = {name.strip("`"): int(value.replace(" ", "")) for name, value, _, _ in rows}
    actual = {name: getattr(L, name) for name in documented if hasattr(L, name)}
    assert documented == actual
    limits = {name for name in vars(L) if name.startswith(("MAX_", "MIN_", "DEFAULT_")) or name.endswith("_MULTIPLE")}
    assert limits <= set(documented), f"limits of fatpte.format.layout missing from section 5: {limits - set(documented)}"


# ---------------------------------------------------------------------------------------------
# Section numbers the code cites
# ---------------------------------------------------------------------------------------------


def test_sections_cited_by_the_code_exist() -> None:
    headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", spec_text(), re.MULTILINE))
    cited: set[str] = set()
    for path in sorted((ROOT / "fatpte").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        cited |= set(re.findall(r"specs/nfat\.md[,\s(]*section (\d+(?:\.\d+)?)", source))
        cited |= set(re.findall(r"\bspec (\d+\.\d+)\b", source))
    assert cited, "the code cites no section; the pattern above is out of date"
    assert cited <= headings, f"sections cited by fatpte/ that the spec lacks: {sorted(cited - headings)}"


# ---------------------------------------------------------------------------------------------
# The example dumps
# ---------------------------------------------------------------------------------------------


def dump_bytes(block: str) -> bytes:
    """The bytes an annotated dump shows, checking that its lines are contiguous from 0."""
    out = bytearray()
    for line in block.splitlines():
        m = re.match(r"([0-9a-f]{8}): ((?:[0-9a-f]{2,4} ?)+)", line)
        assert m, f"not a dump line: {line!r}"
        assert int(m.group(1), 16) == len(out), f"dump line at {m.group(1)} is not contiguous"
        out += bytes.fromhex(m.group(2).replace(" ", ""))
    return bytes(out)


@pytest.mark.parametrize("version", [2, 1])
def test_example_dump_is_what_pack_writes(version: int) -> None:
    block = spec_example.spec_block(spec_text(), spec_example.block_name(version))
    assert dump_bytes(block) == spec_example.example_bytes(version)
    assert block == spec_example.render(version), "run: .venv/bin/python tools/spec_example.py --write"


@pytest.mark.parametrize("version", [2, 1])
def test_example_is_a_valid_container(version: int) -> None:
    data = spec_example.example_bytes(version)
    report = validate_buffer(data)
    assert report.findings == ()
    with Container.from_buffer(data) as c:
        assert [e.name for e in c.entries] == ["portable", "xnnpack"]
        assert bytes(c.payload("portable")) == spec_example.PORTABLE_PAYLOAD
        assert bytes(c.payload("xnnpack")) == spec_example.XNNPACK_PAYLOAD
        if version == 2:
            assert [e.payload_kind for e in c.entries] == [b"ET12", b"XH00"]
            assert all(e.offset % spec_example.EXAMPLE_ALIGNMENT == 0 for e in c.entries)


def test_example_call_shown_is_the_one_packed() -> None:
    """The `fatpte.pack(...)` call printed in section 8.1 packs what the dump shows."""
    block = spec_text().split("### 8.1 ", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    call = ast.parse(block).body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    shown = []
    for node in ast.walk(call.value.args[0]):
        if isinstance(node, ast.Call):
            args = [ast.literal_eval(a) for a in node.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            shown.append((*args, kwargs.get("priority", 0)))
    packed = [(s.backend_id, s.payload, s.priority) for s in spec_example.example_specializations(2)]
    assert shown == packed
    options = {k.arg: ast.literal_eval(k.value) for k in call.value.keywords}
    assert options == {"alignment": spec_example.EXAMPLE_ALIGNMENT}


def test_dump_parser_rejects_a_gap() -> None:
    block = spec_example.render(2)
    lines = block.splitlines()
    with pytest.raises(AssertionError):
        dump_bytes("\n".join(lines[:3] + lines[4:]))


# ---------------------------------------------------------------------------------------------
# The canonical validation order of section 6, checked on files with two defects each
# ---------------------------------------------------------------------------------------------

_HDR = L.RECORDS["v2_header"].offsets
_ENT = L.RECORDS["v2_entry"].offsets
_SEG = L.RECORDS["v2_segment"].offsets


@dataclass
class Image:
    """The v2 example container, to be damaged in place."""

    data: bytearray

    def header(self, field: str, value: int) -> Image:
        off, size = _HDR[field]
        self.data[off : off + size] = value.to_bytes(size, "little")
        return self

    def entry(self, i: int, field: str, value: int | bytes) -> Image:
        off, size = _ENT[field]
        base = L.V2_HEADER_SIZE + i * L.V2_ENTRY_SIZE + off
        raw = value.to_bytes(size, "little", signed=field == "priority") if isinstance(value, int) else value
        assert len(raw) == size
        self.data[base : base + size] = raw
        return self

    def entry_value(self, i: int, field: str) -> bytes:
        off, size = _ENT[field]
        base = L.V2_HEADER_SIZE + i * L.V2_ENTRY_SIZE + off
        return bytes(self.data[base : base + size])

    def flip(self, at: int) -> Image:
        self.data[at] ^= 0x5A
        return self

    def reseal(self) -> Image:
        """Recompute header_checksum, so that later checks see the damage."""
        h = dict(zip(L.RECORDS["v2_header"].fields, L.RECORDS["v2_header"].codec.unpack_from(self.data)))
        table_end = h["header_size"] + h["entry_count"] * h["entry_size"]
        table_end += h["segment_count"] * h["segment_entry_size"]
        at = L.HEADER_CHECKSUM_OFFSET
        self.data[at : at + 4] = b"\0\0\0\0"
        self.data[at : at + 4] = crc32c(self.data[:table_end]).to_bytes(4, "little")
        return self

    def add_segment(self, offset: int, size: int, alignment: int, checksum: int, flags: int = 0,
                    reserved: int = 0) -> Image:
        """Append a segment record after the entry table; payloads move down by 32 bytes."""
        rec = struct.pack("<QQIIII", offset, size, alignment, checksum, flags, reserved)
        table_end = L.V2_HEADER_SIZE + 2 * L.V2_ENTRY_SIZE
        self.data[table_end:table_end] = rec
        for i in range(2):
            old = int.from_bytes(self.entry_value(i, "offset"), "little")
            self.entry(i, "offset", old + 32)
        self.header("segment_count", 1)
        return self.header("container_size", len(self.data))


def example() -> Image:
    return Image(bytearray(spec_example.example_bytes(2)))


P0 = 0x110  # offset of the first payload in the example (section 8.1)

# (what, the damaged file, the code section 6 says is the file's error code)
ORDER_CASES: list[tuple[str, Callable[[], bytes], ErrorCode | None]] = [
    ("short file with a wrong magic: truncation first", lambda: b"XYZ", ErrorCode.TRUNCATED_HEADER),
    ("wrong magic", lambda: b"NFAX" + bytes(example().data[4:]), ErrorCode.BAD_MAGIC),
    ("unknown version", lambda: bytes(example().header("version", 3).data), ErrorCode.UNSUPPORTED_VERSION),
    ("v2 header cut at 63 bytes", lambda: bytes(example().data[:63]), ErrorCode.TRUNCATED_HEADER),
    ("truncated, and a bad header_size",
     lambda: bytes(example().header("header_size", 7).data[:-1]), ErrorCode.TRUNCATED_CONTAINER),
    ("trailing bytes, and unknown flags",
     lambda: bytes(example().header("flags", 1).data + b"\0"), ErrorCode.TRAILING_BYTES),
    ("bad header_size before bad entry_size",
     lambda: bytes(example().header("header_size", 65).header("entry_size", 8).data), ErrorCode.BAD_HEADER_SIZE),
    ("bad segment_entry_size before flags",
     lambda: bytes(example().header("segment_entry_size", 40 + 4).header("flags", 2).data),
     ErrorCode.BAD_SEGMENT_ENTRY_SIZE),
    ("flags before entry_count 0",
     lambda: bytes(example().header("flags", 1 << 31).header("entry_count", 0).data), ErrorCode.UNKNOWN_HEADER_FLAGS),
    ("entry_count 0 before too many segments",
     lambda: bytes(example().header("entry_count", 0).header("segment_count", 1 << 21).data), ErrorCode.NO_ENTRIES),
    ("too many entries before too many segments",
     lambda: bytes(example().header("entry_count", 65537).header("segment_count", 1 << 21).data),
     ErrorCode.TOO_MANY_ENTRIES),
    ("table past the end before the header checksum",
     lambda: bytes(example().header("entry_count", 4).data), ErrorCode.TABLE_OUT_OF_BOUNDS),
    ("header checksum before an entry's reserved field",
     lambda: bytes(example().entry(1, "reserved", 1).data), ErrorCode.HEADER_CHECKSUM_MISMATCH),
    ("reserved before flags before name",
     lambda: bytes(example().entry(0, "flags", 4).entry(0, "reserved", 1).entry(0, "name", bytes(32)).reseal().data),
     ErrorCode.RESERVED_NOT_ZERO),
    ("entry flags before name",
     lambda: bytes(example().entry(0, "flags", 4).entry(0, "name", b"a b".ljust(32, b"\0")).reseal().data),
     ErrorCode.UNKNOWN_ENTRY_FLAGS),
    ("name before backend id",
     lambda: bytes(example().entry(1, "name", b"x\0y".ljust(32, b"\0")).entry(1, "backend_id", bytes(32))
                   .reseal().data), ErrorCode.BAD_NAME),
    ("backend id before alignment",
     lambda: bytes(example().entry(1, "backend_id", b"\xff".ljust(32, b"\0")).entry(1, "alignment", 0)
                   .reseal().data), ErrorCode.BAD_BACKEND_ID),
    ("alignment before bounds",
     lambda: bytes(example().entry(1, "alignment", 3).entry(1, "size", 1 << 63).reseal().data),
     ErrorCode.BAD_ALIGNMENT),
    ("bounds are checked overflow-safe",
     lambda: bytes(example().entry(1, "offset", (1 << 64) - 16).entry(1, "size", 32).reseal().data),
     ErrorCode.PAYLOAD_OUT_OF_BOUNDS),
    ("misaligned payload",
     lambda: bytes(example().entry(1, "offset", 0x128).reseal().data), ErrorCode.MISALIGNED_PAYLOAD),
    ("an entry's findings before a later entry's",
     lambda: bytes(example().entry(0, "size", 1 << 40).entry(1, "reserved", 1).reseal().data),
     ErrorCode.PAYLOAD_OUT_OF_BOUNDS),
    ("entries before segments",
     lambda: bytes(example().add_segment(0, 0, 0, 0).entry(1, "flags", 1).reseal().data),
     ErrorCode.UNKNOWN_ENTRY_FLAGS),
    ("segment reserved before segment flags",
     lambda: bytes(example().add_segment(0, 0, 1, 0, flags=1, reserved=1).reseal().data),
     ErrorCode.RESERVED_NOT_ZERO),
    ("segment flags before segment alignment",
     lambda: bytes(example().add_segment(0, 0, 0, 0, flags=1).reseal().data), ErrorCode.UNKNOWN_SEGMENT_FLAGS),
    ("segment alignment before segment bounds",
     lambda: bytes(example().add_segment(1 << 50, 1, 0, 0).reseal().data), ErrorCode.BAD_SEGMENT_ALIGNMENT),
    ("segment bounds", lambda: bytes(example().add_segment(1 << 50, 1, 1, 0).reseal().data),
     ErrorCode.SEGMENT_OUT_OF_BOUNDS),
    ("misaligned segment", lambda: bytes(example().add_segment(4, 0, 8, 0).reseal().data),
     ErrorCode.MISALIGNED_SEGMENT),
    ("segments before the manifest fields",
     lambda: bytes(example().add_segment(4, 0, 8, 0).header("manifest_checksum", 1).reseal().data),
     ErrorCode.MISALIGNED_SEGMENT),
    ("absent manifest with a checksum",
     lambda: bytes(example().header("manifest_checksum", 1).reseal().data), ErrorCode.ABSENT_MANIFEST_NOT_ZERO),
    ("manifest too large before out of bounds",
     lambda: bytes(example().header("manifest_size", (64 << 20) + 1).header("manifest_offset", 1).reseal().data),
     ErrorCode.MANIFEST_TOO_LARGE),
    ("manifest out of bounds before misaligned",
     lambda: bytes(example().header("manifest_size", 1 << 20).header("manifest_offset", 1).reseal().data),
     ErrorCode.MANIFEST_OUT_OF_BOUNDS),
    ("misaligned manifest before duplicate names",
     lambda: bytes(example().header("manifest_size", 8).header("manifest_offset", 0x124 + 1)
                   .entry(1, "name", b"portable".ljust(32, b"\0")).reseal().data), ErrorCode.MISALIGNED_MANIFEST),
    ("duplicate names before overlap",
     lambda: bytes(example().entry(1, "name", b"portable".ljust(32, b"\0")).entry(1, "offset", 0x120)
                   .reseal().data), ErrorCode.DUPLICATE_NAME),
    ("overlap before checksums",
     lambda: bytes(example().entry(1, "offset", 0x120).reseal().data), ErrorCode.REGIONS_OVERLAP),
    ("a payload may not overlap the tables",
     lambda: bytes(example().entry(0, "offset", 0x100).reseal().data), ErrorCode.REGIONS_OVERLAP),
    ("empty regions overlap nothing",
     lambda: bytes(example().entry(1, "offset", 0x100).entry(1, "size", 0).entry(1, "payload_kind", bytes(4))
                   .entry(1, "checksum", 0).reseal().data), ErrorCode.PADDING_NOT_ZERO),
    ("a manifest may not overlap a payload",
     lambda: bytes(example().header("manifest_size", 8).header("manifest_offset", P0).reseal().data),
     ErrorCode.REGIONS_OVERLAP),
    ("padding before payload checksums",
     lambda: bytes(example().flip(0x124).flip(P0).data), ErrorCode.PADDING_NOT_ZERO),
    ("identical payload ranges are one region; the bytes left behind are padding",
     lambda: bytes(example().entry(1, "offset", P0).entry(1, "size", 20)
                   .entry(1, "checksum", example().entry_value(0, "checksum"))
                   .entry(1, "payload_kind", b"ET12").reseal().data), ErrorCode.PADDING_NOT_ZERO),
    ("payload checksum", lambda: bytes(example().flip(P0 + 19).data), ErrorCode.PAYLOAD_CHECKSUM_MISMATCH),
    ("checksum before kind",
     lambda: bytes(example().flip(P0 + 5).entry(0, "payload_kind", b"ZZZZ").reseal().data),
     ErrorCode.PAYLOAD_CHECKSUM_MISMATCH),
    ("payload kind", lambda: bytes(example().entry(0, "payload_kind", b"ET13").reseal().data),
     ErrorCode.PAYLOAD_KIND_MISMATCH),
    ("a zero payload kind makes no claim", lambda: bytes(example().entry(0, "payload_kind", bytes(4)).reseal().data),
     None),
    ("segment checksum", lambda: bytes(example().add_segment(0x160, 0, 16, 1).reseal().data),
     ErrorCode.SEGMENT_CHECKSUM_MISMATCH),
]


@pytest.mark.parametrize("build, code", [(b, c) for _, b, c in ORDER_CASES], ids=[w for w, _, _ in ORDER_CASES])
def test_error_code_of_a_file_follows_section_6(build: Callable[[], bytes], code: ErrorCode | None) -> None:
    data = build()
    report = validate_buffer(data)
    first = report.first_error
    assert (first.code if first else None) == code, [f.describe() for f in report.findings]


def test_open_runs_the_structural_pass_only() -> None:
    data = bytes(example().flip(P0 + 3).data)  # a payload checksum error: content pass only
    assert validate_buffer(data).first_error is not None
    with Container.from_buffer(data) as c:
        assert len(c.entries) == 2
        with pytest.raises(FatpteError) as info:
            c.payload("portable", verify=True)
    assert info.value.code is ErrorCode.PAYLOAD_CHECKSUM_MISMATCH
    damaged = bytes(example().entry(1, "offset", 0x120).reseal().data)
    with pytest.raises(FatpteError) as info:
        Container.from_buffer(damaged)
    assert info.value.code is ErrorCode.REGIONS_OVERLAP


def grown(header_extra: int, entry_extra: int, segment_entry_size: int = L.V2_SEGMENT_SIZE) -> bytes:
    """The v2 example rewritten as a later revision might write it: records longer than this
    revision's, the extra bytes holding fields this revision does not know (0xA5 filler). A header
    of 80 bytes or more holds revision 2.1's signature slot at 64..80, empty (zero) here."""
    hdr, ent = L.RECORDS["v2_header"], L.RECORDS["v2_entry"]
    data = spec_example.example_bytes(2)
    h = dict(zip(hdr.fields, hdr.codec.unpack_from(data)))
    entries = [dict(zip(ent.fields, ent.codec.unpack_from(data, L.V2_HEADER_SIZE + i * L.V2_ENTRY_SIZE)))
               for i in range(h["entry_count"])]
    header_size, entry_size = L.V2_HEADER_SIZE + header_extra, L.V2_ENTRY_SIZE + entry_extra
    cursor = header_size + len(entries) * entry_size
    payloads = b""
    for e in entries:
        payload = data[e["offset"] : e["offset"] + e["size"]]
        start = -(-cursor // e["alignment"]) * e["alignment"]
        payloads += bytes(start - cursor) + payload
        e["offset"], cursor = start, start + len(payload)
    table = b"".join(ent.build(e) + b"\xa5" * entry_extra for e in entries)
    h.update(header_size=header_size, entry_size=entry_size, segment_entry_size=segment_entry_size,
             container_size=cursor, header_checksum=0)
    slot = L.V2_SIGNATURE_SLOT_SIZE if header_extra >= L.V2_SIGNATURE_SLOT_SIZE else 0
    prefix = hdr.build(h) + bytes(slot) + b"\xa5" * (header_extra - slot) + table
    at = L.HEADER_CHECKSUM_OFFSET
    prefix = prefix[:at] + crc32c(prefix).to_bytes(4, "little") + prefix[at + 4 :]
    return prefix + payloads


@pytest.mark.parametrize("header_extra, entry_extra, segment_entry_size",
                         [(0, 0, 32), (16, 0, 32), (0, 8, 32), (4032, 3992, 4096), (8, 24, 40)])
def test_readers_accept_longer_records_and_ignore_what_they_do_not_know(
    header_extra: int, entry_extra: int, segment_entry_size: int
) -> None:
    data = grown(header_extra, entry_extra, segment_entry_size)
    assert validate_buffer(data).findings == ()
    with Container.from_buffer(data) as c:
        assert [e.name for e in c.entries] == ["portable", "xnnpack"]
        assert bytes(c.payload("xnnpack")) == spec_example.XNNPACK_PAYLOAD


@pytest.mark.parametrize("header_extra, entry_extra, segment_entry_size, code", [
    (4, 0, 32, ErrorCode.BAD_HEADER_SIZE),
    (4040, 0, 32, ErrorCode.BAD_HEADER_SIZE),
    (0, 12, 32, ErrorCode.BAD_ENTRY_SIZE),
    (0, 0, 24, ErrorCode.BAD_SEGMENT_ENTRY_SIZE),
    (0, 0, 4104, ErrorCode.BAD_SEGMENT_ENTRY_SIZE),
])
def test_record_sizes_are_bounded_multiples_of_8(
    header_extra: int, entry_extra: int, segment_entry_size: int, code: ErrorCode
) -> None:
    first = validate_buffer(grown(header_extra, entry_extra, segment_entry_size)).first_error
    assert first is not None and first.code is code


def test_grown_with_nothing_added_is_the_example() -> None:
    assert grown(0, 0) == spec_example.example_bytes(2)


def test_a_region_at_byte_0_is_reported_against_the_header() -> None:
    data = bytes(example().entry(0, "offset", 0).reseal().data)
    first = validate_buffer(data).first_error
    assert first is not None and first.code is ErrorCode.REGIONS_OVERLAP
    assert (first.field, first.offset) == ("entries[0].offset", L.V2_HEADER_SIZE + _ENT["offset"][0])


def v1(entries: list[tuple[bytes, int, int]], data: bytes) -> bytes:
    out = L.MAGIC + struct.pack("<II", 1, len(entries))
    for ident, offset, size in entries:
        out += ident.ljust(32, b"\0") + struct.pack("<QQ", offset, size)
    return out + data


V1_CASES: list[tuple[str, bytes, list[ErrorCode]]] = [
    ("32-byte id with no NUL", v1([(b"a" * 32, 0, 2)], b"xy"), []),
    ("control bytes are allowed", v1([(b"\x01\x7f", 0, 2)], b"xy"), []),
    ("bad id, then out of bounds", v1([(b"\x80", 0, 9)], b"xy"),
     [ErrorCode.V1_BAD_ID, ErrorCode.PAYLOAD_OUT_OF_BOUNDS, ErrorCode.V1_UNCOVERED_BYTES]),
    ("empty id", v1([(b"", 0, 2)], b"xy"), [ErrorCode.V1_BAD_ID]),
    ("padding after NUL", v1([(b"cpu\0z", 0, 2)], b"xy"), [ErrorCode.V1_ID_PADDING_NOT_ZERO]),
    ("duplicate id", v1([(b"cpu", 0, 1), (b"cpu", 1, 1)], b"xy"), [ErrorCode.V1_DUPLICATE_ID]),
    ("out-of-bounds duplicates are not compared", v1([(b"cpu", 0, 2), (b"cpu", 1, 2)], b"xy"),
     [ErrorCode.PAYLOAD_OUT_OF_BOUNDS]),
    ("overlap", v1([(b"a", 0, 2), (b"b", 1, 1)], b"xy"), [ErrorCode.V1_OVERLAPPING_PAYLOADS]),
    ("identical ranges overlap in v1", v1([(b"a", 0, 2), (b"b", 0, 2)], b"xy"), [ErrorCode.V1_OVERLAPPING_PAYLOADS]),
    ("gap and trailing bytes", v1([(b"a", 1, 1)], b"xyz"),
     [ErrorCode.V1_UNCOVERED_BYTES, ErrorCode.V1_UNCOVERED_BYTES]),
    ("empty payloads cover nothing", v1([(b"a", 0, 0), (b"b", 0, 2)], b"xy"), []),
    ("table past the end", L.MAGIC + struct.pack("<II", 1, 2) + bytes(60), [ErrorCode.TABLE_OUT_OF_BOUNDS]),
]


@pytest.mark.parametrize("data, codes", [(d, c) for _, d, c in V1_CASES], ids=[w for w, _, _ in V1_CASES])
def test_version_1_corner_cases_follow_section_3_4(data: bytes, codes: list[ErrorCode]) -> None:
    assert [f.code for f in validate_buffer(data).findings] == codes


def test_version_1_lookup_by_id_takes_the_first() -> None:
    with Container.from_buffer(v1([(b"cpu", 0, 1), (b"cpu", 1, 1)], b"xy")) as c:
        assert bytes(c.payload(c.find("cpu"))) == b"x"
