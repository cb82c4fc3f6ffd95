"""fatpte.fileio.checksum: chunked CRC32C equals the one-shot value, ranges and continuation, and the
release of mapped pages never changes a result or a caller's private changes."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import crc32c as reference
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fatpte.fileio import checksum
from fatpte.fileio.checksum import crc32c


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=3000), st.data())
def test_ranges_and_continuation(data: bytes, draw: st.DataObject) -> None:
    start = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(start, len(data)))
    assert crc32c(data, start, end) == reference.crc32c(data[start:end])
    assert crc32c(data, end, value=crc32c(data, 0, end)) == reference.crc32c(data)


def test_chunks_and_release_on_a_mapping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checksum, "CHUNK", 4096 * 3 + 5)  # chunks that straddle pages
    monkeypatch.setattr(checksum, "RELEASE", 4096 * 4)
    data = os.urandom(200_003)
    (tmp_path / "f").write_bytes(data)
    with open(tmp_path / "f", "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        for start, end in [(0, len(data)), (1, len(data) - 7), (4095, 150_000)]:
            assert crc32c(m, start, end) == reference.crc32c(data[start:end])
        assert m[:] == data  # pages released are read back from the page cache


def test_release_never_discards_private_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checksum, "RELEASE", 4096)
    data = bytearray(os.urandom(100_000))
    (tmp_path / "f").write_bytes(data)
    with open(tmp_path / "f", "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as m:
        m[50_000] ^= 0xFF  # a copy-on-write change that exists only in this mapping
        data[50_000] ^= 0xFF
        assert crc32c(m) == reference.crc32c(bytes(data))
        assert m[50_000] == data[50_000]


def test_import_does_not_pay_for_package_metadata() -> None:
    # The crc32c package's __init__ calls importlib.metadata.version(); fatpte loads the compiled
    # function directly so that `fatpte info` does not pay 25-30 ms for it.
    code = "import sys, fatpte.fileio.checksum as c; assert c.crc32c(b'123456789') == 0xE3069283; " \
           "print('importlib.metadata' in sys.modules, 'crc32c' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_crc32c_imported_later_still_works() -> None:
    code = "import fatpte.fileio.checksum as c, crc32c; assert crc32c.crc32c(b'123456789') == c.crc32c(b'123456789')"
    subprocess.run([sys.executable, "-c", code], check=True)


@settings(max_examples=150)
@given(st.binary(max_size=64), st.integers(min_value=0, max_value=1 << 40))
def test_extend_zeros_is_the_crc_of_appended_zero_bytes(data: bytes, length: int) -> None:
    small = length % 5000  # checked byte for byte; the large length only through its structure
    assert checksum.extend_zeros(reference.crc32c(data), small) == reference.crc32c(data + bytes(small))
    # Appending a+b zeros is appending a zeros, then b zeros.
    a, b = length // 3, length - length // 3
    start = reference.crc32c(data)
    assert checksum.extend_zeros(start, length) == checksum.extend_zeros(checksum.extend_zeros(start, a), b)
