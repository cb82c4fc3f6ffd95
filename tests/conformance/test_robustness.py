"""Robustness and resource bounds of the readers on untrusted bytes.

- Any mutated, truncated or random input gives `validate_buffer` a report (it never raises) and
  gives `Container.from_buffer` (what `fatpte.open` runs on its mapping) either a container or a
  `FatpteError`, never another exception; the same holds for every accessor of an open container.
- Adversarial headers (huge counts, huge declared sizes and offsets, 2^64-1 values) are rejected
  without allocating more than a fixed bound (tracemalloc peak) and with work linear in the file
  size: the records decoded never hold more bytes than the file, and the manifest reader visits
  no more tables and strings than the manifest has offsets.
- Every byte of a valid v2 vector is covered: changing it makes `validate` report an error.
"""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fatpte.container.reader import Container
from fatpte.container.validation import validate_buffer
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import codec, structure
from fatpte.format import layout as L
from fatpte.manifest import codec as MC
from tests.strategies import mutated_containers, pack_bytes, read_everything
from tests.support.vectors import VECTORS, reseal

INDEX: dict[str, Any] = json.loads((VECTORS / "index.json").read_text())["vectors"]
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MiB = 1 << 20


exercise = read_everything


# ---------------------------------------------------------------------------------------------
# Only FatpteError
# ---------------------------------------------------------------------------------------------


@FUZZ
@given(mutated_containers())
def test_mutated_containers_raise_only_fatpte_error(data: bytes) -> None:
    exercise(data)


@FUZZ
@given(st.sampled_from([b"", b"NFAT\x01\0\0\0", b"NFAT\x02\0\0\0"]), st.binary(max_size=600))
def test_random_bytes_raise_only_fatpte_error(prefix: bytes, tail: bytes) -> None:
    exercise(prefix + tail)


@pytest.mark.parametrize("name", ["v2-named-data.nfat", "v2-many-entries.nfat", "v1-many-entries.nfat"])
def test_every_truncation_raises_only_fatpte_error(name: str) -> None:
    data = (VECTORS / name).read_bytes()
    for n in range(len(data)):
        exercise(data[:n])
        if data[4] == 2:
            assert not validate_buffer(data[:n]).ok, f"{name} cut to {n} bytes validates"


# ---------------------------------------------------------------------------------------------
# Adversarial headers: bounded memory, linear work
# ---------------------------------------------------------------------------------------------


def _base() -> bytes:
    from fatpte.ops.specialization import Specialization

    return pack_bytes([Specialization("xnnpack", bytes(range(200)))])


def _set(data: bytes, at: int, size: int, value: int) -> bytes:
    buf = bytearray(data)
    buf[at : at + size] = value.to_bytes(size, "little")
    reseal(buf)  # so the field under test, not the checksum, is what gets judged
    return bytes(buf)


def _h(field: str) -> int:
    return L.RECORDS["v2_header"].offsets[field][0]


def _e(field: str) -> int:
    return L.V2_HEADER_SIZE + L.RECORDS["v2_entry"].offsets[field][0]


def _v1(count: int, *entries: tuple[int, int], tail: bytes = b"") -> bytes:
    out = b"NFAT" + (1).to_bytes(4, "little") + count.to_bytes(4, "little")
    for off, size in entries:
        out += b"cpu".ljust(32, b"\0") + off.to_bytes(8, "little") + size.to_bytes(8, "little")
    return out + tail


U32, U64 = (1 << 32) - 1, (1 << 64) - 1


