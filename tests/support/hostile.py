"""Hostile inputs of the shapes issues 15 and 33 found (docs/reliability.md, "Work budgets"), at any
scale: the regression tests (tests/conformance/test_hostile.py) build them small, `make bench`
builds them at three sizes for both implementations (bench/op_hostile.py), and the structure-aware
fuzz targets (fuzz/fuzz_hostile.py, fuzz_signature.py, fuzz_trusted_keys.py,
fuzz_nested_delegates.py) start from them.

Every builder returns the bytes of a whole container (or program, bundle, key file, calls.json),
valid but for what its name says; the manifests are written with tests/support/vectors.ManifestWriter,
which shares what it is told to share, as a hostile writer would.
"""

from __future__ import annotations

import json
import struct
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fatpte.format import layout as L
from tests.support.vectors import ManifestWriter, blob, with_manifest

ENTRY = ("cpu", "xnnpack", blob("hostile-cpu", 64))


def shared_key(refs: int, key_bytes: int, *, missing: bool = False) -> bytes:
    """Entry `cpu` names one named-data key `refs` times (one string, `refs` offsets to it), the
    shape of "a 4 MB container that names one 4 KiB key 1,000,000 times". With `missing`, the key
    table defines another key: every reference is then an E0413."""
    w = ManifestWriter()
    key = w.string("k" * key_bytes)
    defined = w.string("j" * key_bytes) if missing else key
    cpu = w.table("Entry", name=w.string("cpu"), named_data=w.vector([key] * refs))
    keys = w.vector([w.table("NamedData", key=defined)])
    manifest = w.finish(w.table("Manifest", revision=1, entries=w.vector([cpu]), named_data=keys))
    return with_manifest([ENTRY], manifest, [blob("hostile-segment", 64)])


def many_keys(keys: int, segment_bytes: int = 100) -> bytes:
    """Entry `cpu` lists `keys` named-data keys, each in a segment of its own (`segment_bytes`
    bytes, at multiples of 64: never touching), a valid container: the shape of "one entry listing
    160,000 keys (20 MB)" that the C reader fetched in quadratic work (issue 42 R5)."""
    w = ManifestWriter()
    names = [w.string(f"w{i:07d}") for i in range(keys)]
    table = w.vector([w.table("NamedData", key=n, segment=i) for i, n in enumerate(names)])
    cpu = w.table("Entry", name=w.string("cpu"), named_data=w.vector(names))
    manifest = w.finish(w.table("Manifest", revision=1, entries=w.vector([cpu]), named_data=table))
    return with_manifest([ENTRY], manifest, [blob(f"hostile-key-{i}", segment_bytes) for i in range(keys)])


def shared_requirement(refs: int, word_bytes: int, entries: int = 1, *, one_table: bool = True) -> bytes:
    """Each of `entries` entries requires `refs` references to one CPU feature of `word_bytes`
    bytes (one string), the shape of "requirement strings that are 1,000 references to one 1 MiB
    string": no device has that feature, so selection explains why for every entry. With
    `one_table` every entry points at one requirements table (what the attack did); without, each
    entry has its own vector of references, which keeps a large file within its work budget."""
    w = ManifestWriter()
    word = w.string("f" * word_bytes)
    names = [f"e{i}" for i in range(entries)]
    shared = w.table("Requirements", cpu_features=w.vector([word] * refs)) if one_table else None
    reqs = [shared if shared is not None else w.table("Requirements", cpu_features=w.vector([word] * refs))
            for _ in names]
    rows = [w.table("Entry", name=w.string(n), requires=r) for n, r in zip(names, reqs, strict=True)]
    manifest = w.finish(w.table("Manifest", revision=1, entries=w.vector(rows)))
    return with_manifest([(n, "xnnpack", ENTRY[2]) for n in names], manifest, [])


