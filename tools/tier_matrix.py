"""The feature-tier matrix (issue 29): which entry of each tier container a CPU selects, and whether
the outputs of that entry equal the outputs recorded for its variant, within the variant's tolerance.

The containers are packed from the committed `tests/fixtures/executorch/<model>_tiers.pack.toml`
(`fatpte pack --from`), whose entries target CPU feature levels (int8 for aarch64 + asimddp, fp16
for aarch64 + asimdhp, fp32 XNNPACK for aarch64, fp32 XNNPACK for x86_64 + avx2 + fma, portable
last; fixtures.json "tiers" records each variant's reference outputs and tolerance). Each is run by
`fatpte-run`, which probes the CPU it runs on (no --device): natively with an x86_64 build, and
under `qemu-aarch64 -cpu MODEL` with an aarch64 build for each emulated CPU. Per run the matrix
records: the entry chosen; the entry the requirements say for that CPU (EXPECTED, for the known
models); the entry Python's `fatpte.select` chooses on the profile `fatpte-run --device-json`
prints on the same CPU (parity); the `--explain` lines about the entries; and per variant the
largest error against its own reference and against the fp32 eager outputs, each checked against
its tolerance (per output tensor: max|got - want| <= atol + rtol * max|want|).

    python tools/tier_matrix.py [--aarch64 build/loader-aarch64-et/fatpte-run]
        [--native build/loader/fatpte-run] [--cpu MODEL]... [--model mlp|kvcache]...
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
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
FATPTE = [sys.executable, "-m", "fatpte"]
DEFAULT_CPUS = ("cortex-a53", "cortex-a76", "a64fx", "max,sme=off")
NATIVE = "native"
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


@dataclass
class Row:
    cpu: str
    model: str
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


class Runner:
    """fatpte-run natively or under qemu-aarch64 with one CPU model."""

    def __init__(self, exe: Path, cpu: str, sysroot: str, lib_path: list[str]) -> None:
        self.exe, self.cpu = exe, cpu
        if cpu == NATIVE:
            self.prefix: list[str] = []
        else:
            env = ["-E", "LD_LIBRARY_PATH=" + ":".join(lib_path)] if lib_path else []
            self.prefix = ["qemu-aarch64", "-L", sysroot, *env, "-cpu", cpu]

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, str(self.exe), *args], capture_output=True, text=True, timeout=300,
                              check=False)


def pack(dest: Path, *sources: str) -> Path:
    """`fatpte pack -o dest SOURCES` (its report kept off this script's output)."""
    done = subprocess.run([*FATPTE, "pack", "-f", "-o", str(dest), *sources], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"fatpte pack {' '.join(sources)} failed:\n{done.stderr}")
    return dest


def python_choice(container: Path, device: dict[str, Any]) -> str:
    import fatpte

    with fatpte.open(container) as c:
        return fatpte.select(c, fatpte.DeviceProfile.from_json(device)).chosen.name


def run_row(run: Runner, model: str, record: dict[str, Any], container: Path, calls: Path) -> Row:
    row = Row(cpu=run.cpu, model=model, expected=EXPECTED.get(run.cpu))
    entries = {e["name"]: e["variant"] for e in record["container"]["entries"]}
    probe = run("--device-json")
    if probe.returncode != 0:
        row.problems.append(f"--device-json failed: {probe.stderr.strip()}")
        return row
    row.device = json.loads(probe.stdout)
    row.python = python_choice(container, row.device)
    if row.expected is None:  # natively: what the requirements say is what Python says
        row.expected = row.python
    explained = run(str(container), "--select-only", "--explain")
    row.explain = [line.strip() for line in explained.stdout.splitlines()
                   if line.lstrip().startswith(("#", "-", "chosen:"))]
    result = run(str(container), "--inputs", str(calls), "--json")
    if result.returncode != 0:
        row.problems.append(f"fatpte-run failed ({result.returncode}): {result.stderr.strip()}")
        return row
    doc = json.loads(result.stdout)
    row.chosen = doc["chosen"]
    got = [call["outputs"] for call in doc["calls"]]
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


def measure_variants(run: Runner, model: str, record: dict[str, Any], work: Path, calls: Path) -> list[Measure]:
    """Each variant of `model` run alone (a container of that one program, no requirements) on
    this CPU, whatever the requirements would choose: the evidence for the tolerances."""
    eager = [call["outputs"] for call in record["calls"]]
    out = []
    for name, variant in sorted(record["variants"].items()):
        m = Measure(cpu=run.cpu, model=model, variant=name)
        single = work / f"{model}_{name}.nfat"
        if not single.exists():
            pack(single, str(FIXTURES / variant["file"]))
        result = run(str(single), "--inputs", str(calls), "--json")
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
    head = ("cpu", "model", "features", "chosen", "python", "vs reference", "vs fp32 eager", "ok")
    body = []
    for r in rows:
        features = " ".join((r.device or {}).get("cpu_features", []))
        ref = "-" if r.error_vs_reference is None else f"{r.error_vs_reference:.2e}"
        eag = "-" if r.error_vs_eager is None else f"{r.error_vs_eager:.2e}"
        body.append((r.cpu, r.model, features, r.chosen or "-", r.python or "-", ref, eag, "yes" if r.ok else "NO"))
    return columns(head, body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--aarch64", type=Path, default=ROOT / "build" / "loader-aarch64-et" / "fatpte-run",
                    help="the aarch64 build of fatpte-run, run under qemu-aarch64")
    ap.add_argument("--native", type=Path, default=ROOT / "build" / "loader" / "fatpte-run",
                    help="this machine's build of fatpte-run (left out when missing)")
    ap.add_argument("--cpu", action="append", help=f"qemu -cpu model (repeatable; default {' '.join(DEFAULT_CPUS)})")
    ap.add_argument("--model", action="append", help="tier model (repeatable; default: every model in fixtures.json)")
    ap.add_argument("--sysroot", default="/usr/aarch64-linux-gnu", help="qemu-aarch64 -L")
    ap.add_argument("--lib-path", action="append", default=None,
                    help="LD_LIBRARY_PATH under qemu (default build/aarch64-debs/usr/lib/aarch64-linux-gnu, "
                         "where libcrypto.so.3 is)")
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
    lib_path = args.lib_path if args.lib_path is not None else [
        str(ROOT / "build" / "aarch64-debs" / "usr" / "lib" / "aarch64-linux-gnu")]
    runners = []
    if args.native.exists():
        runners.append(Runner(args.native, NATIVE, args.sysroot, lib_path))
    if not args.aarch64.exists():
        print(f"{args.aarch64}: no aarch64 build of fatpte-run", file=sys.stderr)
        return 2
    if shutil.which("qemu-aarch64") is None:
        print("qemu-aarch64 is not installed (Debian's qemu-user)", file=sys.stderr)
        return 2
    runners += [Runner(args.aarch64, cpu, args.sysroot, lib_path) for cpu in (args.cpu or DEFAULT_CPUS)]

    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows, measures = [], []
        for model in models:
            calls = work / f"{model}_calls.json"
            calls.write_text(json.dumps(tiers[model]["calls"]), encoding="utf-8")
            if args.each_variant:
                for run in runners:
                    measures += measure_variants(run, model, tiers[model], work, calls)
                continue
            container = pack(work / f"{model}_tiers.nfat", "--from", str(FIXTURES / f"{model}_tiers.pack.toml"))
            rows += [run_row(run, model, tiers[model], container, calls) for run in runners]
    if args.each_variant:
        print(json.dumps([asdict(m) for m in measures], indent=2) if args.json else variant_table(measures))
        return 0 if all(m.problem is None for m in measures) else 1
    if args.json:
        print(json.dumps([asdict(r) | {"ok": r.ok} for r in rows], indent=2))
    else:
        print(table(rows))
        for r in rows:
            for p in r.problems:
                print(f"{r.cpu} {r.model}: {p}")
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
