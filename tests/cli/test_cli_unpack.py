"""`fatpte unpack` then `fatpte pack --from`: the same bytes, with named data, manifests and v1;
a warning for containers fatpte would lay out differently; an output that appears whole or not
at all."""

from __future__ import annotations

import json
import tempfile
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

import fatpte
from fatpte.cli.main import main
from fatpte.manifest.model import TensorLayout
from fatpte.ops.packfile import pack_from_file
from fatpte.ops.unpack import toml_key, toml_value, unpack_to_dir
from tests.strategies import reference_v1, v1_specializations, v2_specializations

SIG = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, "n"]}],
                    "outputs": [{"dtype": "float32", "shape": [1, "n"]}],
                    "buffers": [{"name": "kv.cache", "dtype": "float16", "shape": [2, 4]}]}]}


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def roundtrip(src: Path, tmp_path: Path) -> Path:
    out_dir = tmp_path / "unpacked"
    code, _, stderr = run("unpack", src, "-o", out_dir)
    assert code == 0, stderr
    assert stderr == ""  # no "not reproducible" warning
    repacked = tmp_path / "repacked.nfat"
    code, _, stderr = run("pack", "-o", repacked, "--from", out_dir / "pack.toml")
    assert code == 0, stderr
    return repacked


def test_named_data_and_manifest_round_trip_byte_for_byte(tmp_path: Path) -> None:
    weights = bytes(range(256)) * 40
    src = fatpte.pack([
        fatpte.Specialization("portable", b"\0\0\0\0PTG1portable", priority=-1, signature=SIG,
                              named_data={"layers.0.weight": weights, "tied.weight": weights},
                              provenance={"exporter": "test", "quote": 'a "b" \\ c\x7f'}),
        fatpte.Specialization("xnnpack", b"x" * 300, name="x86_avx2", alignment=4096, signature=SIG,
                              requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"],
                                        "backend_abi": {"min": 2, "max": 5}},
                              named_data=["layers.0.weight", "bias"], payload_sha256=True,
                              source_digest="sha256:" + "0f" * 32),
        fatpte.Specialization("cuda", b"c" * 70, signature=SIG, named_data=["tied.weight"],
                              requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80", "compute_90"],
                                                          "min_memory_bytes": 1 << 30}],
                                        "min_memory_bytes": 8 << 30}),
        fatpte.Specialization("cuda", b"c" * 70, name="cuda-copy", signature=SIG),  # shares bytes with cuda
    ], tmp_path / "src.nfat", named_data={"bias": fatpte.NamedData(b"B" * 10, 256)})
    with fatpte.open(src) as c:
        assert len(c.segments) == 2 and c.manifest is not None  # the aliases share a segment
    repacked = roundtrip(src, tmp_path)
    assert repacked.read_bytes() == src.read_bytes()
    folder = tmp_path / "unpacked"
    assert sorted(p.name for p in (folder / "payloads").iterdir()) == [
        "cuda.bin", "portable.bin", "x86_avx2.bin"]
    assert sorted(p.name for p in (folder / "named_data").iterdir()) == ["bias.bin", "layers.0.weight.bin"]
    assert (folder / "named_data" / "layers.0.weight.bin").read_bytes() == weights


def test_revision_2_fields_round_trip_byte_for_byte(tmp_path: Path) -> None:
    # Layouts and ExecuTorch backends are written to pack.toml and packed again unchanged.
    layout = {"dtype": "bfloat16", "sizes": [4, 2, 3], "dim_order": [0, 2, 1]}
    src = fatpte.pack([
        fatpte.Specialization("xnnpack", b"x" * 64, named_data=["w"], executorch_backends=["XnnpackBackend"]),
        fatpte.Specialization("portable", b"p" * 64, named_data=["w", "raw"], executorch_backends=[]),
        fatpte.Specialization("opaque", b"o" * 64),
    ], tmp_path / "src.nfat", named_data={"w": fatpte.NamedData(b"w" * 48, layout=layout), "raw": b"r" * 7})
    with fatpte.open(src) as c:
        assert c.manifest is not None and c.manifest.revision == 2
        assert c.manifest.layout("w") == TensorLayout("bfloat16", (4, 2, 3), (0, 2, 1))
        assert c.manifest.layout("raw") is None
    repacked = roundtrip(src, tmp_path)
    assert repacked.read_bytes() == src.read_bytes()
    text = (tmp_path / "unpacked" / "pack.toml").read_text()
    assert 'executorch_backends = ["XnnpackBackend"]' in text and "executorch_backends = []" in text
    assert 'layout = {dtype = "bfloat16", sizes = [4, 2, 3], dim_order = [0, 2, 1]}' in text


@pytest.mark.parametrize("version", [1, 2])
def test_core_containers_round_trip(tmp_path: Path, version: int) -> None:
    specs = [fatpte.Specialization("a", b"alpha"), fatpte.Specialization("b", b""),
             fatpte.Specialization("c", bytes(range(200)))]
    src = fatpte.pack(specs, tmp_path / "src.nfat", version=version)
    assert roundtrip(src, tmp_path).read_bytes() == src.read_bytes()


def test_unusual_names_get_safe_distinct_file_names(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a/b", b"1"), fatpte.Specialization("a_b", b"2"),
                       fatpte.Specialization("..", b"3")], tmp_path / "v1.nfat", version=1)
    repacked = roundtrip(src, tmp_path)
    assert repacked.read_bytes() == src.read_bytes()
    names = sorted(p.name for p in (tmp_path / "unpacked" / "payloads").iterdir())
    assert names == ["a_b-2.bin", "a_b.bin", "data.bin"]


