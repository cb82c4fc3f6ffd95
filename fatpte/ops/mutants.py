"""Known-wrong variants of an entry ("mutants"), derived without torch, that an entry's golden calls
must reject: what `fatpte check --mutants` runs (fatpte.ops.golden_adequacy; docs/golden.md,
"Adequacy").

- A weight mutant is a copy of an ExecuTorch program with one constant tensor perturbed, one of
  its constant segment, a float weight of an XNNPACK delegate, or the per-channel scales of an
  XNNPACK weight quantized per channel (fatpte.executorch.constants): element i gets `+ step * m` for even i and
  `- step * m` for odd i, `m` the tensor's largest magnitude (1 for a tensor of zeros), `step`
  ten times the entry's widest relative tolerance, at least MIN_STEP and at most 1. Every element
  moves, so the mutant computes another function; the alternating sign is what constant inputs
  cannot see (their products with the perturbation cancel). The WEIGHT_MUTANTS largest float
  tensors are perturbed, one mutant each; of a tensor past MAX_MOVED elements only the first
  MAX_MOVED move (still a wrong program, and the work bounded whatever the file says).
- Output mutants change an entry's real outputs (saved by its check) before they are compared
  with the golden tensors: `swap` exchanges the largest and the smallest element of each output,
  `scale` multiplies each output by `1 + 10 * rtol`, rtol its own relative tolerance (`1 + MIN_STEP`
  for an output compared exactly).
  An output whose elements are all equal has no swap, one of zeros no scale: on such outputs the
  mutant is no mutant at all. Outputs are read CHUNK elements at a time, never whole.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from fatpte.executorch.constants import ConstantTensor, constant_tensors, delegate_constants
from fatpte.value.dtypes import FLOAT_DTYPES, element_size
from fatpte.value.tensors import decode_floats, encode

BytesLike = bytes | bytearray | memoryview

WEIGHT_MUTANTS: Final = 4  # the largest float constant tensors perturbed, one mutant each
MIN_STEP: Final = 1e-2  # the smallest relative perturbation of a weight
MAX_MOVED: Final = 1 << 20  # elements of one tensor a weight mutant moves, at most
CHUNK: Final = 1 << 16  # elements of an output decoded at a time by the output mutants
# Kinds of mutant.
WEIGHT: Final = "weight"
SWAP: Final = "swap"
SCALE: Final = "scale"


@dataclass(frozen=True, slots=True)
class Mutant:
    """One known-wrong variant of an entry: its kind, a name unique within the entry, and what it
    changes, in words."""

    kind: str
    name: str
    description: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "description": self.description}


def weight_step(rtol: float) -> float:
    """The relative perturbation of a weight for an entry whose widest relative tolerance is `rtol`."""
    return min(1.0, max(MIN_STEP, 10 * rtol))


def output_scale(rtol: float) -> float:
    """The factor the `scale` mutant multiplies an output by, for its tolerance `rtol`."""
    return 1 + 10 * rtol if rtol > 0 else 1 + MIN_STEP


def weight_targets(program: bytes | memoryview, *, source: str | None = None) -> list[ConstantTensor]:
    """The constant tensors a weight mutant perturbs: float ones with elements, the program's own
    and its XNNPACK delegates', largest first (ties in file order), at most WEIGHT_MUTANTS."""
    found = [*constant_tensors(program, source=source), *delegate_constants(program, source=source)]
    floats = [t for t in found if t.dtype in FLOAT_DTYPES and t.count > 0]
    return sorted(floats, key=lambda t: -t.count)[:WEIGHT_MUTANTS]


def weight_mutant(program: bytes | memoryview, tensor: ConstantTensor, step: float) -> tuple[Mutant, bytes]:
    """A copy of `program` with `tensor` perturbed by `step` (the module's docstring says how)."""
    data = bytearray(program)
    moved_bytes = min(tensor.count, MAX_MOVED) * (tensor.size // max(tensor.count, 1))
    end = tensor.offset + moved_bytes
    values = decode_floats(tensor.dtype, bytes(data[tensor.offset : end]))
    finite = [abs(v) for v in values if math.isfinite(v)]
    magnitude = max(finite, default=0.0) or 1.0
    delta = step * magnitude
    moved = [v + (delta if i % 2 == 0 else -delta) for i, v in enumerate(values)]
    data[tensor.offset : end] = encode(tensor.dtype, moved)
    shape = "[" + ", ".join(map(str, tensor.shape)) + "]"
    return (Mutant(WEIGHT, f"weight {tensor.name}",
                   f"{tensor.name} ({tensor.dtype}{shape}) moved by +/-{step:.3g} x its largest magnitude "
                   f"{magnitude:.3g}"), bytes(data))


def swap_difference(dtype: str, got: BytesLike, want: BytesLike, agreed: float) -> float | None:
    """max|mutated - want| of the swap mutant of an output (its bytes `got`, the golden tensor's
    `want`, `agreed` the output's own max|got - want|): its largest and smallest finite element
    exchanged (the first of each). The elements the swap leaves are no further than `agreed`, so
    the figure is `agreed` or the two moved elements' difference, whichever is larger (exact in its
    verdict against a bound `agreed` is within). None when the two are equal (no swap changes it)."""
    high: tuple[float, int] | None = None
    low: tuple[float, int] | None = None
    for start, values in _chunks(dtype, got):
        for i, v in enumerate(values, start):
            if math.isfinite(v):
                high = (v, i) if high is None or v > high[0] else high
                low = (v, i) if low is None or v < low[0] else low
    if high is None or low is None or high[0] == low[0]:
        return None
    moved = largest_difference([low[0], high[0]], [_element(dtype, want, high[1]), _element(dtype, want, low[1])])
    return max(agreed, moved)


def scale_difference(dtype: str, got: BytesLike, want: BytesLike, factor: float) -> float | None:
    """max|got * factor - want| over an output, CHUNK elements at a time; None when scaling
    changes nothing (every element zero or not finite)."""
    worst, changed = 0.0, False
    for (_, xs), (_, ys) in zip(_chunks(dtype, got), _chunks(dtype, want)):
        changed = changed or any(v != 0 and math.isfinite(v) for v in xs)
        worst = max(worst, largest_difference([v * factor for v in xs], ys))
    return worst if changed else None


def _chunks(dtype: str, data: BytesLike) -> Iterator[tuple[int, list[float]]]:
    """(index of the first, the elements) of `data`, CHUNK elements at a time."""
    size = element_size(dtype) or 1
    for at in range(0, len(data) - len(data) % size, CHUNK * size):
        yield at // size, decode_floats(dtype, bytes(data[at : at + CHUNK * size]))


def _element(dtype: str, data: BytesLike, index: int) -> float:
    size = element_size(dtype) or 1
    return decode_floats(dtype, bytes(data[index * size : (index + 1) * size]))[0]


def largest_difference(got: Sequence[float], want: Sequence[float]) -> float:
    """max|got - want| as specs/nfat-manifest.md 11.1 counts it (two NaNs or equal infinities: 0; a
    NaN or infinity against another value: infinity), over two sequences of one length."""
    worst = 0.0
    for x, y in zip(got, want):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        worst = max(worst, abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf)
    return worst