def adversarial() -> Iterator[tuple[str, bytes, ErrorCode]]:
    base = _base()
    yield "entry_count at the limit", _set(base, _h("entry_count"), 4, L.MAX_ENTRIES), ErrorCode.TABLE_OUT_OF_BOUNDS
    yield "entry_count 2^32-1", _set(base, _h("entry_count"), 4, U32), ErrorCode.TOO_MANY_ENTRIES
    yield "segment_count at the limit", _set(base, _h("segment_count"), 4, L.MAX_SEGMENTS), \
        ErrorCode.TABLE_OUT_OF_BOUNDS
    yield "segment_count 2^32-1", _set(base, _h("segment_count"), 4, U32), ErrorCode.TOO_MANY_SEGMENTS
    yield "header_size at the limit", _set(base, _h("header_size"), 4, L.MAX_RECORD_SIZE), \
        ErrorCode.TABLE_OUT_OF_BOUNDS
    yield "entry_size 2^32-1", _set(base, _h("entry_size"), 4, U32), ErrorCode.BAD_ENTRY_SIZE
    yield "container_size 2^64-1", _set(base, _h("container_size"), 8, U64), ErrorCode.TRUNCATED_CONTAINER
    yield "manifest_size at the limit", _set(base, _h("manifest_size"), 8, L.MAX_MANIFEST_SIZE), \
        ErrorCode.MANIFEST_OUT_OF_BOUNDS
    yield "manifest_size 2^64-1", _set(base, _h("manifest_size"), 8, U64), ErrorCode.MANIFEST_TOO_LARGE
    yield "manifest_offset 2^64-1", _set(_set(base, _h("manifest_size"), 8, 8), _h("manifest_offset"), 8, U64 - 7), \
        ErrorCode.MANIFEST_OUT_OF_BOUNDS
    yield "payload size 2^64-1", _set(base, _e("size"), 8, U64), ErrorCode.PAYLOAD_OUT_OF_BOUNDS
    yield "payload offset 2^64-1", _set(base, _e("offset"), 8, U64), ErrorCode.PAYLOAD_OUT_OF_BOUNDS
    yield "alignment 2^31", _set(base, _e("alignment"), 4, 1 << 31), ErrorCode.BAD_ALIGNMENT
    yield "v1 entry_count at the limit", _v1(L.MAX_ENTRIES, (0, 1)), ErrorCode.TABLE_OUT_OF_BOUNDS
    yield "v1 entry_count 2^32-1", _v1(U32, (0, 1)), ErrorCode.TOO_MANY_ENTRIES
    yield "v1 payload size 2^64-1", _v1(1, (0, U64), tail=b"x"), ErrorCode.PAYLOAD_OUT_OF_BOUNDS
    yield "v1 payload offset 2^64-1", _v1(1, (U64, 1), tail=b"x"), ErrorCode.PAYLOAD_OUT_OF_BOUNDS


ADVERSARIAL = list(adversarial())


class DecodeCounter:
    """Counts the bytes of the fixed-size records the structural pass decodes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.records = 0
        self.bytes = 0
        real = codec.decode  # what fatpte.format.structure calls, under the name it imported

        def counting(rec: L.Record, *args: Any, **kwargs: Any) -> dict[str, Any]:
            self.records += 1
            self.bytes += rec.size
            return real(rec, *args, **kwargs)

        monkeypatch.setattr(structure, "decode", counting)


def peak_allocation(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _open_or_error(data: bytes) -> ErrorCode | None:
    try:
        with Container.from_buffer(data):
            return None
    except FatpteError as exc:
        return exc.code


@pytest.mark.parametrize(("label", "data", "code"), ADVERSARIAL, ids=[a[0] for a in ADVERSARIAL])
def test_adversarial_header_is_rejected_cheaply(label: str, data: bytes, code: ErrorCode,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    counter = DecodeCounter(monkeypatch)
    report = validate_buffer(data)
    assert report.first_error is not None and report.first_error.code is code, report.first_error
    assert counter.bytes <= len(data), f"decoded {counter.bytes} bytes of records from a {len(data)}-byte file"
    assert _open_or_error(data) is code
    assert peak_allocation(lambda: validate_buffer(data)) < MiB
    assert peak_allocation(lambda: _open_or_error(data)) < MiB


def _table_of(count: int) -> bytes:
    """A v2 container whose table really holds `count` entries (of empty payloads)."""
    from fatpte.ops.specialization import Specialization

    return pack_bytes([Specialization("cpu", b"", name=f"e{i}") for i in range(count)])


@pytest.mark.parametrize("count", [1, 100, 1000])
def test_work_and_memory_grow_linearly_with_the_table(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real table costs in proportion to its bytes, whatever the header claims."""
    data = _table_of(count)
    counter = DecodeCounter(monkeypatch)
    assert validate_buffer(data).ok
    assert counter.records == 1 + count
    assert counter.bytes <= len(data)
    # Python keeps one Entry per record: at most 16 bytes of heap per byte of table, plus 1 MiB.
    assert peak_allocation(lambda: validate_buffer(data)) < MiB + 16 * len(data)


def test_large_payloads_are_checked_in_bounded_memory(tmp_path: Path) -> None:
    """Checksums and padding scans read through bounded chunks: validating a 24 MiB container
    held in a mapping allocates a few MiB at most, not its size."""
    import mmap

    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    payload = tmp_path / "payload.bin"
    with payload.open("wb") as out:
        out.truncate(24 * MiB)
    path = pack([Specialization("cpu", payload), Specialization("gpu", os.fspath(payload), name="g",
                                                                  alignment=L.MAX_ALIGNMENT)],
                tmp_path / "big.nfat")
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
        assert peak_allocation(lambda: validate_buffer(view)) < 4 * MiB


