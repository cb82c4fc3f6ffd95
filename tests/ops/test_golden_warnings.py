"""fatpte.ops.golden_warnings: golden calls that cannot discriminate (E0712), each case once firing
and once not; `fatpte.pack(golden=...)` warns as `fatpte pack --golden` does. The tolerance
warning, which needs entries that ran, is also shown by `fatpte check` in
tests/loader/test_check_mutants.py."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import fatpte
from fatpte.errors import ErrorCode, FatpteWarning
from fatpte.ops import check as C
from fatpte.ops import golden_warnings as W
from fatpte.ops.golden import DEFAULT_TOLERANCE
from fatpte.ops.specialization import Specialization
from fatpte.value.tensors import encode
from tests.paths import ROOT

MLP = ROOT / "tests" / "fixtures" / "executorch" / "mlp_portable.pte"


def view(inputs: list[list[float]], outputs: tuple[str, ...] = ("out",), method: str = "forward") -> W.CallView:
    return W.CallView(method, tuple(("float32", encode("float32", v)) for v in inputs), outputs)


def caught(action: Any) -> list[FatpteWarning]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        action()
    return [w.message for w in seen if isinstance(w.message, FatpteWarning)]


def test_constant_and_zero_inputs() -> None:
    calls = [view([[0.0, 0.0, 0.0]]), view([[0.5, 0.5]]), view([[0.1, -0.2]]), view([[3.0]])]
    assert W.constant_inputs(calls) == ["golden call 0 input 0 is all zeros",
                                        "golden call 1 input 0 is constant (every element 0.5)"]
    assert W.constant_inputs([view([[0.1, -0.2], [1.0, 2.0]])]) == []
    ints = W.CallView("forward", (("int64", encode("int64", [0, 0, 0])),), ("o",))
    assert W.constant_inputs([ints]) == []  # an index or a mask may well be constant


def test_an_output_the_same_in_every_call() -> None:
    same = [view([[0.1, 0.2]], ("a",)), view([[0.3, 0.4]], ("a",))]
    assert W.unchanging_outputs(same) == ["output 0 of method 'forward' is the same tensor in all 2 calls"]
    assert W.unchanging_outputs([view([[0.1, 0.2]], ("a",)), view([[0.3, 0.4]], ("b",))]) == []
    assert W.unchanging_outputs([view([[0.1, 0.2]], ("a",))]) == []  # one call: nothing to compare
    other = [view([[0.1, 0.2]], ("a",)), view([[0.3, 0.4]], ("a",), method="step")]
    assert W.unchanging_outputs(other) == []


def entry(name: str, atol: float, rtol: float) -> C.EntryCheck:
    e = C.EntryCheck(name, "xnnpack", C.AGREES, runner="test")
    bound = atol + rtol * 0.3
    e.outputs = [C.OutputCheck(0, 0, "forward", "k", "float32", (1, 3), 0.0, 0.0, 0.3, atol, rtol, bound, True, None)]
    return e


def test_a_widened_tolerance_wider_than_the_entries_differ() -> None:
    pair = C.PairCheck("fp32", "int8", 0, 0, 1e-3, 3e-3, 1.0, True)
    fired = caught(lambda: W.wide_tolerances([entry("fp32", 1e-5, 1e-5), entry("int8", 1e-5, 0.04)], [pair],
                                             DEFAULT_TOLERANCE))
    assert [(w.code, w.message.split(":")[0]) for w in fired] == [(ErrorCode.GOLDEN_WEAK, "entry int8")]
    assert "differs from the other entries by at most 0.001" in fired[0].message
    # The same tolerance where the entries differ by more than it admits (they would then fail the
    # pair check too), and a default tolerance, say nothing.
    wide_pair = C.PairCheck("fp32", "int8", 0, 0, 0.05, 0.2, 1.0, True)
    assert caught(lambda: W.wide_tolerances([entry("int8", 1e-5, 0.04)], [wide_pair], DEFAULT_TOLERANCE)) == []
    assert caught(lambda: W.wide_tolerances([entry("fp32", 1e-5, 1e-5)], [pair], DEFAULT_TOLERANCE)) == []


def program() -> Specialization:
    from fatpte.ops.program_entry import program_facts

    data = MLP.read_bytes()
    return Specialization("portable", data, name="portable", signature=program_facts(data).signature)


def calls(inputs: list[list[float]], outputs: list[list[float]]) -> list[dict[str, Any]]:
    return [{"inputs": [{"dtype": "float32", "shape": [1, 4], "values": i}],
             "outputs": [{"dtype": "float32", "shape": [1, 3], "values": o}]} for i, o in zip(inputs, outputs)]


@pytest.mark.parametrize(("inputs", "outputs", "said"), [
    ([[0.0] * 4, [0.0] * 4], [[0.1, 0.2, 0.3]] * 2, ["golden call 0 input 0 is all zeros", "the same tensor in all 2"]),
    ([[0.1, -0.5, 0.3, 0.9], [0.7, 0.2, -0.4, 0.0]], [[0.1, 0.2, 0.3], [0.3, 0.2, 0.1]], []),
])
def test_pack_warns_of_calls_that_cannot_discriminate(tmp_path: Path, inputs: list[list[float]],
                                                      outputs: list[list[float]], said: list[str]) -> None:
    fired = caught(lambda: fatpte.pack([program()], tmp_path / "g.nfat", golden=calls(inputs, outputs)))
    weak = [w for w in fired if w.code is ErrorCode.GOLDEN_WEAK]
    assert all(any(s in w.message for w in weak) for s in said) and bool(weak) == bool(said), weak
