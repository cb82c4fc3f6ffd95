"""The manifest: schema and generated code in step, round trips, the bounded verifier against corrupt
buffers, version constraints, and the consistency rules validate applies to containers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import flatbuffers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import layout as L
from fatpte.manifest import codec as MC
from fatpte.manifest import model as M
from fatpte.manifest.rules import signature_difference
from fatpte.ops import pack_manifest
from fatpte.ops.packing import pack
from fatpte.ops.specialization import NamedData, Specialization
from tests.paths import ROOT
from tests.strategies import manifests

FBS = ROOT / "specs" / "nfat_manifest.fbs"

SIG = {"methods": [{"name": "forward",
                    "inputs": [{"name": "x", "dtype": "float32", "shape": [1, "seq", 16]}],
                    "outputs": [{"dtype": "float32", "shape": [1, "seq", 16]}],
                    "buffers": [{"name": "kv_cache", "dtype": "float16", "shape": [1, 128, 16]}]}]}


def sample() -> M.Manifest:
    req = M.Requirements.from_mapping({"os": ["linux"], "arch": "x86_64", "cpu_features": ["avx2", "fma"],
                                       "accelerators": [{"kind": "cuda", "targets": ["sm_80", "compute_90"],
                                                         "min_memory_bytes": 1 << 30}],
                                       "min_memory_bytes": 1 << 32, "backend_abi": {"min": 2, "max": 5}})
    sig = M.Signature.from_mapping(SIG)
    return M.Manifest(entries=(
        M.ManifestEntry("cpu", req, sig, ("w.a", "w.b"), "sha256:00ff", bytes(range(32)), (("tool", "t 1.0"),)),
        M.ManifestEntry("portable"),
    ), named_data=(("w.a", 0), ("w.b", 1)))


# -- schema, generated code ---------------------------------------------------------------------


def test_generated_code_is_up_to_date() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_manifest.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def _parse_fbs(text: str) -> dict[str, list[tuple[str, str, bool, str | None]]]:
    text = re.sub(r"//[^\n]*", "", text)
    tables: dict[str, list[tuple[str, str, bool, str | None]]] = {}
    for name, body in re.findall(r"table\s+(\w+)\s*\{(.*?)\}", text, re.DOTALL):
        fields = []
        for decl in filter(None, (d.strip() for d in body.split(";"))):
            m = re.fullmatch(r"(\w+)\s*:\s*([\[\]\w]+)\s*(?:=\s*(\w+))?\s*(\(required\))?", decl)
            assert m, decl
            fields.append((m[1], m[2], bool(m[4]), m[3]))
        tables[name] = fields
    return tables


_FBS_KIND = {"ubyte": "u8", "uint": "u32", "ulong": "u64", "double": "f64", "string": "string", "VersionMatch": "u8",
             "[string]": "[string]", "[ubyte]": "[u8]", "[int]": "[i32]"}


def test_verifier_schema_matches_the_fbs() -> None:
    tables = _parse_fbs(FBS.read_text())
    assert set(tables) == set(MC.SCHEMA)
    for name, fields in tables.items():
        mine = MC.SCHEMA[name]
        assert [f.name for f in mine] == [f[0] for f in fields], name
        for (fname, ftype, required, default), f in zip(fields, mine):
            if ftype in _FBS_KIND:
                assert f.kind == _FBS_KIND[ftype], (name, fname)
            elif ftype.startswith("["):
                assert (f.kind, f.target) == ("[table]", ftype[1:-1]), (name, fname)
            else:
                assert (f.kind, f.target) == ("table", ftype), (name, fname)
            assert f.required == required, (name, fname)
            if default is not None and default.isdigit():
                assert f.default == int(default), (name, fname)
    assert 'file_identifier "NFMF";' in FBS.read_text()
    assert f"root_type {MC.ROOT_TABLE};" in FBS.read_text()
    assert M.VersionMatch.__members__.keys() == {"AT_LEAST", "SAME_MAJOR", "EXACT"}


# -- round trip, corruption ---------------------------------------------------------------------


def test_round_trip_of_a_full_manifest() -> None:
    m = sample()
    data = MC.encode(m)
    assert data[4:8] == L.MANIFEST_IDENTIFIER
    assert MC.decode(data) == m
    assert MC.encode(MC.decode(data)) == data  # deterministic


@settings(max_examples=100, deadline=None)
@given(manifests())
def test_round_trip(m: M.Manifest) -> None:
    assert MC.decode(MC.encode(m)) == m


@settings(max_examples=120, deadline=None)
@given(manifests(), st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=6))
def test_mutated_manifest_is_fatpte_error_or_valid(m: M.Manifest, edits: list[tuple[int, int]]) -> None:
    data = bytearray(MC.encode(m))
    for pos, value in edits:
        data[pos % len(data)] = value
    try:
        decoded = MC.decode(bytes(data))
    except FatpteError as exc:
        assert exc.code.value // 100 == 4
    else:
        assert isinstance(decoded, M.Manifest)


def test_every_truncation_is_fatpte_error() -> None:
    data = MC.encode(sample())
    for n in range(len(data)):
        with pytest.raises(FatpteError) as info:
            MC.decode(data[:n])
        assert info.value.code in (ErrorCode.MANIFEST_CORRUPT, ErrorCode.BAD_MANIFEST_IDENTIFIER,
                                   ErrorCode.MANIFEST_VALUE_INVALID)


def _expect(data: bytes | bytearray, code: ErrorCode, *, base: int = 0) -> FatpteError:
    with pytest.raises(FatpteError) as info:
        MC.decode(bytes(data), base=base)
    assert info.value.code is code, info.value
    return info.value


def test_identifier_and_root_offset() -> None:
    data = bytearray(MC.encode(sample()))
    assert data[4:8] == b"NFMF"
    bad = bytearray(data)
    bad[4:8] = b"XXXX"
    _expect(bad, ErrorCode.BAD_MANIFEST_IDENTIFIER)
    root = int.from_bytes(data[0:4], "little")
    assert 8 <= root < len(data)
    bad = bytearray(data)
    bad[0:4] = (len(data) + 4).to_bytes(4, "little")
    err = _expect(bad, ErrorCode.MANIFEST_CORRUPT, base=0x1000)
    assert err.offset == 0x1000 and err.field == "manifest"
    bad[0:4] = (0).to_bytes(4, "little")
    _expect(bad, ErrorCode.MANIFEST_CORRUPT)
    bad[0:4] = (root + 1).to_bytes(4, "little")  # a table must be 4-aligned
    _expect(bad, ErrorCode.MANIFEST_CORRUPT)


def _string_at(data: bytes, text: str) -> int:
    raw = text.encode()
    pos = data.index(len(raw).to_bytes(4, "little") + raw + b"\0")
    return pos


def test_string_rules() -> None:
    data = MC.encode(sample())
    at = _string_at(data, "portable")
    bad = bytearray(data)
    assert bad[at + 4 + 8] == 0
    bad[at + 4 + 8] = 0x41  # the NUL terminator
    err = _expect(bad, ErrorCode.MANIFEST_CORRUPT)
    assert "NUL" in err.message and err.field == "manifest.entries[1].name"
    bad = bytearray(data)
    bad[at : at + 4] = (0x7FFFFFF0).to_bytes(4, "little")
    _expect(bad, ErrorCode.MANIFEST_CORRUPT)
    bad = bytearray(data)
    bad[at + 4] = 0xFF  # not UTF-8
    _expect(bad, ErrorCode.MANIFEST_CORRUPT)


def _build(fn: Any) -> bytes:
    """A manifest built by hand with the generated builders, for shapes the writer never makes."""
    b = flatbuffers.Builder(256)
    root = fn(b, MC._fb)
    b.Finish(root, file_identifier=L.MANIFEST_IDENTIFIER)
    return bytes(b.Output())


def test_required_field_absent() -> None:
    def fn(b: Any, fb: Any) -> int:
        fb.EntryStart(b)  # no name
        entry = fb.EntryEnd(b)
        vec = MC._offsets(b, fb.ManifestStartEntriesVector, [entry])
        fb.ManifestStart(b)
        fb.ManifestAddEntries(b, vec)
        return int(fb.ManifestEnd(b))

    err = _expect(_build(fn), ErrorCode.MANIFEST_CORRUPT)
    assert err.field == "manifest.entries[0].name" and "required" in err.message


def test_huge_vector_length() -> None:
    data = MC.encode(M.Manifest(entries=(M.ManifestEntry("a"),)))
    vec = int.from_bytes(data[0:4], "little")  # root table
    # Find the entries vector: its length 1 followed by an offset; corrupt the count.
    pos = next(p for p in range(vec, len(data) - 4, 4) if int.from_bytes(data[p : p + 4], "little") == 1)
    bad = bytearray(data)
    bad[pos : pos + 4] = (0xFFFFFFFF).to_bytes(4, "little")
    _expect(bad, ErrorCode.MANIFEST_CORRUPT)


def _shared_method_manifest(entries: int, methods: int, padding: int = 0) -> bytes:
    """`entries` references to one entry whose signature holds `methods` references to one method;
    `padding` bytes of provenance in one more entry, last, make the buffer larger without adding
    to what the shared entry expands to."""

    def fn(b: Any, fb: Any) -> int:
        name = b.CreateString("m")
        fb.MethodStart(b)
        fb.MethodAddName(b, name)
        method = fb.MethodEnd(b)
        vec = MC._offsets(b, fb.SignatureStartMethodsVector, [method] * methods)
        fb.SignatureStart(b)
        fb.SignatureAddMethods(b, vec)
        sig = fb.SignatureEnd(b)
        ename = b.CreateString("e")
        fb.EntryStart(b)
        fb.EntryAddName(b, ename)
        fb.EntryAddSignature(b, sig)
        shared = [fb.EntryEnd(b)] * entries
        if padding:
            pname, key, value = b.CreateString("p"), b.CreateString("pad"), b.CreateString("x" * padding)
            fb.KeyValueStart(b)
            fb.KeyValueAddKey(b, key)
            fb.KeyValueAddValue(b, value)
            prov = MC._offsets(b, fb.EntryStartProvenanceVector, [fb.KeyValueEnd(b)])
            fb.EntryStart(b)
            fb.EntryAddName(b, pname)
            fb.EntryAddProvenance(b, prov)
            shared.append(fb.EntryEnd(b))
        vec = MC._offsets(b, fb.ManifestStartEntriesVector, shared)
        fb.ManifestStart(b)
        fb.ManifestAddEntries(b, vec)
        return int(fb.ManifestEnd(b))

    return _build(fn)


def test_shared_tables_are_counted_per_reference() -> None:
    """1000 entries that are one table, each with a signature of 1001 references to one method:
    a small buffer that asks for over a million table visits. It expands past its work budget
    long before the millionth table; made large enough for the budget (with a long provenance
    value), it is refused by the table count."""
    data = _shared_method_manifest(1000, 1001)
    assert len(data) < 16 << 10
    err = _expect(data, ErrorCode.MANIFEST_OVER_BUDGET)
    assert str(M.work_budget(len(data))) in err.message
    data = _shared_method_manifest(1000, 1001, padding=1 << 20)
    # each table visit expands to at least 8 bytes (its offset and its soffset), a million 8 MB
    assert M.work_budget(len(data)) > 8 * M.MAX_TABLES
    err = _expect(data, ErrorCode.MANIFEST_CORRUPT)
    assert str(M.MAX_TABLES) in err.message


def test_value_rules() -> None:
    for entry, field in [
        (M.ManifestEntry("a", payload_sha256=b"\1" * 31), "payload_sha256"),
        (M.ManifestEntry("a", source_digest="SHA256:00"), "source_digest"),
        (M.ManifestEntry("a", signature=M.Signature((M.Method("f"), M.Method("f")))), "name"),
        (M.ManifestEntry("a", signature=M.Signature((M.Method("f", buffers=(M.TensorSpec("f32", (), ""),)),))),
         "buffers[0].name"),
        (M.ManifestEntry("a", signature=M.Signature((M.Method("f", (M.TensorSpec("f32", (M.Dim(3, "n"),)),)),))),
         "shape[0]"),
    ]:
        err = _expect(MC.encode(M.Manifest(entries=(entry,))), ErrorCode.MANIFEST_VALUE_INVALID)
        assert err.field is not None and err.field.endswith(field), err


def test_a_buffer_may_be_unnamed() -> None:
    """ExecuTorch records a program's own buffer names only when the export asks for them."""
    entry = M.ManifestEntry("a", signature=M.Signature((M.Method("f", buffers=(M.TensorSpec("f32", (M.Dim(4),)),)),)))
    manifest = M.Manifest(entries=(entry,))
    assert MC.decode(MC.encode(manifest)) == manifest


