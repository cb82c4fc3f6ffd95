"""Files mapped read-only: `map_file` (a mapping and the descriptor behind it), `mapped_file` (the
same for a `with` block), `map_view` (a view that keeps its mapping alive), `release_mapping`;
`open_regular` and `read_regular` (a small file read whole, bounded, regular files only);
`releasable` and `release_pages` drop the pages a pass over a mapping has read from the resident
set. A mapping is never unmapped under a live view.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Iterator

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import io_error
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.kinds import what_file

_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def releasable(buf: BytesLike) -> bool:
    """Whether `release_pages` may drop pages of `buf`: a read-only file mapping. On a
    copy-on-write mapping (ACCESS_COPY) MADV_DONTNEED would discard the caller's private changes;
    anything that is not a mapping has no pages to give back."""
    if _DONTNEED is None or not isinstance(buf, mmap.mmap):
        return False
    with memoryview(buf) as view:
        return view.readonly


def release_pages(buf: BytesLike, start: int, end: int) -> None:
    """Drop the pages of `buf[start:end]` from this process's resident set (MADV_DONTNEED), `start`
    rounded down to a page: a pass over a file many times the size of memory then holds only the
    part it is reading, and the page cache keeps the bytes. Only for a `releasable` buffer; a
    failure is ignored (it only costs resident memory, never correctness)."""
    assert isinstance(buf, mmap.mmap) and _DONTNEED is not None
    start -= start % mmap.PAGESIZE
    if end <= start:
        return
    try:
        buf.madvise(_DONTNEED, start, end - start)
    except (OSError, ValueError):
        pass


def open_regular(path: str | os.PathLike[str], what: str = "") -> int:
    """A read-only descriptor of `path`, which must be a regular file: E0811 NOT_A_FILE for a
    directory, device, FIFO or socket, decided by fstat after an O_NONBLOCK open, so that a FIFO
    without a writer is refused at once instead of blocking the caller forever. `what` names the
    file in messages (`the device profile`)."""
    named = f"{what} " if what else ""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise io_error(exc, path, f"cannot open {named}".rstrip()) from exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise io_error(exc, path, f"cannot stat {named}".rstrip()) from exc
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise FatpteError(ErrorCode.NOT_A_FILE, f"cannot read {named}{os.fspath(path)}: it is {what_file(mode)}, "
                          "not a regular file", source=os.fspath(path))
    return fd


def read_regular(path: str | os.PathLike[str], limit: int, what: str = "") -> bytes:
    """The bytes of the regular file `path`, at most `limit` + 1 of them: one more than the limit,
    so that the caller can tell a file over it and refuse it in its own terms. Anything that is not
    a regular file is E0811 NOT_A_FILE, decided before a byte is read (open_regular: a FIFO never
    blocks, /dev/zero is never read); a failed read is E0801. What every small file a command
    reads goes through: device profiles, pack.toml, keys, detached signatures. `what` names the
    file in messages."""
    fd = open_regular(path, what)
    try:
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise io_error(exc, path, f"cannot read {what}".rstrip()) from exc
    finally:
        os.close(fd)


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first `size` bytes of a regular file, b"" when it is none or cannot be read (the caller
    then opens it as a container, which reports why)."""
    try:
        fd = open_regular(path)
    except FatpteError:
        return b""
    try:
        return os.pread(fd, size, 0)
    except OSError:
        return b""
    finally:
        os.close(fd)


def map_file(path: str | os.PathLike[str]) -> tuple[BytesLike, int]:
    """Map `path` read-only; returns the buffer and an open descriptor the caller owns. `path`
    must be a regular file (open_regular)."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return b"", fd  # mmap cannot map an empty file; the parser reports it as truncated
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ), fd
    except FatpteError:
        os.close(fd)
        raise
    except OSError as exc:
        os.close(fd)
        raise io_error(exc, path, "cannot map") from exc
    except ValueError as exc:  # mmap of something that is not a regular file
        os.close(fd)
        raise FatpteError(ErrorCode.IO_ERROR, f"cannot map {path}: {exc}", source=os.fspath(path)) from exc


def release_mapping(buf: BytesLike, fd: int | None) -> None:
    """Close what `map_file` returned. A mapping that still has views handed out is left to go
    with its last view: it is never unmapped under a live view."""
    if isinstance(buf, mmap.mmap):
        with contextlib.suppress(BufferError):
            buf.close()
    if fd is not None:
        os.close(fd)


def map_view(path: str | os.PathLike[str]) -> memoryview:
    """`path` mapped read-only, as a view for readers that take bytes: the mapping goes with the
    last view of it (slices included), so nothing needs closing and a slice may outlive the call."""
    buf, fd = map_file(path)
    os.close(fd)  # a mapping outlives its descriptor
    return memoryview(buf)


@contextlib.contextmanager
def mapped_file(path: str | os.PathLike[str]) -> Iterator[tuple[BytesLike, int]]:
    """`map_file` for the length of a `with` block."""
    buf, fd = map_file(path)
    try:
        yield buf, fd
    finally:
        release_mapping(buf, fd)
