"""Damaged programs in valid containers: structure-aware mutants of a program entry's payload.

A base is a fixture program (tests/fixtures/executorch) packed as the one entry of a version 2
container (its manifest record states its signature, backends and SHA-256). A mutant changes
bytes inside the payload only, then recomputes the entry's CRC32C and the header checksum, so
every container rule passes and the program readers of section 7 (specs/executorch.md) are what
judges it. The mutations aim at what a flatbuffer reader checks: a random byte, a table's soffset,
its vtable's sizes and field offsets, a field's word, a uoffset or a length, a string's bytes
(made invalid UTF-8), its terminating NUL and its length.

Where they are is learnt by reading the intact program once with fatpte's own reader
(fatpte/executorch/flatbuf.py), recording every table, vtable, u32 and string it visits. Used by
the parity oracle (tests/loader/test_cpp_program_mutants.py).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from fatpte.fileio.checksum import crc32c
from tests.paths import ROOT
from tests.support.vectors import Edit, Vector

FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
# Portable, XNNPACK (inline and segment data), native (NPTG), fat delegates, state, two methods.
BASES = ("mlp_portable", "mlp_xnnpack", "mlp_fat", "mlp_native", "add_portable", "buffer_nfat", "kvcache_native",
         "kvpair_xnnpack_default")


@dataclass
class ProgramMap:
    """Where the reader found things in one program (positions from its first byte)."""

    size: int  # the flatbuffer's bytes (program_size with an extended header)
    tables: list[tuple[int, int, int, int]] = field(default_factory=list)  # pos, vtable, vt_size, table_size
    words: list[int] = field(default_factory=list)  # u32s read: the root, lengths, vector uoffsets
    strings: list[tuple[int, int]] = field(default_factory=list)  # length prefix position, length
    fields: list[int] = field(default_factory=list)  # every present field of every table


def program_map(program: bytes) -> ProgramMap:
    """Read `program` with fatpte's reader, recording what it visits."""
    from fatpte.executorch import flatbuf, pte

    seen = ProgramMap(0)
    words: dict[int, int] = {}

    class Recorder(flatbuf.Buffer):
        def u32(self, pos: int, name: str) -> int:
            value = super().u32(pos, name)
            words[pos] = value
            return value

        def check(self, pos: int, length: int, name: str) -> None:
            super().check(pos, length, name)
            if length >= 1 and words.get(pos - 4) == length - 1 and not name.endswith("<vtable>"):
                seen.strings.append((pos - 4, length - 1))

        def table_at(self, pos: int, name: str, depth: int) -> flatbuf.Table:
            table = super().table_at(pos, name, depth)
            vtable = pos - struct.unpack_from("<i", self.data, pos)[0]
            vt_size, table_size = struct.unpack_from("<HH", self.data, vtable)
            seen.tables.append((pos, vtable, vt_size, table_size))
            seen.size = self.size
            return table

    with mock.patch.object(pte, "Buffer", Recorder):
        pte.read_program(program)
    seen.words = sorted(words)
    seen.tables = sorted(set(seen.tables))
    seen.strings = sorted(set(seen.strings))
    for pos, vtable, vt_size, _ in seen.tables:
        for slot in range(4, vt_size, 2):
            off = struct.unpack_from("<H", program, vtable + slot)[0]
            if off:
                seen.fields.append(pos + off)
    seen.fields = sorted(set(seen.fields))
    return seen


@dataclass
class Base:
    name: str
    container: bytes
    offset: int  # of the payload in the container
    program: bytes
    map: ProgramMap


def base(name: str) -> Base:
    """Fixture `name` packed as entry `e` of a version 2 container."""
    import tempfile

    from fatpte.ops.packing import pack
    from fatpte.ops.pte_specialize import pte_specialization

    with tempfile.TemporaryDirectory() as tmp:
        data = pack([pte_specialization(FIXTURES / f"{name}.pte", name="e")], Path(tmp) / "c.nfat").read_bytes()
    e = Edit(Vector(name, data, ""))
    at, size = e.entry(0, "offset"), e.entry(0, "size")
    program = data[at : at + size]
    return Base(name, data, at, program, program_map(program))


def with_program(b: Base, program: bytes) -> bytes:
    """`b`'s container with `program` (as long as its own) as the payload, CRC32C and header checksum sealed."""
    assert len(program) == len(b.program)
    e = Edit(Vector(b.name, b.container, ""))
    e.put(b.offset, program)
    e.put_int(e.entry_at(0, "checksum"), 4, crc32c(program))
    e.seal()
    return bytes(e.buf)


