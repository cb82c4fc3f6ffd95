"""The ExecuTorch runner (issue 13): running a real model from a container against a plain
ExecuTorch runner, and loading one entry of a container of several GB.

1. Load + first call, whole processes: `fatpte-run` on a container (the model's XNNPACK lowering
   preferred, its portable lowering as fallback) against `et_plain_runner`
   (loader/tools/et_plain_runner.cpp), built from the same ExecuTorch SDK without fatpte, on the
   thin .pte file itself. Targets: time at most 1.05x, peak RSS at most 1.05x + 2 MiB.
2. A container of several GB: the same model's entries, plus specializations for other devices
   (CUDA entries this host cannot run, GB of payload) sharing GB of named data. Loading the chosen
   entry from it is timed against loading it from the container of a few MB (target: within
   10%), and what it touches is shown two ways: the Rss of the container's mapping in the loading
   process (fatpte_runbench load), and, after the file was evicted from the page cache and one
   `fatpte-run` ran, the bytes of each region that are in the page cache (mincore). Pages the
   kernel reads around a fault (read-around, at most `read_ahead_kb` on either side of a region the
   loader read) are counted apart from the rest.
"""

from __future__ import annotations

import json
import os
import statistics
import struct
import subprocess
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench import fixtures
from bench.harness import (
    PYTHON,
    ROOT,
    Context,
    Pair,
    Section,
    alternate,
    fmt_bytes,
    gib,
    run_cmd,
    runs,
    verdict,
)

BUILD = ROOT / "build" / "loader"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
TIME_LIMIT = 1.05
RSS_FACTOR, RSS_SLACK = 1.05, 2 << 20
SAME = 0.10
MODELS = (("mlp", "xnnpack", False), ("kvcache", "xnnpack", True), ("mlp", "portable", False))
_STRUCT = {"float32": "f", "float64": "d", "int64": "q", "int32": "i", "int8": "b", "uint8": "B", "bool": "?"}


def _fixture_call(model: str) -> dict[str, Any]:
    call: dict[str, Any] = json.loads((FIXTURES / "fixtures.json").read_text())["files"][f"{model}_portable.pte"][
        "calls"][0]
    return call


def _toml(model: str, backends: tuple[str, ...], share: bool, extra: str = "", named: str = "") -> str:
    lines = ["version = 2", ""]
    if named:
        lines += ["[named_data]", named, ""]
    for b in backends:
        lines += ["[[specialization]]", f'name = "{b}"', f'payload = "{(FIXTURES / f"{model}_{b}.pte").as_posix()}"',
                  'signature = "from-payload"']
        if b == "xnnpack":
            lines += ["priority = 10"] + (["share_named_data = true"] if share else [])
        lines.append("")
    return "\n".join(lines) + extra


def _pack(dest: Path, toml: str) -> Path:
    dest.with_suffix(".toml").write_text(toml)
    run_cmd([PYTHON, "-m", "fatpte", "pack", "-q", "-f", "-o", str(dest), "--from", str(dest.with_suffix(".toml"))])
    return dest


def _inputs(ctx: Context, model: str) -> tuple[Path, list[Path]]:
    """The fixture's first call: as a calls.json for fatpte-run, as raw input files for the plain runner."""
    call = _fixture_call(model)
    calls = ctx.work / f"rt-{model}-calls.json"
    calls.write_text(json.dumps([call]))
    raw = []
    for i, t in enumerate(call["inputs"]):
        path = ctx.work / f"rt-{model}-in{i}.bin"
        path.write_bytes(struct.pack(f"<{len(t['values'])}{_STRUCT[t['dtype']]}", *t["values"]))
        raw.append(path)
    return calls, raw


def _check_outputs(fatpte_out: str, plain_out: str, model: str) -> str:
    """"" when both runs gave the recorded eager output (1e-5 relative), else what differs."""
    want = _fixture_call(model)["outputs"][0]["values"]
    # fatpte-run: `call 0: output 0: float32 [1, 3] V...`; et_plain_runner: `output 0: V...`.
    line = next(line for line in fatpte_out.splitlines() if line.startswith("call 0: output 0: "))
    got_f = [float(v) for v in line.split("]", 1)[1].split()]
    got_p = [float(v) for v in plain_out.splitlines()[0].split(":", 1)[1].split()]
    for name, got in (("fatpte-run", got_f), ("et_plain_runner", got_p)):
        if len(got) != len(want) or any(abs(g - w) > 1e-5 * max(1.0, abs(w)) for g, w in zip(got, want)):
            return f"{name} gave {got}, the recorded eager output is {want}"
    return ""


