"""`fatpte.extract`: copy one payload out of a container, verified, streamed and atomic."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from fatpte.container.locations import open as open_container
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output
from fatpte.fileio.streams import Progress, progress_counter

if TYPE_CHECKING:
    from pathlib import Path

    from fatpte.container.reader import Container
    from fatpte.format.model import Entry


def extract(
    path: str | os.PathLike[str],
    name_or_backend_id: str,
    dest: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
) -> Path:
    """Write the payload of the entry named `name_or_backend_id` (else the only entry with that
    backend id) of the container at `path` (a path or a URL) to `dest`.

    The payload passes once through a few 1 MiB buffers into a temporary file, hashed while
    each buffer is in the CPU cache and written by a second thread (`streams.copy_range_crc`).
    From a URL, range requests of bounded size stream it the same way (docs/remote.md).
    A payload whose CRC32C differs from its entry's is never published: the temporary file is
    removed and `dest` is left as it was.
    `progress(done, total)` is called as bytes are copied."""
    target = os.fspath(dest)
    with open_container(path) as container:
        extract_entry(container, container.find(name_or_backend_id), target, progress=progress)
    # pathlib only now, for the documented return type: the copy above never needs it, and
    # importing it at module level costs ~9 ms of every reading command's start-up.
    from pathlib import Path

    return Path(target)


def extract_entry(
    container: Container,
    entry: Entry,
    dest: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
) -> None:
    """`extract` of an entry of a container already open (the command line has opened it to
    choose the entry), so the header and table are not read twice."""
    with atomic_output(dest) as out:
        out.flush()
        advance = None if progress is None else progress_counter(progress, entry.size)
        actual = container.copy_range(entry.offset, entry.size, out.fileno(), 0, advance=advance)
        if entry.checksum is not None and actual != entry.checksum:
            raise FatpteError(
                ErrorCode.PAYLOAD_CHECKSUM_MISMATCH,
                f"payload of {entry.name!r} has CRC32C {actual:08x}, but its entry says {entry.checksum:08x}: "
                "the container is damaged; nothing was written",
                source=container.source,
                field=f"entries[{entry.index}].checksum",
                expected=entry.checksum,
                actual=actual,
            )
