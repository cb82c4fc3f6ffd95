"""Reader of ExecuTorch native packages (.ptn): a stored zip of `program.ptg` (the native
backend's program, an NPTG flatbuffer), `program.safetensors` (the tensors the program loads by
key: constants and the initial value of its state) and `aliases.json` (keys whose bytes another
key holds), as `executorch.exir.native.to_native(...).save()` writes it
(exir/_serialize/_ptn.py; member names are fixed).

Recognised by bytes 0..4 `PK\\x03\\x04` and a first member named `program.ptg` (`looks_like_ptn`),
then read with Python's zipfile under the rules of a stored package, each checked before any
member is used: at most MAX_MEMBERS members, each stored (no compression), not encrypted, with a
plain name (no folder, no `..`, no NUL, no backslash) given once; its local header agrees with
the central directory and its bytes lie inside the file without overlapping another member's;
its CRC-32 matches. The safetensors header is bounded (MAX_SAFETENSORS_HEADER), its JSON keys
unique, each tensor's byte range inside the data section, of the size its dtype and shape give,
overlapping no other. Nothing is decompressed or extracted to disk; offsets are absolute in the
file, so the tensors can be used in place.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any, Final

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.nptg import NativeProgram, read_nptg
from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads
from fatpte.value.dtypes import SAFETENSORS_DTYPES

ZIP_MAGIC = b"PK\x03\x04"
PROGRAM_MEMBER = "program.ptg"
SAFETENSORS_MEMBER = "program.safetensors"
ALIASES_MEMBER = "aliases.json"
MAX_MEMBERS = 64  # a package has three; room for members a later release may add
MAX_SAFETENSORS_HEADER = 100 << 20  # the safetensors library's own limit on the JSON header
MAX_ALIASES_BYTES = 16 << 20
MAX_DIMS = 64
_LOCAL_HEADER = struct.Struct("<4s22sHH")  # signature, the fields between, name length, extra length

@dataclass(frozen=True, slots=True)
class PtnMember:
    name: str
    offset: int  # of the member's bytes, absolute in the file
    size: int
    crc32: int


@dataclass(frozen=True, slots=True)
class PtnTensor:
    """A key of the package: its tensor, and where its bytes are (an alias: its owner's bytes)."""

    key: str
    dtype: str
    shape: tuple[int, ...]
    offset: int  # absolute in the file
    size: int
    alias_of: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "dtype": self.dtype, "shape": list(self.shape), "offset": self.offset,
                "size": self.size, "alias_of": self.alias_of}


@dataclass(frozen=True, slots=True)
class NativePackage:
    source: str | None
    size: int
    members: tuple[PtnMember, ...]
    program: NativeProgram
    tensors: tuple[PtnTensor, ...]  # sorted by key, aliases included
    metadata: dict[str, str]  # the safetensors header's __metadata__

    def member(self, name: str) -> PtnMember | None:
        return next((m for m in self.members if m.name == name), None)

    @property
    def missing_keys(self) -> tuple[str, ...]:
        """Keys the program loads that the package does not hold."""
        have = {t.key for t in self.tensors}
        return tuple(k for k in self.program.named_data_keys if k not in have)


def looks_like_ptn(head: bytes | memoryview) -> bool:
    """Bytes 0..4 are a zip's local header and its first member is `program.ptg`, as ExecuTorch
    writes a package; `head` needs 41 bytes."""
    name = PROGRAM_MEMBER.encode()
    if len(head) < _LOCAL_HEADER.size + len(name) or bytes(head[:4]) != ZIP_MAGIC:
        return False
    _, _, name_len, _ = _LOCAL_HEADER.unpack_from(head, 0)
    return name_len == len(name) and bytes(head[_LOCAL_HEADER.size:_LOCAL_HEADER.size + name_len]) == name


class _View(io.RawIOBase):
    """A seekable, read-only file over a buffer (a mapping), so zipfile reads without a copy."""

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = memoryview(data).cast("B")
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: len(self._data)}[whence]
        self._pos = max(0, base + pos)
        return self._pos

    def readinto(self, b: Any) -> int:
        chunk = self._data[self._pos:self._pos + len(b)]
        n = len(chunk)
        memoryview(b).cast("B")[:n] = chunk
        self._pos += n
        return n


def _bad(message: str, source: str | None, *, offset: int | None = None, field: str | None = None,
         actual: Any = None) -> FatpteError:
    return FatpteError(ErrorCode.ET_BAD_PACKAGE, message, source=source, offset=offset, field=field, actual=actual)


def _plain_name(name: str) -> bool:
    return (bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name
            and "\0" not in name and ":" not in name)


