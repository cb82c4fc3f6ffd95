"""fatpte.executorch on the committed fixtures made by the real ExecuTorch toolchain.

The expectations come from tests/fixtures/executorch/fixtures.json, which
tools/make_executorch_fixtures.py wrote from torch.export's own graph signature when it exported
each file, so what our readers derive from the bytes is checked against what the exporter knew.
No torch is needed here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import describe, program_signature, read_program, read_ptd, sniff
from tests.paths import ET_FIXTURES

INDEX: dict[str, Any] = json.loads((ET_FIXTURES / "fixtures.json").read_text())
FILES: dict[str, Any] = INDEX["files"]
BACKEND_IDS = {"xnnpack": "XnnpackBackend", "native": "NativeBackend", "nfat": "NfatNativeBackend",
               "fat": "FatpteBackend"}
PAYLOAD_KINDS = {"xnnpack": "XH00", "native": "NPTG", "nfat": "NFAT", "fat": "NFAT"}


def test_fixtures_cover_every_model_and_lowering() -> None:
    seen = {(f["model"], f["backend"], f["buffer_names"]) for f in FILES.values()}
    for model in ("add", "mlp", "buffer", "kvcache"):
        for backend in ("portable", "xnnpack", "native", "nfat"):
            assert (model, backend, True) in seen
    # Every model with state, exported as users do (no buffer names kept) and with names kept.
    for model in ("buffer", "kvcache", "kvpair"):
        for backend in ("portable", "xnnpack", "native"):
            assert (model, backend, False) in seen and (model, backend, True) in seen
    assert sum((ET_FIXTURES / n).stat().st_size for n in FILES) < 5 * 1024 * 1024


@pytest.mark.parametrize("name", sorted(FILES))
def test_signature_matches_the_exporter(name: str) -> None:
    info = FILES[name]
    expected = info["signature"]
    d = describe(ET_FIXTURES / name)
    assert d.kind == "pte"
    (method,) = d.detail["signature"]["methods"]
    assert method["name"] == "forward"
    assert method["inputs"] == expected["user_inputs"]
    # Buffer-mutation outputs are state write-backs: they are buffers, never user outputs.
    assert method["outputs"] == expected["user_outputs"]
    # The state in the exporter's order. A buffer is named when the file records its name: the
    # native payload always does, the program only when the export kept the names.
    named = info["buffer_names"] or info["backend"] in ("native", "nfat")
    assert method["buffers"] == [b if named else {k: v for k, v in b.items() if k != "name"}
                                 for b in expected["mutable_buffers"]]


def test_the_state_is_in_the_exporters_order_not_the_registration_order() -> None:
    """kvpair registers v_cache, k_cache, a_step; the exported graph (and every lowering) uses
    k_cache, v_cache, a_step. Sorting by name would give a_step first."""
    for backend in ("portable", "xnnpack", "native"):
        (m,) = program_signature(read_program((ET_FIXTURES / f"kvpair_{backend}.pte").read_bytes()))["methods"]
        assert [b["name"] for b in m["buffers"]] == ["k_cache", "v_cache", "a_step"]


@pytest.mark.parametrize("name", sorted(FILES))
def test_delegates_and_where_their_payloads_live(name: str) -> None:
    info = FILES[name]
    d = describe(ET_FIXTURES / name)
    data = (ET_FIXTURES / name).read_bytes()
    (method,) = d.detail["methods"]
    if info["backend"] == "portable":
        assert method["delegates"] == []
        assert method["operators"]
        return
    assert method["delegates"], "a lowered model has at least one delegate"
    for dl in method["delegates"]:
        assert dl["backend_id"] == BACKEND_IDS[info["backend"]]
        assert 0 <= dl["offset"] and dl["offset"] + dl["size"] <= len(data)
        payload = data[dl["offset"] : dl["offset"] + dl["size"]]
        assert dl["payload_kind"] == PAYLOAD_KINDS[info["backend"]]
        if info["backend"] == "nfat":
            assert payload[:4] == b"NFAT"
            assert [e["name"] for e in dl["payload"]["entries"]] == ["native-avx2", "native-generic"]
            continue
        if info["backend"] == "fat":  # fatpte.ops.fat_lowering: XNNPACK's payload and a nested program
            assert payload[:4] == b"NFAT"
            assert [e["name"] for e in dl["payload"]["entries"]] == ["xnnpack", "portable"]
            continue
        assert dl["payload_kind"] == payload[4:8].decode()
        # A payload cut out of the program describes the same on its own.
        alone = describe(payload)
        assert alone.kind == ("nptg" if info["backend"] == "native" else "xnnpack")
        assert {k: v for k, v in alone.detail.items()} == dl["payload"]


def _native_methods(dl: dict[str, Any]) -> list[dict[str, Any]]:
    """The NPTG methods a delegate carries, directly or in the entries of its NFAT payload."""
    p = dl["payload"]
    if p["format"] == "NFAT":
        return [m for e in p["entries"] for m in e["payload"]["methods"]]
    return list(p["methods"])


@pytest.mark.parametrize("name", sorted(n for n, f in FILES.items() if f["backend"] in ("native", "nfat")))
def test_native_payload_keeps_mutations_out_of_user_outputs(name: str) -> None:
    expected = FILES[name]["signature"]
    (method,) = describe(ET_FIXTURES / name).detail["methods"]
    (dl,) = method["delegates"]
    methods = _native_methods(dl)
    assert len(methods) == (2 if FILES[name]["backend"] == "nfat" else 1)
    for m in methods:
        _check_native_method(m, expected)


def _check_native_method(m: dict[str, Any], expected: dict[str, Any]) -> None:
    assert [{"dtype": t["dtype"], "shape": t["shape"]} for t in m["inputs"]] == expected["user_inputs"]
    assert [{"dtype": t["dtype"], "shape": t["shape"]} for t in m["outputs"]] == expected["user_outputs"]
    assert [{"name": b["fqn"], "dtype": b["dtype"], "shape": b["shape"]} for b in m["buffers"]] == (
        expected["mutable_buffers"])
    mutation_outputs = {s["name"] for s in m["output_specs"] if s["kind"] == "buffer_mutation"}
    assert len(mutation_outputs) == len(expected["mutable_buffers"])
    assert not mutation_outputs & {t["name"] for t in m["outputs"]}


@pytest.mark.parametrize("name", sorted(n for n, f in FILES.items() if f["backend"] != "portable"))
def test_named_data_a_payload_needs_is_found(name: str) -> None:
    """Every key a delegate needs is in the program's named data or, when external, in its .ptd."""
    d = describe(ET_FIXTURES / name)
    have = {n["key"] for n in d.detail["named_data"]}
    for ptd_name in FILES[name]["external_data"]:
        have |= {n["key"] for n in describe(ET_FIXTURES / ptd_name).detail["named_data"]}
    for dl in d.detail["methods"][0]["delegates"]:
        assert _needed_keys(dl) <= have
    data = (ET_FIXTURES / name).read_bytes()
    for n in d.detail["named_data"]:
        assert n["offset"] + n["size"] <= len(data)


