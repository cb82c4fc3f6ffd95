"""The feature-tier fixtures (issue 29): fp32, fp16 and int8 XNNPACK lowerings and the portable one of
mlp and kvcache (tests/fixtures/executorch/, fixtures.json "tiers"), and the `<model>_tiers.pack.toml`
that packs them into one container whose entries target CPU feature levels.

Without torch: the records are complete and consistent with the files; every variant of a model
has one program signature, the fp32 eager model's; the pack.toml packs, and selection on device
profiles of each ARM feature level and of x86 picks the entry its requirements say. With the
ExecuTorch toolchain (.venv-et, `make test-executorch`): each variant runs in ExecuTorch's runtime on
this machine within its tolerance of its own reference and of the fp32 eager outputs, and the
references recorded are what the fixture script's models compute now. Running the container on
emulated ARM CPUs with the C++ runner is tools/tier_matrix.py's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.executorch import program_signature, read_program
from tests.paths import ET_FIXTURES
from tests.scripts import load_script

TIERS: dict[str, Any] = json.loads((ET_FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["tiers"]
MODELS = sorted(TIERS["models"])
VARIANTS = [(m, v) for m in MODELS for v in sorted(TIERS["models"][m]["variants"])]
ARM = "aarch64"
MATRIX = load_script("tools/tier_matrix.py")


def _profile(name: str, arch: str, features: list[str]) -> fatpte.DeviceProfile:
    return fatpte.DeviceProfile(name, "linux", arch, features)


# One profile per feature level the container distinguishes, with the entry its requirements say.
LEVELS = [
    (_profile("armv8.0", ARM, ["asimd"]), "xnnpack-fp32-aarch64"),  # cortex-a53
    (_profile("fp16-no-dotprod", ARM, ["asimd", "fphp", "asimdhp", "sve"]), "xnnpack-fp16-asimdhp"),  # a64fx
    (_profile("dotprod-no-fp16", ARM, ["asimd", "asimddp"]), "xnnpack-int8-asimddp"),
    (fatpte.DeviceProfile.load("raspberry-pi-5"), "xnnpack-int8-asimddp"),  # cortex-a76
    (fatpte.DeviceProfile.load("arm64-i8mm-sve2"), "xnnpack-int8-asimddp"),
    (fatpte.DeviceProfile.load("x86-64-v3"), "xnnpack-fp32-avx2"),
    (fatpte.DeviceProfile.load("x86-64-v2"), "portable"),
]


def largest_error(got: list[list[dict[str, Any]]], want: list[list[dict[str, Any]]],
                  tolerance: dict[str, float]) -> tuple[float, bool]:
    """fixtures.json's rule, per output tensor (tools/tier_matrix.py applies it to fatpte-run's outputs)."""
    worst, ok, kinds = MATRIX.largest_error(got, want, tolerance)
    assert not kinds
    return worst, ok


def test_the_tiers_cover_both_models_and_every_precision() -> None:
    assert MODELS == ["kvcache", "mlp"]
    for model in MODELS:
        variants = TIERS["models"][model]["variants"]
        assert {v["precision"] for v in variants.values()} == {"fp32", "fp16", "int8"}
        assert {v["backend"] for v in variants.values()} == {"portable", "xnnpack"}
        assert len(TIERS["models"][model]["calls"]) >= (3 if model == "kvcache" else 2)
    assert TIERS["tolerance_rule"] == "per output tensor: max|got - want| <= atol + rtol * max|want|"


@pytest.mark.parametrize(("model", "variant"), VARIANTS)
def test_every_variant_has_the_fp32_program_signature(model: str, variant: str) -> None:
    record = TIERS["models"][model]
    base = program_signature(read_program((ET_FIXTURES / record["variants"]["xnnpack-fp32"]["file"]).read_bytes()))
    info = record["variants"][variant]
    sig = program_signature(read_program((ET_FIXTURES / info["file"]).read_bytes()))
    assert sig == base
    (method,) = sig["methods"]
    assert {t["dtype"] for t in method["inputs"] + method["outputs"]} <= {"float32", "int64"}
    assert [t["dtype"] for t in method["buffers"]] == (["float32"] if model == "kvcache" else [])
    # The references have the program's outputs, one list per recorded call.
    assert len(info["reference"]) == len(record["calls"])
    for outs in info["reference"]:
        assert [(o["dtype"], o["shape"]) for o in outs] == [(t["dtype"], t["shape"]) for t in method["outputs"]]


@pytest.mark.parametrize(("model", "variant"), VARIANTS)
def test_each_reference_is_within_its_tolerance_of_the_fp32_eager_outputs(model: str, variant: str) -> None:
    record = TIERS["models"][model]
    info = record["variants"][variant]
    eager = [c["outputs"] for c in record["calls"]]
    worst, ok = largest_error(info["reference"], eager, info["tolerance"]["eager"])
    assert ok, (variant, worst)
    if info["precision"] == "fp32":
        assert info["reference"] == eager
    else:  # a lower precision is a different function: its reference is not the fp32 one
        assert worst > 1e-5


@pytest.mark.parametrize("model", MODELS)
def test_the_pack_toml_packs_every_variant_and_each_level_selects_its_entry(tmp_path: Path, model: str) -> None:
    record = TIERS["models"][model]
    pack_toml = ET_FIXTURES / record["container"]["pack_toml"]
    dest = fatpte.pack_from_file(pack_toml, tmp_path / "tiers.nfat")
    assert fatpte.validate(dest).ok
    entries = record["container"]["entries"]
    with fatpte.open(dest) as c:
        assert [e.name for e in c.entries] == [e["name"] for e in entries]
        assert entries[-1] == {"name": "portable", "variant": "portable", "priority": 0, "requires": {}}
        for e in entries:  # each entry holds the program of its variant
            want = (ET_FIXTURES / record["variants"][e["variant"]]["file"]).read_bytes()
            assert program_signature(read_program(bytes(c.payload(c.entry(e["name"]))))) == \
                program_signature(read_program(want))
        for profile, expected in LEVELS:
            assert fatpte.select(c, profile).chosen.name == expected, profile.name


# -- with the ExecuTorch toolchain ---------------------------------------------------------------


def _toolchain() -> tuple[Any, Any, Any]:
    torch = pytest.importorskip("torch")
    portable_lib = pytest.importorskip("executorch.extension.pybindings.portable_lib")
    return torch, portable_lib, load_script("tools/make_executorch_fixtures.py")


def _as_json(t: Any) -> dict[str, Any]:
    return {"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape), "values": t.flatten().tolist()}


@pytest.mark.parametrize(("model", "variant"), VARIANTS)
def test_each_variant_runs_here_within_its_tolerance(model: str, variant: str) -> None:
    torch, portable_lib, _ = _toolchain()
    record = TIERS["models"][model]
    info = record["variants"][variant]
    method = portable_lib._load_for_executorch(str(ET_FIXTURES / info["file"]))
    got = []
    for call in record["calls"]:
        inputs = [torch.tensor(t["values"], dtype=getattr(torch, t["dtype"])).reshape(t["shape"])
                  for t in call["inputs"]]
        got.append([_as_json(o) for o in method.forward(inputs)])
    for against, want in (("reference", info["reference"]), ("eager", [c["outputs"] for c in record["calls"]])):
        worst, ok = largest_error(got, want, info["tolerance"][against])
        assert ok and math.isfinite(worst), (against, worst)
    if model == "kvcache":  # state carried from call to call: each call fills one more cache row
        assert got[0] != got[1]


@pytest.mark.parametrize("model", MODELS)
def test_the_recorded_calls_and_references_are_what_the_script_computes(model: str) -> None:
    torch, _, tool = _toolchain()
    calls, _ = tool._tier_calls()[model]
    record = TIERS["models"][model]
    assert [[_as_json(t) for t in c] for c in calls] == [c["inputs"] for c in record["calls"]]
    ctor, half = {"mlp": (tool.Mlp, tool.HalfPrecision), "kvcache": (tool.KvCache, tool.KvCacheHalf)}[model]
    torch.manual_seed(0)
    base = ctor().eval()
    assert tool._eager_outputs(base, calls) == [c["outputs"] for c in record["calls"]]
    assert tool._eager_outputs(half(base).eval(), calls) == record["variants"]["xnnpack-fp16"]["reference"]
