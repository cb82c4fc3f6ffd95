"""The NFAT byte layout: the single source of truth for every structure, constant and limit.

Everything else derives from this module: the parser's fast `struct` formats (`RECORDS`, kept
in fatpte/_generated/layout_records.py by tools/gen_layout_records.py so that reading a file
never imports construct), the spec's byte tables (checked by tests/format/test_spec.py), the C++ header
(tools/gen_format_header.py).
Field names are the spec's names, in snake_case, so one grep finds every use of a field.

Conventions (specs/nfat.md section 2): all integers little-endian; in version 2 every offset is
absolute from byte 0 of the container; in version 1 payload offsets are relative to the start of
the data section, which begins right after the entry table.
"""

from __future__ import annotations

import functools
import struct
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from fatpte._generated.layout_records import RECORD_FORMATS as _RECORD_FORMATS

if TYPE_CHECKING:
    import construct as cs

MAGIC: Final = b"NFAT"
VERSION_1: Final = 1
VERSION_2: Final = 2
SUPPORTED_VERSIONS: Final = (VERSION_1, VERSION_2)

# Fixed identifier of the v2 manifest flatbuffer (bytes 4..8 of the manifest region).
MANIFEST_IDENTIFIER: Final = b"NFMF"


@functools.cache
def structures() -> dict[str, cs.Struct]:
    """Every structure the spec documents, by the name its byte table carries in specs/nfat.md.

    Built on first use: importing construct costs more than a whole `fatpte info`, and reads
    never need it (they go through the `struct` formats derived from these definitions, kept
    in fatpte/_generated/layout_records.py and checked against them by tests/format/test_layout.py).
    Encoding goes through construct.
    """
    import construct as cs

    return {
        # Version 1, exactly as ExecuTorch publishes it.
        "v1_header": cs.Struct(
            "magic" / cs.Bytes(4),
            "version" / cs.Int32ul,
            "entry_count" / cs.Int32ul,
        ),
        "v1_entry": cs.Struct(
            "backend_id" / cs.Bytes(32),
            "offset" / cs.Int64ul,  # relative to the start of the data section
            "size" / cs.Int64ul,
        ),
        # Version 2.
        "v2_header": cs.Struct(
            "magic" / cs.Bytes(4),
            "version" / cs.Int32ul,
            "header_size" / cs.Int32ul,
            "entry_size" / cs.Int32ul,
            "entry_count" / cs.Int32ul,
            "segment_entry_size" / cs.Int32ul,
            "segment_count" / cs.Int32ul,
            "flags" / cs.Int32ul,
            "container_size" / cs.Int64ul,
            "manifest_offset" / cs.Int64ul,
            "manifest_size" / cs.Int64ul,
            "manifest_checksum" / cs.Int32ul,
            "header_checksum" / cs.Int32ul,
        ),
        # Appended to the v2 header at byte 64 when header_size is at least 80: where the
        # signature region lies (specs/nfat.md section 4.9). A container without one keeps
        # header_size 64, and so its exact bytes.
        "v2_signature_slot": cs.Struct(
            "signature_offset" / cs.Int64ul,
            "signature_size" / cs.Int32ul,
            "signature_checksum" / cs.Int32ul,
        ),
        "v2_entry": cs.Struct(
            "name" / cs.Bytes(32),
            "backend_id" / cs.Bytes(32),
            "offset" / cs.Int64ul,
            "size" / cs.Int64ul,
            "payload_kind" / cs.Bytes(4),
            "alignment" / cs.Int32ul,
            "checksum" / cs.Int32ul,
            "priority" / cs.Int32sl,
            "flags" / cs.Int32ul,
            "reserved" / cs.Int32ul,
        ),
        "v2_segment": cs.Struct(
            "offset" / cs.Int64ul,
            "size" / cs.Int64ul,
            "alignment" / cs.Int32ul,
            "checksum" / cs.Int32ul,
            "flags" / cs.Int32ul,
            "reserved" / cs.Int32ul,
        ),
    }


def field_offsets(structure: cs.Struct) -> dict[str, tuple[int, int]]:
    """Map each field name of `structure` to its (offset, size) within the record."""
    out: dict[str, tuple[int, int]] = {}
    pos = 0
    for sub in structure.subcons:
        size = sub.sizeof()
        out[sub.name] = (pos, size)
        pos += size
    return out


def _format_char(sub: Any) -> str:
    """The `struct` code that decodes one fixed-size construct field identically."""
    import construct as cs

    inner = sub.subcon if isinstance(sub, cs.Renamed) else sub
    if isinstance(inner, cs.FormatField):
        fmt: str = inner.fmtstr
        return fmt.lstrip("<>=!")
    if isinstance(inner, cs.Bytes):
        return f"{inner.sizeof()}s"
    raise TypeError(f"no struct code for {inner!r}")


