"""fatpte.fileio.strict_json: the one strict JSON reader, and the readers that use it."""

from __future__ import annotations

import ast
import copy
import json
import tracemalloc
from typing import Any

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.strict_json import (
    HUGE,
    MAX_INTEGER_DIGITS,
    PLAIN,
    HugeInteger,
    JsonRefused,
    JsonRules,
    loads,
    nesting,
)
from tests.paths import ROOT


def refused(data: bytes, rules: JsonRules = PLAIN) -> str:
    with pytest.raises(JsonRefused) as info:
        loads(data, rules)
    return info.value.kind


def test_a_plain_document() -> None:
    assert loads(b'{"a": [1, -2, 3.5, "x", true, null], "b": {}}') == {"a": [1, -2, 3.5, "x", True, None], "b": {}}
    assert loads(memoryview(b"[]")) == []


@pytest.mark.parametrize("rules", [JsonRules(), JsonRules(constants=True), JsonRules(max_depth=64)])
def test_a_key_twice_is_refused_whatever_the_rules(rules: JsonRules) -> None:
    assert refused(b'{"a": 1, "a": 1}', rules) == "duplicate"
    assert refused(b'{"x": [{"k": 1, "k": 2}]}', rules) == "duplicate"
    assert loads(b'{"a": {"a": 1}}', rules) == {"a": {"a": 1}}  # one key per object


def test_nan_and_infinity_are_a_policy() -> None:
    for word in (b"NaN", b"Infinity", b"-Infinity"):
        assert refused(b"[" + word + b"]") == "constant"
        value = loads(b"[" + word + b"]", JsonRules(constants=True))[0]
        assert isinstance(value, float) and str(value) in ("nan", "inf", "-inf")


def test_fractions_are_a_policy() -> None:
    assert loads(b"[1.5, 2e3]") == [1.5, 2000.0]
    assert refused(b"[1.5]", JsonRules(fractions=False)) == "fraction"
    assert refused(b"[1e3]", JsonRules(fractions=False)) == "fraction"


def test_integers() -> None:
    digits = MAX_INTEGER_DIGITS
    assert refused(b"[" + b"9" * (digits + 1) + b"]") == "integer"
    assert loads(b"[" + b"9" * 21 + b", -" + b"9" * 21 + b"]") == [HUGE, -HUGE]  # out of every field's range
    assert loads(b"[" + b"9" * 20 + b"]") == [99999999999999999999]
    i64 = JsonRules(integers=(-(1 << 63), (1 << 63) - 1))
    assert loads(str([(1 << 63) - 1, -(1 << 63)]).encode(), i64) == [(1 << 63) - 1, -(1 << 63)]
    assert refused(str([1 << 63]).encode(), i64) == "integer"
    assert refused(b"[" + b"9" * digits + b"]", i64) == "integer"


def test_a_huge_integer_keeps_its_literal_where_the_rules_ask() -> None:
    """Under `huge_literal` (device profiles) an integer of 21 to MAX_INTEGER_DIGITS digits is still
    HUGE, out of every range, but says what the document wrote; without it, a plain int."""
    literal = "1" + "0" * 400
    got = loads(f"[{literal}, -{'9' * 21}, {'9' * 20}]".encode(), JsonRules(huge_literal=True))
    assert got == [HUGE, -HUGE, 99999999999999999999]
    assert [type(v) for v in got] == [HugeInteger, HugeInteger, int]
    assert (repr(got[0]), str(got[1]), f"{got[0]}") == (literal, "-" + "9" * 21, literal)
    assert type(loads(literal.encode())) is int and repr(loads(literal.encode())) == str(HUGE)
    copied = copy.deepcopy(got[0])
    assert (type(copied), repr(copied), copied) == (HugeInteger, literal, HUGE)


