"""`fatpte check --shard` (issue 36 point 3): two shards and their merge against one run of the
same check, the same total work. mlp's XNNPACK program as an x86-64-v3 and an x86-64-v2 entry and
its portable program, golden calls recorded from portable, checked with `--cpus
Nehalem,Haswell,native` (9 rows, 8 of them under qemu-x86_64 or native: the work a CI matrix
spreads). The sharded side runs `check --shard 1/2 --json`, `check --shard 2/2 --json` and `check
--merge` one after the other; target: within 1.1x of one run plus the two extra processes'
start-up: a check process that runs no row (`--shard 1/64` of these 9 rows: Python, the imports, the
container read and hashed, the native runner's probe), measured in the same rounds."""

from __future__ import annotations

import json
import shlex
import statistics
import subprocess
from pathlib import Path

from bench.harness import PYTHON, ROOT, Context, Pair, Sample, Section, alternate, run_cmd, runs, verdict

BUILD = ROOT / "build" / "loader"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
CPUS = "Nehalem,Haswell,native"


def _container(ctx: Context) -> Path:
    calls = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["mlp"]["calls"]
    (ctx.work / "shards-calls.json").write_text(json.dumps(calls))
    body = 'golden = "shards-calls.json"\ngolden_from = "portable"\nversion = 2\n'
    for name, payload, features, priority in (("xnnpack-fp32-v3", "mlp_xnnpack.pte", '["avx2", "fma"]', 20),
                                              ("xnnpack-fp32-v2", "mlp_xnnpack.pte", '["sse4_2"]', 10),
                                              ("portable", "mlp_portable.pte", None, 0)):
        body += (f'[[specialization]]\nname = "{name}"\npayload = "{FIXTURES / payload}"\n'
                 f'signature = "from-payload"\npriority = {priority}\n')
        if features:
            body += f'share_named_data = true\nrequires = {{ arch = ["x86_64"], cpu_features = {features} }}\n'
    toml = ctx.work / "shards.pack.toml"
    toml.write_text(body)
    out = ctx.work / "shards.nfat"
    subprocess.run([PYTHON, "-m", "fatpte", "--runtime", str(BUILD / "fatpte-run"), "pack", "-q", "-f", "-o",
                    str(out), "--from", str(toml)], check=True, capture_output=True)
    return out


def _shell(args: list[str], out: Path) -> list[str]:
    """`args > out` through sh (run_cmd sends stdout nowhere); both sides pay the same sh."""
    return ["sh", "-c", f"{shlex.join(args)} > {shlex.quote(str(out))}"]


def measure(ctx: Context) -> Section:
    section = Section("check: 2 shards vs one run", __doc__.split("\n\n")[0].replace("\n", " ") if __doc__ else "")
    if not (BUILD / "fatpte-run").exists():
        section.intro = "**Not measured**: build/loader is not built (`make loader`)."
        return section
    container = _container(ctx)
    fatpte = [PYTHON, "-m", "fatpte", "--runtime", str(BUILD / "fatpte-run")]
    check = [*fatpte, "check", str(container), "--cpus", CPUS, "--json"]
    outs = [ctx.work / f"shard-{k}.json" for k in (1, 2)]
    starts: list[float] = []
    probes: list[float] = []
    probe = ["qemu-x86_64", "-cpu", "Haswell", str(BUILD / "fatpte-run"), "--device-json", "--with-executorch"]

    def one() -> Sample:
        return run_cmd(_shell(check, ctx.work / "whole.json"))

    def sharded() -> Sample:
        parts = [run_cmd(_shell([*check, "--shard", f"{k}/2"], outs[k - 1])) for k in (1, 2)]
        parts.append(run_cmd(_shell([*fatpte, "check", "--merge", *map(str, outs), "--json"],
                                    ctx.work / "merged.json")))
        starts.append(run_cmd(_shell([*check, "--shard", "1/64"], ctx.work / "empty.json")).seconds)
        probes.append(run_cmd(probe).seconds)
        return Sample(sum(p.seconds for p in parts), max(p.max_rss for p in parts))

    pair = alternate(Pair("check --cpus Nehalem,Haswell,native: shard 1/2 + shard 2/2 + --merge, one after "
                          "the other", "the same check in one run", "<= 1.1x + 2 start-ups"),
                     one, sharded, rounds=runs())
    start = statistics.median(starts)
    base = statistics.median(s.seconds for s in pair.base)
    cand = statistics.median(s.seconds for s in pair.cand)
    pair.verdict = verdict(cand <= 1.1 * base + 2 * start, f"{cand:.2f} s > 1.1 x {base:.2f} s + 2 x {start:.2f} s")
    whole = json.loads((ctx.work / "whole.json").read_text())
    merged = json.loads((ctx.work / "merged.json").read_text())
    for doc in (whole, merged):
        for e in doc["entries"]:
            e.pop("seconds")
    pair.note = (f"start-up of a check process that runs no row: {start:.3f} s median; beyond it each shard asks "
                 "each emulated runner it uses for its device once (here Haswell is asked by both shards: "
                 f"{statistics.median(probes):.3f} s median under qemu-x86_64); the merged report equals the one "
                 f"run's apart from `seconds`: {'yes' if whole == merged else 'NO'}")
    section.pairs.append(pair)
    return section
