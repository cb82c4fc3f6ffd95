"""CRC32C (Castagnoli), the checksum of every NFAT v2 region, computed over any buffer in
bounded chunks so a many-GB mapping is hashed without a copy and without holding the GIL.

When the buffer is a file mapping (`mmap.mmap`), the pages already hashed are released from
this process (MADV_DONTNEED) every `RELEASE` bytes: the file stays in the page cache, but the
process's resident set stays bounded instead of growing to the size of the region hashed, so
`pack` of 3 GiB of payloads runs in tens of MiB (docs/performance.md).
"""

from __future__ import annotations

import mmap

import crc32c as _crc32c

from fatpte.model import BytesLike

# 8 MiB per call: measured at the same speed as one call over the whole region (about 9 GB/s
# on the bench machine), and each call releases the GIL for its whole length.
CHUNK = 8 << 20
# Pages are released in steps of 64 MiB: releasing after every chunk cost 13% of the speed in
# docs/performance.md's measurements, 64 MiB steps cost the same or less and bound the RSS.
RELEASE = 64 << 20
_PAGE = mmap.PAGESIZE
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


def crc32c(data: BytesLike, start: int = 0, end: int | None = None, *, value: int = 0) -> int:
    """CRC32C of `data[start:end]`, continuing from `value`."""
    view = memoryview(data).cast("B")
    stop = len(view) if end is None else end
    # Only read-only mappings: on a copy-on-write mapping (ACCESS_COPY) MADV_DONTNEED would
    # discard the caller's private changes.
    release = (_DONTNEED is not None and isinstance(data, mmap.mmap) and view.readonly
               and stop - start > RELEASE)
    pos = start
    released = start - start % _PAGE  # madvise wants a page-aligned start
    try:
        while pos < stop:
            nxt = min(stop, pos + CHUNK)
            value = _crc32c.crc32c(view[pos:nxt], value)
            pos = nxt
            if release and (pos - released >= RELEASE or pos == stop):
                _release(data, released, pos)
                released = pos - pos % _PAGE
    finally:
        view.release()
    return int(value)


def _release(data: BytesLike, start: int, end: int) -> None:
    assert isinstance(data, mmap.mmap) and _DONTNEED is not None
    try:
        data.madvise(_DONTNEED, start, end - start)
    except (OSError, ValueError):
        pass  # only an optimisation of the resident set: hashing stays correct without it

