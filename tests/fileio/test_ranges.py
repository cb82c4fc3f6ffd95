"""ScannedRanges (one streaming pass) answers every question as BufferRanges (the whole buffer)
does, however the bytes are cut into pieces; an unplanned question is refused."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fatpte.errors import FatpteError
from fatpte.fileio.ranges import BufferRanges, Question, ScannedRanges

KINDS = ("crc32c", "sha256", "first_nonzero", "bytes")


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(1, 5000), count=st.integers(1, 12))
def test_a_scan_answers_as_the_buffer_does(seed: int, size: int, count: int) -> None:
    rng = random.Random(seed)
    data = bytes(rng.choice([0, 0, 0, rng.randrange(256)]) for _ in range(size))
    questions = []
    for _ in range(count):
        a = rng.randrange(size + 1)
        b = rng.randrange(a, size + 1)
        questions.append(Question(rng.choice(KINDS), a, b))  # ranges may overlap, as in a damaged file
    scan = ScannedRanges(questions)
    pos = 0
    for start, end in scan.needed():
        pos = max(pos, start)
        while pos < end:
            step = rng.randrange(1, 700)
            scan.feed(pos, data[pos : min(end, pos + step)])
            pos = min(end, pos + step)
    whole = BufferRanges(data)
    for q in questions:
        assert getattr(scan, q.kind)(q.start, q.end) == getattr(whole, q.kind)(q.start, q.end), q


def test_an_unplanned_question_and_a_skipped_range_are_refused() -> None:
    scan = ScannedRanges([Question("crc32c", 10, 20)])
    with pytest.raises(FatpteError, match="no planned answer"):
        scan.crc32c(0, 10)
    with pytest.raises(FatpteError, match="skipped bytes"):
        scan.feed(15, b"x" * 10)