def _word_values(rng: random.Random | Drawn, old: int, size: int) -> int:
    return rng.choice((0, 1, 2, 3, old + 1, old + 2, old + 4, old - 4, old * 2, size, size - 4, size + 4, size - old,
                       0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x40000000, rng.randrange(1 << 32))) & 0xFFFFFFFF


def _put(p: bytearray, at: int, fmt: str, value: int) -> str:
    width = struct.calcsize("<" + fmt)
    if at < 0 or at + width > len(p):
        return "none"
    struct.pack_into("<" + fmt, p, at, value)
    return "ok"


def mutate(b: Base, rng: random.Random | Drawn) -> tuple[str, bytes]:
    """One mutation of `b`'s program: (what was done, the mutated program)."""
    m, p = b.map, bytearray(b.program)
    kind = rng.choice(("byte", "byte", "field", "word", "soffset", "vtable", "string", "string"))
    if kind == "string" and not m.strings:
        kind = "byte"
    if kind == "byte":
        at = rng.randrange(m.size if rng.random() < 0.9 else len(p))
        p[at] = rng.choice((0, 0xFF, 0x80, p[at] ^ (1 << rng.randrange(8)), rng.randrange(256)))
        return f"byte@{at}", bytes(p)
    if kind == "field":
        at = rng.choice(m.fields)
        old = struct.unpack_from("<I", p, at)[0] if at + 4 <= len(p) else 0
        _put(p, at, "I", _word_values(rng, old, m.size))
        return f"field@{at}", bytes(p)
    if kind == "word":
        at = rng.choice(m.words)
        _put(p, at, "I", _word_values(rng, struct.unpack_from("<I", p, at)[0], m.size))
        return f"word@{at}", bytes(p)
    if kind == "soffset":
        pos, vtable, _, _ = rng.choice(m.tables)
        old = pos - vtable
        _put(p, pos, "i", rng.choice((old + 2, old - 2, old + 4, -old, pos + 1, pos - m.size, 0, 0x7FFFFFFF, -0x80000000,
                                      old + rng.randrange(-64, 64))))
        return f"soffset@{pos}", bytes(p)
    if kind == "vtable":
        pos, vtable, vt_size, table_size = rng.choice(m.tables)
        slot = rng.randrange(0, vt_size, 2)
        old = struct.unpack_from("<H", p, vtable + slot)[0]
        _put(p, vtable + slot, "H", rng.choice((0, 1, 2, 3, 4, 5, old + 1, old + 2, old + 4, old - 2, table_size,
                                                 table_size - 1, vt_size + 2, 0xFFFF, 0x8000)) & 0xFFFF)
        return f"vtable@{vtable}+{slot}", bytes(p)
    at, length = rng.choice(m.strings)
    what = rng.choice(("utf8", "utf8", "nul", "length"))
    if what == "utf8" and length:
        p[at + 4 + rng.randrange(length)] = rng.choice((0xFF, 0xC0, 0x80, 0xED, 0xF8))
    elif what == "length" or not length:
        _put(p, at, "I", rng.choice((length + 1, length + 2, length * 2 + 1, m.size, 0xFFFFFFFF)))
    else:
        p[at + 4 + length] = ord("x")
    return f"string-{what}@{at}", bytes(p)


def mutants(count: int, seed: int, names: tuple[str, ...] = BASES) -> list[tuple[str, bytes, bytes]]:
    """`count` mutated containers, spread over `names`, seeded: (label, container, program)."""
    rng = random.Random(seed)
    bases = [base(n) for n in names]
    out = []
    for k in range(count):
        b = bases[k % len(bases)]
        what, program = mutate(b, rng)
        if rng.random() < 0.15:  # two damages at once: the first one the reader meets must be the same
            what2, program = mutate(Base(b.name, b.container, b.offset, program, b.map), rng)
            what += "+" + what2
        out.append((f"{b.name}:{what}", with_program(b, program), program))
    return out


# ---- single damages, for the conformance vectors ---------------------------------------------
# Each returns the damaged program and the position (from the program's first byte) where a
# reader reports it, or None where it reports none of its own (the payload's first byte).


def _plan(program: bytes) -> Any:
    from tests.support.hostile import _first_plan

    return _first_plan(program)


def _vtable(program: bytes, pos: int) -> int:
    return pos - int(struct.unpack_from("<i", program, pos)[0])


