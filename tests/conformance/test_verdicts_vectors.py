"""The verdict store read alike by Python and C++ (specs/verdicts.md section 6): every file of
specs/vectors/verdicts/ gets the outcome its index states from Python's reader (C++'s runs them in
loader/tests/verdicts_test.cpp); the committed vectors are what the generator writes; Python's
canonical text of a store is the loader's; `fatpte verdicts list|clear` on stores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.ops import verdicts as V
from tests.paths import ROOT

VECTORS = ROOT / "specs" / "vectors" / "verdicts"
INDEX: dict[str, Any] = json.loads((VECTORS / "index.json").read_text())["vectors"]


def outcome(path: Path) -> dict[str, Any]:
    try:
        return {"accepted": True, "records": len(V.read_store(path))}
    except FatpteError as exc:
        return {"accepted": False, "error": {"code": exc.code.tag, "field": exc.field}}


@pytest.mark.parametrize("name", sorted(INDEX))
def test_python_reads_each_vector_as_the_index_says(name: str) -> None:
    want = {k: v for k, v in INDEX[name].items() if k != "description"}
    assert outcome(VECTORS / name) == want, INDEX[name]["description"]


def test_the_vectors_are_what_the_generator_writes(tmp_path: Path) -> None:
    from tools import gen_verdicts_vectors

    gen_verdicts_vectors.write(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in VECTORS.iterdir())
    for p in tmp_path.iterdir():
        assert p.read_bytes() == (VECTORS / p.name).read_bytes(), p.name


def test_an_oversized_store_is_refused_unparsed(tmp_path: Path) -> None:
    big = tmp_path / "a.verdicts.json"
    big.write_bytes(b" " * (V.MAX_STORE_BYTES + 1))
    with pytest.raises(FatpteError) as info:
        V.read_store(big)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and info.value.field == ""
    assert V.read_store(tmp_path / "absent.verdicts.json") == []


def test_the_canonical_text_reads_back(tmp_path: Path) -> None:
    records = V.parse_store((VECTORS / "accepted-pass-and-crash.json").read_bytes(), "v")
    text = V.store_text(records)
    assert V.parse_store(text.encode(), "t") == records
    assert text.startswith('{"format": "fatpte-verdicts", "version": 1, "records": [\n  {"container": "')
    assert V.store_text([]) == '{"format": "fatpte-verdicts", "version": 1, "records": []}\n'


def fatpte(*args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False)


def test_list_and_clear(tmp_path: Path) -> None:
    (tmp_path / "app.verdicts.json").write_bytes((VECTORS / "accepted-pass-and-crash.json").read_bytes())
    (tmp_path / "other.verdicts.json").write_bytes((VECTORS / "accepted-attempt.json").read_bytes())
    listed = fatpte("verdicts", "list", tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == f"{tmp_path / 'app.verdicts.json'}: 2 record(s)"
    assert lines[1].startswith("  pass  entry 1 'xnnpack' method 'forward', 2026-")
    assert lines[2].startswith("  crash entry 0 'portable'")
    assert lines[4].startswith("  crash entry 1 'xnnpack'") and lines[4].endswith("the process ended during the attempt")
    doc = json.loads(fatpte("verdicts", "list", tmp_path, "--json").stdout)
    assert [len(s["records"]) for s in doc["stores"]] == [2, 1]
    cleared = fatpte("verdicts", "clear", tmp_path, "--app", "app", "--entry", "portable")
    assert cleared.stdout == "forgot 1 verdict(s)\n"
    assert [r.name for r in V.read_store(tmp_path / "app.verdicts.json")] == ["xnnpack"]
    assert fatpte("verdicts", "clear", tmp_path).stdout == "forgot 2 verdict(s)\n"
    assert V.store_files(tmp_path) == []


def test_a_refused_store_is_named_with_why(tmp_path: Path) -> None:
    (tmp_path / "new.verdicts.json").write_bytes((VECTORS / "refused-future-version.json").read_bytes())
    listed = fatpte("verdicts", "list", tmp_path)
    assert listed.returncode == 1
    assert "new.verdicts.json: not used: E0702" in listed.stdout and "version 1 only" in listed.stdout
    assert fatpte("verdicts", "clear", tmp_path).returncode == 0
    assert not (tmp_path / "new.verdicts.json").exists()
