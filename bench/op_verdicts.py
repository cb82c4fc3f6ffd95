"""Remembered verdicts and receipts (issue 38, specs/verdicts.md, specs/receipts.md): what a start
costs that serves an entry on a remembered pass instead of running its golden calls, against a
start that runs no self-test at all; what keying the store costs a start (the whole probe, the
container's metadata digest, each library's build id read from its file, the store read and, on a
first start, written); and what a receipt adds to a load. Target for receipts: under 1%.

Whole processes (`fatpte-run`, load + first call), alternating, on the KV-cache fixture packed as
its XNNPACK lowering (chosen) and its portable one with three golden calls recorded from portable.
Target: a start on a remembered pass within 1.05x of a start without a self-test.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench import qemu_count
from bench.harness import (
    PYTHON,
    ROOT,
    Context,
    Pair,
    Sample,
    Section,
    alternate,
    compiled,
    run_cmd,
    runs,
    verdict,
)

BUILD = ROOT / "build" / "loader"
# A core with SHA2 (every model of qemu 7.2 has it, HWCAP 0x8fb and up; bench/hide_sha2.c hides it).
AARCH64_CPU = "cortex-a72"
# Counts of a start taken, the least kept: what the main thread spins while it waits for the
# thread pool (callgrind, qemu) is noise of up to 17,000 instructions, the size of what is measured.
COUNTED_RUNS = 4
# Under qemu-aarch64 the spin lands in more starts than not (three of three once): six are counted.
QEMU_COUNTED_RUNS = 6
STEPCOUNT_SOURCE = ROOT / "bench" / "stepcount.c"
STEPCOUNT = ROOT / "build" / "bench" / "stepcount"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"


def _container(ctx: Context) -> tuple[Path, Path]:
    out, calls_path = ctx.work / "verdicts-kvcache.nfat", ctx.work / "verdicts-calls.json"
    calls = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["kvcache"]["calls"]
    calls_path.write_text(json.dumps(calls))
    subprocess.run([PYTHON, "-m", "fatpte", "--runtime", str(BUILD / "fatpte-run"), "pack", "-q", "-f", "-o", str(out),
                    f"xnnpack:xnnpack={FIXTURES / 'kvcache_xnnpack_default.pte'}",
                    f"portable:portable={FIXTURES / 'kvcache_portable_default.pte'}", "--priority", "xnnpack=10",
                    "--golden", str(calls_path), "--golden-from", "portable"], check=True, capture_output=True)
    first = ctx.work / "verdicts-first-call.json"
    first.write_text(json.dumps(calls[:1]))
    return out, first


def measure(ctx: Context) -> Section:
    section = Section("Remembered verdicts", __doc__.split("\n\n", 1)[1].strip() if __doc__ else "")
    if not (BUILD / "fatpte-run").exists():
        section.intro = "**Not measured**: build/loader is not built (`make loader`)."
        return section
    container, inputs = _container(ctx)
    run = [str(BUILD / "fatpte-run"), str(container), "--inputs", str(inputs)]
    store = ctx.work / "verdicts-store"
    subprocess.run([*run, "--self-test", "--verdicts", str(store)], check=True, capture_output=True)  # a pass
    hit = alternate(Pair("load + first call, --self-test on a remembered pass", "the same without --self-test",
                         "within 1.05x"),
                    partial(run_cmd, run),
                    partial(run_cmd, [*run, "--self-test", "--verdicts", str(store)]),
                    rounds=10 * runs())
    hit.verdict = verdict(hit.ratio <= 1.05, f"{hit.ratio:.3f}x")
    hit.note = "no golden call is made and the method is not loaded twice; the store is read, not written"
    tested = alternate(Pair("load + first call, --self-test (nothing remembered)", "the same without --self-test",
                            "shown"),
                       partial(run_cmd, run), partial(run_cmd, [*run, "--self-test"]), rounds=10 * runs())
    tested.note = "what the remembered pass saves: three golden calls and a second load of the stateful method"
    fresh = ctx.work / "verdicts-fresh"

    def first_start() -> Sample:
        shutil.rmtree(fresh, ignore_errors=True)
        return run_cmd([*run, "--verdicts", str(fresh)])

    keyed = alternate(Pair("load + first call, --verdicts without --self-test, a first start (journal written "
                           "and synced, then the `loaded` record)", "the same without --verdicts", "shown"),
                      partial(run_cmd, run), first_start, rounds=10 * runs())
    keyed.note = ("the whole probe, the keys (container digest, build ids read from each library file) and two "
                  "synced writes: paid once per key")
    again = alternate(Pair("load + first call, --verdicts without --self-test, a later start (`loaded` remembered)",
                           "the same without --verdicts", "shown"),
                      partial(run_cmd, run), partial(run_cmd, [*run, "--verdicts", str(store)]), rounds=10 * runs())
    again.note = "the whole probe and the keys; the store is read, not written"
    section.pairs += [hit, tested, keyed, again]
    section.lines += _instructions(run, store)
    return section


def _instructions(run: list[str], store: Path) -> list[str]:
    """Instructions of each kind of start, counted by callgrind: a figure the shared machine's load
    does not move (the wall-clock ratios above swing from 0.3x to 10x on it)."""
    if shutil.which("valgrind") is None:
        return ["", "Instructions not counted: valgrind is not installed."]
    receipts = str(store.parent / "verdicts-receipts.jsonl")
    kinds = [("without --self-test (baseline)", []), ("--self-test on a remembered pass", ["--self-test",
                                                                                             "--verdicts", str(store)]),
             ("--self-test, nothing remembered", ["--self-test"]),
             ("--verdicts, a remembered load", ["--verdicts", str(store)]),
             ("--receipt FILE", ["--receipt", receipts]),
             ("--verdicts and --receipt FILE, a remembered load", ["--verdicts", str(store), "--receipt", receipts])]
    def collected(more: list[str]) -> int:
        done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *run, *more],
                              capture_output=True, text=True, check=True)
        return int(re.search(r"Collected : (\d+)", done.stderr).group(1))  # type: ignore[union-attr]

    counts = []
    for _, more in kinds:
        # A first run not counted: under valgrind the probe sees valgrind's CPU, another device
        # fingerprint, so it is a first start for that device. Then the least of COUNTED_RUNS: the
        # main thread spin-waits for the thread pool's workers during the call, as long as valgrind
        # happens to schedule them, which moved one count by up to 17,000 instructions.
        collected(more)
        counts.append(min(collected(more) for _ in range(COUNTED_RUNS)))
    rows = ["", "| start (load + first call, whole process) | instructions | against the baseline |", "|---|---|---|"]
    rows += [f"| {label} | {n:,} | {n / counts[0]:.3f}x |" for (label, _), n in zip(kinds, counts)]
    ratio = counts[1] / counts[0]
    rows += ["", (f"- A start on a remembered pass: **{ratio:.3f}x** the instructions of a start without a self-test "
                  f"(target within 1.05x: {verdict(ratio <= 1.05, f'{ratio:.3f}x')}).")]
    receipt_rows = [ReceiptRow("valgrind's virtual x86-64 CPU: AVX2+BMI2 (no SHA instructions)", "callgrind, every "
                               "thread", counts[0], counts[4]),
                    ReceiptRow("the same CPU, a start with a verdict store (`--verdicts`, a remembered load), whose "
                               "keys the receipt reuses", "callgrind, every thread", counts[3], counts[5])]
    return rows + _receipts_table(receipt_rows + _native_receipt(run, store) + _aarch64_receipts(run, store))


@dataclass(frozen=True)
class ReceiptRow:
    """A start without and with --receipt FILE on one CPU, in instructions; `base` 0: not counted,
    `how` then says why."""

    cpu: str
    how: str
    base: int = 0
    with_receipt: int = 0

    @property
    def added(self) -> float:
        return self.with_receipt / self.base - 1


def _receipts_table(rows: list[ReceiptRow]) -> list[str]:
    """What a receipt adds to a start on each CPU counted: its own work is a near-constant (the
    SHA-256 digest of the container's tables, 560 bytes here, three library files' build ids, a
    JSON line and its write), so its share depends on the SHA-256 path the CPU takes and on how
    small the load is."""
    out = ["", ("What a receipt adds to a load (target under 1%), by CPU: the SHA-256 path its digest of the "
                "container's tables takes (9 blocks for this container; without a verdict store the device "
                "fingerprint is the reader's to make, receipts version 2) decides most of the difference."), "",
           "| CPU (SHA-256 path) | counted by | a start | with --receipt | a receipt adds | target under 1% |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        if r.base == 0:
            out.append(f"| {r.cpu} | not counted: {r.how} | | | | |")
            continue
        figure = f"{100 * r.added:.2f}%"
        out.append(f"| {r.cpu} | {r.how} | {r.base:,} | {r.with_receipt:,} | **{figure}** | "
                   f"{verdict(r.added < 0.01, figure)} |")
    return out


def _native_receipt(run: list[str], store: Path) -> list[ReceiptRow]:
    """A receipt's instructions on this CPU itself: valgrind's virtual CPU has no SHA extensions,
    so under callgrind the receipt's SHA-256 digest (9 blocks) takes the AVX2 path; natively
    it takes SHA-NI where the CPU has it. Counted by single-stepping the main thread
    (bench/stepcount.c), a start each way, the receipt's twice (about 1.5 minutes a start)."""
    cpu = "this machine's CPU natively: SHA-NI"
    if "sha_ni" not in Path("/proc/cpuinfo").read_text(errors="replace").split():
        return [ReceiptRow("this machine's CPU natively", "it has no SHA extensions (callgrind's figure is its own)")]
    counter = str(compiled(STEPCOUNT_SOURCE, STEPCOUNT))
    receipts = str(store.parent / "verdicts-native-receipts.jsonl")

    def steps(more: list[str]) -> int:
        done = subprocess.run([counter, *run, *more], capture_output=True, text=True, check=True)
        return int(done.stdout.split()[-1])

    base = steps([])
    with_receipt = min(steps(["--receipt", receipts]) for _ in range(2))
    return [ReceiptRow(cpu, "bench/stepcount.c, the main thread single-stepped", base, with_receipt)]


