"""The constant tensors a .pte holds in its constant segment (program.fbs `constant_segment`):
where each one's bytes lie in the file, with its dtype and shape. What `fatpte check --mutants`
perturbs to make a known-wrong copy of a program (fatpte.ops.mutants).

A tensor is constant when it has a `data_buffer_idx` above 0, no `allocation_info` (a planned
tensor's index names a mutable segment instead) and no external location (its bytes are then in a
.ptd or the container's named data, not in the program). Index i is bytes
`offsets[i]` .. `offsets[i] + nbytes` of the constant segment; each range is checked against the
segment before it is returned.

`delegate_constants` finds the float weights of XNNPACK delegates the same way: each tensor value
of the XN01 graph (xnnpack.py; XNNTensorValue: datatype, dims, constant_buffer_idx) whose constant
lies in the payload's constant data or, by named key, in the program's own named data (a program
packed with its named data moved into the container has none here). Quantized tensors are left
out: their bytes are integers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.flatbuf import Buffer
from fatpte.executorch.pte import IDENTIFIER, Delegate, Program, read_program
from fatpte.executorch.xnnpack import FLATBUFFER_IDENTIFIER, read_xnnpack
from fatpte.executorch.xnnpack import MAGIC as XNN_MAGIC
from fatpte.value.dtypes import element_size


@dataclass(frozen=True, slots=True)
class ConstantTensor:
    """One constant tensor: its name (the fully qualified name when the program states one, else
    `constant[i]`), dtype, shape, and where its bytes are in the file."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int  # absolute in the file
    size: int

    @property
    def count(self) -> int:
        return math.prod(self.shape)


def constant_tensors(data: bytes | memoryview, *, source: str | None = None) -> list[ConstantTensor]:
    """Every constant tensor of the program `data`, once each (methods may share one), in buffer
    order; empty when the program has no constant segment."""
    program = read_program(data, source=source)
    if program.constant_segment is None or program.constant_segment[1] == 0:
        return []
    segment = program.segments[program.constant_segment[0]]
    size = len(data) if program.header is None else program.header.program_size
    root = Buffer(memoryview(data)[:size], source=source).root(IDENTIFIER, "ExecuTorch program (.pte)")
    table = root.required_table(5, "constant_segment")
    offsets = table.scalars(1, "Q", "offsets")
    found: dict[int, ConstantTensor] = {}
    for method in program.methods:
        for t in method.tensors.values():
            index = t.data_buffer_idx
            if index == 0 or t.memory_planned or t.external or index in found:
                continue
            nbytes = math.prod(t.shape) * (element_size(t.dtype) or 0)
            if index >= len(offsets) or nbytes > segment.size or offsets[index] > segment.size - nbytes:
                raise FatpteError(ErrorCode.ET_SEGMENT_OUT_OF_BOUNDS, f"constant buffer {index} of {nbytes} bytes is "
                                  f"outside the constant segment ({segment.size:#x} bytes, {len(offsets)} buffers)",
                                  source=source, field=f"constant_segment.offsets[{index}]")
            found[index] = ConstantTensor(t.fqn or f"constant[{index}]", t.dtype, t.shape,
                                          segment.offset + offsets[index], nbytes)
    return [found[i] for i in sorted(found)]


# XNNDatatype (backends/xnnpack/serialization/schema.fbs) of the float tensors, by dtype.
_XNN_FLOATS: dict[int, str] = {1: "float32", 2: "float16"}
_XNN_TENSOR = 1  # XValueUnion's XNNTensorValue (2 is the quantized one)


def delegate_constants(data: bytes | memoryview, *, source: str | None = None) -> list[ConstantTensor]:
    """The float constant tensors of every XNNPACK delegate of the program `data`, once each."""
    program = read_program(data, source=source)
    found: dict[int, ConstantTensor] = {}
    for method in program.methods:
        for d in method.delegates:
            if bytes(program.payload(d)[4:8]) in (XNN_MAGIC, FLATBUFFER_IDENTIFIER):  # by its bytes, not its id
                for t in _xnnpack_floats(program, d, source):
                    found.setdefault(t.offset, t)
    return [found[k] for k in sorted(found)]


def _xnnpack_floats(program: Program, d: Delegate, source: str | None) -> list[ConstantTensor]:
    payload = program.payload(d)
    graph = read_xnnpack(payload, source=source, base=d.offset)
    start = 0 if graph.header is None else graph.header.flatbuffer_offset
    end = len(payload) if graph.header is None else start + graph.header.flatbuffer_size
    root = Buffer(payload[start:end], source=source, base=d.offset + start).root(FLATBUFFER_IDENTIFIER,
                                                                                 "XNNPACK graph (XN01)")
    named = {n.key: n for n in program.named_data}
    out = []
    for i, value in enumerate(root.tables(2, "xvalues")):
        tag, tensor = value.union(0, 1, "xvalue_union")
        if tag != _XNN_TENSOR or tensor is None:
            continue
        dtype = _XNN_FLOATS.get(tensor.integer(0, "h", "datatype"))
        index = tensor.integer(3, "I", "constant_buffer_idx")
        if dtype is None or index == 0 or index >= len(graph.constants):
            continue
        shape = tensor.scalars(2, "I", "dims")
        nbytes = math.prod(shape) * (element_size(dtype) or 0)
        const = graph.constants[index]
        if const.named_key is not None:
            ref = named.get(const.named_key)
            if ref is None:  # moved into the container's named data: not in this program
                continue
            at, size = ref.offset, ref.size
        else:
            assert graph.header is not None and const.offset is not None  # read_xnnpack: in the constant data
            at, size = d.offset + graph.header.constant_data_offset + const.offset, const.size
        if nbytes == 0 or nbytes > size:
            continue
        out.append(ConstantTensor(f"delegate {d.index} value {i}", dtype, shape, at, nbytes))
    return out
