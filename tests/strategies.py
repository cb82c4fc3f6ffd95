"""Hypothesis strategies shared by the property tests and the structured fuzz target."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from fatpte import layout as L
from fatpte.packing import Specialization

ID_CHARS = "".join(sorted(chr(b) for b in L.ID_ALPHABET))

v2_ids = st.text(alphabet=ID_CHARS, min_size=1, max_size=32)
# v1 ids: any ASCII but NUL, 1..32 bytes, exactly what the published layout can hold
v1_ids = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x7F), min_size=1, max_size=32)
payloads = st.binary(min_size=0, max_size=300)
alignments = st.sampled_from([1, 2, 4, 8, 16, 64, 256, 4096])
priorities = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)


@st.composite
def v2_specializations(draw: st.DrawFn, max_entries: int = 6) -> list[Specialization]:
    names = draw(st.lists(v2_ids, min_size=1, max_size=max_entries, unique=True))
    out = []
    for name in names:
        out.append(Specialization(
            draw(v2_ids), draw(payloads), name=name, priority=draw(priorities),
            alignment=draw(st.none() | alignments),
        ))
    return out


@st.composite
def v1_specializations(draw: st.DrawFn, max_entries: int = 6) -> list[tuple[str, bytes]]:
    return draw(st.lists(st.tuples(v1_ids, payloads), min_size=1, max_size=max_entries))


def reference_v1(items: list[tuple[str, bytes]]) -> bytes:
    """ExecuTorch's published v1 layout, written the obvious way: joined in memory."""
    out = b"NFAT" + struct.pack("<II", 1, len(items))
    rel = 0
    for ident, data in items:
        out += ident.encode("ascii").ljust(32, b"\0") + struct.pack("<QQ", rel, len(data))
        rel += len(data)
    return out + b"".join(data for _, data in items)
