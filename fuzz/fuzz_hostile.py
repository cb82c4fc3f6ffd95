"""Fuzz target, hostile structure: libFuzzer's bytes drive the Hypothesis strategies of
tests/strategies.py that build what the attack on the readers used (issue 15): manifests whose
offsets share strings, tables and vectors thousands of times, long strings with control
characters, thousands of entries sharing one payload, device profiles nested and numbered past
every limit, ExecuTorch programs whose operators are one long-named operator. Each input goes
through what `validate`, `info`, `select` and `info` on a program do, and must stay within the
work budgets:

- only FatpteError escapes;
- the memory Python allocates while reading (tracemalloc peak) is at most BUDGET_FACTOR bytes per
  input byte plus BUDGET_ALLOWANCE;
- every text produced (findings, explanations, `info` text and JSON, descriptions) is at most
  BUDGET_FACTOR bytes per input byte plus BUDGET_ALLOWANCE, and holds no control character
  but the newline;
- time: libFuzzer's -timeout (make fuzz gives 10 s) for inputs of at most -max_len bytes.
"""

from __future__ import annotations

import functools
import json
import re
import tracemalloc
from collections.abc import Callable
from typing import Any, TypeVar

import _harness

T = TypeVar("T")
BUDGET_FACTOR = 64
BUDGET_ALLOWANCE = 32 << 20
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


class BudgetExceeded(AssertionError):
    pass


def within(what: str, amount: int, size: int) -> None:
    limit = BUDGET_FACTOR * size + BUDGET_ALLOWANCE
    if amount > limit:
        raise BudgetExceeded(f"{what}: {amount} bytes for an input of {size} bytes (limit {limit})")


def safe_text(what: str, text: str, size: int) -> None:
    within(what, len(text), size)
    if _CONTROL.search(text):
        raise AssertionError(f"{what} holds a control character: {_CONTROL.search(text)!r}")


def read_container(data: bytes) -> None:
    from fatpte.cli.render import info_text, map_text
    from fatpte.container.reader import Container
    from fatpte.container.validation import validate_buffer
    from fatpte.device.selection import select
    from fatpte.errors import FatpteError, SelectionError
    from fatpte.ops.info import byte_map, summary

    report = validate_buffer(data)
    safe_text("validate", "\n".join([f.describe() for f in report.findings] + report.omitted_lines()), len(data))
    within("validate --json", len(json.dumps(report.to_json())), len(data))
    try:
        container = Container.from_buffer(data)
    except FatpteError:
        return
    with container:
        for device in _devices():
            try:
                chosen = select(container, device)
                safe_text("select --explain", chosen.explain(), len(data))
                within("select --json", len(json.dumps(chosen.to_json())), len(data))
            except SelectionError as exc:
                safe_text("no fit", exc.message, len(data))
            except FatpteError:
                pass
        try:
            info = summary(container)
        except FatpteError:
            return
        within("info --json", len(json.dumps(info)), len(data))
        safe_text("info", info_text(info) + map_text([r.to_json() for r in byte_map(container)]), len(data))


@functools.cache
def _devices() -> tuple[Any, ...]:
    from fatpte.device.profile import DeviceProfile

    return tuple(DeviceProfile.load(n) for n in ("x86-64-v3", "jetson-orin"))


def read_profile(data: bytes) -> None:
    from fatpte.device.profile import DeviceProfile, parse_json

    DeviceProfile.from_json(parse_json(data))


def read_program(data: bytes) -> None:
    from fatpte.executorch import describe

    found = describe(data)
    safe_text("info on a program", found.text(), len(data))
    within("info --json on a program", len(json.dumps(found.to_json())), len(data))


READERS: dict[str, Callable[[bytes], None]] = {"container": read_container, "entries": read_container,
                                                "profile": read_profile, "program": read_program}


def run_within(fn: Callable[[], T], size: int) -> T:
    """fn(), its peak Python memory (tracemalloc) held to the budget of an input of `size` bytes."""
    tracemalloc.start()
    try:
        out = fn()
        within("peak memory", tracemalloc.get_traced_memory()[1], size)
        return out
    finally:
        tracemalloc.stop()


def run(kind: str, data: bytes) -> None:
    """One input through its reader, with the budget checks; raises on a violation."""
    from fatpte.errors import FatpteError

    def read() -> None:
        try:
            READERS[kind](data)
        except FatpteError as exc:
            safe_text("the error", str(exc), len(data))

    run_within(read, len(data))


def hostile_inputs() -> Any:
    from hypothesis import strategies as st

    from tests.strategies import (
        hostile_entry_containers,
        hostile_manifest_containers,
        hostile_profiles,
        hostile_programs,
    )

    return st.one_of(st.tuples(st.just("container"), hostile_manifest_containers()),
                     st.tuples(st.just("entries"), hostile_entry_containers()),
                     st.tuples(st.just("profile"), hostile_profiles()),
                     st.tuples(st.just("program"), hostile_programs()))


@functools.cache
def _property() -> Callable[[bytes], Any]:
    @_harness.driven(hostile_inputs())
    def prop(case: tuple[str, bytes]) -> None:
        run(*case)

    return prop


def test_one_input(data: bytes) -> None:
    _property()(data)


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
