"""The shape of fatpte-run's `--json` report, as specs/run_report.schema.json states it: `outside`
says why a document is not a report, or None. The schema's rules, written as small checks over
the decoded document (fatpte needs no jsonschema package at run time);
tests/loader/test_run_report.py holds this reader and the schema to the same documents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

Check = Callable[[Any, str], None]


class _Outside(Exception):
    pass


def _is(kind: str, test: Callable[[Any], bool]) -> Check:
    def check(value: Any, path: str) -> None:
        if not test(value):
            raise _Outside(f"{path} must be {kind}")
    return check


_STR = _is("a string", lambda v: isinstance(v, str))
_BOOL = _is("true or false", lambda v: isinstance(v, bool))
_NUMBER = _is("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
_SIZE = _is("an integer at least 0", lambda v: type(v) is int and v >= 0)
_ELEMENT = _is("a number or a bool", lambda v: isinstance(v, (int, float)))


def _null_or(check: Check) -> Check:
    def null_or(value: Any, path: str) -> None:
        if value is not None:
            check(value, path)
    return null_or


def _list(item: Check) -> Check:
    def items(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise _Outside(f"{path} must be a list")
        for k, v in enumerate(value):
            item(v, f"{path}[{k}]")
    return items


def _object(required: Mapping[str, Check], optional: Mapping[str, Check] | None = None) -> Check:
    fields = {**required, **(optional or {})}

    def obj(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise _Outside(f"{path} must be an object")
        missing = [k for k in required if k not in value]
        if missing:
            raise _Outside(f"{path} lacks {', '.join(missing)}")
        unknown = [k for k in value if k not in fields]
        if unknown:
            raise _Outside(f"{path} has {', '.join(map(repr, unknown))}, which the schema does not name")
        for k, v in value.items():
            fields[k](v, f"{path}.{k}")
    return obj


def _code(value: Any, path: str) -> None:
    if not isinstance(value, str) or len(value) != 5 or value[0] != "E" or not all(c in "0123456789" for c in value[1:]):
        raise _Outside(f"{path} must be an error code such as E0702")


_TENSOR_FIELDS: Final = _object({"dtype": _STR, "shape": _list(_SIZE)},
                                {"values": _list(_ELEMENT), "file": _STR})


def _tensor(value: Any, path: str) -> None:
    if value is None:
        return
    _TENSOR_FIELDS(value, path)
    if ("values" in value) == ("file" in value):
        raise _Outside(f"{path} must have values or file, one of them")


_GOLDEN_OUTPUT: Final = _object({
    "key": _STR, "dtype": _STR, "shape": _list(_SIZE), "max_abs": _NUMBER, "max_rel": _NUMBER, "max_want": _NUMBER,
    "atol": _NUMBER, "rtol": _NUMBER, "bound": _NUMBER, "passed": _BOOL, "problem": _null_or(_STR)})
_GOLDEN: Final = _object({
    "entry": _STR, "method": _STR, "passed": _BOOL, "unsigned_calls": _BOOL, "other_method_calls": _SIZE,
    "calls": _list(_object({"index": _SIZE, "method": _STR, "error": _null_or(_STR),
                            "outputs": _list(_GOLDEN_OUTPUT)}))})
_REASONS: Final = ("execute_error", "non_finite_output", "deadline")
_REASON = _is(f"one of {', '.join(_REASONS)}", lambda v: v in _REASONS)
_FALLBACK: Final = _object({"call": _SIZE, "from": _STR, "to": _null_or(_STR), "reason": _REASON, "detail": _STR})
_STEPS: Final = ("caller", "environment_variable", "virtual_env", "conda_prefix", "dlopen")
_FOUND: Final = _object({"name": _STR, "found": _BOOL, "path": _STR,
                         "step": _is(f"one of {', '.join(_STEPS)}", lambda v: v in _STEPS)})
_NOT_FOUND: Final = _object({"name": _STR, "found": _BOOL, "withheld": _null_or(_STR), "looked": _list(_STR)})


def _vendor_runtime(value: Any, path: str) -> None:
    """{"name", "found": true, "path", "step"} or {"name", "found": false, "withheld", "looked"}."""
    (_FOUND if isinstance(value, dict) and value.get("found") is True else _NOT_FOUND)(value, path)


REPORT: Final = _object({
    "chosen": _null_or(_STR), "backend_id": _null_or(_STR), "method": _STR, "dispatch": _list(_STR),
    "calls": _list(_object({"outputs": _list(_tensor)})), "golden": _null_or(_GOLDEN),
    "error": _null_or(_object({"code": _code, "message": _STR}))},
    {"fallbacks": _list(_FALLBACK),  # an older fatpte-run's report has none
     "grade": _null_or(_is("one of exact, compatible, fallback", lambda v: v in ("exact", "compatible", "fallback"))),
     "dry_run": _null_or(_object({"reason": _STR, "chosen": _null_or(_STR), "backend_id": _null_or(_STR)})),
     "vendor_runtimes": _list(_vendor_runtime)})


def outside(doc: Any) -> str | None:
    """Why `doc` is not a report of specs/run_report.schema.json, or None when it is one."""
    try:
        REPORT(doc, "report")
    except _Outside as exc:
        return str(exc)
    return None
