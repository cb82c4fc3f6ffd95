"""The one writer of canonical bytes: the primitives of specs/nfat-signature.md section 4, with
which every digest fatpte computes over records is taken: the signing records
(fatpte.manifest.canonical), the golden-call digest (specs/nfat-manifest.md 11.3) and a golden
tensor's key (11.1). One writer, so the three can never disagree on what `str` or `list` means.

Primitives: `u8`, `u32`, `i32`, `u64` little-endian; `f64` the u64 of a binary64's bits; `str` a
u32 byte length then the UTF-8 bytes; `opt(X)` a u8 0 (absent) or 1 followed by X; `list(X)` a
u32 count then the items.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

_U8 = struct.Struct("<B")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_F64 = struct.Struct("<d")


class CanonicalWriter:
    """Appends the primitives of the encoding to one growing buffer, `out`."""

    def __init__(self) -> None:
        self.out = bytearray()

    def result(self) -> bytes:
        return bytes(self.out)

    def u8(self, value: int) -> None:
        self.out += _U8.pack(value)

    def u32(self, value: int) -> None:
        self.out += _U32.pack(value)

    def i32(self, value: int) -> None:
        self.out += _I32.pack(value)

    def u64(self, value: int) -> None:
        self.out += _U64.pack(value)

    def f64(self, value: float) -> None:
        self.out += _F64.pack(value)

    def plain(self, data: bytes) -> None:
        """Bytes as they are, no length before them (what a digest appends after its record)."""
        self.out += data

    def raw(self, data: bytes) -> None:
        self.u32(len(data))
        self.out += data

    def text(self, text: str) -> None:
        self.raw(text.encode("utf-8"))

    def opt(self, value: T | None, item: Callable[[T], None]) -> None:
        if value is None:
            self.u8(0)
        else:
            self.u8(1)
            item(value)

    def seq(self, items: Iterable[T], item: Callable[[T], None]) -> None:
        values = list(items)
        self.u32(len(values))
        for v in values:
            item(v)

    def strings(self, items: Iterable[str]) -> None:
        self.seq(items, self.text)

    def pair(self, kv: tuple[str, str]) -> None:
        self.text(kv[0])
        self.text(kv[1])