def test_named_data_keys_must_be_sorted_and_unique() -> None:
    def build(keys: list[str]) -> bytes:
        def fn(b: Any, fb: Any) -> int:
            items = []
            for k in keys:
                ko = b.CreateString(k)
                fb.NamedDataStart(b)
                fb.NamedDataAddKey(b, ko)
                items.append(fb.NamedDataEnd(b))
            vec = MC._offsets(b, fb.ManifestStartNamedDataVector, items)
            fb.ManifestStart(b)
            fb.ManifestAddNamedData(b, vec)
            return int(fb.ManifestEnd(b))
        return _build(fn)

    assert MC.decode(build(["B", "a", "b"])).keys == {"B": 0, "a": 0, "b": 0}
    err = _expect(build(["a", "B"]), ErrorCode.NAMED_DATA_KEYS_UNSORTED)
    assert err.field == "manifest.named_data[1].key"
    _expect(build(["a", "a"]), ErrorCode.NAMED_DATA_KEYS_UNSORTED)


# -- requirements vocabulary, version constraints -----------------------------------------------


@pytest.mark.parametrize(("text", "version", "holds"), [
    ("sm_80", (8, 0), True), ("sm_80", (8, 6), True), ("sm_86", (8, 0), False), ("sm_80", (9, 0), False),
    ("sm_80", (7, 5), False), ("compute_80", (9, 0), True), ("compute_80", (12, 0), True),
    ("compute_90", (8, 9), False), ("sm_90a", (9, 0), True), ("sm_90a", (9, 1), False),
    ("sm_100", (10, 0), True), ("sm_120", (12, 1), True), ("sm_120", (10, 0), False),
    (">=1.3", (1, 3), True), (">=1.3", (2, 0), True), (">=1.3", (1, 2), False),
    ("~3.1", (3, 2), True), ("~3.1", (4, 1), False), ("==1.2", (1, 2), True), ("==1.2", (1, 3), False),
])
def test_version_constraints(text: str, version: tuple[int, int], holds: bool) -> None:
    c = M.VersionConstraint.parse(text, "t")
    assert c.holds(version) is holds
    kind = "cuda" if text[0] in "sc" else "vulkan"
    assert M.VersionConstraint.parse(c.text(kind), "t") == c


