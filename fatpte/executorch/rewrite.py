"""Rewriting the segments of a .pte, keeping the program valid: one segment replaced by bytes of
another length (thinning a fat delegate), or the named data taken out (sharing it in a container);
and the backend id of delegates changed (making a fat delegate of a lowered program's); and a
delegate's compile-spec value replaced by one of the same length (a program compiled for OpenVINO
`CPU` restated as compiled for `GPU`, which tests need and no machine here can export).

The flatbuffer keeps its size and every table stays where it is: only fixed-width values change,
patched in place. Those are each moved DataSegment's offset, a replaced one's size, the extended
header's segment_data_size and, when segments are removed, the two vectors that list them
(`segments`, `named_data`: the remaining elements move to the front, each uoffset recomputed for its
new slot, the count lowered; the bytes after the new end are no longer referenced) and every
segment index that pointed past a removed segment (delegate data references, constant_segment,
mutable_data_segments, named_data). Segments keep their order; each starts at the next multiple of
the segment alignment the file already uses (the largest power of two, at most 65536, dividing
every segment offset), so alignment guarantees the exporter gave still hold. The bytes of every
other segment are copied unchanged, and the result is read back before it is returned.

A new delegate id is one new string written after the flatbuffer's last byte, in the padding
before the segments when it fits there, else with the segments moved later by a multiple of the
alignment their base offset has (their offsets are relative to that base, so none changes); each
renamed delegate's `id` then points at it. The old strings stay, unreferenced: a string may be
shared by several references, so it is never written over.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.flatbuf import Buffer, Table
from fatpte.executorch.pte import IDENTIFIER, Program, Segment, read_program

MAX_SEGMENT_ALIGNMENT = 65536
_SEGMENT_LOCATION = 1  # DataLocation.SEGMENT in program.fbs


def segment_alignment(program: Program) -> int:
    """The largest power of two, at most 65536, dividing every segment's offset from the base."""
    base = 0 if program.header is None else program.header.segment_base_offset
    align = MAX_SEGMENT_ALIGNMENT
    for seg in program.segments:
        rel = seg.offset - base
        while rel % align:
            align //= 2
    return align


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def _patch(out: bytearray, seg: Segment, which: str, at: int | None, value: int, source: str | None) -> None:
    if at is None:
        if value == 0:
            return
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"segments[{seg.index}].{which} is stored as an absent default "
                          "and cannot be changed in place", source=source, field=f"segments[{seg.index}].{which}")
    struct.pack_into("<Q", out, at, value)


@dataclass(frozen=True, slots=True)
class _Ref:
    """One segment index stored in the program: its value, where it is stored, and its path."""

    index: int
    at: int | None  # None when left out as the default 0
    field: str


