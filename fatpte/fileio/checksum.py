"""CRC32C (Castagnoli), the checksum of every NFAT v2 region, computed over any buffer in
bounded chunks so a many-GB mapping is hashed without a copy and without holding the GIL.

Large regions are hashed as two halves on two threads (the extension releases the GIL, so
they run on two cores) and the halves' CRCs are joined with `combine`, which costs
microseconds: CRC32C is linear over GF(2), so appending n bytes acts on a CRC value as the
n-th power of a fixed 32x32 bit matrix.

When the buffer is a read-only file mapping (`mmap.mmap`), the pages already hashed are
released from this process (MADV_DONTNEED) every `RELEASE` bytes: the file stays in the page
cache, but the process's resident set stays bounded instead of growing to the size of the
region hashed, so `pack` of 3 GiB of payloads runs in tens of MiB (docs/performance.md).
"""

from __future__ import annotations

import importlib.machinery
import mmap
import os
import sys
import threading
from collections.abc import Callable

from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.mapping import releasable, release_pages

# 8 MiB per call: measured at the same speed as one call over the whole region (about 9 GB/s
# on the bench machine), and each call releases the GIL for its whole length.
CHUNK = 8 << 20
# Pages are released after every chunk. The cost is per page, not per call (measured: about 13%
# of single-thread speed whether released in 8 or 64 MiB steps), so small steps cost nothing more
# and keep the mapped part of the RSS under 2 threads x 8 MiB.
RELEASE = 8 << 20
# Regions at least this long are split across two threads: below it, starting a thread costs
# more than the half it saves (a thread start is ~0.1 ms; 64 MiB hash in ~7 ms).
PARALLEL = 64 << 20
THREADS = 2 if (os.cpu_count() or 1) > 1 else 1
_PAGE = mmap.PAGESIZE
_POLY = 0x82F63B78  # CRC32C, reflected


def _load_crc32c() -> Callable[..., int]:
    """The `crc32c` package's compiled function, loaded without running the package's
    `__init__`: that calls importlib.metadata.version(), which scans every installed distribution
    and cost 25-30 ms of every command's start-up (docs/performance.md, `info`).

    Only `importlib.machinery` is used (a re-export of the import system already loaded):
    `importlib.util` would add about 0.5 ms of imports to every command for two helpers."""
    if "crc32c" not in sys.modules:
        try:
            module = sys.modules.get("crc32c._crc32c")
            if module is None:
                finder = importlib.machinery.PathFinder
                package = finder.find_spec("crc32c")
                where = package.submodule_search_locations if package else None
                spec = finder.find_spec("crc32c._crc32c", where) if where else None
                if spec is not None and spec.loader is not None:
                    # The Loader protocol by hand: what importlib.util.module_from_spec does for
                    # an extension module, whose loader always creates the module itself.
                    module = spec.loader.create_module(spec)
                    if module is not None:
                        module.__spec__ = spec
                        module.__loader__ = spec.loader
                        module.__file__ = spec.origin
                        spec.loader.exec_module(module)
                        # Registered so a later `import crc32c` reuses this module, not a second copy.
                        sys.modules["crc32c._crc32c"] = module
            if module is not None:
                function: Callable[..., int] = module.crc32c
                return function
        except (ImportError, OSError, AttributeError):
            pass  # an unusual installation: take the ordinary import below
    import crc32c

    fallback: Callable[..., int] = crc32c.crc32c
    return fallback


_crc32c_function = _load_crc32c()


def crc32c(
    data: BytesLike,
    start: int = 0,
    end: int | None = None,
    *,
    value: int = 0,
    advance: Callable[[int], None] | None = None,
) -> int:
    """CRC32C of `data[start:end]`, continuing from `value`; `advance(n)` is told of every n
    bytes hashed (from two threads when the region is split)."""
    view = memoryview(data).cast("B")
    stop = len(view) if end is None else end
    release = releasable(data)
    try:
        if THREADS > 1 and stop - start >= PARALLEL:
            return _two_halves(data, view, start, stop, value, release, advance)
        return _serial(data, view, start, stop, value, release, advance)
    finally:
        view.release()