def _aarch64_receipts(run: list[str], store: Path) -> list[ReceiptRow]:
    """A receipt's instructions on aarch64: the cross-built fatpte-run (build/loader-aarch64) under
    qemu-aarch64 -cpu AARCH64_CPU, the same container and call, its main thread counted by
    bench/qemu_insn.c (as stepcount counts x86: the thread pool's worker spins for as long as the
    start lasts, which moved a count of both threads by 17k from one run to the next; the main
    thread's moves by about 1k, and often by 17k, so each start is counted QEMU_COUNTED_RUNS
    times and the least kept), on the ARMv8 SHA2 path, and again with bench/hide_sha2.c preloaded, which hides
    HWCAP_SHA2 as a Cortex-A72 without the crypto extension (the Raspberry Pi 4's) does: no qemu 7.2
    model lacks SHA2. The preloaded library makes every start of that pair longer (a second
    dynamic symbol scope), so its ratio is against its own baseline."""
    from tests.scripts import load_script

    cpu = load_script("tools/tier_matrix.py").emulated_cpu(AARCH64_CPU)  # the qemu matrix's own invocation
    labels = [f"aarch64, qemu-aarch64 -cpu {AARCH64_CPU}: ARMv8 SHA2 instructions",
              f"aarch64, qemu-aarch64 -cpu {AARCH64_CPU} with HWCAP_SHA2 hidden (as a Raspberry Pi 4): portable"]
    why = qemu_count.unavailable()
    if why is None and not (cpu.build / "fatpte-run").exists():
        why = "build/loader-aarch64 is not built (`make loader-aarch64`)"
    if why is not None:
        return [ReceiptRow(label, why) for label in labels]
    start = [str(cpu.build / "fatpte-run"), *run[1:]]
    receipts = str(store.parent / "verdicts-aarch64-receipts.jsonl")
    rows = []
    try:
        # Each label with what a SHA-256 block costs on its path there (bench/sha256_blocks.cpp).
        labels = [f"{label} ({qemu_count.per_block(AARCH64_CPU, path):,.0f} instructions a block)"
                  for label, path in zip(labels, ("armv8-sha2", "portable"))]
        hidden = [cpu.prefix[0], "-E", f"LD_PRELOAD={qemu_count.sha2_hidden()}", *cpu.prefix[1:]]
        for label, qemu in zip(labels, (cpu.prefix, hidden)):
            counted = partial(qemu_count.count, qemu, main_thread=True)
            base = min(counted(start) for _ in range(QEMU_COUNTED_RUNS))
            with_receipt = min(counted([*start, "--receipt", receipts]) for _ in range(QEMU_COUNTED_RUNS))
            rows.append(ReceiptRow(label, "bench/qemu_insn.c, the main thread", base, with_receipt))
    except (subprocess.CalledProcessError, OSError) as error:
        return [ReceiptRow(label, f"qemu-aarch64 failed ({error})") for label in labels]
    return rows
