"""The .ptd an entry extracted from a container needs beside it: the entry's named data.

An entry packed with named data (a .ptd's tensors moved by `--data`, or a program's own named
data moved by `share_named_data`) carries only keys in its manifest entry; the bytes are the
container's shared segments. `entry_data_file` writes those keys and bytes as a .ptd
(ptd_write.py), which the ExecuTorch runtime takes as the program's external data file. For a
program payload, each key that names an external tensor of the program gets the tensor layout
the program expects (the runtime checks it); other keys (a backend's constants) are raw bytes, as
in the program's own named data.

An entry without named data needs no data file, and none is written: ExecuTorch 1.5.1's runtime
refuses a data file with no keys ("No non-empty named data maps provided to merge").
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from fatpte.container.locations import open as open_container
from fatpte.container.reader import key_segments, segment_of
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.ptd import read_ptd
from fatpte.executorch.ptd_write import TensorLayout, external_layouts, plan_ptd
from fatpte.executorch.pte import IDENTIFIER, read_program
from fatpte.fileio.atomic import atomic_output
from fatpte.format.model import Segment


@dataclass(frozen=True, slots=True)
class EntryData:
    """What `entry_data_file` wrote."""

    path: Path | None  # None when the entry has no named data, so nothing was written
    entry: str
    keys: tuple[str, ...]
    size: int


def entry_data_file(
    container_path: str | os.PathLike[str], name_or_backend_id: str, dest: str | os.PathLike[str]
) -> EntryData:
    """Write to `dest` a .ptd holding the named data of the entry `name_or_backend_id` (as
    `fatpte.extract` finds it). For an entry without named data nothing is written (path None).

    The segments are streamed from the container into place (never held in memory: weights are
    many GB), each checked against its CRC32C on the way; a damaged segment leaves `dest` as it was."""
    target = Path(dest)
    with open_container(container_path) as c:
        entry = c.find(name_or_backend_id)
        manifest = c.manifest
        found = None if manifest is None else manifest.entry(entry.name)
        keys = () if found is None else tuple(found.named_data)
        if not keys:
            return EntryData(None, entry.name, (), 0)
        assert manifest is not None  # keys come from the manifest
        segments: list[Segment] = []
        local: dict[int, int] = {}  # container segment index -> .ptd segment index
        key_segment: dict[str, int] = {}
        by_key = key_segments(c)  # E0414 for a key past the segment table
        for key in keys:
            seg = by_key.get(key)
            if seg is None:
                seg = segment_of(c, key)  # NAMED_DATA_NOT_FOUND, naming the keys there are
            key_segment[key] = local.setdefault(seg.index, len(segments))
            if key_segment[key] == len(segments):
                segments.append(seg)
        layouts: dict[str, TensorLayout] = {}
        if entry.payload_kind == IDENTIFIER:
            program = read_program(c.payload(entry, verify=True), source=f"{c.source}[{entry.name}]")
            layouts = {k: v for k, v in external_layouts(program).items() if k in key_segment}
        plan = plan_ptd(key_segment, [seg.size for seg in segments], layouts)
        with atomic_output(target) as out:
            out.write(plan.prefix)
            out.flush()
            for seg, at in zip(segments, plan.offsets, strict=True):
                actual = c.copy_range(seg.offset, seg.size, out.fileno(), at)
                if actual != seg.checksum:
                    raise FatpteError(
                        ErrorCode.SEGMENT_CHECKSUM_MISMATCH,
                        f"segment {seg.index} (named data of {entry.name!r}) has CRC32C {actual:08x}, but the "
                        f"segment table says {seg.checksum:08x}: the container is damaged; nothing was written",
                        source=c.source, field=f"segments[{seg.index}].checksum", expected=seg.checksum,
                        actual=actual)
            os.ftruncate(out.fileno(), plan.size)
            with mmap.mmap(out.fileno(), 0, access=mmap.ACCESS_READ) as written, memoryview(written) as view:
                read_ptd(view, source=str(target))  # what was written must read back
    return EntryData(target, entry.name, keys, plan.size)
