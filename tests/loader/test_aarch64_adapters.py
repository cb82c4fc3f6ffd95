"""A float16-I/O XNNPACK export behind the float32 tiers (issue 39, specs/nfat-manifest.md 5.3): each
tier container (`<model>_tiers.pack.toml`) with its fp16 tier replaced by the standard `model.half()`
export (`<model>_xnnpack_fp16io_default.pte`) and `adapt_io = true`, golden calls in float32
recorded from portable. Under `qemu-aarch64 -cpu a64fx` (fp16 arithmetic, no dot product) the
cross-built fatpte-run chooses that entry, takes the float32 calls and gives float32 outputs
within the fp16 tolerance of the model (fixtures.json "fp16io": its half-precision reference and
the float32 eager outputs); natively this machine chooses its own entry from the same container;
`fatpte check` runs every entry under the CPU model its requirements name and all agree. Part of
`make test-aarch64` (tests/loader/aarch64_builds.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.loader.aarch64_builds import MATRIX, NATIVE_BUILD, require
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
RECORDS: dict[str, Any] = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))
TIERS = RECORDS["tiers"]["models"]
FP16IO = RECORDS["fp16io"]["models"]
AARCH64_RUN = ROOT / "build" / "loader-aarch64" / "fatpte-run"
MODELS = ("mlp", "kvcache")
FP16 = "xnnpack-fp16-asimdhp"


def fatpte_cli(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(NATIVE_BUILD / "fatpte-run"),
                           *map(str, args)], capture_output=True, text=True, timeout=900, check=False)


def container(model: str, tmp: Path) -> Path:
    """The tier container with the float16-I/O export as its fp16 tier, behind an adapter."""
    text = (FIXTURES / f"{model}_tiers.pack.toml").read_text(encoding="utf-8")
    fp16 = "mlp_xnnpack_fp16.pte" if model == "mlp" else "kvcache_xnnpack_fp16_default.pte"
    assert f'payload = "{fp16}"' in text
    text = text.replace(f'payload = "{fp16}"', f'payload = "{FP16IO[model]["file"]}"')
    text = text.replace('payload = "', f'payload = "{FIXTURES}/')
    for name, variant in ((FP16, "xnnpack-fp16"), ("xnnpack-int8-asimddp", "xnnpack-int8")):
        tol = (FP16IO[model]["tolerance"] if name == FP16 else TIERS[model]["variants"][variant]["tolerance"])["eager"]
        text = text.replace(f'name = "{name}"\n', f'name = "{name}"\ngolden_tolerance = {{ atol = {tol["atol"]}, '
                            f'rtol = {tol["rtol"]} }}\n')
    (tmp / "calls.json").write_text(json.dumps(TIERS[model]["calls"]))
    toml = tmp / f"{model}.pack.toml"
    toml.write_text('adapt_io = true\ngolden = "calls.json"\ngolden_from = "portable"\n' + text)
    out = tmp / f"{model}.nfat"
    done = fatpte_cli("pack", "-q", "-f", "-o", out, "--from", toml)
    assert done.returncode == 0, done.stderr
    return out


def within(got: list[list[dict[str, Any]]], want: list[list[dict[str, Any]]], tol: dict[str, float]) -> float:
    """The largest max|got - want| / (atol + rtol * max|want|) over every output of every call."""
    worst = 0.0
    for g_call, w_call in zip(got, want, strict=True):
        for g, w in zip(g_call, w_call, strict=True):
            assert g["dtype"] == "float32" and g["shape"] == w["shape"], (g, w)
            scale = max(abs(v) for v in w["values"])
            diff = max(abs(a - b) for a, b in zip(g["values"], w["values"], strict=True))
            worst = max(worst, diff / (tol["atol"] + tol["rtol"] * scale))
    return worst


@pytest.mark.parametrize("model", MODELS)
def test_a64fx_chooses_the_float16_export_through_its_adapter(model: str, tmp_path: Path) -> None:
    require(native=True)
    out = container(model, tmp_path)
    cpu = MATRIX.emulated_cpu("a64fx")
    done = cpu.run("fatpte-run", str(out), "--inputs", str(tmp_path / "calls.json"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["chosen"] == FP16
    assert "signature adapter, converted at the edge: inputs[0] float32 <- float16, outputs[0] float32 <- float16" \
        in report["dispatch"]
    got = [c["outputs"] for c in report["calls"]]
    tolerance = FP16IO[model]["tolerance"]
    assert within(got, FP16IO[model]["reference"], tolerance["reference"]) <= 1
    assert within(got, [c["outputs"] for c in TIERS[model]["calls"]], tolerance["eager"]) <= 1
    served = cpu.run("fatpte-run", str(out), "--inputs", str(tmp_path / "calls.json"), "--self-test", "--json")
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)["chosen"] == FP16


@pytest.mark.parametrize("model", MODELS)
def test_natively_the_same_container_serves_this_machine(model: str, tmp_path: Path) -> None:
    require(native=True)
    out = container(model, tmp_path)
    done = MATRIX.native_cpu().run("fatpte-run", str(out), "--inputs", str(tmp_path / "calls.json"), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["chosen"] in ("xnnpack-fp32-avx2", "portable")
    got = [c["outputs"] for c in report["calls"]]
    assert within(got, [c["outputs"] for c in TIERS[model]["calls"]], {"atol": 1e-6, "rtol": 1e-5}) <= 1


def test_check_passes_every_entry_under_the_cpu_its_requirements_name(tmp_path: Path) -> None:
    require(native=True)
    out = container("mlp", tmp_path)
    done = fatpte_cli("check", out, "--json", "--aarch64-runtime", AARCH64_RUN)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert {e["name"]: e["state"] for e in report["entries"]} == {e: "agrees" for e in (
        "xnnpack-int8-asimddp", FP16, "xnnpack-fp32-aarch64", "xnnpack-fp32-avx2", "portable")}
    fp16 = next(e for e in report["entries"] if e["name"] == FP16)
    assert fp16["runner"] == "qemu cortex-a76" and fp16["outputs"] and all(o["passed"] for o in fp16["outputs"])
    # On a64fx itself: the entries it can run agree, the fp16 one through its adapter.
    done = fatpte_cli("check", out, "--json", "--aarch64-runtime", AARCH64_RUN, "--cpus", "a64fx")
    report = json.loads(done.stdout)
    states = {e["name"]: e["state"] for e in report["entries"]}
    assert states[FP16] == states["xnnpack-fp32-aarch64"] == states["portable"] == "agrees", states
