"""`fatpte --help`, whole process (target: at most 120 ms), beside the bare interpreter."""

from __future__ import annotations

import statistics
import subprocess

from bench.commands import FATPTE, cli_available
from bench.harness import (
    PYTHON,
    Context,
    Pair,
    Section,
    alternate,
    fmt_seconds,
    import_costs,
    run_cmd,
    runs,
    verdict,
)

LIMIT = 0.120
HEAVY = ("construct", "hypothesis", "numpy", "flatbuffers", "crc32c")


def measure(ctx: Context) -> Section:
    section = Section("startup", "Whole-process wall time, alternating with `python -c pass` (the floor any "
                      "Python command pays).")
    if not cli_available():
        section.lines.append("`fatpte --help`: **not measured**: `fatpte/cli.py` is not installed as the `fatpte` "
                             "command at bench time.")
        return section
    pair = Pair("fatpte --help", "python -c pass", f"<= {LIMIT * 1e3:.0f} ms whole process")
    alternate(pair, lambda: run_cmd([PYTHON, "-c", "pass"]), lambda: run_cmd([FATPTE, "--help"]),
              rounds=4 * runs())
    seconds = statistics.median(s.seconds for s in pair.cand)
    pair.verdict = verdict(seconds <= LIMIT, fmt_seconds(seconds))
    pair.note = f"median {fmt_seconds(seconds)} whole process"
    section.pairs.append(pair)
    if seconds > LIMIT:
        section.lines.append("Finding: " + import_costs([FATPTE, "--help"]) + " The bare interpreter takes "
                             f"{fmt_seconds(statistics.median(s.seconds for s in pair.base))} on this machine in "
                             "the same rounds.")
    # Which heavy modules `--help` imports: the issue forbids construct's compiler, hypothesis, numpy.
    probe = ("import sys; sys.argv=['fatpte','--help']\nfrom fatpte.launch import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([PYTHON, "-c", probe], check=False, capture_output=True, text=True)
    loaded = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    section.lines.append(f"Heavy modules imported by `fatpte --help`: {loaded or 'none of ' + ', '.join(HEAVY)}.")
    return section
