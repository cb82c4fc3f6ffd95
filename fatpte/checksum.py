"""CRC32C (Castagnoli), the checksum of every NFAT v2 region, computed over any buffer in
bounded chunks so a many-GB mapping is hashed without a copy and without holding the GIL."""

from __future__ import annotations



import crc32c as _crc32c

from fatpte.model import BytesLike

CHUNK = 8 << 20  # large enough to run at memory speed, small enough to stay in L2/L3 caches


def crc32c(data: BytesLike, start: int = 0, end: int | None = None, *, value: int = 0) -> int:
    """CRC32C of `data[start:end]`, continuing from `value`."""
    view = memoryview(data).cast("B")
    stop = len(view) if end is None else end
    pos = start
    try:
        while pos < stop:
            nxt = min(stop, pos + CHUNK)
            value = _crc32c.crc32c(view[pos:nxt], value)
            pos = nxt
    finally:
        view.release()
    return int(value)
