"""Fuzz target: `fatpte.select` of any bytes against every named device profile (specs/devices),
with the explanation rendered. Only FatpteError (SelectionError included) may escape."""

from __future__ import annotations

import functools
from typing import Any

import _harness


@functools.cache
def _profiles() -> tuple[Any, ...]:
    from fatpte.device.profile import DeviceProfile

    return tuple(DeviceProfile.load(name) for name in DeviceProfile.names())


def test_one_input(data: bytes) -> None:
    import fatpte
    from fatpte.container.reader import Container
    from fatpte.errors import FatpteError

    try:
        with Container.from_buffer(data) as c:
            for device in _profiles():
                try:
                    s = fatpte.select(c, device)
                except FatpteError:
                    continue
                s.explain()
                s.to_json()
    except FatpteError:
        pass


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