def combine(first: int, second: int, second_length: int) -> int:
    """CRC32C of A followed by B, from crc(A), crc(B) and len(B)."""
    return second ^ _shift(first, second_length)


def extend_zeros(value: int, length: int) -> int:
    """CRC32C of A followed by `length` zero bytes, from crc(A) = `value`: a hole of a sparse
    file is hashed in microseconds instead of reading gigabytes of zeros."""
    zeros = 0  # CRC32C of the zero bytes counted so far
    k = 0
    rest = length
    while rest:
        if rest & 1:
            zeros = combine(zeros, _zero_run(k), 1 << k)
        rest >>= 1
        k += 1
    return combine(value, zeros, length)


def _zero_run(k: int) -> int:
    """CRC32C of 2**k zero bytes."""
    with _POWERS_LOCK:
        while len(_ZERO_RUNS) <= k:
            last = _ZERO_RUNS[-1]  # 2**(k-1) zeros followed by as many: combine(last, last, 2**(k-1))
            _ZERO_RUNS.append(last ^ _shift_unlocked(last, 1 << (len(_ZERO_RUNS) - 1)))
        return _ZERO_RUNS[k]


def _serial(
    data: BytesLike,
    view: memoryview,
    start: int,
    stop: int,
    value: int,
    release: bool,
    advance: Callable[[int], None] | None = None,
) -> int:
    release = release and stop - start >= RELEASE
    released = start - start % _PAGE  # madvise wants a page-aligned start
    pos = start
    while pos < stop:
        nxt = min(stop, pos + CHUNK)
        value = _crc32c_function(view[pos:nxt], value)
        if advance is not None:
            advance(nxt - pos)
        pos = nxt
        if release and (pos - released >= RELEASE or pos == stop):
            release_pages(data, released, pos)
            released = pos - pos % _PAGE
    return int(value)


def _two_halves(
    data: BytesLike,
    view: memoryview,
    start: int,
    stop: int,
    value: int,
    release: bool,
    advance: Callable[[int], None] | None,
) -> int:
    mid = start + (stop - start) // 2
    if mid - mid % _PAGE > start:
        mid -= mid % _PAGE  # a page boundary, so the halves do not release each other's pages
    first: list[int] = []
    failure: list[Exception] = []

    def hash_first_half() -> None:
        try:
            first.append(_serial(data, view, start, mid, value, release, advance))
        except Exception as exc:  # noqa: BLE001 - re-raised on the calling thread below
            failure.append(exc)

    worker = threading.Thread(target=hash_first_half, name="fatpte-crc32c", daemon=True)
    worker.start()
    try:
        second = _serial(data, view, mid, stop, 0, release, advance)
    finally:
        worker.join()
    if failure:
        raise failure[0]
    return combine(first[0], second, stop - mid)


# Appending n zero bytes maps a CRC value v to M^n v (the complements of the initial and final
# register cancel out); _POWERS[k] is M^(2^k) as 32 columns.
def _apply(matrix: list[int], vector: int) -> int:
    out = 0
    i = 0
    while vector:
        if vector & 1:
            out ^= matrix[i]
        vector >>= 1
        i += 1
    return out


def _square(matrix: list[int]) -> list[int]:
    return [_apply(matrix, column) for column in matrix]


_ONE_BIT = [_POLY] + [1 << (i - 1) for i in range(1, 32)]
_POWERS: list[list[int]] = [_square(_square(_square(_ONE_BIT)))]  # one zero byte = 8 zero bits
_POWERS_LOCK = threading.Lock()
_ZERO_RUNS: list[int] = [_crc32c_function(b"\0")]


def _shift(value: int, length: int) -> int:
    with _POWERS_LOCK:
        return _shift_unlocked(value, length)


def _shift_unlocked(value: int, length: int) -> int:
    k = 0
    while length:
        if length & 1:
            while len(_POWERS) <= k:
                _POWERS.append(_square(_POWERS[-1]))
            value = _apply(_POWERS[k], value)
        length >>= 1
        k += 1
    return value
