"""The fat delegate (issue 20): load + first call of a fat-delegate program against the same inner
program loaded directly, both whole processes of one plain ExecuTorch application
(et_module_runner: ExecuTorch's Module API, backend libraries dlopen'ed).

- XNNPACK chosen: `<model>_fat.pte` with the kernels, XNNPACK and the fat delegate library loaded,
  against `<model>_xnnpack.pte` with the kernels and XNNPACK loaded (the same XNNPACK lowering).
- The nested program: `<model>_fat.pte` without XNNPACK (the fat delegate runs its nested portable
  program) against `<model>_portable.pte`.

Target: at most 1.05x, median of the per-round ratios over alternating rounds (the machine is
shared and noisy; the CPU-time ratio is shown beside it).
"""

from __future__ import annotations

import os
import statistics
import subprocess
from functools import partial

from bench.harness import ROOT, Context, Pair, Section, alternate, run_cmd, runs, verdict
from bench.op_runtime import BUILD, FIXTURES, _inputs

TIME_LIMIT = 1.05
SDK_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"
MODELS = ("mlp", "kvcache")


def _close(a: str, b: str) -> bool:
    """Both runs printed the same outputs, within 1e-5 relative: a nested portable program runs
    the partition's operators as the partitioner kept them (aten.linear whole), the direct
    portable program their decomposition, so the last bits may differ."""
    la, lb = a.splitlines(), b.splitlines()
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        hx, _, vx = x.partition("]")
        hy, _, vy = y.partition("]")
        fx, fy = [float(v) for v in vx.split()], [float(v) for v in vy.split()]
        if hx != hy or len(fx) != len(fy) or any(abs(p - q) > 1e-5 * max(1.0, abs(q)) for p, q in zip(fx, fy)):
            return False
    return True


def _cpu_ratio(base: list[str], cand: list[str], rounds: int) -> float:
    cpu: dict[str, list[float]] = {"base": [], "cand": []}
    for _ in range(rounds):
        for side, argv in (("base", base), ("cand", cand)):
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, _, usage = os.wait4(proc.pid, 0)
            cpu[side].append(usage.ru_utime + usage.ru_stime)
    return statistics.median(c / b for b, c in zip(cpu["base"], cpu["cand"]) if b > 0)


def measure(ctx: Context) -> Section:
    section = Section("Fat delegate", "")
    runner, library = BUILD / "et_module_runner", BUILD / "libexecutorch_backend_fatpte.so"
    if not runner.exists() or not library.exists():
        section.intro = "**Not measured**: et_module_runner or the fat delegate library is not built (`make loader`)."
        return section
    rounds = 20 * runs()
    section.intro = (
        "Load + first call of a program whose partitions are fat delegates (`tests/fixtures/executorch/<model>_fat.pte`: "
        "an XNNPACK payload and a nested portable program per partition) against the same inner program loaded "
        "directly, both run by `et_module_runner` (ExecuTorch's Module API; backend libraries dlopen'ed), whole "
        f"processes, {rounds} alternating rounds; the ratio is the median of the per-round ratios. The machine is "
        "shared and noisy, so the CPU-time ratio (user + system) is shown beside it.")
    kernels = ["--lib", str(SDK_LIB / "libexecutorch_kernels_optimized.so")]
    xnnpack = ["--lib", str(SDK_LIB / "libexecutorch_backend_xnnpack.so")]
    fat = ["--lib", str(library)]
    for model in MODELS:
        _, raw = _inputs(ctx, model)
        call = ",".join(map(str, raw))
        for inner, base_libs, cand_libs in (("xnnpack", kernels + xnnpack, kernels + xnnpack + fat),
                                            ("portable", kernels, kernels + fat)):
            base = [str(runner), *base_libs, str(FIXTURES / f"{model}_{inner}.pte"), call]
            cand = [str(runner), *cand_libs, str(FIXTURES / f"{model}_fat.pte"), call]
            outs = [subprocess.run(a, capture_output=True, text=True, check=True).stdout for a in (base, cand)]
            same = _close(outs[0], outs[1])
            chose = subprocess.run(cand, capture_output=True, text=True, check=True).stderr
            ran = f"running entry {inner} [{inner}]" in chose
            pair = alternate(Pair(f"load + first call: {model}_fat.pte, {inner} entry chosen",
                                  f"{model}_{inner}.pte loaded directly", f"<= {TIME_LIMIT}x"),
                             partial(run_cmd, base), partial(run_cmd, cand), rounds=rounds)
            problems = ([] if same else ["outputs differ"]) + ([] if ran else [f"the {inner} entry did not run"])
            why = [f"{pair.ratio:.3f}x"] if pair.ratio > TIME_LIMIT else []
            pair.verdict = verdict(pair.ratio <= TIME_LIMIT and not problems, ", ".join(problems + why))
            pair.note = ((", ".join(problems) or "the inner program's outputs (1e-5 relative)") +
                         f"; CPU-time ratio **{_cpu_ratio(base, cand, rounds):.2f}x**")
            section.pairs.append(pair)
    section.lines.append(
        "- What the fat delegate adds: loading its library (dlopen; libfatpte inside, about 0.1-0.2 ms here), "
        "validating the container (CRC32C of every payload), selecting (the machine is probed only when an entry "
        "states a requirement) and a view of the chosen payload handed to XNNPACK's own init, zero-copy; the "
        "nested program is loaded in place from the delegate's segment.")
    return section
