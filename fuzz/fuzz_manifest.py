"""Fuzz target: the manifest reader (`fatpte.manifest.codec.decode`, the bounded flatbuffer verifier)
on any bytes, as if they were a container's manifest region. Only FatpteError may escape."""

from __future__ import annotations

import _harness


def test_one_input(data: bytes) -> None:
    from fatpte.errors import FatpteError
    from fatpte.manifest.codec import decode

    try:
        decode(data)
    except FatpteError:
        pass


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
