"""A fat program from programs already lowered, without torch: `merge_programs`.

A deployment holds one model lowered several ways (`m_xnnpack.pte`, `m_portable.pte`) and no
export environment. `merge_programs` writes one `.pte` that ExecuTorch runs with the fat delegate
library (specs/executorch.md section 8): the first program that delegates is the frame, each of
its methods' delegate gets backend id `FatpteBackend` and, as its payload, an NFAT container
holding each lowered program's delegate payload for that method and the portable program whole,
the nested fallback the fat delegate runs when no backend entry can (docs/executorch.md).

That is only right when each delegate is the whole method: its call takes the method's inputs
and gives its outputs, in order, and nothing runs beside it. Then the portable program, whose
method takes and gives the same values, computes what the delegate computes. A program whose
backend took only part of the graph (state kept outside the delegate, operators the backend left
to the portable kernels, several partitions) is refused, saying which input, output or value
differs; `fatpte.ops.fat_lowering` makes fat delegates of partitions, at export time.

What is checked, before anything is written: the programs' signatures agree exactly as `pack`
checks them (E0411); every delegating program has one delegate per method covering it, with the
frame's compile specs (the fat delegate hands one list to whichever entry runs); the portable
program's methods take and give the delegate calls' values; the named data every entry loads is
the frame's (the fat delegate passes the frame's named data map on to the entry that runs).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fatpte.errors import ErrorCode, FatpteError, listed, quoted
from fatpte.executorch.keys import program_keys
from fatpte.executorch.pte import Delegate, MethodPlan, Program, read_program
from fatpte.executorch.rewrite import rename_delegates, replace_segment
from fatpte.executorch.signature import mutable_buffer_values, program_signature
from fatpte.executorch.vendor_devices import delegate_device
from fatpte.fileio.atomic import atomic_output, io_error
from fatpte.fileio.mapping import map_view
from fatpte.manifest.model import Signature
from fatpte.ops.fat_lowering import FAT_BACKEND_ID
from fatpte.ops.packing import pack
from fatpte.ops.program_entry import disagreeing_signature
from fatpte.ops.pte_specialize import backend_id_of
from fatpte.ops.specialization import Specialization

PathArg = str | os.PathLike[str]


@dataclass(frozen=True)
class _Source:
    name: str  # the entry name in each fat delegate's container
    path: str
    data: bytes
    program: Program

    @property
    def backends(self) -> list[str]:
        return sorted({d.backend_id for m in self.program.methods for d in m.delegates})


def _sources(programs: Sequence[PathArg | tuple[str, PathArg]]) -> list[_Source]:
    pairs = [(None, p) if isinstance(p, (str, os.PathLike)) else p for p in programs]
    out: list[_Source] = []
    for name, path in pairs:
        source = os.fspath(path)
        try:
            data = bytes(map_view(path))
        except OSError as exc:
            raise io_error(exc, source, "cannot read") from None
        program = read_program(data, source=source)
        out.append(_Source(name or backend_id_of(program), source, data, program))
    seen: dict[str, str] = {}
    for s in out:
        if s.name in seen:
            raise FatpteError(ErrorCode.DUPLICATE_NAME, f"{seen[s.name]} and {s.path} would both be entry "
                              f"{s.name!r}: name them (NAME=PROGRAM.pte on the command line, (name, path) pairs "
                              "in Python)", source=s.path, field="name", actual=s.name)
        seen[s.name] = s.path
    return out


def _check_signatures(sources: Sequence[_Source]) -> None:
    """E0411 exactly as `pack` finds it: each program's derived signature against the others'."""
    found = disagreeing_signature([(s.name, Signature.from_mapping(program_signature(s.program))) for s in sources])
    if found is not None:
        i, message = found
        raise FatpteError(ErrorCode.SIGNATURE_MISMATCH, f"{message} ({sources[0].path} vs {sources[i].path})",
                          source=sources[i].path, field="signature")


def _what(plan: MethodPlan, index: int) -> str:
    """Value `index` of a method in words: `float32[2, 3]`, and what it is when not a plain value."""
    t = plan.tensors.get(index)
    text = plan.value_kinds[index] if t is None else f"{t.dtype}[{', '.join(map(str, t.shape))}]"
    buffers = mutable_buffer_values(plan)
    if index in buffers:
        name = buffers[index]
        text += f", the mutable buffer {quoted(name)}" if name else ", a mutable buffer"
    elif t is not None and not t.memory_planned and index not in plan.inputs:
        text += ", a constant"
    return text


def _coverage_problems(plan: MethodPlan) -> list[str]:
    """Why the method is not one delegate call over its inputs and outputs; [] when it is."""
    calls = plan.delegate_calls
    if not calls:
        return ["it calls no delegate"]
    out = []
    if len(calls) > 1:
        out.append(f"its graph is split into {len(calls)} delegate calls")
    if plan.kernel_calls:
        ops = list(dict.fromkeys(k.operator for k in plan.kernel_calls))
        out.append(f"it runs {listed(ops)} outside the delegate")
    args = calls[0][1]
    whole = (*plan.inputs, *plan.outputs)
    if args == whole:
        return out
    given = set(args)
    out += [f"input {k} (value {v}: {_what(plan, v)}) does not reach the delegate"
            for k, v in enumerate(plan.inputs) if v not in given]
    out += [f"output {k} (value {v}: {_what(plan, v)}) is not the delegate's" for k, v in enumerate(plan.outputs)
            if v not in given]
    extra = [f"value {v} ({_what(plan, v)})" for v in args if v not in set(whole)]
    if extra:
        out.append(f"the delegate also takes {listed(extra)}, which the method neither takes nor gives")
    if set(args) == set(whole):
        out.append(f"the delegate takes the method's inputs and outputs in another order ({list(args)}, not "
                   f"{list(whole)})")
    return out


def _stand_in_problems(frame: MethodPlan, portable: MethodPlan) -> list[str]:
    """Why the portable method cannot take and give the values of the frame's delegate call."""
    out = []
    for part in ("inputs", "outputs"):
        a, b = getattr(frame, part), getattr(portable, part)
        if len(a) != len(b):
            extra = [f"value {v} ({_what(portable, v)})" for v in b if v in mutable_buffer_values(portable)]
            why = f" ({listed(extra)}: state the portable program writes back)" if extra else ""
            out.append(f"the delegate call has {len(a)} {part}, the portable method {len(b)}{why}")
            continue
        for k, (x, y) in enumerate(zip(a, b)):
            tx, ty = frame.tensors.get(x), portable.tensors.get(y)
            sx = frame.value_kinds[x] if tx is None else (tx.dtype, tx.shape)
            sy = portable.value_kinds[y] if ty is None else (ty.dtype, ty.shape)
            if sx != sy:
                out.append(f"{part[:-1]} {k} is {_what(frame, x)} in the delegate call but {_what(portable, y)} in "
                           "the portable program")
    return out


