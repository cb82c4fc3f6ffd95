"""fatpte.ops.mutants and fatpte.executorch.constants without a runner: which constant tensors a
real program holds and where, the bytes a weight mutant changes (and only those), and the output
mutants' arithmetic."""

from __future__ import annotations

import math
import struct

import pytest

from fatpte.executorch.constants import ConstantTensor, constant_tensors, delegate_constants
from fatpte.executorch.pte import read_program
from fatpte.ops import mutants as M
from fatpte.value.tensors import decode_floats
from tests.paths import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "executorch"


def test_the_constant_tensors_of_the_portable_mlp() -> None:
    data = (FIXTURES / "mlp_portable.pte").read_bytes()
    found = constant_tensors(data)
    assert [(t.name, t.dtype, t.shape) for t in found] == [
        ("constant[1]", "float32", (8, 4)), ("constant[2]", "float32", (8,)),
        ("constant[3]", "float32", (3, 8)), ("constant[4]", "float32", (3,))]
    program = read_program(data)
    segment = program.segments[program.constant_segment[0]]  # type: ignore[index]
    assert all(segment.offset <= t.offset and t.offset + t.size <= segment.offset + segment.size for t in found)
    assert sum(t.size for t in found) == 4 * (32 + 8 + 24 + 3)


def test_planned_buffers_and_delegated_weights_are_not_constants() -> None:
    # kvcache's cache is a planned (mutable) buffer with a data_buffer_idx; XNNPACK holds its weights.
    kv = constant_tensors((FIXTURES / "kvcache_portable_default.pte").read_bytes())
    assert [t.shape for t in kv] == [(4, 4), (4,)]
    assert constant_tensors((FIXTURES / "mlp_xnnpack.pte").read_bytes()) == []


@pytest.mark.parametrize(("file", "dtype"), [("mlp_xnnpack.pte", "float32"), ("mlp_xnnpack_fp16.pte", "float16")])
def test_the_float_weights_of_an_xnnpack_delegate(file: str, dtype: str) -> None:
    data = (FIXTURES / file).read_bytes()
    found = delegate_constants(data)
    assert [(t.dtype, t.shape) for t in found] == [(dtype, (8, 4)), (dtype, (8,)), (dtype, (3, 8)), (dtype, (3,))]
    program = read_program(data)
    # Each is one of the program's named data (the XNNPACK constant's named key), whole.
    assert sorted((t.offset, t.size) for t in found) == sorted((n.offset, n.size) for n in program.named_data)
    assert delegate_constants((FIXTURES / "mlp_portable.pte").read_bytes()) == []


def test_an_int8_xnnpack_delegate_gives_its_weights_per_channel_scales() -> None:
    # The int8 bytes are left alone; the float32 scales of the two qcint8 weights (one per output
    # channel) are what moves them. The qcint32 biases' stated scales are not listed: XNNPACK does
    # not read them (a mutant of them survived every call).
    data = (FIXTURES / "mlp_xnnpack_int8.pte").read_bytes()
    found = delegate_constants(data)
    assert [(t.name, t.dtype, t.shape) for t in found] == [("delegate 0 value 2 scales", "float32", (8,)),
                                                          ("delegate 0 value 5 scales", "float32", (3,))]
    named = {(n.offset, n.size): n.key for n in read_program(data).named_data}
    assert all(named[(t.offset, t.size)].startswith("scale_") for t in found)


def test_a_weight_mutant_moves_every_element_of_one_tensor_and_nothing_else() -> None:
    data = (FIXTURES / "mlp_portable.pte").read_bytes()
    targets = M.weight_targets(data)
    assert [t.shape for t in targets] == [(8, 4), (3, 8), (8,), (3,)][: M.WEIGHT_MUTANTS]  # largest first
    tensor = targets[0]
    mutant, changed = M.weight_mutant(data, tensor, 0.01)
    assert mutant.kind == M.WEIGHT and tensor.name in mutant.name
    assert len(changed) == len(data)
    assert changed[: tensor.offset] == data[: tensor.offset]
    assert changed[tensor.offset + tensor.size :] == data[tensor.offset + tensor.size :]
    before = decode_floats("float32", data[tensor.offset : tensor.offset + tensor.size])
    after = decode_floats("float32", changed[tensor.offset : tensor.offset + tensor.size])
    step = 0.01 * max(abs(v) for v in before)
    for i, (b, a) in enumerate(zip(before, after)):
        assert a - b == pytest.approx(step if i % 2 == 0 else -step, rel=1e-4)
    read_program(changed)  # still a program


