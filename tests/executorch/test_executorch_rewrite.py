"""rewrite.remove_named_data over the committed fixtures: the program without its named data (its
segments gone, later segment indices renumbered, the two vectors shortened in place), the bytes it
held returned, everything else unchanged."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch import program_signature, read_program
from fatpte.executorch.rewrite import (
    _layout,
    _rewrite,
    remove_named_data,
    rename_delegates,
    segment_alignment,
)
from tests.paths import ET_FIXTURES, FIXTURES

PROGRAMS = sorted(p.name for p in ET_FIXTURES.glob("*.pte"))
WITH_NAMED = sorted(n for n in PROGRAMS if read_program((ET_FIXTURES / n).read_bytes()).named_data)


def test_the_fixtures_cover_both_backends_that_store_named_data() -> None:
    assert {"mlp_xnnpack.pte", "kvcache_xnnpack.pte", "mlp_native.pte", "buffer_native.pte"} <= set(WITH_NAMED)


@pytest.mark.parametrize("name", WITH_NAMED)
def test_named_data_moves_out_and_nothing_else_changes(name: str) -> None:
    data = (ET_FIXTURES / name).read_bytes()
    before = read_program(data)
    out, moved = remove_named_data(data, source=name)
    after = read_program(out)
    assert after.named_data == ()
    assert moved == {n.key: data[n.offset : n.offset + n.size] for n in before.named_data}
    assert list(moved) == [n.key for n in before.named_data]
    named_segments = {n.segment_index for n in before.named_data}
    kept = [s for s in before.segments if s.index not in named_segments]
    assert [data[s.offset : s.offset + s.size] for s in kept] == [out[s.offset : s.offset + s.size]
                                                                  for s in after.segments]
    assert len(out) == max(s.offset + s.size for s in after.segments) < len(data)  # no gap left at the end
    # Delegates and constants are where the renumbered tables say, with the same bytes.
    for m0, m1 in zip(before.methods, after.methods, strict=True):
        assert [bytes(before.payload(d)) for d in m0.delegates] == [bytes(after.payload(d)) for d in m1.delegates]
    assert after.constant_segment == before.constant_segment
    assert after.mutable_data_segments == before.mutable_data_segments
    assert program_signature(after) == program_signature(before)
    assert segment_alignment(after) >= 128
    # The flatbuffer keeps its size; only the header's segment_data_size and the two vector counts change.
    program_size = before.header.program_size if before.header else len(data)
    layout = _layout(before)
    assert layout.segments is not None and layout.named_data is not None
    counts = {layout.segments.start - 4 + i for i in range(4)} | {layout.named_data.start - 4 + i for i in range(4)}
    changed = {i for i in range(program_size) if data[i] != out[i]}
    slots = set(range(layout.segments.start, layout.segments.start + 4 * layout.segments.count))
    assert changed <= counts | set(range(32, 40)) | slots
    assert struct.unpack_from("<I", out, layout.segments.start - 4)[0] == len(after.segments)
    assert struct.unpack_from("<I", out, layout.named_data.start - 4)[0] == 0


@pytest.mark.parametrize("name", sorted(set(PROGRAMS) - set(WITH_NAMED)))
def test_a_program_without_named_data_is_returned_unchanged(name: str) -> None:
    data = (ET_FIXTURES / name).read_bytes()
    assert remove_named_data(data) == (data, {})


def test_a_later_segment_is_renumbered_and_its_entry_moves_forward() -> None:
    """Removing only the first of two named-data segments: the second becomes segment 5, and
    its named_data entry moves into slot 0 with its uoffset recomputed."""
    data = (ET_FIXTURES / "kvcache_xnnpack.pte").read_bytes()
    before = read_program(data)
    first, second = before.named_data
    assert (first.segment_index, second.segment_index) == (5, 6)
    out = _rewrite(data, before, replace={}, remove={5}, drop_named={0}, source=None)
    after = read_program(out)
    (only,) = after.named_data
    assert (only.key, only.segment_index) == (second.key, 5)
    assert out[only.offset : only.offset + only.size] == data[second.offset : second.offset + second.size]
    assert len(after.segments) == len(before.segments) - 1


def test_a_segment_still_in_use_is_not_removed() -> None:
    data = (ET_FIXTURES / "mlp_xnnpack.pte").read_bytes()
    program = read_program(data)
    (delegate,) = program.methods[0].delegates
    with pytest.raises(FatpteError) as e:
        _rewrite(data, program, replace={}, remove={delegate.data_index}, drop_named=(), source="m.pte")
    assert e.value.code is ErrorCode.INVALID_ARGUMENT
    assert e.value.field is not None and e.value.field.endswith("processed.index")


def test_a_corrupt_program_is_refused_before_anything_is_written() -> None:
    data = bytearray((ET_FIXTURES / "mlp_xnnpack.pte").read_bytes())
    assert data[4:8] == b"ET12"
    data[4:8] = b"ET13"
    with pytest.raises(FatpteError) as e:
        remove_named_data(bytes(data))
    assert e.value.code is ErrorCode.ET_BAD_IDENTIFIER


def test_a_program_without_its_named_data_can_still_be_thinned(tmp_path: Path) -> None:
    import fatpte
    from fatpte.container.reader import Container
    from fatpte.ops.fat_delegate import nfat_delegates, thin_pte

    out, moved = remove_named_data((ET_FIXTURES / "kvcache_nfat.pte").read_bytes())
    assert sorted(moved) == ["k_cache", "proj.bias", "proj.weight"]
    (tmp_path / "shared.pte").write_bytes(out)
    thin = thin_pte(tmp_path / "shared.pte", tmp_path / "thin.pte", device=fatpte.DeviceProfile.load("x86-64-v3"))
    program = read_program(thin.read_bytes())
    assert program.named_data == ()
    (d,) = nfat_delegates(program)
    # The fallback chain of x86-64-v3 in rank order (issue 38: thin keeps what a failure falls back to).
    assert [e.name for e in Container.from_buffer(bytes(program.payload(d))).entries] == ["native-avx2",
                                                                                         "native-generic"]


def test_a_dangling_sub_segment_index_is_refused_not_renumbered() -> None:
    # Found by fuzz/fuzz_executorch.py: mutable_data_segments[0] names segment 12289 of 7 and has
    # no offsets, so the reader accepts it (nothing is read through it), but removing named-data
    # segments cannot renumber it. It was a KeyError; it is the format's own error now.
    data = (FIXTURES / "fuzz" / "executorch-dangling-mutable-segment.pte").read_bytes()
    program = read_program(data)
    assert program.named_data and len(program.segments) == 7
    with pytest.raises(FatpteError) as info:
        remove_named_data(data, source="x.pte")
    assert info.value.code is ErrorCode.ET_BAD_REFERENCE
    assert info.value.field == "root.mutable_data_segments[0].segment_index"
    assert info.value.actual == 12289


# rename_delegates: a delegate's backend id changed, the rest of the program meaning the same.


@pytest.mark.parametrize(("new_id", "moves"), [("FatpteBackend", False), ("X", False), ("B" * 100, True)])
def test_renamed_delegate_ids_and_nothing_else_changes(new_id: str, moves: bool) -> None:
    data = (ET_FIXTURES / "mlp_xnnpack.pte").read_bytes()
    before = read_program(data)
    out = rename_delegates(data, new_id, [(0, 0)])
    after = read_program(out)
    assert [d.backend_id for d in after.methods[0].delegates] == [new_id]
    assert before.header is not None and after.header is not None
    # The new string follows the flatbuffer; the old one stays where it was, unreferenced.
    assert after.header.program_size == (before.header.program_size + 3) // 4 * 4 + 4 + len(new_id) + 1
    changed = [i for i in range(before.header.program_size) if data[i] != out[i]]
    rest = [i for i in changed if not 16 <= i < 32]  # past the header's program size and base offset
    assert rest and rest[-1] - rest[0] < 4  # one uoffset: the delegate's id
    base0, base1 = before.header.segment_base_offset, after.header.segment_base_offset
    assert (base1 != base0) is moves
    assert (base1 - base0) % (base0 & -base0) == 0  # the segments keep the alignment they had
    assert [data[s.offset : s.offset + s.size] for s in before.segments] == [
        out[s.offset : s.offset + s.size] for s in after.segments]
    assert [(n.key, n.size) for n in after.named_data] == [(n.key, n.size) for n in before.named_data]
    assert program_signature(after) == program_signature(before)
    assert after.methods[0].operators == before.methods[0].operators
    assert after.methods[0].delegates[0].compile_specs == before.methods[0].delegates[0].compile_specs


@pytest.mark.parametrize(("new_id", "which", "said"), [
    ("", [(0, 0)], "must be 1 or more bytes without NUL"),
    ("A\0B", [(0, 0)], "must be 1 or more bytes without NUL"),
    ("A", [(0, 1)], "the program has no delegate 1 in method 0"),
    ("A", [(1, 0)], "the program has no delegate 0 in method 1"),
])
def test_rename_refuses_what_it_cannot_do(new_id: str, which: list[tuple[int, int]], said: str) -> None:
    with pytest.raises(FatpteError) as info:
        rename_delegates((ET_FIXTURES / "add_xnnpack.pte").read_bytes(), new_id, which)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert said in info.value.message
