"""What a path that is not a regular file is, in the words error messages use."""

from __future__ import annotations

import stat


def what_file(mode: int) -> str:
    """`a directory`, `a FIFO`, `a device`, `a socket`, `a symbolic link` (for a mode from lstat):
    what a path that is no regular file is."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
