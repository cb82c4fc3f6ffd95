"""`fatpte check` as a CI gate (issue 36 points 1-3), with the real runtime on the committed
ExecuTorch fixtures:

- The feature-tiered mlp container checked without an aarch64 fatpte-run exits 7 naming the three
  aarch64 entries; `--allow-unchecked` (the names, or all) makes it exit 0 and say what was allowed.
- `--cpus Nehalem,x86-64-v3,native,cortex-a53` on an x86-64-v2 entry, an x86-64-v3 entry and
  portable: one row per (entry, CPU); the v2 entry runs under `qemu-x86_64 -cpu Nehalem` and its row
  says so, the v3 entry is not eligible there (no failure), outputs compared as without --cpus; an
  AVX-512 entry is checked natively only, said so.
- Without --cpus an x86_64 entry whose features the host lacks runs under qemu-x86_64 with the
  weakest model that has them (the host made to look like Nehalem, in process).
- Two shards merged equal the unsharded report, byte for byte in --json apart from `seconds`,
  every report held to specs/check_report.schema.json; the merge refuses what does not join.
- The x86 models' features in fatpte/ops/runner.py are what fatpte-run's probe reports under each.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fatpte.manifest.model import Requirements
from fatpte.ops import check as C
from fatpte.ops import runner
from tests.builds import missing_build
from tests.paths import ROOT

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True)  # `build`: tests/loader/conftest.py
# The tests that run fatpte-run under qemu-x86_64: the release build only (an ASan build's shadow
# memory cannot be mapped under qemu-user: the runner is killed before it prints a byte).
UNDER_QEMU = pytest.mark.loader_build("fatpte-run", sdk=True, only="release")
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
TIERS = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]
SCHEMA = json.loads((ROOT / "specs" / "check_report.schema.json").read_text())
AARCH64_ENTRIES = ("xnnpack-int8-asimddp", "xnnpack-fp16-asimdhp", "xnnpack-fp32-aarch64")


def fatpte_cli(build: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FATPTE_RUN_AARCH64"}
    return subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(build / "fatpte-run"),
                           *map(str, args)], capture_output=True, text=True, timeout=600, check=False, env=env)


def require_qemu_x86() -> None:
    if shutil.which("qemu-x86_64") is None:
        missing_build("qemu-x86_64 is not installed (Debian's qemu-user)")


def packed(build: Path, tmp: Path, body: str, name: str) -> Path:
    (tmp / "calls.json").write_text(json.dumps(TIERS["mlp"]["calls"]))
    toml = tmp / f"{name}.pack.toml"
    toml.write_text('golden = "calls.json"\ngolden_from = "portable"\n' + body)
    out = tmp / f"{name}.nfat"
    done = fatpte_cli(build, "pack", "-q", "-o", out, "--from", toml)
    assert done.returncode == 0, done.stderr
    return out


def tiers(build: Path, tmp: Path) -> Path:
    text = (FIXTURES / "mlp_tiers.pack.toml").read_text().replace('payload = "', f'payload = "{FIXTURES}/')
    return packed(build, tmp, text, "tiers")


def x86_tiers(build: Path, tmp: Path, *, avx512: bool = False) -> Path:
    """mlp's XNNPACK program as an x86-64-v3 and an x86-64-v2 entry (and an AVX-512 one), and portable."""
    entries = [("xnnpack-fp32-v3", "mlp_xnnpack.pte", '["avx2", "fma"]'),
               ("xnnpack-fp32-v2", "mlp_xnnpack.pte", '["sse4_2"]'), ("portable", "mlp_portable.pte", None)]
    if avx512:
        entries.insert(0, ("xnnpack-fp32-v4", "mlp_xnnpack.pte", '["avx512f"]'))
    body = "version = 2\n"
    for k, (name, payload, features) in enumerate(entries):
        body += (f'[[specialization]]\nname = "{name}"\npayload = "{FIXTURES / payload}"\nsignature = "from-payload"\n'
                 f"priority = {10 * (len(entries) - k)}\n")
        if features:
            body += f'share_named_data = true\nrequires = {{ arch = ["x86_64"], cpu_features = {features} }}\n'
    return packed(build, tmp, body, "x86")


