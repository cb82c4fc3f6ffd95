"""The shape of `fatpte check --json`, as specs/check_report.schema.json states it, for the reader
of shard reports (`check --merge`): `outside` says why a document is not a report, or None. The
fields and their types the merge reads, checked without a jsonschema package;
tests/loader/test_check_gate.py holds real reports to the schema itself."""

from __future__ import annotations

from typing import Any, Final

_TOP: Final = {"source": str, "ok": bool, "allow_unchecked": list, "runtimes": list, "entries": list,
               "pairs": list}
_ROW: Final = {"name": str, "backend_id": str, "state": str, "call_errors": int, "outputs": list}
_OUTPUT: Final = {"call": int, "output": int, "method": str, "key": str, "dtype": str, "shape": list,
                  "max_abs": (int, float), "max_rel": (int, float), "max_want": (int, float),
                  "atol": (int, float), "rtol": (int, float), "bound": (int, float), "passed": bool}
_EXTRA: Final = {"row": int, "inputs": dict, "saved": dict}


def _fields(doc: Any, types: dict[str, Any], path: str) -> str | None:
    if not isinstance(doc, dict):
        return f"{path or 'the report'} must be an object"
    for key, kind in types.items():
        if key not in doc:
            return f"{path}{key} is missing"
        if not isinstance(doc[key], kind) or (kind is int and isinstance(doc[key], bool)):
            return f"{path}{key} has the wrong type"
    return None


def outside(doc: Any) -> str | None:
    """Why `doc` is not a check report the merge can read; None when it is."""
    problem = _fields(doc, _TOP, "")
    if problem is not None:
        return problem
    for key in ("cpus", "shard", "error"):
        if key not in doc:
            return f"{key} is missing"
    shard = doc["shard"]
    if shard is not None and _fields(shard, {"index": int, "count": int}, "shard.") is not None:
        return "shard must be {index, count}"
    for i, row in enumerate(doc["entries"]):
        problem = _fields(row, _ROW, f"entries[{i}].")
        if problem is None:
            problem = next((p for j, o in enumerate(row["outputs"])
                            if (p := _fields(o, _OUTPUT, f"entries[{i}].outputs[{j}].")) is not None), None)
        if problem is not None:
            return problem
    data = doc.get("shard_data")
    if data is None:
        return None
    problem = _fields(data, {"digest": str, "rows": int, "entries": list}, "shard_data.")
    if problem is None and len(data["entries"]) != len(doc["entries"]):
        problem = "shard_data.entries must have one item per row of entries"
    for i, extra in enumerate(data["entries"] if problem is None else []):
        problem = problem or _fields(extra, _EXTRA, f"shard_data.entries[{i}].")
    return problem
