"""Payload sources: bytes or a path to stream from, opened once (`open_source`: paths are mapped,
never read whole), hashed on demand, and compared chunk by chunk (`same_bytes`). Packing and
named-data planning share them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.checksum import crc32c
from fatpte.fileio.mapping import mapped_file

# What a payload or named-data value may be: bytes in memory, or a path to stream from.
PayloadSource = bytes | bytearray | memoryview | str | os.PathLike[str]


@dataclass(slots=True)
class Source:
    """An opened payload: a buffer to hash and compare, and a descriptor to copy from."""

    label: str
    buf: BytesLike
    fd: int | None
    size: int
    checksum: int = 0
    hashed: bool = False  # checksum already computed; otherwise it is computed while copying
    kind: bytes = b"\0\0\0\0"

    def hash(self) -> int:
        if not self.hashed:
            self.checksum, self.hashed = crc32c(self.buf), True
        return self.checksum


@contextlib.contextmanager
def open_source(payload: PayloadSource, label: str) -> Iterator[Source]:
    if isinstance(payload, (bytes, bytearray, memoryview)):
        view = memoryview(payload).cast("B")
        try:
            yield Source(label, view, None, len(view))
        finally:
            view.release()
        return
    if not isinstance(payload, (str, os.PathLike)):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                          f"{label}: payload must be bytes or a path, not {type(payload).__name__}", field=label)
    path = os.fspath(payload)
    with mapped_file(path) as (buf, fd):
        if not len(buf) and os.pread(fd, 1, 0):
            # A regular file whose size is not its content (/proc, /sys): packing it would store
            # whatever fstat says, here nothing.
            raise FatpteError(ErrorCode.IO_ERROR, f"{label}: {path} reports a size of 0 bytes but has content (a "
                              "file of /proc or /sys?); copy it to a regular file and pack that", source=path)
        yield Source(path, buf, fd, len(buf))


def check_unchanged(src: Source) -> None:
    """Raise unless the file behind `src` still has the size it had when opened: a payload that
    grows or shrinks while it is copied is an error, never a silently truncated copy."""
    if src.fd is None:
        return
    now = os.fstat(src.fd).st_size
    if now != src.size:
        raise FatpteError(ErrorCode.IO_ERROR, f"{src.label}: the file changed size while it was copied ({src.size} "
                          f"bytes when opened, {now} now); nothing was written", source=src.label,
                          expected=src.size, actual=now)


def same_bytes(a: Source, b: Source) -> bool:
    """Whether two sources hold the same bytes, compared chunk by chunk with memcmp."""
    if a.size != b.size:
        return False
    return all(x == y for x, y in zip(chunks(a), chunks(b)))


def chunks(src: Source, step: int = 1 << 20) -> Iterator[bytes]:
    """The bytes of `src` in chunks. Files are read with pread: their mappings' pages may have
    been released after hashing, and faulting them back in costs more than the copy."""
    if src.fd is not None:
        for pos in range(0, src.size, step):
            yield os.pread(src.fd, step, pos)
        return
    view = memoryview(src.buf)
    try:
        for pos in range(0, src.size, step):
            yield bytes(view[pos : pos + step])  # memoryview == compares element by element
    finally:
        view.release()