def _cpu_ratio(base: list[str], cand: list[str], rounds: int) -> tuple[float, float, float]:
    """CPU time (user + system, wait4) of each side in alternating rounds: medians and the median
    of the per-round ratios. Steadier than wall time on a shared machine: waiting does not count."""
    cpu: dict[str, list[float]] = {"base": [], "cand": []}
    for _ in range(rounds):
        for side, argv in (("base", base), ("cand", cand)):
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, _, usage = os.wait4(proc.pid, 0)
            cpu[side].append(usage.ru_utime + usage.ru_stime)
    ratios = [c / b for b, c in zip(cpu["base"], cpu["cand"]) if b > 0]
    return statistics.median(cpu["base"]), statistics.median(cpu["cand"]), statistics.median(ratios)


def _plain_vs_fatpte(ctx: Context, section: Section) -> None:
    fatpte_run, plain = BUILD / "fatpte-run", BUILD / "et_plain_runner"
    rounds = 20 * runs()  # tens of ms each: many rounds for a steady median of a few-% gap
    for model, backend, share in MODELS:
        backends = ("xnnpack", "portable") if backend == "xnnpack" else ("portable",)
        container = _pack(ctx.work / f"rt-{model}-{backend}{'-shared' if share else ''}.nfat",
                          _toml(model, backends, share))
        calls, raw = _inputs(ctx, model)
        program = FIXTURES / f"{model}_{backend}.pte"
        cand = [str(fatpte_run), str(container), "--inputs", str(calls)]
        base = [str(plain), str(program), "forward", *map(str, raw)]
        check = _check_outputs(subprocess.run(cand, capture_output=True, text=True, check=True).stdout,
                               subprocess.run(base, capture_output=True, text=True, check=True).stdout, model)
        what = f"{model}, {backend}" + (", weights in the container's shared named data" if share else "")
        pair = alternate(Pair(f"load + first call: {what}", f"et_plain_runner on {program.name}",
                              f"<= {TIME_LIMIT}x; RSS <= {RSS_FACTOR}x + 2 MiB"),
                         partial(run_cmd, base), partial(run_cmd, cand), rounds=rounds)
        rss_c, rss_b = max(s.max_rss for s in pair.cand), max(s.max_rss for s in pair.base)
        rss_ok = rss_c <= RSS_FACTOR * rss_b + RSS_SLACK
        ok = pair.ratio <= TIME_LIMIT and rss_ok and not check
        why = [f"{pair.ratio:.3f}x"] if pair.ratio > TIME_LIMIT else []
        why += [f"RSS {fmt_bytes(rss_c)} vs {fmt_bytes(rss_b)}"] if not rss_ok else []
        pair.verdict = verdict(ok, check or ", ".join(why))
        cpu_b, cpu_c, cpu_q = _cpu_ratio(base, cand, rounds)
        pair.note = ((check or "both outputs equal the recorded eager output") +
                     f"; CPU time (user + system) {cpu_c * 1e3:.2f} ms against {cpu_b * 1e3:.2f} ms, per-round "
                     f"ratio **{cpu_q:.2f}x**")
        section.pairs.append(pair)
        if model == "mlp" and backend == "xnnpack":
            parts = [_load_us(container, calls)[4] for _ in range(rounds)]
            med = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
            section.lines.append(
                f"- Where fatpte-run's own time goes ({model}, {backend}; `fatpte_runbench load`, medians of "
                f"{rounds} runs): reading calls.json {med['calls_us']:.0f} us, opening the container "
                f"{med['open_us']:.0f} us, probing the host (cpuid, /proc/meminfo; no entry needs an accelerator, so "
                f"the CUDA driver is not looked for) {med['probe_us']:.0f} us, selecting {med['select_us']:.0f} us; "
                "loading the entry (operator and XNNPACK libraries, "
                f"Program::load, load_method) {med['entry_us']:.0f} us and the call {med['call_us']:.0f} us, "
                "which the plain runner spends too (its libraries are loaded before main).")


@dataclass(frozen=True, slots=True)
class Region:
    kind: str
    index: int
    name: str
    offset: int
    size: int
    resident: int
    runs: tuple[tuple[int, int], ...]  # resident bytes as (start, length)

    def beyond(self, windows: list[tuple[int, int]]) -> int:
        """Resident bytes outside every (start, end) window."""
        total = 0
        for start, length in self.runs:
            for lo, hi in windows:
                # Cut the part of the run that lies in the window.
                if start < hi and lo < start + length:
                    length = max(0, lo - start) + max(0, start + length - hi)
            total += length
        return total


