"""Signature adapters at run time (specs/nfat-manifest.md 5.3): a float16-I/O XNNPACK export
(model.half(), ExecuTorch 1.5.1 defaults) packed with `--adapt-io` beside the float32 XNNPACK and
portable programs of mlp and the stateful kvcache, chosen first, takes the container's float32
calls and gives float32 outputs within the fp16 tolerance of the model (fixtures.json "fp16io" and
"tiers"); its golden calls are given in float32 and checked through the adapter (`fatpte check`,
`fatpte-run --self-test`); a caller's float16 input is refused; a declaration the program does
not have is not served (the next entry is). Under qemu on aarch64: test_aarch64_adapters.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.loader.test_cpp_golden import calls_of, fatpte_cli, run
from tests.ops.test_program_entry import _swap_payload
from tests.paths import ROOT
from tests.scripts import load_script

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True)  # `build`: tests/loader/conftest.py
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
RECORDS: dict[str, Any] = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))
TIERS = RECORDS["tiers"]["models"]
FP16IO = RECORDS["fp16io"]["models"]
MODELS = ("mlp", "kvcache")
FILES = {"mlp": ("mlp_xnnpack.pte", "mlp_portable.pte"),
         "kvcache": ("kvcache_xnnpack_default.pte", "kvcache_portable_default.pte")}


def pack(build: Path, model: str, tmp: Path) -> Path:
    """fp16io (priority 20), xnnpack (10), portable: golden calls recorded from portable, fp16io's
    tolerance its eager tolerance (fixtures.json "fp16io")."""
    out = tmp / f"{model}.nfat"
    xnnpack, portable = FILES[model]
    tol = FP16IO[model]["tolerance"]["eager"]
    done = fatpte_cli(build, "pack", "-q", "-f", "-o", out, "--adapt-io",
                      f"fp16io:xnnpack={FIXTURES / FP16IO[model]['file']}", f"xnnpack:xnnpack={FIXTURES / xnnpack}",
                      f"portable:portable={FIXTURES / portable}", "--priority", "fp16io=20", "--priority", "xnnpack=10",
                      "--golden-tolerance", f"fp16io={tol['atol']},{tol['rtol']}",
                      "--golden", calls_of(model, tmp), "--golden-from", "portable")
    assert done.returncode == 0, done.stderr
    return out


def worst(got: list[dict[str, Any]], want: list[dict[str, Any]], tol: dict[str, float]) -> float:
    """The largest max|got - want| / (atol + rtol * max|want|) over the outputs: <= 1 is within."""
    out = 0.0
    for g, w in zip(got, want, strict=True):
        assert g["dtype"] == "float32" and g["shape"] == w["shape"]
        scale = max(abs(v) for v in w["values"])
        diff = max(abs(a - b) for a, b in zip(g["values"], w["values"], strict=True))
        out = max(out, diff / (tol["atol"] + tol["rtol"] * scale))
    return out


@pytest.mark.parametrize("model", MODELS)
def test_it_is_chosen_takes_float32_calls_and_gives_outputs_within_fp16_tolerance(
        build: Path, model: str, tmp_path: Path) -> None:
    container = pack(build, model, tmp_path)
    done = run(build, container, "--inputs", calls_of(model, tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["chosen"] == "fp16io"
    got = [c["outputs"] for c in report["calls"]]
    eager = [c["outputs"] for c in TIERS[model]["calls"]]
    half = FP16IO[model]["reference"]
    tolerance = FP16IO[model]["tolerance"]
    assert max(worst(g, w, tolerance["eager"]) for g, w in zip(got, eager, strict=True)) <= 1
    assert max(worst(g, w, tolerance["reference"]) for g, w in zip(got, half, strict=True)) <= 1
    assert "signature adapter, converted at the edge: inputs[0] float32 <- float16, outputs[0] float32 <- float16" \
        in report["dispatch"]


@pytest.mark.parametrize("model", MODELS)
def test_its_golden_calls_are_float32_and_pass_through_the_adapter(build: Path, model: str, tmp_path: Path) -> None:
    container = pack(build, model, tmp_path)
    done = fatpte_cli(build, "check", container, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [e["state"] for e in report["entries"]] == ["agrees"] * 3
    fp16io = next(e for e in report["entries"] if e["name"] == "fp16io")
    assert fp16io["outputs"] and all(o["passed"] and o["max_abs"] > 0 for o in fp16io["outputs"])
    served = run(build, container, "--inputs", calls_of(model, tmp_path), "--self-test", "--json")
    assert served.returncode == 0, served.stderr
    assert json.loads(served.stdout)["chosen"] == "fp16io"


def test_a_float16_input_is_the_callers_error(build: Path, tmp_path: Path) -> None:
    container = pack(build, "mlp", tmp_path)
    calls = json.loads(calls_of("mlp", tmp_path).read_text())
    calls[0]["inputs"][0]["dtype"] = "float16"
    given = tmp_path / "half.json"
    given.write_text(json.dumps(calls[:1]))
    done = run(build, container, "--inputs", given)
    assert done.returncode != 0
    assert "input 0 of the container's signature is float32 (the program's float16, converted at the edge); " \
           "the call gives float16" in done.stderr


def test_a_declaration_its_program_does_not_have_is_not_served(build: Path, tmp_path: Path) -> None:
    """fp16io's payload replaced by the float32 portable program: the load refuses the adapter
    before the first call and the next entry serves."""
    container = pack(build, "mlp", tmp_path)
    _swap_payload(container, "fp16io", FIXTURES / "mlp_portable.pte")
    done = run(build, container, "--inputs", calls_of("mlp", tmp_path), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["chosen"] == "xnnpack"
    refused = next(line for line in report["dispatch"] if line.startswith("dispatch: fp16io"))
    assert ("fp16io [xnnpack]: the manifest declares input 0 of method 'forward' as float16 in the program (float32 "
            "at the edge: program_dtype); the program's is float32") in refused


@pytest.mark.loader_build("fatpte_tests", sdk=True, only="release")
def test_container_module_converts_at_its_door_as_the_runner_does(build: Path, tmp_path: Path) -> None:
    """loader/tests/field_test.cpp ModuleAdapter: a Module caller's float32 ExecuTorch tensor in,
    float32 out, the same bits as the runner's door; a float16 tensor refused."""
    container = pack(build, "mlp", tmp_path)
    (tmp_path / "mlp_adapted.nfat").write_bytes(container.read_bytes())
    proc = subprocess.run([str(build / "fatpte_tests"), "--gtest_filter=ModuleAdapter.*"],
                          env={**os.environ, "FATPTE_FIELD_CONTAINERS": str(tmp_path)},
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "SKIPPED" not in proc.stdout and "[  PASSED  ] 1 test" in proc.stdout, proc.stdout[-4000:]


@pytest.mark.loader_build("et_module_runner", "libexecutorch_backend_fatpte.so", sdk=True, only="release")
def test_the_fat_delegate_converts_for_its_nested_program(build: Path, tmp_path: Path) -> None:
    """A fat program (tools/tier_matrix.py's frame: mlp's XNNPACK lowering merged with its portable
    one) whose fat delegate holds the fp16-I/O export behind an adapter and the float32 XNNPACK
    program (for aarch64 only, so the delegate logs its choice): ExecuTorch's Module runner gives
    float32 in and gets float32 out, within the fp16 tolerance."""
    import fatpte
    from fatpte.executorch.pte import read_program
    from fatpte.executorch.rewrite import remove_named_data, replace_segment

    matrix = load_script("tools/tier_matrix.py")
    specs = [fatpte.pte_specialization(FIXTURES / FP16IO["mlp"]["file"], name="fp16io", priority=1),
             fatpte.pte_specialization(FIXTURES / "mlp_xnnpack.pte", name="xnnpack", requires={"arch": ["aarch64"]})]
    inner = fatpte.pack(specs, tmp_path / "entries.nfat", adapt_io=True).read_bytes()
    frame = fatpte.merge_programs([FIXTURES / "mlp_xnnpack.pte", FIXTURES / "mlp_portable.pte"],
                                  tmp_path / "frame.pte").read_bytes()
    data, _ = remove_named_data(frame)
    (delegate,) = [d for m in read_program(data).methods for d in m.delegates]
    program = tmp_path / "fat.pte"
    program.write_bytes(replace_segment(data, delegate.data_index, inner))
    cpu = matrix.native_cpu(build)
    libs = [cpu.sdk_lib / "libexecutorch_kernels_optimized.so", cpu.sdk_lib / "libexecutorch_backend_xnnpack.so",
            build / "libexecutorch_backend_fatpte.so"]
    done = cpu.run("et_module_runner", *[a for lib in libs for a in ("--lib", str(lib))], str(program),
                   *matrix.call_files(TIERS["mlp"], tmp_path, "fat"))
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("running entry fp16io [") for line in matrix.fat_log(done.stderr)), done.stderr
    got = matrix.module_outputs(done.stdout)
    tolerance = FP16IO["mlp"]["tolerance"]
    eager = [c["outputs"] for c in TIERS["mlp"]["calls"]]
    assert max(worst(g, w, tolerance["eager"]) for g, w in zip(got, eager, strict=True)) <= 1