def report_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc = json.loads(done.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["ok"] is (done.returncode == 0), done.stdout
    return dict(doc)


def test_unchecked_tiers_exit_7_unless_allowed(build: Path, tmp_path: Path) -> None:
    container = tiers(build, tmp_path)
    done = fatpte_cli(build, "check", container, "--json")
    text = fatpte_cli(build, "check", container)
    assert done.returncode == text.returncode == 7, done.stdout
    report = report_of(done)
    assert [g["name"] for g in report["unchecked"]] == list(AARCH64_ENTRIES)
    assert not any(g["allowed"] for g in report["unchecked"]) and report["error"]["code"] is None
    assert report["counts"] == {"ran": 2, "failed_to_run": 0, "could_not_run": 3, "not_eligible": 0,
                                "no_golden_calls": 0}
    assert "2 of 5 entries ran their golden calls, 0 failed to run, 3 could not run" in text.stdout
    assert all(f"  {name}: UNCHECKED" in text.stdout for name in AARCH64_ENTRIES), text.stdout
    for allowed in (",".join(AARCH64_ENTRIES), "all"):
        done = fatpte_cli(build, "check", container, "--json", "--allow-unchecked", allowed)
        text = fatpte_cli(build, "check", container, "--allow-unchecked", allowed)
        assert done.returncode == text.returncode == 0, done.stdout
        report = report_of(done)
        assert all(g["allowed"] for g in report["unchecked"]) and len(report["unchecked"]) == 3
        assert "allowed unchecked: " + ", ".join(AARCH64_ENTRIES) in text.stdout
    # One name allowed, two gaps left: still 7; a name no entry has is a usage error.
    assert fatpte_cli(build, "check", container, "--allow-unchecked", AARCH64_ENTRIES[0]).returncode == 7
    typo = fatpte_cli(build, "check", container, "--allow-unchecked", "xnnpack-int8")
    assert typo.returncode == 2 and "no entry is named 'xnnpack-int8'" in typo.stderr


@UNDER_QEMU
def test_cpus_run_each_entry_on_each_cpu_where_it_is_eligible(build: Path, tmp_path: Path) -> None:
    require_qemu_x86()
    container = x86_tiers(build, tmp_path)
    cpus = "Nehalem,x86-64-v3,native,cortex-a53"
    done = fatpte_cli(build, "check", container, "--json", "--cpus", cpus)
    report = report_of(done)
    rows = {(e["name"], e["cpu"]): e for e in report["entries"]}
    assert len(rows) == len(report["entries"]) == 3 * 4
    v2 = rows[("xnnpack-fp32-v2", "Nehalem")]
    assert v2["state"] == "agrees" and v2["runner"] == "qemu Nehalem" and len(v2["outputs"]) == 3
    assert rows[("xnnpack-fp32-v3", "x86-64-v3")]["runner"] == "qemu Haswell (x86-64-v3)"
    assert rows[("xnnpack-fp32-v3", "native")]["runner"] == "native x86_64 (native)"
    v3_on_nehalem = rows[("xnnpack-fp32-v3", "Nehalem")]
    assert v3_on_nehalem["state"] == "not eligible" and "Nehalem lacks avx2, fma" in v3_on_nehalem["reason"]
    assert rows[("xnnpack-fp32-v2", "cortex-a53")]["state"] == "not eligible"
    # portable has no arch: eligible on cortex-a53, and no aarch64 fatpte-run here: the one gap.
    assert rows[("portable", "cortex-a53")]["state"] == "cannot run"
    assert done.returncode == 7 and [(g["name"], g["cpu"]) for g in report["unchecked"]] == [("portable", "cortex-a53")]
    assert report["counts"]["ran"] == 8 and report["counts"]["not_eligible"] == 3
    # Outputs compared as today: the same figures as the unemulated check of the same container.
    plain = report_of(fatpte_cli(build, "check", container, "--json"))
    native = {(e["name"]): e["outputs"] for e in plain["entries"]}
    assert rows[("xnnpack-fp32-v2", "native")]["outputs"] == native["xnnpack-fp32-v2"]
    assert all(o["passed"] for e in report["entries"] for o in e["outputs"])
    allowed = fatpte_cli(build, "check", container, "--cpus", cpus, "--allow-unchecked", "portable")
    assert allowed.returncode == 0 and "xnnpack-fp32-v2  qemu Nehalem" in allowed.stdout, allowed.stdout


@UNDER_QEMU
def test_an_avx512_entry_is_checked_natively_only(build: Path, tmp_path: Path) -> None:
    require_qemu_x86()
    container = x86_tiers(build, tmp_path, avx512=True)
    report = report_of(fatpte_cli(build, "check", container, "--json", "--cpus", "Haswell",
                                  "--allow-unchecked", "xnnpack-fp32-v4"))
    row = next(e for e in report["entries"] if e["name"] == "xnnpack-fp32-v4")
    assert row["state"] == "not eligible" and "checked natively only" in row["reason"]
    assert report["unchecked"][0]["name"] == "xnnpack-fp32-v4" and "eligible on none" in report["unchecked"][0]["reason"]


@UNDER_QEMU
def test_without_cpus_an_x86_entry_the_host_cannot_run_runs_under_qemu(build: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The host is made to look like Nehalem (its runner's device is the one fatpte-run probes
    under qemu-x86_64 -cpu Nehalem): the v3 entry then runs under Haswell, the v4 one nowhere."""
    require_qemu_x86()
    container = x86_tiers(build, tmp_path, avx512=True)
    native = runner.native_runtime(str(build / "fatpte-run"))
    assert native is not None
    nehalem, _ = runner.emulated_runtime(Requirements(), native.command[-1], arch="x86_64", model="Nehalem")
    assert nehalem is not None
    monkeypatch.setitem(runner._DEVICES, native, runner.device_of(nehalem))
    report = C.check(str(container), runtime=str(build / "fatpte-run"))
    rows = {e.name: e for e in report.entries}
    assert rows["xnnpack-fp32-v3"].state == C.AGREES and rows["xnnpack-fp32-v3"].runner == "qemu Haswell"
    assert rows["xnnpack-fp32-v2"].runner == rows["portable"].runner == "native x86_64"
    assert rows["xnnpack-fp32-v4"].state == C.CANNOT_RUN and "natively only" in rows["xnnpack-fp32-v4"].reason
    assert [g.name for g in report.unchecked] == ["xnnpack-fp32-v4"] and report.gate is not None


def without_timing(doc: dict[str, Any]) -> dict[str, Any]:
    for e in doc["entries"]:
        e.pop("seconds")
    return doc


@UNDER_QEMU
def test_two_shards_merged_equal_one_run(build: Path, tmp_path: Path) -> None:
    require_qemu_x86()
    container = x86_tiers(build, tmp_path)
    args = ("--cpus", "Nehalem,Haswell,native")
    whole = fatpte_cli(build, "check", container, "--json", *args)
    shards = []
    for k in (1, 2):
        done = fatpte_cli(build, "check", container, "--json", *args, "--shard", f"{k}/2")
        doc = report_of(done)
        assert doc["shard"] == {"index": k, "count": 2} and "shard_data" in doc
        shards.append(tmp_path / f"shard-{k}.json")
        shards[-1].write_text(done.stdout)
    assert {len(json.loads(s.read_text())["entries"]) for s in shards} == {4, 5}  # 9 rows, CPU by CPU
    merged = fatpte_cli(build, "check", "--merge", *shards, "--json")
    assert merged.returncode == whole.returncode == 0, merged.stderr
    report_of(merged)
    strip = [json.dumps(without_timing(json.loads(d.stdout)), indent=2) for d in (whole, merged)]
    assert strip[0] == strip[1]
    assert json.loads(whole.stdout)["pairs"]  # rows of different shards were compared
    text = fatpte_cli(build, "check", container, *args)
    assert fatpte_cli(build, "check", "--merge", *reversed(shards)).stdout == text.stdout


def test_the_merge_refuses_what_does_not_join(build: Path, tmp_path: Path) -> None:
    container = tiers(build, tmp_path)
    other = x86_tiers(build, tmp_path)
    made = {}
    for name, path, extra in (("a1", container, ("--shard", "1/2")), ("a2", container, ("--shard", "2/2")),
                              ("b2", other, ("--shard", "2/2")), ("c2", container, ("--shard", "2/2", "--cpus",
                                                                                     "native")),
                              ("d3", container, ("--shard", "3/3")), ("whole", container, ())):
        done = fatpte_cli(build, "check", path, "--json", "--allow-unchecked", "all", *extra)
        made[name] = tmp_path / f"{name}.json"
        made[name].write_text(done.stdout)
    cases = {("a1", "b2"): "another container", ("a1", "c2"): "another --cpus", ("a1", "d3"): "another split",
             ("a1", "a1"): "given twice", ("a1",): "shards 2 of 2 are missing",
             ("a1", "whole"): "a report of an unsharded check"}
    for names, said in cases.items():
        done = fatpte_cli(build, "check", "--merge", *(made[n] for n in names))
        assert done.returncode == 2 and said in done.stderr, (names, done.stderr)
    assert fatpte_cli(build, "check", "--merge", made["a1"], made["a2"]).returncode == 0
    assert fatpte_cli(build, "check", container, "--shard", "1/2").returncode == 2  # a shard is for --json
    assert fatpte_cli(build, "check", "--merge", made["a1"], made["a2"], "--cpus", "native").returncode == 2


@UNDER_QEMU
def test_the_x86_model_table_is_what_the_probe_sees(build: Path) -> None:
    require_qemu_x86()
    for model, features in runner.QEMU_X86_64_MODELS:
        emulated, why = runner.emulated_runtime(Requirements(), str(build / "fatpte-run"), arch="x86_64",
                                                model=model)
        assert emulated is not None, why
        seen = runner.device_of(emulated).cpu_features
        assert features == seen & {"sse4_2", "avx", "avx2", "fma", "f16c", "avx512f"}, model