def _regions(container: Path) -> list[Region]:
    out = subprocess.run([str(BUILD / "fatpte_runbench"), "residency", str(container)], capture_output=True,
                         text=True, check=True).stdout
    regions: list[Region] = []
    runs_of: list[tuple[int, int]] = []
    for line in out.splitlines() + ["region end"]:
        words = line.split()
        if words[0] == "run":
            runs_of.append((int(words[1]), int(words[2])))
            continue
        if regions:
            last = regions.pop()
            regions.append(Region(last.kind, last.index, last.name, last.offset, last.size, last.resident,
                                  tuple(runs_of)))
        runs_of = []
        if words[1] != "end":
            _, kind, index, name, offset, size, resident = words
            regions.append(Region(kind, int(index), name, int(offset), int(size), int(resident), ()))
    return regions


def _read_ahead_bytes(container: Path) -> int:
    """The read-ahead window of the device holding the container (read_ahead_kb), 128 KiB if unknown."""
    try:
        dev = container.stat().st_dev
        path = Path(f"/sys/dev/block/{dev >> 8}:{dev & 0xFF}")
        for probe in (path / "queue" / "read_ahead_kb", path.resolve().parent / "queue" / "read_ahead_kb"):
            if probe.exists():
                return int(probe.read_text()) << 10
    except (OSError, ValueError):
        pass
    return 128 << 10


def _load_us(container: Path, calls: Path) -> tuple[float, int, int, str, dict[str, float]]:
    """fatpte_runbench load: open to first call (us), the mapping's Rss and size, the entry, the parts."""
    out = subprocess.run([str(BUILD / "fatpte_runbench"), "load", str(container), str(calls)], capture_output=True,
                         text=True, check=True).stdout
    fields = dict(kv.split("=", 1) for kv in out.split())
    parts = {k: float(v) for k, v in fields.items() if k.endswith("_us")}
    return (float(fields["load_us"]), int(fields["mapping_rss"]), int(fields["mapping_size"]), fields["chosen"],
            parts)


