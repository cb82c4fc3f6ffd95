"""Strict JSON: the one reader of the JSON documents fatpte takes from files (device profiles,
signature bundles and their statements, the members of a `.ptn` package).

Python's `json` accepts more than RFC 8259 and resolves what JSON leaves open in its own way: it
keeps the last of two equal keys of an object (another reader may keep the first, so two readers
of one file could act on different values), reads `NaN` and `Infinity`, and nests as deep as the
interpreter's stack allows. `loads` reads a document under `JsonRules`: a key twice in one object
is always refused; the rest (non-numbers, fractions, the integer range, lone surrogates, the size
and the depth) is each reader's policy, stated once in its own module next to the spec that sets
it. Every refusal is a `JsonRefused` (a ValueError), which each reader turns into its own error
code and field; a MemoryError is left to the caller, which reports it as out of memory.

Standard library only, and `json` and `re` are imported when a document is read: the device
profile reader sits on the start-up path of `fatpte select`, which reads no JSON for `--device
host`.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple

# An integer literal of more digits is refused as a whole, as Python's int() refuses it by
# default; stated here so that no reader depends on sys.set_int_max_str_digits.
MAX_INTEGER_DIGITS: Final = 4300
# What an integer of 21 to MAX_INTEGER_DIGITS digits reads as when the rules set no range: no
# field of any reader takes more than 2^64 - 1, so its value only has to be out of every range
# (and the reader never converts thousands of digits).
HUGE: Final = 1 << 64


class JsonRules(NamedTuple):
    """What a reader accepts beyond RFC 8259's grammar. Duplicate keys are never accepted."""

    max_bytes: int | None = None  # the document's size; None: the caller bounds it
    max_depth: int | None = None  # None: bounded by the interpreter (a RecursionError is refused)
    # "containers": arrays and objects nest at most max_depth deep, whatever they hold;
    # "values": every value is at most max_depth deep, the document itself at depth 1 (a number
    # inside max_depth arrays is one level too deep). Object keys are not values.
    depth_of: Literal["containers", "values"] = "containers"
    # The most values the document may hold (each object, array, string, number, true, false and
    # null counts one; keys do not); None: bounded by the size. Counted before parsing, and the
    # count stops at the first value over the limit, so a refused document costs no more.
    max_values: int | None = None
    constants: bool = False  # NaN, Infinity and -Infinity (not JSON; Python's extension)
    fractions: bool = True  # numbers with a fraction or an exponent
    integers: tuple[int, int] | None = None  # the range of integers; None: any of MAX_INTEGER_DIGITS digits
    lone_surrogates: bool = True  # strings holding a \ud800..\udfff escape that pairs with nothing
    # With `integers` None: an integer of 21 to MAX_INTEGER_DIGITS digits reads as float(literal)
    # (the nearest double, infinity past its range, as C++'s strtod reads it) instead of HUGE,
    # for a reader whose numbers may be floats given as integers (calls.json).
    huge_as_float: bool = False


class JsonRefused(ValueError):
    """A document the rules refuse; `kind` says which rule: `size`, `utf8`, `depth`, `values`,
    `syntax` (json's own grammar), `duplicate`, `constant`, `fraction`, `integer` or `surrogate`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# RFC 8259 and no key twice: what a reader gets that states no policy of its own.
PLAIN: Final = JsonRules()


def loads(data: bytes | bytearray | memoryview, rules: JsonRules = PLAIN) -> Any:
    """The value of the JSON document `data` (UTF-8, no byte-order mark) under `rules`; raises
    JsonRefused. The size and the depth are checked before parsing, so a deep document is refused by
    the stated limit, not by the interpreter's stack; work and memory are linear in the size."""
    import json

    if rules.max_bytes is not None and len(data) > rules.max_bytes:
        raise JsonRefused("size", f"the document is {len(data)} bytes, above the limit of {rules.max_bytes}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRefused("utf8", str(exc)) from None
    if rules.max_depth is not None or rules.max_values is not None:
        depth, values = measure(text, rules.depth_of, rules.max_values)
        if rules.max_depth is not None and depth > rules.max_depth:
            what = "arrays and objects nest" if rules.depth_of == "containers" else "values nest"
            raise JsonRefused("depth", f"{what} {depth} deep, more than the limit of {rules.max_depth}")
        if rules.max_values is not None and values > rules.max_values:
            raise JsonRefused("values", f"the document holds more than {rules.max_values} values")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_constant(rules),
                           parse_float=_fraction(rules), parse_int=_integer(rules))
    except JsonRefused:
        raise
    except RecursionError:
        raise JsonRefused("depth", "the document nests deeper than this reader's stack") from None
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise JsonRefused("syntax", str(exc)) from None
    if not rules.lone_surrogates:
        _no_lone_surrogates(value)
    return value


