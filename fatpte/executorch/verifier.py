"""The flatbuffers verifier's verdict on an ExecuTorch program, as the C++ loader reaches it.

The loader reads a program's flatbuffer only after the reference verifier that flatc generates
from ExecuTorch's schema/program.fbs passed (loader/src/executorch/program.cpp), with its default
options: every table, vtable, field, uoffset, vector and string of every table the schema reaches
(not only those fatpte's reader visits) inside the buffer and aligned to its size (from the
buffer's first byte), every string NUL-terminated, tables nested at most 64 deep and at most
1,000,000 visited. It says only pass or fail, so a program it refuses is refused here as there:
E1004 with no offset of its own (a program entry's finding is then at its payload), the message
naming the first rule found broken. `read_program` runs it after its own reading, in the order
the loader does.

SCHEMA is program.fbs (executorch 1.5.1) as the verifier walks it: each table's fields in vtable
slot order, a union taking two slots (its type, then its value).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from fatpte.errors import ErrorCode, FatpteError

MAX_DEPTH = 64  # flatbuffers::Verifier::Options defaults
MAX_TABLES = 1_000_000
MAX_SIZE = (1 << 31) - 1  # FLATBUFFERS_MAX_BUFFER_SIZE
MIN_BUFFER_SIZE = 12  # root uoffset, soffset, vtable size, table size

# Field kinds: ("scalar", width), ("string",), ("vector", element size), ("table", name),
# ("tables", name), ("union", {tag: table name}) (two slots).
Field = tuple[object, ...]
_KERNEL_TYPES = {1: "Null", 2: "Int", 3: "Bool", 4: "Double", 5: "Tensor", 6: "String", 7: "IntList",
                 8: "DoubleList", 9: "BoolList", 10: "TensorList", 11: "OptionalTensorList"}
_INSTRUCTIONS = {1: "KernelCall", 2: "DelegateCall", 3: "MoveCall", 4: "JumpFalseCall", 5: "FreeCall"}
_S = {w: ("scalar", w) for w in (1, 4, 8)}
_STR = ("string",)
SCHEMA: Mapping[str, tuple[Field, ...]] = {
    "ContainerMetadata": (_STR, _STR),
    "Null": (),
    "AllocationDetails": (_S[4], _S[4], _S[4]),
    "ExtraTensorInfo": (_S[8], _STR, _S[1], _S[1], _S[1]),
    "Tensor": (_S[1], _S[4], ("vector", 4), ("vector", 1), _S[1], _S[4], ("table", "AllocationDetails"), _S[1], _S[1],
               ("table", "ExtraTensorInfo")),
    "Int": (_S[8],), "Bool": (_S[1],), "Double": (_S[8],), "String": (_STR,),
    "IntList": (("vector", 8),), "DoubleList": (("vector", 8),), "BoolList": (("vector", 1),),
    "TensorList": (("vector", 4),), "OptionalTensorList": (("vector", 4),),
    "EValue": (("union", _KERNEL_TYPES),),
    "Operator": (_STR, _STR),
    "KernelCall": (_S[4], ("vector", 4)), "DelegateCall": (_S[4], ("vector", 4)), "MoveCall": (_S[4], _S[4]),
    "JumpFalseCall": (_S[4], _S[4]), "FreeCall": (_S[4],),
    "Instruction": (("union", _INSTRUCTIONS),),
    "Frame": (_STR, _S[4], _STR, _STR),
    "FrameList": (("tables", "Frame"),),
    "BackendDelegateDataReference": (_S[1], _S[4]),
    "CompileSpec": (_STR, ("vector", 1)),
    "BackendDelegate": (_STR, ("table", "BackendDelegateDataReference"), ("tables", "CompileSpec")),
    "Chain": (("vector", 4), ("vector", 4), ("tables", "Instruction"), ("tables", "FrameList")),
    "ExecutionPlan": (_STR, ("table", "ContainerMetadata"), ("tables", "EValue"), ("vector", 4), ("vector", 4),
                      ("tables", "Chain"), ("tables", "Operator"), ("tables", "BackendDelegate"), ("vector", 8),
                      ("tables", "NonConstBufferDevice")),
    "NonConstBufferDevice": (_S[4], _S[1], _S[1]),
    "Buffer": (("vector", 1),),
    "BackendDelegateInlineData": (("vector", 1),),
    "DataSegment": (_S[8], _S[8]),
    "SubsegmentOffsets": (_S[4], ("vector", 8)),
    "NamedData": (_STR, _S[4]),
    "Program": (_S[4], ("tables", "ExecutionPlan"), ("tables", "Buffer"), ("tables", "BackendDelegateInlineData"),
                ("tables", "DataSegment"), ("table", "SubsegmentOffsets"), ("tables", "SubsegmentOffsets"),
                ("tables", "NamedData")),
}


_READ = {1: struct.Struct("<B"), 2: struct.Struct("<H"), 4: struct.Struct("<I")}


class _Refused(Exception):
    """A rule of the verifier broken (its message); caught once, in verify_program."""


class _Verifier:
    def __init__(self, data: bytes | memoryview, size: int) -> None:
        self.data, self.size = data, size
        self.depth = self.tables = 0

    def u(self, pos: int, width: int) -> int:
        value: int = _READ[width].unpack_from(self.data, pos)[0]
        return value

    def bounds(self, pos: int, length: int, what: str) -> None:
        if not (length < self.size and 0 <= pos <= self.size - length):
            raise _Refused(f"{what}: {length} bytes at {pos:#x} reach past the flatbuffer's {self.size:#x} bytes")

    def aligned(self, pos: int, align: int, what: str) -> None:
        if pos & (align - 1):
            raise _Refused(f"{what} at {pos:#x} is not aligned to {align} bytes")

    def scalar(self, pos: int, width: int, what: str) -> None:
        self.aligned(pos, width, what)
        self.bounds(pos, width, what)

    def offset(self, at: int, what: str) -> int:
        """VerifyOffset: the uoffset at `at` (a field's position), its target's position."""
        self.scalar(at, 4, what)
        o = self.u(at, 4)
        if o == 0 or o >= 1 << 31:
            raise _Refused(f"{what}: uoffset {o:#x} at {at:#x} is 0 or negative as a signed offset")
        self.bounds(at + o, 1, what)
        return at + o

    def vector(self, pos: int, elem_size: int, what: str) -> int:
        """VerifyVectorOrString: the end of the vector whose length is at `pos`."""
        self.scalar(pos, 4, what)
        count = self.u(pos, 4)
        if count >= MAX_SIZE // elem_size:
            raise _Refused(f"{what}: {count} elements of {elem_size} bytes at {pos:#x} are too many")
        self.bounds(pos, 4 + elem_size * count, what)
        return pos + 4 + elem_size * count

    def string(self, pos: int, what: str) -> None:
        end = self.vector(pos, 1, what)
        self.bounds(end, 1, what)
        if self.data[end] != 0:
            raise _Refused(f"{what}: the string at {pos:#x} does not end in NUL")

    def table(self, pos: int, name: str) -> None:
        self.scalar(pos, 4, name)
        soffset = self.u(pos, 4)
        vtable = pos - (soffset - (1 << 32) if soffset >= 1 << 31 else soffset)
        self.depth += 1
        self.tables += 1
        if self.depth > MAX_DEPTH or self.tables > MAX_TABLES:
            raise _Refused(f"{name} at {pos:#x}: tables nest past {MAX_DEPTH} levels or number over {MAX_TABLES}")
        self.scalar(vtable, 2, f"{name}'s vtable")
        vt_size = self.u(vtable, 2)
        if vt_size & 1:
            raise _Refused(f"{name}'s vtable at {vtable:#x} has the odd size {vt_size}")
        self.bounds(vtable, vt_size, f"{name}'s vtable")
        slot = 0
        for spec in SCHEMA[name]:
            slot = self._field(pos, vtable, vt_size, slot, spec, name)
        self.depth -= 1

    def _field_at(self, pos: int, vtable: int, vt_size: int, slot: int) -> int | None:
        voffset = 4 + 2 * slot
        off = self.u(vtable + voffset, 2) if voffset < vt_size else 0
        return pos + off if off else None

    def _field(self, pos: int, vtable: int, vt_size: int, slot: int, spec: Field, name: str) -> int:
        """Verify the field `spec` at `slot`; the next slot."""
        at = self._field_at(pos, vtable, vt_size, slot)
        what = name  # the table's name: a message names no more (formatting each field's costs)
        kind = spec[0]
        if kind == "union":
            tags = spec[1]
            assert isinstance(tags, dict)
            tag = 0
            if at is not None:
                self.scalar(at, 1, what)
                tag = self.u(at, 1)
            value = self._field_at(pos, vtable, vt_size, slot + 1)
            target = None if value is None else self.offset(value, what)
            if target is not None and tag in tags:
                self.table(target, tags[tag])
            return slot + 2
        if at is None:
            return slot + 1
        if kind == "scalar":
            self.scalar(at, int(spec[1]), what)  # type: ignore[call-overload]
            return slot + 1
        target = self.offset(at, what)
        if kind == "string":
            self.string(target, what)
        elif kind == "vector":
            self.vector(target, int(spec[1]), what)  # type: ignore[call-overload]
        elif kind == "table":
            self.table(target, str(spec[1]))
        else:  # a vector of tables: each element's uoffset is followed as the verifier does (unchecked)
            self.vector(target, 4, what)
            for i in range(self.u(target, 4)):
                elem = target + 4 + 4 * i
                self.table(elem + self.u(elem, 4), str(spec[1]))
        return slot + 1


def verify_program(data: bytes | memoryview, size: int, *, source: str | None) -> None:
    """Raise E1004 unless the flatbuffers verifier passes the program's first `size` bytes."""
    if size >= MAX_SIZE:
        raise FatpteError(ErrorCode.ET_FLATBUFFER_TOO_COMPLEX, f"the program's flatbuffer is {size} bytes, beyond the "
                          "flatbuffers limit of 2 GiB", source=source)
    v = _Verifier(data, size)
    try:
        if size < MIN_BUFFER_SIZE or bytes(data[4:8]) != b"ET12":
            raise _Refused(f"{size} bytes are below the {MIN_BUFFER_SIZE} of a flatbuffer, or bytes 4..8 are not ET12")
        v.table(v.offset(0, "root"), "Program")
    except _Refused as exc:
        raise FatpteError(ErrorCode.ET_FLATBUFFER_OUT_OF_BOUNDS,
                          f"the program is not a well-formed flatbuffer of ExecuTorch's schema/program.fbs: the "
                          f"flatbuffers verifier, which the loader runs before reading it, refuses it ({exc})",
                          source=source) from None
