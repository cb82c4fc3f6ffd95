"""The feature-tier matrix (issue 29): which entry of each tier container a CPU selects, and whether
the outputs of that entry equal the outputs recorded for its variant, within the variant's tolerance.

The containers are packed from the committed `tests/fixtures/executorch/<model>_tiers.pack.toml`
(`fatpte pack --from`), whose entries target CPU feature levels (int8 for aarch64 + asimddp, fp16
for aarch64 + asimdhp, fp32 XNNPACK for aarch64, fp32 XNNPACK for x86_64 + avx2 + fma, portable
last; fixtures.json "tiers" records each variant's reference outputs and tolerance). Each CPU runs
them two ways, probing itself (no profile given): natively with this machine's build, and under
`qemu-aarch64 -cpu MODEL` with the aarch64 build for each emulated CPU.

- `fatpte-run` on the container. Per row: the entry chosen; the entry the requirements say for
  that CPU (EXPECTED, for the known models); the entry Python's `fatpte.select` chooses on the
  profile `fatpte-run --device-json` prints on the same CPU, and whether `--explain` is Python's
  explanation word for word (parity); the `--explain` lines about the entries; per variant the
  largest error against its own reference and against the fp32 eager outputs, each checked
  against its tolerance (per output tensor: max|got - want| <= atol + rtol * max|want|).
- The fat delegate (`--runner fat-delegate`): a fat program (.pte) with the same entries
  (`fat_program`), run by ExecuTorch's own Module runner (`et_module_runner`) with the CPU
  kernels, XNNPACK and `libexecutorch_backend_fatpte.so` loaded. Per row the entry the fat
  delegate's log says runs, the one Python's `select_nfat_delegates` chooses on the same profile
  (with the backends that process registered), its log lines, and the same output checks.

    python tools/tier_matrix.py [--aarch64 build/loader-aarch64] [--native build/loader]
        [--cpu MODEL]... [--model mlp|kvcache]... [--runner fatpte-run|fat-delegate]...
        [--sysroot /usr/aarch64-linux-gnu] [--lib-path DIR] [--work DIR] [--json] [--each-variant]

With --each-variant it runs instead every variant alone (a container of that one program) on every
CPU and prints its errors against its reference and the fp32 eager outputs: the evidence for the
tolerances, and what a CPU gives for a variant its requirements would not choose.

Exit status: 0 when every row selected its expected entry, agreed with Python and matched its
reference within tolerance; 1 otherwise; 2 for a usage error or a missing build.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
FATPTE = [sys.executable, "-m", "fatpte"]
DEFAULT_CPUS = ("cortex-a53", "cortex-a76", "a64fx", "max,sme=off")
NATIVE = "native"
SYSROOT = "/usr/aarch64-linux-gnu"
NATIVE_BUILD = ROOT / "build" / "loader"
AARCH64_BUILD = ROOT / "build" / "loader-aarch64"
# The ExecuTorch SDK each build was made against (make executorch-sdk, make executorch-sdk-aarch64).
NATIVE_SDK_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"
AARCH64_SDK_LIB = ROOT / "build" / "executorch-sdk-aarch64" / "executorch" / "lib"
# Where libcrypto.so.3 is for the aarch64 build under qemu (make aarch64-debs; signed containers).
AARCH64_DEBS_LIB = ROOT / "build" / "aarch64-debs" / "usr" / "lib" / "aarch64-linux-gnu"
RUNNERS = ("fatpte-run", "fat-delegate")
# What each emulated CPU's features (arm-emulation notes: qemu 7.2's models) say it must run.
EXPECTED = {
    "cortex-a53": "xnnpack-fp32-aarch64",  # ARMv8.0: neither asimdhp nor asimddp
    "cortex-a72": "xnnpack-fp32-aarch64",
    "cortex-a76": "xnnpack-int8-asimddp",  # asimdhp and asimddp: int8 ranks first
    "neoverse-n1": "xnnpack-int8-asimddp",
    "a64fx": "xnnpack-fp16-asimdhp",  # asimdhp and SVE, no dot product
    "max,sme=off": "xnnpack-int8-asimddp",
    "max": "xnnpack-int8-asimddp",  # selects right, but qemu 7.2 computes SME int8 wrongly
}
# The fat program's frame (fat_program): a lowering whose one delegate is the whole method, which
# `fatpte merge` with the portable program turns into a FatpteBackend delegate. kvcache's XNNPACK
# lowering is three delegates with the cache outside them; its native lowering keeps the cache
# inside its one delegate.
FAT_FRAME = {"mlp": "mlp_xnnpack.pte", "kvcache": "kvcache_native_default.pte"}
FAT_PORTABLE = {"mlp": "mlp_portable.pte", "kvcache": "kvcache_portable_default.pte"}
# The backends the fat delegate's process registers (et_module_runner --lib ...): the fat
# delegate's device profile lists them as its executorch_backends.
FAT_BACKENDS = ["FatpteBackend", "XnnpackBackend"]
FAT_LOG = "fatpte fat delegate: "


@dataclass(frozen=True)
class Cpu:
    """One CPU of the matrix: this machine running its own build (`NATIVE`), or the aarch64 build
    under `qemu-aarch64 -cpu MODEL`. `build` holds fatpte-run, et_module_runner and
    libexecutorch_backend_fatpte.so; `sdk_lib` the ExecuTorch libraries of the same architecture."""

    name: str
    build: Path
    sdk_lib: Path
    sysroot: str = SYSROOT
    lib_path: tuple[str, ...] = ()

    @property
    def prefix(self) -> list[str]:
        if self.name == NATIVE:
            return []
        env = ["-E", "LD_LIBRARY_PATH=" + ":".join(self.lib_path)] if self.lib_path else []
        return ["qemu-aarch64", "-L", self.sysroot, *env, "-cpu", self.name]

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess[str]:
        """`program` of the build (fatpte-run, et_module_runner) with `args`, on this CPU."""
        return subprocess.run([*self.prefix, str(self.build / program), *args], capture_output=True, text=True,
                              timeout=300, check=False)

    def probe(self) -> dict[str, Any]:
        """The device profile fatpte-run's probe prints on this CPU (`--device-json`)."""
        done = self.run("fatpte-run", "--device-json")
        if done.returncode != 0:
            raise RuntimeError(f"{self.name}: fatpte-run --device-json failed: {done.stderr.strip()}")
        profile: dict[str, Any] = json.loads(done.stdout)
        return profile


