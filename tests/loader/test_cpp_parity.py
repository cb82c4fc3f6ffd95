"""The C++ loader reports the same first error, and makes the same selection, as Python.

Builds containers with `fatpte.pack` (version 1 and 2, many alignments, priorities, payload
kinds, shared and empty payloads, a manifest with requirements, signatures, named data and
payload digests), damages them (bytes of the manifest too, with its CRC32C recomputed) (every truncation of the table, byte flips in
the header, the table, the padding and the payloads, out-of-range values in every header and
entry field with the header checksum recomputed so the deeper rules are reached), adds the
conformance vectors of specs/vectors/, and runs `fatpte-validate` over all of them in a few
processes. For each file the loader's line (`OK` or `E0203 <offset> <field>`) must equal what
`fatpte.validate_buffer(...).first_error` says.

Selection: for every named device profile, several containers and prefer/exclude lists,
`fatpte-run --select-only --json` and `--explain` print exactly Python's Selection.to_json()
and explain(), and a failed selection carries Python's SelectionError message.

The loader is built by `make loader` (and by `make test` before this runs). Each build that is
missing is skipped with the reason, except under `make test`, which builds both and makes a missing
one fail (tests/builds.py).
"""

from __future__ import annotations

import json
import random
import struct
import subprocess
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fatpte.container.reader import open as open_container
from fatpte.errors import ErrorCode
from fatpte.fileio.checksum import crc32c
from fatpte.format import layout as L
from fatpte.ops.packing import pack
from fatpte.ops.specialization import Specialization
from fatpte.ops.validation import validate_buffer
from tests.builds import loader_build
from tests.paths import ROOT

VECTORS = ROOT / "specs" / "vectors"
FIELD_MAX = 96  # fatpte_error's field buffer, NUL included (loader/include/fatpte/fatpte.h)

_HEADER = L.RECORDS["v2_header"]
_ENTRY = L.RECORDS["v2_entry"]
_SEGMENT = L.RECORDS["v2_segment"]


def tool(build: str, name: str = "fatpte-validate") -> Path:
    """A loader tool of the build `build` ("release" or "asan"): a missing build, not a missing file."""
    return loader_build(build, name) / name


def expected_line(data: bytes) -> str:
    f = validate_buffer(data).first_error
    if f is None:
        return "OK"
    offset = "-" if f.offset is None else str(f.offset)
    return f"{f.code.tag} {offset} {_as_printed(f.field)}"


def _as_printed(field: str | None) -> str:
    """A field path as fatpte-validate prints it: fatpte_error holds at most FIELD_MAX - 1 bytes
    of it (a path through fat delegates nested past the limit is longer)."""
    return field[: FIELD_MAX - 1] if field else "-"


# ---- corpus ----------------------------------------------------------------------------------


def _payload(rng: random.Random, size: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(size))


def _flatbuffer_like(rng: random.Random, ident: bytes, size: int) -> bytes:
    """Bytes pack detects as a flatbuffer of kind `ident` (root offset, then identifier)."""
    return struct.pack("<I", 8) + ident + _payload(rng, size - 8)


def _bases(tmp: Path) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(5)
    S = Specialization
    shared = _payload(rng, 77)
    sets: dict[str, tuple[list[Specialization], dict[str, Any]]] = {
        "two": ([S("portable", _payload(rng, 100)), S("x86_avx2", _payload(rng, 40), priority=5)], {}),
        "mixed": (
            [
                S("xnnpack", _flatbuffer_like(rng, b"XN00", 90), name="xnnpack-fp32", alignment=16),
                S("xnnpack", shared, name="xnnpack-int8", priority=-3, alignment=1),
                S("vulkan", shared, name="gpu", alignment=4096, priority=2),
                S("empty", b"", name="nothing"),
            ],
            {"alignment": 8},
        ),
        "one": ([S("cpu", _payload(rng, 9), alignment=2)], {}),
    }
    sig = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, "batch"]}],
                        "outputs": [{"dtype": "float32", "shape": [4]}],
                        "buffers": [{"name": "state", "dtype": "int64", "shape": []}]}]}
    weights = {"w0": _payload(rng, 64), "w1": _payload(rng, 20), "tied": _payload(rng, 64)}
    sets["manifest"] = (
        [
            S("portable", _payload(rng, 50), name="cpu", requires={"arch": ["x86_64"], "cpu_features": ["avx2"]},
              signature=sig, named_data=["w0", "w1"], source_digest="sha256:00ff", payload_sha256=True),
            S("cuda", _payload(rng, 30), name="gpu", priority=3, signature=sig, named_data=["w0", "tied"],
              requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80"]}], "backend_abi": {"min": 1}},
              provenance={"tool": "test"}, payload_sha256=True),
        ],
        {"named_data": weights},
    )
    for label, (specs, kwargs) in sets.items():
        dest = pack_to(tmp, f"{label}.nfat", specs, **kwargs)
        yield label, dest
    v1 = [S("xnnpack", _payload(rng, 30)), S("vulkan", _payload(rng, 0)), S("coreml", _payload(rng, 12))]
    yield "v1", pack_to(tmp, "v1.nfat", v1, version=1)


