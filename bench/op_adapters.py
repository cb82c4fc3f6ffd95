"""Signature adapters (issue 39): what converting at the edge costs a call. The float16-I/O XNNPACK
export of each tier model (model.half(), ExecuTorch 1.5.1 defaults) packed behind the float32
signature with `--adapt-io` (float32 calls, converted to float16 before set_input and back after),
against the same program packed alone under its own float16 signature and given float16 calls (no
conversion). Both timed inside one process (`fatpte_runbench calls`: load once, then the first
call N times through the method type, median per call), alternating rounds; the difference is
the conversion's cost. The float32 XNNPACK program's call is shown beside them for scale."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.harness import Context, Section, runs
from bench.op_runtime import BUILD, FIXTURES

MODELS = ("mlp", "kvcache")
CALLS_PER_ROUND = 2000
FP32 = {"mlp": "mlp_xnnpack.pte", "kvcache": "kvcache_xnnpack_default.pte"}


def _pack(dest: Path, *args: str) -> Path:
    done = subprocess.run([sys.executable, "-m", "fatpte", "pack", "-q", "-f", "-o", str(dest), *args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"fatpte pack failed: {done.stderr.strip()}")
    return dest


def _calls(dest: Path, call: dict[str, Any], dtype: str) -> Path:
    """The call with its float32 tensors given as `dtype` (the values as they are: the reader rounds)."""
    inputs = [dict(t, dtype=dtype) if t["dtype"] == "float32" else t for t in call["inputs"]]
    dest.write_text(json.dumps([{"inputs": inputs}]))
    return dest


def _per_call_us(container: Path, calls: Path) -> float:
    done = subprocess.run([str(BUILD / "fatpte_runbench"), "calls", str(container), str(calls), str(CALLS_PER_ROUND)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"fatpte_runbench calls {container.name} failed: {done.stderr.strip()}")
    fields = dict(kv.split("=", 1) for kv in done.stdout.split())
    return float(fields["call_us_median"])


def _row(ctx: Context, model: str, record: dict[str, Any]) -> str:
    fp16io = FIXTURES / record["fp16io"]["models"][model]["file"]
    call = record["tiers"]["models"][model]["calls"][0]
    adapted = _pack(ctx.work / f"ad-{model}.nfat", "--adapt-io", f"fp16io:xnnpack={fp16io}",
                    f"fp32:xnnpack={FIXTURES / FP32[model]}", "--priority", "fp16io=1")
    plain = _pack(ctx.work / f"ad-{model}-plain.nfat", f"fp16io:xnnpack={fp16io}")
    fp32 = _pack(ctx.work / f"ad-{model}-fp32.nfat", f"fp32:xnnpack={FIXTURES / FP32[model]}")
    f32 = _calls(ctx.work / f"ad-{model}-f32.json", call, "float32")
    f16 = _calls(ctx.work / f"ad-{model}-f16.json", call, "float16")
    through, own, full = [], [], []
    for _ in range(runs()):
        through.append(_per_call_us(adapted, f32))
        own.append(_per_call_us(plain, f16))
        full.append(_per_call_us(fp32, f32))
    a, b, c = statistics.median(through), statistics.median(own), statistics.median(full)
    shapes = " ".join("x".join(map(str, t["shape"])) for t in call["inputs"])
    return (f"| {model} ({shapes}) | {a:.2f} | {b:.2f} | {a - b:+.2f} ({(a / b - 1) * 100:+.1f}%) | {c:.2f} | "
            f"{min(through):.2f}-{max(through):.2f} / {min(own):.2f}-{max(own):.2f} |")


def measure(ctx: Context) -> Section:
    section = Section("Signature adapters", __doc__.split("\n\n", 1)[0].replace("\n", " ") if __doc__ else "")
    if not (BUILD / "fatpte_runbench").exists():
        section.intro = "**Not measured**: build/loader/fatpte_runbench is not built (`make loader`)."
        return section
    record = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))
    section.lines = [
        (f"Median µs per call over {runs()} rounds of {CALLS_PER_ROUND} calls each (release build, one process per "
         "round; min-max of the round medians in the last column)."),
        "",
        ("| model (input shapes) | float32 call, float16 program (adapter) | float16 call, same program | "
         "conversion's cost | float32 XNNPACK program | round medians: adapter / own |"),
        "|---|---|---|---|---|---|",
        *(_row(ctx, m, record) for m in MODELS),
    ]
    return section