def shared_payload(entries: int, *, requires: bool = True) -> bytes:
    """`entries` entries sharing one payload, each with a manifest entry (a requirement that
    holds on x86_64), the shape of "N entries sharing one payload": what info's sharing column and
    selection's lookups were quadratic in."""
    import fatpte
    from tests.support.vectors import packed

    payload = blob("hostile-shared", 64)
    req: Any = {"arch": ["x86_64", "aarch64"]} if requires else None
    return packed([fatpte.Specialization("xnnpack", payload, name=f"e{i:05d}", requires=req)
                   for i in range(entries)])


def names(entries: int) -> Sequence[str]:
    return [f"e{i:05d}" for i in range(entries)]


def pte_shared_operator(refs: int, name_bytes: int) -> bytes:
    """An ExecuTorch program (.pte, no extended header) whose method's operator table lists
    `refs` references to one operator with a name of `name_bytes` bytes: the shape of "a 1 MB .pte
    whose 2,000 operators reference one operator with a 1 MiB name"."""
    import flatbuffers

    b = flatbuffers.Builder(0)
    name = b.CreateString("o" * name_bytes)
    b.StartObject(2)  # Operator: name, overload
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    op = b.EndObject()
    b.StartVector(4, refs, 4)
    for _ in range(refs):
        b.PrependUOffsetTRelative(op)
    ops = b.EndVector()
    method = b.CreateString("forward")
    b.StartObject(9)  # ExecutionPlan: name, container_meta_type, values, inputs, outputs, chains, operators, ...
    b.PrependUOffsetTRelativeSlot(0, method, 0)
    b.PrependUOffsetTRelativeSlot(6, ops, 0)
    plan = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(plan)
    plans = b.EndVector()
    b.StartObject(8)  # Program: version, execution_plan, ...
    b.PrependUint32Slot(0, 0, 1)
    b.PrependUOffsetTRelativeSlot(1, plans, 0)
    root = b.EndObject()
    b.Finish(root, b"ET12")
    return bytes(b.Output())


def profile_with_backends(count: int) -> bytes:
    """A valid device profile listing `count` backends: the largest honest profile shape."""
    import json

    backends = {f"b{i}": i for i in range(count)}
    return json.dumps({"name": "many", "os": "linux", "arch": "x86_64", "cpu_features": ["avx2"], "accelerators": [],
                       "memory_bytes": 1 << 33, "backends": backends}).encode("ascii")


def nested_fat_delegates(program: bytes, depth: int) -> bytes:
    """`program` (a .pte whose first delegate is a fat delegate, FatpteBackend) with that delegate's
    container wrapped in `depth - 1` version 1 containers of one entry each, backend id
    FatpteBackend, each holding the next: fat delegates `depth` levels deep (specs/executorch.md
    section 8), 60 bytes a level. Built in one pass, so 10,000 levels cost no more than their bytes."""
    from fatpte.executorch.rewrite import replace_segment

    delegate = first_delegate(program)
    inner = program[delegate.offset : delegate.offset + delegate.size]
    levels = depth - 1
    header, entry = L.RECORDS["v1_header"].size, L.RECORDS["v1_entry"].size
    out = bytearray()
    for level in range(levels):
        rest = (levels - level - 1) * (header + entry) + len(inner)
        out += L.MAGIC + struct.pack("<II", L.VERSION_1, 1)
        out += b"FatpteBackend".ljust(32, b"\0") + struct.pack("<QQ", 0, rest)
    out += inner
    return replace_segment(program, delegate.data_index, bytes(out))


def first_delegate(program: bytes) -> Any:
    """The first delegate of the first method of `program` (fatpte.executorch.pte.Delegate)."""
    from fatpte.executorch.pte import read_program

    (delegate,) = [d for m in read_program(program).methods for d in m.delegates][:1]
    return delegate


