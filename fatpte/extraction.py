"""`fatpte.extract`: copy one payload out of a container, verified, streamed and atomic."""

from __future__ import annotations

import os
from pathlib import Path

from fatpte.atomic import atomic_output
from fatpte.container import open as open_container
from fatpte.streams import copy_range


def extract(path: str | os.PathLike[str], name_or_backend_id: str, dest: str | os.PathLike[str]) -> Path:
    """Write the payload of the entry named `name_or_backend_id` (else the only entry with that
    backend id) to `dest`. Its CRC32C is checked against the entry before anything is written."""
    target = Path(dest)
    with open_container(path) as container:
        entry = container.find(name_or_backend_id)
        container.payload(entry, verify=True).release()
        fd = container.fileno
        assert fd is not None
        with atomic_output(target) as out:
            out.flush()
            copy_range(fd, entry.offset, out.fileno(), 0, entry.size)
    return target
