"""`fatpte.pack`: write a container from specializations, streaming, atomically, deterministically.

Payloads given as paths are never read into memory: their checksums are computed over a
read-only mapping and their bytes are copied by the kernel (`streams.copy_range`). The plan
(every offset, the header and the tables) is computed first from sizes and checksums; then the
file is written once, front to back, to a temporary file that is renamed onto `dest`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import BinaryIO

from fatpte import layout as L
from fatpte.atomic import atomic_output, io_error
from fatpte.checksum import crc32c
from fatpte.codec import encode
from fatpte.errors import ErrorCode, FatpteError
from fatpte.model import BytesLike
from fatpte.streams import copy_range
from fatpte.structure import id_problem, valid_alignment

PayloadSource = bytes | bytearray | memoryview | str | os.PathLike[str]

_KIND_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_I32 = (-(1 << 31), (1 << 31) - 1)


@dataclass(frozen=True)
class Specialization:
    """One backend-specific payload to pack. `payload` is bytes, or a path to stream from."""

    backend_id: str
    payload: PayloadSource
    _: KW_ONLY
    name: str | None = None
    priority: int = 0
    alignment: int | None = None

    @property
    def entry_name(self) -> str:
        return self.name if self.name is not None else self.backend_id


def detect_payload_kind(buf: BytesLike) -> bytes:
    """Bytes 4..8 when they read as a flatbuffer file identifier (or a wrapper's magic), else zero."""
    if len(buf) >= 8:
        kind = bytes(buf[4:8])
        if all(b in _KIND_ALPHABET for b in kind):
            return kind
    return b"\0\0\0\0"


@dataclass(slots=True)
class _Source:
    """An opened payload: a buffer to hash and compare, and a descriptor to copy from."""

    label: str
    buf: BytesLike
    fd: int | None
    size: int
    checksum: int = 0
    kind: bytes = b"\0\0\0\0"


@dataclass(slots=True)
class _Placement:
    source: _Source
    offset: int
    entries: list[int] = field(default_factory=list)


@contextlib.contextmanager
def _open_source(payload: PayloadSource, label: str) -> Iterator[_Source]:
    if isinstance(payload, (bytes, bytearray, memoryview)):
        view = memoryview(payload).cast("B")
        try:
            yield _Source(label, view, None, len(view))
        finally:
            view.release()
        return
    if not isinstance(payload, (str, os.PathLike)):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                          f"{label}: payload must be bytes or a path, not {type(payload).__name__}", field=label)
    path = os.fspath(payload)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise io_error(exc, path, "cannot open payload") from exc
    try:
        size = os.fstat(fd).st_size
        buf: BytesLike = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
    except (OSError, ValueError) as exc:
        os.close(fd)
        raise FatpteError(ErrorCode.IO_ERROR, f"cannot map payload {path}: {exc}", source=path) from exc
    try:
        yield _Source(path, buf, fd, size)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
        os.close(fd)


def _same_bytes(a: _Source, b: _Source) -> bool:
    if a.size != b.size:
        return False
    step = 8 << 20
    va, vb = memoryview(a.buf), memoryview(b.buf)
    try:
        return all(va[i : i + step] == vb[i : i + step] for i in range(0, a.size, step))
    finally:
        va.release()
        vb.release()


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _pad_id(text: str, what: str, label: str, code: ErrorCode) -> bytes:
    raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else b""
    if not isinstance(text, str) or len(raw) > L.ID_FIELD_SIZE:
        raise FatpteError(code, f"{label}: {what} {text!r} must be a string of 1 to {L.ID_FIELD_SIZE} bytes",
                          field=label, actual=text)
    padded = raw.ljust(L.ID_FIELD_SIZE, b"\0")
    problem = id_problem(padded) if b"\0" not in raw else "contains a NUL byte"
    if problem:
        raise FatpteError(code, f"{label}: {what} {text!r} {problem}", field=label, actual=text)
    return padded


