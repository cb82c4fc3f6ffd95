"""Golden calls that cannot discriminate, said as warnings (FatpteWarning E0712 GOLDEN_WEAK) by
`fatpte pack --golden` and `fatpte check` (docs/golden.md, "Adequacy"):

- an input that is constant (every element equal; all zeros the common case): a model's response
  to it hides most of its weights (an MLP given zeros answers its last bias);
- an output that is the same tensor in every call of a method (two calls or more): the calls do
  not exercise what changes it;
- (check only: it runs the entries) an entry whose tolerance was widened past its dtype's default
  and admits more than the largest difference seen between it and the other entries: a wrong
  entry that close passes.

Float inputs of two elements or more are looked at; an index or a mask is often constant for good
reasons. The warnings are advice: nothing fails on them (`check --mutants` is the test that does).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Final, NamedTuple

from fatpte.errors import ErrorCode, FatpteWarning, clipped
from fatpte.value.dtypes import FLOAT_DTYPES, element_size
from fatpte.value.tensors import decode_floats

_LISTED: Final = 8  # calls named in one warning; more are counted


class CallView(NamedTuple):
    """One golden call as the warnings read it: its method, its inputs' dtypes and bytes, and its
    outputs by golden key (equal tensors have equal keys)."""

    method: str
    inputs: tuple[tuple[str, bytes], ...]
    outputs: tuple[str, ...]


def constant_inputs(calls: Sequence[CallView]) -> list[str]:
    """`golden call K input J is all zeros` / `... is constant (every element V)`, for each float
    input of two elements or more whose elements are all the same bits (0.0 beside -0.0 is not
    constant here: a rare case, and the check reads no element but the first)."""
    found = []
    for k, call in enumerate(calls):
        for j, (dtype, data) in enumerate(call.inputs):
            size = element_size(dtype) or 0
            if dtype not in FLOAT_DTYPES or size == 0 or len(data) < 2 * size:
                continue
            # Every element the same bytes (compared without decoding them: an input may be large).
            if data != data[:size] * (len(data) // size):
                continue
            first = decode_floats(dtype, data[:size])[0]
            found.append(f"golden call {k} input {j} is " + ("all zeros" if first == 0 else
                                                               f"constant (every element {first:.6g})"))
    return found


def unchanging_outputs(calls: Sequence[CallView]) -> list[str]:
    """`output J of method M is the same in all N calls`, for each method called twice or more."""
    found = []
    by_method: dict[str, list[CallView]] = {}
    for call in calls:
        by_method.setdefault(call.method, []).append(call)
    for method, mine in by_method.items():
        if len(mine) < 2:
            continue
        for j in range(min(len(c.outputs) for c in mine)):
            if len({c.outputs[j] for c in mine}) == 1:
                found.append(f"output {j} of method {clipped(method, 64)!r} is the same tensor in all {len(mine)} "
                             "calls")
    return found


def warn_calls(calls: Sequence[CallView], where: str) -> None:
    """One E0712 warning for the calls' constant inputs, one for their unchanging outputs."""
    inputs = constant_inputs(calls)
    if inputs:
        _warn(f"{where}: {_listed(inputs)}: a call whose inputs are constant cannot tell most wrong weights from right "
              "ones (an MLP given zeros answers its last bias); record calls with varied inputs (random values of "
              "the range the model sees)")
    outputs = unchanging_outputs(calls)
    if outputs:
        _warn(f"{where}: {_listed(outputs)}: calls whose outputs do not change do not exercise what changes them; "
              "record calls with different inputs")


def wide_tolerances(entries: Iterable[Any], pairs: Iterable[Any], defaults: dict[str, tuple[float, float]]) -> None:
    """An E0712 warning for each entry that ran (fatpte.ops.check's EntryCheck) whose widened
    tolerance (atol or rtol past its dtype's default, `defaults`) admits more than the largest
    difference between it and any other entry on the outputs both gave (fatpte.ops.check's
    PairCheck)."""
    spread: dict[str, float] = {}
    for p in pairs:
        for name in (p.a, p.b):
            spread[name] = max(spread.get(name, 0.0), p.max_abs)
    for e in entries:
        if e.name not in spread:
            continue
        default = {o.dtype: defaults.get(o.dtype, (0.0, 0.0)) for o in e.outputs}
        widened = [o for o in e.outputs if o.atol > default[o.dtype][0] or o.rtol > default[o.dtype][1]]
        if not widened:
            continue
        widest = max(widened, key=lambda o: o.bound)
        if widest.bound > spread[e.name]:
            _warn(f"entry {clipped(e.name)}: its tolerance ({widest.atol:.3g} + {widest.rtol:.3g} x max|want|) admits "
                  f"differences up to {widest.bound:.3g} (golden call {widest.call}, output {widest.output}), and it "
                  f"differs from the other entries by at most {spread[e.name]:.3g}: a wrong entry that close passes; "
                  "a tolerance nearer the spread the target devices show discriminates more")


def _listed(items: Sequence[str]) -> str:
    shown = "; ".join(items[:_LISTED])
    return shown + (f"; and {len(items) - _LISTED} more" if len(items) > _LISTED else "")


def _warn(message: str) -> None:
    warnings.warn(FatpteWarning(ErrorCode.GOLDEN_WEAK, message, field="golden"), stacklevel=3)


def warn_container(container: Any) -> None:
    """`warn_calls` for the golden calls of each entry of an open container (fatpte.container's
    Container), read from its named data; entries that share their calls are warned about once."""
    manifest = container.manifest
    if manifest is None:
        return
    layouts = dict(manifest.layouts)
    shared: dict[tuple[Any, ...], list[str]] = {}
    for record in manifest.entries:
        if record.golden:
            shared.setdefault(tuple(record.golden), []).append(record.name)
    for golden, names in shared.items():
        views = [CallView(call.method, tuple((layouts[k].dtype, bytes(container.named_data(k))) for k in call.inputs
                                             if k in layouts), tuple(o.key for o in call.outputs)) for call in golden]
        where = ("entry " if len(names) == 1 else "entries ") + ", ".join(clipped(n, 48) for n in names[:_LISTED])
        warn_calls(views, where)
