"""Reader of ExecuTorch program files (.pte): flatbuffer identifier ET12, schema/program.fbs.

Layout (little-endian): a flatbuffer whose bytes 4..8 are `ET12`; when bytes 8..12 are `eh00`
an extended header follows at byte 8 (u32 header length >= 24, u64 program size, u64 segment
base offset, u64 segment data size when the length reaches 32) and the program's data segments
follow the flatbuffer at segment_base_offset + DataSegment.offset. Delegate payloads live either
inline (Program.backend_delegate_data[index].data) or in a segment (Program.segments[index]).

Everything read is checked against the file before use: the header against the file size,
each segment and inline payload against its region, each index in the program against the
table it indexes. Field slots below are schema positions in program.fbs (a union takes two).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.flatbuf import Buffer, Table, enum_name
from fatpte.executorch.verifier import verify_program
from fatpte.value.dtypes import PROGRAM_ELEMENT_SIZES, PROGRAM_SCALAR_TYPES

IDENTIFIER = b"ET12"
EXTENDED_HEADER_MAGIC = b"eh00"
EXTENDED_HEADER_OFFSET = 8
EXTENDED_HEADER_MIN_LENGTH = 24  # magic, length, program_size, segment_base_offset
EXTENDED_HEADER_FULL_LENGTH = 32  # ... and segment_data_size

# KernelTypes union tags (program.fbs), as the kind names fatpte prints.
VALUE_KINDS: dict[int, str] = {
    0: "none", 1: "null", 2: "int", 3: "bool", 4: "double", 5: "tensor", 6: "string", 7: "int_list",
    8: "double_list", 9: "bool_list", 10: "tensor_list", 11: "optional_tensor_list",
}
_INT, _TENSOR, _INT_LIST = 2, 5, 7
# InstructionArguments union tags, and the fields of each that name a value (slot, name).
_KERNEL_CALL, _DELEGATE_CALL, _MOVE_CALL, _JUMP_FALSE_CALL, _FREE_CALL = 1, 2, 3, 4, 5
_VALUE_FIELDS: dict[int, tuple[tuple[int, str], ...]] = {
    _MOVE_CALL: ((0, "move_from"), (1, "move_to")),
    _JUMP_FALSE_CALL: ((0, "cond_value_index"),),
    _FREE_CALL: ((0, "value_index"),),
}
_DYNAMISM = {0: "static", 1: "dynamic_bound", 2: "dynamic_unbound"}
_DATA_LOCATION = {0: "inline", 1: "segment"}
_TENSOR_DATA_LOCATION = {0: "segment", 1: "external"}


@dataclass(frozen=True, slots=True)
class ExtendedHeader:
    length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int | None  # absent in headers shorter than 32 bytes


@dataclass(frozen=True, slots=True)
class Segment:
    index: int
    offset: int  # absolute in the file
    size: int
    # Where DataSegment.offset and .size are stored in the file (None when left out as default
    # zero): a rewrite patches them in place, the flatbuffer keeping its shape.
    offset_field: int | None = None
    size_field: int | None = None


@dataclass(frozen=True, slots=True)
class TensorValue:
    dtype: str
    shape: tuple[int, ...]
    dynamism: str
    memory_planned: bool  # has allocation_info: lives in a planned arena, not constant data
    data_buffer_idx: int
    fqn: str | None
    external: bool  # data is named in a .ptd rather than held by the program
    scalar_type: int  # the ScalarType code behind `dtype`, as a .ptd's TensorLayout stores it
    dim_order: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape), "dynamism": self.dynamism,
                "memory_planned": self.memory_planned, "fqn": self.fqn, "external": self.external}


@dataclass(frozen=True, slots=True)
class Delegate:
    index: int
    backend_id: str
    location: str  # "inline" or "segment"
    data_index: int
    offset: int  # absolute in the file
    size: int
    compile_specs: tuple[tuple[str, bytes], ...]

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "backend_id": self.backend_id, "location": self.location,
                "data_index": self.data_index, "offset": self.offset, "size": self.size,
                "compile_specs": {k: v.hex() for k, v in self.compile_specs}}


@dataclass(frozen=True, slots=True)
class KernelCall:
    operator: str
    args: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MethodPlan:
    name: str
    value_kinds: tuple[str, ...]
    tensors: dict[int, TensorValue]  # value index -> tensor, for tensor values only
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[str, ...]
    kernel_calls: tuple[KernelCall, ...]
    delegate_calls: tuple[tuple[int, tuple[int, ...]], ...]
    delegates: tuple[Delegate, ...]
    non_const_buffer_sizes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class NamedDataRef:
    key: str
    segment_index: int
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class Program:
    """A decoded, bounds-checked .pte. `data` is the whole file, for slicing payloads."""

    source: str | None
    size: int
    version: int
    header: ExtendedHeader | None
    methods: tuple[MethodPlan, ...]
    segments: tuple[Segment, ...]
    named_data: tuple[NamedDataRef, ...]
    constant_buffer_count: int
    constant_segment: tuple[int, int] | None  # (segment index, number of sub-offsets)
    mutable_data_segments: tuple[tuple[int, int], ...]
    data: bytes | memoryview = field(repr=False)

    def payload(self, delegate: Delegate) -> memoryview:
        return memoryview(self.data)[delegate.offset : delegate.offset + delegate.size]


def read_header(data: bytes | memoryview, source: str | None) -> ExtendedHeader | None:
    """The extended header at byte 8, or None when bytes 8..12 are not `eh00`."""
    size = len(data)
    if size < 12 or bytes(data[8:12]) != EXTENDED_HEADER_MAGIC:
        return None

    def err(message: str, offset: int, name: str) -> FatpteError:
        return FatpteError(ErrorCode.ET_BAD_HEADER, message, source=source, offset=offset,
                           field=f"extended_header.{name}")

    if size < EXTENDED_HEADER_OFFSET + EXTENDED_HEADER_MIN_LENGTH:
        raise FatpteError(ErrorCode.ET_TRUNCATED, f"the file ends at {size:#x}, inside the extended header",
                          source=source, offset=size, field="extended_header")
    length, program_size, base = struct.unpack_from("<IQQ", data, 12)
    if length < EXTENDED_HEADER_MIN_LENGTH or length > 4096:
        raise err(f"header length {length} is outside 24..4096", 12, "length")
    data_size: int | None = None
    if length >= EXTENDED_HEADER_FULL_LENGTH:
        if size < EXTENDED_HEADER_OFFSET + EXTENDED_HEADER_FULL_LENGTH:
            raise FatpteError(ErrorCode.ET_TRUNCATED, f"the file ends at {size:#x}, inside the extended header",
                              source=source, offset=size, field="extended_header.segment_data_size")
        data_size = struct.unpack_from("<Q", data, 32)[0]
    if program_size < EXTENDED_HEADER_OFFSET + length or program_size > size:
        raise err(f"program_size {program_size:#x} is outside the file (size {size:#x}) or inside the header",
                  16, "program_size")
    if base != 0 and (base < program_size or base > size):
        raise err(f"segment_base_offset {base:#x} is before the end of the program at {program_size:#x} "
                  f"or past the end of the file at {size:#x}", 24, "segment_base_offset")
    if data_size is not None and data_size > size - base:
        raise err(f"segment data of {data_size:#x} bytes from {base:#x} reaches past the end of the file "
                  f"at {size:#x}", 32, "segment_data_size")
    return ExtendedHeader(length, program_size, base, data_size)


def read_program(data: bytes | memoryview, *, source: str | None = None) -> Program:
    """Decode a whole .pte held in memory; any defect is a FatpteError."""
    header = read_header(data, source)
    program_size = len(data) if header is None else header.program_size
    buf = Buffer(memoryview(data)[:program_size], source=source)
    root = buf.root(IDENTIFIER, "ExecuTorch program (.pte)")

    segments = _segments(root, header, len(data), source)
    inline = [(t, t.byte_range(0, "data")) for t in root.tables(3, "backend_delegate_data")]
    methods = tuple(
        _method(plan, segments, inline, source) for plan in root.tables(1, "execution_plan")
    )
    named = tuple(_named(t, segments) for t in root.tables(7, "named_data"))
    constant_segment = root.table(5, "constant_segment")
    const = None
    if constant_segment is not None:
        const = _subsegment(constant_segment, segments)
    mutable = tuple(_subsegment(t, segments) for t in root.tables(6, "mutable_data_segments"))
    version, constant_buffers = root.integer(0, "I", "version"), len(root.tables(2, "constant_buffer"))
    verify_program(buf.data, buf.size, source=source)
    return Program(
        source=source,
        size=len(data),
        version=version,
        header=header,
        methods=methods,
        segments=segments,
        named_data=named,
        constant_buffer_count=constant_buffers,
        constant_segment=const,
        mutable_data_segments=mutable,
        data=data,
    )


def _segments(root: Table, header: ExtendedHeader | None, size: int, source: str | None) -> tuple[Segment, ...]:
    # Without an extended header, or with a segment_base_offset of 0 (ExecuTorch's
    # Program::LoadSegment: "No segments in program"), there is no segment data: the exporter
    # still lists an empty constant segment, so empty segments are accepted and any other is out
    # of bounds (it would otherwise be read from the program's own first bytes).
    if header is None or header.segment_base_offset == 0:
        base = limit = size
        no_data = " (the program has no segment data: {})".format(
            "no extended header" if header is None else "its segment_base_offset is 0")
    else:
        base = header.segment_base_offset
        limit = size if header.segment_data_size is None else base + header.segment_data_size
        no_data = ""
    out = []
    for i, t in enumerate(root.tables(4, "segments")):
        off = t.integer(0, "Q", "offset")
        sz = t.integer(1, "Q", "size")
        if sz > limit - base or off > limit - base - sz:
            raise FatpteError(ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS,
                              f"segment of {sz:#x} bytes at {base:#x}+{off:#x} reaches past the segment data "
                              f"that ends at {limit:#x}{no_data}", source=source, offset=t.pos, field=f"segments[{i}]")
        out.append(Segment(i, base + off, sz, t.scalar_position(0, "Q", "offset"),
                           t.scalar_position(1, "Q", "size")))
    return tuple(out)


def _segment(segments: tuple[Segment, ...], index: int, t: Table, name: str) -> Segment:
    if index >= len(segments):
        raise t.buf.error(ErrorCode.ET_BAD_REFERENCE, f"segment index {index} is past the {len(segments)} "
                          "segments of the program", t.pos, f"{t.field}.{name}")
    return segments[index]


def _subsegment(t: Table, segments: tuple[Segment, ...]) -> tuple[int, int]:
    index = t.integer(0, "I", "segment_index")
    offsets = t.scalars(1, "Q", "offsets")
    if offsets:
        seg = _segment(segments, index, t, "segment_index")
        for i, off in enumerate(offsets):
            if off > seg.size:
                raise t.buf.error(ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS, f"sub-offset {off:#x} is past the end of "
                                  f"segment {index} ({seg.size:#x} bytes)", t.pos, f"{t.field}.offsets[{i}]")
    return index, len(offsets)


def _named(t: Table, segments: tuple[Segment, ...]) -> NamedDataRef:
    key = t.required_string(0, "key")
    index = t.integer(1, "I", "segment_index")
    seg = _segment(segments, index, t, "segment_index")
    return NamedDataRef(key, index, seg.offset, seg.size)


def _tensor(t: Table) -> TensorValue:
    buf = t.buf
    code = t.integer(0, "b", "scalar_type")
    dtype = enum_name(PROGRAM_SCALAR_TYPES, code, buf, t.pos, t.field + ".scalar_type")
    shape = _sizes(t, PROGRAM_ELEMENT_SIZES[code])
    dynamism = enum_name(_DYNAMISM, t.integer(8, "b", "shape_dynamism"), buf, t.pos, t.field + ".shape_dynamism")
    extra = t.table(9, "extra_tensor_info")
    fqn = None
    external = False
    if extra is not None:
        fqn = extra.string(1, "fully_qualified_name")
        loc = enum_name(_TENSOR_DATA_LOCATION, extra.integer(2, "b", "location"), buf, extra.pos,
                        extra.field + ".location")
        external = loc == "external"
    return TensorValue(dtype=dtype, shape=shape, dynamism=dynamism, memory_planned=t.table(6, "allocation_info")
                       is not None, data_buffer_idx=t.integer(5, "I", "data_buffer_idx"), fqn=fqn or None,
                       external=external, scalar_type=code, dim_order=t.scalars(3, "B", "dim_order"))


_SSIZE_LIMIT, _SIZE_LIMIT = 1 << 63, 1 << 64


def _sizes(t: Table, element: int) -> tuple[int, ...]:
    """A tensor's sizes, which ExecuTorch's own verification (validate_tensor) requires present,
    each at least 0, their running product below 2^63 and times the element size below 2^64. It
    lets a dynamic-shape method input that fails them pass, after looking for the value in the
    inputs once per such value (quadratic in the inputs), and its `set_input` then aborts when
    MethodMeta cannot size the input: so every tensor is held to them here."""
    found = t.vector(2, 4, "sizes")
    if found is None:
        raise t.buf.error(ErrorCode.ET_BAD_VALUE, "a required vector is absent", t.pos, f"{t.field}.sizes")
    shape: tuple[int, ...] = struct.unpack_from(f"<{found[1]}i", t.buf.data, found[0])
    count = 1
    for k, size in enumerate(shape):
        if size < 0:
            raise t.buf.error(ErrorCode.ET_BAD_VALUE, f"size {size} is negative", t.pos, f"{t.field}.sizes[{k}]")
        count *= size
        if count >= _SSIZE_LIMIT:
            raise t.buf.error(ErrorCode.ET_BAD_VALUE, f"the element count reaches {count} at size {k}, past 2^63 - 1",
                              t.pos, f"{t.field}.sizes")
    if count * element >= _SIZE_LIMIT:
        raise t.buf.error(ErrorCode.ET_BAD_VALUE, f"{count} elements of {element} bytes are past 2^64 - 1 bytes",
                          t.pos, f"{t.field}.sizes")
    return shape


def _indices(t: Table, slot: int, name: str, count: int) -> tuple[int, ...]:
    values = t.scalars(slot, "i", name)
    for i, v in enumerate(values):
        _in_values(t, v, f"{name}[{i}]", count)
    return values


def _in_values(t: Table, v: int, name: str, count: int) -> None:
    """A value index of table `t` (field `name`) within the method's `count` values: ExecuTorch's
    Method::get_value aborts the process (ET_CHECK) on one past them."""
    if not 0 <= v < count:
        raise t.buf.error(ErrorCode.ET_BAD_REFERENCE, f"value index {v} is outside the {count} values of "
                          "the method", t.pos, f"{t.field}.{name}")


def _values(plan: Table) -> tuple[list[str], dict[int, TensorValue]]:
    """Each value's kind, and the tensors among them by index; then every IntList item a value
    index of an Int (ExecuTorch boxes the items as values, and a kernel reading the list aborts on
    any other kind: EValue::toInt's ET_CHECK)."""
    values = plan.tables(2, "values")
    kinds: list[str] = []
    tensors: dict[int, TensorValue] = {}
    lists: list[Table] = []
    for i, v in enumerate(values):
        tag, val = v.union(0, 1, "val")
        kinds.append(enum_name(VALUE_KINDS, tag, v.buf, v.pos, f"{v.field}.val_type"))
        if tag == _TENSOR:
            if val is None:
                raise v.buf.error(ErrorCode.ET_BAD_VALUE, "a tensor value has no tensor", v.pos, f"{v.field}.val")
            tensors[i] = _tensor(val)
        elif tag == _INT_LIST and val is not None:
            lists.append(val)
    for lst in lists:
        for j, item in enumerate(lst.scalars(0, "q", "items")):
            _in_values(lst, item, f"items[{j}]", len(values))
            if kinds[item] != VALUE_KINDS[_INT]:
                raise lst.buf.error(ErrorCode.ET_BAD_VALUE, f"an int list's item is value {item}, a {kinds[item]}, "
                                    "not an int", lst.pos, f"{lst.field}.items[{j}]")
    return kinds, tensors


def _instructions(
    chain: Table, n: int, operators: tuple[str, ...], delegates: int,
    kernel_calls: list[KernelCall], delegate_calls: list[tuple[int, tuple[int, ...]]],
) -> None:
    """Check each instruction of `chain` against the method's `n` values, its operators and its
    `delegates`, collecting the kernel and delegate calls."""
    for ins in chain.tables(2, "instructions"):
        tag, args = ins.union(0, 1, "instr_args")
        if args is None:
            continue
        if tag == _KERNEL_CALL:
            op = args.integer(0, "i", "op_index")
            if not 0 <= op < len(operators):
                raise args.buf.error(ErrorCode.ET_BAD_REFERENCE, f"operator index {op} is outside the "
                                     f"{len(operators)} operators", args.pos, f"{args.field}.op_index")
            kernel_calls.append(KernelCall(operators[op], _indices(args, 1, "args", n)))
        elif tag == _DELEGATE_CALL:
            d = args.integer(0, "i", "delegate_index")
            if not 0 <= d < delegates:
                raise args.buf.error(ErrorCode.ET_BAD_REFERENCE, f"delegate index {d} is outside the "
                                     f"{delegates} delegates", args.pos, f"{args.field}.delegate_index")
            delegate_calls.append((d, _indices(args, 1, "args", n)))
        else:
            for slot, name in _VALUE_FIELDS.get(tag, ()):
                _in_values(args, args.integer(slot, "i", name), name, n)


def _method(
    plan: Table,
    segments: tuple[Segment, ...],
    inline: list[tuple[Table, tuple[int, int] | None]],
    source: str | None,
) -> MethodPlan:
    name = plan.required_string(0, "name")  # ExecuTorch finds a method by its name
    kinds, tensors = _values(plan)
    n = len(kinds)
    operators = tuple(
        (op.string(0, "name") or "") + ("." + ov if (ov := op.string(1, "overload")) else "")
        for op in plan.tables(6, "operators")
    )
    delegates = tuple(_delegate(i, d, segments, inline, source) for i, d in enumerate(plan.tables(7, "delegates")))
    kernel_calls: list[KernelCall] = []
    delegate_calls: list[tuple[int, tuple[int, ...]]] = []
    for chain in plan.tables(5, "chains"):
        _indices(chain, 0, "inputs", n)
        _indices(chain, 1, "outputs", n)
        _instructions(chain, n, operators, len(delegates), kernel_calls, delegate_calls)
    return MethodPlan(
        name=name,
        value_kinds=tuple(kinds),
        tensors=tensors,
        inputs=_indices(plan, 3, "inputs", n),
        outputs=_indices(plan, 4, "outputs", n),
        operators=operators,
        kernel_calls=tuple(kernel_calls),
        delegate_calls=tuple(delegate_calls),
        delegates=delegates,
        non_const_buffer_sizes=plan.scalars(8, "q", "non_const_buffer_sizes"),
    )


def _delegate(
    i: int,
    d: Table,
    segments: tuple[Segment, ...],
    inline: list[tuple[Table, tuple[int, int] | None]],
    source: str | None,
) -> Delegate:
    # ExecuTorch's BackendDelegate::Init reads the id without looking (SIGSEGV when absent), and
    # no backend is registered under the empty id.
    backend_id = d.required_string(0, "id")
    if not backend_id:
        raise d.buf.error(ErrorCode.ET_BAD_VALUE, "a delegate's backend id is empty", d.pos, f"{d.field}.id")
    ref = d.required_table(1, "processed")
    location = enum_name(_DATA_LOCATION, ref.integer(0, "b", "location"), ref.buf, ref.pos, ref.field + ".location")
    index = ref.integer(1, "I", "index")
    if location == "inline":
        if index >= len(inline):
            raise ref.buf.error(ErrorCode.ET_BAD_REFERENCE, f"inline data index {index} is past the {len(inline)} "
                                "entries of backend_delegate_data", ref.pos, ref.field + ".index")
        rng = inline[index][1]
        offset, size = (0, 0) if rng is None else rng
    else:
        seg = _segment(segments, index, ref, "index")
        offset, size = seg.offset, seg.size
    specs = []
    # ExecuTorch's Method::init dereferences each compile spec's key and value without looking
    # (SIGSEGV when one is absent), so both are required here.
    for cs in d.tables(2, "compile_specs"):
        key = cs.required_string(0, "key")
        rng = cs.byte_range(1, "value")
        if rng is None:
            raise cs.buf.error(ErrorCode.ET_BAD_VALUE, "a required byte vector is absent", cs.pos, f"{cs.field}.value")
        specs.append((key, bytes(cs.buf.data[rng[0] : rng[0] + rng[1]])))
    return Delegate(i, backend_id, location, index, offset, size, tuple(specs))
