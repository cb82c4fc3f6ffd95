"""Rewriting containers, lipo style: add, remove or replace entries, and convert between versions.

Every edit reads the source container's entries back as `Specialization`s whose payloads and
named data are zero-copy views of the source mapping, changes that list, and packs it again to
`dest` (atomically, through `fatpte.pack`). Entries keep their name, backend id, priority,
alignment and everything the manifest says of them (requirements, signature, named-data keys,
digests, provenance), so an edit changes nothing but what was asked; named data no remaining
entry uses is dropped. The layout is the canonical one `fatpte.pack` writes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from fatpte.container.reader import Container, segment_of
from fatpte.container.reader import open as open_container
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.mapping import map_view
from fatpte.fileio.sources import PayloadSource
from fatpte.format import layout as L
from fatpte.format.model import Entry
from fatpte.ops.packing import pack
from fatpte.ops.specialization import NamedData, Specialization

PathLike = str | os.PathLike[str]


def specializations_of(container: Container, views: list[memoryview]) -> list[Specialization]:
    """The container's entries as specializations, in table order, with what the manifest says
    of each; payload views are appended to `views` so the caller can release them."""
    manifest = container.manifest if container.version == L.VERSION_2 else None
    described = {} if manifest is None else manifest.by_name()
    specs = []
    for e in container.entries:
        view = container.payload(e)
        views.append(view)
        if container.version == L.VERSION_1:
            specs.append(Specialization(e.backend_id, view))
            continue
        m = described.get(e.name)
        if m is None:
            specs.append(Specialization(e.backend_id, view, name=e.name, priority=e.priority,
                                        alignment=e.alignment))
            continue
        specs.append(Specialization(
            e.backend_id, view, name=e.name, priority=e.priority, alignment=e.alignment,
            requires=m.requires, named_data=list(m.named_data) or None, signature=m.signature,
            source_digest=m.source_digest, provenance=dict(m.provenance) or None,
            payload_sha256=m.payload_sha256 is not None, executorch_backends=m.executorch_backends,
            golden=m.golden))
    return specs


def _named_data(container: Container, specs: Sequence[Specialization],
                views: list[memoryview]) -> dict[str, NamedData] | None:
    """The named data `specs` use, in segment order (so segments keep their relative order),
    as zero-copy views with their segments' alignment."""
    manifest = container.manifest if container.version == L.VERSION_2 else None
    if manifest is None or not manifest.named_data:
        return None
    used = {k for s in specs if isinstance(s.named_data, list) for k in s.named_data}
    used |= {k for s in specs for call in s.golden for k in call.tensor_keys()}  # golden tensors go with their entries
    out: dict[str, NamedData] = {}
    layouts = dict(manifest.layouts)  # once: manifest.layout(key) scans them all
    for key, seg_index in sorted(manifest.named_data, key=lambda kv: kv[1]):
        if key in used:
            view = container.named_data(key)
            views.append(view)
            out[key] = NamedData(view, segment_of(container, key).alignment, layouts.get(key))
    return out or None


@contextlib.contextmanager
def _opened(path: PathLike) -> Iterator[tuple[Container, list[Specialization], list[memoryview]]]:
    views: list[memoryview] = []
    with open_container(path) as container:
        try:
            yield container, specializations_of(container, views), views
        finally:
            for v in views:
                v.release()


def _repack(container: Container, specs: list[Specialization], dest: PathLike, views: list[memoryview],
            version: int | None = None, adapt_io: bool = False) -> Path:
    return pack(specs, dest, version=container.version if version is None else version,
                named_data=_named_data(container, specs, views), adapt_io=adapt_io)


def add(path: PathLike, dest: PathLike, new: Sequence[Specialization], *, adapt_io: bool = False) -> Path:
    """Write to `dest` the container at `path` with `new` appended after its entries. `adapt_io`:
    as `fatpte.pack`'s (a float16 or bfloat16 program added behind the float32 signature)."""
    with _opened(path) as (container, specs, views):
        return _repack(container, [*specs, *new], dest, views, adapt_io=adapt_io)


def remove(path: PathLike, dest: PathLike, names: Sequence[str]) -> Path:
    """Write to `dest` the container at `path` without the entries named `names`."""
    with _opened(path) as (container, specs, views):
        drop = {container.entry(n).index for n in names}
        kept = [s for i, s in enumerate(specs) if i not in drop]
        if not kept:
            raise FatpteError(ErrorCode.NO_SPECIALIZATIONS,
                              f"removing {', '.join(map(repr, names))} would leave no entry; a container "
                              f"holds at least one", source=container.source)
        return _repack(container, kept, dest, views)


