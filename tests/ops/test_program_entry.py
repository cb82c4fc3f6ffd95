"""ExecuTorch programs as entries (fatpte/ops/program_entry.py): every write path derives and checks
the same record (pack, add, replace, pack.toml, fatpte.Specialization with a path or bytes,
pte_specialization), the signature decision is recorded, and validate catches a program that no
longer matches its record. Over the committed fixtures made by ExecuTorch 1.5.1."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError, FatpteWarning
from fatpte.format import layout as L
from fatpte.ops.edit import add, replace
from fatpte.ops.program_entry import backend_problem
from fatpte.ops.pte_specialize import pte_specialization
from fatpte.ops.specialization import Specialization
from tests.paths import ET_FIXTURES
from tests.scripts import load_script


def _fx(name: str) -> Path:
    return ET_FIXTURES / name


def _entry(path: Path, name: str) -> fatpte.ManifestEntry:
    with fatpte.open(path) as c:
        assert c.manifest is not None
        entry = c.manifest.entry(name)
        assert entry is not None
        return entry


def _mlp(tmp_path: Path) -> Path:
    return fatpte.pack([pte_specialization(_fx("mlp_portable.pte")), pte_specialization(_fx("mlp_xnnpack.pte"))],
                       tmp_path / "mlp.nfat")


# -- a plain Specialization is a program entry like any other -----------------------------------


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_plain_specialization_of_a_program_gets_its_record(tmp_path: Path, as_bytes: bool) -> None:
    path = _fx("kvpair_xnnpack_default.pte")
    payload: bytes | str = path.read_bytes() if as_bytes else str(path)
    dest = fatpte.pack([Specialization("xnnpack", payload)], tmp_path / "one.nfat")
    entry = _entry(dest, "xnnpack")
    derived = pte_specialization(path).signature
    assert entry.signature == fatpte.Signature.from_mapping(derived)
    assert entry.executorch_backends == ("XnnpackBackend",)
    assert dict(entry.provenance) == {"executorch.pte.sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert fatpte.validate(dest).findings == ()


def test_the_payload_digest_of_a_program_is_its_program_digest(tmp_path: Path) -> None:
    path = _fx("mlp_xnnpack.pte")
    dest = fatpte.pack([Specialization("xnnpack", str(path), payload_sha256=True)], tmp_path / "d.nfat")
    entry = _entry(dest, "xnnpack")
    assert entry.payload_sha256 == hashlib.sha256(path.read_bytes()).digest()
    assert dict(entry.provenance)["executorch.pte.sha256"] == entry.payload_sha256.hex()
    assert fatpte.validate(dest).findings == ()


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_plain_specialization_of_another_model_is_refused(tmp_path: Path, as_bytes: bool) -> None:
    other = _fx("add_portable.pte")
    with pytest.raises(FatpteError) as e:
        fatpte.pack([pte_specialization(_fx("mlp_xnnpack.pte")),
                     Specialization("portable", other.read_bytes() if as_bytes else str(other))],
                    tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH
    assert "'xnnpack' and 'portable'" in e.value.message
    assert not (tmp_path / "x.nfat").exists()


def test_opaque_bytes_that_say_et12_stay_opaque(tmp_path: Path) -> None:
    """The spec's example payload: `ET12` at 4..8 but no program. Packed as bytes, no record."""
    dest = fatpte.pack([Specialization("portable", b"\x0c\0\0\0ET12tiny program")], tmp_path / "o.nfat")
    with fatpte.open(dest) as c:
        assert c.manifest is None and c.entries[0].payload_kind == b"ET12"
    assert fatpte.validate(dest).findings == ()


def test_a_program_claimed_but_unreadable_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        fatpte.pack([Specialization("portable", b"\x0c\0\0\0ET12tiny program", executorch_backends=[])],
                    tmp_path / "o.nfat")
    assert e.value.code.tag.startswith("E10")


# -- backend ids against delegates --------------------------------------------------------------


