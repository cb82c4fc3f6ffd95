"""Thin containers: only the chosen entries and the named data they use, valid, with payload and
segment bytes, checksums and digests identical to the originals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import fatpte
from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, FatpteError
from fatpte.ops.packing import pack
from fatpte.ops.specialization import NamedData, Specialization
from fatpte.ops.thinning import thin, thinned_size

SIG = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": ["n", 4]}],
                    "outputs": [{"dtype": "float32", "shape": ["n", 4]}]}]}


@pytest.fixture()
def fat(tmp_path: Path) -> Path:
    shared = tmp_path / "shared.bin"
    shared.write_bytes(os.urandom(5000))
    return pack([
        Specialization("portable", os.urandom(700), priority=-1, named_data={"w.shared": shared},
                       signature=SIG, source_digest="sha256:abcd"),
        Specialization("xnnpack", os.urandom(900), name="x86_avx2", alignment=256, payload_sha256=True,
                       requires={"arch": "x86_64", "cpu_features": ["avx2", "fma"]}, signature=SIG,
                       named_data={"w.shared": shared, "w.avx2": NamedData(os.urandom(333), alignment=4096),
                                   "w.alias": shared},
                       source_digest="sha256:abcd", provenance={"compiler": "x 1.2"}),
        Specialization("xnnpack", os.urandom(800), name="x86_avx512", signature=SIG,
                       requires={"arch": "x86_64", "cpu_features": ["avx512f", "avx512bw", "avx512vl"]},
                       named_data={"w.avx512": os.urandom(444), "w.shared": shared}, source_digest="sha256:abcd"),
    ], tmp_path / "fat.pte")


def test_thin_for_a_device_keeps_the_fallback_chain(fat: Path, tmp_path: Path) -> None:
    # x86-64-v3 gets x86_avx2 and falls back to portable; x86_avx512 is not eligible there.
    out = thin(fat, tmp_path / "chain.pte", device=DeviceProfile.load("x86-64-v3"))
    assert fatpte.validate(out).ok
    with fatpte.open(out) as c:
        assert [e.name for e in c.entries] == ["portable", "x86_avx2"]
        assert c.named_data_keys == ("w.alias", "w.avx2", "w.shared")
        chain = fatpte.select(c, DeviceProfile.load("x86-64-v3")).ranked
        assert [v.entry.name for v in chain] == ["x86_avx2", "portable"]  # ranked as in the original
    with fatpte.open(fat) as big:
        assert [v.entry.name for v in fatpte.select(big, DeviceProfile.load("x86-64-v3")).ranked] == [
            "x86_avx2", "portable"]


def test_thin_for_a_device_only_chosen(fat: Path, tmp_path: Path) -> None:
    out = thin(fat, tmp_path / "thin.pte", device=DeviceProfile.load("x86-64-v3"), only_chosen=True)
    report = fatpte.validate(out)
    assert report.ok, report.findings
    with fatpte.open(fat) as big, fatpte.open(out) as small:
        assert [e.name for e in small.entries] == ["x86_avx2"]
        old, new = big.entry("x86_avx2"), small.entries[0]
        assert bytes(small.payload(new)) == bytes(big.payload(old))
        assert (new.checksum, new.alignment, new.priority, new.payload_kind) == (
            old.checksum, old.alignment, old.priority, old.payload_kind)
        assert new.offset % new.alignment == 0
        assert small.named_data_keys == ("w.alias", "w.avx2", "w.shared")
        for key in small.named_data_keys:
            assert bytes(small.named_data(key)) == bytes(big.named_data(key))
        assert len(small.segments) == 2  # w.shared and w.alias are one segment
        assert big.manifest is not None and small.manifest is not None
        assert small.manifest.entries == (big.manifest.entry("x86_avx2"),)  # digests carried over
        assert sorted(s.checksum for s in small.segments) == sorted(
            big.segments[i].checksum for i in {big.manifest.keys[k] for k in small.named_data_keys})
        assert [s.alignment for s in small.segments] == [64, 4096]
        assert small.size < big.size


def test_thin_by_names_keeps_table_order(fat: Path, tmp_path: Path) -> None:
    out = thin(fat, tmp_path / "two.pte", names=["x86_avx512", "portable"])
    assert fatpte.validate(out).ok
    with fatpte.open(out) as c:
        assert [e.name for e in c.entries] == ["portable", "x86_avx512"]
        assert c.named_data_keys == ("w.avx512", "w.shared")


def test_thin_device_among_names(fat: Path, tmp_path: Path) -> None:
    v4 = DeviceProfile.load("x86-64-v4")
    out = thin(fat, tmp_path / "t.pte", device=v4, names=["portable", "x86_avx2"])
    with fatpte.open(out) as c:
        assert [e.name for e in c.entries] == ["portable", "x86_avx2"]
    out = thin(fat, tmp_path / "t1.pte", device=v4, names=["portable", "x86_avx2"], only_chosen=True)
    with fatpte.open(out) as c:
        assert [e.name for e in c.entries] == ["x86_avx2"]


def test_thin_errors(fat: Path, tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        thin(fat, tmp_path / "t.pte")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(FatpteError) as info:
        thin(fat, tmp_path / "t.pte", names=["nope"])
    assert info.value.code is ErrorCode.ENTRY_NOT_FOUND
    dev = DeviceProfile.load("apple-m1")
    with pytest.raises(FatpteError) as info:
        thin(fat, tmp_path / "t.pte", device=dev, exclude=["portable"])
    assert info.value.code is ErrorCode.NO_SPECIALIZATION_FITS
    assert not (tmp_path / "t.pte").exists()


def test_thin_v1_and_manifestless(tmp_path: Path) -> None:
    for version in (1, 2):
        src = pack([Specialization("a", b"A" * 10), Specialization("b", b"B" * 20)], tmp_path / f"{version}.pte",
                   version=version)
        out = thin(src, tmp_path / f"{version}-thin.pte", names=["b"])
        assert fatpte.validate(out).ok
        with fatpte.open(out) as c:
            assert c.version == version and [e.name for e in c.entries] == ["b"]
            assert bytes(c.payload("b")) == b"B" * 20


def test_thin_keeps_shared_payload_regions(tmp_path: Path) -> None:
    src = pack([Specialization("a", b"same" * 10, name="one"), Specialization("a", b"same" * 10, name="two"),
                Specialization("c", b"other")], tmp_path / "s.pte")
    out = thin(src, tmp_path / "t.pte", names=["one", "two"])
    assert fatpte.validate(out).ok
    with fatpte.open(out) as c:
        assert c.entries[0].offset == c.entries[1].offset


def test_thinned_size_is_the_size_thin_writes(fat: Path, tmp_path: Path) -> None:
    v1 = pack([Specialization("a", b"A" * 10), Specialization("b", b"B" * 20)], tmp_path / "v1.pte", version=1)
    shared = pack([Specialization("a", b"same" * 10, name="one"), Specialization("a", b"same" * 10, name="two"),
                   Specialization("c", b"other")], tmp_path / "s.pte")
    for src in (fat, v1, shared):
        with fatpte.open(src) as c:
            names = [e.name for e in c.entries]
        choices = [[n] for n in names] + [names, names[1:]]
        for keep in choices:
            out = thin(src, tmp_path / "t.pte", names=keep)
            with fatpte.open(src) as c:
                assert thinned_size(c, keep) == out.stat().st_size, (src.name, keep)


def test_thin_keeps_the_layouts_and_backends_of_what_it_keeps(tmp_path: Path) -> None:
    layout = {"dtype": "int32", "sizes": [4]}
    src = fatpte.pack([
        fatpte.Specialization("xnnpack", b"x" * 40, named_data=["w", "v"], executorch_backends=["XnnpackBackend"]),
        fatpte.Specialization("portable", b"p" * 40, named_data=["v"], executorch_backends=[]),
    ], tmp_path / "src.nfat", named_data={"w": fatpte.NamedData(b"w" * 16, layout=layout),
                                         "v": fatpte.NamedData(b"v" * 8, layout={"dtype": "int64", "sizes": []})})
    kept = fatpte.thin(src, tmp_path / "xnn.nfat", names=["xnnpack"])
    assert fatpte.validate(kept).ok
    with fatpte.open(kept) as c:
        assert c.manifest is not None and c.manifest.revision == 2
        assert [k for k, _ in c.manifest.layouts] == ["v", "w"]
        assert c.manifest.entries[0].executorch_backends == ("XnnpackBackend",)
    portable = fatpte.thin(src, tmp_path / "p.nfat", names=["portable"])
    with fatpte.open(portable) as c:
        assert c.manifest is not None and [k for k, _ in c.manifest.layouts] == ["v"]