def pack_to(tmp: Path, name: str, specs: list[Specialization], **kwargs: Any) -> bytes:
    path = pack(specs, tmp / name, **kwargs)
    return path.read_bytes()


def reseal(data: bytearray) -> bytearray:
    """Recompute header_checksum over the header and tables the (edited) header describes."""
    if len(data) < L.V2_HEADER_SIZE or data[4:8] != b"\x02\0\0\0":
        return data
    h = _HEADER.codec.unpack_from(data, 0)
    v = dict(zip(_HEADER.fields, h))
    end = v["header_size"] + v["entry_count"] * v["entry_size"] + v["segment_count"] * v["segment_entry_size"]
    end = max(L.V2_HEADER_SIZE, min(end, len(data)))
    ck = L.HEADER_CHECKSUM_OFFSET
    value = crc32c(bytes(data[:ck]) + b"\0\0\0\0" + bytes(data[ck + 4 : end]))
    struct.pack_into("<I", data, ck, value)
    return data


_U32_VALUES = (0, 1, 2, 3, 7, 8, 63, 64, 65, 104, 112, 4096, 4104, 65536, 65537, 1 << 20, (1 << 20) + 1,
               0x7FFFFFFF, 0x80000000, 0xFFFFFFFF)


def _u64_values(size: int) -> tuple[int, ...]:
    return (0, 1, 8, 63, 64, 100, size - 1, size, size + 1, size - 8, 1 << 32, 1 << 63, (1 << 64) - 1,
            (1 << 64) - 64)


