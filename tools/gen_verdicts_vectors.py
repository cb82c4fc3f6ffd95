"""Conformance vectors for the verdict store (specs/verdicts.md section 6): specs/vectors/verdicts/,
each file a store with the one property its name says, and `index.json` with what both readers must
do with it: Python's (`fatpte.ops.verdicts.read_store`, behind `fatpte verdicts list`) and C++'s
(`fatpte::memory::read_store`, what a load with a verdict store reads first). Both run them:
tests/conformance/test_verdicts_vectors.py and loader/tests/verdicts_test.cpp.

An outcome is `accepted` with its number of records, or the error: `code` (E0702) and `field` (""
when the document is refused as JSON: its grammar, size, depth, a key twice, not UTF-8). A refused
store is not used at all: nothing is skipped or served on its word, and it is not overwritten.

Run `python tools/gen_verdicts_vectors.py` to write them; do not edit them by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "specs" / "vectors" / "verdicts"
E = "E0702"


def _record(**changes: Any) -> dict[str, Any]:
    r: dict[str, Any] = {"container": "ab" * 32, "entry": 1, "name": "xnnpack", "method": "forward",
                         "device": "cd" * 32,
                         "libraries": ["XnnpackBackend=build-id:ca462a664ebe78c38768136497c522931ea00c4d:2846256"],
                         "verdict": "pass", "reason": "self-test: 1 golden call of method 'forward' passed",
                         "time": 1795000000}
    r.update(changes)
    return {k: v for k, v in r.items() if v is not _DROP}


_DROP = object()


def _store(records: Any, **changes: Any) -> bytes:
    doc: dict[str, Any] = {"format": "fatpte-verdicts", "version": 1, "records": records}
    doc.update(changes)
    return (json.dumps({k: v for k, v in doc.items() if v is not _DROP}, indent=1) + "\n").encode()


def vectors() -> list[tuple[str, bytes, str, Any]]:
    """(file, bytes, description, outcome): an int of records when accepted, else the field."""
    many = [_record(entry=i, time=1795000000 + i) for i in range(256)]
    return [
        ("accepted-empty.json", _store([]), "no record", 0),
        ("accepted-pass-and-crash.json", _store([_record(), _record(entry=0, name="portable", verdict="crash",
                                                                    reason="", libraries=[])]),
         "a pass and a crash, the second with no library", 2),
        ("accepted-attempt.json", _store([_record(verdict="attempt", reason="")]),
         "the crash journal's record of an attempt that never ended (skipped at the next start)", 1),
        ("accepted-loaded-and-skipped.json",
         _store([_record(verdict="loaded", reason="loaded without a self-test"),
                 _record(entry=2, name="cuda", verdict="skipped", reason="needs ExecuTorch backend CudaBackend: ...")]),
         "an entry that loaded with no self-test asked, and one skipped for a missing library", 2),
        ("accepted-256-records.json", _store(many), "the most records a store holds", 256),
        ("refused-not-json.json", b'{"format": "fatpte-verdicts", "version": 1, "records": [}\n', "not JSON", ""),
        ("refused-truncated.json", _store([_record()])[:100], "cut short: what a torn write would leave", ""),
        ("refused-key-twice.json", b'{"format": "fatpte-verdicts", "version": 1, "version": 1, "records": []}\n',
         "a key twice (readers could see different values)", ""),
        ("refused-not-utf8.json", _store([_record(name="x\u00e9")]).replace(b"\\u00e9", b"\xe9"),
         "a name that is not UTF-8", ""),
        ("refused-depth-9.json", _store([_record(reason=[[[[["deep"]]]]])]),
         "a value nine deep (the document at depth 1)", ""),
        ("refused-array.json", b"[]\n", "a list, not an object", "$"),
        ("refused-other-format.json", _store([], format="fatpte-receipts"), "another format's name", "format"),
        ("refused-future-version.json", _store([], version=2, extra=True),
         "version 2 (with a member version 1 does not have): not used, not overwritten", "version"),
        ("refused-unknown-member.json", _store([], extra=True), "a member version 1 does not have", "extra"),
        ("refused-records-missing.json", _store(_DROP), "no records", "records"),
        ("refused-257-records.json", _store([*many, _record(entry=999)]), "one record past the cap", "records"),
        ("refused-record-not-object.json", _store(["pass"]), "a record that is a string", "records[0]"),
        ("refused-record-unknown-member.json", _store([_record(score=1)]), "a record member version 1 does not have",
         "records[0].score"),
        ("refused-record-missing-time.json", _store([_record(time=_DROP)]), "a record without its time",
         "records[0].time"),
        ("refused-container-uppercase.json", _store([_record(container="AB" * 32)]),
         "a digest in uppercase hex", "records[0].container"),
        ("refused-device-short.json", _store([_record(device="cd" * 31)]), "a digest of 62 digits",
         "records[0].device"),
        ("refused-entry-negative.json", _store([_record(entry=-1)]), "entry -1", "records[0].entry"),
        ("refused-entry-fraction.json", _store([_record(entry=1.5)]), "entry 1.5", "records[0].entry"),
        ("refused-entry-true.json", _store([_record(entry=True)]), "entry true (a bool, not a number)",
         "records[0].entry"),
        ("refused-entry-past-u32.json", _store([_record(entry=1 << 32)]), "entry 2^32", "records[0].entry"),
        ("refused-time-past-i64.json", _store([_record(time=1 << 63)]), "time 2^63", "records[0].time"),
        ("refused-name-number.json", _store([_record(name=7)]), "a name that is a number", "records[0].name"),
        ("refused-verdict-unknown.json", _store([_record(verdict="maybe")]), "a verdict of another word",
         "records[0].verdict"),
        ("refused-reason-1025-bytes.json", _store([_record(reason="r" * 1025)]), "a reason one byte too long",
         "records[0].reason"),
        ("refused-libraries-unsorted.json", _store([_record(libraries=["b=x", "a=x"])]),
         "libraries out of order (a key has one spelling)", "records[0].libraries"),
        ("refused-33-libraries.json", _store([_record(libraries=[f"l{i:02d}=x" for i in range(33)])]),
         "one library past the cap", "records[0].libraries"),
        ("refused-library-number.json", _store([_record(libraries=["a=x", 5])]), "a library that is a number",
         "records[0].libraries[1]"),
        ("refused-same-key-twice.json", _store([_record(), _record(verdict="fail")]),
         "two records of one key (which would say?)", "records[1]"),
    ]


def render_index(vs: list[tuple[str, bytes, str, Any]]) -> str:
    rows = {}
    for file, _, description, outcome in vs:
        rows[file] = ({"description": description, "accepted": True, "records": outcome} if isinstance(outcome, int)
                      else {"description": description, "accepted": False,
                            "error": {"code": E, "field": outcome}})
    return json.dumps({"generator": "tools/gen_verdicts_vectors.py",
                       "about": "verdict store vectors: per file, accepted with its number of records, or the "
                                "error both readers give (code, and field: \"\" when refused as JSON)",
                       "vectors": rows}, indent=2) + "\n"


def write(out: Path = OUT) -> None:
    out.mkdir(parents=True, exist_ok=True)
    vs = vectors()
    for file, data, _, _ in vs:
        (out / file).write_bytes(data)
    (out / "index.json").write_text(render_index(vs))


if __name__ == "__main__":
    write()
