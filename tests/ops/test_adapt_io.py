"""`pack --adapt-io` (specs/nfat-manifest.md 5.3): a standard float16-I/O export (model.half(),
XnnpackPartitioner, ExecuTorch 1.5.1 defaults: the committed `<model>_xnnpack_fp16io_default.pte`)
packs beside the float32 tiers behind their signature; without the flag E0411 says how; validate
checks the declared program dtypes against the program; `--signature-from` is refused where the
program would refuse its first call. Running them: tests/loader/test_adapters_runtime.py."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import fatpte
from fatpte.cli.main import main as cli
from fatpte.errors import ErrorCode, FatpteError, FatpteWarning
from fatpte.ops.packfile import pack_from_file
from fatpte.ops.pte_specialize import pte_specialization
from tests.ops.test_program_entry import _swap_payload
from tests.paths import ET_FIXTURES

MODELS = ("mlp", "kvcache")
FIXTURES: dict[str, Any] = json.loads((ET_FIXTURES / "fixtures.json").read_text(encoding="utf-8"))


def fp16io(model: str) -> Path:
    return ET_FIXTURES / f"{model}_xnnpack_fp16io_default.pte"


def fp32(model: str) -> Path:
    return ET_FIXTURES / (f"{model}_xnnpack.pte" if model == "mlp" else f"{model}_xnnpack_default.pte")


def pair(model: str, other: str | None = None) -> list[Any]:
    """The float32 XNNPACK program (entry `xnnpack`) and a float16-I/O one (entry `fp16`)."""
    return [fp32(model), fatpte.Specialization("xnnpack", str(fp16io(other or model)), name="fp16")]


def adapted_toml(model: str, dest: Path) -> Path:
    """`<model>_tiers.pack.toml` with the fp16 tier the float16-I/O export and `adapt_io = true`."""
    text = (ET_FIXTURES / f"{model}_tiers.pack.toml").read_text(encoding="utf-8")
    fp16 = "mlp_xnnpack_fp16.pte" if model == "mlp" else "kvcache_xnnpack_fp16_default.pte"
    assert f'payload = "{fp16}"' in text
    text = text.replace(f'payload = "{fp16}"', f'payload = "{fp16io(model).name}"')
    text = text.replace("version = 2\n", "version = 2\nadapt_io = true\n", 1)
    text = text.replace('payload = "', f'payload = "{ET_FIXTURES}/')
    dest.write_text(text, encoding="utf-8")
    return dest


def entry_signature(path: Path, name: str) -> fatpte.Signature:
    with fatpte.open(path) as c:
        assert c.manifest is not None
        e = c.manifest.entry(name)
        assert e is not None and e.signature is not None
        return e.signature


@pytest.mark.parametrize("model", MODELS)
def test_the_export_is_what_the_adapter_is_for(model: str) -> None:
    """The fixture's own signature: float16 where the float32 tiers have float32, nothing else."""
    own = pte_specialization(fp16io(model)).signature
    assert own is not None
    method = own["methods"][0]
    recorded = FIXTURES["fp16io"]["models"][model]["signature"]
    assert [t["dtype"] for t in method["inputs"]] == [t["dtype"] for t in recorded["user_inputs"]]
    assert "float16" in [t["dtype"] for t in method["outputs"]]


