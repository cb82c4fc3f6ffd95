"""The packing policy (fatpte/ops/pack_policy.py): `fatpte pack` and `fatpte.pack` make the same
specializations of the same inputs, so they write byte-identical containers, ExecuTorch files
(.pte, .ptn, .ptd) included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main
from fatpte.errors import ErrorCode, FatpteError
from fatpte.ops.pack_policy import resolve
from fatpte.ops.specialization import Specialization
from tests.paths import ET_FIXTURES

PORTABLE = ET_FIXTURES / "mlp_portable.pte"
XNNPACK = ET_FIXTURES / "mlp_xnnpack.pte"
PTN = ET_FIXTURES / "mlp.ptn"
EXTERNAL = ET_FIXTURES / "mlp_portable_external.pte"
PTD = ET_FIXTURES / "mlp_portable_external._default_external_constant.ptd"
NATIVE_EXTERNAL = ET_FIXTURES / "mlp_native_external.pte"
NATIVE_PTD = ET_FIXTURES / "mlp_native_external.native_weights.ptd"

# (command-line arguments, the same as `fatpte.pack` arguments, its keyword arguments)
CASES: dict[str, tuple[list[str], list[Any], dict[str, Any]]] = {
    "bare programs": ([str(PORTABLE), str(XNNPACK)], [PORTABLE, XNNPACK], {}),
    "named program": ([f"cpu:portable={PORTABLE}"], [Specialization("portable", str(PORTABLE), name="cpu")], {}),
    "package": ([f"native={PTN}", str(PORTABLE)], [Specialization("native", str(PTN)), PORTABLE], {}),
    "bare package": ([str(PTN)], [PTN], {}),
    "version 1": ([str(PORTABLE), str(PTN), "--format-version", "1"], [PORTABLE, PTN], {"version": 1}),
    "version 1 unchecked": ([str(PORTABLE), str(PTN), "--format-version", "1", "--no-signature-check"],
                            [PORTABLE, PTN], {"version": 1, "check_signatures": False}),
    "data": ([str(EXTERNAL), str(XNNPACK), "--data", str(PTD)], [EXTERNAL, XNNPACK], {"data": [str(PTD)]}),
    "named data": ([str(EXTERNAL), str(NATIVE_EXTERNAL), "--data", f"native={NATIVE_PTD}", "--data",
                    f"portable={PTD}"], [EXTERNAL, NATIVE_EXTERNAL],
                   {"data": [f"native={NATIVE_PTD}", f"portable={PTD}"]}),
    "shared named data": ([str(EXTERNAL), str(PTN), str(XNNPACK), "--share-pte-named-data"],
                          [EXTERNAL, PTN, XNNPACK], {"share_named_data": True}),
    "no signature check": ([str(PORTABLE), str(XNNPACK), "--no-signature-check"], [PORTABLE, XNNPACK],
                           {"check_signatures": False}),
    "signature from": ([str(PORTABLE), str(XNNPACK), "--signature-from", "xnnpack"], [PORTABLE, XNNPACK],
                       {"signature_from": "xnnpack"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_command_line_and_the_api_write_the_same_bytes(tmp_path: Path, case: str) -> None:
    args, items, kwargs = CASES[case]
    by_cli, by_api = tmp_path / "cli.nfat", tmp_path / "api.nfat"
    result = CliRunner().invoke(main, ["pack", "-q", "-o", str(by_cli), *args])
    assert result.exit_code == 0, result.output
    fatpte.pack(items, by_api, **kwargs)
    assert by_api.read_bytes() == by_cli.read_bytes()


def test_a_package_given_to_the_api_states_its_signature(tmp_path: Path) -> None:
    """Before the policy was shared, `fatpte.pack` stored a .ptn as opaque bytes."""
    fatpte.pack([Specialization("native", str(PTN))], tmp_path / "p.nfat")
    with fatpte.open(tmp_path / "p.nfat") as c:
        entry = c.manifest.entries[0]  # type: ignore[union-attr]
        assert entry.signature is not None and entry.executorch_backends == ("NativeBackend",)


def test_version_1_refuses_two_different_programs_from_the_api_too(tmp_path: Path) -> None:
    other = ET_FIXTURES / "add_portable.pte"
    with pytest.raises(FatpteError) as info:
        fatpte.pack([PORTABLE, other], tmp_path / "v1.nfat", version=1)
    assert info.value.code is ErrorCode.SIGNATURE_MISMATCH


def test_what_the_caller_states_is_kept(tmp_path: Path) -> None:
    spec = Specialization("portable", str(PORTABLE), name="cpu", priority=3, requires={"arch": ["x86_64"]},
                          provenance={"origin": "test"}, payload_sha256=True)
    (got,) = resolve([spec])
    assert (got.name, got.priority, got.requires, got.payload_sha256) == ("cpu", 3, {"arch": ["x86_64"]}, True)
    assert got.provenance == {"origin": "test"} and got.signature is not None
    # In version 1 it is the caller's own Specialization, so what version 1 cannot hold is refused.
    (v1,) = resolve([spec], version=1)
    assert v1 is spec
    with pytest.raises(FatpteError) as info:
        fatpte.pack([spec], tmp_path / "v1.nfat", version=1)
    assert info.value.code is ErrorCode.NOT_REPRESENTABLE_IN_V1


def test_a_stated_signature_is_left_to_pack_to_check() -> None:
    (plain,) = resolve([PORTABLE])
    stated = Specialization("portable", str(PORTABLE), signature=plain.signature)
    assert resolve([stated]) == [stated]
    opaque = Specialization("raw", b"bytes")
    assert resolve([opaque]) == [opaque]


def test_a_pack_toml_states_what_each_entry_is(tmp_path: Path) -> None:
    """pack_from_file writes the file's specializations as they are: a .ptn without
    `signature = "from-payload"` stays opaque bytes, so unpack's pack.toml gives its container back."""
    toml = tmp_path / "pack.toml"
    toml.write_text(f'[[specialization]]\nbackend_id = "native"\npayload = "{PTN.as_posix()}"\n', encoding="utf-8")
    fatpte.pack_from_file(toml, tmp_path / "t.nfat")
    with fatpte.open(tmp_path / "t.nfat") as c:
        assert c.manifest is None