def replace(path: PathLike, dest: PathLike, name: str, payload: PayloadSource, *, adapt_io: bool = False) -> Path:
    """Write to `dest` the container at `path` with the payload of entry `name` replaced.

    The entry keeps its name, backend id, priority, alignment, requirements and source digest;
    what its manifest record said of the old payload is derived again from the new one, as `pack`
    derives it: a SHA-256 of the payload is recomputed, and when the new payload is an ExecuTorch
    program, its signature, ExecuTorch backends and program digest are its own and its named data
    is the keys it loads that the container holds (specs/executorch.md section 7). The new payload
    passes the checks `pack` makes (a backend id that contradicts its delegates, a signature the
    other entries do not share, are refused); with `adapt_io`, as `fatpte.pack`'s, a float16 or
    bfloat16 program is put behind the float32 signature."""
    with _opened(path) as (container, specs, views):
        i = container.entry(name).index
        specs[i] = _renewed(container, specs[i], payload)
        return _repack(container, specs, dest, views, adapt_io=adapt_io)


def _renewed(container: Container, old: Specialization, payload: PayloadSource) -> Specialization:
    """`old` with `payload`, forgetting what its record said about the old payload."""
    from fatpte.ops import program_entry as pe

    provenance = {k: v for k, v in (old.provenance or {}).items() if k not in (pe.SHA256_KEY, pe.NAMED_DATA_KEY)}
    named = old.named_data
    data = map_view(payload) if isinstance(payload, (str, os.PathLike)) else payload
    if pe.is_program(data):
        try:
            facts = pe.program_facts(data, source=os.fspath(payload) if isinstance(payload, (str, os.PathLike))
                                     else None)
        except FatpteError:
            facts = None  # opaque bytes that say ET12: packed as any payload
        if facts is not None and container.manifest is not None:
            held = container.manifest.keys
            kept = [k for k in (named if isinstance(named, list) else []) if k in facts.needed]
            named = kept + sorted((facts.needed - set(kept)) & set(held), key=lambda k: held[k]) or None
    return dataclasses.replace(old, payload=payload, signature=None, executorch_backends=None,
                               provenance=provenance or None, named_data=named)


def v1_obstacles(container: Container) -> list[str]:
    """Why the container cannot be written as version 1; empty when it can.

    Version 1 has no alignment either; converting drops it, which loses nothing but padding,
    so alignment is not an obstacle."""
    reasons = []
    if container.header.manifest_size:
        reasons.append("it has a manifest (requirements, signature), which version 1 cannot hold")
    if container.segments:
        reasons.append(f"it has {len(container.segments)} named-data segments, which version 1 cannot hold")
    for e in container.entries:
        if e.name != e.backend_id:
            reasons.append(f"entry {e.name!r} has a name that differs from its backend id {e.backend_id!r} "
                           f"(version 1 has no names)")
        if e.priority:
            reasons.append(f"entry {e.name!r} has priority {e.priority} (version 1 has no priorities)")
    return reasons


def convert(path: PathLike, dest: PathLike, version: int) -> Path:
    """Write the container at `path` to `dest` as `version` (1 or 2).

    To version 1: refused, with every reason, when the container holds anything version 1
    cannot (see `v1_obstacles`); payload alignment is dropped. To version 2: each entry is
    named after its backend id, with the default alignment; two v1 entries with the same
    backend id are refused, since version 2 names are unique."""
    if version not in L.SUPPORTED_VERSIONS:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"version must be 1 or 2, not {version!r}",
                          field="version", actual=version)
    views: list[memoryview] = []
    with open_container(path) as container:
        try:
            if version == L.VERSION_1:
                reasons = v1_obstacles(container)
                if reasons:
                    raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1,
                                      "cannot convert to version 1: " + "; ".join(reasons),
                                      source=container.source)
                specs = [Specialization(e.backend_id, v) for e, v in _views(container, views)]
                return pack(specs, dest, version=L.VERSION_1)
            if container.version == L.VERSION_1:
                seen: set[str] = set()
                for e in container.entries:
                    if e.backend_id in seen:
                        raise FatpteError(ErrorCode.DUPLICATE_NAME,
                                          f"cannot convert to version 2: two entries have the backend id "
                                          f"{e.backend_id!r}, and version 2 names must be unique; remove one "
                                          f"first", source=container.source,
                                          field=f"entries[{e.index}].backend_id")
                    seen.add(e.backend_id)
                specs = [Specialization(e.backend_id, v) for e, v in _views(container, views)]
                return pack(specs, dest, version=L.VERSION_2)
            return _repack(container, specializations_of(container, views), dest, views)
        finally:
            for v in views:
                v.release()


def _views(container: Container, views: list[memoryview]) -> Iterator[tuple[Entry, memoryview]]:
    for e in container.entries:
        view = container.payload(e)
        views.append(view)
        yield e, view


def isolate(path: PathLike, dest: PathLike, name: str, payload: PayloadSource | None = None) -> Path:
    """Write to `dest` a container of entry `name` of the container at `path` alone, with the named
    data and golden tensors it uses; its payload replaced by `payload` when one is given (as
    `replace` does). What `fatpte check --mutants` runs a known-wrong copy of an entry in."""
    with _opened(path) as (container, specs, views):
        i = container.entry(name).index
        spec = specs[i] if payload is None else _renewed(container, specs[i], payload)
        return _repack(container, [spec], dest, views)
