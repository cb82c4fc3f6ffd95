"""The named-data keys an ExecuTorch program loads by name, and which of them it holds itself.

A program loads a key for each external constant (a tensor whose data location is EXTERNAL, by
its fully qualified name) and for each constant its delegates load from the named data map: the
NPTG constants' data keys, the XNNPACK constants' named keys, and those of the NPTG and XNNPACK
payloads of a fat delegate's entries. At run time the keys come from the program's own
`named_data` or from a data file (.ptd) given beside it; a key in neither fails the load.
"""

from __future__ import annotations

from typing import NamedTuple

from fatpte.container.reader import Container
from fatpte.executorch.nptg import IDENTIFIER as NPTG_IDENTIFIER
from fatpte.executorch.nptg import read_nptg
from fatpte.executorch.pte import Delegate, Program
from fatpte.executorch.xnnpack import FLATBUFFER_IDENTIFIER, MAGIC, read_xnnpack
from fatpte.format.layout import MAGIC as NFAT_MAGIC


class ProgramKeys(NamedTuple):
    loads: tuple[str, ...]  # every key the program loads by name, sorted
    holds: tuple[str, ...]  # the keys of its own named_data, sorted

    @property
    def external(self) -> tuple[str, ...]:
        """The keys it loads that it does not hold: a data file beside it must."""
        held = set(self.holds)
        return tuple(k for k in self.loads if k not in held)


def _payload_keys(payload: bytes | memoryview, base: int, source: str | None) -> set[str]:
    kind = bytes(payload[4:8])
    if kind == NPTG_IDENTIFIER:
        return set(read_nptg(payload, source=source, base=base).named_data_keys)
    if kind in (MAGIC, FLATBUFFER_IDENTIFIER):
        return set(read_xnnpack(payload, source=source, base=base).named_data_keys)
    return set()


def _delegate_keys(program: Program, delegate: Delegate) -> set[str]:
    payload = program.payload(delegate)
    if bytes(payload[:4]) != NFAT_MAGIC:
        return _payload_keys(payload, delegate.offset, program.source)
    container = Container.from_buffer(bytes(payload), source=f"{program.source or '<pte>'}[delegate "
                                      f"{delegate.index}]")
    keys: set[str] = set()
    for e in container.entries:
        keys |= _payload_keys(bytes(container.payload(e)), delegate.offset + e.offset, program.source)
    return keys


def program_keys(program: Program) -> ProgramKeys:
    """The keys `program` loads and the keys it holds (FatpteError from a payload's reader)."""
    loads: set[str] = set()
    for plan in program.methods:
        loads |= {t.fqn for t in plan.tensors.values() if t.external and t.fqn}
        for d in plan.delegates:
            loads |= _delegate_keys(program, d)
    return ProgramKeys(tuple(sorted(loads)), tuple(sorted({n.key for n in program.named_data})))
