"""Conformance vectors for calls.json (issue 42 P2): specs/vectors/calls/, each file a calls.json
with the one property its name says, and `index.json` with what both readers of it must do: Python's
(`fatpte.ops.golden.read_calls`, behind `fatpte pack --golden` and `fatpte.pack(golden=)`) and C++'s
(`fatpte::calls_from_file`, behind `fatpte-run --inputs`). Both run them:
tests/conformance/test_calls_vectors.py.

An outcome is `accepted`, or the error: `code` (E0702), `field`, the path C++ names with the list
as `calls` (Python names it after the file), or null when the document is refused as JSON (its
grammar, size, depth, a key twice, a lone surrogate, not UTF-8, an integer of too many digits), and
`offset`: for a document refused as JSON, the byte where both refuse it (as the loader's parser
finds the first error: loader/src/common/json.cpp), else null.
Written by tools/gen_vectors.py with the other vectors; do not edit by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

INDEX = "index.json"
E = "E0702"


class CallsVector(NamedTuple):
    file: str
    data: bytes
    description: str
    field: str | None  # the error's field; None: refused as JSON (with `refused`) or accepted
    refused: bool = True
    offset: int | None = None  # refused as JSON: the byte where


def _json(file: str, data: bytes, description: str, at: bytes, after: int = 0) -> CallsVector:
    """A document refused as JSON, at the first place `at` occurs in it plus `after` bytes."""
    return CallsVector(file, data, description, None, True, data.index(at) + after)


def _call(dtype: str = "float32", shape: str = "[1, 4]", values: str = "[0.5, -1, 2e3, 0]", extra: str = "") -> str:
    return f'[{{"inputs": [{{"dtype": "{dtype}", "shape": {shape}, "values": {values}}}]{extra}}}]\n'


def _nested(levels: int) -> str:
    """A value `levels` deep inside the call object, which is at depth 2: an ignored key `note`."""
    inner = levels - 2
    return f', "note": {"[" * (inner - 1)}0{"]" * (inner - 1)}'


def vectors() -> list[CallsVector]:
    """Every vector, in the index's order."""
    return _accepted() + _refused_as_json() + _refused_by_the_rules()


def _accepted() -> list[CallsVector]:
    """Documents both readers accept, each at an edge of the rules."""
    v = CallsVector
    return [
        v("accepted-plain.json", _call().encode(), "one call of one float32 [1, 4] input", None, False),
        v("accepted-nan-infinity.json", _call(values="[NaN, Infinity, -Infinity, -0]").encode(),
          "NaN, Infinity and -Infinity (Python's json writes them) as float32 values", None, False),
        v("accepted-bool-integers.json", _call("bool", "[4]", "[true, false, 0, 1]").encode(),
          "a bool tensor of true, false, 0 and 1", None, False),
        v("accepted-negative-zero.json",
          (b'[{"inputs": [{"dtype": "bool", "shape": [1], "values": [-0]}, {"dtype": "uint64", "shape": [1], '
           b'"values": [-0]}, {"dtype": "int8", "shape": [1], "values": [-0]}]}]\n'),
          "-0 as a bool, a uint64 and an int8 value (0, as Python reads it)", None, False),
        v("accepted-depth-64.json", _call(extra=_nested(64)).encode(),
          "a value 64 deep (the document at depth 1), under a key readers ignore", None, False),
        v("accepted-float32-past-range.json", _call(values="[1e39, -1e39, 3.5e38, 0]").encode(),
          "finite float32 values past float32's range: each is its infinity, as C++ converts it", None, False),
        v("accepted-integer-past-double.json", _call("float64", "[1]", "[" + "9" * 400 + "]").encode(),
          "a float64 value written as an integer of 400 digits: infinity, as strtod reads it", None, False),
    ]