def test_json_output(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a", b"1")], tmp_path / "src.nfat")
    code, out, _ = run("unpack", src, "-o", tmp_path / "u", "--json")
    assert code == 0
    assert json.loads(out) == {"directory": str(tmp_path / "u"), "pack_toml": str(tmp_path / "u" / "pack.toml"),
                               "payload_files": 1, "named_data_files": 0, "reproducible": True}
    code, out, _ = run("unpack", src, "-o", tmp_path / "u2", "--json", "--no-verify")
    assert json.loads(out)["reproducible"] is None


def test_a_container_fatpte_would_lay_out_differently_warns(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a", b"1234")], tmp_path / "v1.nfat", version=1)
    src.write_bytes(src.read_bytes() + b"junk")  # trailing bytes: valid v1, not reproducible
    code, _, err = run("unpack", src, "-o", tmp_path / "u")
    assert code == 0
    assert "warning" in err and "not the same bytes" in err
    assert (tmp_path / "u" / "payloads" / "a.bin").read_bytes() == b"1234"


def test_existing_directory_needs_force_and_failures_leave_nothing(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a", b"1")], tmp_path / "src.nfat")
    (tmp_path / "empty").mkdir()
    assert run("unpack", src, "-o", tmp_path / "empty")[0] == 0  # an empty directory is fine
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    code, _, err = run("unpack", src, "-o", full)
    assert code == 2 and "--force" in err
    assert (full / "keep.txt").read_text() == "mine"
    assert run("unpack", src, "-o", full, "--force")[0] == 0
    assert sorted(p.name for p in full.iterdir()) == ["pack.toml", "payloads"]
    bad = tmp_path / "bad.nfat"
    data = bytearray(src.read_bytes())
    assert data[-1] == ord("1")
    data[-1] ^= 0xFF  # the payload checksum fails: nothing may be written
    bad.write_bytes(bytes(data))
    code, _, err = run("unpack", bad, "-o", tmp_path / "out")
    assert code == 1 and "E0208" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.nfat", "empty", "full", "src.nfat"]


def test_pack_from_rejects_mixed_arguments(tmp_path: Path) -> None:
    toml = tmp_path / "pack.toml"
    toml.write_text('[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\n')
    (tmp_path / "p.bin").write_bytes(b"x")
    assert run("pack", "-o", tmp_path / "o.nfat", "--from", toml, "a=p.bin")[0] == 2
    assert run("pack", "-o", tmp_path / "o.nfat", "--from", toml, "--align", "8")[0] == 2
    code, _, err = run("pack", "-o", tmp_path / "o.nfat", "--from", tmp_path / "missing.toml")
    assert code == 4
    toml.write_text('[[specialization]]\nbackend_id = "a"\n')
    code, _, err = run("pack", "-o", tmp_path / "o.nfat", "--from", toml)
    assert code == 2 and "E0708" in err


def test_toml_writer_round_trips_through_tomllib() -> None:
    value = {"s": 'q"\\\n\t\x01\x7fé😀', "i": -3, "b": True, "l": [1, "x", [2]], "t": {"a.b": {"c": []}}}
    text = "\n".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
    assert tomllib.loads(text) == value


@settings(max_examples=40, deadline=None)
@given(specs=v2_specializations())
def test_unpack_then_pack_from_reproduces_any_v2_container(specs: list[fatpte.Specialization]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        src = fatpte.pack(specs, Path(scratch) / "src.nfat")
        done = unpack_to_dir(src, Path(scratch) / "u")
        assert done.reproducible is True
        again = pack_from_file(done.pack_toml, Path(scratch) / "again.nfat")
        assert again.read_bytes() == src.read_bytes()


@settings(max_examples=40, deadline=None)
@given(items=v1_specializations())
def test_unpack_then_pack_from_reproduces_any_v1_container(items: list[tuple[str, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        src = Path(scratch) / "src.nfat"
        src.write_bytes(reference_v1(items))  # any ASCII ids: quotes, backslashes, control bytes, DEL
        done = unpack_to_dir(src, Path(scratch) / "u")
        assert done.reproducible is True
        again = pack_from_file(done.pack_toml, Path(scratch) / "again.nfat")
        assert again.read_bytes() == src.read_bytes()


def test_force_never_replaces_a_directory_holding_the_container(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("a", b"1")], tmp_path / "src.nfat")
    code, _, err = run("unpack", src, "-o", tmp_path, "--force")
    assert code == 2 and "holds the container" in err
    assert src.exists()


def test_the_directory_is_given_with_o_and_d_is_its_deprecated_spelling(tmp_path: Path) -> None:
    src = fatpte.pack([fatpte.Specialization("cpu", b"1" * 9)], tmp_path / "m.nfat")
    code, out, err = run("unpack", src, "--output", tmp_path / "new")
    assert (code, err) == (0, "")
    assert out.startswith(f"wrote {tmp_path / 'new'}: 1 payload files")
    code, out, err = run("unpack", src, "-d", tmp_path / "old")
    assert code == 0
    assert err == "fatpte: warning: unpack -d/--directory is deprecated: give the directory with -o DIR\n"
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == sorted(p.name for p in (tmp_path / "new").iterdir())
    code, _, err = run("unpack", src, "-o", tmp_path / "a", "--directory", tmp_path / "b")
    assert code == 2 and "give the directory once: -o DIR (-d DIR is its deprecated spelling)" in err
    code, _, err = run("unpack", src)
    assert code == 2 and "Missing option '-o' / '--output'" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