def planned_buffer_resized(program: bytes, size: int) -> bytes:
    """`program` (a .pte) with the largest memory-planned buffer of each method declared `size`
    bytes: the shape of "a 3 KB container whose program declares a 16 GiB planned buffer" (issue
    42, M1). Only the declared size changes (the execution plan's `non_const_buffer_sizes`, whose
    element 0 ExecuTorch reserves); the tensors still lie where they did, at its start, so the
    program runs as before and a loader that reserves rather than commits the buffer touches only
    what the program writes."""
    from fatpte.executorch.flatbuf import Buffer
    from fatpte.executorch.pte import IDENTIFIER, read_program

    header = read_program(program).header
    end = len(program) if header is None else header.program_size
    root = Buffer(memoryview(program)[:end], source=None).root(IDENTIFIER, "ExecuTorch program")
    out = bytearray(program)
    for plan in root.tables(1, "execution_plan"):
        found = plan.vector(8, 8, "non_const_buffer_sizes")
        if found is None or found[1] < 2:
            continue
        start, count = found
        sizes = struct.unpack_from(f"<{count}q", out, start)
        largest = max(range(1, count), key=lambda i: sizes[i])
        struct.pack_into("<q", out, start + 8 * largest, size)
    return bytes(out)


# -- nested fat delegates (issue 33, F1): trees, not only chains -------------------------------------

FAT, PROGRAM, JUNK = "fat", "program", "junk"  # what an entry of a level holds (fat_tree)
FAT_KINDS = (FAT, PROGRAM, JUNK)
_FAT_IDS = {FAT: "FatpteBackend", PROGRAM: "portable", JUNK: "NoSuchBackend"}


def v1_container(entries: Sequence[tuple[str, bytes]], *, overlap: bytes | None = None) -> bytes:
    """A version 1 container of `entries` (backend id, payload): identical payloads stored once,
    each right after the one before (unaligned, as a version 1 writer may leave them). The entries
    holding `overlap` each see it one byte longer than the one before (it is stored once, padded
    with zeros): regions that start at one byte and overlap, which version 1 allows with a warning
    (E0503)."""
    rows, data = bytearray(), bytearray()
    placed: dict[bytes, int] = {}
    longer = 0
    for backend, payload in entries:
        at = placed.setdefault(payload, len(data))
        if at == len(data):
            data += payload + (bytes(sum(p == overlap for _, p in entries)) if payload == overlap else b"")
        size = len(payload)
        if payload == overlap:
            size, longer = size + longer, longer + 1
        rows += L.RECORDS["v1_entry"].codec.pack(backend.encode("ascii").ljust(32, b"\0"), at, size)
    return L.RECORDS["v1_header"].codec.pack(L.MAGIC, L.VERSION_1, len(entries)) + bytes(rows) + bytes(data)


def fat_tree(program: bytes, levels: Sequence[tuple[int, Sequence[str]]], *, overlap: bool = False) -> bytes:
    """`program` (a .pte whose first delegate is a fat delegate) with that delegate's container
    wrapped in one container per level, outermost first. A level (version, kinds) is a version 1
    or 2 container whose entries hold, by kind: the level below as a fat delegate's payload
    (`fat`, backend id FatpteBackend), a copy of `program` whose fat delegate holds the level below
    (`program`), or bytes no backend runs (`junk`). Entries of one kind share one payload, so a
    level of n entries is n paths to the level below, and k such levels are n**k paths through
    bytes that grow as n * k. With `overlap`, the `fat` entries of a version 1 level whose level
    below is version 1 too each see it one byte longer (v1_container): n regions from one first
    byte, each reading the same table. Built bottom up, each level once."""
    from fatpte.executorch.rewrite import replace_segment

    delegate = first_delegate(program)
    below = program[delegate.offset : delegate.offset + delegate.size]
    below_version = None
    junk = blob("fat-tree-junk", 64)
    for version, kinds in reversed(levels):
        nested = replace_segment(program, delegate.data_index, below) if PROGRAM in kinds else b""
        held = {FAT: below, PROGRAM: nested, JUNK: junk}
        if version == L.VERSION_1:
            grown = below if overlap and below_version == L.VERSION_1 else None
            below = v1_container([(_FAT_IDS[k], held[k]) for k in kinds], overlap=grown)
        else:
            below = with_manifest([(f"e{i}", _FAT_IDS[k], held[k]) for i, k in enumerate(kinds)], b"", [])
        below_version = version
    return replace_segment(program, delegate.data_index, below)


