"""Receipts from the qemu CPU matrix (issue 38, specs/receipts.md section 3): the aarch64 fatpte-run
loads mlp's tier container under each emulated CPU of tools/tier_matrix.py with `--receipt`, each
receipt carrying the profile its probe made there; `fatpte coverage --receipts` then shows planned =
observed on every CPU (the entry tools/tier_matrix.py's EXPECTED names), and flags a planted
difference. Needs the aarch64 build (tests/loader/aarch64_builds.py says when a missing one fails).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.loader.aarch64_builds import MATRIX, require


def test_coverage_on_receipts_from_the_qemu_cpu_matrix(tmp_path: Path) -> None:
    require()
    container = MATRIX.tier_container("mlp", tmp_path)
    nothing = tmp_path / "no-calls.json"
    nothing.write_text("[]")  # load, and run no call
    receipts = tmp_path / "receipts.jsonl"
    for model in MATRIX.DEFAULT_CPUS:
        done = MATRIX.emulated_cpu(model).run("fatpte-run", str(container), "--inputs", str(nothing), "--receipt",
                                              str(receipts))
        assert done.returncode == 0, (model, done.stderr)

    def observed(path: Path) -> dict[str, object]:
        done = subprocess.run([sys.executable, "-m", "fatpte", "coverage", str(container), "--receipts", str(path),
                               "--json"], capture_output=True, text=True, timeout=300, check=True)
        result: dict[str, object] = json.loads(done.stdout)["observed"]
        return result

    got = observed(receipts)
    rows = got["rows"]
    assert isinstance(rows, list) and len(rows) == len(MATRIX.DEFAULT_CPUS)
    assert [r["observed"] for r in rows] == [MATRIX.EXPECTED[m] for m in MATRIX.DEFAULT_CPUS]
    assert got["differences"] == [], rows
    lines = receipts.read_text().splitlines()
    planted = json.loads(lines[0])  # cortex-a53 said to have run the int8 entry
    planted["chosen"] = {"entry": 0, "name": "xnnpack-int8-asimddp", "backend_id": "xnnpack"}
    edited = tmp_path / "planted.jsonl"
    edited.write_text("\n".join([json.dumps(planted), *lines[1:]]) + "\n")
    flagged = observed(edited)["differences"]
    assert isinstance(flagged, list) and [(d["planned"], d["observed"]) for d in flagged] == [
        (MATRIX.EXPECTED["cortex-a53"], "xnnpack-int8-asimddp")]
