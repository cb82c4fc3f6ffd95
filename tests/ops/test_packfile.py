"""pack.toml: the documented example packs, relative paths, strict errors, and byte-for-byte
agreement with the Python API."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fatpte
from fatpte.errors import ErrorCode, FatpteError, FatpteWarning
from fatpte.ops.packfile import pack_from_file
from fatpte.ops.packing import pack
from fatpte.ops.specialization import NamedData, Specialization
from tests.paths import ET_FIXTURES, ROOT

DOC = ROOT / "docs" / "pack-toml.md"


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
    assert info.value.code is ErrorCode.BAD_PACK_FILE  # every failure of a pack.toml's values is E0708
    assert info.value.field == "specialization[0].requires.cpu_features[0]"
    assert info.value.source == str(tmp_path / "pack.toml")


# ---------------------------------------------------------------------------------------------
# signature = "from-payload": whole ExecuTorch programs, data = [...], share_named_data
# ---------------------------------------------------------------------------------------------

ET = ET_FIXTURES
AVX2_TOML = 'requires = { arch = "x86_64", cpu_features = ["avx2", "fma"] }\n'


def _programs(tmp_path: Path, *names: str) -> None:
    for n in names:
        (tmp_path / n).write_bytes((ET / n).read_bytes())


def _entry(payload: str, extra: str = "") -> str:
    return f'[[specialization]]\npayload = "{payload}"\nsignature = "from-payload"\n{extra}'


def test_from_payload_packs_programs_like_the_python_api(tmp_path: Path) -> None:
    from fatpte.executorch import program_signature, read_program
    from fatpte.ops.pte_specialize import pte_specialization

    _programs(tmp_path, "mlp_portable.pte", "mlp_xnnpack.pte")
    (tmp_path / "pack.toml").write_text(_entry("mlp_portable.pte") + _entry("mlp_xnnpack.pte", "priority = 10\n"
                                                                            + AVX2_TOML))
    out = pack_from_file(tmp_path / "pack.toml", tmp_path / "1.nfat")
    api = pack([pte_specialization(tmp_path / "mlp_portable.pte"),
                pte_specialization(tmp_path / "mlp_xnnpack.pte", priority=10,
                                   requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]})],
               tmp_path / "2.nfat")
    assert out.read_bytes() == api.read_bytes()
    with fatpte.open(out) as c:
        assert [(e.name, e.backend_id, e.payload_kind) for e in c.entries] == [
            ("portable", "portable", b"ET12"), ("xnnpack", "xnnpack", b"ET12")]
        assert c.manifest is not None
        want = program_signature(read_program((ET / "mlp_xnnpack.pte").read_bytes()))
        assert all(e.signature is not None and e.signature.to_json() == want for e in c.manifest.entries)
        assert bytes(c.payload("xnnpack")) == (ET / "mlp_xnnpack.pte").read_bytes()  # unchanged: not shared


def test_from_payload_refuses_two_programs_showing_both_signatures(tmp_path: Path) -> None:
    _programs(tmp_path, "add_portable.pte", "mlp_xnnpack.pte")
    (tmp_path / "pack.toml").write_text(_entry("add_portable.pte") + _entry("mlp_xnnpack.pte"))
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "pack.toml", tmp_path / "out.nfat")
    assert info.value.code is ErrorCode.SIGNATURE_MISMATCH
    text = str(info.value)
    assert "'portable'" in text and "'xnnpack'" in text
    assert "float32[2, 3]" in text and "float32[1, 4]" in text
    assert not (tmp_path / "out.nfat").exists()


@pytest.mark.parametrize(("extra", "field"), [
    ('signature = "from-payload"\n', "specialization[0].signature"),  # p.bin is no program
    ('signature = "derive"\n', "specialization[0].signature"),
    ('data = ["w.ptd"]\n', "specialization[0].data"),  # without signature = "from-payload"
    ("share_named_data = true\n", "specialization[0].share_named_data"),
])
def test_from_payload_bad_pack_file(tmp_path: Path, extra: str, field: str) -> None:
    (tmp_path / "p.bin").write_bytes(b"\x10\0\0\0NFAT" + bytes(16))
    (tmp_path / "w.ptd").write_bytes(b"x")
    (tmp_path / "pack.toml").write_text(f'[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\n{extra}')
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "pack.toml", tmp_path / "out.nfat")
    assert info.value.code is ErrorCode.BAD_PACK_FILE, info.value
    assert info.value.field == field and info.value.source == str(tmp_path / "pack.toml")
    if extra.startswith('signature = "from'):
        assert "b'NFAT'" in str(info.value) and "ET12" in str(info.value) and "(.ptn)" in str(info.value)


@pytest.mark.parametrize(("extra", "field"), [
    ('data = "w.ptd"\n', "specialization[0].data"),
    ('data = ["missing.ptd"]\n', "specialization[0].data[0]"),
    ('share_named_data = "yes"\n', "specialization[0].share_named_data"),
    ('named_data = ["nowhere"]\n', "specialization[0].named_data"),
    ('executorch_backends = ["XnnpackBackend"]\n', "specialization[0].executorch_backends"),
])
def test_from_payload_bad_program_keys(tmp_path: Path, extra: str, field: str) -> None:
    _programs(tmp_path, "mlp_portable.pte")
    (tmp_path / "pack.toml").write_text(_entry("mlp_portable.pte", extra))
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "pack.toml", tmp_path / "out.nfat")
    assert info.value.code is ErrorCode.BAD_PACK_FILE, info.value
    assert info.value.field == field and info.value.source == str(tmp_path / "pack.toml")


def test_data_moves_the_ptd_tensors_like_the_cli(tmp_path: Path) -> None:
    from fatpte.ops.pte_specialize import ptd_named_data, pte_specialization

    ptd = "mlp_portable_external._default_external_constant.ptd"
    _programs(tmp_path, "mlp_portable_external.pte", ptd)
    (tmp_path / "pack.toml").write_text(_entry("mlp_portable_external.pte", f'data = ["{ptd}"]\n'))
    out = pack_from_file(tmp_path / "pack.toml", tmp_path / "1.nfat")
    api = pack([pte_specialization(tmp_path / "mlp_portable_external.pte", data_files=[tmp_path / ptd])],
               tmp_path / "2.nfat")
    assert out.read_bytes() == api.read_bytes()
    with fatpte.open(out) as c:
        weights = ptd_named_data(tmp_path / ptd)
        assert sorted(c.named_data_keys) == sorted(weights)
        assert all(bytes(c.named_data(k)) == v for k, v in weights.items())


def test_share_named_data_then_unpack_and_pack_again_is_byte_identical(tmp_path: Path) -> None:
    from fatpte.executorch import read_program
    from fatpte.ops.unpack import unpack_to_dir

    _programs(tmp_path, "mlp_portable.pte", "mlp_xnnpack.pte", "mlp_native.pte")
    (tmp_path / "w.bin").write_bytes(b"W" * 40)
    (tmp_path / "pack.toml").write_text(
        '[named_data]\nextra = "w.bin"\n'
        + _entry("mlp_portable.pte")
        + _entry("mlp_xnnpack.pte", "share_named_data = true\npriority = 10\n" + AVX2_TOML)
        + _entry("mlp_native.pte", 'share_named_data = true\nnamed_data = ["extra"]\n'))
    with pytest.warns(FatpteWarning, match="'extra', which its program never loads"):
        out = pack_from_file(tmp_path / "pack.toml", tmp_path / "c.nfat")
    xnn = read_program((ET / "mlp_xnnpack.pte").read_bytes())
    native = read_program((ET / "mlp_native.pte").read_bytes())
    with fatpte.open(out) as c:
        assert c.manifest is not None
        entry = c.manifest.entry("xnnpack")
        assert entry is not None and list(entry.named_data) == [n.key for n in xnn.named_data]
        entry = c.manifest.entry("native")
        assert entry is not None and list(entry.named_data) == [n.key for n in native.named_data] + ["extra"]
        assert read_program(bytes(c.payload("xnnpack"))).named_data == ()
        # The XNNPACK and native lowerings hold the same weights under different keys: stored once.
        assert len(c.segments) == len(xnn.named_data) + 1
    unpacked = unpack_to_dir(out, tmp_path / "un")  # its check repacks, quietly
    assert unpacked.reproducible
    text = unpacked.pack_toml.read_text()
    assert "from-payload" not in text and "share_named_data" not in text
    with pytest.warns(FatpteWarning, match="'extra', which its program never loads"):
        again = pack_from_file(unpacked.pack_toml, tmp_path / "again.nfat")
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize(("top", "check"), [('signature_from = "portable"\n', "from:portable"),
                                            ("check_signatures = false\n", "skipped")])
def test_signature_decision_in_pack_toml(tmp_path: Path, top: str, check: str) -> None:
    _programs(tmp_path, "kvpair_portable_default.pte", "kvpair16_xnnpack_default.pte")
    body = _entry("kvpair_portable_default.pte") + _entry("kvpair16_xnnpack_default.pte")
    (tmp_path / "refused.toml").write_text(body)
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "refused.toml", tmp_path / "x.nfat")
    assert info.value.code is ErrorCode.SIGNATURE_MISMATCH
    (tmp_path / "pack.toml").write_text(top + body)
    out = pack_from_file(tmp_path / "pack.toml", tmp_path / "c.nfat")
    with fatpte.open(out) as c:
        assert c.manifest is not None
        assert [dict(e.provenance)["fatpte.signature_check"] for e in c.manifest.entries] == [check, check]
    (tmp_path / "bad.toml").write_text('check_signatures = "no"\n' + body)
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "bad.toml", tmp_path / "y.nfat")
    assert info.value.code is ErrorCode.BAD_PACK_FILE and info.value.field == "check_signatures"


def test_documented_program_example_packs(tmp_path: Path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(), re.DOTALL)
    toml = next(b for b in blocks if "from-payload" in b)
    for name in re.findall(r'"([\w.]+\.pt[edn])"', toml):
        (tmp_path / name).write_bytes((ET / name).read_bytes())
    (tmp_path / "pack.toml").write_text(toml)
    out = pack_from_file(tmp_path / "pack.toml", tmp_path / "m.nfat")
    assert fatpte.validate(out).ok
    with fatpte.open(out) as c:
        assert [(e.name, e.backend_id) for e in c.entries] == [
            ("portable", "portable"), ("xnnpack", "xnnpack"), ("native-ext", "native"), ("native", "native")]
        assert c.manifest is not None
        entry = c.manifest.entry("native-ext")
        assert entry is not None and sorted(entry.named_data) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
        # The XNNPACK constants and the .ptd weights are the same bytes: 4 segments for 8 keys.
        assert len(c.named_data_keys) == 8 and len(c.segments) == 4


@pytest.mark.parametrize(("layout", "field", "words"), [
    ('{ dtype = "float32", sizes = [2] }', None, None),  # 8 bytes: the file's size
    ('{ dtype = "float32", sizes = [3] }', None, "12 bytes, but its segment 0 holds 8"),
    ('{ dtype = "float32", sizes = [2], order = [0] }', "named_data.w.layout.order", "unknown key 'order'"),
    ('{ dtype = "complex64", sizes = [1] }', "named_data.w.layout", "complex64"),
    ('"float32"', "named_data.w.layout", "must be a mapping"),
])
def test_named_data_layouts(tmp_path: Path, layout: str, field: str | None, words: str | None) -> None:
    (tmp_path / "p.bin").write_bytes(b"payload")
    (tmp_path / "w.bin").write_bytes(b"w" * 8)
    (tmp_path / "pack.toml").write_text(f'[named_data]\nw = {{ path = "w.bin", layout = {layout} }}\n\n'
                                        '[[specialization]]\nbackend_id = "a"\npayload = "p.bin"\n'
                                        'named_data = ["w"]\nexecutorch_backends = []\n')
    if field is None and words is None:
        with fatpte.open(pack_from_file(tmp_path / "pack.toml", tmp_path / "out.nfat")) as c:
            assert c.manifest is not None and c.manifest.layout("w") is not None
            assert c.manifest.entries[0].executorch_backends == ()
        return
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "pack.toml", tmp_path / "out.nfat")
    if field is None:
        assert info.value.code is ErrorCode.NAMED_DATA_LAYOUT_MISMATCH
    else:
        assert info.value.code is ErrorCode.BAD_PACK_FILE and info.value.field == field
    assert words is not None and words in str(info.value)
    assert not (tmp_path / "out.nfat").exists()


# ---------------------------------------------------------------------------------------------
# Hostile pack.toml files (issue 15): only FatpteError, E0708 or an I/O code, naming file and field
# ---------------------------------------------------------------------------------------------


def _load_error(tmp_path: Path, data: bytes) -> FatpteError:
    toml = tmp_path / "pack.toml"
    toml.write_bytes(data)
    with pytest.raises(FatpteError) as info:
        pack_from_file(toml, tmp_path / "out.nfat")
    assert info.value.source == str(toml)
    return info.value


_ENTRY = b'[[specialization]]\nbackend_id = "x"\npayload = "pack.toml"\n'


@pytest.mark.parametrize(("label", "data"), [
    ("100,000 nested arrays", b"version = " + b"[" * 100_000 + b"]" * 100_000 + b"\n"),
    ("100,000 nested inline tables", b"x = " + b"{a = " * 100_000 + b"1" + b"}" * 100_000 + b"\n"),
    ("bytes ff fe", b"\xff\xfe" + "version = 2\n".encode("utf-16-le")),
    ("a NUL in a path", b'[[specialization]]\nbackend_id = "x"\npayload = "a\\u0000b"\n'),
    ("named_data an integer", b"named_data = 5\n"),
    ("named_data an array", b"named_data = [1, 2]\n"),
    ("specialization a table", b"[specialization]\nbackend_id = 1\n"),
    ("requires of the wrong shape", _ENTRY + b"requires = {os = 3}\n"),
    ("signature of the wrong shape", _ENTRY + b'signature = {methods = "f"}\n'),
    ("provenance of the wrong shape", _ENTRY + b"provenance = [1]\n"),
    ("a syntax error", b"version = = 2\n"),
])
def test_hostile_pack_files_are_bad_pack_file(tmp_path: Path, label: str, data: bytes) -> None:
    err = _load_error(tmp_path, data)
    assert err.code is ErrorCode.BAD_PACK_FILE, err
    assert err.field, err


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_pack_file_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    import os

    from fatpte.ops.packfile import load

    path = tmp_path / "pack.toml"
    if kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)  # no writer: reading must not wait for one
    with pytest.raises(FatpteError) as info:
        load(path)
    assert info.value.code is ErrorCode.NOT_A_FILE


def test_the_cli_prints_no_traceback_for_a_hostile_pack_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from fatpte.cli.main import main

    toml = tmp_path / "pack.toml"
    toml.write_bytes(b"version = " + b"[" * 100_000 + b"]" * 100_000 + b"\n")
    result = CliRunner().invoke(main, ["pack", "-o", str(tmp_path / "o.nfat"), "--from", str(toml)])
    assert result.exit_code == 2 and "E0708" in result.stderr and "Traceback" not in result.output


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 1 << 70) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_KEYS = st.sampled_from(["version", "alignment", "segment_alignment", "signature", "source_digest", "named_data",
                         "specialization", "backend_id", "payload", "name", "priority", "requires", "provenance",
                         "payload_sha256", "data", "share_named_data", "executorch_backends", "path", "layout",
                         "os", "methods", "x"])


@st.composite
def _documents(draw: st.DrawFn) -> dict[str, object]:
    def table(depth: int) -> dict[str, object]:
        out: dict[str, object] = {}
        for key in draw(st.lists(_KEYS, max_size=5, unique=True)):
            if depth < 2 and draw(st.booleans()):
                out[key] = [table(depth + 1) for _ in range(draw(st.integers(0, 2)))] if key == "specialization" \
                    else table(depth + 1)
            else:
                out[key] = draw(_VALUES)
        return out

    return table(0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents())
def test_any_document_gives_a_fatpte_error_or_specializations(doc: dict[str, object]) -> None:
    from fatpte.ops.packfile import _Ctx, _load

    try:
        _load(_Ctx(ROOT / "pack.toml"), doc)
    except FatpteError as exc:
        assert exc.code in (ErrorCode.BAD_PACK_FILE, ErrorCode.IO_ERROR, ErrorCode.NOT_A_FILE,
                            ErrorCode.INVALID_ARGUMENT, ErrorCode.ET_BAD_IDENTIFIER), exc
