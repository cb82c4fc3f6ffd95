"""Fuzz target: `fatpte.open` over any bytes (Container.from_buffer, what open runs on its mapping),
then every accessor a runtime uses: entries, verified payloads, manifest, named data.
Only FatpteError may escape."""

from __future__ import annotations

import _harness


def test_one_input(data: bytes) -> None:
    from fatpte.container.reader import Container
    from fatpte.errors import FatpteError

    try:
        with Container.from_buffer(data) as c:
            for e in c.entries:
                c.payload(e, verify=True).release()
                c.find(e.backend_id)
            for key in c.named_data_keys:
                c.named_data(key).release()
    except FatpteError:
        pass


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
