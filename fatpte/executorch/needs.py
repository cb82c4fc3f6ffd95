"""What an ExecuTorch program needs from outside its own bytes: the named-data keys it loads.

A program loads named data three ways: a tensor whose data is external (its extra_tensor_info
says EXTERNAL) by its fully qualified name; an XNNPACK delegate payload by the named key of a
constant; an NPTG payload (a native delegate, or each entry of a fat delegate) by the data_key
of a constant. The runtime serves a key from the program's own named_data table when it holds
it, and otherwise from a .ptd (in a container: the entry's named data).
"""

from __future__ import annotations

from fatpte.container.reader import Container
from fatpte.executorch import nptg, xnnpack
from fatpte.executorch.pte import Program
from fatpte.format.layout import MAGIC as NFAT_MAGIC


def _payload_keys(payload: bytes | memoryview, source: str | None, base: int) -> set[str]:
    kind = bytes(payload[4:8]) if len(payload) >= 8 else b""
    if kind == nptg.IDENTIFIER:
        return set(nptg.read_nptg(payload, source=source, base=base).named_data_keys)
    if kind in (xnnpack.MAGIC, xnnpack.FLATBUFFER_IDENTIFIER):
        return set(xnnpack.read_xnnpack(payload, source=source, base=base).named_data_keys)
    if bytes(payload[:4]) == NFAT_MAGIC:
        keys: set[str] = set()
        container = Container.from_buffer(bytes(payload), source=f"{source or '<pte>'}[delegate at {base:#x}]")
        for e in container.entries:
            keys |= _payload_keys(bytes(container.payload(e)), source, base + e.offset)
        return keys
    return set()  # an opaque payload: what it loads is its backend's business


def named_data_loads(program: Program) -> frozenset[str]:
    """Every named-data key `program` loads, from its own named_data table or from outside."""
    keys: set[str] = set()
    for m in program.methods:
        keys |= {t.fqn for t in m.tensors.values() if t.external and t.fqn}
        for d in m.delegates:
            keys |= _payload_keys(program.payload(d), program.source, d.offset)
    return frozenset(keys)


def named_data_needed(program: Program) -> frozenset[str]:
    """The keys `program` loads that its own named_data table does not hold: what a .ptd, or the
    container entry's named data, must give it."""
    return named_data_loads(program) - {n.key for n in program.named_data}