def _refuse(path: str, method: str, why: list[str], what: str) -> FatpteError:
    return FatpteError(ErrorCode.INVALID_ARGUMENT, f"method {quoted(method)}: {what}: {'; '.join(why)}",
                       source=path, field=f"methods[{quoted(method)}]")


_NOT_WHOLE = ("the delegate does not cover the whole method, so the portable program cannot stand in for it "
              "(lower the whole model to the backend, make the fat delegate at export with "
              "fatpte.ops.fat_lowering, or pack the programs into a container with `fatpte pack`)")


def _method(source: _Source, name: str) -> MethodPlan:
    return next(p for p in source.program.methods if p.name == name)  # E0411 first: the same methods


def _whole_delegate(source: _Source, method: str) -> Delegate:
    """The one delegate of `method` of `source`, which covers the whole method; else refused."""
    plan = _method(source, method)
    why = _coverage_problems(plan)
    if why:
        raise _refuse(source.path, method, why, f"{source.backends[0]}: {_NOT_WHOLE}")
    return plan.delegates[plan.delegate_calls[0][0]]


def _check_named_data(frame: _Source, others: Sequence[_Source], portable: _Source | None) -> None:
    """Every key an entry loads is the frame's, with the same bytes; the portable program holds
    none of the frame's keys (a runtime refuses a key given twice)."""
    held = {r.key: frame.data[r.offset : r.offset + r.size] for r in frame.program.named_data}
    for s in others:
        own = {r.key: s.data[r.offset : r.offset + r.size] for r in s.program.named_data}
        for key in program_keys(s.program).loads:
            if held.get(key) is None or (key in own and own[key] != held[key]):
                why = "does not hold" if key not in held else "holds other bytes for"
                raise FatpteError(ErrorCode.NAMED_DATA_CONFLICT, f"{s.path} loads named-data key {quoted(key)}, "
                                  f"which {frame.path} {why}: the fat delegate gives every entry the named data "
                                  f"of the first delegating program ({frame.path}), so each program's weights "
                                  "must be the same", source=s.path, field=f"named_data[{quoted(key)}]")
    if portable is not None:
        keys = program_keys(portable.program)
        twice = [k for k in keys.holds if k in held]
        missing = [k for k in keys.external if k not in held]
        if twice or missing:
            why = (f"holds {listed([quoted(k) for k in twice])}, which {frame.path} holds too (the runtime refuses a "
                   "key given twice)" if twice else
                   f"loads {listed([quoted(k) for k in missing])} from a data file (.ptd), and the fat program "
                   f"carries only {frame.path}'s named data")
            raise FatpteError(ErrorCode.NAMED_DATA_CONFLICT, f"the portable program {why}", source=portable.path,
                              field="named_data")


