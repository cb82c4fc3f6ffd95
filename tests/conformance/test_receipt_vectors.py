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


def test_a_line_that_is_not_a_receipt_is_refused_by_its_place(tmp_path: Path) -> None:
    bad = tmp_path / "r.jsonl"
    bad.write_text(VECTOR.read_text() + '{"receipt": "other", "version": 1}\n')
    with pytest.raises(FatpteError) as info:
        R.read_receipts([bad])
    assert info.value.source == f"{bad}:2"
