"""Packing whole .pte fixtures as specializations, with signatures derived from the files."""

from __future__ import annotations

import hashlib
import itertools
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError, FatpteWarning
from fatpte.executorch import read_program, read_ptd
from fatpte.ops.pte_specialize import ptd_named_data, ptd_tensors, pte_specialization
from fatpte.ops.specialization import NamedData
from tests.paths import ET_FIXTURES

AVX2 = {"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}
FILES: dict[str, Any] = json.loads((ET_FIXTURES / "fixtures.json").read_text())["files"]
MODELS = sorted({f["model"] for f in FILES.values()})


def _pack(tmp_path: Path, model: str) -> Path:
    return fatpte.pack(
        [
            pte_specialization(ET_FIXTURES / f"{model}_portable.pte", priority=0),
            pte_specialization(ET_FIXTURES / f"{model}_xnnpack.pte", priority=10, requires=AVX2),
        ],
        tmp_path / f"{model}.nfat",
    )


@pytest.mark.parametrize("model", ["add", "mlp", "buffer", "kvcache"])
def test_pack_select_extract_gives_the_input_back(tmp_path: Path, model: str) -> None:
    dest = _pack(tmp_path, model)
    assert fatpte.validate(dest).ok
    with fatpte.open(dest) as c:
        assert [e.backend_id for e in c.entries] == ["portable", "xnnpack"]
        assert all(e.payload_kind == b"ET12" for e in c.entries)
        assert fatpte.select(c, fatpte.DeviceProfile.load("x86-64-v3")).chosen.name == "xnnpack"
        assert fatpte.select(c, fatpte.DeviceProfile.load("x86-64-v2")).chosen.name == "portable"
    out = fatpte.extract(dest, "xnnpack", tmp_path / "out.pte")
    assert out.read_bytes() == (ET_FIXTURES / f"{model}_xnnpack.pte").read_bytes()


def test_signature_in_the_manifest_keeps_buffers_apart(tmp_path: Path) -> None:
    dest = _pack(tmp_path, "kvcache")
    with fatpte.open(dest) as c:
        assert c.manifest is not None
        for entry in c.manifest.entries:
            assert entry.signature is not None
            (m,) = entry.signature.methods
            assert [t.name for t in m.buffers] == ["k_cache"]
            assert len(m.outputs) == 1


def test_different_programs_are_refused_with_both_signatures(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        fatpte.pack(
            [pte_specialization(ET_FIXTURES / "add_portable.pte"),
             pte_specialization(ET_FIXTURES / "mlp_xnnpack.pte", requires=AVX2)],
            tmp_path / "mixed.nfat",
        )
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH
    text = str(e.value)
    assert "'portable'" in text and "'xnnpack'" in text
    assert "float32[2, 3]" in text and "float32[1, 4]" in text
    assert not (tmp_path / "mixed.nfat").exists()


def test_a_buffer_write_back_is_not_an_output(tmp_path: Path) -> None:
    """The portable and native lowerings keep their state in different places (a copy_ in the
    program, a BUFFER_MUTATION in the NPTG payload) yet derive the same signature."""
    dest = fatpte.pack(
        [pte_specialization(ET_FIXTURES / "buffer_portable.pte"), pte_specialization(ET_FIXTURES / "buffer_native.pte")],
        tmp_path / "b.nfat",
    )
    assert fatpte.validate(dest).ok


def test_backend_ids() -> None:
    assert pte_specialization(ET_FIXTURES / "mlp_native.pte").backend_id == "native"
    assert pte_specialization(ET_FIXTURES / "mlp_portable.pte").backend_id == "portable"
    assert pte_specialization(ET_FIXTURES / "mlp_portable.pte", backend_id="cpu").backend_id == "cpu"


def test_not_a_program(tmp_path: Path) -> None:
    bad = tmp_path / "x.pte"
    bad.write_bytes(b"\x10\0\0\0NFAT" + bytes(16))
    with pytest.raises(FatpteError) as e:
        pte_specialization(bad)
    assert e.value.code is ErrorCode.ET_BAD_IDENTIFIER


def test_ptd_weights_become_shared_named_data_stored_once(tmp_path: Path) -> None:
    portable_ptd = ET_FIXTURES / "mlp_portable_external._default_external_constant.ptd"
    native_ptd = ET_FIXTURES / "mlp_native_external.native_weights.ptd"
    dest = fatpte.pack(
        [pte_specialization(ET_FIXTURES / "mlp_portable_external.pte", data_files=[portable_ptd]),
         pte_specialization(ET_FIXTURES / "mlp_native_external.pte", data_files=[native_ptd])],
        tmp_path / "ext.nfat",
    )
    assert fatpte.validate(dest).ok
    weights = ptd_named_data(portable_ptd)
    assert sorted(weights) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert ptd_named_data(native_ptd) == weights  # the same tensors under the same keys
    with fatpte.open(dest) as c:
        assert sorted(c.named_data_keys) == sorted(weights)
        for key, blob in weights.items():
            assert bytes(c.named_data(key)) == blob
        assert len(c.structure.segments) == len(weights)  # stored once, not once per entry
        assert c.manifest is not None
        assert all(sorted(e.named_data) == sorted(weights) for e in c.manifest.entries)


def test_one_key_with_two_contents_is_refused(tmp_path: Path) -> None:
    ptd = ET_FIXTURES / "mlp_native_external.native_weights.ptd"
    changed = bytearray(ptd.read_bytes())
    first = min(t.offset for t in read_ptd(bytes(changed)).named_data)
    changed[first] ^= 0xFF
    other = tmp_path / "other.ptd"
    other.write_bytes(bytes(changed))
    with pytest.raises(FatpteError) as e:
        fatpte.pack(
            [pte_specialization(ET_FIXTURES / "mlp_portable_external.pte", data_files=[ptd]),
             pte_specialization(ET_FIXTURES / "mlp_native_external.pte", data_files=[other])],
            tmp_path / "bad.nfat",
        )
    assert e.value.code is ErrorCode.NAMED_DATA_CONFLICT


def test_share_named_data_moves_the_programs_named_data(tmp_path: Path) -> None:
    from fatpte.executorch import program_signature, read_program

    path = ET_FIXTURES / "mlp_xnnpack.pte"
    data = path.read_bytes()
    plain = pte_specialization(path)
    shared = pte_specialization(path, share_named_data=True)
    assert plain.payload == str(path) and plain.named_data is None
    assert isinstance(shared.payload, bytes) and len(shared.payload) < len(data)
    program = read_program(data)
    assert shared.named_data == {n.key: data[n.offset : n.offset + n.size] for n in program.named_data}
    assert shared.signature == plain.signature == program_signature(read_program(shared.payload))
    # The rewritten program records the input file's digest, and says it is not that file; pack
    # records the digest of a program packed whole as it checks the payload.
    digest = hashlib.sha256(data).hexdigest()
    assert shared.provenance == {"executorch.pte.sha256": digest, "executorch.pte.named_data": "shared"}
    assert plain.provenance == {}
    with fatpte.open(fatpte.pack([plain], tmp_path / "p.nfat")) as c:
        assert c.manifest is not None and dict(c.manifest.entries[0].provenance) == {"executorch.pte.sha256": digest}
    # Extracting no longer gives the input file: the documented price of the opt-in.
    dest = fatpte.pack([shared], tmp_path / "m.nfat")
    assert fatpte.extract(dest, "xnnpack", tmp_path / "m.pte").read_bytes() == shared.payload != data
    # A program with no named data of its own is left as it is.
    portable = pte_specialization(ET_FIXTURES / "mlp_portable.pte", share_named_data=True)
    assert portable == pte_specialization(ET_FIXTURES / "mlp_portable.pte")


def test_share_named_data_stores_the_same_weights_once_across_backends(tmp_path: Path) -> None:
    dest = fatpte.pack(
        [pte_specialization(ET_FIXTURES / "mlp_xnnpack.pte", requires=AVX2, share_named_data=True),
         pte_specialization(ET_FIXTURES / "mlp_native.pte", share_named_data=True),
         pte_specialization(ET_FIXTURES / "mlp_nfat.pte", name="fat", share_named_data=True)],
        tmp_path / "m.nfat")
    assert fatpte.validate(dest).ok
    with fatpte.open(dest) as c:
        # XNNPACK names its constants by their SHA-256, the native backend by FQN: 8 keys, 4 segments.
        assert len(c.named_data_keys) == 8 and len(c.segments) == 4


def test_a_program_key_and_a_ptd_key_with_different_bytes_are_refused(tmp_path: Path) -> None:
    ptd = ET_FIXTURES / "mlp_native_external.native_weights.ptd"
    changed = bytearray(ptd.read_bytes())
    first = next(t for t in read_ptd(bytes(changed)).named_data if t.key == "fc1.weight")
    changed[first.offset] ^= 0xFF
    other = tmp_path / "other.ptd"
    other.write_bytes(bytes(changed))
    with pytest.raises(FatpteError) as e:
        pte_specialization(ET_FIXTURES / "mlp_native.pte", share_named_data=True, data_files=[other])
    assert e.value.code is ErrorCode.NAMED_DATA_CONFLICT
    assert "'fc1.weight'" in str(e.value) and str(other) in str(e.value)
    # The same bytes under the same key are fine: the .ptd agrees with the program.
    same = pte_specialization(ET_FIXTURES / "mlp_native.pte", share_named_data=True, data_files=[ptd])
    assert same.named_data is not None and sorted(same.named_data) == sorted(ptd_named_data(ptd))


def test_programs_and_weights_are_mapped_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Programs and .ptd weights are many GB: packing them streams from mappings, never reads them whole.
    ptd = ET_FIXTURES / "mlp_portable_external._default_external_constant.ptd"
    expected = {k: bytes(v) for k, v in ptd_named_data(ptd).items()}

    def refuse(self: Path) -> bytes:
        raise AssertionError(f"{self} was read whole")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    spec = pte_specialization(ET_FIXTURES / "mlp_portable_external.pte", data_files=[ptd])
    assert spec.named_data is not None
    assert isinstance(spec.named_data, dict)
    values = {k: v for k, v in spec.named_data.items() if isinstance(v, NamedData)}
    assert values.keys() == expected.keys()  # every .ptd tensor carries its layout
    assert {k: bytes(v.source) for k, v in values.items()} == expected  # type: ignore[arg-type]
    assert all(isinstance(v.source, memoryview) for v in values.values())  # views of the mapping
    dest = fatpte.pack([spec], tmp_path / "m.nfat")
    monkeypatch.undo()
    assert fatpte.validate(dest).ok
    with fatpte.open(dest) as c:
        assert {k: bytes(c.named_data(k)) for k in c.named_data_keys} == expected


@pytest.mark.parametrize("model", MODELS)
def test_every_pairing_of_one_models_lowerings_packs(tmp_path: Path, model: str) -> None:
    """Portable, XNNPACK, native and fat lowerings, exported with ExecuTorch's defaults (no buffer
    names) or with names kept, weights inside or in a .ptd: any two of one model are one program."""
    files = sorted(n for n, f in FILES.items() if f["model"] == model)
    assert len(files) >= 2 or model == "kvpair16"
    for a, b in itertools.combinations(files, 2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dest = fatpte.pack([pte_specialization(ET_FIXTURES / a, name="a"),
                                pte_specialization(ET_FIXTURES / b, name="b")], tmp_path / "m.nfat")
        assert fatpte.validate(dest).ok, (a, b)
        # Two entries that both delegate, or both do not, tie: only table order would choose.
        tie = (FILES[a]["backend"] == "portable") == (FILES[b]["backend"] == "portable")
        assert [w.message.code for w in caught if isinstance(w.message, FatpteWarning)] == (
            [ErrorCode.RANKING_TIE] * tie)


def _one_per_model() -> dict[str, str]:
    """A default export of each model (its portable file when it has one)."""
    out: dict[str, str] = {}
    for name, f in sorted(FILES.items(), key=lambda kv: (kv[1]["backend"] != "portable", kv[0])):
        out.setdefault(f["model"], name)
    return out


@pytest.mark.parametrize(("a", "b"), list(itertools.combinations(sorted(_one_per_model().values()), 2)))
def test_every_pairing_across_models_is_refused(tmp_path: Path, a: str, b: str) -> None:
    with pytest.raises(FatpteError) as e:
        fatpte.pack([pte_specialization(ET_FIXTURES / a, name="a"), pte_specialization(ET_FIXTURES / b, name="b")],
                    tmp_path / "m.nfat")
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH
    assert "entries 'a' and 'b' declare different program signatures: method 'forward'" in e.value.message
    assert not (tmp_path / "m.nfat").exists()


def test_a_changed_cache_shape_is_refused_naming_it(tmp_path: Path) -> None:
    """kvpair16 is kvpair with 16 cache rows: the same model, another program."""
    assert FILES["kvpair16_xnnpack_default.pte"]["variant_of"] == "kvpair"
    for other in ("kvpair_xnnpack_default.pte", "kvpair_portable.pte", "kvpair_native_default.pte"):
        with pytest.raises(FatpteError) as e:
            fatpte.pack([pte_specialization(ET_FIXTURES / other, name="a"),
                         pte_specialization(ET_FIXTURES / "kvpair16_xnnpack_default.pte", name="b")],
                        tmp_path / "m.nfat")
        assert e.value.code is ErrorCode.SIGNATURE_MISMATCH
        # The outputs come first: a longer cache makes a longer score row.
        assert "outputs differ (outputs[0] is float32[1, 1, 8] vs float32[1, 1, 16])" in e.value.message


def test_a_changed_cache_shape_in_the_state_names_the_buffer_and_the_hint() -> None:
    from fatpte.executorch import program_signature, read_program
    from fatpte.manifest.model import Signature
    from fatpte.manifest.rules import signature_difference

    def state(name: str) -> Signature:
        (m,) = program_signature(read_program((ET_FIXTURES / name).read_bytes()))["methods"]
        return Signature.from_mapping({"methods": [{**m, "outputs": []}]})

    diff = signature_difference(state("kvpair_portable.pte"), state("kvpair16_xnnpack_default.pte"))
    assert diff is not None
    assert "buffers[0] is k_cache: float32[1, 8, 4] vs float32[1, 16, 4]" in diff
    assert "emit_mutable_buffer_names=True" in diff


def test_the_executorch_backends_come_from_the_programs_delegates(tmp_path: Path) -> None:
    xnn = pte_specialization(ET_FIXTURES / "mlp_xnnpack.pte")
    portable = pte_specialization(ET_FIXTURES / "mlp_portable.pte")
    native = pte_specialization(ET_FIXTURES / "mlp_native.pte")
    assert xnn.executorch_backends == ["XnnpackBackend"]
    assert portable.executorch_backends == []  # none: portable operators only
    assert native.executorch_backends == ["NativeBackend"]
    dest = fatpte.pack([xnn, portable, native], tmp_path / "m.nfat")
    with fatpte.open(dest) as c:
        assert c.manifest is not None and c.manifest.revision == 2
        assert [e.executorch_backends for e in c.manifest.entries] == [("XnnpackBackend",), (), ("NativeBackend",)]


def test_ptd_tensors_keep_their_layouts_in_the_manifest(tmp_path: Path) -> None:
    ptd = ET_FIXTURES / "mlp_portable_external._default_external_constant.ptd"
    tensors = ptd_tensors(ptd)
    program = read_program((ET_FIXTURES / "mlp_portable_external.pte").read_bytes())
    # What the program's external tensors expect of each key is what the .ptd records of it.
    for plan in program.methods:
        for tensor in plan.tensors.values():
            if tensor.external and tensor.fqn:
                view, layout = tensors[tensor.fqn]
                assert layout is not None and layout.sizes == tensor.shape
                assert layout.dim_order == tensor.dim_order and layout.nbytes == len(view)
    dest = fatpte.pack([pte_specialization(ET_FIXTURES / "mlp_portable_external.pte", data_files=[ptd])],
                       tmp_path / "m.nfat")
    assert fatpte.validate(dest).ok
    with fatpte.open(dest) as c:
        assert c.manifest is not None
        assert dict(c.manifest.layouts) == {k: lay for k, (_, lay) in tensors.items()}
