"""Bounded read access to untrusted flatbuffers: the one place fatpte.executorch touches raw offsets.

The flatbuffers Python runtime has no verifier: on a malformed buffer its accessors raise
IndexError or struct.error, or read whatever bytes an offset happens to reach. Here every
access is checked before the runtime's `flatbuffers.table.Table` performs it: the table's
position and its vtable lie inside the buffer, a field lies inside its table, every uoffset
lands inside the buffer, every vector's length times its element size fits in what is left,
every string carries its terminating NUL and is UTF-8. Nesting is bounded by MAX_DEPTH, the
total number of objects one reader visits by its budget, and the text it decodes by a second
budget (the manifest's work budget, specs/nfat-manifest.md 2.3: 16 bytes per byte of the buffer
plus 1 MiB, each string counted at each reference to it), so a buffer whose offsets form a cycle
or a wide DAG cannot make a reader hang, and many references to one long string (2,000 operators
that are one operator with a 1 MiB name) cannot make it decode gigabytes. A string is decoded
once per position and shared. Every failure is a FatpteError whose offset is
absolute in the file (buffers embedded in a larger file carry their base) and whose field is
the path of schema names that led there.
"""

from __future__ import annotations

import struct
import weakref
from collections.abc import Iterator
from typing import TypeVar

from flatbuffers.table import Table as _FbTable

from fatpte.errors import ErrorCode, FatpteError
from fatpte.manifest.model import work_budget

MAX_DEPTH = 64  # the deepest nesting any ExecuTorch schema reaches is under 10; 64 leaves room
DEFAULT_BUDGET = 1_000_000  # objects (tables, vector elements) one reader may visit, plus the size

T = TypeVar("T")

_U32 = struct.Struct("<I")


class Buffer:
    """A flatbuffer held in `data`, located at `base` within the file named `source`."""

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        *,
        source: str | None,
        base: int = 0,
        budget: int | None = None,
    ) -> None:
        self.data: bytes | memoryview = data if isinstance(data, bytes) else memoryview(data).cast("B")
        self.size = len(self.data)
        self.source = source
        self.base = base
        # Without sharing, a buffer holds at most size / 4 objects; a walk may visit that many
        # plus a fixed allowance, so legitimate large programs pass and shared-DAG blowups stop.
        self._budget = DEFAULT_BUDGET + self.size if budget is None else budget
        self._limit = self._budget
        self._text_limit = work_budget(self.size)
        self._text = 0
        self._strings: dict[int, tuple[str, int]] = {}  # position -> (text, bytes counted per reference)
        # (position, depth) -> the table verified there, while anything holds it. Weak: a Table holds its
        # Buffer, and a cycle would keep the buffer's memoryview (and a mapping) alive until the next
        # garbage collection.
        self._tables: weakref.WeakValueDictionary[tuple[int, int], Table] = weakref.WeakValueDictionary()

    def error(self, code: ErrorCode, message: str, pos: int | None, field: str) -> FatpteError:
        return FatpteError(
            code, message, source=self.source, offset=None if pos is None else self.base + pos, field=field
        )

    def check(self, pos: int, length: int, field: str) -> None:
        """Raise unless [pos, pos + length) lies inside the buffer (written so it cannot overflow)."""
        if pos < 0 or length < 0 or length > self.size or pos > self.size - length:
            raise self.error(
                ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS,
                f"{length} bytes at {self.base + pos:#x} reach past the end of the flatbuffer "
                f"at {self.base + self.size:#x}",
                pos if 0 <= pos <= self.size else None,
                field,
            )

    def spend(self, n: int, pos: int, field: str) -> None:
        self._budget -= n
        if self._budget < 0:
            raise self.error(
                ErrorCode.ET_FLATBUFFER_TOO_COMPLEX,
                f"reading the flatbuffer visits more objects than the reader's limit of {self._limit}",
                pos,
                field,
            )

    def spend_text(self, n: int, pos: int, field: str) -> None:
        """Count `n` bytes of decoded text (a string's length and bytes, at each reference)."""
        self._text += n
        if self._text > self._text_limit:
            raise self.error(
                ErrorCode.ET_FLATBUFFER_TOO_COMPLEX,
                f"reading the flatbuffer decodes more than {self._text_limit} bytes of text (16 per byte of the "
                "buffer plus 1 MiB): its offsets reach the same strings too many times",
                pos,
                field,
            )

    def u32(self, pos: int, field: str) -> int:
        self.check(pos, 4, field)
        value: int = _U32.unpack_from(self.data, pos)[0]
        return value

    def identifier(self) -> bytes:
        self.check(0, 8, "file_identifier")
        return bytes(self.data[4:8])

    def root(self, identifier: bytes, what: str) -> Table:
        """The root table, after checking the file identifier at bytes 4..8."""
        if self.size < 8:
            raise self.error(
                ErrorCode.ET_TRUNCATED,
                f"{self.size} bytes cannot hold a flatbuffer root offset and identifier (8 bytes)",
                0,
                "root",
            )
        found = self.identifier()
        if found != identifier:
            raise FatpteError(
                ErrorCode.ET_BAD_IDENTIFIER,
                f"bytes 4..8 are {found!r}, not the {what} identifier {identifier!r}",
                source=self.source,
                offset=self.base + 4,
                field="file_identifier",
                expected=identifier,
                actual=found,
            )
        return self.table_at(self.u32(0, "root"), "root", 0)

    def table_at(self, pos: int, field: str, depth: int) -> Table:
        if depth > MAX_DEPTH:
            raise self.error(
                ErrorCode.ET_FLATBUFFER_TOO_COMPLEX, f"tables nest deeper than {MAX_DEPTH} levels", pos, field
            )
        self.spend(1, pos, field)
        # A table reached again at the same depth, while the first is still held, is the same verified
        # table: one object for all the references to it (it keeps the first one's field path for
        # messages), so a vector of 1,000,000 offsets to one table costs a list of references, not a
        # million tables.
        hit = self._tables.get((pos, depth))
        if hit is not None:
            return hit
        self.check(pos, 4, field)
        soffset: int = struct.unpack_from("<i", self.data, pos)[0]
        vtable = pos - soffset
        self.check(vtable, 4, field + ".<vtable>")
        vt_size, table_size = struct.unpack_from("<HH", self.data, vtable)
        if vt_size < 4 or vt_size % 2:
            raise self.error(
                ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS,
                f"vtable size {vt_size} is below 4 or odd",
                vtable,
                field + ".<vtable>",
            )
        self.check(vtable, vt_size, field + ".<vtable>")
        if table_size < 4:
            raise self.error(
                ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS, f"table size {table_size} is below 4", vtable, field
            )
        self.check(pos, table_size, field)
        table = self._tables[(pos, depth)] = Table(self, pos, vt_size, table_size, field, depth)
        return table