def native_cpu(build: Path = NATIVE_BUILD) -> Cpu:
    return Cpu(NATIVE, build, NATIVE_SDK_LIB)


def emulated_cpu(model: str, build: Path = AARCH64_BUILD, sysroot: str = SYSROOT,
                 lib_path: Sequence[str] = (str(AARCH64_DEBS_LIB),)) -> Cpu:
    return Cpu(model, build, AARCH64_SDK_LIB, sysroot, tuple(lib_path))


@dataclass
class Row:
    cpu: str
    model: str
    runner: str = "fatpte-run"
    chosen: str | None = None
    expected: str | None = None
    python: str | None = None
    variant: str | None = None
    device: dict[str, Any] | None = None
    explain: list[str] = field(default_factory=list)
    error_vs_reference: float | None = None
    error_vs_eager: float | None = None
    within_reference: bool = False
    within_eager: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def largest_error(got: list[list[dict[str, Any]]], want: list[list[dict[str, Any]]],
                  tolerance: dict[str, float]) -> tuple[float, bool, list[str]]:
    """The largest max|got - want| / max|want| over every output of every call, whether every
    output is within `tolerance`, and what differs in kind (count, dtype, shape)."""
    worst, ok, problems = 0.0, True, []
    if len(got) != len(want):
        return float("inf"), False, [f"{len(got)} calls ran, {len(want)} recorded"]
    for c, (outs, wants) in enumerate(zip(got, want)):
        if len(outs) != len(wants):
            return float("inf"), False, [f"call {c}: {len(outs)} outputs, {len(wants)} recorded"]
        for k, (o, w) in enumerate(zip(outs, wants)):
            if o["dtype"] != w["dtype"] or o["shape"] != w["shape"]:
                problems.append(f"call {c} output {k}: {o['dtype']}{o['shape']}, recorded {w['dtype']}{w['shape']}")
                ok = False
                continue
            diff = max((abs(x - y) for x, y in zip(o["values"], w["values"])), default=0.0)
            scale = max((abs(y) for y in w["values"]), default=0.0)
            worst = max(worst, diff / scale if scale else diff)
            if not diff <= tolerance["atol"] + tolerance["rtol"] * scale:
                ok = False
    return worst, ok, problems


