"""Golden-call adequacy (issue 36 point 4): what `fatpte check --mutants` costs against a plain
`fatpte check` of the same container, whole processes in alternating rounds.

Two containers of mlp's fixtures (ExecuTorch 1.5.1), golden calls recorded from portable on the
three tier calls: the portable entry alone (four weight mutants: four more fatpte-run processes,
each on a one-entry container packed for it, and the two output mutants, computed in Python), and
portable with the XNNPACK fp32 lowering (four weight mutants more, its delegate's weights). The
cost per entry is the difference of the medians over the entries checked.
"""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path

from bench.harness import PYTHON, ROOT, Context, Pair, Section, alternate, median_seconds, run_cmd, runs

BUILD = ROOT / "build" / "loader"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"


def _pack(ctx: Context, name: str, entries: list[str]) -> Path:
    calls = ctx.work / "mutants-calls.json"
    calls.write_text(json.dumps(json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["mlp"]["calls"]))
    out = ctx.work / f"{name}.nfat"
    subprocess.run([PYTHON, "-m", "fatpte", "--runtime", str(BUILD / "fatpte-run"), "pack", "-q", "-f", "-o", str(out),
                    *entries, "--golden", str(calls), "--golden-from", "portable"], check=True, capture_output=True)
    return out


def _check(container: Path, *extra: str) -> list[str]:
    return [PYTHON, "-m", "fatpte", "--runtime", str(BUILD / "fatpte-run"), "check", str(container), *extra]


def measure(ctx: Context) -> Section:
    section = Section("Golden-call adequacy: check --mutants", "")
    if not (BUILD / "fatpte-run").exists():
        section.intro = "**Not measured**: build/loader is not built (`make loader`)."
        return section
    section.intro = __doc__.split("\n\n", 1)[1].replace("\n", " ").strip() if __doc__ else ""
    portable = f"portable:portable={FIXTURES / 'mlp_portable.pte'}"
    xnnpack = f"xnnpack:xnnpack={FIXTURES / 'mlp_xnnpack.pte'}"
    rows = ["| container | entries | check median | check --mutants median | --mutants per entry | mutants |",
            "|---|---|---|---|---|---|"]
    for name, entries in (("mutants-portable", [portable]), ("mutants-two", [portable, xnnpack])):
        container = _pack(ctx, name, entries)
        pair = alternate(Pair(f"check --mutants, {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}",
                              "check of the same container", "reported (no bound)"),
                         partial(run_cmd, _check(container)), partial(run_cmd, _check(container, "--mutants")),
                         rounds=runs())
        section.pairs.append(pair)
        plain, mutated = median_seconds(pair.base), median_seconds(pair.cand)
        report = json.loads(subprocess.run(_check(container, "--mutants", "--json"), capture_output=True, text=True,
                                           check=True).stdout)["mutants"]
        count = report["killed"] + report["survived"] + report["not_run"]
        rows.append(f"| {name} | {len(entries)} | {plain * 1e3:.0f} ms | {mutated * 1e3:.0f} ms | "
                    f"+{(mutated - plain) / len(entries) * 1e3:.0f} ms | {count} ({report['killed']} killed) |")
    section.lines += rows
    return section
