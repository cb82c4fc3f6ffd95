"""Signature adapters in the manifest (specs/nfat-manifest.md 5.3, rule 2.2.12, revision 4):
TensorSpec.program_dtype written and read, its pairs, the revision it needs, agreement that never
compares it, and the signatures `pack --adapt-io` states (fatpte/manifest/adapters.py)."""

from __future__ import annotations

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.manifest import codec
from fatpte.manifest.adapters import adapt_all, adapted, dtype_or_shape_difference, program_view, widened
from fatpte.manifest.model import Dim, Manifest, ManifestEntry, Method, Signature, TensorSpec
from fatpte.manifest.rules import signature_difference
from fatpte.value.dtypes import adapter_problem


def _sig(x: str, out: str | None = None, state: str | None = None, *, behind: str | None = None) -> Signature:
    """forward(x[1, 4], int64[1]) -> out[1, 3]; state: state[8] (`behind`: every float tensor's program dtype)."""
    def t(dtype: str, *dims: int) -> TensorSpec:
        return TensorSpec(dtype, tuple(Dim(d) for d in dims), None, behind if dtype == "float32" else None)
    return Signature((Method("forward", (t(x, 1, 4), t("int64", 1)), (t(out or x, 1, 3),), (t(state or x, 8),)),))


def _manifest(sig: Signature) -> Manifest:
    return Manifest(1, (ManifestEntry("e", signature=sig),))


@pytest.mark.parametrize(("dtype", "program", "ok"), [
    ("float32", "float16", True), ("float32", "bfloat16", True), ("float16", "float16", False),
    ("float32", "float32", False), ("float32", "int64", False), ("int64", "float16", False),
    ("float16", "float32", False), ("float32", "", False)])
def test_the_pairs_an_adapter_converts(dtype: str, program: str, ok: bool) -> None:
    assert (adapter_problem(dtype, program) is None) is ok


def test_program_dtype_is_written_read_and_needs_revision_4() -> None:
    sig = _sig("float32", behind="float16")
    data = codec.encode(_manifest(sig))
    back = codec.decode(data)
    assert back.revision == 4
    assert back.entries[0].signature == sig
    assert back.entries[0].signature.methods[0].inputs[0].program_dtype == "float16"
    assert back.entries[0].signature.methods[0].inputs[1].program_dtype is None
    assert codec.decode(codec.encode(_manifest(_sig("float32")))).revision == 1


def test_a_pair_no_adapter_converts_is_E0418_at_the_tensor() -> None:
    bad = Signature((Method("forward", (TensorSpec("float32", (Dim(1),), None, "int64"),)),))
    data = codec.encode(_manifest(bad))
    with pytest.raises(FatpteError) as e:
        codec.decode(data)
    assert e.value.code is ErrorCode.MANIFEST_VALUE_INVALID
    assert e.value.field == "manifest.entries[0].signature.methods[0].inputs[0].program_dtype"
    assert "float16 behind float32" in e.value.message


def test_a_signature_mapping_refuses_a_pair_no_adapter_converts() -> None:
    ok = Signature.from_mapping({"methods": [{"name": "f", "inputs": [
        {"dtype": "float32", "shape": [1], "program_dtype": "bfloat16"}]}]})
    assert ok.methods[0].inputs[0].program_dtype == "bfloat16"
    assert ok.to_json()["methods"][0]["inputs"][0]["program_dtype"] == "bfloat16"
    with pytest.raises(FatpteError) as e:
        Signature.from_mapping({"methods": [{"name": "f", "inputs": [
            {"dtype": "int32", "shape": [1], "program_dtype": "float16"}]}]})
    assert e.value.field == "signature.methods[0].inputs[0].program_dtype"


def test_agreement_never_compares_the_program_dtype() -> None:
    assert signature_difference(_sig("float32"), _sig("float32", behind="float16")) is None
    assert signature_difference(_sig("float32"), _sig("float16")) is not None
    assert "(program float16)" in _sig("float32", behind="float16").methods[0].inputs[0].text()


def test_the_program_behind_an_adapter() -> None:
    assert program_view(_sig("float32", behind="float16")) == _sig("float16")
    assert program_view(_sig("float32")) == _sig("float32")


def test_the_containers_signature_is_float32_where_any_program_has_it() -> None:
    assert widened([_sig("float16"), _sig("float32")]) == _sig("float32")
    assert widened([_sig("bfloat16"), _sig("float16")]) == _sig("bfloat16")  # no adapter between them
    assert widened([]) is None


def test_adapt_io_states_each_program_behind_the_containers_signature() -> None:
    half, full, brain = _sig("float16"), _sig("float32"), _sig("bfloat16")
    assert adapt_all([half, full, None, brain]) == [_sig("float32", behind="float16"), full, None,
                                                    _sig("float32", behind="bfloat16")]
    assert adapted(full, half) == _sig("float32", behind="float16")
    assert adapted(full, full) == full


def test_adapt_io_bridges_nothing_but_the_dtypes_of_its_pairs() -> None:
    other_shape = Signature((Method("forward", (TensorSpec("float16", (Dim(2), Dim(4))), TensorSpec("int64", (Dim(1),))),
                                    _sig("float16").methods[0].outputs, _sig("float16").methods[0].buffers),))
    assert adapt_all([_sig("float32"), other_shape]) is None
    assert adapt_all([_sig("float32"), _sig("float32", "int32")]) is None
    assert adapted(_sig("float32"), other_shape) is None


def test_what_signature_from_cannot_paper_over() -> None:
    assert dtype_or_shape_difference(_sig("float32"), _sig("float16")) is not None
    assert dtype_or_shape_difference(_sig("float32", behind="float16"), _sig("float16")) is None
    named = Signature((Method("forward", tuple(t._replace(name="x") for t in _sig("float32").methods[0].inputs),
                              _sig("float32").methods[0].outputs, _sig("float32").methods[0].buffers),))
    assert dtype_or_shape_difference(named, _sig("float32")) is None  # names are the user's to decide