def pack(
    specializations: Iterable[Specialization],
    dest: str | os.PathLike[str],
    *,
    version: int = L.VERSION_2,
    alignment: int | None = None,
) -> Path:
    """Write a container holding `specializations` to `dest` and return its path.

    `alignment` is the default payload alignment for version 2 (64 when None); an entry's own
    `alignment` overrides it. Version 1 stores payloads back to back and has no names,
    alignment or priority: asking for them raises NOT_REPRESENTABLE_IN_V1.
    """
    specs = list(specializations)
    if not specs:
        raise FatpteError(ErrorCode.NO_SPECIALIZATIONS, "nothing to pack: give at least one specialization")
    if version not in L.SUPPORTED_VERSIONS:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"version must be 1 or 2, not {version!r}",
                          field="version", actual=version)
    limit = L.MAX_ENTRIES
    if len(specs) > limit:
        raise FatpteError(ErrorCode.TOO_MANY_ENTRIES, f"{len(specs)} specializations exceed the limit of {limit}",
                          field="specializations", actual=len(specs))
    target = Path(dest)
    with contextlib.ExitStack() as stack:
        sources = [stack.enter_context(_open_source(s.payload, f"specializations[{i}].payload"))
                   for i, s in enumerate(specs)]
        if version == L.VERSION_1:
            prefix, placements, total = _plan_v1(specs, sources, alignment)
        else:
            prefix, placements, total = _plan_v2(specs, sources, alignment)
        with atomic_output(target) as out:
            _write(out, prefix, placements, total)
    return target


def _write(out: BinaryIO, prefix: bytes, placements: Sequence[_Placement], total: int) -> None:
    out.write(prefix)
    out.flush()
    fd = out.fileno()
    for p in placements:
        src = p.source
        if src.fd is not None:
            copy_range(src.fd, 0, fd, p.offset, src.size)
        else:
            view = memoryview(src.buf)
            try:
                done = 0
                while done < src.size:
                    done += os.pwrite(fd, view[done : done + (8 << 20)], p.offset + done)
            finally:
                view.release()
    # Gaps between regions were never written: the file system reads them as zero, as the spec
    # requires of padding, and a sparse file costs no disk for them.
    os.ftruncate(fd, total)


def _plan_v1(
    specs: list[Specialization], sources: list[_Source], alignment: int | None
) -> tuple[bytes, list[_Placement], int]:
    for i, s in enumerate(specs):
        label = f"specializations[{i}]"
        if alignment is not None or s.alignment is not None or s.priority != 0:
            raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1,
                              f"{label}: version 1 stores payloads back to back with no alignment or priority",
                              field=label)
        if s.name is not None and s.name != s.backend_id:
            raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1,
                              f"{label}: version 1 has no entry names (name {s.name!r} differs from backend id "
                              f"{s.backend_id!r})", field=f"{label}.name")
    header = encode(L.RECORDS["v1_header"], {"magic": L.MAGIC, "version": 1, "entry_count": len(specs)}, "header")
    data_start = L.V1_HEADER_SIZE + len(specs) * L.V1_ENTRY_SIZE
    table = bytearray()
    placements: list[_Placement] = []
    rel = 0
    for i, (s, src) in enumerate(zip(specs, sources)):
        raw = _v1_id(s.backend_id, f"specializations[{i}].backend_id")
        table += encode(L.RECORDS["v1_entry"], {"backend_id": raw, "offset": rel, "size": src.size},
                        f"entries[{i}]")
        placements.append(_Placement(src, data_start + rel, [i]))
        rel += src.size
    return header + bytes(table), placements, data_start + rel


def _v1_id(text: str, label: str) -> bytes:
    raw = text.encode("ascii", "replace") if isinstance(text, str) else b""
    ok = isinstance(text, str) and text.isascii() and 1 <= len(raw) <= L.ID_FIELD_SIZE and b"\0" not in raw
    if not ok:
        raise FatpteError(ErrorCode.V1_BAD_ID,
                          f"{label}: {text!r} is not a v1 backend id (1 to 32 ASCII characters, no NUL)",
                          field=label, actual=text)
    return raw.ljust(L.ID_FIELD_SIZE, b"\0")


