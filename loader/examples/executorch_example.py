"""Real ExecuTorch models through the C++ loader (issue 13): the demo of `make demo-executorch`
and the helpers its tests use (tests/loader/test_cpp_executorch.py).

A committed fixture model (tests/fixtures/executorch/: ExecuTorch 1.5.1 exports with the eager
outputs torch recorded for two calls) is packed with `fatpte pack --from pack.toml`: its XNNPACK
lowering preferred (priority 10) and its portable lowering as the fallback. `fatpte-run` then runs
the fixture's calls on one loaded method, once as it is (XNNPACK chosen) and once with the XNNPACK
library withheld (`--backend-lib XnnpackBackend=`: the fallback to portable, reason printed), and
the demo shows that both give the recorded eager outputs within 1e-5 (relative).

Only the `fatpte` command line is used, never the package's internals.

    python loader/examples/executorch_example.py BUILD_DIR [MODEL] [--run build/loader/fatpte-run]
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
MODELS = ("add", "mlp", "buffer", "kvcache")
FATPTE = [sys.executable, "-m", "fatpte"]
RELATIVE_TOLERANCE = 1e-5


def fixture(name: str) -> dict[str, Any]:
    """The record of fixtures.json for the file `name` (e.g. `mlp_xnnpack.pte`)."""
    record: dict[str, Any] = json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["files"][name]
    return record


def pack_toml(model: str, *, share_named_data: bool = False, backends: tuple[str, ...] = ("xnnpack", "portable"),
              xnnpack_priority: int = 10) -> str:
    """A pack.toml (docs/pack-toml.md) packing `model`'s lowerings; XNNPACK is preferred."""
    lines = ["version = 2", ""]
    for backend in backends:
        lines += ["[[specialization]]", f'name = "{backend}"',
                  f'payload = "{(FIXTURES / f"{model}_{backend}.pte").as_posix()}"', 'signature = "from-payload"']
        if backend == "xnnpack":
            lines.append(f"priority = {xnnpack_priority}")
            if share_named_data:
                lines.append("share_named_data = true")
        lines.append("")
    return "\n".join(lines)


def pack(model: str, dest: Path, **options: Any) -> Path:
    """Pack `model` into `dest` with `fatpte pack --from` a pack.toml written beside it."""
    toml = dest.with_suffix(".toml")
    toml.write_text(pack_toml(model, **options), encoding="utf-8")
    subprocess.run([*FATPTE, "pack", "-q", "-f", "-o", str(dest), "--from", str(toml)], check=True)
    return dest


def write_calls(model: str, dest: Path) -> Path:
    """The fixture's calls (inputs and recorded eager outputs) as a calls.json."""
    dest.write_text(json.dumps(fixture(f"{model}_portable.pte")["calls"]), encoding="utf-8")
    return dest


def recorded_outputs(model: str) -> list[list[dict[str, Any]]]:
    """Per call, the eager outputs torch recorded for the model."""
    return [call["outputs"] for call in fixture(f"{model}_portable.pte")["calls"]]


def mismatches(got: list[list[dict[str, Any]]], want: list[list[dict[str, Any]]]) -> list[str]:
    """Every difference between two lists of calls' outputs: dtype, shape, or a value off by more
    than 1e-5 relative (absolute below 1)."""
    problems = []
    if len(got) != len(want):
        return [f"{len(got)} calls ran, {len(want)} were recorded"]
    for c, (outs, wants) in enumerate(zip(got, want)):
        if len(outs) != len(wants):
            problems.append(f"call {c}: {len(outs)} outputs, {len(wants)} recorded")
            continue
        for k, (o, w) in enumerate(zip(outs, wants)):
            if o["dtype"] != w["dtype"] or o["shape"] != w["shape"]:
                problems.append(f"call {c} output {k}: {o['dtype']} {o['shape']}, recorded {w['dtype']} {w['shape']}")
                continue
            for i, (x, y) in enumerate(zip(o["values"], w["values"])):
                if not (x == y or (math.isnan(x) and math.isnan(y))
                        or abs(x - y) <= RELATIVE_TOLERANCE * max(1.0, abs(y))):
                    problems.append(f"call {c} output {k}[{i}]: {x!r}, recorded {y!r}")
    return problems


def run(fatpte_run: Path, container: Path, calls: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """fatpte-run on the container and calls, with `args`."""
    return subprocess.run([str(fatpte_run), str(container), "--inputs", str(calls), *args], check=False,
                          capture_output=True, text=True, timeout=300)


def main(argv: list[str]) -> int:
    args = list(argv)
    fatpte_run = ROOT / "build" / "loader" / "fatpte-run"
    if "--run" in args:
        at = args.index("--run")
        fatpte_run = Path(args[at + 1])
        del args[at:at + 2]
    if not args or len(args) > 2 or (len(args) == 2 and args[1] not in MODELS):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    out = Path(args[0])
    model = args[1] if len(args) == 2 else "mlp"
    out.mkdir(parents=True, exist_ok=True)
    container = pack(model, out / f"{model}.nfat")
    calls = write_calls(model, out / f"{model}-calls.json")
    print(f"packed {container}: {model}_xnnpack.pte (priority 10) and {model}_portable.pte, the fixtures of "
          f"tests/fixtures/executorch/ (ExecuTorch 1.5.1)")
    want = recorded_outputs(model)
    failed = False
    for title, extra in (("as it is", ()), ("with the XNNPACK library withheld", ("--backend-lib", "XnnpackBackend="))):
        shown = [str(fatpte_run.relative_to(ROOT) if fatpte_run.is_relative_to(ROOT) else fatpte_run),
                 str(container), "--inputs", str(calls), *extra, "--explain"]
        print(f"\n# {title}\n$ {' '.join(shlex.quote(a) for a in shown)}", flush=True)
        text = run(fatpte_run, container, calls, *extra, "--explain")
        print(text.stdout, end="")
        if text.returncode != 0:
            print(text.stderr, end="", file=sys.stderr)
            return 1
        result = run(fatpte_run, container, calls, *extra, "--json")
        got = [call["outputs"] for call in json.loads(result.stdout)["calls"]]
        problems = mismatches(got, want)
        chosen = json.loads(result.stdout)["chosen"]
        if problems:
            failed = True
            print(f"{chosen}: outputs differ from the recorded eager outputs:\n  " + "\n  ".join(problems))
        else:
            print(f"{chosen}: the outputs of all {len(want)} calls equal the eager outputs torch recorded "
                  f"(within {RELATIVE_TOLERANCE:g} relative)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
