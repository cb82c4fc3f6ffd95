"""Build a target's seed corpus from the conformance vectors (specs/vectors).

    python fuzz/seed_corpus.py TARGET DIR

copies every vector into DIR (named by content hash, as libFuzzer names its inputs, so reruns add
nothing twice); for the manifest target it writes the manifest region of every vector that has
one instead, since that target reads manifest bytes alone; for the executorch target, the files
the real ExecuTorch toolchain wrote (tests/fixtures/executorch: programs of every lowering, with
NFAT delegates, and .ptd files) and each program's inline delegate payloads (NPTG, XH00, NFAT);
for the hostile targets, whose bytes drive a generator, sixteen fixed byte strings.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "specs" / "vectors"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
REGRESSIONS = ROOT / "tests" / "fixtures" / "fuzz"  # inputs a target once failed on, kept as tests

# manifest_offset, manifest_size: u64 at bytes 40 and 48 of a v2 header (fatpte/format/layout.py).
# Read with struct rather than fatpte so that seeding works from damaged vectors too.
_MANIFEST = struct.Struct("<4sI32xQQ")


def manifest_region(data: bytes) -> bytes | None:
    if len(data) < _MANIFEST.size:
        return None
    magic, version, offset, size = _MANIFEST.unpack_from(data)
    if magic != b"NFAT" or version != 2 or size == 0 or offset > len(data) or size > len(data) - offset:
        return None
    return data[offset : offset + size]


def executorch_seeds() -> list[bytes]:
    sys.path.insert(0, str(ROOT))
    from fatpte.executorch import read_program

    out = []
    for path in sorted([*FIXTURES.glob("*.pt[ed]"), *REGRESSIONS.glob("executorch-*")]):
        data = path.read_bytes()
        out.append(data)
        if path.suffix == ".pte":
            for plan in read_program(data, source=str(path)).methods:
                out += [data[d.offset : d.offset + d.size] for d in plan.delegates if d.size]
    return out


# Targets whose input is a choice sequence for a generator (tests/strategies.py): any bytes are a
# valid input, and a vector would only be an arbitrary one. Sixteen fixed byte strings start them.
BUILDERS = ("hostile", "hostile_differential")


def seeds(target: str) -> list[bytes]:
    if target == "executorch":
        return executorch_seeds()
    if target in BUILDERS:
        return [hashlib.sha256(b"%d" % i).digest() * 16 for i in range(16)]
    out = []
    for path in sorted(VECTORS.glob("*.nfat")):
        data = path.read_bytes()
        if target == "manifest":
            region = manifest_region(data)
            if region is not None:
                out.append(region)
        else:
            out.append(data)
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    target, dest = argv[0], Path(argv[1])
    dest.mkdir(parents=True, exist_ok=True)
    added = 0
    for data in seeds(target):
        path = dest / hashlib.sha1(data).hexdigest()
        if not path.exists():
            path.write_bytes(data)
            added += 1
    print(f"{target}: {added} seeds added to {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
