"""Python `fatpte.open(...)` + `select(...)` for 16 entries, after import (target: under 1 ms)."""

from __future__ import annotations

import json
import statistics
import subprocess

from bench.harness import PYTHON, ROOT, Context, Pair, Sample, Section, fmt_seconds, runs, verdict
from bench.op_info_select import containers

LIMIT = 1e-3


def measure(ctx: Context) -> Section:
    small, big = containers(ctx)
    section = Section("Python API: open + select", "Timed inside one process after `import fatpte` and one "
                      "warm-up call; each sample is the mean of 200 calls; the baseline is os.open + mmap + "
                      "close of the same file, the floor of any open.")
    for label, path in (("1 MiB", small), ("4 GiB", big)):
        proc = subprocess.run([PYTHON, str(ROOT / "bench" / "api_inproc.py"), str(path), str(runs())],
                              capture_output=True, text=True, check=True)
        data = json.loads(proc.stdout)
        what = "open + select" if data["select"] else "open (fatpte.select not available at bench time)"
        pair = Pair(f"{what}, 16 entries, {label}", "os.open + mmap + close", "< 1 ms")
        pair.base = [Sample(s, 0) for s in data["floor"]]
        pair.cand = [Sample(s, 0) for s in data["api"]]
        seconds = statistics.median(data["api"])
        pair.verdict = verdict(seconds < LIMIT, fmt_seconds(seconds))
        pair.note = f"median {fmt_seconds(seconds)} per call (RSS not measured per call)"
        section.pairs.append(pair)
    if any(statistics.median(s.seconds for s in p.cand) >= LIMIT for p in section.pairs):
        section.lines.append(API_FINDING)
    return section


API_FINDING = (
    "Finding (profiled with cProfile, 16 entries): about 60% of open is fatpte/format/structure.py "
    "`_read_v2_entries`, some 20 us per entry: a `codec.decode` call and a dict per record, two "
    "`id_problem` calls per entry each running a Python generator over the id's bytes, and f-strings "
    "for field paths built before any error exists. The change (in structure.py, not owned by the "
    "bench): decode the whole table with one `struct.iter_unpack` over `buf[entries_at:entries_end]`; "
    "check ids with one precompiled `re.compile(rb'[A-Za-z0-9_.-]{1,32}\\x00*').fullmatch(raw)` and call "
    "`id_problem` only when it fails (for the message); build field paths only when a finding is added. "
    "`select` is the other 30% (fatpte/device/selection.py)."
)
