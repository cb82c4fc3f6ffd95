"""fatpte.ops.ptn_export and ptn_specialization(share_named_data=True): a .ptn's tensors moved into
the container's shared named data, and the package written whole again on extract."""

from __future__ import annotations

from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import read_ptn
from fatpte.executorch.ptn_write import strip
from fatpte.ops.ptn_export import is_shared_package, write_entry_package
from tests.paths import ET_FIXTURES

WITH_TENSORS = ["buffer.ptn", "kvcache.ptn", "mlp.ptn", "tied.ptn"]


@pytest.mark.parametrize("name", WITH_TENSORS)
def test_the_package_comes_back_byte_for_byte(tmp_path: Path, name: str) -> None:
    data = (ET_FIXTURES / name).read_bytes()
    spec = fatpte.ptn_specialization(ET_FIXTURES / name, share_named_data=True)
    package = read_ptn(data)
    program = package.member("program.ptg")
    assert program is not None
    assert spec.payload == strip(data[program.offset:program.offset + program.size])  # program.ptg only
    assert spec.provenance is not None and spec.provenance["executorch.ptn.named_data"] == "shared"
    out = fatpte.pack([spec], tmp_path / "p.nfat")
    with fatpte.open(out) as c:
        entry = c.entry("native")
        assert is_shared_package(c, entry)
        # Aliased keys (tied.ptn) share one segment: the bytes are stored once.
        assert len(c.segments) == len({(t.offset, t.size) for t in package.tensors})
        size = write_entry_package(c, entry, tmp_path / "x.ptn")
    assert (tmp_path / "x.ptn").read_bytes() == data and size == len(data)


def test_a_package_without_tensors_stays_the_file(tmp_path: Path) -> None:
    spec = fatpte.ptn_specialization(ET_FIXTURES / "add.ptn", share_named_data=True)
    assert spec.payload == str(ET_FIXTURES / "add.ptn") and spec.named_data is None
    assert spec.provenance is not None and "executorch.ptn.named_data" not in spec.provenance


def test_shared_weights_are_stored_once_across_a_package_and_a_program(tmp_path: Path) -> None:
    out = fatpte.pack([fatpte.ptn_specialization(ET_FIXTURES / "mlp.ptn", share_named_data=True),
                       fatpte.pte_specialization(ET_FIXTURES / "mlp_xnnpack.pte", share_named_data=True)],
                      tmp_path / "m.nfat")
    with fatpte.open(out) as c:
        assert len(c.named_data_keys) == 8 and len(c.segments) == 4


def test_a_damaged_segment_writes_nothing(tmp_path: Path) -> None:
    out = fatpte.pack([fatpte.ptn_specialization(ET_FIXTURES / "mlp.ptn", share_named_data=True)], tmp_path / "m.nfat")
    data = bytearray(out.read_bytes())
    with fatpte.open(out) as c:
        seg = c.segments[0]
    original = data[seg.offset]
    data[seg.offset] ^= 0xFF
    assert data[seg.offset] != original
    out.write_bytes(bytes(data))
    (tmp_path / "x.ptn").write_bytes(b"before")
    with fatpte.open(out) as c, pytest.raises(FatpteError) as info:
        write_entry_package(c, c.entry("native"), tmp_path / "x.ptn")
    assert info.value.code is ErrorCode.SEGMENT_CHECKSUM_MISMATCH
    assert (tmp_path / "x.ptn").read_bytes() == b"before"