def fat_tree_depth(levels: Sequence[tuple[int, Sequence[str]]]) -> int:
    """How deep the fat delegates of fat_tree(program, levels) nest (specs/executorch.md section 8):
    level i is at depth i + 1 when every level above it holds a `fat` or `program` entry, and the
    program's own container one below the last level reached."""
    depth = 1
    for _, kinds in levels:
        if FAT not in kinds and PROGRAM not in kinds:
            return depth
        depth += 1
    return depth


def fat_tree_first_too_deep(levels: Sequence[tuple[int, Sequence[str]]], delegate_index: int) -> str | None:
    """The field path validate names for the first container of fat_tree(program, levels) past
    MAX_FAT_DELEGATE_DEPTH (E1010), walking entries in table order; None when none is."""
    if fat_tree_depth(levels) <= L.MAX_FAT_DELEGATE_DEPTH:
        return None
    path, depth = f"delegates[{delegate_index}].payload", 1
    for _, kinds in levels:
        j = next(i for i, k in enumerate(kinds) if k != JUNK)
        path += f".entries[{j}].payload" + (f".delegates[{delegate_index}].payload" if kinds[j] == PROGRAM else "")
        depth += 1
        if depth > L.MAX_FAT_DELEGATE_DEPTH:
            return path
    return path


# -- signed containers (issue 33, S2, S5, S6) --------------------------------------------------------

def attach(data: bytes, bundle: bytes) -> bytes:
    """`data` (a version 2 container whose structure reads) with `bundle` as its signature region,
    laid out as `fatpte sign` lays it out, whatever the bundle says: for containers a signer would
    refuse (a hostile manifest) and bundles no signer wrote."""
    from fatpte.container.reader import open as open_container
    from fatpte.ops.signing.relayout import plan_layout, write_container

    with tempfile.TemporaryDirectory() as tmp:
        src, dest = Path(tmp) / "c.nfat", Path(tmp) / "s.nfat"
        src.write_bytes(data)
        with open_container(src) as c:
            write_container(c, dest, plan_layout(c, max(c.header.header_size, L.SIGNED_HEADER_SIZE)), bundle)
        return dest.read_bytes()


def bundle_over(payload: bytes, key: str) -> bytes:
    """A bundle whose envelope holds `payload` (a statement's JSON, or any bytes) signed with the
    conformance test key `key` (tests/support/vectors.test_key): what a holder of a trusted key can
    write, so what a verifier reads after the signature checks."""
    import base64

    from fatpte.ops.signing.bundle import BUNDLE_MEDIA_TYPE, PAYLOAD_TYPE, pae
    from fatpte.ops.signing.keys import key_id, sign_bytes
    from tests.support.vectors import test_key

    private = test_key(key)
    sig = sign_bytes(private, pae(PAYLOAD_TYPE, payload))
    return json.dumps({
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": key_id(private.public_key())}, "tlogEntries": []},
        "dsseEnvelope": {"payload": base64.b64encode(payload).decode("ascii"), "payloadType": PAYLOAD_TYPE,
                         "signatures": [{"sig": base64.b64encode(sig).decode("ascii"), "keyid": ""}]},
    }, separators=(",", ":")).encode()


def statement_of_bundle(bundle: bytes) -> Any:
    """The statement a bundle written by bundle_over or `fatpte sign` carries, as JSON."""
    import base64

    return json.loads(base64.b64decode(json.loads(bundle)["dsseEnvelope"]["payload"]))