def _set_field(data: bytes, at: int, size: int, value: int, *, seal: bool) -> bytes:
    out = bytearray(data)
    out[at : at + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return bytes(reseal(out) if seal else out)


def _mutants(label: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(label)
    n = len(data)
    yield f"{label}-intact", data
    yield f"{label}-trailing", data + b"\0"
    version = int.from_bytes(data[4:8], "little")
    table_end = (L.V1_HEADER_SIZE + int.from_bytes(data[8:12], "little") * L.V1_ENTRY_SIZE if version == 1 else
                 L.V2_HEADER_SIZE + int.from_bytes(data[16:20], "little") * L.V2_ENTRY_SIZE)
    # Truncations: every length through the table, then a sample of the rest.
    cuts = set(range(min(n, table_end + 72)))
    cuts |= {rng.randrange(n) for _ in range(40)}
    for cut in sorted(cuts):
        yield f"{label}-cut{cut}", data[:cut]
    # Byte flips across header and table, as they are and (v2) with the checksum recomputed.
    for at in range(min(n, table_end)):
        for bits in (0x01, 0x80, 0xFF):
            flipped = bytearray(data)
            flipped[at] ^= bits
            yield f"{label}-flip{at}x{bits:02x}", bytes(flipped)
            if version == 2 and bits != 0x80:
                yield f"{label}-flip{at}x{bits:02x}-sealed", bytes(reseal(flipped))
    # Flips past the table: padding and payload bytes.
    for _ in range(60):
        if n <= table_end:
            break
        at = rng.randrange(table_end, n)
        flipped = bytearray(data)
        flipped[at] ^= 1 << rng.randrange(8)
        yield f"{label}-late{at}", bytes(flipped)
    if version == 2:
        yield from _manifest_mutants(label, data, rng)
    if version != 2:
        for i in range(int.from_bytes(data[8:12], "little")):
            base = L.V1_HEADER_SIZE + i * L.V1_ENTRY_SIZE
            for fld in ("offset", "size"):
                for value in _u64_values(n):
                    yield f"{label}-e{i}.{fld}={value}", _set_field(data, base + 32 + (0 if fld == "offset" else 8),
                                                                   8, value, seal=False)
        return
    # Out-of-range values in every header field and every field of the first and last entries.
    for fld, (off, size) in _HEADER.offsets.items():
        if fld in ("magic", "header_checksum"):
            continue
        values = _U32_VALUES if size == 4 else _u64_values(n)
        for value in values:
            yield f"{label}-h.{fld}={value}", _set_field(data, off, size, value, seal=True)
    count = int.from_bytes(data[16:20], "little")
    for i in sorted({0, count - 1}):
        base = L.V2_HEADER_SIZE + i * L.V2_ENTRY_SIZE
        for fld, (off, size) in _ENTRY.offsets.items():
            if size == 32:
                for raw in (b"", b"a b", b"ok\0x", b"\xff", b"cpu", b"x86_avx2", b"A" * 32):
                    value = int.from_bytes(raw.ljust(32, b"\0")[:32], "little")
                    yield f"{label}-e{i}.{fld}={raw!r}", _set_field(data, base + off, 32, value, seal=True)
                continue
            values = _U32_VALUES if size == 4 else _u64_values(n)
            for value in values:
                yield f"{label}-e{i}.{fld}={value}", _set_field(data, base + off, size, value, seal=True)
    # A segment table of one record appended to the table, placed in various ways.
    for seg_off, seg_size, align in ((n, 0, 1), (0, 8, 8), (n - 8, 8, 8), (n, 16, 64), (8, 8, 3)):
        yield f"{label}-segment{seg_off},{seg_size},{align}", _with_segment(data, seg_off, seg_size, align)


def _manifest_mutants(label: str, data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """Changes inside the manifest with its CRC32C (and the header's) recomputed, so the manifest
    decoder and its rules are reached rather than the checksum."""
    h = dict(zip(_HEADER.fields, _HEADER.codec.unpack_from(data, 0)))
    off, size = h["manifest_offset"], h["manifest_size"]
    if size == 0:
        return
    ck_at = _HEADER.offsets["manifest_checksum"][0]
    positions = sorted(set(range(min(size, 96))) | {rng.randrange(size) for _ in range(150)})
    for pos in positions:
        for bits in (0x01, 0x04, 0x80, 0xFF):
            out = bytearray(data)
            out[off + pos] ^= bits
            struct.pack_into("<I", out, ck_at, crc32c(bytes(out[off : off + size])))
            yield f"{label}-manifest{pos}x{bits:02x}", bytes(reseal(out))


def _with_segment(data: bytes, seg_off: int, seg_size: int, align: int) -> bytes:
    """`data` with one segment record inserted after the entry table (payload offsets shifted)."""
    h = dict(zip(_HEADER.fields, _HEADER.codec.unpack_from(data, 0)))
    at = h["header_size"] + h["entry_count"] * h["entry_size"]
    rec = _SEGMENT.codec.pack(seg_off, seg_size, align, 0, 0, 0)
    out = bytearray(data[:at] + rec + data[at:])
    struct.pack_into("<I", out, _HEADER.offsets["segment_count"][0], 1)
    struct.pack_into("<Q", out, _HEADER.offsets["container_size"][0], len(out))
    return bytes(reseal(out))


def corpus(tmp: Path) -> list[tuple[str, bytes]]:
    items: list[tuple[str, bytes]] = []
    for label, data in _bases(tmp):
        items.extend(_mutants(label, data))
    if VECTORS.is_dir():
        items.extend((f"vector-{p.name}", p.read_bytes()) for p in sorted(VECTORS.glob("*.nfat")))
    return items


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path, str]]:
    tmp = tmp_path_factory.mktemp("parity")
    out: list[tuple[str, Path, str]] = []
    for k, (label, data) in enumerate(corpus(tmp / "..")):
        path = tmp / f"{k:05d}.nfat"
        path.write_bytes(data)
        out.append((label, path, expected_line(data)))
    return out


def run_tool(exe: Path, paths: list[Path]) -> list[str]:
    lines: list[str] = []
    for start in range(0, len(paths), 400):
        batch = paths[start : start + 400]
        proc = subprocess.run([str(exe), *map(str, batch)], check=False, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode in (0, 1), f"fatpte-validate crashed ({proc.returncode}): {proc.stderr[-2000:]}"
        got = proc.stdout.splitlines()
        assert len(got) == len(batch), proc.stderr[-2000:]
        lines.extend(got)
    return lines


@pytest.mark.loader_build("fatpte-validate")
def test_loader_reports_python_first_error(build: Path, cases: list[tuple[str, Path, str]]) -> None:
    exe = build / "fatpte-validate"  # `build`: tests/loader/conftest.py
    got = run_tool(exe, [p for _, p, _ in cases])
    mismatches = []
    for (label, _path, want), line in zip(cases, got):
        if line != want:
            mismatches.append(f"{label}: python {want!r}, loader {line!r}")
    assert not mismatches, f"{len(mismatches)} of {len(cases)} differ:\n" + "\n".join(mismatches[:40])


def _indexed_line(row: dict[str, Any]) -> str:
    if row["valid"]:
        return "OK"
    e = row["error"]
    return f"{e['code']} {'-' if e['offset'] is None else e['offset']} {_as_printed(e['field'])}"


@pytest.mark.loader_build("fatpte-validate")
def test_loader_gives_every_vector_its_indexed_outcome(build: Path) -> None:
    """Every conformance vector, none skipped, gets from fatpte-validate the outcome index.json
    states: the program entries' vectors (specs/executorch.md section 7: E1101 to E1104, the
    exceptions of fatpte.signature_check, a payload that does not read) as every other."""
    index = json.loads((VECTORS / "index.json").read_text())["vectors"]
    names = sorted(index)
    assert sum(name.startswith("v2-program-") for name in names) >= 20
    got = run_tool(build / "fatpte-validate", [VECTORS / name for name in names])
    assert [f"{n}: {_indexed_line(index[n])}" for n in names] == [f"{n}: {g}" for n, g in zip(names, got)]


def _table_count_container() -> bytes:
    """A valid container but for rule 2.1.8 of specs/nfat-manifest.md: 1001 references to one
    entry, whose one target list holds 1000 references to one empty VersionConstraint table, over
    a million table visits in all, in a manifest large enough (a 600 KB provenance value, in one
    more entry) that its work budget is not reached first."""
    from tests.support.vectors import ManifestWriter, with_manifest

    w = ManifestWriter()
    targets = w.vector([w.table("VersionConstraint")] * 1000)
    acc = w.table("AcceleratorRequirement", kind=w.string("cuda"), targets=targets)
    entry = w.table("Entry", name=w.string("cpu"), requires=w.table("Requirements", accelerators=w.vector([acc])))
    pad = w.table("KeyValue", key=w.string("pad"), value=w.string("x" * 600_000))
    padded = w.table("Entry", name=w.string("p"), provenance=w.vector([pad]))
    manifest = w.finish(w.table("Manifest", entries=w.vector([entry] * 1001 + [padded])))
    return with_manifest([("cpu", "xnnpack", b"payload")], manifest, [])


@pytest.mark.loader_build("fatpte-validate")
def test_every_manifest_rule_is_refused_alike(build: Path, tmp_path: Path) -> None:
    """Every rule of specs/nfat-manifest.md section 2 has a vector (tests/conformance/
    test_vectors.py checks that), and the loader refuses each with Python's code, offset and
    field: it checks every rule itself, not only what flatbuffers::Verifier checks."""
    exe = build / "fatpte-validate"
    index = json.loads((VECTORS / "index.json").read_text())["vectors"]
    rule_files = sorted(name for name, row in index.items() if "rule" in row)
    paths = [VECTORS / name for name in rule_files]
    big = tmp_path / "v2-manifest-table-count.nfat"
    big.write_bytes(_table_count_container())
    paths.append(big)
    want = [expected_line(p.read_bytes()) for p in paths]
    # the entry reached again adds its 1001 tables at once: the millionth is passed at a reference to it
    assert want[-1].startswith(ErrorCode.MANIFEST_CORRUPT.tag) and want[-1].endswith("manifest.entries[997]")
    got = run_tool(exe, paths)
    assert [f"{p.name}: {w}" for p, w in zip(paths, want)] == [f"{p.name}: {g}" for p, g in zip(paths, got)]


# Programs of every kind: portable, XNNPACK (float32, float16 with float32 edges, int8), OpenVINO,
# native (whose NPTG payloads declare their state), fat delegates (an XNNPACK payload and a nested
# program; NPTG entries), with and without mutable buffers; kvcache and kvpair differ in their
# buffers alone.
SWAP_FIXTURES = ("mlp_portable", "mlp_xnnpack", "mlp_xnnpack_int8", "mlp_xnnpack_fp16io_default",
                 "mlp_openvino_default", "mlp_fat", "mlp_native", "add_portable", "add_fat", "buffer_portable",
                 "buffer_xnnpack", "buffer_fat", "buffer_nfat", "kvcache_xnnpack_fp16io_default", "kvcache_native",
                 "kvpair_portable", "kvpair_xnnpack_default", "kvpair_native")


def _program_entry(name: str, data: bytes) -> bytes:
    """`data` with its entry 0 marked as an ExecuTorch program (payload kind ET12), checksums sealed."""
    from tests.support.vectors import Edit, Vector

    edit = Edit(Vector(name, data, ""))
    edit.set_entry(0, "payload_kind", b"ET12")
    edit.seal()
    return bytes(edit.buf)


def _under_record(record: bytes, program: bytes) -> bytes:
    """`record`'s one program entry (manifest, table record) with `program` as its payload."""
    from fatpte.container.reader import Container
    from tests.support.vectors import with_manifest

    with Container.from_buffer(record) as c:
        e, h = c.entries[0], c.header
        manifest = bytes(record[h.manifest_offset : h.manifest_offset + h.manifest_size])
        data = with_manifest([(e.name, e.backend_id, program)], manifest, [])
    return _program_entry("swapped", data)


@pytest.mark.loader_build("fatpte-validate")
def test_a_program_under_another_programs_record_is_refused_alike(build: Path, tmp_path: Path) -> None:
    """specs/executorch.md section 7: each fixture program packed, then every other one put under
    its record (CRC32C recomputed): the loader reports Python's first error, E1101 to E1104, or
    accepts what Python accepts (each program under its own record)."""
    from fatpte.ops.pte_specialize import pte_specialization

    fixtures = ROOT / "tests" / "fixtures" / "executorch"
    packed = {n: pack_to(tmp_path, f"{n}.nfat", [pte_specialization(fixtures / f"{n}.pte", name="e")])
              for n in SWAP_FIXTURES}
    programs = {n: (fixtures / f"{n}.pte").read_bytes() for n in SWAP_FIXTURES}
    paths, want = [], []
    for a in SWAP_FIXTURES:
        for b in SWAP_FIXTURES:
            data = _under_record(packed[a], programs[b])
            path = tmp_path / f"{a}--{b}.nfat"
            path.write_bytes(data)
            paths.append(path)
            want.append(f"{path.stem}: {expected_line(data)}")
    said = {w.split(": ")[1].split(" ")[0] for w in want}
    assert {"OK", "E1101", "E1102", "E1103", "E1104"} <= said, said
    got = run_tool(build / "fatpte-validate", paths)
    assert want == [f"{p.stem}: {g}" for p, g in zip(paths, got)]


def _fat_tree_entry(rng: random.Random) -> bytes:
    """mlp_fat.pte with its fat delegate wrapped in 0 to 7 levels (tests/support/hostile.fat_tree),
    as the one program entry of a version 2 container whose manifest names it and claims nothing
    else of it."""
    from fatpte.manifest.codec import encode
    from fatpte.manifest.model import Manifest, ManifestEntry
    from tests.support import hostile
    from tests.support.vectors import with_manifest

    program = (ROOT / "tests" / "fixtures" / "executorch" / "mlp_fat.pte").read_bytes()
    kinds = (hostile.FAT, hostile.FAT, hostile.PROGRAM, hostile.JUNK)
    levels = [(rng.choice((L.VERSION_1, L.VERSION_2)), [rng.choice(kinds) for _ in range(rng.randint(1, 4))])
              for _ in range(rng.randint(0, 7))]
    tree = hostile.fat_tree(program, levels, overlap=rng.random() < 0.3)
    data = with_manifest([("fat", "fatpte", tree)], encode(Manifest(entries=(ManifestEntry("fat"),))), [])
    return _program_entry("tree", data)


@pytest.mark.loader_build("fatpte-validate")
def test_fat_delegates_nested_in_a_program_entry_are_refused_alike(build: Path, tmp_path: Path) -> None:
    """specs/executorch.md section 8 in a program entry: 120 trees of fat delegates, some past
    MAX_FAT_DELEGATE_DEPTH (E1010); the loader reports Python's first error, at the same container
    and path (as far as fatpte_error holds it: expected_line). Trees whose bytes were changed are left out: where
    the two program readers refuse a damaged program at different offsets is theirs, not this walk's."""
    rng = random.Random(38)
    paths, want = [], []
    for k in range(120):
        data = _fat_tree_entry(rng)
        path = tmp_path / f"tree{k}.nfat"
        path.write_bytes(data)
        paths.append(path)
        want.append(f"tree{k}: {expected_line(data)}")
    said = {w.split(": ")[1].split(" ")[0] for w in want}
    assert {"OK", ErrorCode.FAT_DELEGATE_TOO_DEEP.tag} <= said, said
    got = run_tool(build / "fatpte-validate", paths)
    assert want == [f"{p.stem}: {g}" for p, g in zip(paths, got)]


def test_corpus_reaches_every_structural_rule(cases: list[tuple[str, Path, str]]) -> None:
    """The corpus exercises the rules it is meant to compare, not only checksum errors."""
    seen = {want.split(" ", 1)[0] for _, _, want in cases}
    needed = {
        ErrorCode.TRUNCATED_HEADER, ErrorCode.TRUNCATED_CONTAINER, ErrorCode.TRAILING_BYTES,
        ErrorCode.BAD_HEADER_SIZE, ErrorCode.BAD_ENTRY_SIZE, ErrorCode.BAD_SEGMENT_ENTRY_SIZE,
        ErrorCode.UNKNOWN_HEADER_FLAGS, ErrorCode.TOO_MANY_ENTRIES, ErrorCode.TOO_MANY_SEGMENTS,
        ErrorCode.TABLE_OUT_OF_BOUNDS, ErrorCode.HEADER_CHECKSUM_MISMATCH, ErrorCode.NO_ENTRIES,
        ErrorCode.BAD_NAME, ErrorCode.BAD_BACKEND_ID, ErrorCode.PAYLOAD_OUT_OF_BOUNDS, ErrorCode.BAD_ALIGNMENT,
        ErrorCode.MISALIGNED_PAYLOAD, ErrorCode.DUPLICATE_NAME, ErrorCode.UNKNOWN_ENTRY_FLAGS,
        ErrorCode.PAYLOAD_CHECKSUM_MISMATCH, ErrorCode.PAYLOAD_KIND_MISMATCH, ErrorCode.SEGMENT_OUT_OF_BOUNDS,
        ErrorCode.BAD_SEGMENT_ALIGNMENT, ErrorCode.MISALIGNED_MANIFEST, ErrorCode.MANIFEST_OUT_OF_BOUNDS,
        ErrorCode.MANIFEST_TOO_LARGE, ErrorCode.ABSENT_MANIFEST_NOT_ZERO, ErrorCode.V1_BAD_ID,
        ErrorCode.REGIONS_OVERLAP, ErrorCode.PADDING_NOT_ZERO, ErrorCode.RESERVED_NOT_ZERO,
        ErrorCode.SEGMENT_UNREFERENCED, ErrorCode.BAD_MAGIC, ErrorCode.UNSUPPORTED_VERSION,
        ErrorCode.MANIFEST_CHECKSUM_MISMATCH, ErrorCode.BAD_MANIFEST_IDENTIFIER, ErrorCode.MANIFEST_CORRUPT,
        ErrorCode.MANIFEST_ENTRY_MISSING, ErrorCode.MANIFEST_ENTRY_UNKNOWN, ErrorCode.DUPLICATE_MANIFEST_ENTRY,
        ErrorCode.SIGNATURE_MISMATCH, ErrorCode.NAMED_DATA_KEY_MISSING, ErrorCode.NAMED_DATA_BAD_SEGMENT,
        ErrorCode.NAMED_DATA_KEYS_UNSORTED, ErrorCode.PAYLOAD_DIGEST_MISMATCH, ErrorCode.MANIFEST_VALUE_INVALID,
    }
    missing = sorted(c.name for c in needed if c.tag not in seen)
    assert not missing, f"the corpus never produces {missing}"


# ---- selection ---------------------------------------------------------------------------------

_PREFERENCES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    ((), ()),
    (("arm", "portable"), ()),
    ((), ("avx2",)),
    (("x86_avx512", "gpu"), ("cpu",)),
    (("portable",), ("gpu", "avx512", "x86_avx2")),
)


def _selection_containers(tmp: Path) -> list[Path]:
    S = Specialization
    specs = [
        S("portable", b"p" * 10, name="cpu"),
        S("x86_avx2", b"a" * 10, name="avx2", priority=1,
          requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}),
        S("x86_avx512", b"b" * 10, name="avx512", priority=1,
          requires={"arch": ["x86_64"], "cpu_features": ["avx512f", "avx512bw", "avx512vl"]}),
        S("cuda", b"c" * 10, name="gpu", priority=2,
          requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80", "sm_90a", "compute_90"],
                                      "min_memory_bytes": 1 << 30}], "backend_abi": {"min": 2, "max": 5}}),
        S("vulkan", b"v" * 10, name="gpu-vk", priority=2,
          requires={"accelerators": [{"kind": "vulkan", "targets": [">=1.2"]}], "backend_abi": {"min": 1}}),
        S("neon", b"n" * 10, name="arm",
          requires={"arch": ["aarch64"], "os": ["linux", "android"], "cpu_features": ["asimddp"],
                    "min_memory_bytes": 1 << 33}),
    ]
    plain = [S("portable", b"p" * 3, name="cpu"), S("x86_avx2", b"a" * 3, name="avx2", priority=1)]
    v1 = [S("portable", b"p" * 3), S("x86_avx2", b"a" * 3)]
    # Version 1 ids may hold any byte from 0x01 to 0x7f: both explain them escaped alike.
    hostile = [S("\x1b[31mred\x1b[0m", b"p" * 3), S("two\nlines\\x7f", b"a" * 3), S("del\x7f", b"d" * 3)]
    return [pack(specs, tmp / "requires.nfat"), pack(plain, tmp / "plain.nfat"),
            pack(v1, tmp / "v1.nfat", version=1), pack(hostile, tmp / "v1-control-bytes.nfat", version=1),
            _executorch_container(tmp)]