def _needed_keys(dl: dict[str, Any]) -> set[str]:
    """The named-data keys a delegate's payload looks up: its own, or those of its NFAT entries
    (a backend payload's keys, or an NPTG payload's methods' keys)."""
    p = dl["payload"]
    if p["format"] != "NFAT":
        return set(p["named_data_keys"])
    out: set[str] = set()
    for e in p["entries"]:
        inner = e.get("payload") or {}
        out |= set(inner.get("named_data_keys", []))
        out |= {k for m in inner.get("methods", []) for k in m.get("named_data_keys", [])}
    return out


def test_model_weights_are_named_data_of_the_native_program() -> None:
    (dl,) = describe(ET_FIXTURES / "mlp_native.pte").detail["methods"][0]["delegates"]
    assert dl["payload"]["named_data_keys"] == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]


@pytest.mark.parametrize("name", sorted(p.name for p in ET_FIXTURES.glob("*.ptd")))
def test_ptd_keys_and_sizes(name: str) -> None:
    d = describe(ET_FIXTURES / name)
    assert d.kind == "ptd"
    tensors = {n["key"]: n for n in d.detail["named_data"]}
    assert sorted(tensors) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert tensors["fc1.weight"]["shape"] == [8, 4] and tensors["fc2.weight"]["shape"] == [3, 8]
    for t in tensors.values():
        assert t["dtype"] == "float32"
        assert t["size"] == 4 * math.prod(t["shape"])
    f = read_ptd((ET_FIXTURES / name).read_bytes())
    assert f.header.segment_base_offset + f.header.segment_data_size <= f.size


def test_external_weights_leave_the_program() -> None:
    inside = read_program((ET_FIXTURES / "mlp_portable.pte").read_bytes())
    outside = read_program((ET_FIXTURES / "mlp_portable_external.pte").read_bytes())
    assert program_signature(inside) == program_signature(outside)
    plan = outside.methods[0]
    assert any(t.external for t in plan.tensors.values())
    assert not any(t.external for t in inside.methods[0].tensors.values())


def test_extended_header_locates_segments() -> None:
    data = (ET_FIXTURES / "mlp_xnnpack.pte").read_bytes()
    assert data[8:12] == b"eh00"
    p = read_program(data)
    assert p.header is not None
    assert p.header.program_size <= p.header.segment_base_offset <= len(data)
    assert all(p.header.segment_base_offset <= s.offset <= len(data) - s.size for s in p.segments)
    (dl,) = p.methods[0].delegates
    assert dl.location == "segment" and p.segments[dl.data_index].offset == dl.offset


def test_text_lists_methods_delegates_named_data_and_buffers() -> None:
    text = describe(ET_FIXTURES / "buffer_native.pte").text()
    assert "method forward" in text
    assert "delegate 0: NativeBackend, NPTG" in text
    assert "mutable buffers: total: float32[2, 3]" in text
    assert "named data: 2" in text
    # The NPTG write-back of `total` is not printed as a user output.
    outputs = [line for line in text.splitlines() if "outputs:" in line]
    assert outputs and all("aten_add_tensor" not in line for line in outputs)


def test_sniff() -> None:
    assert sniff((ET_FIXTURES / "add_portable.pte").read_bytes()[:8]) == "pte"
    assert sniff(b"\0\0\0\0NFAT") is None
    assert sniff(b"abc") is None


def test_not_an_executorch_file() -> None:
    with pytest.raises(FatpteError) as e:
        describe(b"\x08\0\0\0NFAT\x02\0\0\0")
    assert e.value.code is ErrorCode.ET_BAD_IDENTIFIER and e.value.offset == 4


def test_missing_file_is_an_io_error(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        describe(tmp_path / "absent.pte")
    assert e.value.code is ErrorCode.IO_ERROR


def test_a_file_is_mapped_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # A program with its weights inline is many GB: describing it must not read it whole.
    path = ET_FIXTURES / "mlp_xnnpack.pte"
    expected = describe(path.read_bytes(), source=str(path)).to_json()

    def refuse(self: Path) -> bytes:
        raise AssertionError(f"{self} was read whole")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    assert describe(path).to_json() == expected
    assert describe(str(path)).to_json() == expected
