"""`fatpte check` on a container of feature-tiered entries (issue 30 with issue 29): the aarch64
entries run under qemu-aarch64 with the cross-built fatpte-run, each under the weakest CPU model
that has every feature its requirements name (int8 and fp16 on cortex-a76, fp32 on cortex-a53),
the x86_64 and portable ones natively, and all agree with the golden calls recorded from the
portable entry. Part of `make test-aarch64` (tests/loader/aarch64_builds.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.loader.aarch64_builds import NATIVE_BUILD, require
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
TIERS = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]
AARCH64_RUN = ROOT / "build" / "loader-aarch64" / "fatpte-run"


def fatpte_cli(build: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(build / "fatpte-run"),
                           *map(str, args)], capture_output=True, text=True, timeout=600, check=False)


def _tiers(build: Path, tmp_path: Path) -> Path:
    """mlp_tiers.pack.toml packed with golden calls recorded from portable, the int8 and fp16
    entries given their eager tolerances."""
    tolerance = {"xnnpack-int8-asimddp": "xnnpack-int8", "xnnpack-fp16-asimdhp": "xnnpack-fp16"}
    text = (FIXTURES / "mlp_tiers.pack.toml").read_text().replace('payload = "', f'payload = "{FIXTURES}/')
    for name, variant in tolerance.items():
        tol = TIERS["mlp"]["variants"][variant]["tolerance"]["eager"]
        text = text.replace(f'name = "{name}"\n', f'name = "{name}"\ngolden_tolerance = {{ atol = {tol["atol"]}, '
                            f'rtol = {tol["rtol"]} }}\n')
    (tmp_path / "calls.json").write_text(json.dumps(TIERS["mlp"]["calls"]))
    toml = tmp_path / "tiers.pack.toml"
    toml.write_text('golden = "calls.json"\ngolden_from = "portable"\n' + text)
    out = tmp_path / "tiers.nfat"
    assert fatpte_cli(build, "pack", "-q", "-o", out, "--from", toml).returncode == 0
    return out


def test_aarch64_entries_run_under_the_cpu_model_their_requirements_name(tmp_path: Path) -> None:
    build = NATIVE_BUILD
    require(native=True)
    out = _tiers(build, tmp_path)
    done = fatpte_cli(build, "check", out, "--json", "--aarch64-runtime", AARCH64_RUN)
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout
    runners = {e["name"]: e["runner"] for e in report["entries"]}
    assert runners["xnnpack-int8-asimddp"] == runners["xnnpack-fp16-asimdhp"] == "qemu cortex-a76"
    assert runners["xnnpack-fp32-aarch64"] == "qemu cortex-a53" and runners["portable"].startswith("native")
    fp32 = next(e for e in report["entries"] if e["name"] == "xnnpack-fp32-aarch64")
    assert all(o["max_rel"] < 1e-6 for o in fp32["outputs"])


def test_cpus_run_each_aarch64_entry_on_each_model_where_it_is_eligible(tmp_path: Path) -> None:
    """Issue 36: `--cpus cortex-a53,cortex-a76,a64fx` gives one row per (entry, CPU): the fp32
    aarch64 entry and portable on all three, the fp16 entry on cortex-a76 and a64fx (cortex-a53 has
    no fp16 arithmetic), the dot-product int8 entry on cortex-a76 only (a64fx has no asimddp), the
    avx2 entry on none of them (unchecked: exit 7 unless allowed). Outputs compared as without
    --cpus: fp32 on every core within 1e-6 of the portable recording."""
    build = NATIVE_BUILD
    require(native=True)
    out = _tiers(build, tmp_path)
    done = fatpte_cli(build, "check", out, "--json", "--aarch64-runtime", AARCH64_RUN,
                      "--cpus", "cortex-a53,cortex-a76,a64fx")
    report = json.loads(done.stdout)
    states = {(e["name"], e["cpu"]): (e["state"], e["runner"]) for e in report["entries"]}
    want_ran = {"xnnpack-fp32-aarch64": {"cortex-a53", "cortex-a76", "a64fx"},
                "portable": {"cortex-a53", "cortex-a76", "a64fx"},
                "xnnpack-fp16-asimdhp": {"cortex-a76", "a64fx"}, "xnnpack-int8-asimddp": {"cortex-a76"},
                "xnnpack-fp32-avx2": set()}
    for name, cpus in want_ran.items():
        for cpu in ("cortex-a53", "cortex-a76", "a64fx"):
            state, runner = states[(name, cpu)]
            if cpu in cpus:
                assert state == "agrees" and runner == f"qemu {cpu}", (name, cpu, state)
            else:
                assert state == "not eligible", (name, cpu, state)
    assert done.returncode == 7 and [g["name"] for g in report["unchecked"]] == ["xnnpack-fp32-avx2"]
    assert all(o["max_rel"] < 1e-6 for e in report["entries"] if e["name"] == "xnnpack-fp32-aarch64"
               for o in e["outputs"])
    allowed = fatpte_cli(build, "check", out, "--aarch64-runtime", AARCH64_RUN, "--cpus",
                         "cortex-a53,cortex-a76,a64fx", "--allow-unchecked", "xnnpack-fp32-avx2")
    assert allowed.returncode == 0, allowed.stdout