class Table:
    """One verified table: its vtable and extent are known to lie inside the buffer."""

    def __init__(self, buf: Buffer, pos: int, vt_size: int, table_size: int, field: str, depth: int) -> None:
        self.buf = buf
        self.pos = pos
        self.field = field
        self.depth = depth
        self._vt_size = vt_size
        self._table_size = table_size
        # The runtime's accessor arithmetic is used only on ranges verified above and below.
        self._fb = _FbTable(buf.data, pos)

    def _path(self, name: str) -> str:
        return f"{self.field}.{name}"

    def _field_pos(self, slot: int, width: int, name: str) -> int | None:
        """Absolute position of field `slot` (0-based in schema order), None when absent."""
        voffset = 4 + 2 * slot
        if voffset >= self._vt_size:
            return None
        offset: int = self._fb.Offset(voffset)
        if offset == 0:
            return None
        if offset > self._table_size - width:
            raise self.buf.error(
                ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS,
                f"field at table offset {offset} with {width} bytes lies outside the table of {self._table_size}",
                self.pos,
                self._path(name),
            )
        return self.pos + offset

    def scalar(self, slot: int, fmt: str, name: str, default: T) -> int | float | bool | T:
        width = struct.calcsize("<" + fmt)
        at = self._field_pos(slot, width, name)
        if at is None:
            return default
        value: int | float | bool = struct.unpack_from("<" + fmt, self.buf.data, at)[0]
        return value

    def scalar_position(self, slot: int, fmt: str, name: str) -> int | None:
        """Where a scalar field's bytes are, relative to the buffer; None when the field is absent
        (flatbuffers leaves out fields equal to their default, so absent fields cannot be patched)."""
        return self._field_pos(slot, struct.calcsize("<" + fmt), name)

    def integer(self, slot: int, fmt: str, name: str, default: int = 0) -> int:
        return int(self.scalar(slot, fmt, name, default))

    def _target(self, slot: int, name: str) -> int | None:
        at = self._field_pos(slot, 4, name)
        if at is None:
            return None
        target: int = self._fb.Indirect(at)
        self.buf.check(target, 4, self._path(name))
        return target

    def table(self, slot: int, name: str) -> Table | None:
        target = self._target(slot, name)
        return None if target is None else self.buf.table_at(target, self._path(name), self.depth + 1)

    def required_table(self, slot: int, name: str) -> Table:
        found = self.table(slot, name)
        if found is None:
            raise self.buf.error(ErrorCode.ET_BAD_VALUE, "a required table is absent", self.pos, self._path(name))
        return found

    def string(self, slot: int, name: str) -> str | None:
        target = self._target(slot, name)
        if target is None:
            return None
        return _string_body(self.buf, target, self._path(name))

    def required_string(self, slot: int, name: str) -> str:
        found = self.string(slot, name)
        if found is None:
            raise self.buf.error(ErrorCode.ET_BAD_VALUE, "a required string is absent", self.pos, self._path(name))
        return found

    def vector(self, slot: int, elem_size: int, name: str) -> tuple[int, int] | None:
        """(position of element 0, element count) of a vector field, bounds-checked; None when absent."""
        target = self._target(slot, name)
        if target is None:
            return None
        count = self.buf.u32(target, self._path(name))
        start = target + 4
        if count > (self.buf.size - start) // elem_size:
            raise self.buf.error(
                ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS,
                f"vector of {count} elements of {elem_size} bytes reaches past the end of the flatbuffer "
                f"at {self.buf.base + self.buf.size:#x}",
                target,
                self._path(name),
            )
        # Byte vectors are sliced, never walked; every other element is read, so each costs one.
        self.buf.spend(count if elem_size > 1 else 1, target, self._path(name))
        return start, count

    def scalars(self, slot: int, fmt: str, name: str) -> tuple[int, ...]:
        width = struct.calcsize("<" + fmt)
        found = self.vector(slot, width, name)
        if found is None:
            return ()
        start, count = found
        return tuple(int(v) for v in struct.unpack_from(f"<{count}{fmt}", self.buf.data, start))

    def byte_range(self, slot: int, name: str) -> tuple[int, int] | None:
        """(position, length) of a [ubyte] vector, relative to the buffer."""
        return self.vector(slot, 1, name)

    def _offset_slots(self, slot: int, name: str) -> Iterator[tuple[int, str]]:
        """Where each uoffset of a vector of tables or strings is, with its field path."""
        found = self.vector(slot, 4, name)
        if found is None:
            return
        start, count = found
        for i in range(count):
            yield start + 4 * i, f"{self._path(name)}[{i}]"

    def tables(self, slot: int, name: str) -> list[Table]:
        return [self.buf.table_at(at + self.buf.u32(at, path), path, self.depth + 1)
                for at, path in self._offset_slots(slot, name)]

    def strings(self, slot: int, name: str) -> list[str]:
        return [_string_at(self.buf, at, path) for at, path in self._offset_slots(slot, name)]

    def union(self, type_slot: int, value_slot: int, name: str) -> tuple[int, Table | None]:
        """(type tag, value table) of a union field; tag 0 is NONE."""
        tag = self.integer(type_slot, "B", name + "_type")
        if tag == 0:
            return 0, None
        return tag, self.table(value_slot, name)