def pack(dest: Path, *sources: str) -> Path:
    """`fatpte pack -o dest SOURCES` (its report kept off this script's output)."""
    done = subprocess.run([*FATPTE, "pack", "-f", "-o", str(dest), *sources], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"fatpte pack {' '.join(sources)} failed:\n{done.stderr}")
    return dest


def tier_container(model: str, work: Path) -> Path:
    """`<model>_tiers.pack.toml` packed into `work`."""
    return pack(work / f"{model}_tiers.nfat", "--from", str(FIXTURES / f"{model}_tiers.pack.toml"))


def fat_program(model: str, dest: Path) -> Path:
    """A fat program (.pte) whose one fat delegate (backend id FatpteBackend) holds the entries of
    `<model>_tiers.pack.toml`, same names, priorities and requirements, each variant's whole
    program as a nested program. Made from the committed files, without torch:

    1. the entries packed into an NFAT container (`fatpte.pte_specialization` per entry, named
       data left inside each program: the fat delegate gives a nested program the outer program's
       named data, not the container's, so `share_named_data` does not apply here);
    2. the frame: `fatpte merge` of FAT_FRAME[model] and its portable program, a program whose
       method is one FatpteBackend delegate over the method's inputs and outputs, with its named
       data removed (`rewrite.remove_named_data`: those weights belong to the frame's own payload,
       which is replaced; each nested program carries its own);
    3. the delegate's segment replaced by the container (`rewrite.replace_segment`).

    `fatpte merge` of the variants themselves cannot make it: the fp16 programs cast their float32
    inputs and outputs outside the delegate (E0702), the int8, fp16 and fp32 delegates load
    different weights while a merged program carries one set (E0706), and kvcache's XNNPACK
    lowerings are three delegates each."""
    import fatpte
    from fatpte.executorch.pte import read_program
    from fatpte.executorch.rewrite import remove_named_data, replace_segment

    toml = FIXTURES / f"{model}_tiers.pack.toml"
    entries = tomllib.loads(toml.read_text(encoding="utf-8"))["specialization"]
    specs = [fatpte.pte_specialization(toml.parent / e["payload"], name=e["name"], priority=e.get("priority", 0),
                                       requires=e.get("requires")) for e in entries]
    with tempfile.TemporaryDirectory(prefix="tier-fat-") as tmp:
        inner = fatpte.pack(specs, Path(tmp, "entries.nfat")).read_bytes()
        frame = fatpte.merge_programs([FIXTURES / FAT_FRAME[model], FIXTURES / FAT_PORTABLE[model]],
                                      Path(tmp, "frame.pte")).read_bytes()
    data, _ = remove_named_data(frame)
    (delegate,) = [d for m in read_program(data).methods for d in m.delegates]
    dest.write_bytes(replace_segment(data, delegate.data_index, inner))
    return dest


def call_files(record: dict[str, Any], work: Path, stem: str) -> list[str]:
    """The record's calls as et_module_runner takes them: per call, its inputs' raw
    little-endian elements in files, comma-separated."""
    codes = {"float32": "f", "float64": "d", "int64": "q", "int32": "i"}
    out = []
    for c, call in enumerate(record["calls"]):
        names = []
        for i, t in enumerate(call["inputs"]):
            path = work / f"{stem}-call{c}-in{i}.bin"
            path.write_bytes(struct.pack(f"<{len(t['values'])}{codes[t['dtype']]}", *t["values"]))
            names.append(str(path))
        out.append(",".join(names))
    return out


def module_outputs(stdout: str) -> list[list[dict[str, Any]]]:
    """et_module_runner's `call N output K: DTYPE [SHAPE] V...` lines as the calls' outputs."""
    calls: list[list[dict[str, Any]]] = []
    for line in stdout.splitlines():
        m = re.fullmatch(r"call (\d+) output (\d+): (\w+) \[([\d, ]*)\](.*)", line)
        if m is None:
            raise ValueError(f"et_module_runner printed {line!r}")
        c, dtype, shape, values = int(m[1]), m[3], m[4], m[5].split()
        while len(calls) <= c:
            calls.append([])
        number = float if dtype.startswith("float") else int
        calls[c].append({"dtype": dtype, "shape": [int(s) for s in shape.split(",") if s.strip()],
                         "values": [number(v) for v in values]})
    return calls


