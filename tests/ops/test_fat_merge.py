"""merge_programs: a fat program from lowered programs, without torch. The layout of what it
writes, and each refusal with the input, output or value it names. (That the result runs in
ExecuTorch: tests/loader/test_fat_merge_runtime.py.)"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import program_signature, read_program
from fatpte.executorch.rewrite import rename_delegates
from fatpte.ops.fat_delegate import nfat_delegates, validate_nfat_delegates
from fatpte.ops.fat_merge import _stand_in_problems, merge_programs
from tests.paths import ET_FIXTURES

MODELS = ["add", "mlp"]


def _read(path: Path):  # type: ignore[no-untyped-def]
    return read_program(path.read_bytes(), source=str(path))


@pytest.mark.parametrize("model", MODELS)
def test_the_fat_delegate_holds_each_lowering(tmp_path: Path, model: str) -> None:
    xnn, portable = ET_FIXTURES / f"{model}_xnnpack.pte", ET_FIXTURES / f"{model}_portable.pte"
    out = merge_programs([xnn, portable], tmp_path / "fat.pte")
    frame, fat = _read(xnn), _read(out)
    assert program_signature(fat) == program_signature(frame)
    ((source_delegate,),) = [m.delegates for m in frame.methods]
    (delegate,) = nfat_delegates(fat)
    assert delegate.backend_id == "FatpteBackend"
    assert delegate.compile_specs == source_delegate.compile_specs
    payload = bytes(fat.payload(delegate))
    assert fatpte.validate_buffer(payload).ok
    with fatpte.Container.from_buffer(payload) as c:
        assert [(e.name, e.backend_id, e.priority) for e in c.entries] == [("xnnpack", "xnnpack", 0),
                                                                          ("portable", "portable", 0)]
        # The XNNPACK payload as XNNPACK lowered it, the portable program byte for byte.
        assert bytes(c.payload("xnnpack")) == bytes(frame.payload(source_delegate))
        assert bytes(c.payload("portable")) == portable.read_bytes()
        assert c.manifest is not None
        assert [e.executorch_backends for e in c.manifest.entries] == [("XnnpackBackend",), ()]
        assert c.manifest.entries[1].provenance == (
            ("executorch.pte.sha256", hashlib.sha256(portable.read_bytes()).hexdigest()),)
    # The frame's named data (XNNPACK's weights) is where it was, byte for byte.
    assert [(n.key, out.read_bytes()[n.offset : n.offset + n.size]) for n in fat.named_data] == [
        (n.key, xnn.read_bytes()[n.offset : n.offset + n.size]) for n in frame.named_data]
    ((_, report),) = validate_nfat_delegates(fat)
    assert report.ok


def test_names_and_priorities(tmp_path: Path) -> None:
    out = merge_programs([("fast", ET_FIXTURES / "add_xnnpack.pte"), ET_FIXTURES / "add_portable.pte"],
                         tmp_path / "fat.pte", priorities={"portable": -5, "fast": 10})
    (delegate,) = nfat_delegates(_read(out))
    with fatpte.Container.from_buffer(bytes(_read(out).payload(delegate))) as c:
        assert [(e.name, e.backend_id, e.priority) for e in c.entries] == [("fast", "xnnpack", 10),
                                                                          ("portable", "portable", -5)]


def test_without_a_portable_program_the_backend_payload_alone(tmp_path: Path) -> None:
    out = merge_programs([ET_FIXTURES / "add_xnnpack.pte"], tmp_path / "fat.pte")
    (delegate,) = nfat_delegates(_read(out))
    with fatpte.Container.from_buffer(bytes(_read(out).payload(delegate))) as c:
        assert [e.name for e in c.entries] == ["xnnpack"]


@pytest.mark.parametrize(("xnnpack", "portable", "said"), [
    ("buffer_xnnpack.pte", "buffer_portable.pte",
     ("it runs aten::copy_ outside the delegate; the delegate also takes value 0 (float32[2, 3], the mutable "
      "buffer 'total'), value 1 (float32[], a constant), value 3 (float32[2, 3]), which the method neither takes "
      "nor gives")),
    ("buffer_xnnpack_default.pte", "buffer_portable_default.pte",
     "the delegate also takes value 0 (float32[2, 3], a mutable buffer)"),
    ("kvcache_xnnpack.pte", "kvcache_portable.pte",
     ("its graph is split into 3 delegate calls; it runs aten::index_put.out, aten::expand_copy.out, aten::copy_ "
      "outside the delegate; input 1 (value 2: int64[1]) does not reach the delegate; output 0 (value 20: "
      "float32[1, 1, 8]) is not the delegate's")),
    ("kvcache_xnnpack_default.pte", "kvcache_portable_default.pte", "input 1 (value 2: int64[1]) does not reach"),
    ("kvpair_xnnpack_default.pte", "kvpair_portable_default.pte", "output 0 (value 39: float32[1, 1, 8]) is not"),
])
def test_a_delegate_that_is_part_of_the_graph_is_refused_naming_what_differs(tmp_path: Path, xnnpack: str,
                                                                             portable: str, said: str) -> None:
    with pytest.raises(FatpteError) as info:
        merge_programs([ET_FIXTURES / xnnpack, ET_FIXTURES / portable], tmp_path / "fat.pte")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.source == str(ET_FIXTURES / xnnpack)
    assert info.value.field == "methods['forward']"
    assert "XnnpackBackend: the delegate does not cover the whole method, so the portable program cannot stand " \
           "in for it" in info.value.message
    assert said in info.value.message
    assert not (tmp_path / "fat.pte").exists()


def test_signatures_are_checked_as_pack_checks_them(tmp_path: Path) -> None:
    programs = [ET_FIXTURES / "add_xnnpack.pte", ET_FIXTURES / "mlp_portable.pte"]
    with pytest.raises(FatpteError) as packed:
        fatpte.pack([fatpte.pte_specialization(p) for p in programs], tmp_path / "c.nfat")
    with pytest.raises(FatpteError) as merged:
        merge_programs(programs, tmp_path / "fat.pte")
    assert packed.value.code is merged.value.code is ErrorCode.SIGNATURE_MISMATCH
    assert merged.value.message.startswith(packed.value.message)  # and then names the two files


def test_the_portable_program_must_take_and_give_the_delegate_calls_values() -> None:
    # The signature check comes first and catches a different model; this is the check behind it,
    # on the values the delegate call passes (a write-back output would be one more).
    add, mlp = _read(ET_FIXTURES / "add_xnnpack.pte"), _read(ET_FIXTURES / "mlp_xnnpack.pte")
    assert _stand_in_problems(mlp.methods[0], _read(ET_FIXTURES / "mlp_portable.pte").methods[0]) == []
    assert _stand_in_problems(add.methods[0], _read(ET_FIXTURES / "mlp_portable.pte").methods[0]) == [
        "the delegate call has 2 inputs, the portable method 1",
        "output 0 is float32[2, 3] in the delegate call but float32[1, 3] in the portable program"]


def test_two_programs_may_not_both_be_one_entry(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as info:
        merge_programs([ET_FIXTURES / "add_xnnpack.pte", ET_FIXTURES / "add_xnnpack.pte"], tmp_path / "fat.pte")
    assert info.value.code is ErrorCode.DUPLICATE_NAME
    assert "name them (NAME=PROGRAM.pte" in info.value.message


def test_a_program_that_keeps_its_state_inside_its_delegate_merges(tmp_path: Path) -> None:
    # The native backend's delegate is the whole KV-cache method, its cache inside it; the nested
    # portable program keeps its own cache as long as the fat delegate lives.
    out = merge_programs([ET_FIXTURES / "kvcache_native.pte", ET_FIXTURES / "kvcache_portable.pte"],
                         tmp_path / "fat.pte")
    (delegate,) = nfat_delegates(_read(out))
    with fatpte.Container.from_buffer(bytes(_read(out).payload(delegate))) as c:
        assert [(e.name, e.backend_id) for e in c.entries] == [("native", "native"), ("portable", "portable")]


@pytest.mark.parametrize(("programs", "code", "said"), [
    (["add_portable.pte"], ErrorCode.INVALID_ARGUMENT, "no program delegates to a backend"),
    ([("a", "add_portable.pte"), ("b", "add_portable.pte"), "add_xnnpack.pte"], ErrorCode.INVALID_ARGUMENT,
     "are both portable programs"),
    (["add_fat.pte", "add_portable.pte"], ErrorCode.INVALID_ARGUMENT, "must be lowered to one backend"),
    ([], ErrorCode.NO_SPECIALIZATIONS, "nothing to merge"),
])
def test_what_cannot_be_one_fat_program(tmp_path: Path, programs: list[str | tuple[str, str]], code: ErrorCode,
                                        said: str) -> None:
    given = [ET_FIXTURES / p if isinstance(p, str) else (p[0], ET_FIXTURES / p[1]) for p in programs]
    with pytest.raises(FatpteError) as info:
        merge_programs(given, tmp_path / "fat.pte")
    assert info.value.code is code
    assert said in info.value.message


def test_an_unknown_priority_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FatpteError, match="priority for 'xnnpak', which names no program"):
        merge_programs([ET_FIXTURES / "add_xnnpack.pte"], tmp_path / "fat.pte", priorities={"xnnpak": 1})


def test_every_backend_entry_loads_the_frames_named_data(tmp_path: Path) -> None:
    data = (ET_FIXTURES / "mlp_xnnpack.pte").read_bytes()
    program = read_program(data)
    same = tmp_path / "mlp_other.pte"
    same.write_bytes(rename_delegates(data, "OtherBackend", [(0, 0)]))
    out = merge_programs([ET_FIXTURES / "mlp_xnnpack.pte", same, ET_FIXTURES / "mlp_portable.pte"],
                         tmp_path / "fat.pte", priorities={"xnnpack": 1})  # the same weights, keys: one copy
    (delegate,) = nfat_delegates(_read(out))
    with fatpte.Container.from_buffer(bytes(_read(out).payload(delegate))) as c:
        assert [e.name for e in c.entries] == ["xnnpack", "other", "portable"]
    ref = program.named_data[0]
    changed = bytearray(same.read_bytes())
    changed[ref.offset] ^= 1
    same.write_bytes(bytes(changed))
    for second, why in ((same, "holds other bytes for"), (ET_FIXTURES / "mlp_native.pte", "does not hold")):
        with pytest.raises(FatpteError) as info:
            merge_programs([ET_FIXTURES / "mlp_xnnpack.pte", second], tmp_path / "fat.pte")
        assert info.value.code is ErrorCode.NAMED_DATA_CONFLICT
        assert info.value.source == str(second)
        assert why in info.value.message
