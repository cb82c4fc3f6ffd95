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
packed with its named data moved into the container has none here). A quantized tensor's bytes are
integers: the float32 per-channel scales of a weight quantized per channel (PerChannelQuant's
scale buffer) are listed instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.flatbuf import Buffer, Table
from fatpte.executorch.pte import IDENTIFIER, Delegate, Program, read_program
from fatpte.executorch.xnnpack import FLATBUFFER_IDENTIFIER, XnnGraph, read_xnnpack
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
_XNN_TENSOR, _XNN_QUANTIZED = 1, 2  # XValueUnion: XNNTensorValue, XNNQuantizedTensorValue
_PER_CHANNEL = 1  # XNNQuantParams: PerChannelQuant {scale, channel_dim, scale_buffer_idx}
# qcint8 and qcint4: weights quantized per channel, whose scales XNNPACK reads at run time. A
# qcint32 bias's stated scales are not read (XNNPACK derives them from the input's and the
# weight's): moving them changes nothing, so they are no mutant (measured on mlp's int8 lowering).
_XNN_CHANNEL_WEIGHTS = frozenset({6, 8})


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
    out = []
    for i, value in enumerate(root.tables(2, "xvalues")):
        tag, table = value.union(0, 1, "xvalue_union")
        if tag == _XNN_TENSOR and table is not None:
            dtype = _XNN_FLOATS.get(table.integer(0, "h", "datatype"))
            found = None if dtype is None else _xnn_constant(program, d, graph, table.integer(3, "I", "constant_buffer_idx"),
                                                               f"delegate {d.index} value {i}", dtype,
                                                               table.scalars(2, "I", "dims"))
        elif tag == _XNN_QUANTIZED and table is not None:
            found = _xnn_scales(program, d, graph, table, f"delegate {d.index} value {i} scales")
        else:
            found = None
        if found is not None:
            out.append(found)
    return out


def _xnn_scales(program: Program, d: Delegate, graph: XnnGraph, table: Table, name: str) -> ConstantTensor | None:
    """The float32 per-channel scales of a quantized tensor (PerChannelQuant's scale_buffer_idx),
    one per channel of its channel_dim: moving them moves the weights they dequantize."""
    tensor = table.table(0, "tensor_value")
    kind, params = table.union(1, 2, "quant_params")
    if tensor is None or params is None or kind != _PER_CHANNEL or \
            tensor.integer(0, "h", "datatype") not in _XNN_CHANNEL_WEIGHTS:
        return None
    dims = tensor.scalars(2, "I", "dims")
    channel = params.integer(1, "i", "channel_dim")
    if not 0 <= channel < len(dims):
        return None
    return _xnn_constant(program, d, graph, params.integer(2, "I", "scale_buffer_idx"), name, "float32",
                         (dims[channel],))


def _xnn_constant(program: Program, d: Delegate, graph: XnnGraph, index: int, name: str, dtype: str,
                  shape: tuple[int, ...]) -> ConstantTensor | None:
    """Constant `index` of the graph as a tensor of `dtype` and `shape` in the program's bytes: in the
    payload's constant data, or by named key in the program's named data; None when it is neither
    (moved into the container's named data) or smaller than the tensor."""
    if index == 0 or index >= len(graph.constants):
        return None
    const = graph.constants[index]
    if const.named_key is not None:
        ref = next((n for n in program.named_data if n.key == const.named_key), None)
        if ref is None:
            return None
        at, size = ref.offset, ref.size
    else:
        assert graph.header is not None and const.offset is not None  # read_xnnpack: in the constant data
        at, size = d.offset + graph.header.constant_data_offset + const.offset, const.size
    nbytes = math.prod(shape) * (element_size(dtype) or 0)
    if nbytes == 0 or nbytes > size:
        return None
    return ConstantTensor(name, dtype, shape, at, nbytes)
