"""entry_data.entry_data_file: the .ptd an extracted entry needs, from the container's shared named
data, checked with our own reader over the committed fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import read_program, read_ptd
from fatpte.executorch.ptd_write import ptd_bytes
from fatpte.ops.ptd_export import entry_data_file
from fatpte.ops.pte_specialize import pte_specialization
from tests.paths import ET_FIXTURES

AVX2 = {"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}
EXTERNAL_PTD = ET_FIXTURES / "mlp_portable_external._default_external_constant.ptd"


def _shared(tmp_path: Path, model: str) -> Path:
    return fatpte.pack(
        [pte_specialization(ET_FIXTURES / f"{model}_portable.pte"),
         pte_specialization(ET_FIXTURES / f"{model}_xnnpack.pte", priority=10, requires=AVX2, share_named_data=True),
         pte_specialization(ET_FIXTURES / f"{model}_native.pte", name="native", share_named_data=True)],
        tmp_path / f"{model}.nfat")


@pytest.mark.parametrize(("model", "entry"), [("mlp", "xnnpack"), ("mlp", "native"), ("kvcache", "xnnpack"),
                                               ("kvcache", "native"), ("buffer", "native")])
def test_the_ptd_gives_back_the_programs_named_data(tmp_path: Path, model: str, entry: str) -> None:
    dest = _shared(tmp_path, model)
    assert fatpte.validate(dest).ok
    original = (ET_FIXTURES / f"{model}_{entry}.pte").read_bytes()
    want = {n.key: original[n.offset : n.offset + n.size] for n in read_program(original).named_data}
    assert want
    written = entry_data_file(dest, entry, tmp_path / "m.ptd")
    assert written.path == tmp_path / "m.ptd" and written.entry == entry and written.keys == tuple(want)
    data = written.path.read_bytes()
    assert written.size == len(data)
    ptd = read_ptd(data, source="m.ptd")
    assert {t.key: data[t.offset : t.offset + t.size] for t in ptd.named_data} == want
    assert all(t.dtype is None for t in ptd.named_data)  # backend constants: raw bytes, as in the program
    program = fatpte.extract(dest, entry, tmp_path / "m.pte").read_bytes()
    assert read_program(program).named_data == ()
    # Streamed from the container, the file is byte for byte what the in-memory writer makes.
    assert data == ptd_bytes(want)


def test_external_weights_get_the_layout_the_program_expects(tmp_path: Path) -> None:
    dest = fatpte.pack([pte_specialization(ET_FIXTURES / "mlp_portable_external.pte", data_files=[EXTERNAL_PTD])],
                       tmp_path / "ext.nfat")
    written = entry_data_file(dest, "portable", tmp_path / "w.ptd")
    assert written.path is not None
    src = EXTERNAL_PTD.read_bytes()
    theirs = read_ptd(src)
    data = written.path.read_bytes()
    ours = read_ptd(data)
    assert sorted((t.key, t.dtype, t.shape, src[t.offset : t.offset + t.size]) for t in theirs.named_data) == sorted(
        (t.key, t.dtype, t.shape, data[t.offset : t.offset + t.size]) for t in ours.named_data)


def test_an_entry_without_named_data_writes_nothing(tmp_path: Path) -> None:
    dest = _shared(tmp_path, "mlp")
    written = entry_data_file(dest, "portable", tmp_path / "p.ptd")
    assert (written.path, written.keys, written.size) == (None, (), 0)
    assert not (tmp_path / "p.ptd").exists()


def test_a_damaged_segment_writes_no_ptd(tmp_path: Path) -> None:
    dest = _shared(tmp_path, "mlp")
    data = bytearray(dest.read_bytes())
    with fatpte.open(dest) as c:
        seg = c.segments[0]
    data[seg.offset] ^= 0xFF
    dest.write_bytes(bytes(data))
    with pytest.raises(FatpteError) as e:
        entry_data_file(dest, "xnnpack", tmp_path / "m.ptd")
    assert e.value.code is ErrorCode.SEGMENT_CHECKSUM_MISMATCH
    assert e.value.field == "segments[0].checksum"
    assert not (tmp_path / "m.ptd").exists()


def test_unknown_entry(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        entry_data_file(_shared(tmp_path, "mlp"), "cuda", tmp_path / "m.ptd")
    assert e.value.code is ErrorCode.ENTRY_NOT_FOUND
