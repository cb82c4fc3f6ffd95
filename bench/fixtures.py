"""Files the benchmarks work on, made once per run in a temporary folder that is deleted after.

Payload bytes are random (a 64 MiB random block, changed at the start of every block and per
file) so no layer can compress or deduplicate them; the 4 GiB containers are built from sparse
files, which cost no disk and no write time.
"""

from __future__ import annotations

import os
from pathlib import Path

_BLOCK = 64 << 20
_base: bytes | None = None


def payload(path: Path, size: int, seed: int) -> Path:
    """A file of `size` random-looking bytes, distinct for each seed."""
    global _base
    if path.exists() and path.stat().st_size == size:
        return path
    if _base is None:
        _base = os.urandom(_BLOCK)
    view = memoryview(_base)
    with open(path, "wb") as f:
        done = 0
        block = 0
        while done < size:
            n = min(_BLOCK, size - done)
            f.write(f"{seed:08d}:{block:08d}".encode())
            f.write(view[17:n])
            done += n
            block += 1
    return path


def sparse(path: Path, size: int) -> Path:
    """A file of `size` zero bytes that occupies no disk (a hole)."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def warm(path: Path) -> None:
    """Read the file once so it is in the page cache."""
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(8 << 20)
        while f.readinto(buf):
            pass