def merge_programs(
    programs: Sequence[PathArg | tuple[str, PathArg]],
    dest: PathArg,
    *,
    priorities: Mapping[str, int] | None = None,
    golden: Any = None,
    golden_from: str | None = None,
) -> Path:
    """Write to `dest` one fat program of `programs`, lowered programs of one model: each
    delegating program's delegate payloads and at most one portable program (no delegate), in
    their order, become the entries of each method's fat delegate (backend id FatpteBackend).

    Entries are named after their backend (`xnnpack`, `portable`, as `pack` names a bare .pte);
    a (name, path) pair in `programs` names its entry. `priorities` maps entry names to
    priorities (default 0; with equal priorities a backend's entry ranks above the portable
    program). `golden` (calls.json with outputs, as `pack` takes it) gives the nested portable
    program's entry golden calls, which the fat delegate runs when its load-time option
    `self_test` is set (docs/golden.md); `golden_from` names the entry whose outputs on them are
    recorded (run by fatpte-run, as `pack(golden_from=)` records them), the calls then needing
    only inputs. FatpteError,
    nothing written, when the programs cannot make one fat program (see the module's text)."""
    sources = _sources(programs)
    if not sources:
        raise FatpteError(ErrorCode.NO_SPECIALIZATIONS, "nothing to merge: give the lowered programs of one model")
    unknown = sorted(set(priorities or {}) - {s.name for s in sources})
    if unknown:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"priority for {listed([quoted(n) for n in unknown])}, which "
                          f"names no program (entries: {listed([quoted(s.name) for s in sources])})",
                          field="priorities", actual=unknown[0])
    _check_signatures(sources)
    delegating, nested = _roles(sources)
    frame = delegating[0]
    rank = dict(priorities or {})
    # (method, its delegate's segment, entries)
    per_method = [(m, *_method_entries(plan.name, delegating, nested, rank))
                  for m, plan in enumerate(frame.program.methods)]
    _check_named_data(frame, delegating[1:], nested)
    if golden_from is not None and golden is None:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "golden_from records the outputs of the golden calls `golden` "
                          "gives: give them too", field="golden_from", actual=golden_from)
    data = _with_fat_delegates(frame, per_method, golden if nested else None, golden_from)
    target = Path(dest)
    with atomic_output(target) as f:
        f.write(data)
    return target


