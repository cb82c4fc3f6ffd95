"""Counting work without a clock: the lines of fatpte a call executes, and the memory it peaks at.

`executed_lines` counts the interpreter's `line` events in fatpte's own modules (sys.settrace):
every iteration of a loop or comprehension written there counts, so work that grows with the
square of an input shows as such, on any machine and at any load. Work done inside C (a dict
lookup, bytes.join) counts as the one line that asked for it: a quadratic hidden in a C call
shows up in `peak_allocation` or the output size instead.
"""

from __future__ import annotations

import itertools
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import fatpte

_PACKAGE = str(Path(fatpte.__file__).resolve().parent)


def executed_lines(fn: Callable[[], object]) -> int:
    """How many lines of fatpte's code `fn()` runs (a FatpteError it raises is part of the run)."""
    count = 0
    ours: dict[str, bool] = {}

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        name = frame.f_code.co_filename
        mine = ours.get(name)
        if mine is None:
            mine = ours[name] = name.startswith(_PACKAGE)
        return local if mine else None

    sys.settrace(calls)
    try:
        fn()
    except fatpte.FatpteError:
        pass
    finally:
        sys.settrace(None)
    return count


def peak_allocation(fn: Callable[[], object]) -> int:
    """The peak of Python allocations while `fn()` runs, in bytes (tracemalloc)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            fn()
        except fatpte.FatpteError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def growth(values: list[int]) -> list[float]:
    """Each value over the one before it."""
    return [b / a for a, b in itertools.pairwise(values)]
