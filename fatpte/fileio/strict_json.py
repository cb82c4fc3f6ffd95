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

from typing import Any, Final, Literal, NamedTuple, Self

# An integer literal of more digits is refused as a whole, as Python's int() refuses it by
# default; stated here so that no reader depends on sys.set_int_max_str_digits.
MAX_INTEGER_DIGITS: Final = 4300
# What an integer of 21 to MAX_INTEGER_DIGITS digits reads as when the rules set no range: no
# field of any reader takes more than 2^64 - 1, so its value only has to be out of every range
# (and the reader never converts thousands of digits).
HUGE: Final = 1 << 64


class HugeInteger(int):
    """An integer of 21 to MAX_INTEGER_DIGITS digits as a reader with `huge_literal` gets it: HUGE
    (or -HUGE), out of every field's range as without it, keeping the literal the document holds,
    which its repr and str give, so that a message quotes the number written, not 2^64."""

    literal: str

    def __new__(cls, literal: str) -> Self:
        value = super().__new__(cls, -HUGE if literal.startswith("-") else HUGE)
        value.literal = literal
        return value

    def __repr__(self) -> str:
        return self.literal

    __str__ = __repr__

    def __getnewargs__(self) -> tuple[str]:  # type: ignore[override]  # copy and pickle by the literal
        return (self.literal,)


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
    # With `integers` None and not huge_as_float: such an integer reads as a HugeInteger, HUGE
    # that keeps its literal for messages (device profiles: "1000...(401 bytes) is outside ..").
    huge_literal: bool = False
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
                if rules.huge_literal:
                    return HugeInteger(literal)
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
    return _Rereading(data, rules).first_error()


def _number_run(rules: JsonRules) -> Any:
    """A run of `, number` inside an array, each number one the rules take as it is written: taken a
    run at a time, so that a long list of values costs one match, not a step per value. Only under
    rules that look at nothing else of such a number (no value count, no integer range); else None."""
    import re

    if rules.max_values is not None or rules.integers is not None or not rules.fractions:
        return None
    literal = rb"-?(?:0|[1-9][0-9]{0,%d})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?" % (MAX_INTEGER_DIGITS - 1)
    if rules.constants:
        literal = rb"(?:" + literal + rb"|NaN|Infinity|-Infinity)"
    # Possessive: a run matched is never given back, so the engine keeps no state per value.
    return re.compile(rb"(?:[ \t\r\n]*+,[ \t\r\n]*+" + literal + rb"(?=[ \t\r\n]*+[,\]]))*+")


