"""`fatpte check --mutants` (fatpte/ops/golden_adequacy.py; issue 36 point 4) and the warnings of
golden calls that cannot discriminate (E0712), with the real runtime: mlp's portable and XNNPACK
lowerings packed with the committed tier calls (random inputs) recorded from portable kill every
mutant; the same container recorded on one all-zero input lets the first layer's weights change
unseen (the output is then the last layer applied to the first bias): exit 8, the survivor named.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True)  # `build`: tests/loader/conftest.py
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
TIERS = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]["mlp"]
ZERO_CALL = [{"inputs": [{"dtype": "float32", "shape": [1, 4], "values": [0.0] * 4}]}]


def fatpte_cli(build: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(build / "fatpte-run"),
                           *map(str, args)], capture_output=True, text=True, timeout=600, check=False)


def pack(build: Path, tmp: Path, calls: list[dict[str, Any]], *extra: Any,
         lowerings: tuple[str, ...] = ("xnnpack=mlp_xnnpack.pte",)) -> tuple[Path, str]:
    """mlp_portable and `lowerings` (NAME=FILE, backend xnnpack), the calls recorded from portable;
    the container and pack's stderr."""
    given = tmp / "calls.json"
    given.write_text(json.dumps(calls))
    out = tmp / "mlp.nfat"
    args: list[Any] = ["pack", "-q", "-f", "-o", out, f"portable:portable={FIXTURES / 'mlp_portable.pte'}"]
    for lowering in lowerings:
        name, _, file = lowering.partition("=")
        args += [f"{name}:xnnpack={FIXTURES / file}", "--priority", f"{name}=10"]
    done = fatpte_cli(build, *args, *extra, "--golden", given, "--golden-from", "portable")
    assert done.returncode == 0, done.stderr
    return out, done.stderr


def check(build: Path, container: Path, *extra: str) -> tuple[int, dict[str, Any], str, str]:
    """`check --json` and `check` (text): the status (the same for both), the report, the text and
    the text run's stderr."""
    done = fatpte_cli(build, "check", container, *extra, "--json")
    text = fatpte_cli(build, "check", container, *extra)
    assert text.returncode == done.returncode, text.stderr
    return done.returncode, json.loads(done.stdout), text.stdout, text.stderr


def test_good_calls_kill_every_mutant(build: Path, tmp_path: Path) -> None:
    container, said = pack(build, tmp_path, TIERS["calls"])
    assert "E0712" not in said  # varied inputs, outputs that change: nothing to warn of
    rc, report, text, stderr = check(build, container, "--mutants")
    assert rc == 0, text
    assert report["ok"] and report["mutants"]["adequate"] and report["mutants"]["survived"] == 0
    results = report["mutants"]["results"]
    calls = list(range(len(TIERS["calls"])))
    assert {(r["entry"], r["kind"]) for r in results} == {
        (entry, kind) for entry in ("portable", "xnnpack") for kind in ("swap", "scale", "weight")}
    # mlp's two weights and two biases: the program's constants, and the XNNPACK delegate's (its
    # named data in the program), which the real XNNPACK runtime reads perturbed.
    assert sorted(r["name"] for r in results if r["kind"] == "weight" and r["entry"] == "portable") == [
        f"weight constant[{i}]" for i in (1, 2, 3, 4)]
    assert sorted(r["name"] for r in results if r["kind"] == "weight" and r["entry"] == "xnnpack") == [
        f"weight delegate 0 value {i}" for i in (1, 2, 4, 5)]
    assert all(r["state"] == "killed" and r["caught_by"] == calls for r in results), results
    assert report["mutants"]["notes"] == []
    assert "adequacy: every mutant was killed (12)" in text
    assert "E0712" not in stderr


def test_all_zero_inputs_let_weight_mutants_survive(build: Path, tmp_path: Path) -> None:
    container, said = pack(build, tmp_path, ZERO_CALL)
    assert "E0712 (golden): the golden calls: golden call 0 input 0 is all zeros" in said
    rc, report, text, stderr = check(build, container, "--mutants")
    assert rc == 8, text
    assert not report["ok"] and report["error"] is None  # every entry agreed: the calls are what fails
    mutants = report["mutants"]
    assert not mutants["adequate"]
    survivors = [r for r in mutants["results"] if r["state"] == "survived"]
    # Zeros in: the output is W2 relu(b1) + b2, which no change of W1 (8 x 4) touches, in either lowering.
    assert [(r["entry"], r["name"]) for r in survivors] == [("portable", "weight constant[1]"),
                                                            ("xnnpack", "weight delegate 0 value 1")]
    killed = {r["name"] for r in mutants["results"] if r["state"] == "killed" and r["entry"] == "portable"}
    assert killed == {"swap", "scale", "weight constant[2]", "weight constant[3]", "weight constant[4]"}
    assert "SURVIVED" in text and "adequacy: 2 of 12 mutants survived" in text
    assert "constant[1] (float32[8, 4])" in text
    assert "E0712 (golden): entries portable, xnnpack: golden call 0 input 0 is all zeros" in stderr
    # Without --mutants the same container passes: only the mutants show the calls cannot fail.
    plain = fatpte_cli(build, "check", container)
    assert plain.returncode == 0, plain.stdout


def test_a_widened_tolerance_wider_than_the_entries_differ_is_said(build: Path, tmp_path: Path) -> None:
    int8 = ("int8=mlp_xnnpack_int8.pte",)
    container, _ = pack(build, tmp_path, TIERS["calls"], "--golden-tolerance", "int8=1e-5,0.5", lowerings=int8)
    rc, _, _, stderr = check(build, container)
    assert rc == 0
    assert "E0712 (golden): entry int8: its tolerance (1e-05 + 0.5 x max|want|) admits differences" in stderr
    # Entries at their dtype's default tolerance are never said to be too wide.
    tight = tmp_path / "tight"
    tight.mkdir()
    container, _ = pack(build, tight, TIERS["calls"], lowerings=("xnnpack=mlp_xnnpack.pte",))
    rc, _, _, stderr = check(build, container)
    assert rc == 0 and "E0712" not in stderr


def test_an_int8_entry_is_mutated_through_its_weight_scales(build: Path, tmp_path: Path) -> None:
    int8 = ("int8=mlp_xnnpack_int8.pte",)
    container, _ = pack(build, tmp_path, TIERS["calls"], "--golden-tolerance", "int8=1e-5,0.04", lowerings=int8)
    rc, report, text, _ = check(build, container, "--mutants")
    assert rc == 0, text
    weights = [r for r in report["mutants"]["results"] if r["entry"] == "int8" and r["kind"] == "weight"]
    assert [r["name"] for r in weights] == ["weight delegate 0 value 2 scales", "weight delegate 0 value 5 scales"]
    assert all(r["state"] == "killed" for r in weights)
    assert "moved by +/-0.4 x its largest magnitude" in weights[0]["description"]  # 10 x its rtol of 0.04