def _string_at(buf: Buffer, at: int, field: str) -> str:
    """The string whose uoffset is stored at `at`."""
    return _string_body(buf, at + buf.u32(at, field), field)


def _string_body(buf: Buffer, target: int, field: str) -> str:
    """The string whose length prefix is at `target`: decoded once, counted at every reference."""
    hit = buf._strings.get(target)
    if hit is not None:
        buf.spend_text(hit[1], target, field)
        return hit[0]
    length = buf.u32(target, field)
    start = target + 4
    buf.check(start, length + 1, field)  # the terminating NUL is part of the encoding
    if buf.data[start + length] != 0:
        raise buf.error(ErrorCode.ET_BAD_VALUE, f"string of {length} bytes ends in byte {buf.data[start + length]:#04x} "
                        f"at {buf.base + start + length:#x}, not its terminating NUL", target, field)
    buf.spend_text(4 + length, target, field)
    raw = bytes(buf.data[start : start + length])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise buf.error(ErrorCode.ET_BAD_VALUE, f"string is not UTF-8 ({exc.reason})", target, field) from None
    buf._strings[target] = (text, 4 + length)
    return text


def enum_name(names: dict[int, str], value: int, buf: Buffer, pos: int, field: str) -> str:
    """The schema name of an enum value; a value the schema does not define is an error."""
    try:
        return names[value]
    except KeyError:
        raise buf.error(
            ErrorCode.ET_BAD_VALUE, f"value {value} is not defined by the schema's enum", pos, field
        ) from None