def _big_container(ctx: Context, section: Section) -> None:
    size = gib(1)
    # Specializations for other devices: CUDA payloads this host cannot run, and weights they share.
    blobs = [fixtures.payload(ctx.work / f"rt-cuda-{i}.bin", size, seed=700 + i) for i in range(3)]
    weights = fixtures.payload(ctx.work / "rt-weights.bin", size, seed=710)
    extra = "".join(
        f'[[specialization]]\nname = "cuda-sm{arch}"\nbackend_id = "cuda"\npayload = "{blob.as_posix()}"\n'
        f'named_data = ["cuda.weights"]\nrequires = {{accelerators = [{{kind = "cuda", targets = ["sm_{arch}"]}}]}}\n\n'
        for arch, blob in zip((80, 90, 100), blobs))
    small = _pack(ctx.work / "rt-small.nfat", _toml("kvcache", ("xnnpack", "portable"), True))
    big = _pack(ctx.work / "rt-big.nfat", _toml("kvcache", ("xnnpack", "portable"), True, extra,
                                                 named=f'"cuda.weights" = "{weights.as_posix()}"'))
    for blob in (*blobs, weights):
        blob.unlink()  # the container holds them now; keep the disk for the container
    calls, _ = _inputs(ctx, "kvcache")
    fatpte_run = BUILD / "fatpte-run"
    rounds = 20 * runs()
    # Warm: both containers' chosen bytes in the page cache before timing.
    for c in (small, big):
        subprocess.run([str(fatpte_run), str(c), "--inputs", str(calls)], capture_output=True, check=True)
    pair = alternate(Pair("load + first call, whole process", f"the same entry from {small.stat().st_size} bytes",
                          f"within {SAME:.0%}"),
                     partial(run_cmd, [str(fatpte_run), str(small), "--inputs", str(calls)]),
                     partial(run_cmd, [str(fatpte_run), str(big), "--inputs", str(calls)]), rounds=rounds)
    pair.operation = f"{pair.operation}, {fmt_bytes(big.stat().st_size)} container"
    pair.verdict = verdict(abs(pair.ratio - 1) <= SAME, f"{pair.ratio:.3f}x")
    section.pairs.append(pair)

    in_small, in_big, ratios = [], [], []
    rss = 0
    chosen = ""
    for _ in range(rounds):
        s = _load_us(small, calls)
        b = _load_us(big, calls)
        in_small.append(s[0])
        in_big.append(b[0])
        ratios.append(b[0] / s[0])
        rss = max(rss, b[1])
        chosen = b[3]
    q = statistics.median(ratios)
    section.lines += [
        (f"- In one process (`fatpte_runbench load`: open, select, load, first call; {rounds} alternating runs): "
        f"{statistics.median(in_small) / 1e3:.2f} ms from the small container, "
        f"{statistics.median(in_big) / 1e3:.2f} ms from the {fmt_bytes(big.stat().st_size)} one; ratio of "
        f"each run **{q:.3f}x** (min-max {min(ratios):.3f}-{max(ratios):.3f}); target within {SAME:.0%}: "
        f"{verdict(abs(q - 1) <= SAME, f'{q:.3f}x')}. Chosen: `{chosen}`."),
        (f"- Resident in that process's mapping of the {fmt_bytes(big.stat().st_size)} container after the "
        f"first call: at most **{rss / 1024:.0f} KiB** (Rss of the mapping in /proc/self/smaps)."),
    ]

    # Cold: evict the file, run once, see which pages the run brought into the page cache.
    subprocess.run([str(BUILD / "fatpte_runbench"), "evict", str(big)], check=True)
    before = sum(r.resident for r in _regions(big))
    subprocess.run([str(fatpte_run), str(big), "--inputs", str(calls)], capture_output=True, check=True)
    regions = _regions(big)
    window = _read_ahead_bytes(big)
    keys = json.loads(subprocess.run([PYTHON, "-m", "fatpte", "info", str(big), "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    used_segments = {s["segment"] for s in keys.get("named_data", []) if s.get("key") in
                     set(next(e for e in keys["entries"] if e["name"] == chosen)["named_data"])}
    # Read by the loader: the metadata (header, tables, manifest), the chosen payload, its segments.
    loaded = [r for r in regions if r.kind == "metadata" or (r.kind == "entry" and r.name == chosen)
              or (r.kind == "segment" and r.index in used_segments)]
    others = [r for r in regions if r not in loaded]
    rows = ["| region | bytes | resident after one cold run | of which beyond the read-around window |",
            "|---|---|---|---|"]
    windows = [(r.offset - window, r.offset + r.size + window) for r in loaded]
    beyond_total = sum(r.beyond(windows) for r in others)
    for r in regions:
        label = r.kind if r.kind == "metadata" else f"{r.kind} {r.index}"
        label += (f" `{r.name}`" if r.name != "-" else "") + (" (read by the loader)" if r in loaded else "")
        rows.append(f"| {label} | {r.size} | {r.resident} | {'-' if r in loaded else r.beyond(windows)} |")
    other_bytes = sum(r.size for r in others)
    section.lines += [
        "",
        (f"After `fatpte_runbench evict` (fdatasync + POSIX_FADV_DONTNEED: {before} bytes of the file left in the page "
        f"cache) and one `fatpte-run` of the {fmt_bytes(big.stat().st_size)} container, the bytes of each region in "
        f"the page cache (mincore). The kernel's read-around window here is {window >> 10} KiB."),
        "",
        *rows,
        "",
        (f"- Bytes of the other specializations ({fmt_bytes(other_bytes)}) resident beyond the read-around of a "
        f"loaded region: **{beyond_total}**; target 0: {verdict(beyond_total == 0, f'{beyond_total} bytes')}"),
    ]


def measure(ctx: Context) -> Section:
    section = Section("ExecuTorch runner", "")
    missing = [p.name for p in (BUILD / "fatpte-run", BUILD / "et_plain_runner", BUILD / "fatpte_runbench")
               if not p.exists()]
    if missing:
        section.intro = (f"**Not measured**: {', '.join(missing)} not built in build/loader "
                         "(`make loader` builds them with the ExecuTorch SDK).")
        return section
    section.intro = (
        "Real models, the committed ExecuTorch 1.5.1 fixtures (tests/fixtures/executorch/), each run on its "
        "first recorded call. `fatpte-run` (release build) loads the container's chosen entry with ExecuTorch's "
        "runtime from the SDK of the pinned wheel, the backend and kernel libraries dlopen'ed at run time; "
        "`et_plain_runner` (loader/tools/et_plain_runner.cpp) is the plain ExecuTorch runner an application "
        "would be, built from the same SDK with no fatpte: it links the kernels and XNNPACK, maps the thin "
        ".pte with ExecuTorch's MmapDataLoader (no mlock) and runs the same method on the same input. Both are "
        f"whole processes, start-up, library loading and the first call included, {20 * runs()} alternating "
        "rounds, each timed by bench/spawn from its fork to its reaping; peak RSS is each process's own."
    )
    _plain_vs_fatpte(ctx, section)
    _big_container(ctx, section)
    return section
