"""`fatpte --help`, whole process (target: at most 120 ms), beside the bare interpreter."""

from __future__ import annotations

import os
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
        section.lines.append("`fatpte --help`: **not measured**: `fatpte/cli/main.py` is not installed as the `fatpte` "
                             "command at bench time.")
        return section
    # A wide terminal (COLUMNS=100) gets click's help text from the launcher's snapshot
    # (fatpte/cli/launch.py); a narrow one (COLUMNS=60) gets click itself. Both are timed, and the
    # narrow one, which the bound does not single out, is reported beside it.
    wide = {**os.environ, "COLUMNS": "100"}
    narrow = {**os.environ, "COLUMNS": "60"}
    pair = Pair("fatpte --help", "python -c pass", f"<= {LIMIT * 1e3:.0f} ms whole process")
    click_pair = Pair("fatpte --help, 60-column terminal (rendered by click)", "python -c pass", "")
    alternate(pair, lambda: run_cmd([PYTHON, "-c", "pass"]), lambda: run_cmd([FATPTE, "--help"], env=wide),
              rounds=4 * runs())
    alternate(click_pair, lambda: run_cmd([PYTHON, "-c", "pass"]), lambda: run_cmd([FATPTE, "--help"], env=narrow),
              rounds=4 * runs())
    seconds = statistics.median(s.seconds for s in pair.cand)
    pair.verdict = verdict(seconds <= LIMIT, fmt_seconds(seconds))
    pair.note = (f"median {fmt_seconds(seconds)} whole process, on a terminal of 80 columns or more: the "
                 "launcher prints click's own help text, generated from click (tools/gen_cli_help.py)")
    click_seconds = statistics.median(s.seconds for s in click_pair.cand)
    click_pair.note = (f"median {fmt_seconds(click_seconds)} whole process: below 80 columns click wraps the text "
                       "itself, so the launcher hands `--help` to click, as it does every command's help")
    section.pairs += [pair, click_pair]
    if seconds > LIMIT:
        section.lines.append("Finding: " + import_costs([FATPTE, "--help"]) + " The bare interpreter takes "
                             f"{fmt_seconds(statistics.median(s.seconds for s in pair.base))} on this machine in "
                             "the same rounds.")
    # Which heavy modules `--help` imports: the issue forbids construct's compiler, hypothesis, numpy.
    probe = ("import sys; sys.argv=['fatpte','--help']\nfrom fatpte.cli.launch import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([PYTHON, "-c", probe], check=False, capture_output=True, text=True)
    loaded = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    section.lines.append(f"Heavy modules imported by `fatpte --help`: {loaded or 'none of ' + ', '.join(HEAVY)}.")
    return section