class ManifestCounter:
    """Counts the tables and strings the manifest reader visits."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.visits = 0
        reader = MC._Reader
        for method in ("table", "string"):
            real = getattr(reader, method)

            def counting(obj: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
                self.visits += 1
                return _real(obj, *args, **kwargs)

            monkeypatch.setattr(reader, method, counting)


def _aliased_manifest(references: int) -> bytes:
    """A manifest whose entries vector holds `references` offsets to one and the same entry
    table: a DAG that a naive reader would walk once per reference."""
    import flatbuffers

    b = flatbuffers.Builder(0)
    name = b.CreateString("cpu")
    b.StartObject(7)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    entry = b.EndObject()
    b.StartVector(4, references, 4)
    for _ in range(references):
        b.PrependUOffsetTRelative(entry)
    vec = b.EndVector()
    b.StartObject(3)
    b.PrependUOffsetTRelativeSlot(1, vec, 0)
    root = b.EndObject()
    b.Finish(root, L.MANIFEST_IDENTIFIER)
    return bytes(b.Output())


@pytest.mark.parametrize("references", [10, 3000])
def test_manifest_reader_work_is_linear(references: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _aliased_manifest(references)
    counter = ManifestCounter(monkeypatch)
    try:
        MC.decode(data)
    except FatpteError:
        pass
    # Every visit follows a distinct 4-byte offset of the buffer.
    assert counter.visits <= len(data) // 4
    assert peak_allocation(lambda: _decode_or_error(data)) < MiB + 64 * len(data)


def _decode_or_error(data: bytes) -> None:
    try:
        MC.decode(data)
    except FatpteError:
        pass


@FUZZ
@given(st.binary(min_size=8, max_size=2000))
def test_manifest_reader_work_is_bounded_on_random_bytes(tail: bytes) -> None:
    data = tail[:4] + L.MANIFEST_IDENTIFIER + tail[4:]
    with pytest.MonkeyPatch.context() as mp:
        counter = ManifestCounter(mp)
        _decode_or_error(data)
    assert counter.visits <= len(data) // 4


# ---------------------------------------------------------------------------------------------
# Every byte of a valid v2 container is covered
# ---------------------------------------------------------------------------------------------

V2_VALID = sorted(n for n, row in INDEX.items() if row["valid"] and (VECTORS / n).read_bytes()[4:8] == b"\2\0\0\0")
# FATPTE_EXHAUSTIVE=1 flips every byte (minutes); by default every byte of the header, tables and
# manifest, and of payloads and segments their first and last 16 bytes and every 7th, and in runs
# of padding the first and last byte and every 509th (the padding rule treats every byte alike).
EXHAUSTIVE = os.environ.get("FATPTE_EXHAUSTIVE") == "1"


def positions(data: bytes) -> list[int]:
    if EXHAUSTIVE:
        return list(range(len(data)))
    with Container.from_buffer(data) as c:
        h = c.header
        spans = [(0, h.table_end, 1)]
        if h.manifest_size:
            spans.append((h.manifest_offset, h.manifest_offset + h.manifest_size, 1))
        regions = [(e.offset, e.end) for e in c.entries] + [(s.offset, s.end) for s in c.segments]
    for start, end in regions:
        spans += [(start, min(end, start + 16), 1), (max(start, end - 16), end, 1), (start, end, 7)]
    covered = sorted({(a, b) for a, b, _ in spans} | {(a, b) for a, b in regions})
    out: set[int] = set()
    for a, b, step in spans:
        out.update(range(a, b, step))
    reach = 0
    for a, b in covered + [(len(data), len(data))]:
        if a > reach:  # padding run reach..a
            out.update({reach, a - 1, *range(reach, a, 509)})
        reach = max(reach, b)
    return sorted(p for p in out if p < len(data))


@pytest.mark.parametrize("name", V2_VALID)
def test_every_byte_of_a_valid_v2_vector_is_covered(name: str) -> None:
    data = bytearray((VECTORS / name).read_bytes())
    for pos in positions(bytes(data)):
        mask = 0x80 if pos % 2 else 0x01  # low and high bits both get their turn
        data[pos] ^= mask
        report = validate_buffer(data)
        data[pos] ^= mask
        assert not report.ok, f"{name}: byte {pos:#x} ^ {mask:#04x} is not reported"
