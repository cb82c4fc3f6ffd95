"""Containers over 4 GiB, end to end, without writing 4 GiB: the big payload is a sparse file.

pack hashes the sparse payload (the page cache fills it with zeros, no disk is touched) and
copies it without writing its holes (fatpte/fileio/streams.py), so the container is sparse too. The
test checks that every offset past the 4 GiB mark survives the round trip as a 64-bit value in
the file, in the parsed entries and in extract, and that validate passes over the whole file.
The expected CRC32C of the zero payload comes from the crc32c library over a reused zero buffer,
independently of fatpte's own (threaded, page-releasing) checksum code.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

import fatpte
from fatpte.format import layout as L
from fatpte.ops.specialization import Specialization

pytestmark = pytest.mark.slow  # writes sparse files past 4 GiB: `make check` leaves it out

FOUR_GIB = 1 << 32
BIG = FOUR_GIB + (1 << 20) + 3  # past 4 GiB and not a multiple of anything the code might favour
# A sparse payload and container must not cost real disk: a generous bound for metadata and the
# small payloads; writing the zeros would take four thousand times more.
MAX_DISK = 8 << 20

def crc32c_of_zeros(count: int) -> int:
    """CRC32C of `count` zero bytes by the crc32c library itself, over one reused zero buffer:
    an oracle independent of fatpte.fileio.checksum (about half a second for 4 GiB)."""
    zeros = bytes(64 << 20)
    value = 0
    while count:
        step = min(count, len(zeros))
        value = crc32c.crc32c(memoryview(zeros)[:step], value)
        count -= step
    return value


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def _disk_bytes(path: Path) -> int:
    return os.stat(path).st_blocks * 512


@pytest.fixture(scope="module")
def big_payload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = _sparse(tmp_path_factory.mktemp("large") / "zeros.bin", BIG)
    if _disk_bytes(path) > MAX_DISK:
        pytest.skip("this file system does not support sparse files")
    return path


HEAD = b"head" * 100
TAIL = bytes(range(256)) * 17  # 4352 bytes, placed after the 4 GiB mark


def test_v2_container_over_4_gib(big_payload: Path, tmp_path: Path) -> None:
    dest = fatpte.pack(
        [Specialization("cpu", HEAD), Specialization("xnnpack", big_payload, name="big"),
         Specialization("vulkan", TAIL, name="tail", alignment=4096)],
        tmp_path / "large.nfat",
    )
    size = dest.stat().st_size
    assert size > FOUR_GIB
    assert _disk_bytes(dest) < MAX_DISK  # the zeros were not written

    with fatpte.open(dest) as c:
        assert c.size == size
        big, tail = c.entry("big"), c.entry("tail")
        assert big.size == BIG
        assert big.checksum == crc32c_of_zeros(BIG)
        assert tail.offset > FOUR_GIB
        assert tail.offset == -(-(big.offset + big.size) // 4096) * 4096
        assert tail.end == size
        assert bytes(c.payload(tail, verify=True)) == TAIL
        index = tail.index

    # The u64 fields in the file itself, read with an independent decoder.
    raw = dest.open("rb")
    with raw:
        header = raw.read(L.V2_HEADER_SIZE)
        (container_size,) = struct.unpack_from("<Q", header, L.RECORDS["v2_header"].offsets["container_size"][0])
        raw.seek(L.V2_HEADER_SIZE + index * L.V2_ENTRY_SIZE + L.RECORDS["v2_entry"].offsets["offset"][0])
        offset, entry_size = struct.unpack("<QQ", raw.read(16))
    assert container_size == size and container_size >> 32 == 1
    assert offset == tail.offset and offset >> 32 == 1
    assert entry_size == len(TAIL)

    out = fatpte.extract(dest, "tail", tmp_path / "tail.bin")
    assert out.read_bytes() == TAIL

    report = fatpte.validate(dest)
    assert report.ok, [f.describe() for f in report.findings]
    assert report.size == size


def test_v1_container_over_4_gib(big_payload: Path, tmp_path: Path) -> None:
    # Version 1 has no checksums, so nothing here reads the 4 GiB of zeros.
    dest = fatpte.pack([Specialization("xnnpack", big_payload), Specialization("vulkan", TAIL)],
                       tmp_path / "large-v1.nfat", version=1)
    assert _disk_bytes(dest) < MAX_DISK
    data_start = L.V1_HEADER_SIZE + 2 * L.V1_ENTRY_SIZE
    with fatpte.open(dest) as c:
        tail = c.entry("vulkan")
        assert tail.offset == data_start + BIG > FOUR_GIB
        assert bytes(c.payload(tail)) == TAIL
    with dest.open("rb") as raw:
        raw.seek(L.V1_HEADER_SIZE + L.V1_ENTRY_SIZE + L.RECORDS["v1_entry"].offsets["offset"][0])
        relative, size = struct.unpack("<QQ", raw.read(16))
    assert (relative, size) == (BIG, len(TAIL))
    assert fatpte.extract(dest, "vulkan", tmp_path / "tail.bin").read_bytes() == TAIL


def test_extract_of_a_payload_over_4_gib_keeps_it_sparse(big_payload: Path, tmp_path: Path) -> None:
    dest = fatpte.pack([Specialization("xnnpack", big_payload), Specialization("vulkan", TAIL)],
                       tmp_path / "large-v1.nfat", version=1)
    out = fatpte.extract(dest, "xnnpack", tmp_path / "big.bin")
    assert out.stat().st_size == BIG
    assert _disk_bytes(out) < MAX_DISK
    with out.open("rb") as f:
        f.seek(BIG - 16)
        assert f.read() == bytes(16)
