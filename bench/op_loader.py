"""The C++ loader's benchmark binary (loader/tools/fatpte_bench.cpp), when it has been built: open +
full table and manifest validation + select + payload pointer, 16 entries, target under 100 us and
1 MiB vs 4 GiB within 10%. This module runs it, parses its lines and builds the table.

Two pairs of 16-entry containers, 1 MiB and past 4 GiB (a sparse payload, no disk): the info/select
section's pair, which has no manifest, and a pair made here with a manifest (per-entry requirements
over arch, CPU features and accelerators, a signature, one unconstrained fallback), so that the
manifest checks the select path runs are in the figure. The binary times many iterations itself
(steady_clock over batches alternating between the containers, median and min per load); it is run
BENCH_RUNS times, so the 4 GiB / 1 MiB ratio is taken per run and reported as the median with its
min-max, as the other sections do.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench import fixtures
from bench.harness import PYTHON, ROOT, Context, Section, run_cmd, runs, verdict
from bench.op_info_select import BIG, ENTRIES, containers

CANDIDATES = ("build/loader/fatpte_bench", "build/fatpte_bench", "build/loader/bench_loader", "build/bench_loader")
LIMIT_US = 100.0
SAME = 0.10

# Requirements cycled over the entries (the last entry has none: the fallback), in the vocabulary
# of device profiles; any host fits at least the fallback.
REQUIRES = (
    {"arch": ["aarch64"], "cpu_features": ["asimd"]},
    {"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]},
    {"accelerators": [{"kind": "cuda", "targets": ["sm_80"]}]},
    {"arch": ["x86_64"], "cpu_features": ["avx512f"]},
)
SIGNATURE = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, 16]}],
                          "outputs": [{"dtype": "float32", "shape": [1, 4]}]}]}
PACK = (
    "import fatpte,json,sys; r=json.loads(sys.argv[2]); g=json.loads(sys.argv[3]); a=sys.argv[4:]; "
    "fatpte.pack([fatpte.Specialization('xnnpack', a[i], name=f'e{i:02d}', "
    "requires=None if i == len(a)-1 else r[i % len(r)], signature=g) for i in range(len(a))], sys.argv[1])"
)

# One line per container, the path last so it may hold spaces (see fatpte_bench.cpp).
_LINE = re.compile(
    r"^container entries=(?P<entries>\d+) size=(?P<size>\d+) chosen=(?P<chosen>\S+) "
    r"iterations=(?P<iterations>\d+) batches=(?P<batches>\d+) "
    r"median_us=(?P<median>[0-9.]+) min_us=(?P<min>[0-9.]+) path=(?P<path>.+)$"
)


@dataclass(frozen=True, slots=True)
class Figures:
    """What fatpte_bench prints for one container."""

    path: str
    size: int
    entries: int
    chosen: str
    iterations: int
    batches: int
    median_us: float
    min_us: float


def parse(stdout: str) -> list[Figures]:
    """The container lines of fatpte_bench's output, in order; other lines are ignored."""
    out: list[Figures] = []
    for line in stdout.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        out.append(Figures(path=m["path"], size=int(m["size"]), entries=int(m["entries"]), chosen=m["chosen"],
                           iterations=int(m["iterations"]), batches=int(m["batches"]),
                           median_us=float(m["median"]), min_us=float(m["min"])))
    return out


def find_binary() -> Path | None:
    binary = next((ROOT / c for c in CANDIDATES if (ROOT / c).exists()), None)
    if binary is not None or not (ROOT / "build").exists():
        return binary
    found = sorted(p for p in (ROOT / "build").rglob("*bench*") if p.is_file() and p.stat().st_mode & 0o111)
    return found[0] if found else None


