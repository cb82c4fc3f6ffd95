"""fatpte/fileio/mapping.py: which buffers may give pages back, and that giving them back drops
them from the resident set and keeps every byte readable."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from fatpte.fileio.mapping import mapped_file, releasable, release_pages


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * mmap.PAGESIZE


def test_only_read_only_mappings_are_releasable(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 8192)
    with mapped_file(path) as (buf, _):
        assert releasable(buf)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as private:
        assert not releasable(private)  # MADV_DONTNEED would throw away its private changes
    assert not releasable(b"bytes") and not releasable(bytearray(10)) and not releasable(memoryview(b"v"))


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
def test_released_pages_leave_the_resident_set_and_read_the_same(tmp_path: Path) -> None:
    size = 64 << 20
    path = tmp_path / "big"
    with path.open("wb") as f:
        for i in range(size >> 20):
            f.write(bytes([i]) * (1 << 20))
    with mapped_file(path) as (buf, _):
        view = memoryview(buf)
        before = _resident_bytes()
        checksum = sum(view[i] for i in range(0, size, mmap.PAGESIZE))  # touches every page
        touched = _resident_bytes()
        assert touched - before > size // 2
        release_pages(buf, 1, size)  # an unaligned start is rounded down to its page
        assert touched - _resident_bytes() > size // 2
        assert sum(view[i] for i in range(0, size, mmap.PAGESIZE)) == checksum  # read again from the page cache
        release_pages(buf, 4096, 4096)  # an empty range is nothing to do
        view.release()