def fat_log(stderr: str) -> list[str]:
    """The fat delegate's log lines (ExecuTorch's log, one message holding several joined by ' | ')."""
    lines = []
    for message in stderr.splitlines():
        _, found, text = message.partition(FAT_LOG)
        if found:
            lines += [part.strip() for part in text.split(" | ")]
    return lines


def python_choice(container: Path, device: dict[str, Any]) -> tuple[str, str]:
    """The entry Python's `fatpte.select` chooses for `device`, and its explanation."""
    import fatpte

    with fatpte.open(container) as c:
        selection = fatpte.select(c, fatpte.DeviceProfile.from_json(device))
        return selection.chosen.name, selection.explain()


def python_fat_choice(program: Path, device: dict[str, Any]) -> str:
    """The entry Python's `select_nfat_delegates` chooses for the program's one fat delegate."""
    import fatpte
    from fatpte.executorch.pte import read_program
    from fatpte.ops.fat_delegate import select_nfat_delegates

    profile = fatpte.DeviceProfile.from_json(device)
    ((_, selection),) = select_nfat_delegates(read_program(program.read_bytes()), profile)
    return selection.chosen.name


def judge(row: Row, record: dict[str, Any], got: list[list[dict[str, Any]]]) -> Row:
    """Fill `row`'s checks: the entry against the requirements and Python, the outputs against
    the chosen variant's reference and the fp32 eager outputs."""
    entries = {e["name"]: e["variant"] for e in record["container"]["entries"]}
    if row.chosen != row.expected:
        row.problems.append(f"chose {row.chosen}, the requirements say {row.expected}")
    if row.chosen != row.python:
        row.problems.append(f"chose {row.chosen}, Python chooses {row.python} on the same profile")
    row.variant = entries.get(row.chosen or "")
    if row.variant is None:
        row.problems.append(f"{row.chosen} is not an entry of the container")
        return row
    variant = record["variants"][row.variant]
    eager = [call["outputs"] for call in record["calls"]]
    row.error_vs_reference, row.within_reference, kinds = largest_error(got, variant["reference"],
                                                                        variant["tolerance"]["reference"])
    row.error_vs_eager, row.within_eager, _ = largest_error(got, eager, variant["tolerance"]["eager"])
    row.problems += kinds
    if not row.within_reference:
        row.problems.append(f"{row.variant}: outputs off their reference by {row.error_vs_reference:.3g} relative "
                            f"(tolerance {variant['tolerance']['reference']})")
    if not row.within_eager:
        row.problems.append(f"{row.variant}: outputs off the fp32 eager outputs by {row.error_vs_eager:.3g} "
                            f"relative (tolerance {variant['tolerance']['eager']})")
    return row


def run_row(cpu: Cpu, model: str, record: dict[str, Any], container: Path, calls: Path,
            device: dict[str, Any] | None = None) -> Row:
    """fatpte-run on the tier container on `cpu`, probing it (`device`: what it probed, when known)."""
    row = Row(cpu=cpu.name, model=model, expected=EXPECTED.get(cpu.name))
    try:
        row.device = device if device is not None else cpu.probe()
    except RuntimeError as exc:
        row.problems.append(str(exc))
        return row
    row.python, python_explained = python_choice(container, row.device)
    if row.expected is None:  # natively: what the requirements say is what Python says
        row.expected = row.python
    explained = cpu.run("fatpte-run", str(container), "--select-only", "--explain")
    row.explain = [line.strip() for line in explained.stdout.splitlines()
                   if line.lstrip().startswith(("#", "-", "chosen:"))]
    if explained.stdout.rstrip("\n") != python_explained:
        row.problems.append("--explain is not Python's explanation on the same profile")
    result = cpu.run("fatpte-run", str(container), "--inputs", str(calls), "--json")
    if result.returncode != 0:
        row.problems.append(f"fatpte-run failed ({result.returncode}): {result.stderr.strip()}")
        return row
    doc = json.loads(result.stdout)
    row.chosen = doc["chosen"]
    return judge(row, record, [call["outputs"] for call in doc["calls"]])


