"""Inside one process, after import: `fatpte.open(path)` + `fatpte.select(...)` on a 16-entry
container, against the floor of opening and mapping the same file. Prints JSON lists of
per-call seconds (each the mean of a batch), one per round, alternating.

    api_inproc.py PATH ROUNDS
"""

from __future__ import annotations

import json
import mmap
import os
import sys
import time
from collections.abc import Callable

BATCH = 200


def per_call(fn: Callable[[], None]) -> float:
    t = time.perf_counter()
    for _ in range(BATCH):
        fn()
    return (time.perf_counter() - t) / BATCH


def main() -> int:
    path, rounds = sys.argv[1], int(sys.argv[2])
    import fatpte

    device = None
    try:
        from fatpte.device.profile import DeviceProfile

        device = DeviceProfile.host()
        select = fatpte.select  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        select = None

    def floor() -> None:
        fd = os.open(path, os.O_RDONLY)
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
            m[0:8]
        os.close(fd)

    def api() -> None:
        with fatpte.open(path) as c:
            if select is not None:
                assert select(c, device).chosen is not None

    api()
    floor()  # warm both: the target is "after import", not the first call's lazy imports
    out: dict[str, object] = {"floor": [], "api": [], "select": select is not None}
    for _ in range(rounds):
        out["floor"].append(per_call(floor))  # type: ignore[attr-defined]
        out["api"].append(per_call(api))  # type: ignore[attr-defined]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
