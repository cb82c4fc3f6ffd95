"""Fuzz target, structured: libFuzzer's bytes drive the Hypothesis strategies of tests/strategies.py
to pack a random valid container (v1, v2, v2 with named data and a manifest), check that it
validates, apply one to three mutations, and check the invariants of `read_everything` on the
result (only FatpteError escapes; open and validate agree on the first error)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import _harness


@functools.cache
def _property() -> Callable[[bytes], Any]:
    from hypothesis import strategies as st

    from fatpte.container.validation import validate_buffer
    from tests.strategies import mutations, packed_containers, read_everything

    @_harness.driven(packed_containers(), st.integers(1, 3), st.data())
    def prop(data: bytes, rounds: int, draw: st.DataObject) -> None:
        report = validate_buffer(data)
        assert report.ok, [f.describe() for f in report.findings]
        for _ in range(rounds):
            data = draw.draw(mutations(data))
        read_everything(data)

    return prop


def test_one_input(data: bytes) -> None:
    _property()(data)


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
