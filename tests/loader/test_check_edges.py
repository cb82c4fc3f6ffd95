"""The edges of golden calls (issue 36 point 6), with the real runtime:

- `fatpte check` on an ExecuTorch program: a fat program's delegates are checked as containers,
  their nested entries' golden calls run (fatpte/ops/check_program.py); a plain program, or a fat
  one merged without calls, is E0711 saying how to give it some, never "not an ExecuTorch file";
- `fatpte merge --golden CALLS.json [--golden-from NAME]` on the command line;
- `pack --golden-from X --signature-from Y` with Y not X (it once failed: E0702 `fatpte.signature_check
  is 'from:Y'`, the recording entry packed alone naming an entry not there);
- `pack --golden-from` of an aarch64 entry: `--aarch64-runtime` (arguments and --from), and the
  message naming $FATPTE_RUN_AARCH64 and that option of both commands.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.loader.aarch64_builds import BUILD as AARCH64_BUILD
from tests.loader.aarch64_builds import NATIVE_BUILD, require
from tests.paths import ROOT

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True)  # `build`: tests/loader/conftest.py
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
TIERS = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["mlp"]
XNNPACK, PORTABLE = FIXTURES / "mlp_xnnpack.pte", FIXTURES / "mlp_portable.pte"


def fatpte_cli(build: Path, *args: Any, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(build / "fatpte-run"),
                           *map(str, args)], capture_output=True, text=True, timeout=600, check=False, env=env)


def calls(tmp: Path, *, outputs: bool = False) -> Path:
    """mlp's tier calls (random inputs), with the portable reference outputs when `outputs`."""
    reference = TIERS["variants"]["portable"]["reference"]
    given = [{"inputs": c["inputs"], **({"outputs": out} if outputs else {})} for c, out in zip(TIERS["calls"],
                                                                                                reference)]
    path = tmp / ("calls-out.json" if outputs else "calls.json")
    path.write_text(json.dumps(given))
    return path


def test_a_plain_program_says_how_to_pack_it_with_golden_calls(build: Path) -> None:
    done = fatpte_cli(build, "check", PORTABLE)
    assert done.returncode == 2, done.stderr
    assert "E0711" in done.stderr and f"fatpte pack -o model.nfat portable={PORTABLE} --golden CALLS.json " \
        "--golden-from portable" in done.stderr
    assert "not an ExecuTorch file" not in done.stderr and "not a container" not in done.stderr


def test_a_fat_program_merged_without_calls_says_how_to_merge_with_them(build: Path) -> None:
    done = fatpte_cli(build, "check", FIXTURES / "mlp_fat.pte")
    assert done.returncode == 2, done.stderr
    assert "[delegate 0 FatpteBackend at 0x" in done.stderr and "E0711" in done.stderr
    assert "fatpte merge LOWERED.pte PORTABLE.pte -o OUT.pte --golden CALLS.json" in done.stderr
    assert "fatpte-check-" not in done.stderr  # the scratch copy is never named