def _executorch_container(tmp: Path) -> Path:
    """Lowerings of one program as the manifest describes them (executorch_backends): portable
    first in the table, one that needs two backends, one whose need is not known."""
    S = Specialization
    return pack([
        S("portable", b"p" * 4, name="cpu", executorch_backends=[]),
        S("x86_avx2", b"a" * 4, name="avx2", executorch_backends=["XnnpackBackend"],
          requires={"arch": ["x86_64"], "cpu_features": ["avx2", "fma"]}),
        S("gpu", b"g" * 4, name="gpu", executorch_backends=["VulkanBackend", "XnnpackBackend"]),
        S("arm", b"n" * 4, name="arm", executorch_backends=["NativeBackend"], priority=-1),
        S("opaque", b"o" * 4, name="opaque", priority=-2),
    ], tmp / "executorch.nfat")


# The runtimes a profile may state (None: the profile does not say).
_RUNTIMES: tuple[tuple[str, ...] | None, ...] = (None, (), ("XnnpackBackend",), ("NativeBackend", "XnnpackBackend"),
                                               ("VulkanBackend", "XnnpackBackend", "QnnBackend"))


def test_loader_selects_like_python_for_every_named_profile(tmp_path: Path) -> None:
    # The release build only: 360 runs of an ASan binary would cost most of a minute, and the
    # ASan build runs selection in test_cpp_dispatch.py and its own ctest suite.
    from fatpte.device.profile import DeviceProfile, devices_dir
    from fatpte.device.selection import select
    from fatpte.errors import FatpteWarning, SelectionError

    exe = tool("release", "fatpte-run")
    names = DeviceProfile.names()
    assert names, "no named device profiles to compare on"
    mismatches = []
    compared = no_fit = 0
    for path in _selection_containers(tmp_path):
        with open_container(path) as container:
            for name, runtime in [(n, r) for n in names for r in (_RUNTIMES if path.stem == "executorch" else (None,))]:
                profile = devices_dir() / f"{name}.json"
                device = DeviceProfile.load(name)
                if runtime is not None:  # the named profile with the ExecuTorch backends of a runtime
                    device = device._replace(executorch_backends=runtime)
                    profile = tmp_path / f"{name}-{len(runtime)}-{'-'.join(runtime)}.json"
                    profile.write_text(device.to_json_text())
                for prefer, exclude in _PREFERENCES:
                    args = [str(exe), str(path), "--select-only", "--device", str(profile)]
                    args += [a for w in prefer for a in ("--prefer", w)]
                    args += [a for w in exclude for a in ("--exclude", w)]
                    as_json = subprocess.run([*args, "--json"], check=False, capture_output=True, text=True,
                                             timeout=60)
                    explained = subprocess.run([*args, "--explain"], check=False, capture_output=True, text=True,
                                               timeout=60)
                    label = f"{path.name} on {name} prefer={prefer} exclude={exclude}"
                    compared += 1
                    try:
                        with warnings.catch_warnings():  # words the container lacks are only a warning
                            warnings.simplefilter("ignore", FatpteWarning)
                            sel = select(container, device, prefer=prefer, exclude=exclude)
                    except SelectionError as exc:
                        if as_json.returncode != 3 or exc.message not in as_json.stderr:
                            mismatches.append(f"{label}: python raised {exc.message!r}, loader "
                                              f"{as_json.returncode} {as_json.stderr!r}")
                        elif as_json.stdout != json.dumps(exc.report, indent=2) + "\n":
                            mismatches.append(f"{label}: no-fit JSON differs:\n{as_json.stdout}")
                        no_fit += 1
                        continue
                    if as_json.stdout != json.dumps(sel.to_json(), indent=2) + "\n":
                        mismatches.append(f"{label}: selection JSON differs:\n{as_json.stdout}")
                    if explained.stdout != sel.explain() + "\n":
                        mismatches.append(f"{label}: explanation differs:\n{explained.stdout}")
    assert compared >= 4 * len(names) * len(_PREFERENCES)
    assert 0 < no_fit < compared  # both outcomes were compared
    assert not mismatches, f"{len(mismatches)} of {compared} differ:\n" + "\n".join(mismatches[:10])


