"""The v1 reference packer: the published approach (ExecuTorch's NFAT v1 tooling) that reads every
payload into memory and joins header, table and payloads into one bytes object before writing it.
Peak memory is about twice the payload total; it is the baseline fatpte's streaming pack is
compared with in docs/performance.md.

    refpacker.py OUT BACKEND=PATH ...

The layout is written with `struct` rather than fatpte.format.layout on purpose: the baseline must not
pay fatpte's import time, and it stands for an independent tool.
"""

from __future__ import annotations

import struct
import sys


def pack_v1(out: str, items: list[tuple[str, str]]) -> None:
    payloads = []
    for _, path in items:
        with open(path, "rb") as f:
            payloads.append(f.read())
    table = b""
    offset = 0
    for (backend, _), data in zip(items, payloads):
        table += struct.pack("<32sQQ", backend.encode("ascii"), offset, len(data))
        offset += len(data)
    blob = struct.pack("<4sII", b"NFAT", 1, len(items)) + table + b"".join(payloads)
    with open(out, "wb") as f:
        f.write(blob)


if __name__ == "__main__":
    pack_v1(sys.argv[1], [(a.split("=", 1)[0], a.split("=", 1)[1]) for a in sys.argv[2:]])
