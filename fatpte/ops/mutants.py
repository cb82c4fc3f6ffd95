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
  mutant is no mutant at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from fatpte.executorch.constants import ConstantTensor, constant_tensors, delegate_constants
from fatpte.value.tensors import decode_floats, encode

WEIGHT_MUTANTS: Final = 4  # the largest float constant tensors perturbed, one mutant each
MIN_STEP: Final = 1e-2  # the smallest relative perturbation of a weight
MAX_MOVED: Final = 1 << 20  # elements of one tensor a weight mutant moves, at most
FLOAT_DTYPES: Final = ("float32", "float16", "bfloat16", "float64")
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


def swapped(values: Sequence[float]) -> list[float] | None:
    """`values` with its largest and smallest element exchanged (the first of each); None when
    they are equal (no swap changes the output)."""
    finite = [(v, i) for i, v in enumerate(values) if math.isfinite(v)]
    if len(finite) < 2:
        return None
    high, low = max(finite)[1], min(finite)[1]
    if values[high] == values[low]:
        return None
    out = list(values)
    out[high], out[low] = out[low], out[high]
    return out


def scaled(values: Sequence[float], factor: float) -> list[float] | None:
    """`values` times `factor`; None when that changes nothing (every element zero or not finite)."""
    if not any(v != 0 and math.isfinite(v) for v in values):
        return None
    return [v * factor for v in values]


def largest_difference(got: Sequence[float], want: Sequence[float]) -> float:
    """max|got - want| as specs/nfat-manifest.md 11.1 counts it (two NaNs or equal infinities: 0; a
    NaN or infinity against another value: infinity), over two sequences of one length."""
    worst = 0.0
    for x, y in zip(got, want):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        worst = max(worst, abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf)
    return worst
