"""calls.json read alike by Python and C++ (issue 42 P2): every file of specs/vectors/calls/ gets the
outcome its index states from Python's reader (`read_calls`, what `fatpte pack --golden` and
`fatpte.pack(golden=)` use) and from C++'s (`fatpte-run --inputs`, which reads the calls before it
opens the container: given a container that does not exist, an accepted file ends in E0801 on the
container, a refused one in E0702 on the file). Python's refusals of a Python caller's values
(`fatpte.pack(golden=[...])`) come without a traceback too.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteError
from fatpte.ops import golden as G
from tests.builds import loader_build
from tests.paths import ROOT

CALLS = ROOT / "specs" / "vectors" / "calls"
INDEX: dict[str, Any] = json.loads((CALLS / "index.json").read_text())["vectors"]
FATPTE_RUN = ROOT / "build" / "loader" / "fatpte-run"


def python_outcome(path: Path) -> dict[str, Any] | None:
    """None when Python's reader accepts the file; else its code, field (the list named `calls`;
    none when the document is refused as JSON) and offset."""
    try:
        G.read_calls(str(path), need_outputs=False)
    except FatpteError as exc:
        field = exc.field
        if field is not None and field.startswith(str(path)):
            field = "calls" + field[len(str(path)):]
        return {"code": exc.code.tag, "field": field, "offset": exc.offset}
    return None


def cpp_outcome(path: Path, tmp_path: Path) -> dict[str, Any] | None:
    """None when fatpte-run gets past the calls (to the container, which does not exist: E0801);
    else the code, field and offset of its error on the file (`E0702 at 0x1c (field): ...`)."""
    done = subprocess.run([str(FATPTE_RUN), str(tmp_path / "absent.nfat"), "--inputs", str(path)],
                          capture_output=True, text=True, timeout=60, check=False)
    if "absent.nfat" in done.stderr and "E0801" in done.stderr:
        return None
    said = re.search(r"\b(E\d{4})\b(?: at (0x[0-9a-f]+))?(?: \(([^)]*)\))?", done.stderr)
    assert said is not None and done.returncode != 0, (done.returncode, done.stderr)
    return {"code": said.group(1), "field": said.group(3) or None,
            "offset": None if said.group(2) is None else int(said.group(2), 16)}


@pytest.mark.parametrize("name", sorted(INDEX))
def test_python_reads_each_vector_as_the_index_says(name: str) -> None:
    row = INDEX[name]
    assert python_outcome(CALLS / name) == (None if row["accepted"] else row["error"]), row["description"]


@pytest.mark.parametrize("name", sorted(INDEX))
def test_cpp_reads_each_vector_as_the_index_says(name: str, tmp_path: Path) -> None:
    loader_build("release", "fatpte-run")
    row = INDEX[name]
    assert cpp_outcome(CALLS / name, tmp_path) == (None if row["accepted"] else row["error"]), row["description"]


def test_every_rule_of_the_issue_has_a_vector() -> None:
    names = " ".join(INDEX)
    for rule in ("duplicate-key", "nan-infinity", "deep", "integer-4301", "past-range", "lone-surrogate",
                 "true-as-float", "size", "size-2147483647", "size-2147483648"):
        assert rule in names, rule


def test_a_refusal_of_the_json_text_names_its_byte_and_no_field() -> None:
    """Issue 42 follow-up: a document refused as JSON is refused at a byte both languages name
    (the vectors' `offset`), and never with a field; one refused by its values has a field and
    no offset."""
    for name, row in INDEX.items():
        if row["accepted"]:
            continue
        error = row["error"]
        assert (error["field"] is None) == (error["offset"] is not None), name


@pytest.mark.parametrize(("change", "field"), [
    (lambda c: c["outputs"][0].update(atol=10**400), "golden[0].outputs[0].atol"),
    (lambda c: c["outputs"][0].update(rtol=math.inf), "golden[0].outputs[0].rtol"),
    (lambda c: c.update(method="\ud800"), "golden[0].method"),
    (lambda c: c["inputs"][0].update(values=[True]), "golden[0].inputs[0].values[0]"),
    (lambda c: c["inputs"][0].update(dtype=[]), "golden[0].inputs[0].dtype"),
    (lambda c: c["inputs"][0].update(values=[10**400]), None),  # infinity, as C++ reads 400 digits: accepted
])
def test_a_python_callers_values_are_refused_without_a_traceback(change: Any, field: str | None,
                                                                  tmp_path: Path) -> None:
    call: dict[str, Any] = {"inputs": [{"dtype": "float32", "shape": [1], "values": [1.0]}],
                            "outputs": [{"dtype": "float32", "shape": [1], "values": [1.0]}]}
    change(call)
    if field is None:
        assert G.read_calls([call], need_outputs=True)[0].inputs[0].data == b"\0\0\x80\x7f"
        return
    with pytest.raises(FatpteError) as info:
        fatpte.pack([fatpte.Specialization("portable", b"opaque")], tmp_path / "x.nfat", golden=[call])
    assert (info.value.code, info.value.field) == (ErrorCode.INVALID_ARGUMENT, field)
    assert "\ud800" not in str(info.value)
