"""Shared named data: stored once whatever the keys, conflicts named, aligned, checksummed, and read
back zero-copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import layout as L
from fatpte.ops.packing import pack
from fatpte.ops.specialization import NamedData, Specialization


def test_three_specializations_share_64_mib_of_weights(tmp_path: Path) -> None:
    weights = tmp_path / "weights.bin"
    with weights.open("wb") as f:
        for _ in range(64):
            f.write(os.urandom(1 << 20))
    # One spec names the file, one a copy under another key, one the same key again.
    copy = tmp_path / "weights-copy.bin"
    shutil.copyfile(weights, copy)
    payloads = [os.urandom(3000 + i) for i in range(3)]
    specs = [
        Specialization("xnnpack", payloads[0], name="cpu", named_data={"model.weight": weights}),
        Specialization("vulkan", payloads[1], name="gpu", named_data={"model.weight_alias": copy}),
        Specialization("portable", payloads[2], name="ref", named_data={"model.weight": weights}),
    ]
    out = pack(specs, tmp_path / "fat.pte")
    size = out.stat().st_size
    assert size < 1.01 * ((64 << 20) + sum(len(p) for p in payloads))
    report = fatpte.validate(out)
    assert report.ok, report.findings
    with fatpte.open(out) as c:
        assert len(c.segments) == 1
        assert c.named_data_keys == ("model.weight", "model.weight_alias")
        assert c.manifest is not None
        assert [e.named_data for e in c.manifest.entries] == [("model.weight",), ("model.weight_alias",),
                                                              ("model.weight",)]
        a, b = c.named_data("model.weight"), c.named_data("model.weight_alias")
        assert a.readonly and len(a) == 64 << 20
        with weights.open("rb") as f:
            assert a[: 1 << 20] == f.read(1 << 20)
        assert a.obj is b.obj  # both views are windows on the container's one mapping
        del a, b


def test_one_key_with_two_contents_fails_naming_the_key_and_both_sources(tmp_path: Path) -> None:
    first = tmp_path / "w-v1.bin"
    first.write_bytes(b"\1" * 100)
    specs = [Specialization("a", b"x", named_data={"layer.0.weight": first}),
             Specialization("b", b"y", named_data={"layer.0.weight": b"\2" * 100})]
    with pytest.raises(FatpteError) as info:
        pack(specs, tmp_path / "x.pte")
    err = info.value
    assert err.code is ErrorCode.NAMED_DATA_CONFLICT
    assert "'layer.0.weight'" in err.message
    assert str(first) in err.message and "specialization[1].named_data['layer.0.weight']" in err.message
    assert not (tmp_path / "x.pte").exists()


def test_segments_are_aligned_and_checksummed(tmp_path: Path) -> None:
    out = pack([Specialization("a", b"p" * 33, named_data={
        "small": b"s" * 5, "page": NamedData(b"q" * 70, alignment=4096), "same": b"s" * 5})],
        tmp_path / "x.pte", segment_alignment=128)
    with fatpte.open(out) as c:
        assert [(s.alignment, s.size) for s in c.segments] == [(128, 5), (4096, 70)]
        assert all(s.offset % s.alignment == 0 for s in c.segments)
        assert c.named_data_keys == ("page", "same", "small")
        assert bytes(c.named_data("same")) == b"s" * 5
        seg = c.segments[1]
    data = bytearray(out.read_bytes())
    assert data[seg.offset] == ord("q")
    data[seg.offset] = ord("r")
    out.write_bytes(bytes(data))
    assert [f.code for f in fatpte.validate(out).errors] == [ErrorCode.SEGMENT_CHECKSUM_MISMATCH]


def test_bad_segment_alignment(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        pack([Specialization("a", b"1", named_data={"k": NamedData(b"1", alignment=3)})], tmp_path / "x.pte")
    assert info.value.code is ErrorCode.BAD_SEGMENT_ALIGNMENT
    with pytest.raises(FatpteError) as info:
        pack([Specialization("a", b"1", named_data={"k": b"1"})], tmp_path / "x.pte",
             segment_alignment=L.MAX_ALIGNMENT * 2)
    assert info.value.code is ErrorCode.BAD_SEGMENT_ALIGNMENT


def test_shared_named_data_listed_by_key(tmp_path: Path) -> None:
    out = pack([Specialization("a", b"1", named_data=["w"]), Specialization("b", b"2", named_data=["w", "v"])],
               tmp_path / "x.pte", named_data={"v": b"vv", "w": b"ww"})
    with fatpte.open(out) as c:
        assert c.manifest is not None
        assert c.manifest.keys == {"v": 0, "w": 1}  # segments in the order pack(named_data=) gives
        assert bytes(c.named_data("v")) == b"vv"
    with pytest.raises(FatpteError) as info:
        pack([Specialization("a", b"1", named_data=["nope"])], tmp_path / "y.pte")
    assert info.value.code is ErrorCode.NAMED_DATA_NOT_FOUND and "'nope'" in info.value.message


def test_unknown_key_on_read(tmp_path: Path) -> None:
    out = pack([Specialization("a", b"1", named_data={"k": b"v"})], tmp_path / "x.pte")
    with fatpte.open(out) as c, pytest.raises(FatpteError) as info:
        c.named_data("missing")
    assert info.value.code is ErrorCode.NAMED_DATA_NOT_FOUND and "'k'" in info.value.message


def test_named_data_not_in_v1(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        pack([Specialization("a", b"1", named_data={"k": b"v"})], tmp_path / "x.pte", version=1)
    assert info.value.code is ErrorCode.NOT_REPRESENTABLE_IN_V1


def test_same_inputs_same_bytes(tmp_path: Path) -> None:
    def build(dest: Path) -> bytes:
        return pack([Specialization("a", b"1", named_data={"b": b"2", "a": b"1"}, requires={"arch": "x86_64"}),
                     Specialization("c", b"3", named_data=["a"])], dest).read_bytes()

    assert build(tmp_path / "1.pte") == build(tmp_path / "2.pte")


def test_one_key_given_two_layouts_is_a_conflict(tmp_path: Path) -> None:
    a = NamedData(b"w" * 24, layout={"dtype": "float32", "sizes": [2, 3]})
    b = NamedData(b"w" * 24, layout={"dtype": "float32", "sizes": [3, 2]})
    same = NamedData(b"w" * 24, layout={"dtype": "float32", "sizes": [2, 3], "dim_order": [0, 1]})
    with pytest.raises(FatpteError) as info:
        pack([Specialization("a", b"1", named_data={"w": a}), Specialization("b", b"2", named_data={"w": b})],
             tmp_path / "x.nfat")
    assert info.value.code is ErrorCode.NAMED_DATA_CONFLICT
    assert "two layouts: float32[2, 3]" in info.value.message and "float32[3, 2]" in info.value.message
    # The same layout twice (an empty dim order is the contiguous one) is no conflict.
    dest = pack([Specialization("a", b"1", named_data={"w": a}), Specialization("b", b"2", named_data={"w": same})],
                tmp_path / "y.nfat")
    with fatpte.open(dest) as c:
        assert c.manifest is not None and dict(c.manifest.layouts)["w"].sizes == (2, 3)


def test_a_bad_layout_names_its_key(tmp_path: Path) -> None:
    bad = NamedData(b"w" * 4, layout={"dtype": "float32", "sizes": [1], "stride": [1]})  # type: ignore[typeddict-unknown-key]
    with pytest.raises(FatpteError) as info:
        pack([Specialization("a", b"1", named_data={"w": bad})], tmp_path / "x.nfat")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.field == "specialization[0].named_data['w'].layout.stride"
    assert "unknown key 'stride'" in info.value.message
