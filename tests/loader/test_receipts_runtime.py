"""Receipts from `fatpte-run --receipt FILE` (specs/receipts.md): every line real loads write holds
to specs/receipt.schema.json, names no path but the container's file name (unless details are
asked) and no input; `fatpte coverage --receipts` on receipts made with named profiles shows
planned = observed, and flags a planted difference and a real one (a library withheld)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fatpte.device.profile import canonical_text
from fatpte.ops import receipts as R
from tests.loader.test_cpp_golden import pack
from tests.paths import ROOT

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True, only="release")
SCHEMA = json.loads((ROOT / "specs" / "receipt.schema.json").read_text())
PROFILES = ("x86-64-v3", "x86-64-v4", "host")


def fatpte_run(build: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(build / "fatpte-run"), *map(str, args)], capture_output=True, text=True, timeout=600,
                          check=False)


def coverage(build: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(build / "fatpte-run"), "coverage",
                           *map(str, args)], capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture
def receipts(build: Path, tmp_path: Path) -> tuple[Path, Path]:
    """mlp's XNNPACK and portable lowerings with golden calls; one self-tested load per profile, and
    one with XNNPACK withheld (the device then runs portable: a real difference from the plan)."""
    container = pack(build, "mlp", tmp_path, ("xnnpack", "portable"))
    out = tmp_path / "receipts.jsonl"
    for profile in PROFILES:
        done = fatpte_run(build, container, "--self-test", "--device", profile, "--receipt", out)
        assert done.returncode == 0, done.stderr
    withheld = fatpte_run(build, container, "--self-test", "--device", "x86-64-v3", "--backend-lib", "XnnpackBackend=",
                          "--receipt", out)
    assert withheld.returncode == 0, withheld.stderr
    return container, out


def test_every_receipt_holds_to_the_schema(receipts: tuple[Path, Path], tmp_path: Path) -> None:
    container, out = receipts
    text = out.read_text()
    lines = text.splitlines()
    assert len(lines) == len(PROFILES) + 1 and text.endswith("\n")
    for line in lines:
        jsonschema.validate(json.loads(line), SCHEMA)
    first = json.loads(lines[0])
    assert first["container"]["name"] == container.name and first["chosen"]["name"] == "xnnpack"
    assert first["self_test"]["ran"] and first["device"]["profile"]["name"] == "x86-64-v3"
    assert str(tmp_path) not in text  # no path: the reasons' words are left out
    last = json.loads(lines[-1])
    xnnpack = next(e for e in last["entries"] if e["name"] == "xnnpack")
    assert (xnnpack["outcome"], xnnpack["reason_code"], xnnpack["reason"]) == ("rejected", "backend_unavailable", None)
    assert R.read_receipts([out]) == [json.loads(line) for line in lines]


def test_a_torn_last_line_is_skipped(receipts: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = receipts
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(out.read_bytes() + b'{"receipt": "load", "vers')  # a crash during the last write
    assert len(R.read_receipts([torn])) == len(PROFILES) + 1


def test_coverage_shows_planned_against_observed(build: Path, receipts: tuple[Path, Path], tmp_path: Path) -> None:
    container, out = receipts
    planned_only = tmp_path / "planned.jsonl"
    planned_only.write_text("".join(out.read_text().splitlines(keepends=True)[: len(PROFILES)]))
    same = coverage(build, container, "--receipts", planned_only, "--strict", "--devices", "x86-64-v3")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "every device ran the entry planned for it" in same.stdout
    doc = json.loads(coverage(build, container, "--receipts", planned_only, "--json").stdout)["observed"]
    assert [(r["device"], r["planned"], r["observed"]) for r in doc["rows"]] == [
        ("x86-64-v3", "xnnpack", "xnnpack"), ("x86-64-v4", "xnnpack", "xnnpack"), ("host", "xnnpack", "xnnpack")]
    # The device whose XNNPACK library was withheld ran portable: a real difference, with why.
    real = coverage(build, container, "--receipts", out, "--strict")
    assert real.returncode == 1
    assert "difference: x86-64-v3 planned xnnpack, ran portable; rejected xnnpack: backend_unavailable" in real.stdout
    # A planted one: a receipt edited to say v4 ran portable.
    lines = planned_only.read_text().splitlines()
    planted = json.loads(lines[1])
    planted["chosen"] = {"entry": 1, "name": "portable", "backend_id": "portable"}
    edited = tmp_path / "planted.jsonl"
    edited.write_text("\n".join([lines[0], json.dumps(planted), lines[2]]) + "\n")
    flagged = json.loads(coverage(build, container, "--receipts", edited, "--json").stdout)["observed"]
    assert [(d["device"], d["planned"], d["observed"]) for d in flagged["differences"]] == [
        ("x86-64-v4", "xnnpack", "portable")]


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "device"])
def test_receipts_are_appended_to_a_regular_file_only(build: Path, tmp_path: Path, kind: str) -> None:
    """--receipt is opened first and then looked at (no race between a check and the open): a
    symbolic link (even to a regular file), a FIFO with no reader (never waited for), a directory or
    a device is E0811 naming --receipt, exit 4, and the load is not made; a regular file that does
    not exist yet is created and gets one line."""
    container = pack(build, "mlp", tmp_path, ("portable",))
    target = tmp_path / "target.jsonl"
    where = {"symlink": tmp_path / "link.jsonl", "fifo": tmp_path / "fifo.jsonl", "directory": tmp_path / "dir",
             "device": Path("/dev/null")}[kind]
    if kind == "symlink":
        target.write_text("")
        where.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(where)
    elif kind == "directory":
        where.mkdir()
    done = fatpte_run(build, container, "--self-test", "--device", "x86-64-v3", "--receipt", where)
    assert done.returncode == 4, (done.stdout, done.stderr)
    assert "E0811 (--receipt): receipts are appended to a regular file only" in done.stderr, done.stderr
    assert "ran:" not in done.stdout
    if kind == "symlink":
        assert target.read_text() == ""
    fresh = tmp_path / "fresh.jsonl"
    done = fatpte_run(build, container, "--self-test", "--device", "x86-64-v3", "--receipt", fresh)
    assert done.returncode == 0, done.stderr
    assert len(fresh.read_text().splitlines()) == 1


def test_a_receipt_names_the_verdict_stores_keys(build: Path, tmp_path: Path) -> None:
    """With a verdict store and a receipt, the receipt's container digest and device fingerprint are
    the keys the store's records were written under (the fingerprint of specs/verdicts.md section 3,
    made once for both), and the reader's fingerprint made from the receipt's own profile and
    runtime lines is that digest; without a store the receipt names none (version 2) and the reader
    makes it the same way. (A load with a store probes every fact, so its profile, and its
    fingerprint, is not a plain load's.)"""
    from fatpte.ops import verdicts as V

    container = pack(build, "mlp", tmp_path, ("xnnpack", "portable"))
    store, out = tmp_path / "store", tmp_path / "receipts.jsonl"
    for more in (["--verdicts", store], []):
        done = fatpte_run(build, container, "--self-test", "--receipt", out, *more)
        assert done.returncode == 0, done.stderr
    with_store, alone = R.read_receipts([out])
    records = V.read_store(store / "fatpte-run.verdicts.json")
    assert {r.container for r in records} == {with_store["container"]["digest"]} == {alone["container"]["digest"]}
    assert {r.device for r in records} == {with_store["device"]["fingerprint"]}
    assert alone["device"]["fingerprint"] is None and alone["version"] == with_store["version"] == R.VERSION == 2
    unnamed = json.loads(json.dumps(with_store))
    unnamed["device"]["fingerprint"] = None
    assert R.fingerprint(unnamed) == R.fingerprint(with_store) == with_store["device"]["fingerprint"]
    text = canonical_text(alone["device"]["profile"]) + "\n" + "".join(
        line + "\n" for line in alone["runtime"]["libraries"])
    assert R.fingerprint(alone) == hashlib.sha256(text.encode()).hexdigest()


def test_an_option_without_its_value_and_an_unknown_flag_are_usage_errors(build: Path) -> None:
    """fatpte-run's flags are one table (loader/tools/fatpte_run.cpp): `--receipt` last, with no
    file after it, is refused as needing a value; a near miss is refused as unknown."""
    done = fatpte_run(build, "model.nfat", "--inputs", "calls.json", "--receipt")
    assert done.returncode == 2 and "unexpected argument '--receipt': it takes a value" in done.stderr, done.stderr
    done = fatpte_run(build, "model.nfat", "--inputs", "calls.json", "--receipts", "r.jsonl")
    assert done.returncode == 2 and "unexpected argument '--receipts'\n" in done.stderr, done.stderr
