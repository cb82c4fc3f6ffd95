"""Reader of the ExecuTorch native backend's delegate payload: a bare flatbuffer, identifier NPTG.

Schema: backends/native/serialization/native_graph.fbs (namespace native_backend). What fatpte
needs from it is the interface of each method: the graph's user inputs and outputs with dtype
and shape, the mutable buffers, and the named-data keys its constants are loaded from. Each graph
output has an OutputSpec whose kind says whether it is a USER_OUTPUT or a BUFFER_MUTATION (a
write-back of state); only USER_OUTPUT ones are user outputs, the others describe buffers.
Field slots below are schema positions (a union takes two).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fatpte.errors import ErrorCode
from fatpte.executorch.flatbuf import Buffer, Table, enum_name
from fatpte.value.dtypes import NATIVE_SCALAR_TYPES

IDENTIFIER = b"NPTG"
_INPUT_KINDS = {0: "user_input", 1: "parameter", 2: "buffer", 3: "constant_tensor"}
_OUTPUT_KINDS = {0: "user_output", 1: "buffer_mutation", 2: "user_input_mutation"}


@dataclass(frozen=True, slots=True)
class TensorSpec:
    name: str
    dtype: str
    shape: tuple[int | str, ...]  # a str is a symbolic dimension ("s0<=16")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "dtype": self.dtype, "shape": list(self.shape)}


@dataclass(frozen=True, slots=True)
class Constant:
    name: str
    data_key: str
    kind: str
    mutated: bool
    dtype: str
    shape: tuple[int | str, ...]


@dataclass(frozen=True, slots=True)
class OutputSpec:
    name: str
    kind: str
    target: str | None


@dataclass(frozen=True, slots=True)
class MutableBuffer:
    """A mutable buffer: its graph-side name, its fully qualified name, and its tensor type."""

    name: str
    fqn: str
    dtype: str | None
    shape: tuple[int | str, ...] | None


@dataclass(frozen=True, slots=True)
class NativeMethod:
    name: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]  # user outputs only
    output_specs: tuple[OutputSpec, ...]  # every graph output, by kind
    buffers: tuple[MutableBuffer, ...]
    constants: tuple[Constant, ...]
    node_count: int

    @property
    def named_data_keys(self) -> tuple[str, ...]:
        return tuple(sorted({c.data_key for c in self.constants}))


@dataclass(frozen=True, slots=True)
class NativeProgram:
    version: str | None
    methods: tuple[NativeMethod, ...]

    @property
    def named_data_keys(self) -> tuple[str, ...]:
        return tuple(sorted({k for m in self.methods for k in m.named_data_keys}))


def read_nptg(data: bytes | memoryview, *, source: str | None = None, base: int = 0) -> NativeProgram:
    """Decode an NPTG payload; `base` is its offset in the file named `source`, for messages."""
    buf = Buffer(data, source=source, base=base)
    root = buf.root(IDENTIFIER, "native backend graph (NPTG)")
    version = root.string(0, "version")
    if root.vector(1, 4, "methods") is None:
        raise buf.error(ErrorCode.ET_BAD_VALUE, "the required methods vector is absent", root.pos, "root.methods")
    methods = root.tables(1, "methods")
    return NativeProgram(version, tuple(_method(m) for m in methods))


def _dims(meta: Table) -> tuple[int | str, ...]:
    out: list[int | str] = []
    for i, d in enumerate(meta.tables(1, "sizes")):
        lo = d.integer(0, "q", "min")
        hi = d.integer(1, "q", "max", -1)
        if lo == hi:
            out.append(lo)
        else:
            out.append(f"s{i}" + ("" if hi < 0 else f"<={hi}"))
    return tuple(out)


def _meta(meta: Table) -> tuple[str, tuple[int | str, ...]]:
    dtype = enum_name(NATIVE_SCALAR_TYPES, meta.integer(0, "b", "dtype"), meta.buf, meta.pos, meta.field + ".dtype")
    return dtype, _dims(meta)


def _method(m: Table) -> NativeMethod:
    name = m.required_string(0, "name")
    graph = m.required_table(1, "graph")
    if graph.vector(0, 4, "nodes") is None:
        raise graph.buf.error(ErrorCode.ET_BAD_VALUE, "the required nodes vector is absent", graph.pos,
                              graph.field + ".nodes")
    node_count = graph.vector(0, 4, "nodes")
    values: dict[str, tuple[str, tuple[int | str, ...]]] = {}
    for tv in graph.tables(3, "tensor_values"):
        values[tv.required_string(0, "name")] = _meta(tv.required_table(1, "meta"))

    def spec(value_name: str, field: str) -> TensorSpec:
        if value_name not in values:
            raise graph.buf.error(ErrorCode.ET_BAD_REFERENCE, f"graph value {value_name!r} has no tensor_values "
                                  "entry", graph.pos, field)
        dtype, shape = values[value_name]
        return TensorSpec(value_name, dtype, shape)

    inputs = tuple(spec(n, f"{graph.field}.inputs[{i}]") for i, n in enumerate(graph.strings(1, "inputs")))
    out_names = graph.strings(2, "outputs")
    specs = []
    for s in m.tables(3, "output_specs"):
        kind = enum_name(_OUTPUT_KINDS, s.integer(1, "b", "kind"), s.buf, s.pos, s.field + ".kind")
        specs.append(OutputSpec(s.required_string(0, "name"), kind, s.string(2, "target")))
    by_name = {s.name: s for s in specs}
    outputs = tuple(
        spec(n, f"{graph.field}.outputs[{i}]")
        for i, n in enumerate(out_names)
        if n not in by_name or by_name[n].kind == "user_output"
    )
    constants = []
    for c in m.tables(2, "constants"):
        dtype, shape = _meta(c.required_table(2, "meta"))
        kind = enum_name(_INPUT_KINDS, c.integer(3, "b", "kind"), c.buf, c.pos, c.field + ".kind")
        constants.append(Constant(c.required_string(0, "name"), c.required_string(1, "data_key"), kind,
                                  bool(c.integer(4, "B", "mutated")), dtype, shape))
    # State is declared two ways: a BUFFER_MUTATION output names the buffer it writes back
    # (target = the buffer's fully qualified name; its type is the written value's), and
    # mutable_buffers lists buffers by graph name and fqn. Both describe buffers, keyed by fqn.
    by_const = {c.name: c for c in constants}
    buffers: dict[str, MutableBuffer] = {}
    for out_spec in specs:
        if out_spec.kind == "buffer_mutation":
            fqn = out_spec.target or out_spec.name
            typed = values.get(out_spec.name)
            buffers.setdefault(fqn, MutableBuffer(out_spec.name, fqn, *(typed or (None, None))))
    for b in m.tables(4, "mutable_buffers"):
        bname = b.required_string(0, "name")
        fqn = b.required_string(1, "fqn")
        const = by_const.get(bname)
        typed = (const.dtype, const.shape) if const is not None else values.get(bname)
        buffers.setdefault(fqn, MutableBuffer(bname, fqn, *(typed or (None, None))))
    return NativeMethod(name, inputs, outputs, tuple(specs), tuple(buffers.values()), tuple(constants),
                        0 if node_count is None else node_count[1])
