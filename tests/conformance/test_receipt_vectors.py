"""Receipts' format held by both languages (specs/receipts.md section 4): the fallback receipt C++
writes for a fixed event (specs/vectors/receipts/fallback.jsonl, pinned by
loader/tests/receipts_test.cpp) holds to specs/receipt.schema.json and reads in Python; a line
the schema refuses is refused (real load receipts: tests/loader/test_receipts_runtime.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from fatpte.errors import FatpteError
from fatpte.ops import receipts as R
from tests.paths import ROOT

SCHEMA = json.loads((ROOT / "specs" / "receipt.schema.json").read_text())
VECTOR = ROOT / "specs" / "vectors" / "receipts" / "fallback.jsonl"


def test_the_schema_is_a_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_fallback_vector_holds_to_the_schema_and_reads() -> None:
    (line,) = VECTOR.read_text().splitlines()
    doc = json.loads(line)
    jsonschema.validate(doc, SCHEMA)
    assert R.read_receipts([VECTOR]) == [doc]
    assert doc["event"]["detail"] is None  # details were not asked


@pytest.mark.parametrize(("change", "value"), [("reason", "bored"), ("to_entry", -1), ("extra", 1)])
def test_the_schema_refuses_what_it_does_not_say(change: str, value: object) -> None:
    doc = json.loads(VECTOR.read_text())
    doc["event"][change] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


def test_version_1_receipts_still_read_and_name_their_fingerprint(tmp_path: Path) -> None:
    """A file may hold lines written before version 2: a version 1 line reads; a version 1 load
    receipt must name its fingerprint (a version 2 one may leave it null), in the schema and in the
    reader alike."""
    doc = json.loads(VECTOR.read_text())
    doc["version"] = 1
    jsonschema.validate(doc, SCHEMA)
    old = tmp_path / "v1.jsonl"
    old.write_text(json.dumps(doc) + "\n")
    assert R.read_receipts([old]) == [doc]
    load = {"receipt": "load", "version": 2, "time": 0, "container": doc["container"], "method": "forward",
            "prefer": [], "exclude": [], "chosen": None, "error": {"code": "E0601"}, "entries": [],
            "self_test": {"asked": False, "ran": False, "remembered_pass": False, "summary": None},
            "verdict_store": {"used": False, "hits": 0},
            "device": {"fingerprint": None, "profile": {"name": "host"}},
            "runtime": {"libraries": ["fatpte build-id:00:1"]}}
    jsonschema.validate(load, SCHEMA)
    path = tmp_path / "load.jsonl"
    path.write_text(json.dumps(load) + "\n")
    assert R.read_receipts([path])[0]["device"]["fingerprint"] is None
    load["version"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(load, SCHEMA)
    path.write_text(json.dumps(load) + "\n")
    with pytest.raises(FatpteError) as info:
        R.read_receipts([path])
    assert info.value.field == "device.fingerprint" and "version 1" in info.value.message


def test_a_line_that_is_not_a_receipt_is_refused_by_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "r.jsonl"
    bad.write_text(VECTOR.read_text() + '{"receipt": "other", "version": 1}\n')
    with pytest.raises(FatpteError) as info:
        R.read_receipts([bad])
    assert info.value.source == f"{bad}:2"


@pytest.mark.parametrize(("line", "says"), [
    (b"[" * 100_000 + b"\n", "nest 100000 deep, more than the limit of 16"),
    (b'{"receipt": "load", "receipt": "load", "version": 1}\n', "not JSON"),
    (b"\xff\xfe\n", "not JSON"),
])
def test_a_hostile_line_is_refused_naming_it(tmp_path: Path, line: bytes, says: str) -> None:
    """Strict JSON with the stated bounds, never the interpreter's stack (a RecursionError once)."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(VECTOR.read_bytes() + line)
    with pytest.raises(FatpteError) as info:
        R.read_receipts([path])
    assert f"{path}:2: " in info.value.message and says in info.value.message


def test_a_line_over_the_bound_is_refused_without_reading_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R, "MAX_LINE_BYTES", 64)
    path = tmp_path / "r.jsonl"
    path.write_bytes(b" " * 200 + b"\n")
    with pytest.raises(FatpteError) as info:
        R.read_receipts([path])
    assert "a line longer than 64 bytes is no receipt" in info.value.message
    monkeypatch.undo()
    path.write_bytes(VECTOR.read_bytes() + b'{"receipt": "lo')  # a last line a crash cut short: skipped
    assert len(R.read_receipts([path])) == 1