def bundle_with_values(bundle: bytes, values: int) -> bytes:
    """`bundle` with one more member, ignored by verifiers, holding `values` zeros (specs/
    nfat-signature.md section 7: at most MAX_BUNDLE_VALUES values, counted as they are read; S5's
    region of 30 million zeros): added without any key, the signature still verifies below the
    limit."""
    doc = json.loads(bundle)
    doc["x-padding"] = [0] * values
    return json.dumps(doc, separators=(",", ":")).encode()


def signed_with_added_entries(added: int, key: str = "ed25519") -> bytes:
    """One signed entry plus `added` entries sharing one payload added after signing, the
    signature kept (S6: every added entry is an E1307, and a verifier that scans the manifest
    once per entry is quadratic in them)."""
    import fatpte
    from tests.support.vectors import bundle_of, packed, signed, test_key, with_bundle

    one = fatpte.Specialization("xnnpack", blob("signed-one", 64), name="signed")
    extra = [fatpte.Specialization("xnnpack", blob("added", 64), name=f"a{i:05d}") for i in range(added)]
    grown = signed(packed([one, *extra]), test_key(key))
    return bytes(with_bundle(grown, bundle_of(signed(packed([one]), test_key(key)))))


def golden_calls_container(calls: int, model: Path) -> bytes:
    """Two entries of the program `model` (tests/fixtures/executorch/mlp_portable.pte) with
    `calls` golden calls each, the three tier calls of mlp (fixtures.json, their eager outputs,
    a tolerance of 1e-3 that they meet) repeated: valid, and `fatpte check` pairs every output of
    one entry with the other's (issue 42 C1, once quadratic in the calls)."""
    import fatpte

    tiers = json.loads((model.parent / "fixtures.json").read_text())["tiers"]["models"]["mlp"]["calls"]
    tolerance = {"atol": 1e-3, "rtol": 1e-3}
    specs = [fatpte.Specialization("portable", model, name=name, golden_tolerance=tolerance, priority=p)
             for name, p in (("a", 1), ("b", 0))]
    with tempfile.TemporaryDirectory(prefix="hostile-golden-") as tmp:
        out = Path(tmp) / "golden.nfat"
        fatpte.pack(specs, out, golden=[tiers[k % len(tiers)] for k in range(calls)])
        return out.read_bytes()


