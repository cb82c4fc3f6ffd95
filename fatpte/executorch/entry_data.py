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

import os
from dataclasses import dataclass
from pathlib import Path

from fatpte.checksum import crc32c
from fatpte.container import Container
from fatpte.container import open as open_container
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.ptd_write import TensorLayout, external_layouts, write_ptd
from fatpte.executorch.pte import IDENTIFIER, read_program


@dataclass(frozen=True, slots=True)
class EntryData:
    """What `entry_data_file` wrote."""

    path: Path | None  # None when the entry has no named data, so nothing was written
    entry: str
    keys: tuple[str, ...]
    size: int


def _verified(c: Container, key: str) -> bytes:
    """The bytes of `key`, after checking its segment's CRC32C: a damaged container writes no .ptd."""
    blob = bytes(c.named_data(key))
    manifest = c.manifest
    assert manifest is not None  # named_data found the key in it
    seg = c.segments[manifest.keys[key]]
    actual = crc32c(blob)
    if actual != seg.checksum:
        raise FatpteError(ErrorCode.SEGMENT_CHECKSUM_MISMATCH, f"segment {seg.index} (named-data key {key!r}) has "
                          f"CRC32C {actual:08x}, but the segment table says {seg.checksum:08x}: the container is damaged; "
                          "nothing was written", source=c.source, field=f"segments[{seg.index}].checksum",
                          expected=seg.checksum, actual=actual)
    return blob


def entry_data_file(
    container_path: str | os.PathLike[str], name_or_backend_id: str, dest: str | os.PathLike[str]
) -> EntryData:
    """Write to `dest` a .ptd holding the named data of the entry `name_or_backend_id` (as
    `fatpte.extract` finds it). For an entry without named data nothing is written (path None)."""
    with open_container(container_path) as c:
        entry = c.find(name_or_backend_id)
        manifest = c.manifest
        found = None if manifest is None else manifest.entry(entry.name)
        keys = () if found is None else tuple(found.named_data)
        tensors = {key: _verified(c, key) for key in keys}
        layouts: dict[str, TensorLayout] = {}
        if entry.payload_kind == IDENTIFIER:
            program = read_program(bytes(c.payload(entry, verify=True)), source=f"{c.source}[{entry.name}]")
            layouts = {k: v for k, v in external_layouts(program).items() if k in tensors}
    if not keys:
        return EntryData(None, entry.name, (), 0)
    target = write_ptd(dest, tensors, layouts)
    return EntryData(target, entry.name, keys, target.stat().st_size)
