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


def test_aarch64_entries_run_under_the_cpu_model_their_requirements_name(tmp_path: Path) -> None:
    build = NATIVE_BUILD
    require(native=True)
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
    done = fatpte_cli(build, "check", out, "--json", "--aarch64-runtime", AARCH64_RUN)
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout
    runners = {e["name"]: e["runner"] for e in report["entries"]}
    assert runners["xnnpack-int8-asimddp"] == runners["xnnpack-fp16-asimdhp"] == "qemu cortex-a76"
    assert runners["xnnpack-fp32-aarch64"] == "qemu cortex-a53" and runners["portable"].startswith("native")
    fp32 = next(e for e in report["entries"] if e["name"] == "xnnpack-fp32-aarch64")
    assert all(o["max_rel"] < 1e-6 for o in fp32["outputs"])
