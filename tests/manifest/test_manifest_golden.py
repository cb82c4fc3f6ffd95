"""Golden calls in the manifest (specs/nfat-manifest.md section 11): the records round trip, exact
tolerances, the value rule 2.2.11, the canonical encoding pinned byte for byte, the fit of a golden
tensor to a method's tensor, and the consistency rules of section 7 step 10."""

from __future__ import annotations

import hashlib
import math
import struct

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.manifest import codec as MC
from fatpte.manifest import model as M
from fatpte.manifest.rules import golden_problems

SIG = M.Signature((M.Method("forward", (M.TensorSpec("float32", (M.Dim(1), M.Dim(0, "seq"))), M.TensorSpec("Int")),
                            (M.TensorSpec("float32", (M.Dim(1), M.Dim(3))),)),))
CALL = M.GoldenCall("forward", ("in.x", "in.n"), (M.GoldenOutput("out.y", 1e-5, 0.04),))


def manifest(*, golden: tuple[M.GoldenCall, ...] = (CALL,), signature: M.Signature | None = SIG,
             layouts: dict[str, M.TensorLayout] | None = None, provenance: tuple[tuple[str, str], ...] = ()
             ) -> M.Manifest:
    layouts = {"in.x": M.TensorLayout("float32", (1, 7)), "in.n": M.TensorLayout("int64", ()),
               "out.y": M.TensorLayout("float32", (1, 3))} if layouts is None else layouts
    keys = tuple((k, i) for i, k in enumerate(sorted(layouts)))
    entry = M.ManifestEntry("cpu", signature=signature, golden=golden, provenance=provenance)
    return M.Manifest(3, (entry,), keys, tuple(sorted(layouts.items())))


def test_golden_calls_round_trip_with_exact_tolerances() -> None:
    tiny = M.GoldenCall("forward", ("in.x", "in.n"), (M.GoldenOutput("out.y", 5e-324, 1.0000000000000002),))
    m = manifest(golden=(CALL, tiny))
    back = MC.decode(MC.encode(m))
    assert back == m
    assert back.entries[0].golden[1].outputs[0].atol == 5e-324  # binary64, not a rounded text
    assert back.revision == 3 and M.required_revision(m) == 3
    assert M.required_revision(m._replace(entries=(m.entries[0]._replace(golden=()),))) == 2


def test_keys_shared_across_calls_are_written_once() -> None:
    one = MC.encode(manifest(golden=(CALL,)))
    three = MC.encode(manifest(golden=(CALL, CALL, CALL)))
    key = b"out.y\0"
    assert one.count(key) == 2 and three.count(key) == 2  # the golden output's key and the named-data key


@pytest.mark.parametrize(("field", "value"), [("atol", -1.0), ("rtol", math.nan), ("atol", math.inf),
                                              ("rtol", -0.0 - 1e-300)])
def test_a_tolerance_must_be_finite_and_not_negative(field: str, value: float) -> None:
    out = CALL.outputs[0]._replace(**{field: value})
    data = MC.encode(manifest(golden=(CALL._replace(outputs=(out,)),)))
    with pytest.raises(FatpteError) as info:
        MC.decode(data)
    assert info.value.code is ErrorCode.MANIFEST_VALUE_INVALID
    assert info.value.field == f"manifest.entries[0].golden[0].outputs[0].{field}"


@pytest.mark.parametrize(("call", "field"), [
    (CALL._replace(method=""), "manifest.entries[0].golden[0].method"),
    (CALL._replace(inputs=("in.x", "")), "manifest.entries[0].golden[0].inputs[1]"),
    (CALL._replace(outputs=(M.GoldenOutput("x" * 4097),)), "manifest.entries[0].golden[0].outputs[0].key"),
])
def test_names_and_keys_are_1_to_4096_bytes(call: M.GoldenCall, field: str) -> None:
    with pytest.raises(FatpteError) as info:
        MC.decode(MC.encode(manifest(golden=(call,))))
    assert (info.value.code, info.value.field) == (ErrorCode.MANIFEST_VALUE_INVALID, field)


def test_the_canonical_encoding_is_pinned() -> None:
    call = M.GoldenCall("f", ("a",), (M.GoldenOutput("b", 0.5, 2.0),))
    expected = (b"\x0d\0\0\0nfat.golden/1" + b"\1\0\0\0" + b"\1\0\0\0f" + b"\1\0\0\0" + b"\1\0\0\0a"
                + b"\1\0\0\0" + b"\1\0\0\0b" + struct.pack("<dd", 0.5, 2.0))
    assert M.golden_encoding([call]) == expected
    assert M.golden_digest([call]) == hashlib.sha256(expected).hexdigest()
    assert M.golden_encoding([]) == b"\x0d\0\0\0nfat.golden/1\0\0\0\0"