def _members(data: bytes | memoryview, source: str | None) -> tuple[PtnMember, ...]:
    try:
        with zipfile.ZipFile(_View(data)) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, EOFError, OSError,
            struct.error, UnicodeDecodeError) as exc:
        raise _bad(f"not a readable zip: {exc}", source) from None
    if len(infos) > MAX_MEMBERS:
        raise _bad(f"{len(infos)} members exceed the limit of {MAX_MEMBERS}", source, field="members",
                   actual=len(infos))
    members: list[PtnMember] = []
    seen: set[str] = set()
    size = len(data)
    for i, info in enumerate(infos):
        where = f"members[{i}]"
        at = info.header_offset
        if not _plain_name(info.filename):
            raise _bad(f"member name {info.filename!r} is not a plain file name (no folder, '..', ':', '\\\\' "
                       "or NUL): a package's members are program.ptg, program.safetensors, aliases.json", source,
                       offset=at, field=f"{where}.name", actual=info.filename)
        if info.filename in seen:
            raise _bad(f"member {info.filename!r} appears twice", source, offset=at, field=f"{where}.name",
                       actual=info.filename)
        seen.add(info.filename)
        if info.flag_bits & 0x1:
            raise _bad(f"member {info.filename!r} is encrypted", source, offset=at, field=f"{where}.flags")
        if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
            raise _bad(f"member {info.filename!r} is compressed (method {info.compress_type}): a package is a "
                       "stored zip, its members usable in place", source, offset=at, field=f"{where}.method",
                       actual=info.compress_type)
        if not (0 <= at <= size and _LOCAL_HEADER.size <= size - at):
            raise _bad(f"the local header of {info.filename!r} at {at:#x} lies past the end of the file",
                       source, offset=at, field=f"{where}.header_offset", actual=at)
        magic, _, name_len, extra_len = _LOCAL_HEADER.unpack_from(data, at)
        start = at + _LOCAL_HEADER.size + name_len + extra_len
        name_at = at + _LOCAL_HEADER.size
        if magic != ZIP_MAGIC or bytes(data[name_at:name_at + name_len]) != info.orig_filename.encode(
                "utf-8" if info.flag_bits & 0x800 else "cp437"):
            raise _bad(f"the local header of {info.filename!r} disagrees with the central directory", source,
                       offset=at, field=f"{where}.local_header")
        if not (info.file_size <= size and start <= size - info.file_size):
            raise _bad(f"member {info.filename!r} ({info.file_size} bytes at {start:#x}) ends past the end of "
                       f"the file at {size:#x}", source, offset=start, field=f"{where}.size", actual=info.file_size)
        members.append(PtnMember(info.filename, start, info.file_size, info.CRC))
    # Overlaps first: members that share bytes would each be hashed, many times the file's size.
    reach = 0
    for m in sorted(members, key=lambda m: m.offset):
        if m.offset < reach:
            raise _bad(f"member {m.name!r} at {m.offset:#x} overlaps the member before it", source,
                       offset=m.offset, field="members")
        reach = m.offset + m.size
    for i, m in enumerate(members):
        actual = zlib.crc32(data[m.offset:m.offset + m.size])
        if actual != m.crc32:
            raise _bad(f"member {m.name!r}: CRC-32 {actual:08x} does not match the stated {m.crc32:08x}", source,
                       offset=m.offset, field=f"members[{i}].crc32", actual=actual)
    return tuple(members)


# How a package's JSON members are read: strict about keys (a header naming one tensor twice is
# ambiguous), otherwise as ExecuTorch's reader takes them; their sizes are bounded by the callers.
PTN_JSON: Final = JsonRules(constants=True)


def _json(blob: bytes | memoryview, what: str, source: str | None, offset: int) -> Any:
    try:
        return loads(blob, PTN_JSON)
    except JsonRefused as exc:
        raise _bad(f"{what} is not valid JSON: {exc}", source, offset=offset, field=what) from None


