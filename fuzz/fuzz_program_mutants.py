"""Fuzz target, damaged programs, differential: libFuzzer's bytes choose a fixture program
(tests/support/program_mutants.BASES) packed as a program entry, then one to three structure-aware
mutations of its payload (random bytes, soffsets, vtable sizes and field offsets, fields' words,
uoffsets and lengths, strings made invalid UTF-8, without their NUL or longer), each choice a
draw (program_mutants.Drawn), the entry's CRC32C and the header checksum recomputed so every
container rule passes; then the container through Python and the C++ loader
(fuzz_differential.py's comparison: validate's code, offset and field, and open's code).
Fails when they disagree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import _harness
from fuzz_differential import cpp_verdicts, python_verdicts


@functools.cache
def _base(name: str) -> Any:
    from tests.support import program_mutants

    return program_mutants.base(name)


def compare(data: bytes) -> None:
    py, cpp = python_verdicts(data), cpp_verdicts(data)
    if py != cpp:
        raise AssertionError(f"the damaged program is judged differently: Python {py}, C++ {cpp}")


@functools.cache
def _property() -> Callable[[bytes], Any]:
    from hypothesis import strategies as st

    from tests.support import program_mutants as pm

    @_harness.driven(st.sampled_from(pm.BASES), st.integers(1, 3), st.data())
    def prop(name: str, rounds: int, draws: st.DataObject) -> None:
        b = _base(name)
        program, rng = b.program, pm.Drawn(draws)
        for _ in range(rounds):
            _, program = pm.mutate(pm.Base(b.name, b.container, b.offset, program, b.map), rng)
        compare(pm.with_program(b, program))

    return prop


def test_one_input(data: bytes) -> None:
    _property()(data)


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
