"""`BytesLike`: what the readers read from (a whole file's bytes, a mapping, or a slice of either)."""

from __future__ import annotations

import mmap

# Anything the parser reads from: a whole file's bytes, a mapping, or a slice of either.
BytesLike = bytes | bytearray | memoryview | mmap.mmap