@dataclass(frozen=True, slots=True)
class _Vector:
    start: int  # position of element 0; the count is the u32 before it
    count: int


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where the program stores what a removal of segments must update."""

    refs: tuple[_Ref, ...]  # every non-named-data segment index
    named: tuple[_Ref, ...]  # named_data[i].segment_index, in vector order
    segments: _Vector | None
    named_data: _Vector | None


def _vector(root: Table, slot: int, name: str) -> _Vector | None:
    found = root.vector(slot, 4, name)
    return None if found is None else _Vector(*found)


def _index(t: Table, slot: int, name: str) -> _Ref:
    return _Ref(t.integer(slot, "I", name), t.scalar_position(slot, "I", name), f"{t.field}.{name}")


def _layout(program: Program) -> _Layout:
    """Walk the program (already read, so every access below is known to be in bounds) for the
    positions of its segment references."""
    size = program.size if program.header is None else program.header.program_size
    root = Buffer(memoryview(program.data)[:size], source=program.source).root(IDENTIFIER, "ExecuTorch program")
    refs: list[_Ref] = []
    for plan in root.tables(1, "execution_plan"):
        for delegate in plan.tables(7, "delegates"):
            processed = delegate.required_table(1, "processed")
            if processed.integer(0, "b", "location") == _SEGMENT_LOCATION:
                refs.append(_index(processed, 1, "index"))
    constant = root.table(5, "constant_segment")
    if constant is not None:
        refs.append(_index(constant, 0, "segment_index"))
    refs.extend(_index(t, 0, "segment_index") for t in root.tables(6, "mutable_data_segments"))
    named = tuple(_index(t, 1, "segment_index") for t in root.tables(7, "named_data"))
    return _Layout(tuple(refs), named, _vector(root, 4, "segments"), _vector(root, 7, "named_data"))


def _compact(out: bytearray, vec: _Vector, keep: list[int]) -> None:
    """Keep only elements `keep` (ascending) of a vector of uoffsets, in place. An element moved
    to an earlier slot points at the same table, so its uoffset only grows: it stays forward."""
    for slot, i in enumerate(keep):
        old_at = vec.start + 4 * i
        target = old_at + struct.unpack_from("<I", out, old_at)[0]
        new_at = vec.start + 4 * slot
        struct.pack_into("<I", out, new_at, target - new_at)
    struct.pack_into("<I", out, vec.start - 4, len(keep))


def _rewrite(
    data: bytes,
    program: Program,
    *,
    replace: Mapping[int, bytes],
    remove: Collection[int],
    drop_named: Collection[int],
    source: str | None,
) -> bytes:
    """`data` with segments `replace` given new bytes, segments `remove` taken out of the program
    and named_data entries `drop_named` (positions in the vector) removed."""
    header = program.header
    removed = set(remove)
    if header is None:
        # Without an extended header every segment is empty (pte.py): nothing moves or resizes.
        if any(len(body) for body in replace.values()):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the program has no extended header, so its segments "
                              "cannot hold data", source=source, field="extended_header")
        out = bytearray(data)
    else:
        base = header.segment_base_offset
        align = segment_alignment(program)
        order = sorted(program.segments, key=lambda s: (s.offset, s.index))
        out = bytearray(data[:base])
        placed: dict[int, int] = {}  # kept segment index -> new relative offset
        end = 0
        for seg in order:
            if seg.index in removed:
                continue
            body = replace.get(seg.index, data[seg.offset : seg.offset + seg.size])
            rel = _align(end, align) if len(body) else min(_align(end, align), seg.offset - base)
            placed[seg.index] = rel
            out += bytes(base + rel - len(out)) if base + rel > len(out) else b""
            if len(body):
                out[base + rel : base + rel + len(body)] = body
            end = max(end, rel + len(body))
        out += bytes(base + end - len(out)) if base + end > len(out) else b""
        for seg in program.segments:
            if seg.index in placed and placed[seg.index] != seg.offset - base:
                _patch(out, seg, "offset", seg.offset_field, placed[seg.index], source)
        for index, body in replace.items():
            old = program.segments[index]
            if len(body) != old.size:
                _patch(out, old, "size", old.size_field, len(body), source)
        if header.segment_data_size is not None:
            struct.pack_into("<Q", out, 32, end)
        elif removed or replace:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the extended header has no segment_data_size to update",
                              source=source, field="extended_header.segment_data_size")
    if removed or drop_named:
        layout = _layout(program)
        dropped = set(drop_named)
        new_index: dict[int, int] = {}
        for seg in program.segments:
            if seg.index not in removed:
                new_index[seg.index] = len(new_index)
        kept_named = [i for i in range(len(layout.named)) if i not in dropped]
        for ref in layout.refs + tuple(layout.named[i] for i in kept_named):
            if ref.index in removed:
                raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"segment {ref.index} cannot be removed: {ref.field} "
                                  "still uses it", source=source, field=ref.field)
            if ref.index not in new_index:
                # The reader lets an empty sub-segment name any index (nothing is read through it);
                # renumbering needs to know which segment it means.
                raise FatpteError(ErrorCode.ET_BAD_REFERENCE, f"{ref.field} is segment {ref.index}, past the "
                                  f"{len(program.segments)} segments of the program, so it cannot be renumbered "
                                  "when segments are removed", source=source, offset=ref.at, field=ref.field,
                                  actual=ref.index)
            if new_index[ref.index] != ref.index:
                if ref.at is None:  # unreachable for a valid file: only a non-zero index changes
                    raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{ref.field} is stored as an absent default and "
                                      "cannot be changed in place", source=source, field=ref.field)
                struct.pack_into("<I", out, ref.at, new_index[ref.index])
        if removed and layout.segments is not None:
            _compact(out, layout.segments, [s.index for s in program.segments if s.index not in removed])
        if dropped and layout.named_data is not None:
            _compact(out, layout.named_data, kept_named)
    result = bytes(out)
    read_program(result, source=source)  # what was written must read back
    return result


def replace_segment(data: bytes, index: int, new: bytes, *, source: str | None = None) -> bytes:
    """`data` (a whole .pte) with segment `index` holding `new` instead; FatpteError if it cannot."""
    program = read_program(data, source=source)
    if program.header is None or not 0 <= index < len(program.segments):
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"the program has no segment {index}", source=source,
                          field=f"segments[{index}]")
    return _rewrite(data, program, replace={index: new}, remove=(), drop_named=(), source=source)


def remove_named_data(data: bytes, *, source: str | None = None) -> tuple[bytes, dict[str, bytes]]:
    """`data` (a whole .pte) without its named data, and that data (key -> bytes, in table order).

    Every `named_data` entry is removed, and so is each segment that only named data used; a
    segment that a delegate, the constant segment or a mutable data segment also uses stays. The
    backends then find those keys in an external data file (.ptd) given to the runtime."""
    program = read_program(data, source=source)
    moved: dict[str, bytes] = {}
    for i, ref in enumerate(program.named_data):
        blob = bytes(data[ref.offset : ref.offset + ref.size])
        if moved.setdefault(ref.key, blob) != blob:
            raise FatpteError(ErrorCode.NAMED_DATA_CONFLICT, f"named-data key {ref.key!r} appears twice in the "
                              "program with different contents", source=source, field=f"named_data[{i}]",
                              actual=ref.key)
    if not program.named_data:
        return bytes(data), moved
    layout = _layout(program)
    used = {ref.index for ref in layout.refs}
    remove = {ref.segment_index for ref in program.named_data} - used
    rewritten = _rewrite(data, program, replace={}, remove=remove, drop_named=range(len(program.named_data)),
                         source=source)
    return rewritten, moved


def _fail(message: str, source: str | None, field: str) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, message, source=source, field=field)


def rename_delegates(data: bytes, backend_id: str, delegates: Iterable[tuple[int, int]], *,
                     source: str | None = None) -> bytes:
    """`data` (a whole .pte) whose delegates `delegates`, each (method index, delegate index),
    have the backend id `backend_id` instead of theirs; every other byte of the program means
    what it meant (the result is read back and compared)."""
    program = read_program(data, source=source)
    wanted = sorted(set(delegates))
    text = backend_id.encode("utf-8")
    if not text or b"\0" in text:
        raise _fail(f"backend id {backend_id!r} must be 1 or more bytes without NUL", source, "backend_id")
    header = program.header
    size = program.size if header is None else header.program_size
    root = Buffer(memoryview(data)[:size], source=source).root(IDENTIFIER, "ExecuTorch program")
    plans = root.tables(1, "execution_plan")
    fields: list[int] = []  # where each renamed delegate stores the uoffset of its id
    for m, d in wanted:
        tables = plans[m].tables(7, "delegates") if 0 <= m < len(plans) else []
        if not 0 <= d < len(tables):
            raise _fail(f"the program has no delegate {d} in method {m}", source,
                        f"execution_plan[{m}].delegates[{d}]")
        at = tables[d].scalar_position(0, "I", "id")
        if at is None:
            raise _fail(f"delegate {d} of method {m} has no id to change", source,
                        f"execution_plan[{m}].delegates[{d}].id")
        fields.append(at)
    string = struct.pack("<I", len(text)) + text + b"\0"
    at = _align(size, 4)  # a string's length prefix is 4-aligned in the buffer
    end = at + len(string)
    base = 0 if header is None else header.segment_base_offset
    if not base:
        # No segment data: the file ends with the flatbuffer, which now ends with the string.
        if any(seg.size for seg in program.segments):
            raise _fail("the program has segments but no segment base offset", source,
                        "extended_header.segment_base_offset")
        out = bytearray(data[:size]) + bytes(at - size) + string
    elif end <= base and not any(data[size:end]):
        out = bytearray(data)  # the padding before the segments holds it
        out[at:end] = string
    else:
        step = min(MAX_SEGMENT_ALIGNMENT, base & -base)
        new_base = base + _align(end - base, step)
        out = bytearray(data[:at]) + string + bytes(new_base - end) + data[base:]
        struct.pack_into("<Q", out, 24, new_base)
    if header is not None:
        struct.pack_into("<Q", out, 16, end)
    for field in fields:
        struct.pack_into("<I", out, field, at - field)
    result = bytes(out)
    renamed = read_program(result, source=source)
    for plan, before in zip(renamed.methods, program.methods, strict=True):
        if plan.operators != before.operators or plan.name != before.name:
            raise _fail("renaming the delegates changed another string of the program", source, "execution_plan")
    ids = {(m, d.index): d.backend_id for m, plan in enumerate(renamed.methods) for d in plan.delegates}
    old = {(m, d.index): d.backend_id for m, plan in enumerate(program.methods) for d in plan.delegates}
    if any(ids[k] != (backend_id if k in wanted else old[k]) for k in ids):
        raise _fail("renaming the delegates changed another delegate's id", source, "execution_plan")
    return result


def set_compile_spec(data: bytes, delegate_id: str, key: str, value: bytes, *, source: str | None = None) -> bytes:
    """`data` (a whole .pte) whose delegates `delegate_id` have `value` under compile-spec `key`
    instead of their value of the same length, patched in place; every other byte unchanged (the
    result is read back and compared). A delegate without the key, or with a value of another
    length, is an INVALID_ARGUMENT error: nothing moves."""
    program = read_program(data, source=source)
    header = program.header
    size = program.size if header is None else header.program_size
    root = Buffer(memoryview(data)[:size], source=source).root(IDENTIFIER, "ExecuTorch program")
    out = bytearray(data)
    patched = 0
    for m, plan in enumerate(root.tables(1, "execution_plan")):
        for d, delegate in enumerate(plan.tables(7, "delegates")):
            if delegate.string(0, "id") != delegate_id:
                continue
            field = f"execution_plan[{m}].delegates[{d}].compile_specs"
            specs = [cs for cs in delegate.tables(2, "compile_specs") if cs.string(0, "key") == key]
            rng = specs[0].byte_range(1, "value") if specs else None
            if rng is None or rng[1] != len(value):
                raise _fail(f"delegate {d} of method {m} has no compile spec {key!r} of {len(value)} bytes to replace",
                            source, field)
            out[rng[0] : rng[0] + rng[1]] = value
            patched += 1
    if not patched:
        raise _fail(f"the program has no {delegate_id} delegate", source, "execution_plan")
    result = bytes(out)
    after = read_program(result, source=source)
    for now, then in zip(after.methods, program.methods, strict=True):
        for got, had in zip(now.delegates, then.delegates, strict=True):
            want = tuple((k, value if k == key and had.backend_id == delegate_id else v) for k, v in had.compile_specs)
            if got.compile_specs != want or got.backend_id != had.backend_id:
                raise _fail("replacing the compile spec changed another value of the program", source, "execution_plan")
    return result