@pytest.mark.parametrize("model", MODELS)
def test_without_the_flag_E0411_says_how(tmp_path: Path, model: str) -> None:
    with pytest.raises(FatpteError) as e:
        fatpte.pack(pair(model), tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH
    assert "--adapt-io" in e.value.message and "adapt_io = true" in e.value.message


def test_E0411_offers_no_adapter_for_another_program(tmp_path: Path) -> None:
    with pytest.raises(FatpteError) as e:
        fatpte.pack(pair("mlp", "kvcache"), tmp_path / "x.nfat")
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH and "--adapt-io" not in e.value.message


@pytest.mark.parametrize("model", MODELS)
def test_the_pack_toml_key_packs_it_beside_the_float32_tiers(tmp_path: Path, model: str) -> None:
    dest = pack_from_file(adapted_toml(model, tmp_path / "t.pack.toml"), tmp_path / "t.nfat")
    report = fatpte.validate(dest)
    assert report.findings == () and not report.warnings
    fp32_sig = entry_signature(dest, "xnnpack-fp32-aarch64")
    sig = entry_signature(dest, "xnnpack-fp16-asimdhp")
    assert sig.methods[0].outputs[0].dtype == "float32" and sig.methods[0].outputs[0].program_dtype == "float16"
    assert sig.methods[0].inputs[0].program_dtype == "float16"
    assert all(t.program_dtype is None for t in sig.methods[0].inputs if t.dtype != "float32")
    # The state is the program's, float16, stated behind the float32 tiers' (nothing converts it).
    assert all(t.program_dtype == "float16" for t in sig.methods[0].buffers)
    assert all(t.program_dtype is None for m in fp32_sig.methods for t in (*m.inputs, *m.outputs, *m.buffers))
    with fatpte.open(dest) as c:
        assert c.manifest is not None and c.manifest.revision == 4


def test_the_command_line_flag(tmp_path: Path) -> None:
    dest = tmp_path / "m.nfat"
    done = CliRunner().invoke(cli, ["pack", "--adapt-io", "-o", str(dest), str(fp32("mlp")),
                                     f"fp16:xnnpack={fp16io('mlp')}"])
    assert done.exit_code == 0, done.output
    info = CliRunner().invoke(cli, ["info", str(dest)])
    assert "forward(float32[1, 4] (program float16)) -> float32[1, 3] (program float16)" in info.output
    both = CliRunner().invoke(cli, ["pack", "--adapt-io", "--signature-from", "xnnpack", "-o", str(dest), "-f",
                                    str(fp32("mlp")), f"fp16:xnnpack={fp16io('mlp')}"])
    assert both.exit_code != 0 and "adapt_io" in both.output


def test_validate_refuses_a_declaration_its_program_does_not_have(tmp_path: Path) -> None:
    """The entry states float16 behind float32; its payload replaced by a float32 program (the
    portable one, which fits in its place): E1101 naming the declaration."""
    dest = pack_from_file(adapted_toml("mlp", tmp_path / "t.pack.toml"), tmp_path / "t.nfat")
    _swap_payload(dest, "xnnpack-fp16-asimdhp", ET_FIXTURES / "mlp_portable.pte")
    report = fatpte.validate(dest)
    sig = next(f for f in report.findings if f.code is ErrorCode.PROGRAM_SIGNATURE_MISMATCH)
    with fatpte.open(dest) as c:
        assert c.manifest is not None
        index = [e.name for e in c.manifest.entries].index("xnnpack-fp16-asimdhp")
    assert sig.field == f"manifest.entries[{index}].signature"
    assert "program_dtype" in sig.message and "float32[1, 4] vs float16[1, 4]" not in sig.message
    assert "--adapt-io" in sig.message


def test_signature_from_warns_where_the_program_would_refuse_its_calls(tmp_path: Path) -> None:
    with pytest.warns(FatpteWarning) as caught:
        fatpte.pack(pair("mlp"), tmp_path / "x.nfat", signature_from="xnnpack")
    (w,) = [w.message for w in caught if isinstance(w.message, FatpteWarning)
            and w.message.code is ErrorCode.SIGNATURE_TAKEN_DIFFERS]
    assert "--adapt-io instead" in w.message and "every call of it will be refused" in w.message
    assert w.field == "specialization[1].signature"
    # Names only are the user's to decide: the rule's exception holds for them without a word.
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fatpte.pack([ET_FIXTURES / "kvpair_xnnpack.pte", ET_FIXTURES / "kvpair_native.pte"], tmp_path / "k.nfat",
                    signature_from="xnnpack")
    assert not [w for w in seen if isinstance(w.message, FatpteWarning)
                and w.message.code is ErrorCode.SIGNATURE_TAKEN_DIFFERS]


def test_add_and_replace_take_the_flag_and_remove_keeps_the_adapter(tmp_path: Path) -> None:
    from fatpte.ops.edit import add, remove, replace

    base = fatpte.pack([fp32("mlp"), ET_FIXTURES / "mlp_portable.pte"], tmp_path / "base.nfat")
    half = fatpte.Specialization("xnnpack", str(fp16io("mlp")), name="fp16")
    with pytest.raises(FatpteError) as e:
        add(base, tmp_path / "x.nfat", [half])
    assert e.value.code is ErrorCode.SIGNATURE_MISMATCH and "--adapt-io" in e.value.message
    added = add(base, tmp_path / "added.nfat", [half], adapt_io=True)
    assert entry_signature(added, "fp16").methods[0].inputs[0].program_dtype == "float16"
    replaced = replace(base, tmp_path / "replaced.nfat", "xnnpack", fp16io("mlp"), adapt_io=True)
    assert entry_signature(replaced, "xnnpack").methods[0].outputs[0].program_dtype == "float16"
    kept = remove(added, tmp_path / "kept.nfat", ["xnnpack"])
    assert entry_signature(kept, "fp16") == entry_signature(added, "fp16")
    for path in (added, replaced, kept):
        assert fatpte.validate(path).findings == ()
