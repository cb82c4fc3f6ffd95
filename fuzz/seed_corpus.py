"""Build a target's seed corpus from the conformance vectors (specs/vectors).

    python fuzz/seed_corpus.py TARGET DIR

copies every vector into DIR (named by content hash, as libFuzzer names its inputs, so reruns add
nothing twice); for the manifest target it writes the manifest region of every vector that has
one instead, since that target reads manifest bytes alone; for the executorch target, the files
the real ExecuTorch toolchain wrote (tests/fixtures/executorch: programs of every lowering, with
NFAT delegates, and .ptd files) and each program's inline delegate payloads (NPTG, XH00, NFAT);
for the targets whose bytes drive a generator (hostile, signature, trusted_keys, nested_delegates,
program_mutants),
sixteen fixed byte strings; for the calls differential target, specs/vectors/calls/ and the
fixtures' calls. The C++ targets of issue 33 read what the generators build: for
loader_signature, each signing vector's bundle and statement behind the byte that says how to use
them (fuzz/cpp/fuzz_loader_signature.cpp), and the vectors themselves; for loader_keys, the
vectors' key files; for loader_calls, the fixtures' calls; each with examples of its generator in
tests/strategies.py (48 of hostile_key_files and hostile_calls, 16 of hostile_signed_cases, which
packs and signs each), drawn deterministically.
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
BUILDERS = ("hostile", "hostile_differential", "signature", "trusted_keys", "nested_delegates", "program_mutants")
GENERATED = 48  # examples of its generator a C++ target of issue 33 starts from


def generated(strategy: object, count: int = GENERATED) -> list[object]:
    """`count` values of a Hypothesis strategy, the same on every run (derandomized)."""
    import warnings

    from hypothesis import HealthCheck, given, settings

    out: list[object] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value: object) -> None:
        out.append(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collect()
    return out[:count]


def signature_seeds() -> list[bytes]:
    """fuzz/cpp/fuzz_loader_signature.cpp's inputs: a mode byte (0 and 1: a bundle embedded or
    detached; 2 and 3: a statement, signed there, embedded or detached; 4: a whole container)."""
    import base64
    import json

    sys.path.insert(0, str(ROOT))
    from tests.strategies import hostile_signed_cases
    from tests.support.vectors import bundle_of, region

    index = json.loads((VECTORS / "index.json").read_text())["vectors"]
    out = []
    for name in sorted(n for n, row in index.items() if "verify" in row):
        data = (VECTORS / name).read_bytes()
        out.append(b"\x04" + data)
        if data[:4] != b"NFAT" or region(data)[1] == 0:
            continue
        bundle = bundle_of(data)
        out += [b"\x00" + bundle, b"\x01" + bundle]
        try:
            statement = base64.b64decode(json.loads(bundle)["dsseEnvelope"]["payload"])
        except (ValueError, KeyError, TypeError, RecursionError):
            continue  # a vector whose bundle is the defect
        out += [b"\x02" + statement, b"\x03" + statement]
    for data, detached, _ in generated(hostile_signed_cases(), GENERATED // 3):  # type: ignore[misc]  # each signs
        out.append(b"\x04" + data)
        if detached is not None:
            out.append(b"\x01" + detached)
    return out


def cpp_seeds(target: str) -> list[bytes]:
    import json

    sys.path.insert(0, str(ROOT))
    from tests.strategies import hostile_calls, hostile_key_files

    if target == "loader_signature":
        return signature_seeds()
    if target == "loader_keys":
        return [p.read_bytes() for p in sorted(VECTORS.glob("*.pem"))] + generated(hostile_key_files())  # type: ignore[operator]
    files = json.loads((FIXTURES / "fixtures.json").read_text())["files"]
    calls = [json.dumps(row["calls"]).encode() for _, row in sorted(files.items()) if "calls" in row]
    return calls + generated(hostile_calls())  # type: ignore[operator]


def calls_seeds() -> list[bytes]:
    """The calls differential target's: every file of specs/vectors/calls/ (its index aside) and
    the fixtures' calls, which its structure-aware mutator changes as values."""
    import json

    files = json.loads((FIXTURES / "fixtures.json").read_text())["files"]
    return [p.read_bytes() for p in sorted((VECTORS / "calls").glob("*.json")) if p.name != "index.json"] + \
        [json.dumps(row["calls"]).encode() for _, row in sorted(files.items()) if "calls" in row]


def seeds(target: str) -> list[bytes]:
    if target == "executorch":
        return executorch_seeds()
    if target == "calls":
        return calls_seeds()
    if target in BUILDERS:
        return [hashlib.sha256(b"%d" % i).digest() * 16 for i in range(16)]
    if target in ("loader_signature", "loader_keys", "loader_calls"):
        return cpp_seeds(target)
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
