"""The fat delegate (issue 20): load + first call of a fat-delegate program against the same inner
program loaded directly, both whole processes of one plain ExecuTorch application
(et_module_runner: ExecuTorch's Module API, backend libraries dlopen'ed).

- XNNPACK chosen: `<model>_fat.pte` with the kernels, XNNPACK and the fat delegate library loaded,
  against `<model>_xnnpack.pte` with the kernels and XNNPACK loaded (the same XNNPACK lowering).
- The nested program: `<model>_fat.pte` without XNNPACK (the fat delegate runs its nested portable
  program) against that same nested program loaded directly, written out of the fat delegate as
  a program file of its own, where the program has one partition (mlp). Where it has several
  (kvcache: one nested program per partition, no one program to load), against
  `<model>_portable.pte`. For mlp, a row against `mlp_portable.pte` is shown beside it, without
  a target: that is another lowering of the model (aten.linear decomposed into permute and addmm
  by a portable export, kept whole by the partitioner in the nested program), so it measures the
  lowering as well as the fat delegate.

Target: at most 1.05x, median of the per-round ratios over alternating rounds (the machine is
shared and noisy; the CPU-time ratio is shown beside it).

Two kinds of rows without a target split that figure in two:
- the same application on both sides: the baseline process loads the fat delegate's library too
  (an application that supports fat programs loads it whatever program it runs), so the row holds
  the fat program's own cost: the outer program, the container's validation, selection and the
  hand-over, without the library's dlopen;
- an empty library (bench/empty_library.c) loaded beside the nested program, against that program
  alone: what one more library of any kind costs a process here, before any of its code runs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from functools import partial
from pathlib import Path

from bench.harness import ROOT, Context, Pair, Section, alternate, compiled, run_cmd, runs, verdict
from bench.op_runtime import BUILD, FIXTURES, _inputs
from fatpte.container.reader import Container
from fatpte.executorch.pte import read_program
from fatpte.ops.fat_delegate import nfat_delegates

TIME_LIMIT = 1.05
SDK_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"
MODELS = ("mlp", "kvcache")
EMPTY_LIBRARY = ROOT / "build" / "bench" / "libfatpte_bench_empty.so"


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


def _nested_program(ctx: Context, model: str, entry: str) -> Path | None:
    """Entry `entry` of the only fat delegate of `<model>_fat.pte` as a program file of its own,
    or None when the program has several fat delegates or that entry is not a whole program.
    Written once a run (ctx.cache)."""
    key = f"fat-nested-{model}-{entry}"
    if key in ctx.cache:
        return ctx.cache[key]
    program = read_program((FIXTURES / f"{model}_fat.pte").read_bytes(), source=f"{model}_fat.pte")
    delegates = nfat_delegates(program)
    if len(delegates) != 1:
        return None
    with Container.from_buffer(program.payload(delegates[0])) as c:
        payload = c.payload(c.entry(entry), verify=True)
        if bytes(payload[4:8]) != b"ET12":
            return None
        out = ctx.work / f"{model}_fat_{entry}_nested.pte"
        out.write_bytes(payload)
    ctx.cache[key] = out
    return out


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
        "directly (the nested program itself, written out of the fat delegate, where the program has one partition; "
        "else `<model>_<backend>.pte`, the whole model lowered for that backend), both run by `et_module_runner` (ExecuTorch's Module API; backend libraries dlopen'ed), whole "
        f"processes, {rounds} alternating rounds; the ratio is the median of the per-round ratios. The machine is "
        "shared and noisy, so the CPU-time ratio (user + system) is shown beside it. Rows marked \"same "
        "application\" load the fat delegate's library in the baseline process too, so they hold the fat program's "
        "own cost without the library's dlopen; the last row loads an empty library beside the nested program: what "
        "one more library of any kind costs a process here. Neither kind has a target.")
    kernels = ["--lib", str(SDK_LIB / "libexecutorch_kernels_optimized.so")]
    xnnpack = ["--lib", str(SDK_LIB / "libexecutorch_backend_xnnpack.so")]
    fat = ["--lib", str(library)]
    for model in MODELS:
        _, raw = _inputs(ctx, model)
        call = ",".join(map(str, raw))
        for inner, base_libs, cand_libs in (("xnnpack", kernels + xnnpack, kernels + xnnpack + fat),
                                            ("portable", kernels, kernels + fat)):
            whole = FIXTURES / f"{model}_{inner}.pte"
            nested = _nested_program(ctx, model, inner)
            # (program, label, whether the target applies): the target against the same inner program.
            baselines: list[tuple[Path, str, bool]] = [(whole, f"{whole.name} loaded directly", nested is None)]
            if nested is not None:
                label = f"the nested {inner} program loaded directly ({model}_fat.pte's only fat delegate, entry {inner})"
                baselines.insert(0, (nested, label, True))
            cand = [str(runner), *cand_libs, str(FIXTURES / f"{model}_fat.pte"), call]
            chose = subprocess.run(cand, capture_output=True, text=True, check=True)
            ran = f"running entry {inner} [{inner}]" in chose.stderr
            for program, label, targeted in baselines:
                base = [str(runner), *base_libs, str(program), call]
                same = _close(subprocess.run(base, capture_output=True, text=True, check=True).stdout, chose.stdout)
                pair = alternate(Pair(f"load + first call: {model}_fat.pte, {inner} entry chosen", label,
                                      f"<= {TIME_LIMIT}x" if targeted else "-"),
                                 partial(run_cmd, base), partial(run_cmd, cand), rounds=rounds)
                problems = ([] if same else ["outputs differ"]) + ([] if ran else [f"the {inner} entry did not run"])
                why = [f"{pair.ratio:.3f}x"] if pair.ratio > TIME_LIMIT else []
                if targeted:
                    pair.verdict = verdict(pair.ratio <= TIME_LIMIT and not problems, ", ".join(problems + why))
                else:
                    pair.verdict = verdict(False, ", ".join(problems)) if problems else ""
                pair.note = ((", ".join(problems) or "the inner program's outputs (1e-5 relative)") +
                             f"; CPU-time ratio **{_cpu_ratio(base, cand, rounds):.2f}x**" +
                             ("" if targeted else "; another lowering of the model, so no target (module docstring)"))
                section.pairs.append(pair)
            # The same application on both sides (module docstring): the targeted baseline with the
            # fat delegate's library loaded too.
            program, label, _ = baselines[0]
            base = [str(runner), *cand_libs, str(program), call]
            pair = alternate(Pair(f"load + first call: {model}_fat.pte, {inner} entry chosen, same application",
                                  f"{label}, the fat delegate's library loaded too", "-"),
                             partial(run_cmd, base), partial(run_cmd, cand), rounds=rounds)
            pair.note = (f"the fat program's own cost, without its library's dlopen; CPU-time ratio "
                         f"**{_cpu_ratio(base, cand, rounds):.2f}x**")
            section.pairs.append(pair)
    _empty_library_row(ctx, section, runner, kernels, rounds)
    section.lines.append(
        "- What the fat delegate adds: loading its library (dlopen RTLD_NOW, as et_module_runner loads libraries; libfatpte "
        "inside, built with -Os; the empty library's row is the part any library pays), "
        "validating the container (CRC32C of every payload), selecting (the machine is probed only when an entry "
        "states a requirement) and a view of the chosen payload handed to XNNPACK's own init, zero-copy; the "
        "nested program is loaded in place from the delegate's segment.")
    return section


def _empty_library_row(ctx: Context, section: Section, runner: Path, kernels: list[str], rounds: int) -> None:
    """The floor under any backend library's row: the nested portable program with an empty
    library loaded beside it, against that program alone."""
    nested = _nested_program(ctx, "mlp", "portable")
    if nested is None:
        return
    empty = compiled(ROOT / "bench" / "empty_library.c", EMPTY_LIBRARY, "-shared", "-fPIC")
    _, raw = _inputs(ctx, "mlp")
    call = ",".join(map(str, raw))
    base = [str(runner), *kernels, str(nested), call]
    cand = [str(runner), *kernels, "--lib", str(empty), str(nested), call]
    pair = alternate(Pair("load + first call of the nested portable program, an empty library loaded beside it",
                          "the nested portable program loaded directly", "-"),
                     partial(run_cmd, base), partial(run_cmd, cand), rounds=rounds)
    pair.note = ("what one more library of any kind costs a process on this machine (bench/empty_library.c); "
                 f"CPU-time ratio **{_cpu_ratio(base, cand, rounds):.2f}x**")
    section.pairs.append(pair)
