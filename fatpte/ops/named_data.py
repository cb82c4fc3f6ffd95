"""Named-data planning for `pack`: every key's bytes are opened without being read whole (paths
are mapped), identical contents are stored once whatever their keys (the other keys become
aliases of the same segment), and a key given two different contents is an error naming the key
and both sources. Reading a key back is `Container.named_data` (fatpte.container.reader).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.sources import Source, open_source, same_bytes
from fatpte.format import layout as L
from fatpte.format.structure import valid_alignment
from fatpte.manifest.model import MAX_TEXT_BYTES, TensorLayout
from fatpte.ops.specialization import NamedData, NamedDataValue, Specialization


@dataclass(slots=True)
class SegmentPlan:
    """One segment to write: its bytes, its alignment and the keys that name it."""

    source: Source
    alignment: int
    keys: list[str] = field(default_factory=list)
    offset: int = 0


@dataclass(slots=True)
class NamedDataPlan:
    segments: list[SegmentPlan]
    key_segment: dict[str, int]  # every key -> segment index
    entry_keys: list[tuple[str, ...]]  # per specialization, the keys it needs, in the order given
    key_layout: dict[str, TensorLayout]  # the keys given a tensor layout


def _split(value: Any, default_alignment: int, label: str) -> tuple[Any, int, TensorLayout | None]:
    align = default_alignment
    layout = None
    if isinstance(value, NamedData):
        if value.alignment is not None:
            align = value.alignment
        if value.layout is not None:
            layout = TensorLayout.from_mapping(value.layout, f"{label}.layout")
        value = value.source
    if isinstance(align, bool) or not isinstance(align, int) or not valid_alignment(align):
        raise FatpteError(ErrorCode.BAD_SEGMENT_ALIGNMENT,
                          f"{label}: alignment {align!r} is not a power of two from 1 to {L.MAX_ALIGNMENT}",
                          field=label, actual=align)
    return value, align, layout


def _check_key(key: Any, label: str) -> str:
    if not isinstance(key, str) or not key:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{label}: a named-data key must be a non-empty string",
                          field=label, actual=key)
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{label}: key {key!r} is not valid Unicode",
                          field=label, actual=key) from None
    if size > MAX_TEXT_BYTES:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{label}: key is {size} bytes, above {MAX_TEXT_BYTES}",
                          field=label, actual=key)
    return key


class _Planner:
    """The segments `plan` builds, key by key: each source opened once per path and hashed, equal
    contents stored once, a key given two contents or two layouts refused."""

    def __init__(self, default_alignment: int, stack: contextlib.ExitStack) -> None:
        self.default_alignment = default_alignment
        self.stack = stack
        self.segments: list[SegmentPlan] = []
        self.key_segment: dict[str, int] = {}
        self.key_source: dict[str, Source] = {}
        self.by_content: dict[tuple[int, int], list[int]] = {}
        self.opened: dict[str, Source] = {}  # one mapping per distinct path, however many keys name it
        self.key_layout: dict[str, TensorLayout] = {}
        self.key_layout_label: dict[str, str] = {}

    def define(self, key: str, value: Any, label: str) -> None:
        raw, align, layout = _split(value, self.default_alignment, label)
        if layout is not None:
            self._layout(key, layout, label)
        src = self._open(raw, label)
        if key in self.key_source:
            self._again(key, src, align, label)
            return
        self.key_source[key] = src
        group = self.by_content.setdefault((src.size, src.checksum), [])
        segments = self.segments
        home = next((i for i in group if segments[i].source is src or same_bytes(segments[i].source, src)), None)
        if home is None:
            home = len(segments)
            segments.append(SegmentPlan(src, align))
            group.append(home)
        segments[home].keys.append(key)
        segments[home].alignment = max(segments[home].alignment, align)
        self.key_segment[key] = home

    def _layout(self, key: str, layout: TensorLayout, label: str) -> None:
        known = self.key_layout.get(key)
        if known is not None and not known.same_as(layout):
            raise FatpteError(ErrorCode.NAMED_DATA_CONFLICT,
                              f"named-data key {key!r} is given two layouts: {known.text()} by "
                              f"{self.key_layout_label[key]} and {layout.text()} by {label}; give each tensor one",
                              field=label, expected=known.text(), actual=layout.text())
        self.key_layout.setdefault(key, layout)
        self.key_layout_label.setdefault(key, label)

    def _open(self, raw: Any, label: str) -> Source:
        cache_key = os.fspath(raw) if isinstance(raw, (str, os.PathLike)) else None
        src = self.opened.get(cache_key) if cache_key is not None else None
        if src is None:
            src = self.stack.enter_context(open_source(raw, label))
            if isinstance(raw, (bytes, bytearray, memoryview)):
                src.label = f"{label} (bytes)"
            src.hash()  # needed now: equal contents are found by (size, checksum)
            if cache_key is not None:
                self.opened[cache_key] = src
        return src

    def _again(self, key: str, src: Source, align: int, label: str) -> None:
        """`key` given once more: the same contents (its segment aligned for both), or refused."""
        first = self.key_source[key]
        if first is not src and not (first.size == src.size and first.checksum == src.checksum
                                     and same_bytes(first, src)):
            raise FatpteError(ErrorCode.NAMED_DATA_CONFLICT,
                              f"named-data key {key!r} is given two different contents: {first.label} "
                              f"({first.size} bytes, CRC32C {first.checksum:08x}) and {src.label} "
                              f"({src.size} bytes, CRC32C {src.checksum:08x}); give each content its own "
                              "key", field=label, expected=first.label, actual=src.label)
        seg = self.segments[self.key_segment[key]]
        seg.alignment = max(seg.alignment, align)


def plan(
    specs: Sequence[Specialization],
    shared: Mapping[str, NamedDataValue] | None,
    default_alignment: int,
    stack: contextlib.ExitStack,
) -> NamedDataPlan:
    """Open, checksum and deduplicate every named-data source; sources stay open in `stack`."""
    planner = _Planner(default_alignment, stack)
    if shared is not None:
        if not isinstance(shared, Mapping):
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, "named_data must map keys to bytes or paths",
                              field="named_data")
        for key, value in shared.items():
            planner.define(_check_key(key, "named_data"), value, f"named_data[{key!r}]")
    entry_keys = [_entry_keys(i, s, planner) for i, s in enumerate(specs)]
    for i, needed in enumerate(entry_keys):
        for key in needed:
            if key not in planner.key_segment:
                raise FatpteError(ErrorCode.NAMED_DATA_NOT_FOUND,
                                  f"specialization[{i}] needs named-data key {key!r}, which no specialization "
                                  "and no pack(named_data=...) defines", field=f"specialization[{i}].named_data",
                                  actual=key)
    return NamedDataPlan(planner.segments, planner.key_segment, entry_keys, planner.key_layout)


def _entry_keys(i: int, s: Specialization, planner: _Planner) -> tuple[str, ...]:
    """The keys specialization `i` needs, in the order given; those it defines defined."""
    nd = s.named_data
    keys: list[str] = []
    if nd is None:
        pass
    elif isinstance(nd, Mapping):
        for key, value in nd.items():
            label = f"specialization[{i}].named_data[{key!r}]"
            planner.define(_check_key(key, label), value, label)
            keys.append(key)
    elif isinstance(nd, (list, tuple)):
        keys.extend(_check_key(k, f"specialization[{i}].named_data") for k in nd)
    else:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                          f"specialization[{i}].named_data must map keys to bytes or paths, or list keys "
                          f"given to pack(named_data=...), not {type(nd).__name__}",
                          field=f"specialization[{i}].named_data")
    return tuple(dict.fromkeys(keys))