class _Rereading:
    """One reading of a refused document in the loader parser's order. It is always at `p` in one
    of three modes: a value is next, a key is next, or a value just ended; each mode is a method
    that reads on and names the next. A broken rule is raised as the JsonRefused `locate` returns."""

    def __init__(self, data: bytes, rules: JsonRules) -> None:
        import re

        self.data, self.rules, self.n = data, rules, len(data)
        self.plain = re.compile(rb'[^"\\\x00-\x1f]*')  # a string's bytes up to a quote, an escape or a control
        self.digits = re.compile(rb"[0-9]*")
        self.run = _number_run(rules)
        self.p = 0
        self.values = 0
        # Open containers: is it an object, the keys seen, the offset of the first key seen twice.
        self.stack: list[tuple[bool, set[bytes], list[int]]] = []

    def first_error(self) -> JsonRefused | None:
        steps = {"value": self.value, "key": self.key, "after": self.after_value}
        mode = "value"
        try:
            while mode != "end":
                mode = steps[mode]()
        except JsonRefused as exc:
            return exc
        return None

    def ws(self, at: int) -> int:
        while at < self.n and self.data[at] in _WS:
            at += 1
        return at

    # The three modes.

    def value(self) -> str:
        """A value is next: the limits at its first byte, then the value (a container is opened)."""
        self.p = p = self.ws(self.p)
        if p >= self.n:
            raise JsonRefused("syntax", "unexpected end", p)
        c = self.data[p]
        container = c in b"{["
        self.count_value(container)
        if container:
            return self.open(c)
        self.p = self.scalar(c)
        return "after"

    def key(self) -> str:
        """A key is next: the string, noted in its object, and its colon."""
        data, n = self.data, self.n
        at = self.ws(self.p)
        if at >= n or data[at] != 0x22:
            raise JsonRefused("syntax", "expected a string key", at)
        got, p = self.string(at)
        _, seen, twice = self.stack[-1]
        if got in seen:
            if not twice:
                twice.append(at)
        else:
            seen.add(got)
        p = self.ws(p)
        if p >= n or data[p] != 0x3A:
            raise JsonRefused("syntax", "expected ':'", p)
        self.p = p + 1
        return "value"

    def after_value(self) -> str:
        """A value just ended: the end of the document, a comma, or its container's close."""
        data, n, stack, rules = self.data, self.n, self.stack, self.rules
        if not stack:
            p = self.ws(self.p)
            if p == n:
                return "end"
            raise JsonRefused("syntax", "unexpected text after the JSON value", p)
        is_object = stack[-1][0]
        p = self.p
        if self.run is not None and not is_object and (rules.max_depth is None or len(stack) < rules.max_depth):
            p = self.run.match(data, p).end()
        p = self.ws(p)
        if p < n and data[p] == 0x2C:
            self.p = p + 1
            return "key" if is_object else "value"
        if p < n and data[p] == (0x7D if is_object else 0x5D):
            self.p = p + 1
            self.close()
            return "after"
        raise JsonRefused("syntax", "expected ',' or '}'" if is_object else "expected ',' or ']'", p)

    # Values.

    def count_value(self, container: bool) -> None:
        """The depth and the value-count limits, at the value's first byte."""
        rules, p = self.rules, self.p
        level = len(self.stack) + 1
        if rules.max_depth is not None and level > rules.max_depth and (container or rules.depth_of == "values"):
            raise JsonRefused("depth", "nested too deeply", p)
        if rules.max_values is not None and self.values >= rules.max_values:
            raise JsonRefused("values", f"the document holds more than {rules.max_values} values", p)
        self.values += 1

    def open(self, c: int) -> str:
        is_object = c == 0x7B
        self.stack.append((is_object, set(), []))
        p = self.ws(self.p + 1)
        if self.data[p:p + 1] == (b"}" if is_object else b"]"):
            self.p = p + 1
            self.stack.pop()
            return "after"
        self.p = p
        return "key" if is_object else "value"

    def close(self) -> None:
        """A container closed: an object that holds a key twice is refused at its second place."""
        is_object, _, twice = self.stack.pop()
        if is_object and twice:
            raise JsonRefused("duplicate", "a key appears twice in one object", twice[0])

    def scalar(self, c: int) -> int:
        """Where the string, number or literal at `p` ends."""
        data, p = self.data, self.p
        if c == 0x22:
            return self.string(p)[1]
        if c == 0x2D or 0x30 <= c <= 0x39 or (self.rules.constants and c in b"NI"):
            return self.number(p)
        if data.startswith((b"true", b"false"), p):
            return p + (4 if data[p] == 0x74 else 5)
        if data.startswith(b"null", p):
            return p + 4
        raise JsonRefused("syntax", "unexpected character", p)

    # Strings.

    def string(self, at: int) -> tuple[bytes, int]:
        """The string whose quote is at `at`, decoded (UTF-8, a pair as its character), and where it
        ends."""
        data, n = self.data, self.n
        out = bytearray()
        at += 1
        while True:
            run = self.plain.match(data, at)
            assert run is not None
            out += run.group()
            at = run.end()
            if at >= n:
                raise JsonRefused("syntax", "a string is not closed", at)
            c = data[at]
            if c == 0x22:
                return bytes(out), at + 1
            if c != 0x5C:
                raise JsonRefused("syntax", "a control character inside a string", at)
            at = self.escape(at, out)

    def escape(self, backslash: int, out: bytearray) -> int:
        """The escape at `backslash` appended to `out`; where it ends."""
        at = backslash + 1
        if at >= self.n:
            raise JsonRefused("syntax", "a string ends inside an escape", at)
        e = self.data[at]
        at += 1
        if e in _ESCAPES:
            out += _ESCAPES[e]
            return at
        if e != 0x75:
            raise JsonRefused("syntax", "an unknown escape in a string", at)
        cp, at = self.unicode_escape(backslash, at)
        out += chr(cp).encode("utf-8", "surrogatepass")
        return at

    def unicode_escape(self, backslash: int, at: int) -> tuple[int, int]:
        """The code point of the \\u escape whose hex digits start at `at` (with the low half that
        follows a high one), and where it ends."""
        cp, at, err = _hex4(self.data, at)
        if err is not None:
            raise err
        if 0xD800 <= cp <= 0xDBFF and self.data[at:at + 2] == b"\\u":
            return self.low_surrogate(backslash, cp, at)
        if 0xD800 <= cp <= 0xDFFF and not self.rules.lone_surrogates:
            raise JsonRefused("surrogate", "a lone surrogate in a \\u escape", backslash)
        return cp, at

    def low_surrogate(self, backslash: int, high: int, second: int) -> tuple[int, int]:
        """A high surrogate's pair from the \\u escape at `second`; where it is lone, the high half
        alone (the second escape read next on its own) when the rules take it."""
        low, after, err = _hex4(self.data, second + 2)
        if err is None and 0xDC00 <= low <= 0xDFFF:
            return 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), after
        if self.rules.lone_surrogates:
            return high, second
        if err is not None:
            raise err
        raise JsonRefused("surrogate", "a lone surrogate in a \\u escape", backslash)

    # Numbers.

    def number(self, start: int) -> int:
        """Where the number at `start` ends, read by the grammar and then by the rules."""
        if self.rules.constants:
            for word in (b"NaN", b"Infinity", b"-Infinity"):
                if self.data.startswith(word, start):
                    return start + len(word)
        end, integral, fraction, count = self.number_grammar(start)
        self.number_rules(start, end, integral, fraction, count)
        return end

    def number_grammar(self, start: int) -> tuple[int, bool, int, int]:
        """Where the number at `start` ends, whether it is an integer, where its fraction or exponent
        starts, and how many integer digits it has."""
        data, n = self.data, self.n
        first = start + (data[start] == 0x2D)
        at = self.digits.match(data, first).end()  # type: ignore[union-attr]
        count = at - first
        if count == 0:
            raise JsonRefused("syntax", "a number without digits", at)
        if count > 1 and data[first] == 0x30:
            raise JsonRefused("syntax", "a number with a leading zero", first + 1)
        fraction = at
        integral = True
        if at < n and data[at] == 0x2E:
            integral = False
            at = self.more_digits(at + 1, "a number without digits after '.'")
        if at < n and data[at] in b"eE":
            integral = False
            at += 1
            if at < n and data[at] in b"+-":
                at += 1
            at = self.more_digits(at, "a number without exponent digits")
        return at, integral, fraction, count

    def more_digits(self, at: int, missing: str) -> int:
        end = self.digits.match(self.data, at).end()  # type: ignore[union-attr]
        if end == at:
            raise JsonRefused("syntax", missing, at)
        return end

    def number_rules(self, start: int, end: int, integral: bool, fraction: int, count: int) -> None:
        rules = self.rules
        if not integral:
            if not rules.fractions:
                raise JsonRefused("fraction", "a fraction or an exponent: numbers here are integers", fraction)
            return
        if count > MAX_INTEGER_DIGITS:
            raise JsonRefused("integer", f"an integer of more than {MAX_INTEGER_DIGITS} digits", start)
        if rules.integers is not None:
            low, high = rules.integers
            if not low <= int(self.data[start:end]) <= high:
                raise JsonRefused("integer", f"an integer outside {low}..{high}", start)


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
