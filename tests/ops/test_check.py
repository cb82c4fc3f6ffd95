"""fatpte.ops.check without a runner: pairing the outputs of two entries (issue 42 C1).

The work of pairing is counted, not timed: every output an entry's list yields is one step, and
the steps must grow with the golden calls, not with their square (a search of the list per call
made 2 entries x 20,000 calls take minutes).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from fatpte.ops import check as C


class CountedOutputs(list[C.OutputCheck]):
    """An entry's outputs that count every item iterated over."""

    steps = 0

    def __iter__(self) -> Iterator[C.OutputCheck]:
        for item in super().__iter__():
            CountedOutputs.steps += 1
            yield item


def entry(name: str, calls: int, folder: Path) -> C.EntryCheck:
    e = C.EntryCheck(name, "portable", C.AGREES, runner="test")
    outputs = CountedOutputs()
    folder.mkdir()
    for k in range(calls):
        outputs.append(C.OutputCheck(k, 0, "forward", f"key{k}", "float32", (1,), 0.0, 0.0, 1.0, 1e-5, 1e-5,
                                     2e-5, True, None))
        saved = folder / f"{k}.bin"
        saved.write_bytes(b"\0\0\x80\x3f")  # 1.0f
        e.files[(k, 0)] = saved
        e.inputs[k] = ("forward", (f"in{k}",))
    e.outputs = outputs
    return e


def pairing_steps(calls: int, tmp_path: Path) -> int:
    ran = [entry("a", calls, tmp_path / f"a{calls}"), entry("b", calls, tmp_path / f"b{calls}")]
    CountedOutputs.steps = 0
    pairs = C._pairs(ran)
    assert len(pairs) == calls and all(p.passed and p.max_abs == 0 for p in pairs)
    return CountedOutputs.steps


def test_pairing_two_entries_is_linear_in_the_golden_calls(tmp_path: Path) -> None:
    steps = {n: pairing_steps(n, tmp_path) for n in (100, 400, 1600)}
    # One pass over each entry's outputs: 2n steps, x4 calls -> x4 steps (a search per call: x16).
    assert steps[1600] <= 4 * steps[400] <= 16 * steps[100], steps
    assert steps[1600] <= 2 * 1600 + 2, steps
