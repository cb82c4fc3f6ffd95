"""Properties of the core: round trips, v1 byte-exactness, corruption always caught, truncation
always a FatpteError."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fatpte
from fatpte.container.reader import Container
from fatpte.container.validation import validate_buffer
from fatpte.errors import FatpteError
from fatpte.ops.specialization import Specialization
from tests.strategies import reference_v1, v1_specializations, v2_specializations

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pack(specs: list[Specialization], **kwargs: object) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        return fatpte.pack(specs, Path(d) / "c.nfat", **kwargs).read_bytes()  # type: ignore[arg-type]


@SETTINGS
@given(v2_specializations())
def test_v2_round_trip(specs: list[Specialization]) -> None:
    blob = _pack(specs)
    c = Container.from_buffer(blob)
    assert [(e.name, e.backend_id, e.priority) for e in c.entries] == [
        (s.entry_name, s.backend_id, s.priority) for s in specs]
    for e, s in zip(c.entries, specs):
        assert bytes(c.payload(e, verify=True)) == s.payload
        assert e.alignment == (s.alignment or 64) and e.offset % e.alignment == 0
    assert validate_buffer(blob).findings == ()


@SETTINGS
@given(v1_specializations())
def test_v1_is_the_published_layout_byte_for_byte(items: list[tuple[str, bytes]]) -> None:
    blob = _pack([Specialization(i, d) for i, d in items], version=1)
    assert blob == reference_v1(items)


@SETTINGS
@given(v1_specializations())
def test_v1_blobs_of_the_published_layout_read_back(items: list[tuple[str, bytes]]) -> None:
    c = Container.from_buffer(reference_v1(items))
    assert [(e.backend_id, bytes(c.payload(e))) for e in c.entries] == list(items)
    assert validate_buffer(reference_v1(items)).ok


@SETTINGS
@given(v2_specializations(max_entries=4), st.data())
def test_any_changed_byte_of_a_v2_container_is_reported(specs: list[Specialization], data: st.DataObject) -> None:
    # Every byte of a v2 container lies in a checksummed region or in padding that must be zero.
    blob = _pack(specs)
    at = data.draw(st.integers(min_value=0, max_value=len(blob) - 1), label="offset")
    flip = data.draw(st.integers(min_value=1, max_value=255), label="xor")
    changed = bytearray(blob)
    changed[at] ^= flip
    assert not validate_buffer(bytes(changed)).ok


@SETTINGS
@given(st.one_of(v2_specializations(max_entries=4), v1_specializations(max_entries=4).map(
    lambda items: [Specialization(i, d) for i, d in items])), st.data())
def test_truncation_anywhere_is_a_fatpte_error(specs: list[Specialization], data: st.DataObject) -> None:
    v1 = data.draw(st.booleans(), label="v1")
    try:
        blob = _pack(specs, version=1 if v1 else 2)
    except FatpteError:
        return  # v2 ids are valid v1 ids but not the reverse; only the v1 pack can refuse
    cut = data.draw(st.integers(min_value=0, max_value=len(blob) - 1), label="length")
    report = validate_buffer(blob[:cut])
    if not v1:
        assert not report.ok  # v2 states its size: every truncation is caught
    try:
        Container.from_buffer(blob[:cut])
    except FatpteError:
        pass