def _safetensors(data: bytes | memoryview, m: PtnMember, source: str | None) -> tuple[list[PtnTensor], dict[str, str]]:
    field = SAFETENSORS_MEMBER
    if m.size < 8:
        raise _bad(f"{field} ({m.size} bytes) cannot hold its 8-byte header length", source, offset=m.offset,
                   field=field)
    n = int.from_bytes(bytes(data[m.offset:m.offset + 8]), "little")
    if n > m.size - 8 or n > MAX_SAFETENSORS_HEADER:
        raise _bad(f"{field}: a header of {n} bytes does not fit in the member's {m.size - 8} bytes after the "
                   f"length (limit {MAX_SAFETENSORS_HEADER})", source, offset=m.offset, field=f"{field}.header_size",
                   actual=n)
    header = _json(data[m.offset + 8:m.offset + 8 + n], f"{field}.header", source, m.offset + 8)
    if not isinstance(header, dict):
        raise _bad(f"{field}: the header is not a JSON object", source, offset=m.offset + 8, field=f"{field}.header")
    base = m.offset + 8 + n
    room = m.size - 8 - n
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in metadata.items()):
        raise _bad(f"{field}: __metadata__ must map strings to strings", source, offset=m.offset + 8,
                   field=f"{field}.__metadata__")
    tensors: list[PtnTensor] = []
    for key, t in header.items():
        where = f"{field}[{key!r}]"
        if not isinstance(t, dict) or set(t) != {"dtype", "shape", "data_offsets"}:
            raise _bad(f"{where}: a tensor is an object with exactly dtype, shape and data_offsets", source,
                       offset=m.offset + 8, field=where)
        code, shape, offs = t["dtype"], t["shape"], t["data_offsets"]
        if code not in SAFETENSORS_DTYPES:
            raise _bad(f"{where}: dtype {code!r} is not one of {', '.join(SAFETENSORS_DTYPES)}", source,
                       offset=m.offset + 8, field=f"{where}.dtype", actual=code)
        if (not isinstance(shape, list) or len(shape) > MAX_DIMS
                or not all(type(d) is int and d >= 0 for d in shape)):
            raise _bad(f"{where}: shape must be a list of at most {MAX_DIMS} non-negative integers", source,
                       offset=m.offset + 8, field=f"{where}.shape", actual=str(shape)[:80])
        if (not isinstance(offs, list) or len(offs) != 2 or not all(type(o) is int for o in offs)
                or not 0 <= offs[0] <= offs[1] <= room):
            raise _bad(f"{where}: data_offsets {str(offs)[:80]} are not [begin, end] within the {room} bytes of "
                       "data", source, offset=m.offset + 8, field=f"{where}.data_offsets")
        name, itemsize = SAFETENSORS_DTYPES[code]
        count = 1
        for d in shape:
            count *= d
        if offs[1] - offs[0] != count * itemsize:
            raise _bad(f"{where}: {offs[1] - offs[0]} bytes, but {name}{shape} takes {count * itemsize}", source,
                       offset=m.offset + 8, field=f"{where}.data_offsets")
        tensors.append(PtnTensor(key, name, tuple(shape), base + offs[0], offs[1] - offs[0]))
    reach = base
    for t in sorted(tensors, key=lambda t: (t.offset, t.size)):
        if t.offset < reach and t.size:
            raise _bad(f"{field}[{t.key!r}]: its bytes overlap another tensor's", source, offset=t.offset,
                       field=f"{field}[{t.key!r}].data_offsets")
        reach = max(reach, t.offset + t.size)
    return tensors, metadata


def _aliases(data: bytes | memoryview, m: PtnMember, owners: dict[str, PtnTensor],
             source: str | None) -> list[PtnTensor]:
    if m.size > MAX_ALIASES_BYTES:
        raise _bad(f"{ALIASES_MEMBER} is {m.size} bytes, above the limit of {MAX_ALIASES_BYTES}", source,
                   offset=m.offset, field=ALIASES_MEMBER, actual=m.size)
    raw = _json(data[m.offset:m.offset + m.size], ALIASES_MEMBER, source, m.offset)
    if not isinstance(raw, dict):
        raise _bad(f"{ALIASES_MEMBER} is not a JSON object of key -> owner key", source, offset=m.offset,
                   field=ALIASES_MEMBER)
    out = []
    for key, owner in raw.items():
        where = f"{ALIASES_MEMBER}[{key!r}]"
        if not isinstance(owner, str) or owner not in owners:
            raise _bad(f"{where}: names {owner!r}, which {SAFETENSORS_MEMBER} does not hold", source,
                       offset=m.offset, field=where, actual=str(owner)[:80])
        if key in owners:
            raise _bad(f"{where}: {key!r} is both a tensor of {SAFETENSORS_MEMBER} and an alias", source,
                       offset=m.offset, field=where, actual=key)
        o = owners[owner]
        out.append(PtnTensor(key, o.dtype, o.shape, o.offset, o.size, alias_of=owner))
    return out


def read_ptn(data: bytes | memoryview, *, source: str | None = None) -> NativePackage:
    """Read a .ptn under the rules above; FatpteError (ET_BAD_PACKAGE, or the NPTG reader's
    codes for program.ptg) on any defect."""
    if bytes(data[:4]) != ZIP_MAGIC:
        raise FatpteError(ErrorCode.ET_BAD_IDENTIFIER, f"bytes 0..4 are {bytes(data[:4])!r}, not a zip's "
                          f"{ZIP_MAGIC!r}: not an ExecuTorch native package", source=source, offset=0,
                          field="magic", actual=bytes(data[:4]))
    members = _members(data, source)
    by_name = {m.name: m for m in members}
    program_member = by_name.get(PROGRAM_MEMBER)
    if program_member is None:
        raise _bad(f"no member {PROGRAM_MEMBER} (members: {', '.join(by_name) or 'none'})", source,
                   field="members")
    program = read_nptg(data[program_member.offset:program_member.offset + program_member.size], source=source,
                        base=program_member.offset)
    tensors: list[PtnTensor] = []
    metadata: dict[str, str] = {}
    if SAFETENSORS_MEMBER in by_name:
        tensors, metadata = _safetensors(data, by_name[SAFETENSORS_MEMBER], source)
    if ALIASES_MEMBER in by_name:
        tensors += _aliases(data, by_name[ALIASES_MEMBER], {t.key: t for t in tensors}, source)
    return NativePackage(source, len(data), members, program, tuple(sorted(tensors, key=lambda t: t.key)),
                         metadata)
