"""Fuzz target, calls.json (issue 42): the input is a calls.json document, read by Python
(`fatpte.ops.golden.read_calls`, what `fatpte pack --golden` and `fatpte.pack(golden=)` read) and
by the C++ loader (`fatpte::calls_from_json`, what `fatpte-run --inputs` reads, through
build/loader/calls_reader, one process for the whole run). Seeded with specs/vectors/calls/ and the
fixtures' calls; a structure-aware mutator (`mutate`, libFuzzer's custom mutator) changes a
document that parses as its values: a key given twice, a value nested up to past the 64 limit,
numbers at the edges (sizes at 2^31, integers at 2^63 and 2^64, 4301 digits, -0, 1e309, NaN, 1.0
for an integer), lone and paired surrogates (escaped, or as the bytes UTF-8 cannot hold), values
of the wrong type, keys dropped or added, shapes and value counts that disagree; and now and then a
byte-level change of libFuzzer's on top. Fails when:

- anything but FatpteError escapes Python;
- one reader accepts the document and the other refuses it, or they refuse it with another code,
  offset or field (the list named `calls`; a document refused as JSON at a byte and no field).

What only one reader reads is left out of the comparison: Python's reader also checks each call's
`method`, `outputs` and tolerances, which `fatpte-run --inputs` ignores, so a refusal there is
compared on the document without them; and golden calls must be at least one, run inputs may be
none, so an empty list is accepted by both for the comparison.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
import struct
import subprocess
import tempfile
from typing import Any

import _harness

Verdict = tuple[int, int | None, str | None]  # (0, None, None) when accepted, else (code, offset, field)
ACCEPTED: Verdict = (0, None, None)
# A field Python reads and `fatpte-run --inputs` does not.
_PYTHON_ONLY = re.compile(r"^calls\[\d+\]\.(method|outputs)")


# -- the two readers -------------------------------------------------------------------------------

@functools.cache
def _reader() -> subprocess.Popen[bytes]:
    path = os.environ.get("FATPTE_CALLS_READER") or str(_harness.ROOT / "build" / "loader" / "calls_reader")
    if not os.path.exists(path):
        raise SystemExit(f"{path} is missing: build the loader first (make loader)")
    return subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def cpp_verdict(data: bytes) -> Verdict:
    reader = _reader()
    assert reader.stdin is not None and reader.stdout is not None
    reader.stdin.write(struct.pack("<I", len(data)) + data)
    reader.stdin.flush()
    line = reader.stdout.readline().decode().split()
    if not line:
        raise AssertionError(f"calls_reader ended (exit {reader.wait()}) on {data[:400]!r}")
    if line == ["OK"]:
        return ACCEPTED
    code, offset, field = line
    return int(code), None if offset == "-" else int(offset), None if field == "-" else field


@functools.cache
def _path() -> str:
    return os.path.join(tempfile.mkdtemp(prefix="fatpte-fuzz-calls."), "calls.json")


def _renamed(field: str | None, label: str) -> str | None:
    """A Python field with the list named `calls`, as C++ names it."""
    if field is not None and field.startswith(label):
        return "calls" + field[len(label):]
    return field


def python_verdict(data: bytes) -> Verdict:
    from fatpte.errors import ErrorCode, FatpteError
    from fatpte.fileio.strict_json import loads
    from fatpte.ops import golden as G

    path = _path()
    with open(path, "wb") as f:
        f.write(data)
    try:
        G.read_calls(path, need_outputs=False)
    except FatpteError as exc:
        field = _renamed(exc.field, path)
        if exc.code is ErrorCode.NO_GOLDEN_CALLS and field == "calls":
            return ACCEPTED  # an empty list: no golden calls, and no run inputs, which C++ accepts
        if field is None or _PYTHON_ONLY.match(field) is None:
            return int(exc.code), exc.offset, field
    else:
        return ACCEPTED
    # Refused at what only Python reads: the same document without it, read as its value.
    calls = [{k: v for k, v in c.items() if k not in ("method", "outputs")} if isinstance(c, dict) else c
             for c in loads(data, G.CALLS_JSON)]
    try:
        G.read_calls(calls, need_outputs=False)
    except FatpteError as exc:
        return int(exc.code), exc.offset, _renamed(exc.field, "golden")
    return ACCEPTED


def test_one_input(data: bytes) -> None:
    py = python_verdict(data)
    cpp = cpp_verdict(data)
    if py != cpp:
        raise AssertionError(f"calls.json read differently: Python {py}, C++ {cpp}\n{data[:400]!r}")


# -- the structure-aware mutator -------------------------------------------------------------------

class Raw(str):
    """A number as written, kept so that its edges (digits, -0, exponents) survive a mutation."""


class Obj(list):  # type: ignore[type-arg]
    """An object as its (key, value) pairs, so that a key may be given twice."""


EDGES = ["0", "-0", "1", "-1", "0.0", "1.0", "1e2", "-1.5", "2147483647", "2147483648", "-2147483648",
         "-2147483649", "3000000000", "4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
         "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
         "1" * 4300, "1" * 4301, "9" * 400, "1e309", "-1e309", "3.5e38", "5e-324", "1E-400", "NaN", "Infinity",
         "-Infinity", "255", "256", "-128", "-129", "65535", "65536"]  # fmt: skip
STRINGS = ["\ud800", "\udc00", "\ud800\u0041", "\ud83d\ude00", "\udbff\udfff", "", "forward", "é", "\x00", "\u2028",
           "float32", "bool", "int64", "uint64", "bfloat16", "complex64"]  # fmt: skip
KEYS = ["inputs", "dtype", "shape", "values", "method", "outputs", "atol", "rtol", "note", ""]
DTYPES = ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool", "bfloat16", "uint16",
          "uint32", "uint64", "Float32", "float"]  # fmt: skip


def parse(data: bytes) -> Any:
    return json.loads(data.decode("utf-8", "surrogatepass"), object_pairs_hook=Obj, parse_int=Raw,
                      parse_float=Raw, parse_constant=Raw)


def dump(v: Any, rng: random.Random) -> str:
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, Obj):
        return "{" + ", ".join(dump(k, rng) + ": " + dump(x, rng) for k, x in v) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(dump(x, rng) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=rng.randrange(4) != 0)  # raw: a lone surrogate becomes bytes no UTF-8 has
    return json.dumps(v)


def places(v: Any, out: list[tuple[Any, Any]], parent: Any = None, key: Any = None) -> None:
    """Every value with its container and its place in it (an index; for an object, its pair's)."""
    todo = [(v, parent, key)]
    while todo and len(out) < 4096:
        v, parent, key = todo.pop()
        out.append((parent, key))
        if isinstance(v, Obj):
            todo.extend((x, v, i) for i, (_, x) in enumerate(v))
        elif isinstance(v, list):
            todo.extend((x, v, i) for i, x in enumerate(v))


def get(parent: Any, key: Any, root: Any) -> Any:
    if parent is None:
        return root
    return parent[key][1] if isinstance(parent, Obj) else parent[key]


def put(parent: Any, key: Any, value: Any) -> Any:
    """Replace the value at (parent, key); None for the root, whose new value is returned."""
    if parent is None:
        return value
    if isinstance(parent, Obj):
        parent[key] = (parent[key][0], value)
    else:
        parent[key] = value
    return None


def mutate_tree(root: Any, rng: random.Random) -> Any:
    found: list[tuple[Any, Any]] = []
    places(root, found)
    parent, key = rng.choice(found)
    v = get(parent, key, root)
    kind = rng.randrange(10)
    new: Any = v
    if kind == 0 and isinstance(v, Obj) and v:  # a key twice, the same or another value
        k, x = rng.choice(v)
        v.insert(rng.randrange(len(v) + 1), (k, x if rng.randrange(2) else Raw(rng.choice(EDGES))))
    elif kind == 1:  # nested deeper: up to past the limit of 64
        for _ in range(rng.choice([1, 2, 10, 30, 58, 60, 61, 62, 63, 64, 70])):
            new = [new]
    elif kind == 2:
        new = Raw(rng.choice(EDGES))
    elif kind == 3:
        new = rng.choice(STRINGS) if rng.randrange(2) else str(v)[:8] + rng.choice(STRINGS)
    elif kind == 4:  # another type
        new = rng.choice([True, False, None, Obj(), [], "1", Raw("1"), Obj([("inputs", [])])])
    elif kind == 5 and isinstance(v, Obj):  # a key dropped or added
        if v and rng.randrange(2):
            del v[rng.randrange(len(v))]
        else:
            v.insert(rng.randrange(len(v) + 1), (rng.choice(KEYS), Raw(rng.choice(EDGES))))
    elif kind == 6 and isinstance(v, list) and not isinstance(v, Obj):  # another count
        if v and rng.randrange(2):
            del v[rng.randrange(len(v)):]
        else:
            v.extend([v[-1] if v else Raw("0")] * rng.choice([1, 2, 100]))
    elif kind == 7:  # a tensor's shape at the edges, its values made to fit (or not)
        sizes = [Raw(rng.choice(["0", "1", "2", "2147483647", "2147483648", "-1", "3000000000", "1.0", "4"]))
                 for _ in range(rng.randrange(4))]
        new = Obj([("dtype", rng.choice(DTYPES)), ("shape", sizes),
                   ("values", [Raw(rng.choice(EDGES)) for _ in range(rng.choice([0, 1, 2, 4]))])])
    elif kind == 8 and isinstance(v, Obj):  # another dtype where there is one
        for i, (k, _) in enumerate(v):
            if k == "dtype":
                v[i] = (k, rng.choice(DTYPES))
    else:  # a whole call, of the values of another
        new = [Obj([("inputs", [v] if isinstance(v, Obj) else [])])]
    replaced = put(parent, key, new) if new is not v else None
    return root if replaced is None else replaced


def mutate(data: bytes, max_size: int, seed: int) -> bytes:
    """libFuzzer's custom mutator: one to three changes of the document's values when it parses,
    else (and one time in eight on top) a byte-level change of libFuzzer's."""
    import atheris  # type: ignore[import-untyped]

    rng = random.Random(seed)
    try:
        root = parse(data)
    except (ValueError, RecursionError):
        return bytes(atheris.Mutate(data, max_size))
    try:
        for _ in range(rng.randrange(1, 4)):
            root = mutate_tree(root, rng)
        out = dump(root, rng).encode("utf-8", "surrogatepass")
    except RecursionError:
        return bytes(atheris.Mutate(data, max_size))
    if rng.randrange(8) == 0:
        out = bytes(atheris.Mutate(out, max_size))
    return out if len(out) <= max_size else bytes(atheris.Mutate(data, max_size))


if __name__ == "__main__":
    _harness.fuzz(test_one_input, custom_mutator=mutate)
