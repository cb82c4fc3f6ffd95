"""`open` and `validate` of a location: a path (mapped, fatpte/container/reader.py) or a URL
(read by ranges, fatpte/container/remote.py). The one place that tells the two apart; the remote
reader and its dependencies are imported only for a URL."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from fatpte.fileio.url import is_url

if TYPE_CHECKING:
    from fatpte.container.reader import Container
    from fatpte.container.validation import Report
    from fatpte.fileio.streams import Progress


def open(location: str | os.PathLike[str], **storage_options: Any) -> Container:
    """`fatpte.open`: the container at a path, or at a URL (`https://`, `s3://`, ...; then
    `storage_options` go to fsspec, see `fatpte.open_remote`). Raises `FatpteError` on the
    first error of its header and tables."""
    if is_url(location):
        from fatpte.container.remote import open_remote

        return open_remote(os.fspath(location), **storage_options)
    if storage_options:
        from fatpte.errors import ErrorCode, FatpteError

        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "storage options go with a URL, not a path",
                          source=os.fspath(location), actual=sorted(storage_options))
    from fatpte.container.reader import open as open_path

    return open_path(location)


def validate(location: str | os.PathLike[str], *, progress: Progress | None = None,
             **storage_options: Any) -> Report:
    """`fatpte.validate`: every rule of the spec over the container at a path or a URL (read
    once, streaming); raises `FatpteError` only when it cannot be read."""
    if is_url(location):
        from fatpte.container.remote import validate_remote

        return validate_remote(os.fspath(location), progress=progress, **storage_options)
    from fatpte.container.validation import validate as validate_path

    return validate_path(location, progress=progress)
