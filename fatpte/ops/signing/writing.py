"""`sign` and `unsign` (specs/nfat-signature.md section 5.3): a valid version 2 container's
statement signed into its signature region or a detached file, or the region taken out again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from fatpte.container.reader import open as open_container
from fatpte.container.validation import validate_buffer
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output
from fatpte.fileio.streams import Progress
from fatpte.format import layout as L
from fatpte.ops.signing.bundle import DETACHED_SUFFIX, bundle_for
from fatpte.ops.signing.keys import check_supported, load_private_key
from fatpte.ops.signing.relayout import plan_layout, write_container
from fatpte.ops.signing.statement import statement_of

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes


def sign(
    path: str | os.PathLike[str],
    key: str | os.PathLike[str] | PrivateKeyTypes,
    dest: str | os.PathLike[str] | None = None,
    *,
    detached: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Sign the container at `path` with `key` (a PEM file or a loaded key).

    Embedded (the default): writes the container with the bundle in its signature region to `dest`
    (default: `path` itself, replaced atomically); an earlier signature is replaced. Detached:
    writes only the bundle to `dest` (default `path` + ".sig") and leaves the container as it is.
    The container must be valid (`fatpte.validate`): a signature vouches for what it describes.
    """
    private = key if not isinstance(key, (str, os.PathLike)) else load_private_key(key)
    check_supported(private, "key")
    with open_container(path) as c:
        report = validate_buffer(c.buffer, source=os.fspath(path))
        if report.first_error is not None:
            raise FatpteError.from_finding(report.first_error, os.fspath(path))
        statement = statement_of(c, progress=progress)
        bundle = bundle_for(statement, private)
        if len(bundle) > L.MAX_SIGNATURE_SIZE:
            raise FatpteError(ErrorCode.SIGNATURE_TOO_LARGE,
                              f"the signature bundle is {len(bundle)} bytes, above the limit of "
                              f"{L.MAX_SIGNATURE_SIZE}", source=os.fspath(path), actual=len(bundle))
        if detached:
            target = Path(dest) if dest is not None else Path(os.fspath(path) + DETACHED_SUFFIX)
            with atomic_output(target) as out:
                out.write(bundle)
            return target
        h = c.header
        if L.V2_HEADER_SIZE < h.header_size < L.SIGNED_HEADER_SIZE:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                              f"header_size is {h.header_size}: its bytes 64..{h.header_size} belong to a later "
                              "revision this fatpte does not know, so it cannot add the signature slot there",
                              source=c.source, field="header.header_size", actual=h.header_size)
        size = max(h.header_size, L.SIGNED_HEADER_SIZE)
        target = Path(dest) if dest is not None else Path(path)
        write_container(c, target, plan_layout(c, size), bundle)
    return target


def unsign(path: str | os.PathLike[str], dest: str | os.PathLike[str] | None = None) -> Path:
    """Write the container at `path` without its signature region to `dest` (default: `path`).

    A container signed by `sign` gets back the exact bytes it had before; the header returns to 64
    bytes when it held nothing but the signature slot."""
    target = Path(dest) if dest is not None else Path(path)
    with open_container(path) as c:
        h = c.header
        if c.version != L.VERSION_2 or h.signature_size == 0:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the container has no embedded signature",
                              source=c.source, field="header.signature_size")
        size = L.V2_HEADER_SIZE if h.header_size == L.SIGNED_HEADER_SIZE else h.header_size
        write_container(c, target, plan_layout(c, size), None)
    return target