def run_fat_row(cpu: Cpu, model: str, record: dict[str, Any], program: Path, calls: list[str],
                device: dict[str, Any] | None = None) -> Row:
    """The fat program run by et_module_runner on `cpu` with the kernels, XNNPACK and the fat
    delegate's library loaded."""
    row = Row(cpu=cpu.name, model=model, runner="fat-delegate", expected=EXPECTED.get(cpu.name))
    try:
        row.device = device if device is not None else cpu.probe()
    except RuntimeError as exc:
        row.problems.append(str(exc))
        return row
    row.python = python_fat_choice(program, row.device | {"executorch_backends": FAT_BACKENDS})
    if row.expected is None:
        row.expected = row.python
    libs = [cpu.sdk_lib / "libexecutorch_kernels_optimized.so", cpu.sdk_lib / "libexecutorch_backend_xnnpack.so",
            cpu.build / "libexecutorch_backend_fatpte.so"]
    result = cpu.run("et_module_runner", *[a for lib in libs for a in ("--lib", str(lib))], str(program), *calls)
    row.explain = fat_log(result.stderr)
    if result.returncode != 0:
        row.problems.append(f"et_module_runner failed ({result.returncode}): {result.stderr.strip()}")
        return row
    running = [m for line in row.explain if (m := re.match(r"running entry (\S+) \[", line))]
    if len(running) != 1:
        row.problems.append(f"the fat delegate's log names {len(running)} running entries: {row.explain}")
        return row
    row.chosen = running[0][1]
    return judge(row, record, module_outputs(result.stdout))


@dataclass
class Measure:
    cpu: str
    model: str
    variant: str
    error_vs_reference: float | None = None
    error_vs_eager: float | None = None
    within_reference: bool = False
    within_eager: bool = False
    problem: str | None = None


def measure_variants(cpu: Cpu, model: str, record: dict[str, Any], work: Path, calls: Path) -> list[Measure]:
    """Each variant of `model` run alone (a container of that one program, no requirements) on
    this CPU, whatever the requirements would choose: the evidence for the tolerances."""
    eager = [call["outputs"] for call in record["calls"]]
    out = []
    for name, variant in sorted(record["variants"].items()):
        m = Measure(cpu=cpu.name, model=model, variant=name)
        single = work / f"{model}_{name}.nfat"
        if not single.exists():
            pack(single, str(FIXTURES / variant["file"]))
        result = cpu.run("fatpte-run", str(single), "--inputs", str(calls), "--json")
        if result.returncode != 0:
            m.problem = f"fatpte-run failed ({result.returncode}): {result.stderr.strip()}"
        else:
            got = [call["outputs"] for call in json.loads(result.stdout)["calls"]]
            m.error_vs_reference, m.within_reference, _ = largest_error(got, variant["reference"],
                                                                        variant["tolerance"]["reference"])
            m.error_vs_eager, m.within_eager, _ = largest_error(got, eager, variant["tolerance"]["eager"])
        out.append(m)
    return out


def variant_table(measures: list[Measure]) -> str:
    head = ("cpu", "model", "variant", "vs reference", "vs fp32 eager", "within tolerance")
    body = [(m.cpu, m.model, m.variant,
             "-" if m.error_vs_reference is None else f"{m.error_vs_reference:.2e}",
             "-" if m.error_vs_eager is None else f"{m.error_vs_eager:.2e}",
             m.problem or ("yes" if m.within_reference and m.within_eager else
                           f"NO ({'reference' if not m.within_reference else 'eager'})"))
            for m in measures]
    return columns(head, body)


def columns(head: tuple[str, ...], body: Sequence[tuple[str, ...]]) -> str:
    """`head` and the rows of `body` as left-aligned columns."""
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in (head, *body))


def table(rows: list[Row]) -> str:
    head = ("cpu", "model", "runner", "features", "chosen", "python", "vs reference", "vs fp32 eager", "ok")
    body = []
    for r in rows:
        features = " ".join((r.device or {}).get("cpu_features", []))
        ref = "-" if r.error_vs_reference is None else f"{r.error_vs_reference:.2e}"
        eag = "-" if r.error_vs_eager is None else f"{r.error_vs_eager:.2e}"
        body.append((r.cpu, r.model, r.runner, features, r.chosen or "-", r.python or "-", ref, eag,
                     "yes" if r.ok else "NO"))
    return columns(head, body)


