"""Error codes and the one exception root, `FatpteError`.

Codes are pinned: a value never changes meaning once published, because CI logs, scripts and the
C++ loader (through the generated format header) match on them. They are grouped by what they
are about: 1xx header, 2xx entries, 3xx named-data segments, 4xx manifest, 5xx version 1 quirks,
6xx the regions of the file as a whole, 7xx how fatpte was called, 8xx I/O, 9xx device selection,
10xx ExecuTorch files, 12xx the signature region of a container, 13xx signature verification,
14xx what an entry computes (golden calls).
Each code is one rule of specs/nfat.md (section 7 lists them; a test keeps the two in step).
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


class Category(enum.Enum):
    INVALID = "invalid"  # the container breaks a rule of the spec
    USAGE = "usage"  # the caller asked for something impossible
    IO = "io"  # the operating system refused a read or a write
    SELECTION = "selection"  # no specialization fits the device
    UNVERIFIED = "unverified"  # a signature is missing, untrusted, or does not match the container
    DISAGREES = "disagrees"  # an entry runs but computes something else than its golden calls say


class ErrorCode(enum.IntEnum):
    # 1xx header
    BAD_MAGIC = 101
    UNSUPPORTED_VERSION = 102
    TRUNCATED_HEADER = 103
    TRUNCATED_CONTAINER = 104
    TRAILING_BYTES = 105
    BAD_HEADER_SIZE = 106
    BAD_ENTRY_SIZE = 107
    BAD_SEGMENT_ENTRY_SIZE = 108
    UNKNOWN_HEADER_FLAGS = 109
    TOO_MANY_ENTRIES = 110
    TOO_MANY_SEGMENTS = 111
    TABLE_OUT_OF_BOUNDS = 112
    HEADER_CHECKSUM_MISMATCH = 113
    NO_ENTRIES = 114
    # 2xx entries
    BAD_NAME = 201
    BAD_BACKEND_ID = 202
    PAYLOAD_OUT_OF_BOUNDS = 203
    BAD_ALIGNMENT = 204
    MISALIGNED_PAYLOAD = 205
    DUPLICATE_NAME = 206
    UNKNOWN_ENTRY_FLAGS = 207
    PAYLOAD_CHECKSUM_MISMATCH = 208
    PAYLOAD_KIND_MISMATCH = 209
    # 3xx named-data segments
    SEGMENT_OUT_OF_BOUNDS = 301
    BAD_SEGMENT_ALIGNMENT = 302
    MISALIGNED_SEGMENT = 303
    UNKNOWN_SEGMENT_FLAGS = 304
    SEGMENT_CHECKSUM_MISMATCH = 305
    # 4xx manifest
    MANIFEST_OUT_OF_BOUNDS = 401
    MISALIGNED_MANIFEST = 402
    MANIFEST_TOO_LARGE = 403
    MANIFEST_CHECKSUM_MISMATCH = 404
    BAD_MANIFEST_IDENTIFIER = 405
    ABSENT_MANIFEST_NOT_ZERO = 406
    MANIFEST_CORRUPT = 407
    MANIFEST_ENTRY_MISSING = 408
    MANIFEST_ENTRY_UNKNOWN = 409
    DUPLICATE_MANIFEST_ENTRY = 410
    SIGNATURE_MISMATCH = 411
    SOURCE_DIGEST_MISMATCH = 412
    NAMED_DATA_KEY_MISSING = 413
    NAMED_DATA_BAD_SEGMENT = 414
    NAMED_DATA_KEYS_UNSORTED = 415
    SEGMENT_UNREFERENCED = 416
    PAYLOAD_DIGEST_MISMATCH = 417
    MANIFEST_VALUE_INVALID = 418
    NAMED_DATA_LAYOUT_MISMATCH = 419
    MANIFEST_OVER_BUDGET = 420
    GOLDEN_KEY_INVALID = 421
    GOLDEN_CALL_MISMATCH = 422
    GOLDEN_DIGEST_MISMATCH = 423
    # 5xx version 1
    V1_BAD_ID = 501
    V1_ID_PADDING_NOT_ZERO = 502
    V1_OVERLAPPING_PAYLOADS = 503
    V1_UNCOVERED_BYTES = 504
    V1_DUPLICATE_ID = 505
    # 6xx regions of the file
    REGIONS_OVERLAP = 601
    PADDING_NOT_ZERO = 602
    RESERVED_NOT_ZERO = 603
    # 7xx usage
    NO_SPECIALIZATIONS = 701
    INVALID_ARGUMENT = 702
    NOT_REPRESENTABLE_IN_V1 = 703
    ENTRY_NOT_FOUND = 704
    AMBIGUOUS_ENTRY = 705
    NAMED_DATA_CONFLICT = 706
    NAMED_DATA_NOT_FOUND = 707
    BAD_PACK_FILE = 708
    RANKING_TIE = 709
    UNKNOWN_WORD = 710
    NO_GOLDEN_CALLS = 711
    GOLDEN_WEAK = 712
    # 8xx I/O
    IO_ERROR = 801
    REMOTE_UNSUPPORTED = 802
    REMOTE_RANGE_IGNORED = 803
    REMOTE_CHANGED = 804
    REMOTE_SHORT_READ = 805
    REMOTE_DENIED = 806
    REMOTE_NOT_FOUND = 807
    REMOTE_TOO_MANY_REDIRECTS = 808
    REMOTE_TIMEOUT = 809
    REMOTE_FAILED = 810
    NOT_A_FILE = 811
    # 9xx selection
    NO_SPECIALIZATION_FITS = 901
    # 10xx ExecuTorch files read by fatpte.executorch (.pte, .ptd, delegate payloads)
    ET_BAD_IDENTIFIER = 1001
    ET_TRUNCATED = 1002
    ET_BAD_HEADER = 1003
    ET_FLATBUFFER_OUT_OF_BOUNDS = 1004
    ET_FLATBUFFER_TOO_COMPLEX = 1005
    ET_BAD_REFERENCE = 1006
    ET_SEGMENT_OUT_OF_BOUNDS = 1007
    ET_BAD_VALUE = 1008
    ET_BAD_PACKAGE = 1009
    FAT_DELEGATE_TOO_DEEP = 1010
    # 11xx an ExecuTorch program entry of a container against its manifest record (specs/executorch.md 7)
    PROGRAM_SIGNATURE_MISMATCH = 1101
    BACKEND_ID_CONTRADICTS_PROGRAM = 1102
    EXECUTORCH_BACKENDS_MISMATCH = 1103
    PROGRAM_DIGEST_MISMATCH = 1104
    NAMED_DATA_UNUSED = 1105
    SIGNATURE_TAKEN_DIFFERS = 1106
    # 12xx the signature region (specs/nfat.md section 4.9)
    SIGNATURE_TOO_LARGE = 1201
    SIGNATURE_OUT_OF_BOUNDS = 1202
    MISALIGNED_SIGNATURE = 1203
    SIGNATURE_CHECKSUM_MISMATCH = 1204
    ABSENT_SIGNATURE_NOT_ZERO = 1205
    # 13xx signature verification (specs/nfat-signature.md)
    SIGNATURE_REQUIRED = 1301
    SIGNATURE_MALFORMED = 1302
    SIGNATURE_UNSUPPORTED = 1303
    SIGNATURE_INVALID = 1304
    SIGNATURE_UNTRUSTED = 1305
    SIGNATURE_NOT_FOR_CONTAINER = 1306
    ENTRY_NOT_SIGNED = 1307
    SIGNED_RECORD_MISMATCH = 1308
    NAMED_DATA_NOT_SIGNED = 1309
    SIGNED_NAMED_DATA_MISMATCH = 1310
    SIGNED_PAYLOAD_MISMATCH = 1311
    # 14xx what an entry computes: its golden calls run (specs/nfat-manifest.md section 11)
    GOLDEN_MISMATCH = 1401

    @property
    def tag(self) -> str:
        """The code as printed: `E0203`."""
        return f"E{self.value:04d}"

    def __str__(self) -> str:
        # `print(exc.code)` and f-strings show the code as every message does (`E0411`), not the
        # bare number an IntEnum prints; int(code) and code.value stay 411.
        return self.tag

    @property
    def meaning(self) -> str:
        return _INFO[self][0]

    @property
    def severity(self) -> Severity:
        return _INFO[self][1]

    @property
    def category(self) -> Category:
        if self.value >= 1400:  # 14xx: the entry runs, and computes something else
            return Category.DISAGREES
        if self.value >= 1300:  # 13xx: the signature does not vouch for the container
            return Category.UNVERIFIED
        if self.value >= 1000:  # 10xx: an ExecuTorch file breaks its layout; 11xx: a program entry its record;
            # 12xx: the signature region breaks the container's layout
            return Category.INVALID
        if self.value >= 900:
            return Category.SELECTION
        if self.value >= 800:
            return Category.IO
        if self.value >= 700:
            return Category.USAGE
        return Category.INVALID


_E, _W = Severity.ERROR, Severity.WARNING

_INFO: dict[ErrorCode, tuple[str, Severity]] = {
    ErrorCode.BAD_MAGIC: ("the file does not start with the magic 'NFAT'", _E),
    ErrorCode.UNSUPPORTED_VERSION: ("the version is neither 1 nor 2", _E),
    ErrorCode.TRUNCATED_HEADER: ("the file ends inside the fixed header", _E),
    ErrorCode.TRUNCATED_CONTAINER: ("the file is shorter than the container_size its header states", _E),
    ErrorCode.TRAILING_BYTES: ("the file is longer than the container_size its header states", _E),
    ErrorCode.BAD_HEADER_SIZE: ("header_size is below 64, above 4096, or not a multiple of 8", _E),
    ErrorCode.BAD_ENTRY_SIZE: ("entry_size is below 104, above 4096, or not a multiple of 8", _E),
    ErrorCode.BAD_SEGMENT_ENTRY_SIZE: ("segment_entry_size is below 32, above 4096, or not a multiple of 8", _E),
    ErrorCode.UNKNOWN_HEADER_FLAGS: ("the header sets a flag bit this revision does not define", _E),
    ErrorCode.TOO_MANY_ENTRIES: ("entry_count exceeds the limit of 65536 entries", _E),
    ErrorCode.TOO_MANY_SEGMENTS: ("segment_count exceeds the limit of 1048576 segments", _E),
    ErrorCode.TABLE_OUT_OF_BOUNDS: ("the header and tables extend past the end of the container", _E),
    ErrorCode.HEADER_CHECKSUM_MISMATCH: ("the CRC32C of the header and tables does not match header_checksum", _E),
    ErrorCode.NO_ENTRIES: ("the container holds no entry", _E),
    ErrorCode.BAD_NAME: ("an entry name is empty, has a byte outside [A-Za-z0-9_.-], or non-zero padding", _E),
    ErrorCode.BAD_BACKEND_ID: ("a backend id is empty, has a byte outside [A-Za-z0-9_.-], or non-zero padding", _E),
    ErrorCode.PAYLOAD_OUT_OF_BOUNDS: ("a payload extends past the end of the container", _E),
    ErrorCode.BAD_ALIGNMENT: ("an entry's alignment is not a power of two from 1 to 65536", _E),
    ErrorCode.MISALIGNED_PAYLOAD: ("a payload offset is not a multiple of its entry's alignment", _E),
    ErrorCode.DUPLICATE_NAME: ("two entries have the same name", _E),
    ErrorCode.UNKNOWN_ENTRY_FLAGS: ("an entry sets a flag bit this revision does not define", _E),
    ErrorCode.PAYLOAD_CHECKSUM_MISMATCH: ("the CRC32C of a payload does not match its entry's checksum", _E),
    ErrorCode.PAYLOAD_KIND_MISMATCH: ("payload_kind is non-zero and differs from the payload's bytes 4..8", _E),
    ErrorCode.SEGMENT_OUT_OF_BOUNDS: ("a named-data segment extends past the end of the container", _E),
    ErrorCode.BAD_SEGMENT_ALIGNMENT: ("a segment's alignment is not a power of two from 1 to 65536", _E),
    ErrorCode.MISALIGNED_SEGMENT: ("a segment offset is not a multiple of its alignment", _E),
    ErrorCode.UNKNOWN_SEGMENT_FLAGS: ("a segment sets a flag bit this revision does not define", _E),
    ErrorCode.SEGMENT_CHECKSUM_MISMATCH: ("the CRC32C of a segment does not match its checksum", _E),
    ErrorCode.MANIFEST_OUT_OF_BOUNDS: ("the manifest extends past the end of the container", _E),
    ErrorCode.MISALIGNED_MANIFEST: ("manifest_offset is not a multiple of 8", _E),
    ErrorCode.MANIFEST_TOO_LARGE: ("manifest_size exceeds the limit of 64 MiB", _E),
    ErrorCode.MANIFEST_CHECKSUM_MISMATCH: ("the CRC32C of the manifest does not match manifest_checksum", _E),
    ErrorCode.BAD_MANIFEST_IDENTIFIER: ("the manifest's bytes 4..8 are not the identifier 'NFMF'", _E),
    ErrorCode.ABSENT_MANIFEST_NOT_ZERO: ("manifest_size is 0 but manifest_offset or manifest_checksum is not", _E),
    ErrorCode.MANIFEST_CORRUPT: ("the manifest is not a well-formed flatbuffer of specs/nfat_manifest.fbs", _E),
    ErrorCode.MANIFEST_ENTRY_MISSING: ("an entry of the table has no entry in the manifest", _E),
    ErrorCode.MANIFEST_ENTRY_UNKNOWN: ("a manifest entry names no entry of the table", _E),
    ErrorCode.DUPLICATE_MANIFEST_ENTRY: ("two manifest entries have the same name", _E),
    ErrorCode.SIGNATURE_MISMATCH: ("two entries declare different program signatures", _E),
    ErrorCode.SOURCE_DIGEST_MISMATCH: ("two entries declare different source program digests", _E),
    ErrorCode.NAMED_DATA_KEY_MISSING: ("an entry needs a named-data key the manifest does not define", _E),
    ErrorCode.NAMED_DATA_BAD_SEGMENT: ("a named-data key points at a segment index past the segment table", _E),
    ErrorCode.NAMED_DATA_KEYS_UNSORTED: ("named-data keys are not unique and sorted bytewise", _E),
    ErrorCode.SEGMENT_UNREFERENCED: ("a segment is named by no named-data key", _E),
    ErrorCode.PAYLOAD_DIGEST_MISMATCH: ("the SHA-256 of a payload does not match its manifest entry", _E),
    ErrorCode.MANIFEST_VALUE_INVALID: ("a manifest field holds a value its rule forbids", _E),
    ErrorCode.NAMED_DATA_LAYOUT_MISMATCH: ("a named-data layout does not describe its segment's bytes", _E),
    ErrorCode.MANIFEST_OVER_BUDGET: ("the manifest's references expand past its work budget", _E),
    ErrorCode.GOLDEN_KEY_INVALID: ("a golden call names a key the manifest lacks, or one with no contiguous layout",
                                   _E),
    ErrorCode.GOLDEN_CALL_MISMATCH: ("a golden call does not fit its entry's program signature", _E),
    ErrorCode.GOLDEN_DIGEST_MISMATCH: ("an entry's golden calls do not hash to its provenance's fatpte.golden.sha256",
                                       _E),
    ErrorCode.V1_BAD_ID: ("a v1 backend id is empty or has a byte outside ASCII 0x01..0x7f", _E),
    ErrorCode.V1_ID_PADDING_NOT_ZERO: ("a v1 backend id has non-zero bytes after its terminating NUL", _W),
    ErrorCode.V1_OVERLAPPING_PAYLOADS: ("two v1 payloads share bytes", _W),
    ErrorCode.V1_UNCOVERED_BYTES: ("bytes of a v1 data section belong to no payload (a gap or trailing bytes)", _W),
    ErrorCode.V1_DUPLICATE_ID: ("two v1 entries have the same backend id; lookups take the first", _W),
    ErrorCode.REGIONS_OVERLAP: ("two regions share bytes (only byte-identical payloads may share one region)", _E),
    ErrorCode.PADDING_NOT_ZERO: ("a byte that belongs to no region is not zero", _E),
    ErrorCode.RESERVED_NOT_ZERO: ("a reserved field is not zero", _E),
    ErrorCode.NO_SPECIALIZATIONS: ("nothing to pack: no specialization was given", _E),
    ErrorCode.INVALID_ARGUMENT: ("an argument is out of range or of the wrong kind", _E),
    ErrorCode.NOT_REPRESENTABLE_IN_V1: ("version 1 cannot hold what was asked (names, alignment, priority)", _E),
    ErrorCode.ENTRY_NOT_FOUND: ("no entry has that name or backend id", _E),
    ErrorCode.AMBIGUOUS_ENTRY: ("several entries have that backend id; name one", _E),
    ErrorCode.NAMED_DATA_CONFLICT: ("one named-data key was given two different contents", _E),
    ErrorCode.NAMED_DATA_NOT_FOUND: ("the container has no named data under that key", _E),
    ErrorCode.BAD_PACK_FILE: ("a pack.toml file breaks a rule of docs/pack-toml.md", _E),
    ErrorCode.RANKING_TIE: ("entries one device can both run tie on every ranking key but table position", _W),
    ErrorCode.UNKNOWN_WORD: ("a prefer or exclude word names no entry and no backend id of the container", _W),
    ErrorCode.NO_GOLDEN_CALLS: ("the container, or the input given, has no golden calls to check or record", _E),
    ErrorCode.GOLDEN_WEAK: ("golden calls that cannot tell a wrong entry from a right one", _W),
    ErrorCode.IO_ERROR: ("reading or writing a file failed", _E),
    ErrorCode.REMOTE_UNSUPPORTED: ("no reader for this URL's scheme is installed (pip install 'fatpte[remote]')", _E),
    ErrorCode.REMOTE_RANGE_IGNORED: ("the server did not answer a range request with the range asked for", _E),
    ErrorCode.REMOTE_CHANGED: ("the remote file changed between two requests (size, ETag or Last-Modified)", _E),
    ErrorCode.REMOTE_SHORT_READ: ("a response ended before the bytes it was to carry, on every retry", _E),
    ErrorCode.REMOTE_DENIED: ("the server refused access (HTTP 401 or 403, or the store's access denied)", _E),
    ErrorCode.REMOTE_NOT_FOUND: ("the server has nothing at that URL (HTTP 404 or 410, or no such key)", _E),
    ErrorCode.REMOTE_TOO_MANY_REDIRECTS: ("the server redirected more times than the limit allows", _E),
    ErrorCode.REMOTE_TIMEOUT: ("the server did not answer within the time limit, on every retry", _E),
    ErrorCode.REMOTE_FAILED: ("the server kept failing (HTTP 5xx or a dropped connection), on every retry", _E),
    ErrorCode.NOT_A_FILE: ("the path names a directory, device, FIFO or socket, not a regular file", _E),
    ErrorCode.NO_SPECIALIZATION_FITS: ("no entry's requirements hold on the device", _E),
    ErrorCode.ET_BAD_IDENTIFIER: ("an ExecuTorch file's flatbuffer identifier (bytes 4..8) is not the expected one", _E),
    ErrorCode.ET_TRUNCATED: ("an ExecuTorch file ends before its header or flatbuffer root", _E),
    ErrorCode.ET_BAD_HEADER: ("an ExecuTorch header (eh00, FH01, XH00) has a length or field out of range", _E),
    ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS: ("a flatbuffer offset, vtable, vector or string lies outside the buffer", _E),
    ErrorCode.ET_FLATBUFFER_TOO_COMPLEX: ("a flatbuffer is deeper, larger or more repetitive than the reader's limits",
                                          _E),
    ErrorCode.ET_BAD_REFERENCE: ("an index in an ExecuTorch program points at no value, segment or payload", _E),
    ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS: ("an ExecuTorch segment or payload extends past the end of its file", _E),
    ErrorCode.ET_BAD_VALUE: ("an ExecuTorch field holds a value its schema does not allow", _E),
    ErrorCode.ET_BAD_PACKAGE: ("a native package (.ptn) is not a stored zip of intact members, or a member breaks its rules", _E),
    ErrorCode.FAT_DELEGATE_TOO_DEEP: ("fat delegates nest deeper than MAX_FAT_DELEGATE_DEPTH (4) levels", _E),
    ErrorCode.PROGRAM_SIGNATURE_MISMATCH: ("an ExecuTorch program's signature disagrees with its manifest entry's", _E),
    ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM: ("a backend id names an ExecuTorch backend its program does not use", _E),
    ErrorCode.EXECUTORCH_BACKENDS_MISMATCH: ("an entry's executorch_backends differ from its program's delegates", _E),
    ErrorCode.PROGRAM_DIGEST_MISMATCH: ("an ExecuTorch program's SHA-256 differs from its entry's provenance", _E),
    ErrorCode.NAMED_DATA_UNUSED: ("an entry lists named data its ExecuTorch program never loads", _W),
    ErrorCode.SIGNATURE_TAKEN_DIFFERS: ("a signature taken from another entry differs from its program's in dtype or shape",
                                        _W),
    ErrorCode.SIGNATURE_TOO_LARGE: ("signature_size exceeds the limit of 64 MiB", _E),
    ErrorCode.SIGNATURE_OUT_OF_BOUNDS: ("the signature region extends past the end of the container", _E),
    ErrorCode.MISALIGNED_SIGNATURE: ("signature_offset is not a multiple of 8", _E),
    ErrorCode.SIGNATURE_CHECKSUM_MISMATCH: ("the CRC32C of the signature region does not match signature_checksum", _E),
    ErrorCode.ABSENT_SIGNATURE_NOT_ZERO: ("signature_size is 0 but signature_offset or signature_checksum is not", _E),
    ErrorCode.SIGNATURE_REQUIRED: ("a signature is required but the container has none (embedded or detached)", _E),
    ErrorCode.SIGNATURE_MALFORMED: ("the signature bundle, envelope or statement is not of the documented shape", _E),
    ErrorCode.SIGNATURE_UNSUPPORTED: ("the signature uses a payload type, statement or predicate this reader does not know",
                                      _E),
    ErrorCode.SIGNATURE_INVALID: ("the signature does not verify with the trusted key it names", _E),
    ErrorCode.SIGNATURE_UNTRUSTED: ("no trusted key verifies the signature", _E),
    ErrorCode.SIGNATURE_NOT_FOR_CONTAINER: ("the signed statement names none of the container's entries", _E),
    ErrorCode.ENTRY_NOT_SIGNED: ("an entry of the container is not in the signed statement", _E),
    ErrorCode.SIGNED_RECORD_MISMATCH: ("an entry's table fields, order or manifest record differ from the signed ones",
                                       _E),
    ErrorCode.NAMED_DATA_NOT_SIGNED: ("a named-data key of the container is not in the signed statement", _E),
    ErrorCode.SIGNED_NAMED_DATA_MISMATCH: ("a named-data key's bytes or layout differ from the signed ones", _E),
    ErrorCode.SIGNED_PAYLOAD_MISMATCH: ("the SHA-256 of a payload differs from the signed one", _E),
    ErrorCode.GOLDEN_MISMATCH: ("an entry's output is outside its golden output's tolerance, or a call did not run",
                                _E),
}


# ---------------------------------------------------------------------------------------------
# Text from a file, as messages and text output show it
# ---------------------------------------------------------------------------------------------

# Characters a terminal may act on rather than show: C0 controls (newline included: a file must not
# forge an output line), DEL, C1 controls (U+009B is CSI on many terminals), the line and
# paragraph separators, and the bidirectional overrides that reorder what is shown; and the
# backslash, so that an escape can be told from text. Each is written \xNN, or \uNNNN above
# U+00FF: what `fatpte-run` writes for the same bytes (loader/src/common/text.cpp).
_UNSAFE = [*range(0x20), 0x5C, *range(0x7F, 0xA0), 0x200E, 0x200F, 0x2028, 0x2029, *range(0x202A, 0x202F),
           *range(0x2066, 0x206A)]
_ESCAPES: dict[int, str] = {c: f"\\x{c:02x}" if c <= 0xFF else f"\\u{c:04x}" for c in _UNSAFE}
# What text output does to the lines it writes whatever their origin: the same escapes, but
# the newline and the backslash kept (a renderer's own line breaks, escapes already made).
_CONTROLS: dict[int, str] = {c: e for c, e in _ESCAPES.items() if c not in (0x0A, 0x5C)}
# A string from a file is shown in text and messages up to this many bytes of its UTF-8; the rest
# is counted. The C++ loader cuts at the same place (loader/src/common/text.cpp, clipped).
CLIP_BYTES = 1024
# A finding's message and field are shown up to MESSAGE_BYTES and CLIP_BYTES bytes, the rest
# counted: the last guard against a message that quotes a file's string whole (a 1 MB key of a
# pack.toml or device profile made a 1.5 MB error line). to_json keeps them exact.
MESSAGE_BYTES = 16 * CLIP_BYTES
# Lists a text line or message shows in full up to this many items; the rest are counted.
LIST_LIMIT = 8
# Findings of one code a validation reports in full; past this many it counts them ("... and N
# more"), so that no file can make a report grow with every reference it holds.
MAX_FINDINGS_PER_CODE = 100


def printable(text: str) -> str:
    """`text` safe to write to a terminal: every character of `_UNSAFE` as an escape, the rest
    unchanged. Text output applies it to every string that came from a file; JSON output never
    does (it is exact, and json.dumps escapes controls itself)."""
    return text.translate(_ESCAPES)


def terminal_safe(text: str) -> str:
    """A whole line (or lines) of text output made safe as it is written: every control character
    escaped but the newline, backslashes left alone. The last guard of the command line's output,
    behind `printable` applied to each string from a file."""
    return text.translate(_CONTROLS)


def clipped(text: str, limit: int = CLIP_BYTES) -> str:
    """`printable(text)`, cut after `limit` bytes of its UTF-8 (at a character boundary) with the
    size of the whole: `'xxx...'` stays short whatever a file holds."""
    head, size = _cut(text, limit)
    return printable(head) + ("" if size is None else f"...({size} bytes)")


def _cut(text: str, limit: int) -> tuple[str, int | None]:
    """`text` whole and None, or its first `limit` bytes of UTF-8 (at a character boundary) and the
    size of the whole."""
    if len(text) * 4 <= limit:  # no character takes more than 4 bytes: no need to encode
        return text, None
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text, None
    cut = limit
    while cut > 0 and (raw[cut] & 0xC0) == 0x80:  # not inside a character
        cut -= 1
    return raw[:cut].decode("utf-8", "surrogatepass"), len(raw)


def _bounded(text: str, limit: int) -> str:
    """`text` as a message or field shows it: cut after `limit` bytes, the rest counted."""
    head, size = _cut(text, limit)
    return head if size is None else f"{head}...({size} bytes in all)"


def quoted(text: str, limit: int = CLIP_BYTES) -> str:
    """A string from a file as a message quotes it: `clipped`, in single quotes."""
    return f"'{clipped(text, limit)}'"


def listed(items: list[str], limit: int = LIST_LIMIT) -> str:
    """Items already made printable, comma-separated, the first `limit` of them and then how many
    more: `a, b, c and 8189 more`."""
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


class Finding(NamedTuple):
    """One broken rule: what, where in the file, and how bad.

    A NamedTuple, not a dataclass: it is on every reader's import path, where `dataclasses`
    alone costs more than the rest of the module (see fatpte/format/model.py)."""

    code: ErrorCode
    message: str
    offset: int | None = None
    field: str | None = None
    expected: Any = None
    actual: Any = None
    severity: Severity = Severity.ERROR

    def describe(self) -> str:
        """`E0203 at 0x48 (entries[2].size): payload ends at 0x1200, ...`"""
        where = "" if self.offset is None else f" at {self.offset:#x}"
        what = "" if self.field is None else f" ({_bounded(self.field, CLIP_BYTES)})"
        level = "" if self.severity is Severity.ERROR else " warning"
        return f"{self.code.tag}{level}{where}{what}: {_bounded(self.message, MESSAGE_BYTES)}"

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code.tag,
            "name": self.code.name,
            "severity": self.severity.value,
            "offset": self.offset,
            "field": self.field,
            "message": self.message,
            "expected": _jsonable(self.expected),
            "actual": _jsonable(self.actual),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, (int, str, float, bool)):
        return value
    return str(value)


def finding(
    code: ErrorCode,
    message: str,
    *,
    offset: int | None = None,
    field: str | None = None,
    expected: Any = None,
    actual: Any = None,
) -> Finding:
    """A finding with the severity the code carries."""
    return Finding(code, message, offset, field, expected, actual, code.severity)


class FatpteError(Exception):
    """The root of every error fatpte raises: a code, where it happened, and what was wrong."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        source: str | None = None,
        offset: int | None = None,
        field: str | None = None,
        expected: Any = None,
        actual: Any = None,
    ) -> None:
        self.code = code
        self.message = message
        self.source = source
        self.offset = offset
        self.field = field
        self.expected = expected
        self.actual = actual
        super().__init__(str(self))

    @classmethod
    def from_finding(cls, f: Finding, source: str | None) -> FatpteError:
        return cls(
            f.code, f.message, source=source, offset=f.offset, field=f.field, expected=f.expected, actual=f.actual
        )

    @property
    def finding(self) -> Finding:
        return finding(
            self.code, self.message, offset=self.offset, field=self.field, expected=self.expected, actual=self.actual
        )

    def __str__(self) -> str:
        prefix = "" if self.source is None else f"{self.source}: "
        return prefix + self.finding.describe()


def out_of_memory(source: str | None, doing: str) -> FatpteError:
    """What a reader raises in place of MemoryError: the work budgets keep reading within a constant
    times the file, so running out is the machine's limit, reported as an I/O error (E0801) as the
    C++ loader reports std::bad_alloc, never as another exception."""
    return FatpteError(ErrorCode.IO_ERROR, f"out of memory while {doing}", source=source)


class SelectionError(FatpteError):
    """No specialization fits the device; the message lists every entry and why.

    `report` holds the same as data when a container was assessed: the shape of
    `Selection.to_json()` with `chosen` null, so `fatpte select --json` prints every verdict
    whether or not an entry fits."""

    report: dict[str, Any] | None = None


class FatpteWarning(UserWarning):
    """Something fatpte did as asked but that deserves a look (a code of warning severity):
    issued with `warnings.warn`, printed by the command line as `fatpte: warning: E0709 ...`."""

    def __init__(self, code: ErrorCode, message: str, *, field: str | None = None) -> None:
        self.code = code
        self.message = message
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        what = "" if self.field is None else f" ({self.field})"
        return f"{self.code.tag}{what}: {self.message}"