def record_formats() -> dict[str, tuple[tuple[str, str], ...]]:
    """Each structure as (field name, `struct` code) pairs, derived from the construct
    definitions: what tools/gen_layout_records.py writes to fatpte/_generated/."""
    return {
        name: tuple((sub.name, _format_char(sub)) for sub in structure.subcons)
        for name, structure in structures().items()
    }


class Record(NamedTuple):
    """A structure with its precompiled little-endian `struct` decoder.

    construct is the definition; decoding a table of thousands of entries through construct's
    interpreter costs tens of microseconds each, so reads go through the equivalent `struct`
    format derived from it (tests/format/test_layout.py checks both decode every record identically).
    A NamedTuple rather than a dataclass so that readers need not import `dataclasses`.
    """

    name: str
    codec: struct.Struct
    fields: tuple[str, ...]
    offsets: dict[str, tuple[int, int]]

    @property
    def size(self) -> int:
        return self.codec.size

    @property
    def structure(self) -> cs.Struct:
        return structures()[self.name]

    def build(self, values: dict[str, Any]) -> bytes:
        data: bytes = self.structure.build(values)
        return data


def _record(name: str, fields: tuple[tuple[str, str], ...]) -> Record:
    offsets: dict[str, tuple[int, int]] = {}
    pos = 0
    for field, code in fields:
        size = struct.calcsize("<" + code)
        offsets[field] = (pos, size)
        pos += size
    return Record(name, struct.Struct("<" + "".join(code for _, code in fields)),
                  tuple(field for field, _ in fields), offsets)


RECORDS: Final[dict[str, Record]] = {name: _record(name, fields) for name, fields in _RECORD_FORMATS.items()}

# Sizes, derived from the definitions above and never retyped.
V1_HEADER_SIZE: Final[int] = RECORDS["v1_header"].size
V1_ENTRY_SIZE: Final[int] = RECORDS["v1_entry"].size
V2_HEADER_SIZE: Final[int] = RECORDS["v2_header"].size
V2_ENTRY_SIZE: Final[int] = RECORDS["v2_entry"].size
V2_SEGMENT_SIZE: Final[int] = RECORDS["v2_segment"].size
V2_SIGNATURE_SLOT_SIZE: Final[int] = RECORDS["v2_signature_slot"].size
# The header of a signed container: the fixed v2 header, then the signature slot at its end.
SIGNATURE_SLOT_OFFSET: Final[int] = V2_HEADER_SIZE
SIGNED_HEADER_SIZE: Final[int] = V2_HEADER_SIZE + V2_SIGNATURE_SLOT_SIZE

# The 8 bytes every version shares, enough to dispatch on the version.
PREAMBLE_SIZE: Final = 8

ID_FIELD_SIZE: Final = 32  # name and backend_id fields: 1..32 bytes of text, NUL-padded
ID_ALPHABET: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")

# ---------------------------------------------------------------------------------------------
# Limits (specs/nfat.md section 5). Every count and length read from a file is checked against
# these and against the file size before anything is allocated.
# ---------------------------------------------------------------------------------------------

MAX_ENTRIES: Final = 65536  # far beyond any real device matrix, small enough to list in 7 MiB
MAX_SEGMENTS: Final = 1 << 20  # one per weight tensor of the largest models, with headroom
MAX_RECORD_SIZE: Final = 4096  # bounds header_size, entry_size, segment_entry_size growth
RECORD_SIZE_MULTIPLE: Final = 8  # keeps every u64 field 8-byte aligned in a mapping
MIN_ALIGNMENT: Final = 1
MAX_ALIGNMENT: Final = 65536  # 64 KiB: the largest page size of a supported OS
DEFAULT_ALIGNMENT: Final = 64  # a cache line; enough for every SIMD load width in use
MANIFEST_ALIGNMENT: Final = 8  # flatbuffers' largest scalar
MAX_MANIFEST_SIZE: Final = 64 << 20  # 100k named-data keys need about 8 MiB
SIGNATURE_ALIGNMENT: Final = 8  # keeps every region of a v2 container 8-byte aligned or less
MAX_SIGNATURE_SIZE: Final = 64 << 20  # a statement for 100k named-data keys needs about 40 MiB
MAX_FAT_DELEGATE_DEPTH: Final = 4  # fat delegates inside fat delegates: a few levels have a use, none past that

# Flag bits. No flag is defined in this revision: every bit is reserved and a reader rejects a
# container that sets one, so a later revision can give a bit a meaning old readers must honour.
HEADER_FLAGS_KNOWN: Final = 0
ENTRY_FLAGS_KNOWN: Final = 0
SEGMENT_FLAGS_KNOWN: Final = 0

# Byte range of header_checksum, taken as zero while the header checksum is computed.
HEADER_CHECKSUM_OFFSET: Final[int] = V2_HEADER_SIZE - 4