@pytest.mark.parametrize("recorded", [True, False], ids=["golden-from", "outputs-given"])
def test_merge_golden_and_check_of_the_fat_program(build: Path, tmp_path: Path, recorded: bool) -> None:
    fat = tmp_path / "fat.pte"
    given = ["--golden", calls(tmp_path, outputs=not recorded), *(["--golden-from", "portable"] if recorded else [])]
    done = fatpte_cli(build, "merge", "-o", fat, XNNPACK, PORTABLE, *given)
    assert done.returncode == 0, done.stderr
    checked = fatpte_cli(build, "check", fat, "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] and report["source"] == str(fat) and len(report["delegates"]) == 1
    nested = report["delegates"][0]
    assert nested["source"].startswith(f"{fat}[delegate 0 FatpteBackend at 0x")
    states = {e["name"]: e["state"] for e in nested["entries"]}
    assert states == {"xnnpack": "no golden calls", "portable": "agrees"}  # a backend's blob states no signature
    portable = next(e for e in nested["entries"] if e["name"] == "portable")
    assert [o["call"] for o in portable["outputs"]] == [0, 1, 2] and all(o["passed"] for o in portable["outputs"])
    text = fatpte_cli(build, "check", fat, "--mutants")
    assert text.returncode == 0, text.stdout
    assert "[delegate 0 FatpteBackend at 0x" in text.stdout and "adequacy: every mutant was killed (6)" in text.stdout


def test_merge_golden_from_needs_the_calls(build: Path, tmp_path: Path) -> None:
    done = fatpte_cli(build, "merge", "-o", tmp_path / "fat.pte", XNNPACK, PORTABLE, "--golden-from", "portable")
    assert done.returncode == 2 and "--golden-from records the outputs of the golden calls" in done.stderr
    assert not (tmp_path / "fat.pte").exists()


def test_golden_from_one_entry_and_the_signature_from_another(build: Path, tmp_path: Path) -> None:
    out = tmp_path / "sig.nfat"
    done = fatpte_cli(build, "pack", "-q", "-o", out, f"portable:portable={PORTABLE}", f"xnnpack:xnnpack={XNNPACK}",
                      "--golden", calls(tmp_path), "--golden-from", "portable", "--signature-from", "xnnpack")
    assert done.returncode == 0, done.stderr
    info = fatpte_cli(build, "info", out)
    assert info.stdout.count("fatpte.signature_check=from:xnnpack") == 2
    checked = fatpte_cli(build, "check", out, "--json")
    assert checked.returncode == 0, checked.stdout
    assert [e["state"] for e in json.loads(checked.stdout)["entries"]] == ["agrees", "agrees"]


def aarch64_toml(tmp: Path) -> Path:
    toml = tmp / "a64.pack.toml"
    toml.write_text(f'version = 2\ngolden = "{calls(tmp)}"\ngolden_from = "fp32-aarch64"\n'
                    f'[[specialization]]\nname = "fp32-aarch64"\npayload = "{XNNPACK}"\nsignature = "from-payload"\n'
                    'requires = { arch = ["aarch64"] }\n'
                    f'[[specialization]]\nname = "portable"\npayload = "{PORTABLE}"\nsignature = "from-payload"\n')
    return toml


def test_golden_from_an_aarch64_entry_names_the_ways_to_give_its_runtime(build: Path, tmp_path: Path) -> None:
    # A requirement is stated in a pack.toml (pack's arguments state none), so this is `pack --from`.
    env = {k: v for k, v in os.environ.items() if k != "FATPTE_RUN_AARCH64"}
    given = ["--from", aarch64_toml(tmp_path)]
    done = fatpte_cli(build, "pack", "-q", "-o", tmp_path / "a.nfat", *given, env=env)
    assert done.returncode == 3, done.stderr
    assert ("set $FATPTE_RUN_AARCH64, give --aarch64-runtime PATH to `fatpte check` or `fatpte pack`, or `fatpte "
            "runtime unpack`") in done.stderr
    missing = tmp_path / "no-such-fatpte-run"
    done = fatpte_cli(build, "pack", "-q", "-o", tmp_path / "a.nfat", *given, "--aarch64-runtime", missing, env=env)
    assert done.returncode == 3 and f"the aarch64 fatpte-run {missing} does not exist" in done.stderr


def test_pack_records_golden_calls_from_an_aarch64_entry_under_qemu(tmp_path: Path) -> None:
    require(native=True)
    out = tmp_path / "a.nfat"
    env = {k: v for k, v in os.environ.items() if k != "FATPTE_RUN_AARCH64"}
    done = fatpte_cli(NATIVE_BUILD, "pack", "-q", "-o", out, "--from", aarch64_toml(tmp_path), "--aarch64-runtime",
                      AARCH64_BUILD / "fatpte-run", env=env)
    assert done.returncode == 0, done.stderr
    checked = fatpte_cli(NATIVE_BUILD, "check", out, "--json", "--aarch64-runtime", AARCH64_BUILD / "fatpte-run")
    assert checked.returncode == 0, checked.stdout
    runners = {e["name"]: e["runner"] for e in json.loads(checked.stdout)["entries"]}
    assert runners["fp32-aarch64"] == "qemu cortex-a53" and runners["portable"].startswith("native")