def test_text() -> None:
    assert refused(b'"\xff"') == "utf8"
    assert refused(b'\xef\xbb\xbf{}') == "syntax"  # a byte-order mark is not JSON
    assert loads(b'["\\ud83d\\ude00"]', JsonRules(lone_surrogates=False)) == ["\U0001f600"]  # a pair is a character
    assert loads(b'["\\ud800"]') == ["\ud800"]
    assert refused(b'["\\ud800"]', JsonRules(lone_surrogates=False)) == "surrogate"
    assert refused(b'{"\\udfff": 1}', JsonRules(lone_surrogates=False)) == "surrogate"
    assert refused(b"{") == "syntax"
    assert refused(b"[] []") == "syntax"


def test_size() -> None:
    assert loads(b"[ ]", JsonRules(max_bytes=3)) == []
    assert refused(b"[  ]", JsonRules(max_bytes=3)) == "size"


@pytest.mark.parametrize(("text", "containers", "values"), [
    ("1", 0, 1),
    ("[]", 1, 1),
    ("[1]", 1, 2),
    ('{"a": {}}', 2, 2),
    ('{"a": {"b": "c"}}', 2, 3),
    ('["[[[", {"]]": 1}]', 2, 3),
    ('{"k\\"[": []}', 2, 2),
])
def test_nesting_counts_containers_or_values_and_skips_strings(text: str, containers: int, values: int) -> None:
    assert nesting(text, "containers") == containers
    assert nesting(text, "values") == values
    assert nesting(text, "containers") == _depth(json.loads(text), False)
    assert nesting(text, "values") == _depth(json.loads(text), True)


def _depth(value: Any, values: bool) -> int:
    if isinstance(value, dict | list):
        inner = [_depth(v, values) for v in (value.values() if isinstance(value, dict) else value)]
        return 1 + max(inner, default=0)
    return 1 if values else 0


@pytest.mark.parametrize("depth", [16, 17, 5000, 100_000])
def test_depth_is_refused_before_parsing_whatever_the_stack(depth: int) -> None:
    doc = b"[" * depth + b"]" * depth
    rules = JsonRules(max_depth=16)
    if depth <= 16:
        assert nesting(doc.decode()) == depth and loads(doc, rules) is not None
    else:
        assert refused(doc, rules) == "depth"
    assert refused(b"[" * 16 + b"1" + b"]" * 16, JsonRules(max_depth=16, depth_of="values")) == "depth"
    assert loads(b"[" * 15 + b"1" + b"]" * 15, JsonRules(max_depth=16, depth_of="values")) is not None
    # Without a limit, the interpreter's stack refuses, and that is still a refusal, not a crash.
    assert refused(b"[" * 100_000 + b"]" * 100_000) == "depth"