def _plan_v2(
    specs: list[Specialization], sources: list[_Source], alignment: int | None
) -> tuple[bytes, list[_Placement], int]:
    default_alignment = L.DEFAULT_ALIGNMENT if alignment is None else alignment
    if not isinstance(default_alignment, int) or not valid_alignment(default_alignment):
        raise FatpteError(ErrorCode.BAD_ALIGNMENT,
                          f"alignment {default_alignment!r} is not a power of two from 1 to {L.MAX_ALIGNMENT}",
                          field="alignment", actual=default_alignment)
    names: dict[str, int] = {}
    rows: list[dict[str, object]] = []
    aligns: list[int] = []
    for i, (s, src) in enumerate(zip(specs, sources)):
        label = f"specializations[{i}]"
        name = _pad_id(s.entry_name, "name", f"{label}.name", ErrorCode.BAD_NAME)
        backend = _pad_id(s.backend_id, "backend id", f"{label}.backend_id", ErrorCode.BAD_BACKEND_ID)
        if s.entry_name in names:
            raise FatpteError(ErrorCode.DUPLICATE_NAME,
                              f"{label}: name {s.entry_name!r} is already used by specializations[{names[s.entry_name]}]"
                              f"; give each variant its own name, e.g. name='{s.backend_id}-int8'",
                              field=f"{label}.name", actual=s.entry_name)
        names[s.entry_name] = i
        align = default_alignment if s.alignment is None else s.alignment
        if not isinstance(align, int) or not valid_alignment(align):
            raise FatpteError(ErrorCode.BAD_ALIGNMENT,
                              f"{label}: alignment {align!r} is not a power of two from 1 to {L.MAX_ALIGNMENT}",
                              field=f"{label}.alignment", actual=align)
        if not isinstance(s.priority, int) or not _I32[0] <= s.priority <= _I32[1]:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{label}: priority {s.priority!r} is not a 32-bit integer",
                              field=f"{label}.priority", actual=s.priority)
        aligns.append(align)
        src.checksum = crc32c(src.buf)
        src.kind = detect_payload_kind(src.buf)
        rows.append({"name": name, "backend_id": backend, "payload_kind": src.kind, "alignment": align,
                     "checksum": src.checksum, "priority": s.priority, "flags": 0, "reserved": 0})

    # Byte-identical payloads are stored once; the shared region satisfies every alignment.
    placements: list[_Placement] = []
    by_key: dict[tuple[int, int], list[_Placement]] = {}
    for i, src in enumerate(sources):
        group = by_key.setdefault((src.size, src.checksum), [])
        home = next((p for p in group if _same_bytes(p.source, src)), None)
        if home is None:
            home = _Placement(src, 0)
            group.append(home)
            placements.append(home)
        home.entries.append(i)

    table_end = L.V2_HEADER_SIZE + len(specs) * L.V2_ENTRY_SIZE
    cursor = table_end
    for p in placements:
        align = max(aligns[i] for i in p.entries)
        p.offset = _align_up(cursor, align)
        cursor = p.offset + p.source.size
        for i in p.entries:
            rows[i]["offset"] = p.offset
            rows[i]["size"] = p.source.size
    total = cursor

    table = b"".join(encode(L.RECORDS["v2_entry"], row, f"entries[{i}]") for i, row in enumerate(rows))
    header_values: dict[str, object] = {
        "magic": L.MAGIC, "version": L.VERSION_2, "header_size": L.V2_HEADER_SIZE,
        "entry_size": L.V2_ENTRY_SIZE, "entry_count": len(specs), "segment_entry_size": L.V2_SEGMENT_SIZE,
        "segment_count": 0, "flags": 0, "container_size": total, "manifest_offset": 0, "manifest_size": 0,
        "manifest_checksum": 0, "header_checksum": 0,
    }
    prefix = bytearray(encode(L.RECORDS["v2_header"], header_values, "header") + table)
    checksum = crc32c(prefix)
    prefix[L.HEADER_CHECKSUM_OFFSET : L.HEADER_CHECKSUM_OFFSET + 4] = checksum.to_bytes(4, "little")
    return bytes(prefix), [p for p in placements if p.source.size], total
