"""A golden bound cannot overflow into accepting a NaN (issue 42, G3; specs/nfat-manifest.md 11.1).

`atol = rtol = 1.7e308` is a valid tolerance (finite, at least 0), but `atol + rtol * max|want|`
overflowed to infinity, and a NaN output, infinitely far from any other value, was then within
it. Now the bound saturates at the largest finite double and a difference that is not finite is
never within a bound. The cases are loader/tests/golden_test.cpp's (NoToleranceLetsANanOrAnInfinityPass);
tests/loader/test_golden_overflow.py runs them end to end through fatpte-run and `fatpte check`.
"""

from __future__ import annotations

import math
import struct
import sys
from pathlib import Path

import pytest

from fatpte.manifest.model import GoldenOutput, golden_bound, within
from fatpte.ops.check import AGREES, EntryCheck, OutputCheck, _output_check, _pairs, compare_files

HUGE = 1.7e308
LARGEST = sys.float_info.max


@pytest.mark.parametrize(("atol", "rtol", "max_want", "bound"), [
    (1.0, 2.0, 3.0, 7.0),
    (HUGE, HUGE, 0.0, HUGE),
    (HUGE, HUGE, 1.0, LARGEST),  # 3.4e308: saturated, not infinity
    (HUGE, HUGE, 11.0, LARGEST),
    (LARGEST, LARGEST, LARGEST, LARGEST),
])
def test_the_bound_saturates_at_the_largest_double(atol: float, rtol: float, max_want: float, bound: float) -> None:
    assert golden_bound(atol, rtol, max_want) == bound
    assert GoldenOutput("k", atol, rtol).bound(max_want) == bound


@pytest.mark.parametrize(("difference", "bound", "passes"), [
    (math.nan, LARGEST, False),
    (math.inf, LARGEST, False),
    (math.inf, math.inf, False),
    (LARGEST, LARGEST, True),
    (1e300, LARGEST, True),
    (0.5, 0.25, False),
])
def test_a_difference_that_is_not_finite_is_never_within(difference: float, bound: float, passes: bool) -> None:
    assert within(difference, bound) is passes


def _report(max_abs: float, passed: bool = True) -> dict[str, object]:
    """An output of fatpte-run's golden report as a runner with the overflow wrote it."""
    return {"key": "k", "dtype": "float32", "shape": [2], "max_abs": max_abs, "max_rel": math.inf, "max_want": 11.0,
            "atol": HUGE, "rtol": HUGE, "bound": math.inf, "passed": passed, "problem": None}


def test_check_takes_the_verdict_again_by_the_rule() -> None:
    nan_output = _output_check(0, 0, "forward", _report(math.inf))
    assert not nan_output.passed and nan_output.bound == LARGEST
    fine = _output_check(0, 0, "forward", _report(3.0))
    assert fine.passed and fine.bound == LARGEST


def _entry(name: str, folder: Path, values: tuple[float, ...], bound: float) -> EntryCheck:
    path = folder / f"{name}.bin"
    path.write_bytes(struct.pack(f"<{len(values)}f", *values))
    e = EntryCheck(name, "portable", AGREES)
    e.outputs.append(OutputCheck(0, 0, "forward", "k", "float32", (len(values),), 0.0, 0.0, 11.0, HUGE, HUGE, bound,
                                 True, None))
    e.files[(0, 0)] = path
    e.inputs[0] = ("forward", ("x",))
    return e


@pytest.mark.parametrize("other", [math.nan, math.inf])
def test_two_entries_do_not_agree_with_a_nan_under_huge_bounds(tmp_path: Path, other: float) -> None:
    a = _entry("a", tmp_path, (1.0, 11.0), LARGEST)
    b = _entry("b", tmp_path, (other, 11.0), LARGEST)
    assert compare_files(a.files[(0, 0)], b.files[(0, 0)], "float32") == math.inf
    (pair,) = _pairs([a, b])
    assert pair.bound == LARGEST and not pair.passed
    far = _entry("c", tmp_path, (-3e38, 11.0), LARGEST)
    (pair,) = _pairs([a, far])
    assert pair.passed  # a finite difference is within the largest bound