def key_file_after_text(size: int) -> bytes:
    """The conformance P-256 trusted key (PEM) after `size` bytes of text: refused (specs/
    nfat-signature.md section 5.4: nothing but the one block), and past 64 KiB refused by size."""
    from tests.support.vectors import key_files

    pem = key_files()["trusted-p256.pub.pem"][0]
    line = b"release notes: nothing to see here, this line is 64 bytes long.\n"
    return (line * (size // len(line) + 1))[:size] + pem


def calls_with_values(values: int, shape: Sequence[int] | None = None) -> bytes:
    """A calls.json of one call whose one float32 input lists `values` values, with `shape` (default
    [values]): the method's own shape refuses it after the parse; an overflowing shape
    ([2147483647] * 3) before a value is converted (issue 33, I1)."""
    dims = [values] if shape is None else list(shape)
    text = ", ".join(["0.5"] * values)
    return (f'[{{"inputs": [{{"dtype": "float32", "shape": {json.dumps(dims)}, "values": [{text}]}}]}}]\n'
            .encode("ascii"))


def payload_changed(data: bytes, index: int, at: int) -> bytes:
    """`data` (a version 2 container) with byte `at` (modulo the size) of entry `index`'s payload
    flipped and its CRC32C and the header checksum recomputed: the change only a signature sees."""
    from fatpte.container.reader import Container
    from fatpte.fileio.checksum import crc32c
    from tests.support.vectors import reseal

    buf = bytearray(data)
    with Container.from_buffer(data) as c:
        e = c.entries[index % len(c.entries)]
        if e.size == 0:
            return data
        buf[e.offset + at % e.size] ^= 1
        base = c.header.header_size + e.index * c.header.entry_size + L.RECORDS["v2_entry"].offsets["checksum"][0]
        buf[base : base + 4] = crc32c(bytes(buf[e.offset : e.end])).to_bytes(4, "little")
    reseal(buf)
    return bytes(buf)


def thinned(data: bytes, names: Sequence[str]) -> bytes:
    """`data` thinned to the entries `names` (fatpte thin): a signature survives it."""
    import fatpte

    with tempfile.TemporaryDirectory() as tmp:
        src, dest = Path(tmp) / "c.nfat", Path(tmp) / "t.nfat"
        src.write_bytes(data)
        fatpte.thin(src, dest, names=list(names))
        return dest.read_bytes()


# -- programs ExecuTorch's runtime aborts on (issue 42, point 9) -------------------------------------

def value_index_site(program: bytes, where: str) -> tuple[int, int, int]:
    """Where value index `where` of the first method of `program` lies: (its byte, the table that
    holds it, the method's value count). `where` is `inputs[I]` or `outputs[I]` of the method, or
    `instructions[K].args[I]` of its first chain."""
    from fatpte.executorch.flatbuf import Buffer
    from fatpte.executorch.pte import IDENTIFIER, read_header

    header = read_header(program, None)
    root = Buffer(program[: len(program) if header is None else header.program_size], source=None).root(
        IDENTIFIER, "program")
    plan = root.tables(1, "execution_plan")[0]
    count = len(plan.tables(2, "values"))
    name, index = where.rsplit("[", 1)
    table: Any = plan
    slot = {"inputs": 3, "outputs": 4}.get(name)
    if slot is None:  # instructions[K].args
        k = int(name.split("[")[1].split("]")[0])
        _, table = plan.tables(5, "chains")[0].tables(2, "instructions")[k].union(0, 1, "instr_args")
        slot = 1
    vector = table.vector(slot, 4, name)
    assert vector is not None and int(index[:-1]) < vector[1], where
    return vector[0] + 4 * int(index[:-1]), table.pos, count


def with_value_index(program: bytes, where: str, value: int | None = None) -> tuple[bytes, int]:
    """`program` with value index `where` (value_index_site) set to `value`, by default the value
    count (one past the last value: what ExecuTorch's Method::get_value aborts on), and the
    position of the table holding it, where a reader reports it."""
    at, table, count = value_index_site(program, where)
    out = bytearray(program)
    out[at : at + 4] = struct.pack("<i", count if value is None else value)
    return bytes(out), table


def fat_with_program(program: bytes, nested: bytes) -> bytes:
    """`program` (a .pte whose first delegate is a fat delegate) whose fat delegate holds one
    version 1 entry, the nested program `nested` (backend id portable): what a device runs when it
    loads `program`, and no manifest or checksum vouches for the entry."""
    from fatpte.executorch.rewrite import replace_segment

    delegate = first_delegate(program)
    return replace_segment(program, delegate.data_index, v1_container([("portable", nested)]))


def _first_plan(program: bytes) -> Any:
    from fatpte.executorch.flatbuf import Buffer
    from fatpte.executorch.pte import IDENTIFIER, read_header

    header = read_header(program, None)
    root = Buffer(program[: len(program) if header is None else header.program_size], source=None).root(
        IDENTIFIER, "program")
    return root.tables(1, "execution_plan")[0]


def with_instruction_kind(program: bytes, k: int, tag: int, first: int) -> tuple[bytes, int]:
    """`program` whose first chain's instruction `k`, a KernelCall that states its op_index, is
    read as instruction kind `tag` (InstructionArguments: 3 MoveCall, 4 JumpFalseCall, 5 FreeCall)
    whose first field (move_from, cond_value_index, value_index: the op_index's slot) is `first`;
    and the position of that table."""
    ins = _first_plan(program).tables(5, "chains")[0].tables(2, "instructions")[k]
    kind_at = ins.scalar_position(0, "B", "instr_args_type")
    _, call = ins.union(0, 1, "instr_args")
    first_at = call.scalar_position(0, "i", "op_index")
    assert kind_at is not None and first_at is not None and program[kind_at] == 1, (k, kind_at, first_at)
    out = bytearray(program)
    out[kind_at] = tag
    out[first_at : first_at + 4] = struct.pack("<i", first)
    return bytes(out), call.pos


def with_int_list_item(program: bytes, item: int, j: int = 0) -> tuple[bytes, int, str]:
    """`program` whose first int list's item `j` is `item` (a value index), the position of that
    list's table and the path a reader names it by."""
    plan = _first_plan(program)
    for i, v in enumerate(plan.tables(2, "values")):
        tag, lst = v.union(0, 1, "val")
        if tag == 7 and lst is not None:
            start, count = lst.vector(0, 8, "items")
            assert j < count
            out = bytearray(program)
            out[start + 8 * j : start + 8 * j + 8] = struct.pack("<q", item)
            return bytes(out), lst.pos, f"root.execution_plan[0].values[{i}].val.items[{j}]"
    raise AssertionError("the program has no int list")


def _offsets(b: Any, offsets: Sequence[int]) -> int:
    """A flatbuffer vector of the tables at `offsets`, built with `b`."""
    b.StartVector(4, len(offsets), 4)
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return int(b.EndVector())


def _forward_program(b: Any, plan_slots: dict[int, int]) -> bytes:
    """The program `b` finishes: one ExecutionPlan named "forward" whose other fields are
    `plan_slots` (slot number -> offset; 2 values, 3 inputs, 5 chains, 6 operators, 7 delegates)."""
    method = b.CreateString("forward")
    b.StartObject(9)  # ExecutionPlan: name, container_meta_type, values, inputs, outputs, chains, operators, delegates
    b.PrependUOffsetTRelativeSlot(0, method, 0)
    for slot, offset in sorted(plan_slots.items()):
        b.PrependUOffsetTRelativeSlot(slot, offset, 0)
    plan = b.EndObject()
    plans = _offsets(b, [plan])
    b.StartObject(8)  # Program: version, execution_plan, ...
    b.PrependUOffsetTRelativeSlot(1, plans, 0)
    root = b.EndObject()
    b.Finish(root, b"ET12")
    return bytes(b.Output())


def pte_shared_instruction(refs: int, args: int) -> bytes:
    """An ExecuTorch program (.pte, no extended header) whose method's one chain lists `refs`
    references to one KernelCall instruction of `args` arguments, each value 0 (of one Null value):
    `refs * args` value references in about 4 * (refs + args) bytes, the shape a reader that checks
    every reference must bound by its work budget, not by the file."""
    import flatbuffers

    b = flatbuffers.Builder(0)

    def vector(offsets: Sequence[int]) -> int:
        return _offsets(b, offsets)

    b.StartVector(4, args, 4)
    for _ in range(args):
        b.PrependInt32(0)
    arg_list = b.EndVector()
    b.StartObject(2)  # KernelCall: op_index, args
    b.PrependUOffsetTRelativeSlot(1, arg_list, 0)
    call = b.EndObject()
    b.StartObject(2)  # Instruction: instr_args_type, instr_args
    b.PrependUint8Slot(0, 1, 0)
    b.PrependUOffsetTRelativeSlot(1, call, 0)
    instruction = b.EndObject()
    instructions = vector([instruction] * refs)
    b.StartObject(4)  # Chain: inputs, outputs, instructions, stacktrace
    b.PrependUOffsetTRelativeSlot(2, instructions, 0)
    chain = b.EndObject()
    b.StartObject(0)  # Null
    null = b.EndObject()
    b.StartObject(2)  # EValue: val_type, val
    b.PrependUint8Slot(0, 1, 0)
    b.PrependUOffsetTRelativeSlot(1, null, 0)
    value = b.EndObject()
    op_name, overload = b.CreateString("aten::add"), b.CreateString("out")
    b.StartObject(2)  # Operator: name, overload
    b.PrependUOffsetTRelativeSlot(0, op_name, 0)
    b.PrependUOffsetTRelativeSlot(1, overload, 0)
    op = b.EndObject()
    values, chains, ops, delegates = vector([value]), vector([chain]), vector([op]), vector([])
    return _forward_program(b, {2: values, 5: chains, 6: ops, 7: delegates})


def without_delegate_field(program: bytes, name: str) -> tuple[bytes, int]:
    """`program` whose first delegate loses field `name` (`processed`, or `key` or `value` of its
    first compile spec): the slot is cleared in the table's vtable, so other tables sharing that
    vtable lose it too. Returns the bytes and the position of the table that lost it."""
    plan = _first_plan(program)
    table = plan.tables(7, "delegates")[0]
    slot = 1
    if name != "processed":
        table, slot = table.tables(2, "compile_specs")[0], {"key": 0, "value": 1}[name]
    vtable = table.pos - struct.unpack_from("<i", program, table.pos)[0]
    assert struct.unpack_from("<H", program, vtable + 4 + 2 * slot)[0] != 0, name
    out = bytearray(program)
    struct.pack_into("<H", out, vtable + 4 + 2 * slot, 0)
    return bytes(out), table.pos


def pte_dynamic_inputs(inputs: int, sizes: Sequence[int] | None = (-1,), scalar_type: int = 6) -> bytes:
    """An ExecuTorch program (.pte, no extended header) whose method takes `inputs` inputs, each a
    value of its own pointing at one dynamic-shape tensor table (scalar type `scalar_type`, sizes
    `sizes`, or none when None), and runs no instruction: ExecuTorch's verification searches the
    method's inputs once for each such value whose tensor it refuses (quadratic in the inputs), and
    lets it pass."""
    import flatbuffers

    b = flatbuffers.Builder(0)

    def vector(offsets: Sequence[int]) -> int:
        return _offsets(b, offsets)

    def ints(values: Sequence[int], width: int = 4) -> int:
        b.StartVector(width, len(values), width)
        for v in reversed(values):
            b.PrependInt32(v) if width == 4 else b.PrependUint8(v)
        return int(b.EndVector())

    dims = [] if sizes is None else list(sizes)
    shape, order = (None if sizes is None else ints(dims)), ints(list(range(len(dims))), 1)
    b.StartObject(10)  # Tensor: scalar_type, storage_offset, sizes, dim_order, ..., shape_dynamism (8)
    b.PrependInt8Slot(0, scalar_type, 0)
    if shape is not None:
        b.PrependUOffsetTRelativeSlot(2, shape, 0)
    b.PrependUOffsetTRelativeSlot(3, order, 0)
    b.PrependInt8Slot(8, 1, 0)  # DYNAMIC_BOUND
    tensor = b.EndObject()
    values = []
    for _ in range(inputs):
        b.StartObject(2)  # EValue: val_type (Tensor), val
        b.PrependUint8Slot(0, 5, 0)
        b.PrependUOffsetTRelativeSlot(1, tensor, 0)
        values.append(b.EndObject())
    table, listed, none = vector(values), ints(list(range(inputs))), ints([])
    b.StartObject(4)  # Chain: inputs, outputs, instructions
    b.PrependUOffsetTRelativeSlot(2, none, 0)
    chain = b.EndObject()
    chains, delegates = vector([chain]), vector([])
    return _forward_program(b, {2: table, 3: listed, 5: chains, 7: delegates})


def with_tensor_size(program: bytes, value: int, k: int, size: int) -> tuple[bytes, int]:
    """`program` whose first method's tensor value `value` has size `k` set to `size`, and the
    position of that tensor's table."""
    _, tensor = _first_plan(program).tables(2, "values")[value].union(0, 1, "val")
    start, count = tensor.vector(2, 4, "sizes")
    assert k < count
    out = bytearray(program)
    struct.pack_into("<i", out, start + 4 * k, size)
    return bytes(out), tensor.pos
