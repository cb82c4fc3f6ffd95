"""OpenVINO entries (issue 40): an OpenVINO entry's load + first call against ExecuTorch's runtime
loading the same program directly, and what the device probe adds when OpenVINO's runtime is
there and when it is not.

1. Load + first call, whole processes: `fatpte-run` on a container of the model's OpenVINO
   (priority 20), XNNPACK and portable lowerings, OpenVINO's runtime found in this Python's
   environment (`VIRTUAL_ENV`, no OPENVINO_LIB_PATH: the loader's own search, then the path handed
   to OpenvinoBackend), against `et_plain_runner --in-memory` (ExecuTorch's runtime, no fatpte:
   linked to its CPU kernels, `libexecutorch_backend_openvino.so` preloaded so it registers, and
   OPENVINO_LIB_PATH naming the same runtime) on the OpenVINO program itself. In memory, not
   mapped: with ExecuTorch's MmapDataLoader the backend crashes the process (it frees the
   delegate's bytes after import while OpenVINO still reads them; loader/tools/et_plain_runner.cpp).
   Target: at most 1.05x, median of the per-round ratios (CPU-time ratio beside it).
2. The probe: `fatpte-run --device-json` with the runtime found (the search, then dlopen of
   libopenvino_c, ov_core_create and the device queries) against the same with it withheld
   (`--vendor-runtime openvino=`: nothing looked for), and with it absent (every place looked at,
   the system's dlopen included, none holding it) against withheld. No target: what a container
   whose entries name an OpenVINO device makes fatpte-run pay before it selects.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial

from bench.harness import Context, Pair, Section, alternate, run_cmd, runs, verdict
from bench.op_runtime import BUILD, FIXTURES, _cpu_ratio, _inputs, _pack
from fatpte.device.vendor_runtimes import VENDOR_RUNTIMES, locate

TIME_LIMIT = 1.05
SDK_LIB = BUILD.parent / "executorch-sdk" / "executorch" / "lib"
MODELS = ("mlp", "kvcache")
PLACES = ("OPENVINO_LIB_PATH", "VIRTUAL_ENV", "CONDA_PREFIX")


def _env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PLACES}
    env.update(changes)
    return env


def _toml(model: str) -> str:
    lines = ["version = 2", ""]
    for name, payload, priority in (("openvino", f"{model}_openvino_default.pte", 20),
                                    ("xnnpack", f"{model}_xnnpack.pte", 10), ("portable", f"{model}_portable.pte", 0)):
        lines += ["[[specialization]]", f'name = "{name}"', f'payload = "{(FIXTURES / payload).as_posix()}"',
                  'signature = "from-payload"', f"priority = {priority}", ""]
    return "\n".join(lines)


def _first_output(text: str, prefix: str) -> list[float]:
    """fatpte-run: `call 0: output 0: float32 [1, 3] V...`; et_plain_runner: `output 0: V...`."""
    line = next(line for line in text.splitlines() if line.startswith(prefix))
    values = line[len(prefix):]
    return [float(v) for v in (values.split("]", 1)[1] if "]" in values else values).split()]


def _load_rows(ctx: Context, section: Section, library: str, rounds: int) -> None:
    runner, fatpte_run = BUILD / "et_plain_runner", BUILD / "fatpte-run"
    for model in MODELS:
        container = _pack(ctx.work / f"ov-{model}.nfat", _toml(model))
        calls, raw = _inputs(ctx, model)
        program = FIXTURES / f"{model}_openvino_default.pte"
        base = [str(runner), "--in-memory", str(program), "forward", *map(str, raw)]
        cand = [str(fatpte_run), str(container), "--inputs", str(calls)]
        preload = str(SDK_LIB / "libexecutorch_backend_openvino.so")
        base_env, cand_env = _env(OPENVINO_LIB_PATH=library, LD_PRELOAD=preload), _env(VIRTUAL_ENV=sys.prefix)
        got_b = subprocess.run(base, capture_output=True, text=True, check=True, env=base_env).stdout
        got_c = subprocess.run([*cand, "--explain"], capture_output=True, text=True, check=True, env=cand_env).stdout
        ran = "ran: openvino [openvino]" in got_c
        same = _first_output(got_b, "output 0: ") == _first_output(got_c, "call 0: output 0: ")
        pair = alternate(Pair(f"load + first call: {model}, OpenVINO entry (runtime found in the environment)",
                              f"et_plain_runner --in-memory on {program.name} (OPENVINO_LIB_PATH set)", f"<= {TIME_LIMIT}x"),
                         partial(run_cmd, base, env=base_env), partial(run_cmd, cand, env=cand_env), rounds=rounds)
        problems = ([] if ran else ["the OpenVINO entry did not run"]) + ([] if same else ["outputs differ"])
        why = [f"{pair.ratio:.3f}x"] if pair.ratio > TIME_LIMIT else []
        pair.verdict = verdict(pair.ratio <= TIME_LIMIT and not problems, ", ".join(problems + why))
        saved = dict(os.environ)
        os.environ.update(OPENVINO_LIB_PATH=library)  # _cpu_ratio runs both sides in this environment
        base = ["env", f"LD_PRELOAD={preload}", *base]  # the same exec of env(1) on both sides
        cand = ["env", *cand]
        try:
            _, _, cpu_q = _cpu_ratio(base, cand, rounds)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        pair.note = ((", ".join(problems) or "the same outputs, bit for bit") +
                     f"; CPU-time ratio **{cpu_q:.2f}x** (the baseline's OPENVINO_LIB_PATH is set in both)")
        section.pairs.append(pair)


def _probe_rows(section: Section, rounds: int) -> None:
    exe = str(BUILD / "fatpte-run")
    withheld = [exe, "--device-json", "--vendor-runtime", "openvino="]
    for what, env in (("found in the environment", _env(VIRTUAL_ENV=sys.prefix)),
                      ("absent (every place looked at)", _env())):
        kinds = [a["kind"] for a in json.loads(subprocess.run([exe, "--device-json"], capture_output=True, text=True,
                                                               check=True, env=env).stdout)["accelerators"]]
        pair = alternate(Pair(f"fatpte-run --device-json, OpenVINO's runtime {what}",
                              "the same, the runtime withheld (--vendor-runtime openvino=)", "-"),
                         partial(run_cmd, withheld, env=env), partial(run_cmd, [exe, "--device-json"], env=env),
                         rounds=rounds)
        base_ms = sorted(s.seconds for s in pair.base)[len(pair.base) // 2] * 1e3
        cand_ms = sorted(s.seconds for s in pair.cand)[len(pair.cand) // 2] * 1e3
        pair.note = (f"the probe adds {cand_ms - base_ms:.1f} ms (medians {cand_ms:.1f} ms against {base_ms:.1f} ms); "
                     f"OpenVINO devices listed: {kinds.count('openvino')}")
        section.pairs.append(pair)


def measure(ctx: Context) -> Section:
    section = Section("OpenVINO entries", "")
    needed = [BUILD / "et_plain_runner", BUILD / "fatpte-run", SDK_LIB / "libexecutorch_backend_openvino.so"]
    library = locate(VENDOR_RUNTIMES[0], environ={"VIRTUAL_ENV": sys.prefix}).path
    if not all(p.exists() for p in needed) or not library:
        section.intro = ("**Not measured**: fatpte-run, et_plain_runner (`make loader`) or OpenVINO's runtime "
                         "(the pinned openvino wheel in this environment) is missing.")
        return section
    rounds = 20 * runs()
    section.intro = (
        "An OpenVINO entry (OpenvinoPartitioner, device=CPU) chosen from a container of OpenVINO, XNNPACK and portable "
        "lowerings by fatpte-run, which finds OpenVINO's runtime itself (the openvino wheel of `$VIRTUAL_ENV`), against "
        "ExecuTorch's runtime without fatpte (et_plain_runner --in-memory, the backend preloaded) loading the same "
        "program with OPENVINO_LIB_PATH set; then what "
        f"fatpte-run's device probe adds with the runtime present and absent. Whole processes, {rounds} alternating "
        "rounds; the ratio is the median of the per-round ratios (the machine is shared and noisy).")
    _load_rows(ctx, section, library, rounds)
    _probe_rows(section, rounds)
    return section