@pytest.mark.parametrize("reads", ["nothing", "features", "memory", "accelerator", "example"])
def test_host_selection_probes_what_the_requirements_read(reads: str, tmp_path: Path) -> None:
    """fatpte_select(NULL) and `--select-only` on this machine probe only the facts some entry's
    requirements read (ProbeScope): the selection must still be Python's on its fully probed host,
    and the CUDA driver is looked for only when an entry asks for an accelerator (or when an entry
    goes to an example backend library, whose is_available() reads the whole profile)."""
    from fatpte.device.profile import DeviceProfile
    from fatpte.device.selection import select

    exe = tool("release", "fatpte-run")
    host = DeviceProfile.host()
    program = (ROOT / "tests" / "fixtures" / "executorch" / "add_portable.pte").read_bytes()
    feature = min(host.cpu_features) if host.cpu_features else "asimd"
    # The entry that states the fact ranks first when the fact is read right, and fails when it
    # is read as absent: a probe that skipped what it needed changes the choice.
    requires: dict[str, Any] = {
        "nothing": {},
        "features": {"cpu_features": [feature]},
        "memory": {"min_memory_bytes": 1},
        "accelerator": {"accelerators": [{"kind": "cuda"}]},
        "example": {"cpu_features": [feature]},
    }[reads]
    S = Specialization
    specs = [S("portable", program, name="plain"), S("portable", program, name="stating", priority=1,
                                                     requires=requires)]
    if reads == "example":
        specs.append(S("dense_ref", b"not a program", name="example", priority=-1))
    path = pack(specs, tmp_path / f"{reads}.nfat")
    with open_container(path) as container:
        want = json.dumps(select(container, host).to_json(), indent=2) + "\n"
    r = subprocess.run([str(exe), str(path), "--select-only", "--json"], check=False, capture_output=True, text=True,
                       timeout=60, env={"LD_DEBUG": "libs", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == want
    searched_cuda = "libcuda" in r.stderr
    assert "find library=" in r.stderr, "LD_DEBUG=libs printed nothing: the check would prove nothing"
    assert searched_cuda == (reads in ("accelerator", "example")), reads
