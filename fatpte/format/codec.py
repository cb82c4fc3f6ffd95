"""Decoding and encoding of fixed-size records: the one place where construct and `struct`
errors become `FatpteError`, keeping the field path and the offset in the file."""

from __future__ import annotations

import struct
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.buffers import BytesLike
from fatpte.format.layout import Record


def decode(rec: Record, buf: BytesLike, offset: int, path: str, *, source: str | None = None) -> dict[str, Any]:
    """Decode the record `rec` found at `offset` of `buf`; `path` names it (`entries[3]`)."""
    try:
        values = rec.codec.unpack_from(buf, offset)
    except struct.error as exc:
        # Callers bound every read by the buffer size first; reaching this is a bug, but it
        # still surfaces as the format's error rather than a crash.
        raise FatpteError(
            ErrorCode.TRUNCATED_HEADER,
            f"{rec.name} needs {rec.size} bytes at {offset:#x}: {exc}",
            source=source,
            offset=offset,
            field=path,
        ) from exc
    return dict(zip(rec.fields, values))


def encode(rec: Record, values: dict[str, Any], path: str) -> bytes:
    """Build `rec` from `values` through its construct definition."""
    import construct as cs  # only writers pay for construct's import

    try:
        return rec.build(values)
    except (cs.ConstructError, KeyError, TypeError, ValueError) as exc:
        raise FatpteError(
            ErrorCode.INVALID_ARGUMENT,
            f"cannot encode {rec.name}: {exc}",
            field=f"{path}{_construct_path(exc)}",
        ) from exc


def _construct_path(exc: BaseException) -> str:
    path = getattr(exc, "path", None)
    if not path:
        return ""
    # construct reports "(building) -> alignment"; keep the field names only.
    parts = [p.strip() for p in str(path).split("->")[1:]]
    return "".join(f".{p}" for p in parts if p)
