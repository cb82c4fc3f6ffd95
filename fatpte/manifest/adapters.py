"""Signature adapters (specs/nfat-manifest.md 5.3): an entry whose program takes or gives float16
or bfloat16 where the container's signature says float32 states the signature's dtype with the
program's beside it (`TensorSpec.program_dtype`), and the loader converts at the edge. This room
owns what a stated signature's program looks like behind it (`program_view`), the signature
`pack --adapt-io` states for such a program (`adapted`), and which of several programs' signatures
is the container's (`widened`).
"""

from __future__ import annotations

from collections.abc import Sequence

from fatpte.manifest.model import Method, Signature, TensorSpec
from fatpte.manifest.rules import signature_difference
from fatpte.value.dtypes import adapter_problem


def program_view(signature: Signature) -> Signature:
    """The signature the entry's program has behind `signature`: each program dtype as the dtype."""
    def own(t: TensorSpec) -> TensorSpec:
        return t if t.program_dtype is None else t._replace(dtype=t.program_dtype, program_dtype=None)

    return Signature(tuple(Method(m.name, *(tuple(own(t) for t in part) for part in (m.inputs, m.outputs, m.buffers)))
                           for m in signature.methods))


def _each_tensor(wide: Signature, own: Signature, pick: object) -> Signature | None:
    """`own` with each tensor replaced by pick(wide's tensor, own's), where both have the same
    methods and counts; None when they do not."""
    methods = []
    for m in own.methods:
        w = wide.method(m.name)
        if w is None or len(wide.methods) != len(own.methods):
            return None
        parts = []
        for pw, po in ((w.inputs, m.inputs), (w.outputs, m.outputs), (w.buffers, m.buffers)):
            if len(pw) != len(po):
                return None
            parts.append(tuple(pick(a, b) for a, b in zip(pw, po)))  # type: ignore[operator]
        methods.append(Method(m.name, *parts))
    return Signature(tuple(methods))


def _behind(wide: TensorSpec, own: TensorSpec) -> TensorSpec:
    base = own.in_program
    if base != wide.dtype and adapter_problem(wide.dtype, base) is None:
        return own._replace(dtype=wide.dtype, program_dtype=base)
    return own._replace(dtype=base, program_dtype=None)


def adapted(wide: Signature, own: Signature) -> Signature | None:
    """`own`, a program's signature, stated behind the container's `wide`: each position where the
    program has float16 or bfloat16 and `wide` float32 gets that program dtype. None when they
    differ in anything an adapter does not bridge (E0411 then says what)."""
    candidate = _each_tensor(wide, own, _behind)
    if candidate is None or signature_difference(wide, candidate) is not None:
        return None
    return candidate


def widened(signatures: Sequence[Signature]) -> Signature | None:
    """The container's signature of several programs' signatures: the first, with float32 where
    it has float16 or bfloat16 and another has float32 at the same position; None when there are
    none."""
    if not signatures:
        return None
    wide = program_view(signatures[0])
    for other in signatures[1:]:
        def wider(theirs: TensorSpec, mine: TensorSpec) -> TensorSpec:
            return mine._replace(dtype=theirs.dtype) if adapter_problem(theirs.dtype, mine.dtype) is None else mine
        merged = _each_tensor(program_view(other), wide, wider)
        if merged is not None:
            wide = merged
    return wide


def adapt_all(signatures: Sequence[Signature | None]) -> list[Signature | None] | None:
    """Each signature stated behind the container's (`widened` of those stated), adapted where it
    needs it; None when some pair of them differs in anything an adapter does not bridge."""
    stated = [s for s in signatures if s is not None]
    wide = widened(stated)
    if wide is None:
        return list(signatures)
    out: list[Signature | None] = []
    for s in signatures:
        if s is None:
            out.append(None)
            continue
        a = adapted(wide, s)
        if a is None:
            return None
        out.append(a)
    return out


def dtype_or_shape_difference(stated: Signature, program: Signature) -> str | None:
    """The first difference in dtype, shape or count between the program behind `stated` and
    `program` (a program's own), names left out; None when there is none. What `--signature-from`
    cannot paper over: the program would refuse its first call."""
    def unnamed(s: Signature) -> Signature:
        return Signature(tuple(Method(m.name, *(tuple(t._replace(name=None) for t in part)
                                                for part in (m.inputs, m.outputs, m.buffers)))
                               for m in s.methods))

    return signature_difference(unnamed(program_view(stated)), unnamed(program))