def nesting(text: str, depth_of: Literal["containers", "values"] = "containers") -> int:
    """How deep `text` nests, strings skipped: arrays and objects (`containers`), or values with
    the document at 1 (`values`). Counted on the text, so it works on documents of any depth."""
    return measure(text, depth_of)[0]


def measure(text: str, depth_of: Literal["containers", "values"] = "containers",
            max_values: int | None = None) -> tuple[int, int]:
    """How deep `text` nests (as `nesting`) and how many values it holds (keys are not values),
    counted on the text; with `max_values`, the scan stops at the first value over it (the depth
    is then that of the text scanned so far)."""
    import re

    deepest = depth = values = 0
    by_value = depth_of == "values"
    limit = -1 if max_values is None else max_values
    for m in re.finditer(_TOKENS, text):
        kind = m.lastgroup
        if kind == "close":
            depth -= 1
            continue
        if kind == "key":
            continue
        values += 1
        if values == limit + 1:
            break
        if kind == "open":
            depth += 1
            deepest = max(deepest, depth)
        elif by_value:
            deepest = max(deepest, depth + 1)  # a string or a literal: one level inside its container
    return deepest, values


# A string (a key when a colon follows it), a bracket, or a run of a literal's characters. A
# string is matched whole, so its brackets are not counted; a match's text is never taken, so a
# long string is not copied.
# The string pattern is the unrolled loop (a run of plain characters, then escapes each followed
# by a run) with possessive quantifiers (Python 3.11): the engine keeps no backtracking state per
# character or escape, so an 8 MiB string of escapes costs kilobytes, not hundreds of megabytes.
_STRING: Final = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_TOKENS: Final = (rf'(?P<key>{_STRING}\s*:)|(?P<string>{_STRING})|(?P<open>[\[{{])|(?P<close>[\]}}])'
                  r'|(?P<literal>[^\s,:\[\]{}"]+)')


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Python's json keeps the last of two equal keys; which one a reader keeps is not defined by
    # JSON, so a document that repeats a key is ambiguous and refused.
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise JsonRefused("duplicate", f"the key {key!r} appears twice in one object")
        obj[key] = value
    return obj


def _constant(rules: JsonRules) -> Any:
    def constant(name: str) -> Any:
        if not rules.constants:
            raise JsonRefused("constant", f"{name} is not a JSON value")
        return float(name)

    return constant


def _fraction(rules: JsonRules) -> Any:
    def fraction(literal: str) -> Any:
        if not rules.fractions:
            raise JsonRefused("fraction", f"{literal[:40]} is not an integer: numbers here are integers")
        return float(literal)

    return fraction


def _integer(rules: JsonRules) -> Any:
    def integer(literal: str) -> int | float:
        digits = len(literal) - literal.startswith("-")
        if digits > MAX_INTEGER_DIGITS:
            raise JsonRefused("integer", f"an integer of {digits} digits, more than the limit of {MAX_INTEGER_DIGITS}")
        if rules.integers is None:
            if digits > 20:
                if rules.huge_as_float:
                    return float(literal)
                return -HUGE if literal.startswith("-") else HUGE
            return int(literal)
        low, high = rules.integers
        value = int(literal)
        if not low <= value <= high:
            raise JsonRefused("integer", f"the integer {literal[:40]} is outside {low}..{high}")
        return value

    return integer


def _no_lone_surrogates(value: Any) -> None:
    import re

    surrogate = re.compile("[\ud800-\udfff]")
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            todo.extend(v.keys())
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
        elif isinstance(v, str) and surrogate.search(v) is not None:
            raise JsonRefused("surrogate", "a string holds a lone surrogate (\\ud800..\\udfff)")