@pytest.mark.parametrize("inner", ["A", "\n", "a\\"])
def test_memory_is_linear_in_a_long_string(inner: str) -> None:
    """The depth is counted without the regular expression engine keeping state per character or
    escape of a string (a plain alternation held 170 bytes per character of an 8 MiB string)."""
    doc = json.dumps({"k": inner * ((8 << 20) // (len(json.dumps(inner)) - 2))}).encode()
    tracemalloc.start()
    try:
        loads(doc, JsonRules(max_depth=16, depth_of="values", lone_surrogates=False))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(doc) + (1 << 20)


# -- the readers ---------------------------------------------------------------------------------


def test_no_other_module_parses_json_with_its_own_hooks() -> None:
    """One strict reader: outside fatpte/fileio/strict_json.py no module hands json.loads a hook of
    its own (object_pairs_hook, parse_constant, parse_float, parse_int), so no reader repeats the
    duplicate-key or NaN rules."""
    hooks = {"object_pairs_hook", "object_hook", "parse_constant", "parse_float", "parse_int"}
    found = []
    for path in sorted((ROOT / "fatpte").rglob("*.py")):
        if path.name == "strict_json.py" or "_generated" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and any(k.arg in hooks for k in node.keywords):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_the_three_readers_refuse_a_key_twice() -> None:
    from fatpte.device.profile import parse_json as profile_json
    from fatpte.executorch.ptn import _json as ptn_json
    from fatpte.ops.signing import parse_json as signature_json

    twice = b'{"a": 1, "a": 2}'
    with pytest.raises(FatpteError) as profile:
        profile_json(twice, source="p.json")
    assert (profile.value.code, profile.value.field) == (ErrorCode.INVALID_ARGUMENT, "$")
    with pytest.raises(FatpteError) as ptn:
        ptn_json(twice, "aliases.json", "x.ptn", 8)
    assert (ptn.value.code, ptn.value.field, ptn.value.offset) == (ErrorCode.ET_BAD_PACKAGE, "aliases.json", 8)
    with pytest.raises(Exception) as sig:
        signature_json(twice, "signature")
    assert getattr(sig.value, "code", None) is ErrorCode.SIGNATURE_MALFORMED
    assert "appears twice" in str(profile.value) + str(ptn.value) + str(sig.value)


def test_each_reader_keeps_its_number_policy() -> None:
    from fatpte.device.profile import parse_json as profile_json
    from fatpte.executorch.ptn import _json as ptn_json
    from fatpte.ops.signing import parse_json as signature_json

    assert ptn_json(b"[NaN, 1.5]", "m", None, 0)[1] == 1.5  # as ExecuTorch's reader takes them
    assert profile_json(b"[1.5]") == [1.5]  # a fraction reaches the field check, which names the field
    with pytest.raises(FatpteError):
        profile_json(b"[NaN]")
    with pytest.raises(Exception) as sig:
        signature_json(b"[1.5]", "signature.statement")
    assert getattr(sig.value, "field", None) == "signature.statement"


def test_values_are_counted_and_the_count_stops_at_the_limit() -> None:
    from fatpte.fileio.strict_json import measure

    assert measure('{"a": [1, "x", {}], "b": null}') == (3, 6)  # keys are not values
    assert loads(b"[" + b"0," * 9 + b"0]", JsonRules(max_values=11)) == [0] * 10
    assert refused(b"[" + b"0," * 10 + b"0]", JsonRules(max_values=11)) == "values"
    assert measure("[" + "0," * 100 + "0]", max_values=5) == (1, 6)  # it stopped at the sixth


def test_as_loader_names_the_byte_the_loader_stops_at() -> None:
    """Under `as_loader` a refusal carries the byte where C++'s parser refuses the document (issue
    42): the first error in its order, found without recursion however deep the document nests; a
    reader without it keeps json's own account, and only a UTF-8 error has an offset."""
    deep = b"[" * 200_000 + b"1,]"
    with pytest.raises(JsonRefused) as info:
        loads(deep, JsonRules(as_loader=True))
    assert (info.value.kind, info.value.offset) == ("syntax", 200_002)
    # The key twice closes its object before the syntax error after it is reached.
    with pytest.raises(JsonRefused) as info:
        loads(b'[{"a": 1, "a": 2}, 01]', JsonRules(as_loader=True))
    assert (info.value.kind, info.value.offset) == ("duplicate", 10)
    with pytest.raises(JsonRefused) as info:
        loads(b'[{"a": 1, "a": 2}, 01]')
    assert info.value.offset is None
    with pytest.raises(JsonRefused) as info:
        loads(b'["\xc3("]')
    assert (info.value.kind, info.value.offset) == ("utf8", 2)


def test_as_loader_takes_a_list_of_numbers_a_run_at_a_time_and_stops_where_the_loader_does() -> None:
    """`locate` skips a run of numbers in one match (a refused 10 MB list costs one pass, not a
    Python step per value); a number the run does not take (a fraction after 5000 digits, which the
    loader accepts; 4301 digits, which it refuses) is read step by step, so the byte is the same."""
    rules = JsonRules(max_depth=64, depth_of="values", constants=True, as_loader=True)
    head = b"[" + b", ".join([b"0.5", b"-0", b"NaN", b"1e5"] * 1000)
    with pytest.raises(JsonRefused) as info:
        loads(head + b", " + b"7" * 5000 + b".5, 1, 01]", rules)
    assert (info.value.kind, info.value.offset) == ("syntax", len(head) + 5010)  # the 1 of 01
    with pytest.raises(JsonRefused) as info:
        loads(head + b", " + b"7" * 4301 + b", 1]", rules)
    assert (info.value.kind, info.value.offset) == ("integer", len(head) + 2)
