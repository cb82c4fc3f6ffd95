"""Copying byte ranges between files with constant memory, so that many-GB payloads move at
the machine's speed.

`copy_range` copies in the kernel (copy_file_range, falling back to a bounded buffer): the
bytes never pass through Python. `copy_range_crc` also returns the CRC32C of the bytes, for
writers that must check or record it; it moves them through a few small buffers instead,
because hashing a buffer still in the CPU cache is cheaper than reading the source a second
time (measured in its docstring).

Holes in the source (a sparse payload file, the zero padding of a container) are not copied
when the destination range lies past the destination's end of file: bytes there read as zero
once the file is extended, so a sparse 5 GiB payload packs into a sparse container without
writing 5 GiB of zeros.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Self

from fatpte.fileio.checksum import crc32c, extend_zeros

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
    src_offset: int,
    dst_fd: int,
    dst_offset: int,
    count: int,
    *,
    advance: Advance | None = None,
) -> int:
    """`copy_range`, returning the CRC32C of the bytes copied, for the caller to compare before it
    publishes the copy.

    The bytes pass once through a few `PIPE_BUFFER`-sized buffers: the calling thread reads a
    buffer (pread) and hashes it while it is still in the CPU cache, and a second thread writes
    the buffers behind it. Reading, hashing and writing overlap, and the hash never reads memory
    a second time. On the bench machine this beats copy_file_range with the hash computed from a
    mapping on another thread, which reads the source twice (docs/performance.md, extract: both
    designs against `cp` in the same run). Holes of the source are skipped as in `copy_range`,
    and hashed as zeros arithmetically (`extend_zeros`)."""
    if count <= 0:
        return 0
    if count <= PIPE_BUFFER:
        return _copy_small_crc(src_fd, src_offset, dst_fd, dst_offset, count, advance)
    sparse = os.fstat(dst_fd).st_size <= dst_offset
    extents = _data_extents(src_fd, src_offset, count) if sparse else iter([(src_offset, count)])
    value = 0
    reached = src_offset
    with _Writer(dst_fd, dst_offset - src_offset) as writer:
        for start, length in extents:
            if start > reached:
                value = extend_zeros(value, start - reached)
                if advance is not None:
                    advance(start - reached)
            pos, stop = start, start + length
            while pos < stop:
                buf = writer.free()
                n = os.preadv(src_fd, [buf[: min(PIPE_BUFFER, stop - pos)]], pos)
                if n <= 0:
                    writer.give_back(buf)
                    raise OSError(errno.EIO, f"unexpected end of input at {pos:#x}")
                value = crc32c(buf[:n], value=value)
                writer.write(buf, n, pos)
                pos += n
                if advance is not None:
                    advance(n)
            reached = stop
    end = src_offset + count
    if end > reached:
        value = extend_zeros(value, end - reached)
        if advance is not None:
            advance(end - reached)
    if sparse and os.fstat(dst_fd).st_size < dst_offset + count:
        os.ftruncate(dst_fd, dst_offset + count)  # a trailing hole still makes the file that long
    return int(value)


def _copy_small_crc(
    src_fd: int, src_offset: int, dst_fd: int, dst_offset: int, count: int, advance: Advance | None
) -> int:
    """copy_range_crc of at most one buffer, on the calling thread: a container of thousands of
    small payloads must not start a thread and allocate buffers for each."""
    data = os.pread(src_fd, count, src_offset)
    if len(data) != count:
        raise OSError(errno.EIO, f"unexpected end of input at {src_offset + len(data):#x}")
    write_all(dst_fd, memoryview(data), dst_offset)
    if advance is not None:
        advance(count)
    return crc32c(data)


# copy_range_crc's buffers: 1 MiB each fits the L2 cache the hash reads it from; four keep the
# writer busy while the reader runs ahead (measured: 1 MiB beat 256 KiB and 4 MiB).
PIPE_BUFFER = 1 << 20
PIPE_DEPTH = 4


class _Writer:
    """The writing half of copy_range_crc: a thread that pwrites the buffers it is handed, at
    their source position plus `shift`, and hands each buffer back when written. A write error
    stops the copy: the next call on the reading side raises it."""

    def __init__(self, fd: int, shift: int) -> None:
        self._fd = fd
        self._shift = shift
        self._free: queue.SimpleQueue[memoryview] = queue.SimpleQueue()
        self._full: queue.SimpleQueue[tuple[memoryview, int, int] | None] = queue.SimpleQueue()
        self._failure: list[BaseException] = []
        for _ in range(PIPE_DEPTH):
            self._free.put(memoryview(bytearray(PIPE_BUFFER)))
        self._thread = threading.Thread(target=self._run, name="fatpte-writer", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._full.put(None)
        self._thread.join()
        if self._failure and exc[0] is None:
            raise self._failure[0]

    def free(self) -> memoryview:
        buf = self._free.get()
        if self._failure:
            raise self._failure[0]
        return buf

    def give_back(self, buf: memoryview) -> None:
        self._free.put(buf)

    def write(self, buf: memoryview, n: int, src_pos: int) -> None:
        self._full.put((buf, n, src_pos + self._shift))

    def _run(self) -> None:
        while (item := self._full.get()) is not None:
            buf, n, at = item
            try:
                if not self._failure:
                    write_all(self._fd, buf[:n], at)
            except BaseException as exc:  # noqa: BLE001 - raised on the reading thread, which must not wait forever
                self._failure.append(exc)
            finally:
                self._free.put(buf)


def write_crc(chunks: Iterable[bytes | memoryview], dst_fd: int, dst_offset: int, *,
              advance: Advance | None = None) -> int:
    """Write `chunks` one after the other to `dst_fd` from `dst_offset` and return their CRC32C.

    For bytes that arrive rather than being read (a range request's body): each chunk is hashed
    while it is in the CPU cache, then written, on the calling thread. A writer thread behind it
    (as copy_range_crc has) made a 1 GiB download from loopback 1.7 to 6 times slower, not
    faster: each chunk handed between two threads waits for the GIL that the other thread's
    Python code holds, up to the 5 ms switch interval, while a 1 MiB write into the page cache
    takes 0.2 ms (docs/performance.md, remote containers). A source that receives on a thread of
    its own (aiohttp's event loop) still overlaps receiving with hashing and writing."""
    value = 0
    at = dst_offset
    for chunk in chunks:
        value = crc32c(chunk, value=value)
        view = memoryview(chunk)
        for pos in range(0, len(view), WRITE_STEP):
            write_all(dst_fd, view[pos : pos + WRITE_STEP], at + pos)
        at += len(view)
        if advance is not None:
            advance(len(view))
    return int(value)


# write_crc's writes: 16 KiB, as curl's. Writes of 64 KiB or more let the kernel put a new file's
# page cache in large folios, whose allocation varies wildly in a VM whose hypervisor takes free
# memory back (Linux 6.18, ext4, this project's CI machines): 1 GiB in 1 MiB writes took 0.2 to
# 2.6 s, in 16 KiB writes 0.29 to 0.32 s, alternating, 5 rounds each (docs/performance.md).
WRITE_STEP = 16 << 10


def write_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    """pwrite all of `data` at `offset`, however many calls it takes."""
    data = memoryview(data)
    done = 0
    while done < len(data):
        n = os.pwrite(fd, data[done:], offset + done)
        if n <= 0:
            raise OSError(errno.EIO, f"write made no progress at {offset + done:#x}")
        done += n


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
