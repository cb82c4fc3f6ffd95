"""Copying byte ranges between files without passing them through Python: copy_file_range,
falling back to a bounded buffer, so that many-GB payloads move at the kernel's speed with
constant memory.

Holes in the source (a sparse payload file, the zero padding of a container) are not copied
when the destination range lies past the destination's end of file: bytes there read as zero
once the file is extended, so a sparse 5 GiB payload packs into a sparse container without
writing 5 GiB of zeros.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable, Iterator

from fatpte.checksum import crc32c
from fatpte.model import BytesLike

BUFFER = 1 << 20
# Bytes per copy_file_range call: the kernel copies as fast in these steps as in one call, and
# each step is a chance to report progress.
_STEP = 64 << 20

# Told of each number of bytes done, for progress displays.
Advance = Callable[[int], None]
# What the public API takes: told (bytes done, bytes in all) as work goes on.
Progress = Callable[[int, int], None]


def progress_counter(progress: Progress, total: int) -> Advance:
    """An `Advance` that adds up the bytes and reports the running total to `progress`."""
    done = 0
    progress(0, total)

    def advance(n: int) -> None:
        nonlocal done
        done += n  # may come from two hashing threads: a display tolerates a lost update
        progress(min(done, total), total)

    return advance
# Holes smaller than this are copied like data: probing them costs more than copying them.
_MIN_HOLE = 1 << 20


def copy_range(
    src_fd: int, src_offset: int, dst_fd: int, dst_offset: int, count: int, *, advance: Advance | None = None
) -> None:
    """Copy `count` bytes from src_fd at src_offset to dst_fd at dst_offset (positional I/O;
    neither file offset moves). `advance(n)` is told of every n bytes done, holes included."""
    if count <= 0:
        return
    if os.fstat(dst_fd).st_size <= dst_offset:
        # Past the destination's end: a hole left unwritten reads as zero, as in the source.
        reached = src_offset
        for start, length in _data_extents(src_fd, src_offset, count):
            if advance is not None and start > reached:
                advance(start - reached)
            _copy_bytes(src_fd, start, dst_fd, dst_offset + start - src_offset, length, advance)
            reached = start + length
        if advance is not None and src_offset + count > reached:
            advance(src_offset + count - reached)
        end = dst_offset + count
        if os.fstat(dst_fd).st_size < end:
            os.ftruncate(dst_fd, end)  # a trailing hole still makes the file that long
        return
    _copy_bytes(src_fd, src_offset, dst_fd, dst_offset, count, advance)


def copy_range_crc(
    src_fd: int,
    src_buf: BytesLike,
    src_offset: int,
    dst_fd: int,
    dst_offset: int,
    count: int,
    *,
    advance: Advance | None = None,
) -> int:
    """`copy_range`, returning the CRC32C of the bytes copied, computed from `src_buf` (a mapping
    of src_fd) on a second thread while the kernel copies: both release the GIL, so on two
    cores the checksum costs no wall time. The caller compares it before publishing the copy."""
    result: list[int] = []
    failure: list[Exception] = []

    def hash_source() -> None:
        try:
            result.append(crc32c(src_buf, src_offset, src_offset + count))
        except Exception as exc:  # noqa: BLE001 - re-raised on the calling thread below
            failure.append(exc)

    worker = threading.Thread(target=hash_source, name="fatpte-crc32c", daemon=True)
    worker.start()
    try:
        copy_range(src_fd, src_offset, dst_fd, dst_offset, count, advance=advance)
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return result[0]


def _data_extents(fd: int, offset: int, count: int) -> Iterator[tuple[int, int]]:
    """(start, length) of the parts of fd[offset:offset+count] that may hold data; the rest are
    holes of at least _MIN_HOLE bytes. Without SEEK_DATA the whole range is one extent."""
    end = offset + count
    seek_data = getattr(os, "SEEK_DATA", None)
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        yield offset, count
        return
    pos = offset
    pending: tuple[int, int] | None = None
    while pos < end:
        try:
            data = os.lseek(fd, pos, seek_data)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break  # no data after pos: the rest is a hole
            data = pos  # the probe failed: copy the rest rather than trust it
        if data >= end:
            break
        try:
            hole = min(end, os.lseek(fd, data, seek_hole))
        except OSError:
            hole = end
        if hole <= data:
            hole = end
        if pending is not None and data - (pending[0] + pending[1]) < _MIN_HOLE:
            pending = (pending[0], hole - pending[0])  # a small hole: copy through it
        else:
            if pending is not None:
                yield pending
            pending = (data, hole - data)
        pos = hole
    if pending is not None:
        yield pending


def _copy_bytes(
    src_fd: int, src_offset: int, dst_fd: int, dst_offset: int, count: int, advance: Advance | None
) -> None:
    done = 0
    if hasattr(os, "copy_file_range"):
        try:
            while done < count:
                step = min(count - done, _STEP)
                n = os.copy_file_range(src_fd, dst_fd, step, src_offset + done, dst_offset + done)
                if n == 0:
                    break
                done += n
                if advance is not None:
                    advance(n)
        except OSError:
            pass  # EXDEV, ENOSYS, EINVAL on some file systems: fall through from where it stopped
    while done < count:
        chunk = os.pread(src_fd, min(BUFFER, count - done), src_offset + done)
        if not chunk:
            raise OSError(5, f"unexpected end of input at {src_offset + done:#x}")
        written = os.pwrite(dst_fd, chunk, dst_offset + done)
        done += written
        if advance is not None:
            advance(written)
