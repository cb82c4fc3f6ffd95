"""The copy design fatpte used before (kept here only to be measured against): copy_file_range
in the kernel while a second thread computes the CRC32C from a read-only mapping of the source.
It reads the source twice (once by the kernel's copy, once by the hash), which docs/performance.md
shows costs more than passing the bytes once through small buffers (fatpte.fileio.streams.copy_range_crc).
"""

from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path

from fatpte.fileio.checksum import crc32c


def copy_with_mapped_hash(src: Path, offset: int, size: int, dest: Path) -> int:
    """Copy src[offset:offset+size] to dest; return its CRC32C, hashed from a mapping."""
    fd = os.open(src, os.O_RDONLY)
    out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapping:
            result: list[int] = []
            worker = threading.Thread(target=lambda: result.append(crc32c(mapping, offset, offset + size)))
            worker.start()
            done = 0
            while done < size:
                n = os.copy_file_range(fd, out, min(64 << 20, size - done), offset + done, done)
                if n == 0:
                    raise OSError(f"{src}: unexpected end at {offset + done:#x}")
                done += n
            worker.join()
            return result[0]
    finally:
        os.close(fd)
        os.close(out)
