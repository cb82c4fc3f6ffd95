"""`fatpte validate` of a 3 GiB container, page cache warm (targets: at least 5 GB/s, and at
least 0.8x the raw CRC32C speed of the same bytes in the same process)."""

from __future__ import annotations

import json
import statistics
import subprocess

from bench import fixtures
from bench.commands import Commands
from bench.harness import (
    PYTHON,
    ROOT,
    Context,
    Pair,
    Sample,
    Section,
    alternate,
    fmt_bytes,
    run_cmd,
    runs,
    verdict,
)
from bench.op_pack import payloads

MIN_SPEED = 5e9
MIN_FRACTION = 0.8
SCRIPT = str(ROOT / "bench" / "validate_inproc.py")


def measure(ctx: Context) -> Section:
    cmds = ctx.commands
    assert isinstance(cmds, Commands)
    container = ctx.work / "validate-3.nfat"
    items = payloads(ctx)
    run_cmd([PYTHON, "-c", ("import fatpte,sys; a=sys.argv[2:]; fatpte.pack([fatpte.Specialization(a[i], a[i+1]) "
             "for i in range(0, len(a), 2)], sys.argv[1])"), str(container),
             *[x for b, p in items for x in (b, str(p))]])
    size = container.stat().st_size
    fixtures.warm(container)

    # In one process: raw CRC32C and fatpte.validate alternate over the same mapping-sized bytes.
    proc = subprocess.run([PYTHON, SCRIPT, str(container), str(runs())], capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout)
    inproc = Pair(f"validate {fmt_bytes(size)} (in process)", "raw CRC32C over a fresh mapping, same process",
                  f">= {MIN_FRACTION}x the raw speed, >= 5 GB/s")
    inproc.base = [Sample(s, data["raw_rss"]) for s in data["raw"]]
    inproc.cand = [Sample(s, 0) for s in data["validate"]]
    speed = size / statistics.median(data["validate"])
    raw_speed = size / statistics.median(data["raw"])
    fraction = 1 / inproc.ratio
    reasons = []
    if speed < MIN_SPEED:
        reasons.append(f"{speed / 1e9:.2f} GB/s" + (
            f"; the raw CRC32C itself ran at {raw_speed / 1e9:.2f} GB/s in the same rounds, so this machine "
            "could not reach 5 GB/s at the time (see the load average above)" if raw_speed < MIN_SPEED else ""))
    if fraction < MIN_FRACTION:
        reasons.append(f"{fraction:.2f}x raw")
    inproc.verdict = verdict(not reasons, ", ".join(reasons))
    inproc.note = (f"fatpte.validate {speed / 1e9:.2f} GB/s, raw CRC32C {raw_speed / 1e9:.2f} GB/s: validate runs "
                   f"at {fraction:.2f}x the raw speed (RSS is not measured per call inside one process)")

    whole = Pair(f"validate {fmt_bytes(size)} (whole process)", "raw CRC32C in a fresh Python process",
                 ">= 5 GB/s")
    validate = cmds.simple("validate", container)
    alternate(whole, lambda: run_cmd([PYTHON, SCRIPT, str(container), "raw"]), lambda: run_cmd(validate))
    wspeed = size / statistics.median(s.seconds for s in whole.cand)
    whole.verdict = verdict(wspeed >= MIN_SPEED, f"{wspeed / 1e9:.2f} GB/s, of which interpreter and CLI "
                            "start-up (see startup) is a fixed part")
    whole.note = (f"{wspeed / 1e9:.2f} GB/s including interpreter start-up; peak RSS stays bounded because "
                  "pages are released behind the hash (fatpte/fileio/checksum.py)")
    return Section(
        "validate",
        "A 3-payload container (from the pack fixture), warm in the page cache. The in-process row times "
        "`fatpte.validate(path)` (structure, padding, every checksum) against a bare CRC32C loop over a fresh "
        "read-only mapping of the same file, alternating in one process; a ratio below 1.25 means validate "
        "runs at more than 0.8x the raw speed. fatpte/fileio/checksum.py hashes regions of 64 MiB or more as two "
        "halves on two threads and joins the CRCs, so with a free core validate can beat the one-thread "
        "raw loop; on a loaded machine both are bound by the same busy cores.",
        [inproc, whole],
    )
