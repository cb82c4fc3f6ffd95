"""NFAT containers as delegate payloads inside a .pte: look inside, select, thin, rewrite segments."""

from __future__ import annotations

from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import Program, program_signature, read_program
from fatpte.executorch.rewrite import replace_segment, segment_alignment
from fatpte.ops.fat_delegate import nfat_delegates, select_nfat_delegates, thin_pte, validate_nfat_delegates
from tests.paths import ET_FIXTURES

FAT = sorted(p.name for p in ET_FIXTURES.glob("*_nfat.pte"))


def _program(name: str) -> Program:
    return read_program((ET_FIXTURES / name).read_bytes(), source=name)


def test_there_are_fat_fixtures() -> None:
    assert {n.split("_")[0] for n in FAT} == {"add", "mlp", "buffer", "kvcache"}


@pytest.mark.parametrize("name", FAT)
def test_inner_containers_validate_and_select(name: str) -> None:
    p = _program(name)
    assert [d.backend_id for d in nfat_delegates(p)] == ["NfatNativeBackend"]
    ((_, report),) = validate_nfat_delegates(p)
    assert report.ok
    ((_, v3),) = select_nfat_delegates(p, fatpte.DeviceProfile.load("x86-64-v3"))
    ((_, v2),) = select_nfat_delegates(p, fatpte.DeviceProfile.load("x86-64-v2"))
    assert v3.chosen.name == "native-avx2"
    assert v2.chosen.name == "native-generic"
    assert "avx2" in v2.explain()


@pytest.mark.parametrize("name", FAT)
@pytest.mark.parametrize(("device", "kept"), [("x86-64-v3", "native-avx2"), ("x86-64-v2", "native-generic")])
def test_thin_keeps_only_the_chosen_entry(tmp_path: Path, name: str, device: str, kept: str) -> None:
    src = ET_FIXTURES / name
    out = thin_pte(src, tmp_path / "thin.pte", device=fatpte.DeviceProfile.load(device), only_chosen=True)
    before, after = _program(name), read_program(out.read_bytes(), source="thin.pte")
    (d,) = nfat_delegates(after)
    with fatpte.Container.from_buffer(bytes(after.payload(d))) as c:
        assert [e.name for e in c.entries] == [kept]
        assert fatpte.validate_buffer(bytes(after.payload(d))).ok
    assert program_signature(after) == program_signature(before)
    # Every other segment carries the same bytes, at an offset of the same alignment.
    align = segment_alignment(before)
    assert before.header is not None and after.header is not None
    for s0, s1 in zip(before.segments, after.segments, strict=True):
        if s0.index != d.data_index:
            assert after.data[s1.offset : s1.offset + s1.size] == before.data[s0.offset : s0.offset + s0.size]
        assert (s1.offset - after.header.segment_base_offset) % align == 0
    assert after.header.segment_base_offset + (after.header.segment_data_size or 0) == len(after.data)


@pytest.mark.parametrize(("device", "kept"), [("x86-64-v3", ["native-avx2", "native-generic"]),
                                             ("x86-64-v2", ["native-generic"])])
def test_thin_keeps_the_fallback_chain(tmp_path: Path, device: str, kept: list[str]) -> None:
    out = thin_pte(ET_FIXTURES / "mlp_nfat.pte", tmp_path / "chain.pte", device=fatpte.DeviceProfile.load(device))
    (d,) = nfat_delegates(after := read_program(out.read_bytes()))
    with fatpte.Container.from_buffer(bytes(after.payload(d))) as c:
        assert sorted(e.name for e in c.entries) == sorted(kept)


def test_thin_by_name(tmp_path: Path) -> None:
    out = thin_pte(ET_FIXTURES / "mlp_nfat.pte", tmp_path / "t.pte", names=["native-generic"])
    (d,) = nfat_delegates(after := read_program(out.read_bytes()))
    with fatpte.Container.from_buffer(bytes(after.payload(d))) as c:
        assert [e.name for e in c.entries] == ["native-generic"]


def test_thin_refuses_a_program_without_a_fat_delegate(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        thin_pte(ET_FIXTURES / "mlp_native.pte", tmp_path / "t.pte", names=["x"])
    assert e.value.code is ErrorCode.ENTRY_NOT_FOUND
    assert not (tmp_path / "t.pte").exists()


@pytest.mark.parametrize("name", ["mlp_native.pte", "kvcache_xnnpack.pte", "buffer_nfat.pte"])
def test_replacing_a_segment_with_itself_changes_nothing(name: str) -> None:
    data = (ET_FIXTURES / name).read_bytes()
    p = read_program(data)
    for seg in p.segments:
        assert replace_segment(data, seg.index, data[seg.offset : seg.offset + seg.size]) == data


@pytest.mark.parametrize("grow", [1, 127, 128, 1000])
def test_replacing_a_segment_moves_the_ones_after_it(grow: int) -> None:
    data = (ET_FIXTURES / "mlp_native.pte").read_bytes()
    p = read_program(data)
    (d,) = p.methods[0].delegates
    new = bytes(p.payload(d)) + b"\xaa" * grow
    q = read_program(replace_segment(data, d.data_index, new))
    assert bytes(q.payload(q.methods[0].delegates[0])) == new
    assert {n.key: bytes(q.data[n.offset : n.offset + n.size]) for n in q.named_data} == {
        n.key: bytes(p.data[n.offset : n.offset + n.size]) for n in p.named_data}


def test_replacing_a_missing_segment() -> None:
    data = (ET_FIXTURES / "mlp_native.pte").read_bytes()
    with pytest.raises(FatpteError) as e:
        replace_segment(data, 99, b"")
    assert e.value.code is ErrorCode.INVALID_ARGUMENT
