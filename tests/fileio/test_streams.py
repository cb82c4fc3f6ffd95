"""fatpte.fileio.streams: kernel-side range copies, their fallback, holes, and the concurrent checksum."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import crc32c
import pytest

from fatpte.fileio import streams
from fatpte.fileio.streams import copy_range, copy_range_crc

MiB = 1 << 20


def _fd(path: Path, flags: int = os.O_RDONLY) -> int:
    return os.open(path, flags | os.O_CREAT if flags != os.O_RDONLY else flags, 0o644)


def _sparse_source(path: Path) -> bytes:
    """A file of 8 MiB: data, a 3 MiB hole, data, a trailing 2 MiB hole. Returns its bytes."""
    head, mid = os.urandom(MiB + 17), os.urandom(100)
    with open(path, "wb") as f:
        f.write(head)
        f.seek(MiB + 17 + 3 * MiB)
        f.write(mid)
        f.truncate(8 * MiB)
    return path.read_bytes()


@pytest.mark.parametrize("src_offset,count", [(0, 8 * MiB), (5, 8 * MiB - 5), (MiB, 4 * MiB), (2 * MiB, MiB)])
def test_copy_past_end_equals_source_and_skips_holes(tmp_path: Path, src_offset: int, count: int) -> None:
    data = _sparse_source(tmp_path / "src")
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        os.pwrite(dst, b"prefix", 0)
        copy_range(src, src_offset, dst, 64, count)
    finally:
        os.close(src)
        os.close(dst)
    out = (tmp_path / "dst").read_bytes()
    assert out[:6] == b"prefix"
    assert out[64:] == data[src_offset : src_offset + count]
    assert len(out) == 64 + count  # a trailing hole still sets the length


def test_copy_of_a_hole_writes_no_blocks(tmp_path: Path) -> None:
    with open(tmp_path / "src", "wb") as f:
        f.truncate(256 * MiB)
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        if os.fstat(src).st_blocks * 512 >= MiB:
            pytest.skip("this file system does not keep sparse files sparse")
        copy_range(src, 0, dst, 0, 256 * MiB)
    finally:
        os.close(src)
        os.close(dst)
    st = os.stat(tmp_path / "dst")
    assert st.st_size == 256 * MiB
    assert st.st_blocks * 512 < MiB


def test_copy_over_existing_bytes_writes_the_zeros_of_holes(tmp_path: Path) -> None:
    data = _sparse_source(tmp_path / "src")
    (tmp_path / "dst").write_bytes(b"\xff" * (9 * MiB))
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        copy_range(src, 0, dst, 0, 8 * MiB)
    finally:
        os.close(src)
        os.close(dst)
    out = (tmp_path / "dst").read_bytes()
    assert out[: 8 * MiB] == data  # the holes overwrote the 0xff bytes with zeros
    assert out[8 * MiB :] == b"\xff" * MiB


def test_fallback_when_copy_file_range_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = os.urandom(3 * MiB + 1)
    (tmp_path / "src").write_bytes(data)
    calls = []

    def refuse(*args: int) -> int:
        calls.append(args)
        raise OSError(errno.EXDEV, "cross-device")

    monkeypatch.setattr(os, "copy_file_range", refuse)
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        copy_range(src, 1, dst, 0, len(data) - 1)
    finally:
        os.close(src)
        os.close(dst)
    assert calls
    assert (tmp_path / "dst").read_bytes() == data[1:]


def test_short_source_raises(tmp_path: Path) -> None:
    (tmp_path / "src").write_bytes(b"abc")
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        os.pwrite(dst, b"x" * 16, 0)  # not past the end: the plain copy path
        with pytest.raises(OSError):
            copy_range(src, 0, dst, 0, 10)
    finally:
        os.close(src)
        os.close(dst)


@pytest.mark.parametrize("src_offset,count,dst_offset", [
    (10, 8 * MiB - 20, 0), (0, 8 * MiB, 64), (MiB, 4 * MiB, 0), (2 * MiB, MiB, 3), (5, 1, 0), (0, 0, 0),
])
def test_copy_range_crc_returns_the_checksum_of_the_bytes(
    tmp_path: Path, src_offset: int, count: int, dst_offset: int
) -> None:
    data = _sparse_source(tmp_path / "src")
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    seen: list[int] = []
    try:
        os.pwrite(dst, b"x" * dst_offset, 0)
        value = copy_range_crc(src, src_offset, dst, dst_offset, count, advance=seen.append)
    finally:
        os.close(src)
        os.close(dst)
    part = data[src_offset : src_offset + count]
    assert value == crc32c.crc32c(part)
    assert (tmp_path / "dst").read_bytes() == b"x" * dst_offset + part
    assert sum(seen) == count


def test_copy_range_crc_skips_holes_and_hashes_them_as_zeros(tmp_path: Path) -> None:
    data = _sparse_source(tmp_path / "src")
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        value = copy_range_crc(src, 0, dst, 0, len(data))
        allocated = os.fstat(dst).st_blocks * 512
    finally:
        os.close(src)
        os.close(dst)
    assert value == crc32c.crc32c(data)
    assert (tmp_path / "dst").read_bytes() == data
    if (tmp_path / "src").stat().st_blocks * 512 < len(data):  # the file system keeps holes
        assert allocated < 4 * MiB  # the 3 MiB and 2 MiB holes were not written


def test_copy_range_crc_inside_the_destination_overwrites(tmp_path: Path) -> None:
    data = os.urandom(3 * MiB + 5)
    (tmp_path / "src").write_bytes(data)
    (tmp_path / "dst").write_bytes(b"\xff" * (4 * MiB))
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        value = copy_range_crc(src, 0, dst, 100, len(data))
    finally:
        os.close(src)
        os.close(dst)
    assert value == crc32c.crc32c(data)
    out = (tmp_path / "dst").read_bytes()
    assert out[:100] == b"\xff" * 100 and out[100 : 100 + len(data)] == data
    assert out[100 + len(data) :] == b"\xff" * (4 * MiB - 100 - len(data))


def test_copy_range_crc_reraises_the_hashing_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "src").write_bytes(b"abcdef")

    def broken(*args: object, **kwargs: object) -> int:
        raise ValueError("boom")

    monkeypatch.setattr(streams, "crc32c", broken)
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        with pytest.raises(ValueError, match="boom"):
            copy_range_crc(src, 0, dst, 0, 6)
    finally:
        os.close(src)
        os.close(dst)


def test_copy_range_crc_reraises_the_write_error(tmp_path: Path) -> None:
    (tmp_path / "src").write_bytes(os.urandom(3 * MiB))
    src = _fd(tmp_path / "src")
    dst = os.open(tmp_path / "src", os.O_RDONLY)  # not open for writing: pwrite fails with EBADF
    try:
        with pytest.raises(OSError) as info:
            copy_range_crc(src, 0, dst, 0, 3 * MiB)
    finally:
        os.close(src)
        os.close(dst)
    assert info.value.errno == errno.EBADF


def test_copy_range_crc_of_a_source_shorter_than_claimed_is_an_io_error(tmp_path: Path) -> None:
    (tmp_path / "src").write_bytes(b"abc")
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    os.pwrite(dst, b"x" * 16, 0)  # inside the destination: no hole probing, the read comes up short
    try:
        with pytest.raises(OSError) as info:
            copy_range_crc(src, 0, dst, 0, 10)
    finally:
        os.close(src)
        os.close(dst)
    assert info.value.errno == errno.EIO


def test_copy_range_crc_stops_on_any_writer_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not only OSError: whatever stops the writing thread reaches the caller, which never waits
    # for a buffer that will not come back.
    (tmp_path / "src").write_bytes(os.urandom(12 * MiB))
    calls = 0

    def failing(fd: int, data: memoryview, offset: int) -> None:
        nonlocal calls
        calls += 1
        raise MemoryError("writer broke")

    monkeypatch.setattr(streams, "write_all", failing)
    src, dst = _fd(tmp_path / "src"), _fd(tmp_path / "dst", os.O_RDWR)
    try:
        with pytest.raises(MemoryError, match="writer broke"):
            copy_range_crc(src, 0, dst, 0, 12 * MiB)
    finally:
        os.close(src)
        os.close(dst)
    assert calls == 1  # after the first failure nothing more is written


def test_write_crc_writes_every_chunk_in_small_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks as a range request's body gives them (any size, bytes or views), written from an
    offset in writes of at most WRITE_STEP bytes, with the CRC32C of everything written."""
    chunks = [os.urandom(MiB + 7), b"", os.urandom(streams.WRITE_STEP - 1), memoryview(os.urandom(3 * MiB))[5:]]
    sizes: list[int] = []
    real = os.pwrite

    def pwrite(fd: int, data: bytes | memoryview, offset: int) -> int:
        sizes.append(len(data))
        return real(fd, data, offset)

    monkeypatch.setattr(streams.os, "pwrite", pwrite)
    done: list[int] = []
    fd = _fd(tmp_path / "out", os.O_WRONLY)
    try:
        value = streams.write_crc(iter(chunks), fd, 100, advance=done.append)
    finally:
        os.close(fd)
    data = b"".join(bytes(c) for c in chunks)
    assert (tmp_path / "out").read_bytes() == b"\0" * 100 + data
    assert value == crc32c.crc32c(data)
    assert sum(done) == len(data) and max(sizes) <= streams.WRITE_STEP
