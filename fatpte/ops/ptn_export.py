"""A .ptn entry whose tensors live in the container, written out as a whole package again.

`ptn_specialization(path, share_named_data=True)` (`fatpte pack --share-pte-named-data`) keeps
as the payload the package without its tensors and moves them into the container's shared
named data, where identical weights of several packages are stored once. A package is meant to
be self-contained, so `fatpte extract` of such an entry (marked by the provenance
`executorch.ptn.named_data = shared`) writes the package with its tensors put back
(`write_entry_package`, laid out as ExecuTorch lays them out: fatpte.executorch.ptn_write).
"""

from __future__ import annotations

import mmap
import os
from typing import BinaryIO

from fatpte.container.reader import Container, key_segments, segment_of
from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.ptn import read_ptn
from fatpte.executorch.ptn_write import SHARED, SHARED_KEY, Owner, layout, tensor_types, write_ptn
from fatpte.fileio.atomic import atomic_output
from fatpte.fileio.checksum import crc32c
from fatpte.format.model import Entry

_CHUNK = 1 << 20


def is_shared_package(container: Container, entry: Entry) -> bool:
    """True when the entry is a .ptn whose tensors were moved into the container."""
    manifest = container.manifest if container.header.manifest_size else None
    found = None if manifest is None else manifest.entry(entry.name)
    return found is not None and dict(found.provenance).get(SHARED_KEY) == SHARED


def write_entry_package(container: Container, entry: Entry, dest: str | os.PathLike[str]) -> int:
    """Write the entry's package with its tensors from the container's named data to `dest`;
    returns its size. Every byte is checked on the way (the payload's CRC32C, each segment's),
    and the written package must read back; on any error `dest` is left as it was."""
    label = f"{container.source}[{entry.name}]"
    payload = container.payload(entry, verify=True)
    package = read_ptn(payload, source=label)
    member = package.member("program.ptg")
    assert member is not None  # read_ptn requires it
    manifest = container.manifest
    found = None if manifest is None else manifest.entry(entry.name)
    keys = () if found is None else found.named_data
    assert manifest is not None  # an entry with named data has a manifest
    by_key = key_segments(container)  # E0414 for a key past the segment table
    types = tensor_types(package.program, source=label)
    unknown = [k for k in keys if k not in types]
    if unknown:
        raise FatpteError(ErrorCode.NAMED_DATA_NOT_FOUND, f"entry {entry.name!r}: program.ptg loads no constant "
                          f"named {unknown[0]!r}, so its package cannot hold it", source=container.source,
                          field=f"named_data[{unknown[0]!r}]")
    missing = [k for k in keys if k not in by_key]
    if missing:
        segment_of(container, missing[0])  # NAMED_DATA_NOT_FOUND, naming the keys there are
    owners, aliases = layout(types, lambda a, b: by_key[a].index == by_key[b].index, keys)

    def write_tensor(owner: Owner, stream: BinaryIO) -> None:
        seg = by_key[owner.key]
        if seg.size != owner.size:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"named data {owner.key!r} is {seg.size} bytes, but "
                              f"program.ptg says {owner.dtype}{list(owner.shape)}, {owner.size} bytes",
                              source=container.source, field=f"segments[{seg.index}].size")
        value = 0
        for start in range(seg.offset, seg.end, _CHUNK):
            end = min(start + _CHUNK, seg.end)
            value = crc32c(container.buffer, start, end, value=value)
            stream.write(memoryview(container.buffer)[start:end])
        if value != seg.checksum:
            raise FatpteError(ErrorCode.SEGMENT_CHECKSUM_MISMATCH,
                              f"segment {seg.index} (named data {owner.key!r} of {entry.name!r}) has CRC32C "
                              f"{value:08x}, but the segment table says {seg.checksum:08x}: the container is "
                              "damaged; nothing was written", source=container.source,
                              field=f"segments[{seg.index}].checksum", expected=seg.checksum, actual=value)

    with atomic_output(dest) as out:
        write_ptn(out, payload[member.offset:member.offset + member.size], owners, aliases, write_tensor)
        out.flush()
        with mmap.mmap(out.fileno(), 0, access=mmap.ACCESS_READ) as written, memoryview(written) as view:
            read_ptn(view, source=os.fspath(dest))  # what was written must read back
            size = len(view)
    return size
