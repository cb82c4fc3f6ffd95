"""pack.toml: the documented example packs, relative paths, strict errors, and byte-for-byte
agreement with the Python API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.named_data import NamedData
from fatpte.packfile import pack_from_file
from fatpte.packing import Specialization, pack

DOC = Path(__file__).resolve().parent.parent / "docs" / "pack-toml.md"


def _example() -> str:
    m = re.search(r"```toml\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert m
    return m[1]


def _files(root: Path, toml: str) -> None:
    for rel in sorted(set(re.findall(r'"((?:weights|payloads)/[^"]+)"', toml))):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(rel.encode() * 50)


def test_documented_example_packs(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    toml = _example()
    _files(project, toml)
    (project / "pack.toml").write_text(toml)
    out = pack_from_file(project / "pack.toml", tmp_path / "model.pte")  # paths relative to the toml
    assert fatpte.validate(out).ok
    with fatpte.open(out) as c:
        assert [e.name for e in c.entries] == ["portable", "x86_avx2", "cuda"]
        assert c.entry("x86_avx2").alignment == 256 and c.entry("portable").priority == -1
        m = c.manifest
        assert m is not None
        cuda, avx2 = m.entry("cuda"), m.entry("x86_avx2")
        assert cuda is not None and avx2 is not None and cuda.requires.backend_abi is not None
        assert m.keys == {"model.embed.weight": 0, "model.layers.0.attn.weight": 1}
        assert c.segments[1].alignment == 4096
        assert all(e.signature == m.entries[0].signature and e.signature is not None for e in m.entries)
        assert all(e.source_digest == "sha256:9f86d081884c7d65" for e in m.entries)
        assert dict(avx2.provenance) == {"compiler": "executorch 1.0"}
        assert avx2.payload_sha256 is not None


def test_same_bytes_as_the_python_api(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"A" * 100)
    (tmp_path / "b.bin").write_bytes(b"B" * 70)
    (tmp_path / "w.bin").write_bytes(b"W" * 300)
    (tmp_path / "pack.toml").write_text("""
segment_alignment = 128
[named_data]
w = { path = "w.bin", alignment = 1024 }
alias = "w.bin"
[[specialization]]
backend_id = "xnnpack"
payload = "a.bin"
alignment = 32
named_data = ["w"]
requires = { arch = "x86_64", cpu_features = ["avx2"] }
[[specialization]]
name = "gpu"
backend_id = "vulkan"
payload = "b.bin"
priority = 3
named_data = { own = "b.bin" }
requires = { accelerators = [{ kind = "vulkan", targets = [">=1.3"] }] }
""")
    from_toml = pack_from_file(tmp_path / "pack.toml", tmp_path / "1.pte").read_bytes()
    api = pack([
        Specialization("xnnpack", tmp_path / "a.bin", alignment=32, named_data=["w"],
                       requires={"arch": ["x86_64"], "cpu_features": ["avx2"]}),
        Specialization("vulkan", tmp_path / "b.bin", name="gpu", priority=3, named_data={"own": tmp_path / "b.bin"},
                       requires={"accelerators": [{"kind": "vulkan", "targets": [">=1.3"]}]}),
    ], tmp_path / "2.pte", segment_alignment=128,
        named_data={"w": NamedData(tmp_path / "w.bin", alignment=1024), "alias": tmp_path / "w.bin"})
    assert from_toml == api.read_bytes()


@pytest.mark.parametrize(("toml", "field"), [
    ('[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\ncolour = 1\n', "specialization[0].colour"),
    ('[[specialization]]\nbackend_id = "a"\n', "specialization[0].payload"),
    ('[[specialization]]\nbackend_id = "a"\npayload = "missing.bin"\n', "specialization[0].payload"),
    ('versoin = 2\n[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\n', "versoin"),
    ('alignment = 64\n', "specialization"),
    ('[named_data]\nk = { file = "p.bin" }\n[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\n',
     "named_data.k.file"),
    ('[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\npriority = "high"\n', "specialization[0].priority"),
])
def test_bad_pack_file(tmp_path: Path, toml: str, field: str) -> None:
    (tmp_path / "p.bin").write_bytes(b"x")
    (tmp_path / "pack.toml").write_text(toml)
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "pack.toml", tmp_path / "out.pte")
    assert info.value.code is ErrorCode.BAD_PACK_FILE, info.value
    assert info.value.field == field and info.value.source == str(tmp_path / "pack.toml")
    assert not (tmp_path / "out.pte").exists()


def test_not_toml_and_bad_requirement(tmp_path: Path) -> None:
    (tmp_path / "pack.toml").write_text("[[specialization]\n")
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "pack.toml", tmp_path / "out.pte")
    assert info.value.code is ErrorCode.BAD_PACK_FILE
    (tmp_path / "p.bin").write_bytes(b"x")
    (tmp_path / "pack.toml").write_text('[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\n'
                                        'requires = { cpu_features = ["avx9"] }\n')
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "pack.toml", tmp_path / "out.pte")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.field == "specializations[0].requires.cpu_features[0]"
    assert info.value.source == str(tmp_path / "pack.toml")
