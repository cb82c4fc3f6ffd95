"""What the field teaches is remembered and reported (issue 38, points 1 to 4 together): a verdict
of isolated qualification goes into the verdict store (a crash: the next start skips the entry
without starting a child; a pass: the next start loads the entry without qualifying it again), and
a fallback after load marks the failed entry in the store and is delivered as a receipt
(specs/receipts.md) beside the load's own."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.loader.test_field import _attempt, _calls, _report, _run
from tests.paths import ROOT
from tests.support import faulty

pytestmark = pytest.mark.loader_build("fatpte-run", f"{faulty.FOLDER}/{faulty.LIBRARY}", sdk=True, only="release")

SCHEMA = json.loads((ROOT / "specs" / "receipt.schema.json").read_text())


def _twice(build: Path, tmp: Path, modes: list[str], *args: str) -> tuple[dict[str, Any], dict[str, Any]]:
    container = faulty.container(tmp / "c.nfat", "add", modes)  # type: ignore[arg-type]
    calls = _calls(tmp, "add")
    store = tmp / "verdicts"
    docs = []
    for _ in range(2):
        proc: subprocess.CompletedProcess[str] = _run(build, container, calls, "--verdicts", str(store), *args)
        assert proc.returncode == 0, proc.stderr
        docs.append(_report(proc))
    return docs[0], docs[1]


def test_a_crash_in_a_child_is_remembered_and_a_pass_spares_the_next_qualification(build: Path,
                                                                                   tmp_path: Path) -> None:
    first, second = _twice(build, tmp_path, ["segv_init"], "--isolate")
    assert first["chosen"] == second["chosen"] == "cpu"
    assert "crashed (SIGSEGV) in a child process" in _attempt(first, "faulty0")
    # The second start: the crash is remembered (no child started for it), and cpu's pass spares
    # its qualification.
    skipped = _attempt(second, "faulty0")
    assert skipped.startswith("dispatch: faulty0 [faulty]: remembered: it crashed the process: isolated qualification: "
                              "crashed (SIGSEGV)") and "not tried" in skipped
    text = "\n".join(second["dispatch"])
    assert "qualification: not run: the verdict store remembers the entry passing" in text
    assert "isolated qualification: passed" not in text


def test_a_fallback_after_load_is_remembered_and_received(build: Path, tmp_path: Path) -> None:
    receipts = tmp_path / "receipts.jsonl"
    first, second = _twice(build, tmp_path, ["execute_error"], "--receipt", str(receipts))
    (event,) = first["fallbacks"]
    assert (event["from"], event["to"], event["reason"]) == ("faulty0", "cpu", "execute_error")
    # The second start skips the entry that failed a call, without loading it: no fallback.
    assert second["fallbacks"] == [] and second["chosen"] == "cpu"
    assert "remembered: failed a call after its load: execute_error" in _attempt(second, "faulty0")
    lines = [json.loads(line) for line in receipts.read_text().splitlines()]
    for line in lines:
        jsonschema.validate(line, SCHEMA)
    # The first start: its load, the fallback's load of the next entry, the fallback event; then the
    # second start's load.
    kinds = [line["receipt"] for line in lines]
    assert kinds == ["load", "load", "fallback", "load"], kinds
    assert lines[1]["chosen"]["name"] == "cpu" and lines[3]["chosen"]["name"] == "cpu"