def _roles(sources: Sequence[_Source]) -> tuple[list[_Source], _Source | None]:
    """The delegating programs, each lowered to one backend, and the portable one if any."""
    delegating = [s for s in sources if s.backends]
    portable = [s for s in sources if not s.backends]
    if not delegating:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "no program delegates to a backend: a fat program holds the "
                          "delegate payloads of lowered programs (e.g. m_xnnpack.pte) and the portable program",
                          source=sources[0].path, field="programs")
    if len(portable) > 1:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{portable[0].path} and {portable[1].path} are both portable "
                          "programs: the fat delegate has one nested fallback", source=portable[1].path,
                          field="programs")
    for s in delegating:
        if len(s.backends) > 1 or FAT_BACKEND_ID in s.backends:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{s.path} delegates to {listed(s.backends)}: each program "
                              "given must be lowered to one backend", source=s.path, field="delegates")
    return delegating, portable[0] if portable else None


def _method_entries(method: str, delegating: Sequence[_Source], nested: _Source | None,
                    rank: Mapping[str, int]) -> tuple[int, list[Specialization]]:
    """The fat delegate's entries for `method`: each delegating program's delegate payload, then the
    portable program; with the segment of the first program's delegate, which they replace."""
    frame = delegating[0]
    delegates = [_whole_delegate(s, method) for s in delegating]
    for s, d in zip(delegating[1:], delegates[1:]):
        if d.compile_specs != delegates[0].compile_specs:
            specs = (f"its delegate's compile specs ({[k for k, _ in d.compile_specs]}) are not those of "
                     f"{frame.path}'s ({[k for k, _ in delegates[0].compile_specs]})")
            raise _refuse(s.path, method, [specs], "the fat delegate hands one list of compile specs to "
                          "whichever entry runs")
    entries = [Specialization(backend_id_of(s.program), bytes(s.program.payload(d)), name=s.name,
                              priority=rank.get(s.name, 0), executorch_backends=[d.backend_id],
                              requires=_vendor_device(d))
               for s, d in zip(delegating, delegates)]
    if nested is not None:
        differ = _stand_in_problems(_method(frame, method), _method(nested, method))
        if differ:
            raise _refuse(nested.path, method, differ, "the portable program cannot stand in for the delegate")
        entries.append(Specialization("portable", nested.data, name=nested.name, priority=rank.get(nested.name, 0)))
    if delegates[0].location != "segment":
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"method {quoted(method)}: the delegate payload is inline "
                          "in the flatbuffer, which cannot change size; export with delegate segments (the "
                          "default)", source=frame.path, field=f"delegates[{delegates[0].index}].processed")
    return delegates[0].data_index, entries


def _vendor_device(d: Delegate) -> Any:
    """The requirement of a delegate payload entry whose backend records the device it was compiled
    for (specs/executorch.md section 7, rule 6: an OpenVINO GPU delegate needs an OpenVINO GPU)."""
    found = delegate_device(d)
    return None if found is None else {"accelerators": [{"kind": found[0], "device": found[1]}]}


def _with_fat_delegates(frame: _Source, per_method: Sequence[tuple[int, int, list[Specialization]]],
                        golden: Any, golden_from: str | None = None) -> bytes:
    """The first delegating program with each method's delegate segment replaced by a container of
    its entries, and the delegates renamed to FatpteBackend."""
    data = frame.data
    try:
        with tempfile.TemporaryDirectory(prefix="fatpte-merge-") as tmp:
            for m, segment, entries in per_method:
                fat = pack(entries, Path(tmp, f"method{m}.nfat"), golden=golden,
                           golden_from=golden_from if golden is not None else None).read_bytes()
                data = replace_segment(data, segment, fat, source=frame.path)
    except OSError as exc:  # the temporary folder: pack's own I/O errors are FatpteErrors already
        raise io_error(exc, tempfile.gettempdir(), "cannot use the temporary folder") from None
    program = read_program(data, source=frame.path)
    return rename_delegates(data, FAT_BACKEND_ID, [(m, p.delegate_calls[0][0]) for m, p in enumerate(program.methods)],
                            source=frame.path)
