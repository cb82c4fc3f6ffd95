"""Inside one process: raw CRC32C of a file's bytes over a fresh mapping (the floor: what any
Python tool can do) alternating with `fatpte.validate` of the same file. Prints JSON:
{"raw": [seconds...], "validate": [seconds...], "raw_rss": bytes, "size": bytes}.

    validate_inproc.py PATH ROUNDS
    validate_inproc.py PATH raw      (just the raw pass, as a whole-process baseline)
"""

from __future__ import annotations

import json
import mmap
import os
import resource
import sys
import time

import crc32c

CHUNK = 8 << 20


def raw(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as m:
            view = memoryview(m)
            value = 0
            for pos in range(0, len(m), CHUNK):
                value = crc32c.crc32c(view[pos : pos + CHUNK], value)
            view.release()
            return int(value)
    finally:
        os.close(fd)


def main() -> int:
    path = sys.argv[1]
    if sys.argv[2] == "raw":
        raw(path)
        return 0
    import fatpte

    rounds = int(sys.argv[2])
    fatpte.validate(path)  # warm-up: the first call pays the lazy imports (construct), not hashing
    out: dict[str, list[float]] = {"raw": [], "validate": []}
    rss = 0
    for _ in range(rounds):
        t = time.perf_counter()
        raw(path)
        out["raw"].append(time.perf_counter() - t)
        rss = max(rss, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        t = time.perf_counter()
        report = fatpte.validate(path)
        out["validate"].append(time.perf_counter() - t)
        if not report.ok:
            raise SystemExit(f"{path} does not validate: {report.findings[0]}")
    print(json.dumps({**out, "raw_rss": rss, "size": os.path.getsize(path)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