@pytest.mark.parametrize(("spec", "layout", "fits"), [
    (M.TensorSpec("float32", (M.Dim(1), M.Dim(3))), M.TensorLayout("float32", (1, 3)), True),
    (M.TensorSpec("float32", (M.Dim(1), M.Dim(0, "seq"))), M.TensorLayout("float32", (1, 9)), True),
    (M.TensorSpec("float32", (M.Dim(1), M.Dim(3))), M.TensorLayout("float32", (3, 1)), False),
    (M.TensorSpec("float32", (M.Dim(1), M.Dim(3))), M.TensorLayout("float16", (1, 3)), False),
    (M.TensorSpec("float32", (M.Dim(3),)), M.TensorLayout("float32", (1, 3)), False),
    (M.TensorSpec("Int"), M.TensorLayout("int64", ()), True),
    (M.TensorSpec("Int"), M.TensorLayout("int64", (1, 1)), True),
    (M.TensorSpec("Int"), M.TensorLayout("int32", ()), False),
    (M.TensorSpec("Double"), M.TensorLayout("float64", (2,)), False),
    (M.TensorSpec("Bool"), M.TensorLayout("bool", ()), True),
    (M.TensorSpec("IntList"), M.TensorLayout("int64", (2,)), False),
])
def test_a_golden_tensor_fits_the_methods_tensor(spec: M.TensorSpec, layout: M.TensorLayout, fits: bool) -> None:
    assert (M.golden_fit_problem(spec, layout) is None) is fits


def _first(m: M.Manifest) -> tuple[ErrorCode, str] | None:
    found = golden_problems(m).found
    return None if not found else (found[0][0], found[0][1])


def test_consistent_golden_calls_have_no_problem() -> None:
    assert _first(manifest()) is None
    digest = M.golden_digest((CALL,))
    assert _first(manifest(provenance=((M.GOLDEN_DIGEST_KEY, digest),))) is None


@pytest.mark.parametrize(("m", "expected"), [
    (manifest(signature=None), (ErrorCode.GOLDEN_CALL_MISMATCH, "manifest.entries[0].golden[0]")),
    (manifest(golden=(CALL._replace(method="step"),)),
     (ErrorCode.GOLDEN_CALL_MISMATCH, "manifest.entries[0].golden[0].method")),
    (manifest(golden=(CALL._replace(inputs=("in.x",)),)),
     (ErrorCode.GOLDEN_CALL_MISMATCH, "manifest.entries[0].golden[0].inputs")),
    (manifest(golden=(CALL._replace(inputs=("in.x", "nowhere")),)),
     (ErrorCode.GOLDEN_KEY_INVALID, "manifest.entries[0].golden[0].inputs[1]")),
    (manifest(layouts={"in.x": M.TensorLayout("float32", (1, 7)), "in.n": M.TensorLayout("int64", ()),
                       "out.y": M.TensorLayout("float32", (1, 3), (1, 0))}),
     (ErrorCode.GOLDEN_KEY_INVALID, "manifest.entries[0].golden[0].outputs[0].key")),
    (manifest(layouts={"in.x": M.TensorLayout("float32", (2, 7)), "in.n": M.TensorLayout("int64", ()),
                       "out.y": M.TensorLayout("float32", (1, 3))}),
     (ErrorCode.GOLDEN_CALL_MISMATCH, "manifest.entries[0].golden[0].inputs[0]")),
    (manifest(golden=(CALL._replace(outputs=()),)),
     (ErrorCode.GOLDEN_CALL_MISMATCH, "manifest.entries[0].golden[0].outputs")),
    (manifest(provenance=((M.GOLDEN_DIGEST_KEY, "00" * 32),)),
     (ErrorCode.GOLDEN_DIGEST_MISMATCH, "manifest.entries[0].provenance")),
])
def test_each_golden_rule_is_found(m: M.Manifest, expected: tuple[ErrorCode, str]) -> None:
    assert _first(m) == expected


def test_the_first_digest_stated_is_the_one_checked() -> None:
    digest = M.golden_digest((CALL,))
    ok = manifest(provenance=((M.GOLDEN_DIGEST_KEY, digest), (M.GOLDEN_DIGEST_KEY, "x")))
    assert _first(ok) is None
    bad = manifest(provenance=((M.GOLDEN_DIGEST_KEY, "x"), (M.GOLDEN_DIGEST_KEY, digest)))
    assert _first(bad) == (ErrorCode.GOLDEN_DIGEST_MISMATCH, "manifest.entries[0].provenance")
