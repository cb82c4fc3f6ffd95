"""`verify_remote`: `fatpte verify` of a container at a URL (docs/remote.md, specs/remote.md
section 2), by range requests.

The signature check (fatpte/ops/signing/verification.py, `verify_container`) reads a mapped container. Here
it reads one made of exactly the bytes it needs (`RemoteContainer.local_copy`): the metadata the
first request brought, the signature region (one request), and, only when the envelope holds a
signature of a trusted key, every payload and segment, near ones in one request. Whatever the
check does with those bytes is what it does with a local file: the same verdicts, codes, offsets.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from fatpte.container.remote import open_remote
from fatpte.device.profile import DeviceProfile
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.remote import Policy
from fatpte.fileio.streams import Progress
from fatpte.format import layout as L
from fatpte.ops.signing import (
    TrustedKey,
    VerifyReport,
    check_envelope,
    read_bundle,
    read_statement,
    verify_container,
)


def verify_remote(url: str, keys: Sequence[TrustedKey], *, signature: str | os.PathLike[str] | bytes | None = None,
                  progress: Progress | None = None, policy: Policy | None = None,
                  downgrade: DeviceProfile | None = None, **storage_options: Any) -> VerifyReport:
    """`signing.verify` of the container at `url`. `signature` is a detached signature (a local
    file, or its bytes); without it the embedded one is used (a URL has no `FILE.sig` beside it).
    `storage_options` and `policy` as for `open_remote`; `downgrade` as for `signing.verify`.
    Raises FatpteError only when the container cannot be opened or read."""
    if not keys:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "no trusted public key to verify with", field="key")
    with open_remote(url, policy=policy, **storage_options) as c:
        h = c.header
        embedded = c.version == L.VERSION_2 and h.signature_size > 0
        region = c.hold(h.signature_offset, h.signature_size) if embedded and signature is None else None
        hashed: list[tuple[int, int]] = []
        if signature is not None or (region is not None and _holds(region, keys)):
            # Everything the check may hash (each entry's payload, each named-data segment):
            # a byte it reads and this did not fetch would read as zero.
            hashed = [(e.offset, e.size) for e in c.entries] + [(s.offset, s.size) for s in c.segments]
        with c.local_copy(hashed) as local:
            return verify_container(local, keys, signature=signature, progress=progress, downgrade=downgrade)


def _holds(region: bytes, keys: Sequence[TrustedKey]) -> bool:
    """Whether the envelope in `region` is signed by one of `keys` and carries a statement: else
    the check stops there on these same bytes, before any payload byte, and none is fetched."""
    try:
        envelope = read_bundle(region)
        check_envelope(envelope, keys)
        read_statement(envelope.payload)
    except Exception:  # noqa: BLE001 - verify_container meets the same failure and reports it
        return False
    return True
