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
    # On a refusal, report the first error as the C++ loader's parser finds it (loader/src/common/
    # json.cpp), by a second reading of the document that follows it step by step: its rule, its
    # message and its byte offset (`locate`). For a document both languages read (calls.json), so
    # that they refuse it at the same byte; the refusal path only, so an accepted document costs
    # one json.loads.
    as_loader: bool = False


class JsonRefused(ValueError):
    """A document the rules refuse; `kind` says which rule: `size`, `utf8`, `depth`, `values`,
    `syntax` (json's own grammar), `duplicate`, `constant`, `fraction`, `integer` or `surrogate`.
    `offset`: the byte of the document where it is refused, when known (always for `utf8`, and for
    every rule but `size` under `as_loader`)."""

    def __init__(self, kind: str, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.offset = offset


# RFC 8259 and no key twice: what a reader gets that states no policy of its own.
PLAIN: Final = JsonRules()


def loads(data: bytes | bytearray | memoryview, rules: JsonRules = PLAIN) -> Any:
    """The value of the JSON document `data` (UTF-8, no byte-order mark) under `rules`; raises
    JsonRefused. The size and the depth are checked before parsing, so a deep document is refused by
    the stated limit, not by the interpreter's stack; work and memory are linear in the size."""
    if rules.max_bytes is not None and len(data) > rules.max_bytes:
        raise JsonRefused("size", f"the document is {len(data)} bytes, above the limit of {rules.max_bytes}")
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRefused("utf8", str(exc), exc.start) from None
    if not rules.as_loader:
        return _loads(text, rules)
    try:
        return _loads(text, rules)
    except JsonRefused as exc:
        raise locate(bytes(data), rules) or exc from None


def _loads(text: str, rules: JsonRules) -> Any:
    import json

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


# What the loader's parser takes between tokens, in a string without escapes, and as digits.
_WS: Final = b" \t\r\n"
_HEX: Final = b"0123456789abcdefABCDEF"
_ESCAPES: Final = {0x22: b'"', 0x5C: b"\\", 0x2F: b"/", 0x62: b"\b", 0x66: b"\f", 0x6E: b"\n", 0x72: b"\r",
                   0x74: b"\t"}


def locate(data: bytes, rules: JsonRules) -> JsonRefused | None:
    """The first error of `data` (valid UTF-8) as the C++ loader's parser finds it
    (loader/src/common/json.cpp, `Parser`), step by step in its order, with its byte offset: a
    syntax error where the parser stops, a value too deep or one value too many at its first byte,
    a number at the byte that ends its grammar (a fraction at its `.` or `e`, an integer of too
    many digits or out of range at its first byte), a lone surrogate at its backslash, a key given
    twice at its second place, reported when its object closes. None when it finds none (the
    documents json.loads refuses and the loader accepts, which is a bug either side). Iterative,
    so any depth; linear in the size."""
    import re

    n = len(data)
    plain = re.compile(rb'[^"\\\x00-\x1f]*')
    digits = re.compile(rb"[0-9]*")
    # A run of `, number` inside an array, each number one the rules take as it is written: taken
    # a run at a time, so that a long list of values costs one match, not a step per value. Only
    # under rules that look at nothing else of such a number (no value count, no integer range).
    run = None
    if rules.max_values is None and rules.integers is None and rules.fractions:
        literal = rb"-?(?:0|[1-9][0-9]{0,%d})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?" % (MAX_INTEGER_DIGITS - 1)
        if rules.constants:
            literal = rb"(?:" + literal + rb"|NaN|Infinity|-Infinity)"
        # Possessive: a run matched is never given back, so the engine keeps no state per value.
        run = re.compile(rb"(?:[ \t\r\n]*+,[ \t\r\n]*+" + literal + rb"(?=[ \t\r\n]*+[,\]]))*+")
    p = 0
    values = 0
    # Open containers: for an object, the keys seen and the offset of the first key seen twice.
    stack: list[tuple[bool, set[bytes], list[int]]] = []

    def ws(at: int) -> int:
        while at < n and data[at] in _WS:
            at += 1
        return at

    def bad(kind: str, message: str, at: int) -> JsonRefused:
        return JsonRefused(kind, message, at)

    def string(at: int) -> tuple[bytes | JsonRefused, int]:
        """The string whose quote is at `at`, decoded (UTF-8, a pair as its character), and where
        it ends; or the error."""
        out = bytearray()
        at += 1
        while True:
            run = plain.match(data, at)
            assert run is not None
            out += run.group()
            at = run.end()
            if at >= n:
                return bad("syntax", "a string is not closed", at), at
            c = data[at]
            if c == 0x22:
                return bytes(out), at + 1
            if c != 0x5C:
                return bad("syntax", "a control character inside a string", at), at
            escape = at
            at += 1
            if at >= n:
                return bad("syntax", "a string ends inside an escape", at), at
            e = data[at]
            at += 1
            if e in _ESCAPES:
                out += _ESCAPES[e]
                continue
            if e != 0x75:
                return bad("syntax", "an unknown escape in a string", at), at
            cp, at, err = _hex4(data, at)
            if err is not None:
                return err, at
            if 0xD800 <= cp <= 0xDBFF and data[at:at + 2] == b"\\u":
                second = at
                low, after, err = _hex4(data, at + 2)
                if err is None and 0xDC00 <= low <= 0xDFFF:
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                    at = after
                elif rules.lone_surrogates:
                    at = second
                elif err is not None:
                    return err, after
                else:
                    return bad("surrogate", "a lone surrogate in a \\u escape", escape), escape
            elif 0xD800 <= cp <= 0xDFFF and not rules.lone_surrogates:
                return bad("surrogate", "a lone surrogate in a \\u escape", escape), escape
            out += chr(cp).encode("utf-8", "surrogatepass")

    def number(at: int) -> JsonRefused | int:
        start = at
        if rules.constants:
            for word in (b"NaN", b"Infinity", b"-Infinity"):
                if data.startswith(word, at):
                    return at + len(word)
        negative = data[at] == 0x2D
        if negative:
            at += 1
        first = at
        at = digits.match(data, at).end()  # type: ignore[union-attr]
        count = at - first
        if count == 0:
            return bad("syntax", "a number without digits", at)
        if count > 1 and data[first] == 0x30:
            return bad("syntax", "a number with a leading zero", first + 1)
        fraction = at
        integral = True
        if at < n and data[at] == 0x2E:
            integral = False
            dot = at + 1
            at = digits.match(data, dot).end()  # type: ignore[union-attr]
            if at == dot:
                return bad("syntax", "a number without digits after '.'", at)
        if at < n and data[at] in b"eE":
            integral = False
            at += 1
            if at < n and data[at] in b"+-":
                at += 1
            exp = at
            at = digits.match(data, exp).end()  # type: ignore[union-attr]
            if at == exp:
                return bad("syntax", "a number without exponent digits", at)
        if not integral and not rules.fractions:
            return bad("fraction", "a fraction or an exponent: numbers here are integers", fraction)
        if integral and count > MAX_INTEGER_DIGITS:
            return bad("integer", f"an integer of more than {MAX_INTEGER_DIGITS} digits", start)
        if integral and rules.integers is not None:
            low, high = rules.integers
            if not low <= int(data[start:at]) <= high:
                return bad("integer", f"an integer outside {low}..{high}", start)
        return at

    def close() -> JsonRefused | None:
        is_object, _, twice = stack.pop()
        if is_object and twice:
            return bad("duplicate", "a key appears twice in one object", twice[0])
        return None

    mode = "value"  # "value": a value is next; "after": a value just ended; "key": a key is next
    while True:
        if mode == "value":
            p = ws(p)
            if p >= n:
                return bad("syntax", "unexpected end", p)
            c = data[p]
            container = c in b"{["
            level = len(stack) + 1
            if rules.max_depth is not None and level > rules.max_depth and (container or rules.depth_of == "values"):
                return bad("depth", "nested too deeply", p)
            if rules.max_values is not None and values >= rules.max_values:
                return bad("values", f"the document holds more than {rules.max_values} values", p)
            values += 1
            if container:
                stack.append((c == 0x7B, set(), []))
                p = ws(p + 1)
                if data[p:p + 1] == (b"}" if c == 0x7B else b"]"):
                    p += 1
                    stack.pop()
                    mode = "after"
                else:
                    mode = "key" if c == 0x7B else "value"
                continue
            if c == 0x22:
                got, p = string(p)
                if isinstance(got, JsonRefused):
                    return got
            elif c == 0x2D or 0x30 <= c <= 0x39 or (rules.constants and c in b"NI"):
                end = number(p)
                if isinstance(end, JsonRefused):
                    return end
                p = end
            elif data.startswith((b"true", b"false"), p):
                p += 4 if data[p] == 0x74 else 5
            elif data.startswith(b"null", p):
                p += 4
            else:
                return bad("syntax", "unexpected character", p)
            mode = "after"
        elif mode == "key":
            p = ws(p)
            if p >= n or data[p] != 0x22:
                return bad("syntax", "expected a string key", p)
            at = p
            got, p = string(p)
            if isinstance(got, JsonRefused):
                return got
            _, seen, twice = stack[-1]
            if got in seen:
                if not twice:
                    twice.append(at)
            else:
                seen.add(got)
            p = ws(p)
            if p >= n or data[p] != 0x3A:
                return bad("syntax", "expected ':'", p)
            p += 1
            mode = "value"
        else:
            if not stack:
                p = ws(p)
                return None if p == n else bad("syntax", "unexpected text after the JSON value", p)
            is_object = stack[-1][0]
            if run is not None and not is_object and (rules.max_depth is None or len(stack) < rules.max_depth):
                p = run.match(data, p).end()  # type: ignore[union-attr]
            p = ws(p)
            if p < n and data[p] == 0x2C:
                p += 1
                mode = "key" if is_object else "value"
            elif p < n and data[p] == (0x7D if is_object else 0x5D):
                p += 1
                err = close()
                if err is not None:
                    return err
            else:
                return bad("syntax", "expected ',' or '}'" if is_object else "expected ',' or ']'", p)


def _hex4(data: bytes, at: int) -> tuple[int, int, JsonRefused | None]:
    """The four hex digits of a \\u escape from `at`: (code point, where they end, None), or the
    error at the first byte that is not one (at `at` when fewer than four are left)."""
    if len(data) - at < 4:
        return 0, at, JsonRefused("syntax", "a \\u escape needs four hex digits", at)
    cp = 0
    for k in range(4):
        if data[at + k] not in _HEX:
            return 0, at + k, JsonRefused("syntax", "a \\u escape needs four hex digits", at + k)
        cp = cp << 4 | int(chr(data[at + k]), 16)
    return cp, at + 4, None
