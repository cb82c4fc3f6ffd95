"""fatpte.extract: the raw payload, verified before writing, streamed, atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.ops.specialization import Specialization


@pytest.fixture
def container(tmp_path: Path) -> Path:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom((2 << 20) + 3))
    return fatpte.pack(
        [Specialization("portable", b"tiny"), Specialization("xnnpack", big, name="xnnpack-fp32"),
         Specialization("xnnpack", b"int8", name="xnnpack-int8")],
        tmp_path / "c.nfat",
    )


def test_extract_by_name_is_byte_identical(container: Path, tmp_path: Path) -> None:
    out = fatpte.extract(container, "xnnpack-fp32", tmp_path / "out.bin")
    assert out.read_bytes() == (tmp_path / "big.bin").read_bytes()


def test_extract_by_unique_backend_id(container: Path, tmp_path: Path) -> None:
    assert fatpte.extract(container, "portable", tmp_path / "p.bin").read_bytes() == b"tiny"


def test_ambiguous_backend_id_writes_nothing(container: Path, tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        fatpte.extract(container, "xnnpack", tmp_path / "x.bin")
    assert info.value.code is ErrorCode.AMBIGUOUS_ENTRY
    assert not (tmp_path / "x.bin").exists()


def test_corrupt_payload_is_refused_and_dest_untouched(container: Path, tmp_path: Path) -> None:
    with fatpte.open(container) as c:
        e = c.entry("xnnpack-int8")
    data = bytearray(container.read_bytes())
    data[e.offset] ^= 0xFF
    bad = tmp_path / "bad.nfat"
    bad.write_bytes(bytes(data))
    dest = tmp_path / "keep.bin"
    dest.write_bytes(b"keep")
    with pytest.raises(FatpteError) as info:
        fatpte.extract(bad, "xnnpack-int8", dest)
    assert info.value.code is ErrorCode.PAYLOAD_CHECKSUM_MISMATCH
    assert dest.read_bytes() == b"keep"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_extract_from_v1(tmp_path: Path) -> None:
    src = fatpte.pack([Specialization("a", b"first"), Specialization("b", b"second")], tmp_path / "v1", version=1)
    assert fatpte.extract(src, "b", tmp_path / "b.bin").read_bytes() == b"second"


def test_missing_destination_folder_is_an_io_error(container: Path, tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        fatpte.extract(container, "portable", tmp_path / "no" / "such" / "dir" / "x.bin")
    assert info.value.code is ErrorCode.IO_ERROR


def test_extract_entry_copies_from_an_open_container_or_a_buffer(tmp_path: Path) -> None:
    from fatpte.container.reader import Container
    from fatpte.ops.extraction import extract_entry

    path = fatpte.pack([fatpte.Specialization("a", b"alpha"), fatpte.Specialization("b", b"beta" * 100)],
                       tmp_path / "c.nfat")
    with fatpte.open(path) as c:
        extract_entry(c, c.find("b"), tmp_path / "b.bin")
    assert (tmp_path / "b.bin").read_bytes() == b"beta" * 100
    # A container over bytes in memory has no descriptor: its bytes are streamed and hashed.
    data = bytearray(path.read_bytes())
    buffered = Container.from_buffer(bytes(data), source="mem")
    extract_entry(buffered, buffered.find("a"), tmp_path / "a.bin")
    assert (tmp_path / "a.bin").read_bytes() == b"alpha"
    entry = buffered.find("b")
    assert data[entry.offset] == ord("b")
    data[entry.offset] ^= 0xFF
    damaged = Container.from_buffer(bytes(data), source="mem")
    with pytest.raises(fatpte.FatpteError) as info:
        extract_entry(damaged, damaged.find("b"), tmp_path / "b2.bin")
    assert info.value.code is fatpte.ErrorCode.PAYLOAD_CHECKSUM_MISMATCH and not (tmp_path / "b2.bin").exists()