def test_swapped_backend_ids_are_refused_naming_the_delegates(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        fatpte.pack([Specialization("portable", str(_fx("mlp_xnnpack.pte"))),
                     Specialization("xnnpack", str(_fx("mlp_portable.pte")))], tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM
    assert e.value.field == "specialization[0].backend_id"
    assert "names the portable operators, but the program delegates to XnnpackBackend" in e.value.message
    with pytest.raises(FatpteError) as e:
        fatpte.pack([pte_specialization(_fx("mlp_portable.pte"), backend_id="xnnpack")], tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM
    assert "names XnnpackBackend, but the program delegates to no backend" in e.value.message


@pytest.mark.parametrize(("backend_id", "delegates", "ok"), [
    ("portable", [], True), ("cpu", ["XnnpackBackend"], True), ("xnnpack-int8", ["XnnpackBackend"], True),
    ("x86_avx2", ["XnnpackBackend"], True), ("native-xnnpack", ["NativeBackend", "XnnpackBackend"], True),
    ("nfatnative", ["NfatNativeBackend"], True), ("portable", ["XnnpackBackend"], False),
    ("xnnpack", [], False), ("xnnpack", ["NativeBackend"], False), ("native-xnnpack", ["NativeBackend"], False),
    ("vulkan.fp16", ["XnnpackBackend"], False), ("cuda", ["CudaBackend"], True),
])
def test_backend_words(backend_id: str, delegates: list[str], ok: bool) -> None:
    assert (backend_problem(backend_id, delegates) is None) is ok


def test_stated_executorch_backends_must_be_the_programs(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        fatpte.pack([Specialization("native", str(_fx("mlp_native.pte")), executorch_backends=["XnnpackBackend"])],
                    tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.EXECUTORCH_BACKENDS_MISMATCH and "NativeBackend" in e.value.message


# -- provenance digest, stated signature, named data ---------------------------------------------


def test_a_recorded_program_digest_must_be_the_programs(tmp_path: Path) -> None:
    spec = Specialization("portable", str(_fx("mlp_portable.pte")),
                          provenance={"executorch.pte.sha256": "0" * 64})
    with pytest.raises(FatpteError) as e:
        fatpte.pack([spec], tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.PROGRAM_DIGEST_MISMATCH and e.value.field == "specialization[0].provenance"


def test_a_stated_signature_must_agree_with_the_program(tmp_path: Path) -> None:
    sig = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 5]}],
                        "outputs": [{"dtype": "float32", "shape": [1, 3]}]}]}
    with pytest.raises(FatpteError) as e:
        fatpte.pack([Specialization("portable", str(_fx("mlp_portable.pte")), signature=sig)], tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.PROGRAM_SIGNATURE_MISMATCH
    assert "inputs[0] is float32[1, 5] vs float32[1, 4]" in e.value.message


def test_named_data_the_program_never_loads_or_already_holds_is_a_warning(tmp_path: Path) -> None:
    with pytest.warns(FatpteWarning) as caught:
        fatpte.pack([Specialization("portable", str(_fx("mlp_portable.pte")), named_data={"extra": b"W" * 8})],
                    tmp_path / "a.nfat")
    [w] = caught
    assert isinstance(w.message, FatpteWarning) and w.message.code is ErrorCode.NAMED_DATA_UNUSED
    assert "'extra', which its program never loads" in str(w.message)
    own = {n: b"x" for n in ["fc1.weight"]}
    with pytest.warns(FatpteWarning, match="which its program holds itself"):
        fatpte.pack([Specialization("native", str(_fx("mlp_native.pte")), named_data=own)], tmp_path / "b.nfat")


def test_external_weights_packed_with_the_program_are_no_warning(tmp_path: Path) -> None:
    (ptd,) = sorted(ET_FIXTURES.glob("mlp_portable_external.*.ptd"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FatpteWarning)
        fatpte.pack([pte_specialization(_fx("mlp_portable_external.pte"), data_files=[ptd])], tmp_path / "b.nfat")


# -- add and replace ------------------------------------------------------------------------------


def test_add_of_another_models_program_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        add(_mlp(tmp_path), tmp_path / "out.nfat", [Specialization("native", str(_fx("add_native.pte")))])
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH
    assert not (tmp_path / "out.nfat").exists()
    out = add(_mlp(tmp_path), tmp_path / "out.nfat", [Specialization("native", str(_fx("mlp_native.pte")))])
    assert _entry(out, "native").executorch_backends == ("NativeBackend",)


def test_replace_by_another_models_program_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        replace(_mlp(tmp_path), tmp_path / "out.nfat", "xnnpack", str(_fx("add_xnnpack.pte")))
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH


def test_replace_rewrites_the_record_from_the_new_payload(tmp_path: Path) -> None:
    shared = fatpte.pack([pte_specialization(_fx("mlp_portable.pte")),
                          pte_specialization(_fx("mlp_xnnpack.pte"), share_named_data=True)], tmp_path / "s.nfat")
    before = _entry(shared, "xnnpack")
    assert before.named_data and dict(before.provenance)["executorch.pte.named_data"] == "shared"
    # The whole XNNPACK program back in: it holds its weights itself, so the entry lists none.
    out = replace(shared, tmp_path / "r.nfat", "xnnpack", str(_fx("mlp_xnnpack.pte")))
    after = _entry(out, "xnnpack")
    assert after.named_data == ()
    assert dict(after.provenance) == {
        "executorch.pte.sha256": hashlib.sha256(_fx("mlp_xnnpack.pte").read_bytes()).hexdigest()}
    assert fatpte.validate(out).findings == ()
    with pytest.raises(FatpteError) as e:  # a native program under the backend id xnnpack
        replace(shared, tmp_path / "n.nfat", "xnnpack", str(_fx("mlp_native.pte")))
    assert e.value.code is ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM


# -- the escape hatch, recorded ------------------------------------------------------------------


def test_signature_from_one_entry_is_recorded_and_shown(tmp_path: Path) -> None:
    specs = [pte_specialization(_fx("kvpair_portable_default.pte")),
             pte_specialization(_fx("kvpair16_xnnpack_default.pte"))]
    with pytest.raises(FatpteError):
        fatpte.pack(specs, tmp_path / "x.nfat")
    dest = fatpte.pack(specs, tmp_path / "x.nfat", signature_from="portable")
    portable, xnn = _entry(dest, "portable"), _entry(dest, "xnnpack")
    assert portable.signature == xnn.signature == fatpte.Signature.from_mapping(specs[0].signature)
    assert dict(xnn.provenance)["fatpte.signature_check"] == "from:portable"
    assert fatpte.validate(dest).findings == ()  # xnnpack's program is not compared: recorded so
    from fatpte.cli.render import info_text
    from fatpte.ops.info import summary

    with fatpte.open(dest) as c:
        data = summary(c)
    assert [e["signature_check"] for e in data["entries"]] == ["from:portable", "from:portable"]
    assert "signature check: the signature of 'portable' given to every entry" in info_text(data)
    # An entry added later is checked against the signature the container states.
    with pytest.raises(FatpteError) as e:
        add(dest, tmp_path / "y.nfat", [pte_specialization(_fx("kvpair16_xnnpack_default.pte"), name="x16")])
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH
    add(dest, tmp_path / "y.nfat", [pte_specialization(_fx("kvpair_native_default.pte"))])


def test_no_signature_check_stores_none(tmp_path: Path) -> None:
    specs = [pte_specialization(_fx("add_portable.pte")), pte_specialization(_fx("mlp_xnnpack.pte"))]
    dest = fatpte.pack(specs, tmp_path / "x.nfat", check_signatures=False)
    for name in ("portable", "xnnpack"):
        entry = _entry(dest, name)
        assert entry.signature is None and dict(entry.provenance)["fatpte.signature_check"] == "skipped"
    assert fatpte.validate(dest).findings == ()
    # Edits keep each entry's decision; an entry added later is a program like any other.
    out = add(dest, tmp_path / "y.nfat", [pte_specialization(_fx("buffer_native.pte"))])
    assert _entry(out, "portable").signature is None and _entry(out, "native").signature is not None


def test_signature_decision_arguments(tmp_path: Path) -> None:
    specs = [pte_specialization(_fx("mlp_portable.pte"))]
    for kwargs in ({"signature_from": "gpu"}, {"signature_from": "portable", "check_signatures": False}):
        with pytest.raises(FatpteError) as e:
            fatpte.pack(specs, tmp_path / "x.nfat", **kwargs)  # type: ignore[arg-type]
        assert e.value.code is ErrorCode.INVALID_ARGUMENT


# -- validate: the payload against its record ----------------------------------------------------


def _swap_payload(path: Path, name: str, program: Path) -> None:
    """Put `program` in place of entry `name`'s payload at the byte level: the entry's size and
    CRC32C and the header checksum updated, the rest of the old bytes zeroed; the manifest kept."""
    with fatpte.open(path) as c:
        e = c.entry(name)
        at = c.header.header_size + e.index * c.header.entry_size
    data = bytearray(path.read_bytes())
    new = program.read_bytes()
    assert len(new) <= e.size
    data[e.offset : e.offset + e.size] = new + bytes(e.size - len(new))
    rec = L.RECORDS["v2_entry"]
    for fld, value in (("size", len(new)), ("checksum", fatpte_crc(new))):
        off, size = rec.offsets[fld]
        data[at + off : at + off + size] = value.to_bytes(size, "little")
    assert load_script("tests/support/vectors.py").reseal(data)
    path.write_bytes(bytes(data))


def fatpte_crc(data: bytes) -> int:
    from fatpte.fileio.checksum import crc32c

    return crc32c(data)


def test_validate_catches_a_program_replaced_at_the_byte_level(tmp_path: Path) -> None:
    dest = fatpte.pack([pte_specialization(_fx("kvpair_portable_default.pte")),
                        pte_specialization(_fx("kvpair_xnnpack_default.pte"))], tmp_path / "k.nfat")
    assert fatpte.validate(dest).findings == ()
    _swap_payload(dest, "xnnpack", _fx("kvcache_xnnpack_default.pte"))
    report = fatpte.validate(dest)
    assert [f.code for f in report.findings] == [ErrorCode.PROGRAM_SIGNATURE_MISMATCH,
                                                 ErrorCode.PROGRAM_DIGEST_MISMATCH]
    sig, digest = report.findings
    assert sig.field == "manifest.entries[1].signature" and "buffers differ (3 vs 1 buffers)" in sig.message
    with fatpte.open(dest) as c:
        assert c.manifest is not None
        assert sig.offset == c.header.manifest_offset + c.manifest.entries[1].position
    assert digest.field == "manifest.entries[1].provenance"


def test_validate_catches_a_portable_program_under_an_xnnpack_record(tmp_path: Path) -> None:
    dest = fatpte.pack([pte_specialization(_fx("kvpair_portable_default.pte")),
                        pte_specialization(_fx("kvpair_xnnpack_default.pte"))], tmp_path / "k.nfat")
    _swap_payload(dest, "xnnpack", _fx("kvpair_portable_default.pte"))
    report = fatpte.validate(dest)
    assert [f.code for f in report.findings] == [ErrorCode.BACKEND_ID_CONTRADICTS_PROGRAM,
                                                 ErrorCode.EXECUTORCH_BACKENDS_MISMATCH,
                                                 ErrorCode.PROGRAM_DIGEST_MISMATCH]
    with fatpte.open(dest) as c:
        assert report.findings[0].offset == c.header.header_size + c.header.entry_size
    assert report.findings[0].field == "entries[1].backend_id"


def test_validate_catches_a_same_size_program_by_its_digest(tmp_path: Path) -> None:
    """buffer_portable.pte and its default export have the same size and agreeing signatures."""
    a, b = _fx("buffer_portable.pte"), _fx("buffer_portable_default.pte")
    assert a.stat().st_size == b.stat().st_size and a.read_bytes() != b.read_bytes()
    dest = fatpte.pack([pte_specialization(a)], tmp_path / "b.nfat")
    _swap_payload(dest, "portable", b)
    [f] = fatpte.validate(dest).findings
    assert f.code is ErrorCode.PROGRAM_DIGEST_MISMATCH


def test_validate_reports_a_record_whose_program_no_longer_reads(tmp_path: Path) -> None:
    dest = fatpte.pack([pte_specialization(_fx("kvpair_xnnpack_default.pte"))], tmp_path / "k.nfat")
    data = _fx("kvpair_xnnpack_default.pte").read_bytes()
    broken = tmp_path / "broken.pte"
    broken.write_bytes(data[:8] + b"\xff\xff\xff\x7f" + data[12:])  # ET12 stays; the flatbuffer breaks
    _swap_payload(dest, "xnnpack", broken)
    [f] = fatpte.validate(dest).findings
    assert f.code.tag.startswith("E10") and f.field == "entries[0].payload"
