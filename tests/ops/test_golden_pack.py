"""Golden calls at pack time (fatpte/ops/golden.py): reading calls.json, tensor keys shared where
equal, tolerances (dtype default, the call's, the entry's), which entries get them, and that
thinning, remove and replace keep the golden tensors of the entries they keep. Running them is
tests/loader/test_cpp_golden.py."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.manifest import model as M
from fatpte.ops import golden as G
from fatpte.ops.edit import remove
from fatpte.ops.packfile import pack_from_file
from fatpte.ops.specialization import Specialization
from fatpte.ops.thinning import thin

SIG = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 2]}],
                    "outputs": [{"dtype": "float32", "shape": [1]}]}]}


def tensor(values: list[float], shape: list[int] | None = None, dtype: str = "float32", **extra: Any) -> dict[str, Any]:
    return {"dtype": dtype, "shape": [1, len(values)] if shape is None else shape, "values": values, **extra}


CALLS = [{"inputs": [tensor([1.0, 2.0])], "outputs": [tensor([3.0], [1])]},
         {"inputs": [tensor([1.0, 2.0])], "outputs": [tensor([3.5], [1], atol=0.5)]}]


def specs(**extra: Any) -> list[Specialization]:
    return [Specialization("xnnpack", b"fast" * 10, name="fast", signature=SIG, **extra),
            Specialization("portable", b"slow" * 10, name="slow", signature=SIG,
                           golden_tolerance={"atol": 1e-3, "rtol": 0.04})]


def packed(tmp_path: Path, specs_: list[Specialization] | None = None, **kw: Any) -> fatpte.Container:
    dest = fatpte.pack(specs() if specs_ is None else specs_, tmp_path / "g.nfat", golden=CALLS, **kw)
    report = fatpte.validate(dest)
    assert report.ok, report.first_error
    return fatpte.open(dest)


def test_tensors_are_keyed_by_content_and_stored_once(tmp_path: Path) -> None:
    with packed(tmp_path) as c:
        assert c.manifest is not None
        fast, slow = c.manifest.entries
        # One input tensor for both calls, two output tensors: three keys, the same for both entries.
        assert set(fast.golden_keys()) == set(slow.golden_keys()) and len(fast.golden_keys()) == 3
        assert fast.golden[0].inputs == fast.golden[1].inputs
        assert all(k.startswith(G.KEY_PREFIX) and len(k) == len(G.KEY_PREFIX) + 32 for k in fast.golden_keys())
        assert bytes(c.named_data(fast.golden[0].inputs[0])) == struct.pack("<2f", 1.0, 2.0)
        assert c.manifest.layout(fast.golden[0].inputs[0]) == M.TensorLayout("float32", (1, 2))
        assert fast.named_data == () and slow.named_data == ()  # golden keys are never the program's
        assert len(c.segments) == 3


def test_tolerance_is_the_larger_of_the_calls_and_the_entrys(tmp_path: Path) -> None:
    with packed(tmp_path) as c:
        assert c.manifest is not None
        fast, slow = c.manifest.entries
        assert [(o.atol, o.rtol) for call in fast.golden for o in call.outputs] == [(1e-5, 1e-5), (0.5, 1e-5)]
        assert [(o.atol, o.rtol) for call in slow.golden for o in call.outputs] == [(1e-3, 0.04), (0.5, 0.04)]
        assert dict(fast.provenance)[M.GOLDEN_DIGEST_KEY] == M.golden_digest(fast.golden)


def test_integers_default_to_exact_and_bfloat16_rounds_to_nearest_even() -> None:
    call = G.read_calls([{"inputs": [], "outputs": [tensor([7], [1], "int64"), tensor([1.00390625], [1], "bfloat16")]}],
                        need_outputs=True)[0]
    golden = G.golden_calls([call], None)[0]
    assert [(o.atol, o.rtol) for o in golden.outputs] == [(0.0, 0.0), (1e-2, 1.6e-2)]
    assert call.outputs is not None and call.outputs[1].data == b"\x80\x3f"  # 1.00390625 is a tie: rounds to 1.0


def test_entries_without_a_signature_get_none(tmp_path: Path) -> None:
    mixed = [Specialization("dense", b"opaque" * 8, name="opaque"), *specs()]
    with packed(tmp_path, mixed) as c:
        assert c.manifest is not None
        assert [bool(e.golden) for e in c.manifest.entries] == [False, True, True]
    with pytest.raises(FatpteError) as info:
        fatpte.pack([Specialization("dense", b"opaque")], tmp_path / "x.nfat", golden=CALLS)
    assert info.value.code is ErrorCode.NO_GOLDEN_CALLS


@pytest.mark.parametrize(("calls", "code", "field"), [
    ([], ErrorCode.NO_GOLDEN_CALLS, "golden"),
    ([{"inputs": [tensor([1.0, 2.0])]}], ErrorCode.NO_GOLDEN_CALLS, "golden[0].outputs"),
    ([{"inputs": [tensor([1.0], [1, 2])], "outputs": []}], ErrorCode.INVALID_ARGUMENT, "golden[0].inputs[0].values"),
    ([{"inputs": [tensor([300], [1], "uint8")], "outputs": []}], ErrorCode.INVALID_ARGUMENT,
     "golden[0].inputs[0].values[0]"),
    ([{"inputs": [tensor([1.5], [1], "int32")], "outputs": []}], ErrorCode.INVALID_ARGUMENT,
     "golden[0].inputs[0].values[0]"),
    ([{"inputs": [tensor([1.0], [1], "complex64")], "outputs": []}], ErrorCode.INVALID_ARGUMENT,
     "golden[0].inputs[0].dtype"),
    ([{"inputs": [], "outputs": [tensor([1.0], [1], rtol=-1)]}], ErrorCode.INVALID_ARGUMENT,
     "golden[0].outputs[0].rtol"),
    ([{"method": "", "inputs": [], "outputs": []}], ErrorCode.INVALID_ARGUMENT, "golden[0].method"),
])
def test_bad_calls_are_refused_naming_the_field(calls: list[Any], code: ErrorCode, field: str) -> None:
    with pytest.raises(FatpteError) as info:
        G.read_calls(calls, need_outputs=True)
    assert (info.value.code, info.value.field) == (code, field)


def test_calls_that_do_not_fit_the_signature_are_refused(tmp_path: Path) -> None:
    wrong = [{"inputs": [tensor([1.0, 2.0, 3.0])], "outputs": [tensor([3.0], [1])]}]
    with pytest.raises(FatpteError) as info:
        fatpte.pack(specs(), tmp_path / "x.nfat", golden=wrong)
    assert info.value.code is ErrorCode.GOLDEN_CALL_MISMATCH
    assert not (tmp_path / "x.nfat").exists()


def test_golden_from_needs_calls_and_a_caller_key_may_not_take_a_golden_one(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        fatpte.pack(specs(), tmp_path / "x.nfat", golden_from="fast")
    assert info.value.code is ErrorCode.NO_GOLDEN_CALLS
    key = G.Tensor("float32", (1, 2), struct.pack("<2f", 1.0, 2.0)).key
    with pytest.raises(FatpteError) as info:
        fatpte.pack(specs(), tmp_path / "x.nfat", golden=CALLS, named_data={key: b"12345678"})
    assert info.value.code is ErrorCode.NAMED_DATA_CONFLICT


def test_thinning_keeps_the_golden_tensors_of_the_kept_entries(tmp_path: Path) -> None:
    mixed = [Specialization("dense", b"opaque" * 8, name="opaque"), *specs()]
    with packed(tmp_path, mixed) as c:
        assert c.manifest is not None
        keys = set(c.manifest.entries[1].golden_keys())
    thin(tmp_path / "g.nfat", tmp_path / "slow.nfat", names=["slow"])
    thin(tmp_path / "g.nfat", tmp_path / "opaque.nfat", names=["opaque"])
    assert fatpte.validate(tmp_path / "slow.nfat").ok and fatpte.validate(tmp_path / "opaque.nfat").ok
    with fatpte.open(tmp_path / "slow.nfat") as c:
        assert c.manifest is not None and set(c.manifest.keys) == keys and c.manifest.entries[0].golden
    with fatpte.open(tmp_path / "opaque.nfat") as c:
        assert c.manifest is not None and c.manifest.keys == {}


def test_remove_keeps_and_drops_golden_tensors_with_their_entries(tmp_path: Path) -> None:
    packed(tmp_path).close()
    remove(tmp_path / "g.nfat", tmp_path / "one.nfat", ["fast"])
    assert fatpte.validate(tmp_path / "one.nfat").ok
    with fatpte.open(tmp_path / "one.nfat") as c, fatpte.open(tmp_path / "g.nfat") as before:
        assert c.manifest is not None and before.manifest is not None
        assert c.manifest.entries[0].golden == before.manifest.entries[1].golden


def test_pack_toml_states_golden_calls_and_tolerances(tmp_path: Path) -> None:
    (tmp_path / "calls.json").write_text(json.dumps(CALLS))
    (tmp_path / "a.bin").write_bytes(b"fast" * 10)
    (tmp_path / "pack.toml").write_text(
        'golden = "calls.json"\n\n[[specialization]]\nname = "fast"\nbackend_id = "xnnpack"\npayload = "a.bin"\n'
        'golden_tolerance = { atol = 0.25 }\n[specialization.signature]\nmethods = [{ name = "forward", '
        'inputs = [{ dtype = "float32", shape = [1, 2] }], outputs = [{ dtype = "float32", shape = [1] }] }]\n')
    pack_from_file(tmp_path / "pack.toml", tmp_path / "t.nfat")
    with fatpte.open(tmp_path / "t.nfat") as c:
        assert c.manifest is not None
        assert [o.atol for call in c.manifest.entries[0].golden for o in call.outputs] == [0.25, 0.5]
    (tmp_path / "bad.toml").write_text(
        (tmp_path / "pack.toml").read_text().replace("atol = 0.25", "atol = -1"))
    with pytest.raises(FatpteError) as info:
        pack_from_file(tmp_path / "bad.toml", tmp_path / "u.nfat")
    assert info.value.code is ErrorCode.BAD_PACK_FILE and info.value.field == "specialization[0].golden_tolerance.atol"


def test_the_python_api_takes_the_same_as_the_command_line(tmp_path: Path) -> None:
    tolerant = [dataclasses.replace(s, golden_tolerance={"rtol": 0.5}) for s in specs()]
    with packed(tmp_path, tolerant) as c:
        assert c.manifest is not None
        assert {o.rtol for e in c.manifest.entries for call in e.golden for o in call.outputs} == {0.5}


def test_unpack_writes_golden_calls_that_pack_again_byte_for_byte(tmp_path: Path) -> None:
    from fatpte.ops.unpack import unpack_to_dir

    packed(tmp_path).close()
    done = unpack_to_dir(tmp_path / "g.nfat", tmp_path / "out")
    assert done.reproducible is True
    assert "golden = [{" in (tmp_path / "out" / "pack.toml").read_text()
    pack_from_file(tmp_path / "out" / "pack.toml", tmp_path / "again.nfat")
    assert (tmp_path / "again.nfat").read_bytes() == (tmp_path / "g.nfat").read_bytes()


def test_info_shows_the_golden_calls(tmp_path: Path) -> None:
    from fatpte.ops.info import summary

    with packed(tmp_path) as c:
        rows = summary(c)["entries"]
    assert [len(r["golden"]) for r in rows] == [2, 2]
    assert rows[1]["golden"][1]["outputs"][0] == {"key": rows[1]["golden"][1]["outputs"][0]["key"], "atol": 0.5,
                                                  "rtol": 0.04}
