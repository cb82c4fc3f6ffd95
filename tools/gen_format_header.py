"""Generates loader/include/fatpte/format_generated.h from fatpte/format/layout.py, fatpte/errors.py
and the manifest schema as fatpte/manifest/codec.py restates it (SCHEMA, with the limits of
fatpte/manifest/model.py): the C++ manifest verifier walks the same table of fields.

The C++ loader never retypes a byte offset, a size, a limit or an error code: everything it needs
about the format comes from this generated header, and tests/format/test_gen_header.py fails when the
committed header differs from what this script would write now.

Usage: gen_format_header.py [--check] [OUTPUT]
  OUTPUT defaults to loader/include/fatpte/format_generated.h beside this script's repository.
  --check writes nothing and exits 1 when OUTPUT is not what this script would generate.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fatpte.errors import ErrorCode
from fatpte.format import layout as L
from fatpte.manifest import codec as MC
from fatpte.manifest import model as MM

DEFAULT_OUTPUT = ROOT / "loader" / "include" / "fatpte" / "format_generated.h"


def camel(snake: str) -> str:
    """`v2_entry` -> `V2Entry`, `MAX_ENTRIES` -> `MaxEntries`."""
    return "".join(part[:1].upper() + part[1:].lower() for part in snake.split("_") if part)


def c_string(data: bytes) -> str:
    """A C string literal holding exactly `data` (no terminating NUL counted by the caller)."""
    out = []
    for b in data:
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{b:02x}")
    return '"' + "".join(out) + '"'


def _int_type(value: int) -> str:
    if value < 0:
        return "std::int64_t"
    return "std::uint32_t" if value <= 0xFFFFFFFF else "std::uint64_t"


def _constants() -> list[str]:
    """Every public constant of layout.py, in the order the module defines it."""
    lines: list[str] = []
    for name, value in vars(L).items():
        if not name.isupper() or name.startswith("_"):
            continue
        cname = "k" + camel(name)
        note = f"  // layout.{name}"
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            lines.append(f"inline constexpr {_int_type(value)} {cname} = {value};{note}")
        elif isinstance(value, bytes):
            lines.append(f"inline constexpr char {cname}[] = {c_string(value)};{note}")
            lines.append(f"inline constexpr std::size_t {cname}Size = {len(value)};")
        elif isinstance(value, tuple) and all(isinstance(v, int) for v in value):
            items = ", ".join(str(v) for v in value)
            lines.append(f"inline constexpr std::uint32_t {cname}[] = {{{items}}};{note}")
        elif isinstance(value, frozenset) and all(isinstance(v, int) and 0x20 < v < 0x7F for v in value):
            lines.append(f"inline constexpr char {cname}[] = {c_string(bytes(sorted(value)))};{note}")
        # Structures, records and dicts are emitted below as offsets and sizes.
    return lines


def _records() -> list[str]:
    lines: list[str] = []
    for name, rec in L.RECORDS.items():
        cname = camel(name)
        lines.append(f"// {name}: {rec.size} bytes (layout.structures()[\"{name}\"])")
        if isinstance(getattr(L, f"{name.upper()}_SIZE", None), int):
            lines.append(f"static_assert(k{cname}Size == {rec.size}, \"layout.{name.upper()}_SIZE\");")
        else:
            lines.append(f"inline constexpr std::uint32_t k{cname}Size = {rec.size};")
        for fld in rec.fields:
            off, size = rec.offsets[fld]
            lines.append(f"inline constexpr std::uint32_t k{cname}_{fld}_offset = {off};")
            lines.append(f"inline constexpr std::uint32_t k{cname}_{fld}_size = {size};")
        lines.append("")
    return lines


_FIELD_KINDS = {"u8": "kU8", "u32": "kU32", "u64": "kU64", "f64": "kF64", "string": "kString", "table": "kTable",
                "[string]": "kStringVector", "[table]": "kTableVector", "[u8]": "kByteVector",
                "[i32]": "kInt32Vector"}


def _manifest_schema() -> list[str]:
    """The manifest's tables and fields in schema order (slot i is field i), with the verifier's
    limits: what loader/src/manifest/verify.cpp walks."""
    tables = list(MC.SCHEMA)
    lines = [
        "// ---- the manifest schema (fatpte/manifest/codec.py SCHEMA) and the verifier's limits ----",
        "namespace manifest_schema {",
        "",
        f"inline constexpr std::uint32_t kMaxDepth = {MM.MAX_DEPTH};  // manifest.MAX_DEPTH",
        f"inline constexpr std::uint32_t kMaxTables = {MM.MAX_TABLES};  // manifest.MAX_TABLES",
        f"inline constexpr std::uint32_t kMaxTextBytes = {MM.MAX_TEXT_BYTES};  // manifest.MAX_TEXT_BYTES",
        f"inline constexpr std::uint32_t kSha256Size = {MM.SHA256_SIZE};  // manifest.SHA256_SIZE",
        f"inline constexpr std::uint64_t kExpansionFactor = {MM.EXPANSION_FACTOR};  // manifest.EXPANSION_FACTOR",
        f"inline constexpr std::uint64_t kExpansionAllowance = {MM.EXPANSION_ALLOWANCE};  // manifest.EXPANSION_ALLOWANCE",
        "",
        "enum class FieldKind : std::uint8_t {",
        "  kU8, kU32, kU64, kF64, kString, kTable, kStringVector, kTableVector, kByteVector, kInt32Vector",
        "};",
        "",
        "struct FieldSpec {",
        "  const char* name;",
        "  FieldKind kind;",
        "  std::int32_t target;  // index in kTables of a table or vector-of-tables field, else -1",
        "  bool required;",
        "};",
        "",
        "struct TableSpec {",
        "  const char* name;",
        "  const FieldSpec* fields;  // in schema order: field i is vtable slot i",
        "  std::uint32_t field_count;",
        "};",
        "",
    ]
    for name in tables:
        rows = []
        for f in MC.SCHEMA[name]:
            target = tables.index(f.target) if f.target else -1
            required = "true" if f.required else "false"
            rows.append(f'    {{"{f.name}", FieldKind::{_FIELD_KINDS[f.kind]}, {target}, {required}}},')
        lines += [f"inline constexpr FieldSpec k{name}Fields[] = {{", *rows, "};"]
    lines += ["", "inline constexpr TableSpec kTables[] = {"]
    for name in tables:
        lines.append(f'    {{"{name}", k{name}Fields, {len(MC.SCHEMA[name])}}},')
    lines += [
        "};",
        f"inline constexpr std::size_t kTableCount = {len(tables)};",
        f"inline constexpr std::int32_t kRootTable = {tables.index(MC.ROOT_TABLE)};  // {MC.ROOT_TABLE}",
        "",
        "}  // namespace manifest_schema",
        "",
    ]
    return lines


def _category(code: ErrorCode) -> str:
    return code.category.value


def generate() -> str:
    codes = list(ErrorCode)
    out: list[str] = [
        "// GENERATED by tools/gen_format_header.py from fatpte/format/layout.py, fatpte/errors.py and",
        "// fatpte/manifest/codec.py (SCHEMA).",
        "// Do not edit: change the Python definitions and run `make format-header`;",
        "// tests/format/test_gen_header.py fails when this file is out of date.",
        "#ifndef FATPTE_FORMAT_GENERATED_H_",
        "#define FATPTE_FORMAT_GENERATED_H_",
        "",
        "/* Status codes crossing the C ABI: 0 is success, every other value is a pinned",
        "   fatpte.errors.ErrorCode and never changes meaning. */",
        "typedef enum fatpte_status {",
        "  FATPTE_OK = 0,",
    ]
    for code in codes:
        out.append(f"  FATPTE_E_{code.name} = {code.value}, /* {code.tag}: {code.meaning} */")
    out += [
        "} fatpte_status;",
        "",
        "#ifdef __cplusplus",
        "#include <cstddef>",
        "#include <cstdint>",
        "",
        "namespace fatpte {",
        "namespace format {",
        "",
        "// ---- constants and limits ----",
    ]
    out += _constants()
    out += ["", "// ---- record layouts: offsets and sizes within each record ----"]
    out += _records()
    out += [
        "}  // namespace format",
        "",
    ]
    out += _manifest_schema()
    out += [
        "// The error codes, with the same names as fatpte.errors.ErrorCode.",
        "enum class Error : std::int32_t {",
        "  OK = 0,",
    ]
    for code in codes:
        out.append(f"  {code.name} = {code.value},")
    # The texts are arrays in the row, not pointers: a table of pointers needs a relocation per
    # pointer in every process that loads libfatpte (over 400) and copy-on-write pages to hold
    # them; arrays are read-only data, and each field still reads as a `const char*`.
    def longest(texts: list[bytes]) -> int:
        return max(len(t) for t in texts) + 1

    name_size = longest([c.name.encode() for c in codes])
    tag_size = longest([c.tag.encode() for c in codes])
    meaning_size = longest([c.meaning.encode("utf-8") for c in codes])
    category_size = longest([_category(c).encode() for c in codes])
    out += [
        "};",
        "",
        "// One row of the error table. Its texts are held in the row, as read-only data that needs no",
        "// relocation when a process loads libfatpte; each still reads as a `const char*`.",
        "struct ErrorInfo {",
        *(f"  {field:<21} // {why}" for field, why in (
            ("std::int32_t code;", "the ErrorCode value"),
            (f"char name[{name_size}];", 'ErrorCode member name, e.g. "BAD_MAGIC"'),
            (f"char tag[{tag_size}];", 'as printed, e.g. "E0101"'),
            (f"char meaning[{meaning_size}];", "the one-line meaning of errors._INFO"),
            (f"char category[{category_size}];", "errors.Category value"),
            ("bool warning;", "severity is WARNING (version 1 quirks a reader tolerates)"),
        )),
        "};",
        "",
        "inline constexpr ErrorInfo kErrorInfo[] = {",
    ]
    for code in codes:
        warn = "true" if code.severity.value == "warning" else "false"
        meaning = c_string(code.meaning.encode("utf-8"))
        out.append(
            f'    {{{code.value}, "{code.name}", "{code.tag}", {meaning}, "{_category(code)}", {warn}}},'
        )
    out += [
        "};",
        f"inline constexpr std::size_t kErrorCount = {len(codes)};",
        "",
        "}  // namespace fatpte",
        "#endif  // __cplusplus",
        "",
        "#endif  // FATPTE_FORMAT_GENERATED_H_",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--check", action="store_true", help="exit 1 when OUTPUT is out of date")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
        if current != text:
            print(f"{args.output} is out of date: run tools/gen_format_header.py", file=sys.stderr)
            return 1
        return 0
    if not args.output.exists() or args.output.read_text(encoding="utf-8") != text:
        args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