def manifest_containers(ctx: Context) -> tuple[Path, Path]:
    """1 MiB and 4 GiB containers of ENTRIES entries with a manifest (made once per bench run)."""
    if "loader-big" not in ctx.cache:
        small = [fixtures.payload(ctx.work / f"loader-{i}.bin", 64 << 10, seed=300 + i) for i in range(ENTRIES)]
        hole = fixtures.sparse(ctx.work / "loader-hole.bin", BIG)
        big = [*small[: ENTRIES - 2], hole, small[-1]]  # the last entry lies past the 4 GiB mark
        ctx.cache["loader-small"] = ctx.work / "loader-small.nfat"
        ctx.cache["loader-big"] = ctx.work / "loader-big.nfat"
        extra = [json.dumps(REQUIRES), json.dumps(SIGNATURE)]
        run_cmd([PYTHON, "-c", PACK, str(ctx.cache["loader-small"]), *extra, *map(str, small)])
        run_cmd([PYTHON, "-c", PACK, str(ctx.cache["loader-big"]), *extra, *map(str, big)])
    return ctx.cache["loader-small"], ctx.cache["loader-big"]


def measure(ctx: Context) -> Section:
    section = Section("C++ loader", "")
    binary = find_binary()
    if binary is None:
        section.intro = ("**Not measured**: no C++ benchmark binary in build/ at bench time "
                         f"(looked for {', '.join(CANDIDATES)}; build it with `make loader`).")
        return section
    pairs = {"no manifest": containers(ctx), "with manifest": manifest_containers(ctx)}
    files = [p for pair in pairs.values() for p in pair]
    argv = [str(binary), *map(str, files)]
    per_run: list[list[Figures]] = []
    for _ in range(runs()):
        proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300)
        figs = parse(proc.stdout)
        if proc.returncode != 0 or len(figs) != len(files):
            section.intro = (f"**Not measured**: `{binary.relative_to(ROOT)} {' '.join(p.name for p in files)}` "
                             f"exited {proc.returncode} with {len(figs)} parsed lines: "
                             f"`{(proc.stderr or proc.stdout).strip()[-500:]}`")
            return section
        per_run.append(figs)
    section.intro = (
        f"`{binary.relative_to(ROOT)}` (loader/tools/fatpte_bench.cpp), timed inside one process with "
        "steady_clock: `fatpte_open_file` (mmap; header, whole table, placement of every region) + "
        "`fatpte_select` for this host (manifest CRC32C, identifier and flatbuffers verifier, then the "
        "selection rules over each entry's requirements) + `fatpte_entry_payload` of the chosen entry + "
        "close. Payload checksums, and the manifest's value and table-consistency rules, are "
        "`fatpte_validate`'s (with the payload checksums) and not part of it. The host is probed once "
        f"before timing. {ENTRIES} entries; the 4 GiB containers get their size from a sparse payload and "
        "their last entry starts past the 4 GiB mark. `no manifest`: the info/select section's pair; "
        "`with manifest`: the same payloads with per-entry requirements and a signature. Batches of loads "
        f"alternate between the four containers for at least 0.5 s each per run; {len(per_run)} runs. Per "
        "load: the median over runs of each run's median, and the smallest minimum."
    )
    rows = ["| container | bytes | entries | chosen | median per load (us) | min (us) | target < 100 us |",
            "|---|---|---|---|---|---|---|"]
    summary: list[str] = []
    for k, (kind, _) in enumerate(pairs.items()):
        for label, j in (("1 MiB", 2 * k), ("4 GiB", 2 * k + 1)):
            figs = [r[j] for r in per_run]
            med = statistics.median(f.median_us for f in figs)
            low = min(f.min_us for f in figs)
            rows.append(f"| {label}, {kind} | {figs[0].size} | {figs[0].entries} | {figs[0].chosen} | {med:.1f} | "
                        f"{low:.1f} | {verdict(med < LIMIT_US, f'{med:.1f} us')} |")
        ratios = [r[2 * k + 1].median_us / r[2 * k].median_us for r in per_run if r[2 * k].median_us > 0]
        if ratios:
            q = statistics.median(ratios)
            summary.append(f"- {kind}: 4 GiB / 1 MiB, per-run ratio of medians **{q:.3f}** (min-max "
                           f"{min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} runs); target within 10%: "
                           f"{verdict(abs(q - 1) <= SAME, f'{q:.3f}x')}")
    section.lines += [*rows, "", *summary]
    return section
