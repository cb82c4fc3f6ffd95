"""The constant tensors a .pte holds in its constant segment (program.fbs `constant_segment`):
where each one's bytes lie in the file, with its dtype and shape. What `fatpte check --mutants`
perturbs to make a known-wrong copy of a program (fatpte.ops.mutants).

A tensor is constant when it has a `data_buffer_idx` above 0, no `allocation_info` (a planned
tensor's index names a mutable segment instead) and no external location (its bytes are then in a
.ptd or the container's named data, not in the program). Index i is bytes
`offsets[i]` .. `offsets[i] + nbytes` of the constant segment; each range is checked against the
segment before it is returned. Weights a delegate holds (an XNNPACK payload, named data) are not
constant tensors of the program and are not listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.flatbuf import Buffer
from fatpte.executorch.pte import IDENTIFIER, read_program
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