def test_unknown_match_never_holds() -> None:
    assert not M.VersionConstraint(7, 0, 0).holds((9, 9))


@pytest.mark.parametrize(("requires", "field"), [
    ({"cpu_features": ["avx3"]}, "requires.cpu_features[0]"),
    ({"arch": ["riscv64"]}, "requires.arch[0]"),
    ({"os": "beos"}, "requires.os[0]"),
    ({"accelerators": [{"kind": "tpu"}]}, "requires.accelerators[0].kind"),
    ({"accelerators": [{"kind": "cuda", "targets": ["sm8"]}]}, "requires.accelerators[0].targets[0]"),
    ({"backend_abi": {"min": 3, "max": 2}}, "requires.backend_abi"),
    ({"min_memory_bytes": -1}, "requires.min_memory_bytes"),
    ({"gpu": True}, "requires.gpu"),
    ({"arch": "x86_64", "cpu_features": ["avx2", "sve2"]}, "requires.cpu_features[1]"),
])
def test_bad_requires_is_invalid_argument(requires: dict[str, Any], field: str) -> None:
    with pytest.raises(FatpteError) as info:
        M.Requirements.from_mapping(requires)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and info.value.field == field


def test_specificity_counts_stated_requirements() -> None:
    r = M.Requirements.from_mapping({"os": ["linux", "android"], "arch": "x86_64",
                                     "cpu_features": ["avx2", "fma"], "accelerators": [{"kind": "cuda"}],
                                     "min_memory_bytes": 1, "backend_abi": {"min": 1}})
    assert r.specificity == 1 + 1 + 2 + 1 + 1 + 1
    assert M.Requirements().specificity == 0