def matrix(cpus: Sequence[Cpu], models: Sequence[str], runners: Sequence[str], work: Path) -> list[Row]:
    """Every row: each model on each CPU with each runner, each CPU probed once."""
    tiers: dict[str, Any] = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["tiers"]["models"]
    devices: dict[str, dict[str, Any] | None] = {}
    rows = []
    for model in models:
        record = tiers[model]
        calls = work / f"{model}_calls.json"
        calls.write_text(json.dumps(record["calls"]), encoding="utf-8")
        container = tier_container(model, work) if "fatpte-run" in runners else None
        fat = fat_program(model, work / f"{model}_fat_tiers.pte") if "fat-delegate" in runners else None
        bins = call_files(record, work, model)
        for cpu in cpus:
            if cpu.name not in devices:
                try:
                    devices[cpu.name] = cpu.probe()
                except RuntimeError:
                    devices[cpu.name] = None  # each row says why
            if container is not None:
                rows.append(run_row(cpu, model, record, container, calls, devices[cpu.name]))
            if fat is not None:
                rows.append(run_fat_row(cpu, model, record, fat, bins, devices[cpu.name]))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--aarch64", type=Path, default=AARCH64_BUILD,
                    help="the aarch64 build folder (fatpte-run, et_module_runner, the fat delegate), run under "
                         "qemu-aarch64")
    ap.add_argument("--native", type=Path, default=NATIVE_BUILD,
                    help="this machine's build folder (left out when it has no fatpte-run)")
    ap.add_argument("--cpu", action="append", help=f"qemu -cpu model (repeatable; default {' '.join(DEFAULT_CPUS)})")
    ap.add_argument("--model", action="append", help="tier model (repeatable; default: every model in fixtures.json)")
    ap.add_argument("--runner", action="append", choices=RUNNERS,
                    help="fatpte-run on the container, the fat program in et_module_runner (repeatable; default both)")
    ap.add_argument("--sysroot", default=SYSROOT, help="qemu-aarch64 -L")
    ap.add_argument("--lib-path", action="append", default=None,
                    help=f"LD_LIBRARY_PATH under qemu (default {AARCH64_DEBS_LIB.relative_to(ROOT)}, where "
                         "libcrypto.so.3 is)")
    ap.add_argument("--work", type=Path, help="where the containers and calls are written (default: a temp folder)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")
    ap.add_argument("--each-variant", action="store_true",
                    help="instead of the selection matrix, run every variant alone on every CPU and print its "
                         "errors (the evidence for the tolerances; not a pass/fail matrix)")
    args = ap.parse_args(argv)

    tiers: dict[str, Any] = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["tiers"]["models"]
    models = args.model or sorted(tiers)
    unknown = [m for m in models if m not in tiers]
    if unknown:
        ap.error(f"no tier model {', '.join(unknown)}; known: {', '.join(sorted(tiers))}")
    lib_path = args.lib_path if args.lib_path is not None else [str(AARCH64_DEBS_LIB)]
    cpus = []
    if (args.native / "fatpte-run").exists():
        cpus.append(native_cpu(args.native))
    if not (args.aarch64 / "fatpte-run").exists():
        print(f"{args.aarch64}: no aarch64 build of fatpte-run (make loader-aarch64)", file=sys.stderr)
        return 2
    if shutil.which("qemu-aarch64") is None:
        print("qemu-aarch64 is not installed (Debian's qemu-user)", file=sys.stderr)
        return 2
    cpus += [emulated_cpu(c, args.aarch64, args.sysroot, lib_path) for c in (args.cpu or DEFAULT_CPUS)]

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        if args.each_variant:
            measures = []
            for model in models:
                calls = work / f"{model}_calls.json"
                calls.write_text(json.dumps(tiers[model]["calls"]), encoding="utf-8")
                for cpu in cpus:
                    measures += measure_variants(cpu, model, tiers[model], work, calls)
            print(json.dumps([asdict(m) for m in measures], indent=2) if args.json else variant_table(measures))
            return 0 if all(m.problem is None for m in measures) else 1
        rows = matrix(cpus, models, args.runner or RUNNERS, work)
    if args.json:
        print(json.dumps([asdict(r) | {"ok": r.ok} for r in rows], indent=2))
    else:
        print(table(rows))
        for r in rows:
            for p in r.problems:
                print(f"{r.cpu} {r.model} {r.runner}: {p}")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
