"""Safe in the field (issue 38): what isolated qualification adds to a load.

Load + first call, whole processes: `fatpte-run --isolate` (each candidate entry loaded and its
call run in a child fatpte-run first) against `fatpte-run` on the same container, mlp's XNNPACK and
portable lowerings (the XNNPACK entry qualifies and serves: one qualification). The difference is
the added cost of one qualified entry; no target: the issue asks for it to be reported.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from functools import partial

from bench.harness import PYTHON, ROOT, Context, Pair, Section, alternate, run_cmd, runs

BUILD = ROOT / "build" / "loader"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"


def measure(ctx: Context) -> Section:
    section = Section("Safe in the field: isolated qualification", "")
    if not (BUILD / "fatpte-run").exists():
        section.intro = "**Not measured**: build/loader is not built (`make loader`)."
        return section
    container = ctx.work / "field-mlp.nfat"
    subprocess.run([PYTHON, "-m", "fatpte", "pack", "-q", "-f", "-o", str(container),
                    f"xnnpack:xnnpack={FIXTURES / 'mlp_xnnpack.pte'}", f"portable:portable={FIXTURES / 'mlp_portable.pte'}"],
                   check=True, capture_output=True)
    calls = ctx.work / "field-mlp.calls.json"
    fixtures = json.loads((FIXTURES / "fixtures.json").read_text())["files"]["mlp_portable.pte"]["calls"]
    calls.write_text(json.dumps(fixtures[:1]))
    run = [str(BUILD / "fatpte-run"), str(container), "--inputs", str(calls)]
    pair = alternate(Pair("load + first call, whole process, with --isolate", "the same in process only",
                          "reported (issue 38: no bound)"),
                     partial(run_cmd, run), partial(run_cmd, [*run, "--isolate"]), rounds=10 * runs())
    added = statistics.median(s.seconds for s in pair.cand) - statistics.median(s.seconds for s in pair.base)
    pair.note = f"added per qualified entry: {added * 1e3:.1f} ms (medians)"
    section.pairs.append(pair)
    section.intro = ("`fatpte-run --isolate` qualifies the entry it serves in a child fatpte-run (load and one "
                     "call) before loading it itself: one process start, one load and one call per qualified entry.")
    return section