def _refused_as_json() -> list[CallsVector]:
    """Documents refused as JSON, each at the byte where the loader's parser finds its first error."""
    j = _json
    return [
        j("refused-depth-65.json", _call(extra=_nested(65)).encode(), "a value 65 deep, at it", b"[0]", 1),
        j("refused-deep-100000.json", ("[" * 100_000 + "]" * 100_000 + "\n").encode(),
          "arrays nested 100,000 deep (once a RecursionError in Python), at the 65th [", b"[", 64),
        j("refused-duplicate-key.json", b'[{"inputs": [], "inputs": []}]\n',
          "a call giving inputs twice, at the second", b', "inputs"', 2),
        j("refused-duplicate-key-in-tensor.json", _call(values='[1, 2, 3, 4], "dtype": "int32"').encode(),
          "a tensor giving its dtype twice, at the second", b', "dtype"', 2),
        j("refused-duplicate-key-nested-first.json",
          b'[{"inputs": [], "inputs": [{"dtype": "int8", "dtype": "int8"}]}]\n',
          "a key twice in a tensor inside a call giving inputs twice: the tensor's, its object closing first",
          b', "dtype"', 2),
        j("refused-lone-surrogate.json", _call(extra=', "method": "\\ud800"').encode(),
          "a method name holding a lone surrogate escape (once a UnicodeEncodeError in Python), at its backslash",
          b"\\ud800"),
        j("refused-lone-surrogate-before-a-letter.json", _call(extra=', "method": "\\udbff\\u0041"').encode(),
          "a high surrogate escape followed by the escape of a letter, at the first backslash", b"\\udbff"),
        j("refused-lone-low-surrogate.json", _call(extra=', "method": "a\\udc00"').encode(),
          "a low surrogate escape alone, at its backslash", b"\\udc00"),
        j("refused-not-utf8.json", _call(extra=', "method": "\xff"').encode("latin-1"),
          "a byte that is not UTF-8 in a string, at that byte", b"\xff"),
        j("refused-byte-order-mark.json", b"\xef\xbb\xbf" + _call().encode(), "a UTF-8 byte-order mark first",
          b"\xef"),
        j("refused-integer-4301-digits.json", _call("float64", "[1]", "[" + "1" * 4301 + "]").encode(),
          "an integer of 4301 digits (Python's int() limit is 4300), at its first digit", b"1111"),
        j("refused-trailing-comma.json", _call(values="[1, 2, 3, 4,]").encode(), "a comma before ], at the ]",
          b",]", 1),
        j("refused-leading-zero.json", _call(values="[1, 2, 3, 04]").encode(),
          "a number with a leading zero, at the byte after the 0", b"04", 1),
        j("refused-unknown-escape.json", _call(extra=', "method": "a\\q"').encode(),
          "an unknown escape, at the byte after its letter", b"\\q", 2),
        j("refused-short-unicode-escape.json", _call(extra=', "method": "\\u12x4"').encode(),
          "a \\u escape with a letter that is not hex, at that letter", b"x4"),
        j("refused-string-not-closed.json", b'[{"inputs": [], "method": "forw',
          "a string the document ends inside, at the end", b"forw", 4),
        j("refused-control-character.json", _call(extra=', "method": "a\tb"').encode(),
          "a tab inside a string, at the tab", b"\t"),
        j("refused-missing-colon.json", b'[{"inputs" []}]\n', "a key without its colon, at what follows",
          b"[]}"),
        j("refused-text-after-the-list.json", _call().encode() + b"[]\n", "a second value after the list, at it",
          b"]\n[", 2),
        j("refused-nan-lowercase.json", _call(values="[nan, 1, 2, 3]").encode(), "nan (not NaN), at the n",
          b"nan"),
        j("refused-minus-without-digits.json", _call(values="[-, 1, 2, 3]").encode(),
          "a minus sign alone, at the byte after it", b"-,", 1),
        j("refused-empty.json", b"", "an empty file, at its end", b""),
    ]