def test_a_tensor_of_zeros_moves_by_the_step_itself() -> None:
    tensor = ConstantTensor("t", "float32", (2,), 8, 8)
    _, changed = M.weight_mutant(bytes(16), tensor, 0.5)
    assert struct.unpack_from("<2f", changed, 8) == (0.5, -0.5)


@pytest.mark.parametrize(("rtol", "step"), [(0.0, M.MIN_STEP), (1e-5, M.MIN_STEP), (0.04, 0.4), (0.5, 1.0)])
def test_the_weight_step_follows_the_tolerance(rtol: float, step: float) -> None:
    assert M.weight_step(rtol) == pytest.approx(step)


def f32(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def test_the_swap_mutant() -> None:
    # 2.0 (at 2) and -1.0 (at 1) exchanged against a golden output equal to the real one.
    assert M.swap_difference("float32", f32(0.5, -1.0, 2.0), f32(0.5, -1.0, 2.0), 0.0) == 3.0
    assert M.swap_difference("float32", f32(1.0, 1.0), f32(1.0, 1.0), 0.0) is None  # nothing to exchange
    assert M.swap_difference("float32", f32(3.0), f32(3.0), 0.0) is None
    # A NaN stays where it is; the elements left in place count with the output's own difference.
    assert M.swap_difference("float32", f32(math.nan, 1.0, 2.0), f32(math.nan, 1.0, 2.0), 0.25) == 1.0
    assert M.swap_difference("float32", f32(0.0, 1e-9), f32(0.0, 1e-9), 0.5) == 0.5


def test_the_swap_mutant_reads_its_output_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "CHUNK", 3)
    values = [0.1, 0.2, 0.3, -4.0, 0.5, 0.6, 7.0, 0.8]
    assert M.swap_difference("float32", f32(*values), f32(*values), 0.0) == pytest.approx(11.0)
    assert M.scale_difference("float32", f32(*values), f32(*values), 2.0) == pytest.approx(7.0)


def test_the_scale_mutant() -> None:
    assert M.scale_difference("float32", f32(1.0, -2.0), f32(1.0, -2.0), 1.5) == 1.0
    assert M.scale_difference("float32", f32(0.0, 0.0), f32(0.0, 0.0), 1.1) is None  # zeros scale to zeros
    assert M.output_scale(1e-3) == pytest.approx(1.01) and M.output_scale(0.0) == 1 + M.MIN_STEP


def test_largest_difference_counts_as_the_golden_rule() -> None:
    assert M.largest_difference([1.0, 2.0], [1.0, 2.5]) == 0.5
    assert M.largest_difference([math.nan], [math.nan]) == 0.0
    assert M.largest_difference([math.inf], [1.0]) == math.inf
    assert M.largest_difference([math.inf], [math.inf]) == 0.0


def test_a_huge_tensor_moves_its_first_elements_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(M, "MAX_MOVED", 2)
    tensor = ConstantTensor("t", "float32", (4,), 0, 16)
    original = struct.pack("<4f", 1.0, 1.0, 1.0, 1.0)
    _, changed = M.weight_mutant(original, tensor, 0.5)
    assert struct.unpack("<4f", changed) == (1.5, 0.5, 1.0, 1.0)


@pytest.mark.parametrize("file", ["mlp_portable.pte", "mlp_xnnpack.pte"])
def test_any_damaged_program_gives_constants_inside_it_or_a_fatpte_error(file: str) -> None:
    from fatpte.errors import FatpteError

    data = (FIXTURES / file).read_bytes()
    outcomes = set()
    for at in range(0, len(data), 3):
        damaged = bytearray(data)
        damaged[at] ^= 0xFF
        try:
            found = constant_tensors(bytes(damaged)) + delegate_constants(bytes(damaged))
        except FatpteError:
            outcomes.add("refused")
            continue
        outcomes.add("read")
        assert all(0 <= t.offset and t.offset + t.size <= len(damaged) for t in found), at
    assert outcomes == {"read", "refused"}