# -- consistency in containers ------------------------------------------------------------------


def _codes(path: Path) -> list[ErrorCode]:
    return [f.code for f in fatpte.validate(path).findings]


def _pack_unchecked(specs: list[Specialization], dest: Path) -> None:
    """Let pack write what validate must reject (pack itself refuses inconsistent manifests)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pack_manifest, "consistency_problems", lambda *a: [])
        pack(specs, dest)


def test_pack_refuses_and_validate_reports_a_buffer_output_listed_as_user_output(tmp_path: Path) -> None:
    wrong = {"methods": [{**SIG["methods"][0],
                          "outputs": [*SIG["methods"][0]["outputs"],
                                      {"name": "kv_cache", "dtype": "float16", "shape": [1, 128, 16]}]}]}
    specs = [Specialization("xnnpack", b"a" * 40, signature=SIG),
             Specialization("vulkan", b"b" * 40, signature=wrong)]
    with pytest.raises(FatpteError) as info:
        pack(specs, tmp_path / "x.pte")
    assert info.value.code is ErrorCode.SIGNATURE_MISMATCH
    assert not (tmp_path / "x.pte").exists()
    _pack_unchecked(specs, tmp_path / "x.pte")
    report = fatpte.validate(tmp_path / "x.pte")
    [f] = report.errors
    assert f.code is ErrorCode.SIGNATURE_MISMATCH
    assert "'xnnpack'" in f.message and "'vulkan'" in f.message and "outputs" in f.message
    assert f.field == "manifest.entries[1].signature"
    with fatpte.open(tmp_path / "x.pte") as c:
        assert c.manifest is not None
        assert f.offset == c.header.manifest_offset + c.manifest.entries[1].position


def _state(*buffers: tuple[str | None, str, list[int]]) -> dict[str, Any]:
    return {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 4]}],
                         "buffers": [{"dtype": d, "shape": s} | ({"name": n} if n else {}) for n, d, s in buffers]}]}


def test_buffer_names_are_compared_only_where_both_sides_have_them() -> None:
    unnamed = M.Signature.from_mapping(_state((None, "float32", [1, 8, 4]), (None, "float32", [1, 8, 4])))
    named = M.Signature.from_mapping(_state(("k", "float32", [1, 8, 4]), ("v", "float32", [1, 8, 4])))
    swapped = M.Signature.from_mapping(_state(("v", "float32", [1, 8, 4]), ("k", "float32", [1, 8, 4])))
    assert signature_difference(unnamed, named) is None
    assert signature_difference(named, unnamed) is None
    diff = signature_difference(named, swapped)
    assert diff is not None and "buffers[0] is k: float32[1, 8, 4] vs v: float32[1, 8, 4]" in diff
    longer = M.Signature.from_mapping(_state((None, "float32", [1, 16, 4]), (None, "float32", [1, 8, 4])))
    diff = signature_difference(named, longer)
    assert diff is not None and "buffers[0] is k: float32[1, 8, 4] vs float32[1, 16, 4]" in diff
    assert "emit_mutable_buffer_names=True" in diff  # the export can keep the names
    fewer = M.Signature.from_mapping(_state(("k", "float32", [1, 8, 4])))
    diff = signature_difference(named, fewer)
    assert diff is not None and "2 vs 1 buffers" in diff and "emit_mutable_buffer_names" not in diff


def test_an_unnamed_signature_does_not_reconcile_two_names(tmp_path: Path) -> None:
    """Each agrees with the unnamed first entry, but 'b' and 'c' name one buffer differently: every
    pair of entries must agree, so the container is refused, naming the two that do not."""
    specs = [Specialization(n, n.encode() * 8, signature=_state((name, "float32", [4])))
             for n, name in (("a", None), ("b", "total"), ("c", "count"))]
    with pytest.raises(FatpteError) as info:
        pack(specs, tmp_path / "x.nfat")
    assert info.value.code is ErrorCode.SIGNATURE_MISMATCH
    assert info.value.field == "specialization[2].signature"
    assert "'b' and 'c'" in info.value.message and "'total'" in info.value.message and "'count'" in info.value.message
    _pack_unchecked(specs, tmp_path / "x.nfat")
    [f] = fatpte.validate(tmp_path / "x.nfat").errors
    assert f.code is ErrorCode.SIGNATURE_MISMATCH and f.field == "manifest.entries[2].signature"
    pack(specs[:2], tmp_path / "ab.nfat")
    assert fatpte.validate(tmp_path / "ab.nfat").ok


def test_source_digest_mismatch(tmp_path: Path) -> None:
    _pack_unchecked([Specialization("a", b"1", source_digest="sha256:aa"),
                     Specialization("b", b"2", source_digest="sha256:bb"), Specialization("c", b"3")],
                    tmp_path / "x.pte")
    [f] = fatpte.validate(tmp_path / "x.pte").errors
    assert f.code is ErrorCode.SOURCE_DIGEST_MISMATCH and "'a'" in f.message and "'b'" in f.message


def test_entries_must_match_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = MC.encode

    def rename(m: M.Manifest) -> bytes:
        _, *rest = m.entries
        return real(M.Manifest(m.revision, (M.ManifestEntry("ghost"), *rest, rest[0]), m.named_data))

    monkeypatch.setattr(pack_manifest, "encode", rename)
    pack([Specialization("a", b"1", requires={"arch": "x86_64"}), Specialization("b", b"2")], tmp_path / "x.pte")
    findings = fatpte.validate(tmp_path / "x.pte").errors
    assert [f.code for f in findings] == [ErrorCode.MANIFEST_ENTRY_UNKNOWN, ErrorCode.DUPLICATE_MANIFEST_ENTRY,
                                          ErrorCode.MANIFEST_ENTRY_MISSING]
    assert findings[2].field == "entries[0].name" and findings[2].offset == L.V2_HEADER_SIZE


def test_missing_key_and_unreferenced_segment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = MC.encode

    def drop(m: M.Manifest) -> bytes:
        return real(M.Manifest(m.revision, m.entries, m.named_data[1:]))

    monkeypatch.setattr(pack_manifest, "encode", drop)
    pack([Specialization("a", b"1", named_data={"k1": b"one", "k2": b"two"})], tmp_path / "x.pte")
    findings = fatpte.validate(tmp_path / "x.pte").errors
    assert [f.code for f in findings] == [ErrorCode.SEGMENT_UNREFERENCED, ErrorCode.NAMED_DATA_KEY_MISSING]
    assert findings[0].field == "segments[0]" and "'k1'" in findings[1].message


def test_payload_sha256(tmp_path: Path) -> None:
    path = pack([Specialization("a", b"payload bytes" * 10, payload_sha256=True)], tmp_path / "x.pte")
    assert fatpte.validate(path).ok
    with fatpte.open(path) as c:
        assert c.manifest is not None
        import hashlib
        assert c.manifest.entries[0].payload_sha256 == hashlib.sha256(b"payload bytes" * 10).digest()
        e = c.entries[0]
    data = bytearray(path.read_bytes())
    data[e.offset] ^= 1
    # Fix the CRC32C so that only the SHA-256 notices.
    from fatpte.fileio.checksum import crc32c
    at = L.V2_HEADER_SIZE + L.RECORDS["v2_entry"].offsets["checksum"][0]
    data[at : at + 4] = crc32c(bytes(data[e.offset : e.end])).to_bytes(4, "little")
    data[L.HEADER_CHECKSUM_OFFSET : L.HEADER_CHECKSUM_OFFSET + 4] = bytes(4)
    hdr = L.RECORDS["v2_header"].codec.unpack_from(data, 0)
    table_end = dict(zip(L.RECORDS["v2_header"].fields, hdr))
    end = table_end["header_size"] + table_end["entry_count"] * table_end["entry_size"]
    data[L.HEADER_CHECKSUM_OFFSET : L.HEADER_CHECKSUM_OFFSET + 4] = crc32c(bytes(data[:end])).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    assert _codes(path) == [ErrorCode.PAYLOAD_DIGEST_MISMATCH]


def test_corrupt_manifest_in_a_container(tmp_path: Path) -> None:
    path = pack([Specialization("a", b"1", requires={"arch": "x86_64"})], tmp_path / "x.pte")
    with fatpte.open(path) as c:
        start, size = c.header.manifest_offset, c.header.manifest_size
    data = bytearray(path.read_bytes())
    data[start : start + 4] = (size + 100).to_bytes(4, "little")  # root offset past the end
    from fatpte.fileio.checksum import crc32c
    at = L.RECORDS["v2_header"].offsets["manifest_checksum"][0]
    data[at : at + 4] = crc32c(bytes(data[start : start + size])).to_bytes(4, "little")
    hc = L.HEADER_CHECKSUM_OFFSET
    end = L.V2_HEADER_SIZE + L.V2_ENTRY_SIZE
    value = crc32c(bytes(data[:hc]) + bytes(4) + bytes(data[hc + 4 : end]))
    data[hc : hc + 4] = value.to_bytes(4, "little")
    path.write_bytes(bytes(data))
    [f] = fatpte.validate(path).errors
    assert f.code is ErrorCode.MANIFEST_CORRUPT and f.offset == start
    with fatpte.open(path) as c, pytest.raises(FatpteError) as info:
        _ = c.manifest
    assert info.value.code is ErrorCode.MANIFEST_CORRUPT


def test_manifest_absent_without_requirements(tmp_path: Path) -> None:
    path = pack([Specialization("a", b"1")], tmp_path / "x.pte")
    with fatpte.open(path) as c:
        assert c.manifest is None and c.named_data_keys == ()


@settings(max_examples=150, deadline=None)
@given(st.builds(M.VersionConstraint, st.sampled_from([0, 1, 2]), st.integers(0, (1 << 32) - 1),
                 st.integers(0, (1 << 32) - 1)), st.sampled_from(["cuda", "vulkan", "metal"]))
def test_constraint_text_round_trips(c: M.VersionConstraint, kind: str) -> None:
    """pack.toml written by `fatpte unpack` spells constraints with text(); parse must give them back."""
    assert M.VersionConstraint.parse(c.text(kind), "t") == c


def test_manifest_entry_equality_ignores_position() -> None:
    a = M.ManifestEntry("a", named_data=("k",), position=8)
    b = M.ManifestEntry("a", named_data=("k",), position=96)
    assert a == b and (a != b) is False and hash(a) == hash(b) and len({a, b}) == 1
    assert a != M.ManifestEntry("b", named_data=("k",), position=8)
    assert M.Manifest(entries=(a,)) == M.Manifest(entries=(b,))
    assert a._replace(position=4).position == 4


def test_records_are_not_taken_where_a_list_belongs() -> None:
    # The records are tuples; one passed where a list of tables belongs is refused, not iterated.
    acc = M.AcceleratorRequirement("cuda")
    with pytest.raises(FatpteError) as info:
        M.Requirements.from_mapping({"accelerators": acc})
    assert info.value.field == "requires.accelerators"
    with pytest.raises(FatpteError) as info:
        M.Requirements.from_mapping({"accelerators": [{"kind": "cuda", "targets": M.VersionConstraint(0, 8, 0)}]})
    assert info.value.field == "requires.accelerators[0].targets"
    with pytest.raises(FatpteError) as info:
        M.Signature.from_mapping({"methods": M.Method("forward")})
    assert info.value.field == "signature.methods"
    assert M.Requirements.from_mapping({"os": ("linux",)}).os == ("linux",)  # a plain tuple still is one


# -- revision 2: ExecuTorch backends and tensor layouts ------------------------------------------


def _revision_2() -> M.Manifest:
    return M.Manifest(
        entries=(M.ManifestEntry("xnnpack", named_data=("w",), executorch_backends=("XnnpackBackend",)),
                 M.ManifestEntry("portable", named_data=("w",), executorch_backends=())),
        named_data=(("raw", 1), ("w", 0)),
        layouts=(("w", M.TensorLayout("float16", (2, 8), (1, 0))),))


def test_revision_2_fields_round_trip_and_set_the_revision() -> None:
    m = _revision_2()
    decoded = MC.decode(MC.encode(m))
    assert decoded.revision == 2 and decoded == m._replace(revision=2)
    assert decoded.entries[0].executorch_backends == ("XnnpackBackend",)
    assert decoded.entries[1].executorch_backends == ()  # none, which is not "not known"
    assert decoded.layout("w") == M.TensorLayout("float16", (2, 8), (1, 0)) and decoded.layout("raw") is None
    assert decoded.to_json()["layouts"] == {"w": {"dtype": "float16", "sizes": [2, 8], "dim_order": [1, 0]}}
    # Without revision-2 fields the bytes are revision 1's: the field is absent, so the default 1.
    plain = M.Manifest(entries=(M.ManifestEntry("a"),))
    assert MC.decode(MC.encode(plain)).revision == 1
    assert MC.decode(MC.encode(plain._replace(revision=2))).revision == 1


@pytest.mark.parametrize(("change", "field", "words"), [
    (lambda m: m._replace(entries=(m.entries[0]._replace(executorch_backends=("",)), m.entries[1])),
     "manifest.entries[0].executorch_backends[0]", "1 to 4096 bytes"),
    (lambda m: m._replace(entries=(m.entries[0]._replace(executorch_backends=("A", "B", "A")), m.entries[1])),
     "manifest.entries[0].executorch_backends[2]", "'A' is listed twice"),
    (lambda m: m._replace(layouts=(("w", M.TensorLayout("float128", (2, 8))),)),
     "manifest.named_data[1].layout", "dtype 'float128' is not one of"),
    (lambda m: m._replace(layouts=(("w", M.TensorLayout("float16", (2, -8))),)),
     "manifest.named_data[1].layout", "sizes[1] is -8"),
    (lambda m: m._replace(layouts=(("w", M.TensorLayout("float16", (2, 8), (0, 0))),)),
     "manifest.named_data[1].layout", "dim_order [0, 0] is not a permutation of 0..1"),
    (lambda m: m._replace(layouts=(("w", M.TensorLayout("float16", (2, 8), (0,))),)),
     "manifest.named_data[1].layout", "not a permutation"),
])
def test_revision_2_value_rules(change: Any, field: str, words: str) -> None:
    data = MC.encode(change(_revision_2()))
    with pytest.raises(FatpteError) as info:
        MC.decode(data, base=1000)
    assert info.value.code is ErrorCode.MANIFEST_VALUE_INVALID
    assert info.value.field == field and words in info.value.message
    assert info.value.offset is not None and 1000 < info.value.offset < 1000 + len(data)


def test_a_layout_must_describe_its_segment(tmp_path: Path) -> None:
    layout = {"dtype": "float32", "sizes": [2, 3]}  # 24 bytes
    wrong = [Specialization("portable", b"p" * 8, named_data={"w": NamedData(b"w" * 20, layout=layout)})]
    with pytest.raises(FatpteError) as info:
        pack(wrong, tmp_path / "x.nfat")
    assert info.value.code is ErrorCode.NAMED_DATA_LAYOUT_MISMATCH
    assert "float32[2, 3], 24 bytes, but its segment 0 holds 20" in info.value.message
    assert not (tmp_path / "x.nfat").exists()
    _pack_unchecked(wrong, tmp_path / "x.nfat")
    [f] = fatpte.validate(tmp_path / "x.nfat").errors
    assert f.code is ErrorCode.NAMED_DATA_LAYOUT_MISMATCH and f.field == "manifest.named_data[0].layout"
    with fatpte.open(tmp_path / "x.nfat") as c:
        assert f.offset == c.header.manifest_offset
    right = [Specialization("portable", b"p" * 8, named_data={"w": NamedData(b"w" * 24, layout=layout)})]
    assert fatpte.validate(pack(right, tmp_path / "y.nfat")).ok


def test_layouts_from_python_are_checked() -> None:
    with pytest.raises(FatpteError) as info:
        M.TensorLayout.from_mapping({"dtype": "float32", "sizes": [2], "dim_order": [1]}, "named_data['w'].layout")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "not a permutation" in info.value.message
    assert M.TensorLayout.from_mapping({"dtype": "int8", "sizes": [3, 1]}) == M.TensorLayout("int8", (3, 1))
    assert M.TensorLayout("int8", (3, 1)).same_as(M.TensorLayout("int8", (3, 1), (0, 1)))
    assert not M.TensorLayout("int8", (3, 1)).same_as(M.TensorLayout("int8", (3, 1), (1, 0)))