def _refused_by_the_rules() -> list[CallsVector]:
    """JSON that is not a list of calls as read_calls and calls_from_file read it: the field both name
    (with the largest size accepted, beside the sizes refused)."""
    v = CallsVector
    at = "calls[0].inputs[0]"
    return [
        v("refused-call-not-object.json", b"[[]]\n", "a call that is a list", "calls[0].inputs"),
        v("refused-not-a-list.json", b'{"inputs": []}\n',
          "an object, not the list of calls (Python said E0711, no golden calls; found by fuzz/fuzz_calls.py)",
          "calls"),
        v("refused-dtype-not-string.json", _call().replace('"float32"', "[]").encode(),
          "a dtype that is a list (once a TypeError in Python)", f"{at}.dtype"),
        v("refused-dtype-unknown.json", _call("complex64").encode(), "a dtype no reader knows", f"{at}.dtype"),
        v("refused-shape-missing.json", b'[{"inputs": [{"dtype": "float32", "values": [1]}]}]\n',
          "a tensor without a shape", f"{at}.shape"),
        v("refused-size-negative.json", _call(shape="[-1, 4]").encode(), "a size of -1", f"{at}.shape[0]"),
        v("accepted-size-2147483647.json", _call(shape="[2147483647, 0]", values="[]").encode(),
          "a size of 2^31 - 1 (the largest an i32 of the manifest's TensorLayout holds) beside a 0: no values",
          None, False),
        v("refused-size-2147483648.json", _call(shape="[2147483648, 0]", values="[]").encode(),
          "a size of 2^31 beside a 0 (no values): past the i32 of the manifest's TensorLayout", f"{at}.shape[0]"),
        v("refused-size-3000000000.json", _call(shape="[3000000000, 0]", values="[]").encode(),
          "a size of 3,000,000,000 beside a 0 (no values)", f"{at}.shape[0]"),
        v("refused-size-fraction.json", _call(shape="[1.0, 4]").encode(), "a size written 1.0", f"{at}.shape[0]"),
        v("refused-sizes-product-past-64-bits.json", _call(shape="[2147483647, 2147483647, 2147483647]").encode(),
          "sizes whose product needs more than 64 bits", f"{at}.shape"),
        v("refused-sizes-and-values-disagree.json", _call(values="[1, 2, 3]").encode(),
          "3 values for shape [1, 4]", f"{at}.values"),
        v("refused-true-as-float.json", _call(values="[true, 1, 2, 3]").encode(), "true as a float32 value",
          f"{at}.values[0]"),
        v("refused-string-as-float.json", _call(values='[1, "2", 3, 4]').encode(), "a string as a float32 value",
          f"{at}.values[1]"),
        v("refused-fraction-as-bool.json", _call("bool", "[1]", "[1.0]").encode(), "1.0 as a bool value",
          f"{at}.values[0]"),
        v("refused-fraction-as-int32.json", _call("int32", "[1]", "[1.5]").encode(), "1.5 as an int32 value",
          f"{at}.values[0]"),
        v("refused-exponent-as-int32.json", _call("int32", "[1]", "[1e2]").encode(), "1e2 as an int32 value",
          f"{at}.values[0]"),
        v("refused-nan-as-int32.json", _call("int32", "[1]", "[NaN]").encode(), "NaN as an int32 value",
          f"{at}.values[0]"),
        v("refused-uint8-256.json", _call("uint8", "[1]", "[256]").encode(), "256 as a uint8 value", f"{at}.values[0]"),
        v("refused-int64-past-range.json", _call("int64", "[1]", "[9223372036854775808]").encode(),
          "2^63 as an int64 value", f"{at}.values[0]"),
        v("refused-uint64-past-range.json", _call("uint64", "[1]", "[18446744073709551616]").encode(),
          "2^64 as a uint64 value", f"{at}.values[0]"),
        v("refused-inputs-not-list.json", b'[{"inputs": {}}]\n', "inputs that are an object", "calls[0].inputs"),
    ]


def render_index(vs: list[CallsVector]) -> str:
    doc: dict[str, Any] = {
        "generator": "tools/gen_calls_vectors.py",
        "about": ("calls.json vectors: per file, accepted, or the error both readers give (Python's "
                  "fatpte.ops.golden.read_calls, C++'s fatpte::calls_from_file behind fatpte-run --inputs): code, "
                  "field with the list named calls (null: refused as JSON), and offset: the byte where a document "
                  "is refused as JSON, else null)"),
        "vectors": {x.file: {"description": x.description, "accepted": not x.refused,
                             **({"error": {"code": E, "field": x.field, "offset": x.offset}} if x.refused else {})}
                    for x in vs},
    }
    return json.dumps(doc, indent=2) + "\n"


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    vs = vectors()
    for old in out.glob("*.json"):
        old.unlink()
    for x in vs:
        (out / x.file).write_bytes(x.data)
    (out / INDEX).write_text(render_index(vs))