def _name_string(program: bytes) -> tuple[int, int]:
    """(position, length) of the first method's name."""
    plan = _plan(program)
    target = plan._target(0, "name")
    return target, int(struct.unpack_from("<I", program, target)[0])


def string_not_utf8(program: bytes) -> tuple[bytes, int | None]:
    at, _ = _name_string(program)
    out = bytearray(program)
    out[at + 4] = 0xFF
    return bytes(out), at


def string_without_nul(program: bytes) -> tuple[bytes, int | None]:
    at, length = _name_string(program)
    out = bytearray(program)
    assert out[at + 4 + length] == 0
    out[at + 4 + length] = ord("x")
    return bytes(out), at


def vtable_size_odd(program: bytes) -> tuple[bytes, int | None]:
    vtable = _vtable(program, _plan(program).pos)
    out = bytearray(program)
    struct.pack_into("<H", out, vtable, struct.unpack_from("<H", out, vtable)[0] + 1)
    return bytes(out), vtable


def vector_past_end(program: bytes) -> tuple[bytes, int | None]:
    plan = _plan(program)
    target = plan._target(2, "values")
    out = bytearray(program)
    struct.pack_into("<I", out, target, 0x3FFFFFFF)
    return bytes(out), target


def field_outside_table(program: bytes) -> tuple[bytes, int | None]:
    plan = _plan(program)
    vtable = _vtable(program, plan.pos)
    out = bytearray(program)
    struct.pack_into("<H", out, vtable + 4, plan._table_size - 2)  # the name's 4-byte uoffset
    return bytes(out), plan.pos


def table_before_buffer(program: bytes) -> tuple[bytes, int | None]:
    plan = _plan(program)
    out = bytearray(program)
    struct.pack_into("<i", out, plan.pos, plan.pos + 64)  # its vtable 64 bytes before byte 0
    return bytes(out), None


def method_without_name(program: bytes) -> tuple[bytes, int | None]:
    plan = _plan(program)
    out = bytearray(program)
    struct.pack_into("<H", out, _vtable(program, plan.pos) + 4, 0)
    return bytes(out), plan.pos


def delegate_without_id(program: bytes) -> tuple[bytes, int | None]:
    delegate = _plan(program).tables(7, "delegates")[0]
    out = bytearray(program)
    struct.pack_into("<H", out, _vtable(program, delegate.pos) + 4, 0)
    return bytes(out), delegate.pos


def subsegment_past_segment(program: bytes) -> tuple[bytes, int | None]:
    from fatpte.executorch.flatbuf import Buffer
    from fatpte.executorch.pte import IDENTIFIER, read_header, read_program

    header = read_header(program, None)
    assert header is not None
    root = Buffer(program[: header.program_size], source=None).root(IDENTIFIER, "program")
    table = root.required_table(5, "constant_segment")
    offsets = table.vector(1, 8, "offsets")
    assert offsets is not None and offsets[1] > 0
    start, count = offsets
    size = read_program(program).segments[table.integer(0, "I", "segment_index")].size
    out = bytearray(program)
    struct.pack_into("<Q", out, start + 8 * (count - 1), size + 1)
    return bytes(out), table.pos


def int_value_field_past_end(program: bytes) -> tuple[bytes, int | None]:
    """The verifier's rule alone: the int_val field of the Int values (whose fields fatpte's reader
    never reads) placed past the end of the flatbuffer, in the vtable only Int values share."""
    from fatpte.executorch.pte import read_program

    plan = _plan(program)
    kinds = read_program(program).methods[0].value_kinds
    ints = {v.union(0, 1, "val")[1].pos for v, k in zip(plan.tables(2, "values"), kinds, strict=True) if k == "int"}
    vtables = {_vtable(program, pos) for pos in ints}
    users = {_vtable(program, pos) for pos, *_ in program_map(program).tables if pos not in ints}
    vtable = min(vtables - users)
    out = bytearray(program)
    struct.pack_into("<H", out, vtable + 4, 0xFFF8)
    return bytes(out), None


class Drawn:
    """The few `random.Random` methods `mutate` uses, each answered by a draw from a Hypothesis
    data object: a fuzzer's bytes then choose every mutation (fuzz/fuzz_program_mutants.py)."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._data, self._st = data, st

    def choice(self, seq: Any) -> Any:
        return self._data.draw(self._st.sampled_from(seq))

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        if stop is None:
            start, stop = 0, start
        return start + step * int(self._data.draw(self._st.integers(0, (stop - start - 1) // step)))

    def random(self) -> float:
        return float(self._data.draw(self._st.floats(0, 1, exclude_max=True)))
