"""Hypothesis strategies shared by the property tests and the structured fuzz target."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from fatpte.device import accelerator as DA
from fatpte.device import fields as DF
from fatpte.device import profile as D
from fatpte.format import layout as L
from fatpte.format import vocabulary as V
from fatpte.manifest import model as M
from fatpte.ops.specialization import Specialization

ID_CHARS = "".join(sorted(chr(b) for b in L.ID_ALPHABET))

v2_ids = st.text(alphabet=ID_CHARS, min_size=1, max_size=32)
# v1 ids: any ASCII but NUL, 1..32 bytes, exactly what the published layout can hold
v1_ids = st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x7F), min_size=1, max_size=32)
payloads = st.binary(min_size=0, max_size=300)
alignments = st.sampled_from([1, 2, 4, 8, 16, 64, 256, 4096])
priorities = st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)


@st.composite
def v2_specializations(draw: st.DrawFn, max_entries: int = 6) -> list[Specialization]:
    names = draw(st.lists(v2_ids, min_size=1, max_size=max_entries, unique=True))
    out = []
    for name in names:
        out.append(Specialization(
            draw(v2_ids), draw(payloads), name=name, priority=draw(priorities),
            alignment=draw(st.none() | alignments),
        ))
    return out


@st.composite
def v1_specializations(draw: st.DrawFn, max_entries: int = 6) -> list[tuple[str, bytes]]:
    return draw(st.lists(st.tuples(v1_ids, payloads), min_size=1, max_size=max_entries))


def reference_v1(items: list[tuple[str, bytes]]) -> bytes:
    """ExecuTorch's published v1 layout, written the obvious way: joined in memory."""
    out = b"NFAT" + struct.pack("<II", 1, len(items))
    rel = 0
    for ident, data in items:
        out += ident.encode("ascii").ljust(32, b"\0") + struct.pack("<QQ", rel, len(data))
        rel += len(data)
    return out + b"".join(data for _, data in items)


# -- device profiles (fatpte/device/profile.py) ---------------------------------------------------------

_VERSION_PART = st.integers(min_value=0, max_value=9999).map(str)


@st.composite
def accelerators(draw: st.DrawFn) -> DA.Accelerator:
    kind = draw(st.sampled_from(V.ACCELERATOR_KINDS))
    parts = 2 if kind == "cuda" else draw(st.integers(min_value=1, max_value=3))
    version = ".".join(draw(_VERSION_PART) for _ in range(parts))
    name = draw(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1,
                        max_size=40))
    memory = draw(st.integers(min_value=0, max_value=DF.MAX_MEMORY_BYTES))
    # A vendor runtime's device name and capabilities (specs/device-profile.md 4), on some.
    device = draw(st.sampled_from(["", "CPU", "GPU.0", "NPU"]) | st.from_regex(V.DEVICE_NAME_PATTERN, fullmatch=True))
    caps = draw(st.lists(st.from_regex(V.CAPABILITY_PATTERN, fullmatch=True), max_size=4, unique=True))
    return DA.Accelerator(kind, name, version, memory, device, caps)


@st.composite
def device_profiles(draw: st.DrawFn) -> D.DeviceProfile:
    """Any valid device profile."""
    arch = draw(st.sampled_from(V.ARCHES))
    return D.DeviceProfile(
        name=draw(st.text(alphabet=ID_CHARS, min_size=1, max_size=64)),
        os=draw(st.sampled_from(V.OS_NAMES)),
        arch=arch,
        cpu_features=draw(st.frozensets(st.sampled_from(sorted(V.CPU_FEATURES[arch])))),
        accelerators=tuple(draw(st.lists(accelerators(), max_size=3))),
        memory_bytes=draw(st.integers(min_value=0, max_value=DF.MAX_MEMORY_BYTES)),
        backends=draw(st.dictionaries(v2_ids, st.integers(min_value=0, max_value=DF.MAX_ABI_VERSION),
                                      max_size=3)),
        executorch_backends=draw(st.none() | st.frozensets(
            st.sampled_from(["XnnpackBackend", "NativeBackend", "QnnBackend", "CudaBackend", "Vulkan_2.0"])
            | st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=8),
            max_size=4)),
        sources=draw(st.none() | st.lists(
            st.sampled_from(["Arm Cortex-A76 Core Technical Reference Manual, 100798", 'a "quoted" \\ title'])
            | st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=12),
            min_size=1, max_size=3, unique=True)),
    )


# -- manifests (fatpte/manifest/) -------------------------------------------------------------


_words = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x2FF), min_size=1, max_size=12)
_u32 = st.integers(min_value=0, max_value=(1 << 32) - 1)
_u64 = st.integers(min_value=0, max_value=(1 << 64) - 1)


@st.composite
def requirements(draw: st.DrawFn) -> M.Requirements:
    arch = draw(st.sampled_from(V.ARCHES))
    targets = st.builds(M.VersionConstraint, st.sampled_from([0, 1, 2]), st.integers(0, 99), st.integers(0, 9))
    accs = st.builds(M.AcceleratorRequirement, st.sampled_from(V.ACCELERATOR_KINDS),
                     st.lists(targets, max_size=3).map(tuple), _u64)
    abi = st.none() | st.builds(lambda a, b: M.AbiRange(min(a, b), max(a, b)), _u32, _u32)
    return M.Requirements(
        os=tuple(draw(st.lists(st.sampled_from(V.OS_NAMES), max_size=2, unique=True))),
        arch=tuple(draw(st.lists(st.just(arch), max_size=1))),
        cpu_features=tuple(draw(st.lists(st.sampled_from(sorted(V.CPU_FEATURES[arch])), max_size=4,
                                         unique=True))),
        accelerators=tuple(draw(st.lists(accs, max_size=2))),
        min_memory_bytes=draw(_u64),
        backend_abi=draw(abi),
    )


# `symbol` is given explicitly: for a NamedTuple, st.builds draws defaulted fields too (any string).
_dims = st.one_of(st.builds(M.Dim, _u64, st.none()), st.builds(lambda s: M.Dim(0, s), _words))
# program_dtype (a signature adapter) is drawn only in its valid pairs: float16 or bfloat16 behind float32.
_adapted = st.none() | st.sampled_from(("float16", "bfloat16"))
_tensors = st.one_of(
    st.builds(M.TensorSpec, _words, st.lists(_dims, max_size=3).map(tuple), st.none() | _words, st.none()),
    st.builds(M.TensorSpec, st.just("float32"), st.lists(_dims, max_size=3).map(tuple), st.none() | _words, _adapted))
_buffers = st.builds(M.TensorSpec, _words, st.lists(_dims, max_size=3).map(tuple), _words, st.none())


@st.composite
def signatures(draw: st.DrawFn) -> M.Signature:
    names = draw(st.lists(_words, max_size=3, unique=True))
    return M.Signature(tuple(
        M.Method(n, tuple(draw(st.lists(_tensors, max_size=3))), tuple(draw(st.lists(_tensors, max_size=2))),
                 tuple(draw(st.lists(_buffers, max_size=2)))) for n in names))


@st.composite
def manifests(draw: st.DrawFn) -> M.Manifest:
    """Any manifest the decoder accepts (not necessarily consistent with a container)."""
    keys = sorted(draw(st.lists(_words, max_size=5, unique=True)), key=lambda k: k.encode("utf-8"))
    names = draw(st.lists(v2_ids, min_size=1, max_size=4, unique=True))
    entries = tuple(M.ManifestEntry(
        name=n,
        requires=draw(requirements()),
        signature=draw(st.none() | signatures()),
        named_data=tuple(draw(st.lists(st.sampled_from(keys), max_size=3))) if keys else (),
        source_digest=draw(st.none() | st.binary(min_size=1, max_size=8).map(lambda b: "sha256:" + b.hex())),
        payload_sha256=draw(st.none() | st.binary(min_size=32, max_size=32)),
        provenance=tuple(draw(st.lists(st.tuples(_words, _words), max_size=2))),
        executorch_backends=draw(st.none() | st.lists(_words, max_size=3, unique=True).map(tuple)),
        golden=tuple(draw(st.lists(golden_calls(keys), max_size=2))),
    ) for n in names)
    layouts = tuple((k, draw(layouts_of_tensors())) for k in keys if draw(st.booleans()))
    m = M.Manifest(1, entries, tuple((k, draw(st.integers(0, 4))) for k in keys), layouts)
    return m._replace(revision=M.required_revision(m))


_tolerances = st.floats(min_value=0, allow_nan=False, allow_infinity=False)


@st.composite
def golden_calls(draw: st.DrawFn, keys: list[str]) -> M.GoldenCall:
    """A golden call the value rules accept (2.2.11); its keys mostly of `keys`."""
    key = st.sampled_from(keys) | _words if keys else _words
    return M.GoldenCall(draw(_words), tuple(draw(st.lists(key, max_size=2))),
                        tuple(M.GoldenOutput(draw(key), draw(_tolerances), draw(_tolerances))
                              for _ in range(draw(st.integers(0, 2)))))


@st.composite
def layouts_of_tensors(draw: st.DrawFn) -> M.TensorLayout:
    """A TensorLayout the value rules accept: a dtype of the table, sizes, and a permutation or ()."""
    sizes = tuple(draw(st.lists(st.integers(0, 64), max_size=4)))
    order = draw(st.permutations(range(len(sizes)))) if draw(st.booleans()) else ()
    return M.TensorLayout(draw(st.sampled_from(sorted(M.LAYOUT_DTYPES))), sizes, tuple(order))


# -- packed containers and their mutations (tests/conformance/test_robustness.py, fuzz/fuzz_structured.py) --


def pack_bytes(specs: list[Specialization], *, version: int = L.VERSION_2,
               named_data: dict[str, bytes] | None = None, golden: list[dict[str, object]] | None = None) -> bytes:
    """The bytes `fatpte.pack` writes for `specs` (through a temporary file: pack writes files)."""
    import tempfile
    from pathlib import Path

    from fatpte.ops.packing import pack

    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "c.nfat"
        pack(specs, dest, version=version, named_data=named_data, golden=golden)
        return dest.read_bytes()


@st.composite
def packed_containers(draw: st.DrawFn, max_entries: int = 4) -> bytes:
    """A valid container, v2 (with or without named data and a manifest, with or without golden
    calls) or v1."""
    kind = draw(st.sampled_from(["v2", "v2-named-data", "v2-golden", "v1"]))
    if kind == "v1":
        return reference_v1(draw(v1_specializations(max_entries)))
    specs = draw(v2_specializations(max_entries))
    if kind == "v2":
        return pack_bytes(specs)
    if kind == "v2-golden":
        golden_specs, calls = draw(golden_specializations(specs))
        return pack_bytes(golden_specs, golden=calls)
    keys = draw(st.lists(v2_ids, min_size=1, max_size=3, unique=True))
    shared = {k: draw(payloads) for k in keys}
    specs = [Specialization(s.backend_id, s.payload, name=s.name, priority=s.priority, alignment=s.alignment,
                            named_data=draw(st.lists(st.sampled_from(keys), max_size=len(keys), unique=True)))
             for s in specs]
    return pack_bytes(specs, named_data=shared)


@st.composite
def golden_specializations(draw: st.DrawFn, specs: list[Specialization],
                           ) -> tuple[list[Specialization], list[dict[str, object]]]:
    """`specs` stating one signature, and golden calls for it (specs/nfat-manifest.md section 11),
    some entries with a wider tolerance: what pack_bytes takes as (specs, golden=calls)."""
    import dataclasses

    dtype = draw(st.sampled_from(["float32", "float16", "int64", "bool"]))
    shape = draw(st.lists(st.integers(1, 3), max_size=2))
    count = 1
    for d in shape:
        count *= d
    value = {"float32": st.floats(width=32), "float16": st.floats(width=16),
             "int64": st.integers(-(1 << 63), (1 << 63) - 1), "bool": st.booleans()}[dtype]
    tensor = st.lists(value, min_size=count, max_size=count).map(
        lambda vs: {"dtype": dtype, "shape": shape, "values": vs})
    calls = draw(st.lists(st.builds(lambda i, o: {"inputs": [i], "outputs": [o]}, tensor, tensor),
                          min_size=1, max_size=3))
    signature = {"methods": [{"name": "forward", "inputs": [{"dtype": dtype, "shape": shape}],
                              "outputs": [{"dtype": dtype, "shape": shape}]}]}
    out = [dataclasses.replace(s, signature=signature, golden_tolerance=draw(st.none() | st.fixed_dictionaries(
        {"atol": _tolerances, "rtol": _tolerances}))) for s in specs]
    return out, calls


def _boundary_values(size: int, data_len: int) -> st.SearchStrategy[int]:
    """Integers that sit on the edges parsers get wrong, for a field of `size` bytes."""
    top = (1 << (8 * size)) - 1
    near = [0, 1, 2, 3, 7, 8, 63, 64, 65, 104, 4095, 4096, 65535, 65536, 65537, 1 << 20, (1 << 20) + 1,
            data_len - 1, data_len, data_len + 1, top, top - 1, top >> 1, (top >> 1) + 1]
    return st.sampled_from([v for v in near if 0 <= v <= top]) | st.integers(0, top)


@st.composite
def mutations(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` with one mutation: a bit flip, a byte set, an aligned u32/u64 set to a boundary
    value, a truncation, bytes appended, inserted or deleted."""
    n = len(data)
    buf = bytearray(data)
    op = draw(st.sampled_from(["flip", "byte", "u32", "u64", "truncate", "append", "insert", "delete"]))
    if n == 0 or op == "append":
        return bytes(buf + draw(st.binary(min_size=1, max_size=64)))
    at = draw(st.integers(0, n - 1))
    if op == "flip":
        buf[at] ^= 1 << draw(st.integers(0, 7))
    elif op == "byte":
        buf[at] = draw(st.integers(0, 255))
    elif op in ("u32", "u64"):
        size = 4 if op == "u32" else 8
        at -= at % size
        if at + size > n:
            return bytes(buf[: draw(st.integers(0, n - 1))])
        buf[at : at + size] = draw(_boundary_values(size, n)).to_bytes(size, "little")
    elif op == "truncate":
        del buf[at:]
    elif op == "insert":
        buf[at:at] = draw(st.binary(min_size=1, max_size=16))
    else:
        del buf[at : at + draw(st.integers(1, 16))]
    return bytes(buf)


@st.composite
def mutated_containers(draw: st.DrawFn, max_mutations: int = 3) -> bytes:
    """A valid packed container with 1 to `max_mutations` mutations applied."""
    data = draw(packed_containers())
    for _ in range(draw(st.integers(1, max_mutations))):
        data = draw(mutations(data))
    return data


def read_everything(data: bytes) -> None:
    """Everything a reader does with untrusted bytes, with the invariants between its paths:
    validate_buffer never raises; Container.from_buffer (fatpte.open) and every accessor raise
    FatpteError only; open raises exactly the first error validate reports; and an accessor
    (verified payloads, the manifest, named data) fails only on a file validate rejects. Raises
    AssertionError (or the stray exception) if not."""
    import json

    from fatpte.container.reader import Container
    from fatpte.container.validation import validate_buffer
    from fatpte.errors import FatpteError

    report = validate_buffer(data)
    for f in report.findings:
        f.describe()
    json.dumps(report.to_json())
    first = report.first_error
    try:
        container = Container.from_buffer(data)
    except FatpteError as exc:
        assert first is not None and (first.code, first.offset, first.field) == (exc.code, exc.offset, exc.field), (
            f"open raised {exc}, validate's first error is {first.describe() if first else None}")
        return
    with container as c:
        try:
            for e in c.entries:
                c.payload(e, verify=True).release()
            for key in c.named_data_keys:
                c.named_data(key).release()
        except FatpteError as exc:
            assert not report.ok, f"validate accepts the file, but reading it raised {exc}"


# -- hostile inputs (issue 15): structure rather than bytes -------------------------------------------
#
# What the attack on the readers used, drawn at random: offsets shared many times (one string, table
# or vector reached from thousands of places), long strings holding control characters, deep
# nesting, many entries sharing one payload, huge numbers. The builders come from tools/ (the
# writer of manifests that share what they are told to share, the container and program layouts),
# so the inputs are well-formed where they are not meant to be hostile and reach the deep checks.

_FILLS = st.sampled_from(["k", "x", "\x1b[31m", "\n", "\x7f", "é", "\u202e", "\\", "w.a"])


def few_or_many(most: int) -> st.SearchStrategy[int]:
    """A count: as often a handful as anything up to `most`."""
    return st.integers(0, 8) | st.integers(0, most)


def long_texts(max_repeat: int) -> st.SearchStrategy[str]:
    """A short piece repeated up to `max_repeat` times: cheap to draw, long where it counts."""
    return st.builds(lambda piece, n: piece * n, _FILLS, few_or_many(max_repeat))


@st.composite
def hostile_manifest_containers(draw: st.DrawFn, max_refs: int = 3000, max_repeat: int = 20_000) -> bytes:
    """A container whose manifest shares strings, tables and vectors at random, with entries that
    match its table or not, and now and then one byte changed in the manifest (checksum updated)."""
    from tests.support.vectors import ManifestWriter, blob, with_manifest

    w = ManifestWriter()
    names = [f"e{i}" for i in range(draw(st.integers(1, 12)))]
    pool = [w.string(draw(long_texts(max_repeat))) for _ in range(draw(st.integers(1, 4)))]
    words = [w.string(x) for x in ("avx2", "x86_64", "linux", "cuda")] + pool
    key_texts = sorted(set(draw(st.lists(st.sampled_from(["w.a", "w.b", "k" * 300, "\x1bkey"]), max_size=3))),
                       key=lambda k: k.encode())
    keys = [w.string(k) for k in key_texts]

    def refs(choices: list[int]) -> int:
        picked = draw(st.lists(st.sampled_from(choices), min_size=0, max_size=4))
        repeat = max(1, draw(few_or_many(max_refs)))
        return w.vector((picked * repeat)[: max(len(picked), repeat)])

    acc = w.table("AcceleratorRequirement", kind=draw(st.sampled_from(words)),
                  targets=w.vector([w.table("VersionConstraint", match=draw(st.integers(0, 3)), major=8)]
                                   * draw(few_or_many(max_refs))))
    reqs = [w.table("Requirements", os=refs(words), arch=refs(words), cpu_features=refs(words),
                    accelerators=w.vector([acc] * draw(st.integers(0, 50))),
                    min_memory_bytes=draw(st.integers(0, 1 << 40)))
            for _ in range(draw(st.integers(0, 2)))]
    dim = w.table("Dim", symbol=draw(st.sampled_from(pool)))
    spec = w.table("TensorSpec", dtype=w.string("float32"), shape=w.vector([dim] * draw(few_or_many(200))))
    method = w.table("Method", name=w.string("forward"), inputs=w.vector([spec] * draw(few_or_many(200))))
    signature = w.table("Signature", methods=w.vector([method]))
    kv = w.table("KeyValue", key=draw(st.sampled_from(pool)), value=draw(st.sampled_from(pool)))
    tables = []
    for name in names:
        fields: dict[str, int] = {"name": w.string(name)}
        if reqs and draw(st.booleans()):
            fields["requires"] = draw(st.sampled_from(reqs))
        if keys or draw(st.booleans()):
            fields["named_data"] = refs(keys + pool[:1])
        if draw(st.booleans()):
            fields["signature"] = signature
        if draw(st.booleans()):
            fields["provenance"] = w.vector([kv] * max(1, draw(few_or_many(max_refs))))
        tables.append(w.table("Entry", **fields))
    entries = tables * draw(st.integers(1, 3)) if draw(st.integers(0, 4)) == 0 else tables
    named = w.vector([w.table("NamedData", key=k, segment=i) for i, k in enumerate(keys)])
    manifest = bytearray(w.finish(w.table("Manifest", revision=1, entries=w.vector(entries), named_data=named)))
    if draw(st.integers(0, 3)) == 0:
        manifest[draw(st.integers(8, len(manifest) - 1))] = draw(st.integers(0, 255))
    payload = blob("hostile", 64)
    return with_manifest([(n, "xnnpack", payload) for n in names], bytes(manifest),
                         [blob(f"segment{i}", 16) for i in range(len(keys))])


@st.composite
def hostile_entry_containers(draw: st.DrawFn, max_entries: int = 2000) -> bytes:
    """Many entries sharing one payload, each with a manifest entry or not."""
    from fatpte.manifest.codec import encode
    from tests.support.vectors import blob, with_manifest

    n = max(1, draw(few_or_many(max_entries)))
    names = [f"e{i:05d}" for i in range(n)]
    req = M.Requirements(arch=("x86_64",)) if draw(st.booleans()) else M.Requirements()
    described = names[: draw(st.integers(0, n))]
    manifest = encode(M.Manifest(entries=tuple(M.ManifestEntry(x, requires=req) for x in described)))
    return with_manifest([(x, draw(st.sampled_from(["xnnpack", "cuda"])), blob("shared", 64)) for x in names],
                         manifest, [])


def _json_nest(depth: int, inner: str, kind: str) -> str:
    return ("[" * depth + inner + "]" * depth) if kind == "array" else ('{"a": ' * depth + inner + "}" * depth)


@st.composite
def hostile_profiles(draw: st.DrawFn) -> bytes:
    """A device profile's JSON text with one hostile value: nesting around and far past the limit,
    a number of thousands of digits (with a fraction or exponent), a long or escaped string, many
    keys; or a valid profile."""
    import json

    obj = draw(device_profiles()).to_json()
    text = json.dumps(obj)
    field = draw(st.sampled_from(["name", "os", "memory_bytes", "backends", "cpu_features", "accelerators"]))
    old = json.dumps(obj[field])
    what = draw(st.sampled_from(["nest", "number", "string", "keys", "escape", "none"]))
    if what == "nest":
        new = _json_nest(draw(st.sampled_from([1, 63, 64, 65, 511, 512, 990, 1000, 5000])),
                         draw(st.sampled_from(["", "1", '"x"'])), draw(st.sampled_from(["array", "object"])))
    elif what == "number":
        new = (draw(st.sampled_from(["", "-"])) + "9" * draw(st.sampled_from([1, 20, 21, 4300, 4301, 6000]))
               + draw(st.sampled_from(["", ".5", "e3", "E-2"])))
    elif what == "string":
        new = json.dumps(draw(long_texts(50_000)))
    elif what == "keys":
        new = "{" + ", ".join(f'"b{i}": {i}' for i in range(draw(st.integers(0, 20_000)))) + "}"
    elif what == "escape":
        new = '"' + draw(st.sampled_from(["\\u001b", "\\u0000", "\\n", "\\ud800", "\\u202e", "\\\\"])) + 'x"'
    else:
        new = old
    return text.replace(old, new, 1).encode("utf-8")


@st.composite
def hostile_programs(draw: st.DrawFn) -> bytes:
    """An ExecuTorch program whose operator table references one operator, long-named, many times."""
    from tests.support.hostile import pte_shared_operator

    data = bytearray(pte_shared_operator(draw(few_or_many(20_000)), draw(few_or_many(200_000))))
    if draw(st.integers(0, 3)) == 0:
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


# -- hostile inputs (issue 33): signed containers, trusted keys, run inputs, nested fat delegates -----
#
# Built from valid structure (a container signed with the conformance test keys, a key file of a
# real key, a calls.json of real tensors, a fat-delegate program wrapped in levels) and then made
# hostile where the attack went: the statement changed and signed again, the bundle changed
# without a key, entries added after signing, values near the bundle's limit; PEM text around,
# between and inside the key; shapes whose products overflow; fat delegates nested and shared.

# Values a hostile JSON document puts where a field's value goes.
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.sampled_from([0, -1, 1, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -2**63,
                                                 2**64, 10**30, 0.5, -0.0, 1e308])
    | st.sampled_from(["", "x" * 300, "\x1b[31m", "\n", "\u202e", "\ud800", "é", "0" * 64, "ET12", "NFAT", "sha256"])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=8)


@st.composite
def json_edits(draw: st.DrawFn, doc: object) -> object:
    """`doc` (parsed JSON) with one value somewhere in it replaced, removed or multiplied, or a
    member added: the shape of the document kept, one field made hostile."""
    import copy

    doc = copy.deepcopy(doc)
    parent: object = None
    key: object = None
    node = doc
    while isinstance(node, (dict, list)) and node and draw(st.integers(0, 3)) > 0:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, draw(st.sampled_from(keys))
        node = node[key]  # type: ignore[index]
    what = draw(st.sampled_from(["replace", "remove", "repeat", "add"]))
    if parent is None or what == "add":
        target = node if isinstance(node, (dict, list)) else doc
        if isinstance(target, dict):
            target[draw(st.sampled_from(["x", "name", "_type", "sig", "hint", "entries"]))] = draw(_JSON_VALUES)
        elif isinstance(target, list):
            target.append(draw(_JSON_VALUES) if draw(st.booleans()) or not target else target[0])
        return doc
    if what == "remove":
        del parent[key]  # type: ignore[attr-defined]
    elif what == "repeat" and isinstance(parent, list):
        parent[key:key + 1] = [node] * draw(few_or_many(5000))  # type: ignore[index, misc]
    else:
        parent[key] = draw(_JSON_VALUES)  # type: ignore[index]
    return doc


@st.composite
def _signable(draw: st.DrawFn) -> tuple[list[Specialization], dict[str, bytes]]:
    """A valid version 2 container's specializations (names, requirements, named data)."""
    specs = draw(v2_specializations(max_entries=4))
    keys = draw(st.lists(v2_ids, max_size=3, unique=True))
    shared = {k: draw(payloads) for k in keys}
    out = []
    for s in specs:
        out.append(Specialization(
            s.backend_id, s.payload, name=s.name, priority=s.priority, alignment=s.alignment,
            requires=draw(st.none() | st.sampled_from([{"arch": ["x86_64"]}, {"arch": ["aarch64"]},
                                                       {"cpu_features": ["avx2"]}, {"os": ["linux"]}])),
            named_data=draw(st.lists(st.sampled_from(keys), max_size=len(keys), unique=True)) if keys else None))
    return out, shared


@st.composite
def hostile_signed_cases(draw: st.DrawFn) -> tuple[bytes, bytes | None, str | None]:
    """(container, detached bundle or None, device profile for the downgrade check or None): a
    container packed and signed with a conformance test key (tests/support/vectors.test_key; "untrusted"
    is a key no verifier trusts), then made hostile: entries added after signing (S6), a hostile
    manifest under the signature (S2), a payload byte changed, thinned; its statement changed and
    signed again (so the checks after the signature read it), its bundle changed without a key
    (JSON fields, up to and past MAX_BUNDLE_VALUES values (S5), raw bytes); the bundle embedded
    or given detached."""
    import json
    import tempfile
    from pathlib import Path

    from fatpte.ops.signing import unsign
    from tests.support import hostile
    from tests.support.vectors import bundle_of, signed, test_key, with_bundle

    key = draw(st.sampled_from(["ed25519", "ed25519", "p256", "untrusted"]))
    specs, shared = draw(_signable())
    data = signed(pack_bytes(specs, named_data=shared), test_key(key))
    bundle = bundle_of(data)
    statement = hostile.statement_of_bundle(bundle)
    change = draw(st.sampled_from(["none", "added", "manifest", "payload", "thinned"]))
    if change == "added":
        extra = [Specialization("xnnpack", b"added", name=f"a{i:05d}") for i in range(max(1, draw(few_or_many(2000))))]
        data = bytes(with_bundle(signed(pack_bytes(specs + extra, named_data=shared), test_key(key)), bundle))
    elif change == "manifest":
        data = hostile.attach(draw(hostile_manifest_containers(max_refs=500, max_repeat=2000)), bundle)
    elif change == "payload":
        data = hostile.payload_changed(data, draw(st.integers(0, 7)), draw(st.integers(0, 1 << 16)))
    elif change == "thinned":
        data = hostile.thinned(data, draw(st.lists(st.sampled_from([s.entry_name for s in specs]), min_size=1,
                                                  unique=True)))
    for _ in range(draw(st.integers(0, 2))):
        edit = draw(st.sampled_from(["statement", "statement", "bundle", "values", "bytes"]))
        if edit == "statement":  # signed again: what a holder of the key could write
            statement = draw(json_edits(statement))
            text = json.dumps(statement, separators=(",", ":"))
            raw = text.encode("utf-8", "surrogatepass")
            if draw(st.integers(0, 4)) == 0:
                raw = draw(st.sampled_from([b"[" * 20 + b"]" * 20, raw.replace(b"{", b'{"x":1,"x":2,', 1),
                                            raw[: draw(st.integers(0, len(raw)))], b"\xff" + raw]))
            bundle = hostile.bundle_over(raw, "p256" if key == "p256" else "ed25519")
        elif edit == "bundle" and bundle.startswith(b"{"):
            try:
                bundle = json.dumps(draw(json_edits(json.loads(bundle)))).encode("utf-8", "surrogatepass")
            except ValueError:
                pass
        elif edit == "values" and bundle.startswith(b"{"):
            count = draw(st.integers(4050, 4110) | few_or_many(40_000))
            try:
                bundle = hostile.bundle_with_values(bundle, count)
            except ValueError:
                pass
        else:
            b = bytearray(bundle)
            at = draw(st.integers(0, max(0, len(b) - 1)))
            b[at:at + draw(st.integers(0, 3))] = draw(st.sampled_from([b"", b"{", b"[", b'"', b"\\u", b"1e5", b"\xc3",
                                                                       b"=", b"==", b"A", b"\x00"]))
            bundle = bytes(b)
    if bundle != bundle_of(data):
        data = bytes(with_bundle(data, bundle))
    device = draw(st.none() | st.just("x86-64-v3"))
    if change == "manifest" or not draw(st.booleans()):
        return data, None, device
    with tempfile.TemporaryDirectory() as tmp:  # the bundle beside the container it was taken from
        (Path(tmp) / "s.nfat").write_bytes(data)
        return unsign(Path(tmp) / "s.nfat", Path(tmp) / "u.nfat").read_bytes(), bundle, device


def _key_ders() -> dict[str, bytes]:
    """DER SubjectPublicKeyInfos a trusted-key file may carry: the conformance keys (the P-256 one
    also compressed and with explicit parameters, which are refused) and keys of other curves and
    algorithms, all from fixed seeds so an input draws the same file on every run."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, x25519

    from tests.support import vectors as gen_vectors

    files = gen_vectors.key_files()
    pem = {name: body for name, (body, _, _) in files.items()}

    def der(text: bytes) -> bytes:
        import base64

        return base64.b64decode(b"".join(line for line in text.splitlines() if not line.startswith(b"-----")))

    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    seed = bytes(range(32))
    others = {
        "p384": ec.derive_private_key(7, ec.SECP384R1()).public_key(),
        "secp256k1": ec.derive_private_key(7, ec.SECP256K1()).public_key(),
        "x25519": x25519.X25519PrivateKey.from_private_bytes(seed).public_key(),
        "ed448": ed448.Ed448PrivateKey.from_private_bytes(bytes(range(57))).public_key(),
    }
    out = {name: der(pem[name]) for name in ("trusted-ed25519.pub.pem", "trusted-p256.pub.pem",
                                             "trusted-p256-compressed.pub.pem",
                                             "refused-p256-explicit-parameters.pub.pem")}
    out.update({name: k.public_bytes(serialization.Encoding.DER, spki) for name, k in others.items()})
    return out


_KEY_DERS: dict[str, bytes] = {}


@st.composite
def hostile_key_files(draw: st.DrawFn) -> bytes:
    """A trusted-key file: a real key's DER (sometimes damaged: a byte changed, cut, trailing bytes,
    a long-form length), as PEM under some label, base64 cut into lines of any width and ended
    any way, padding dropped or doubled, characters no base64 has, text, other blocks or
    whitespace before and after, a body of many KiB; now and then grown to about the 64 KiB
    limit (specs/nfat-signature.md section 5.4)."""
    import base64

    if not _KEY_DERS:
        _KEY_DERS.update(_key_ders())
    # A third of the files change only what the rules allow (line width and ends, whitespace
    # around the block), so accepted keys and their ids are compared as often as refusals.
    benign = draw(st.integers(0, 2)) == 0

    def pick(options: list[str], allowed: list[str]) -> str:
        return draw(st.sampled_from(allowed if benign else options))

    der = bytearray(draw(st.sampled_from(sorted(_KEY_DERS.values()))))
    damage = pick(["none", "none", "byte", "cut", "trailing", "long-length", "repeat"], ["none"])
    if damage == "byte":
        der[draw(st.integers(0, len(der) - 1))] = draw(st.integers(0, 255))
    elif damage == "cut":
        del der[draw(st.integers(0, len(der) - 1)):]
    elif damage == "trailing":
        der += bytes(draw(st.integers(1, 8)))
    elif damage == "long-length":
        der[1:2] = bytes([0x81, der[1]])
    elif damage == "repeat":
        der *= draw(few_or_many(2000))
    body = base64.b64encode(bytes(der)).decode("ascii")
    padding = pick(["keep", "keep", "drop", "double", "inside", "bad-char", "urlsafe"], ["keep"])
    if padding == "drop":
        body = body.rstrip("=")
    elif padding == "double":
        body += "=="
    elif padding == "inside" and body:
        at = draw(st.integers(0, len(body)))
        body = body[:at] + "=" + body[at:]
    elif padding == "bad-char" and body:
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from(["-", "_", "!", " ", "\t", "\x00", "é", "*"])) + body[at:]
    elif padding == "urlsafe":
        body = body.replace("+", "-").replace("/", "_")
    width = draw(st.sampled_from([64, 64, 76, 1, 4, 63, 1 << 20]))
    ends = ["\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e"]
    eol = pick([*ends, "\x85", "\u2028", "\n\n", " \n"], ends)
    label = pick(["PUBLIC KEY"] * 4 + ["EC PUBLIC KEY", "RSA PUBLIC KEY", "CERTIFICATE", "PRIVATE KEY", "public key",
                                       "PUBLIC  KEY"], ["PUBLIC KEY"])
    lines = [body[i:i + width] for i in range(0, len(body), width)] or [""]
    block = eol.join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]) + eol
    space = ["", " ", "\t", "\r\n", "\n\n", " \t\r\n"]
    others = [*space, "release key\n", "\ufeff", "\x00", "\xa0", "\v",
              "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"]
    text = pick(others, space) + block + pick(others, space)
    if not benign and draw(st.integers(0, 5)) == 0:
        text = block + text if draw(st.booleans()) else text + block  # two keys
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 7)) == 0:
        target = draw(st.sampled_from([(64 << 10) - 1, 64 << 10, (64 << 10) + 1]))
        data += draw(st.sampled_from([b" ", b"\n", b"x"])) * max(0, target - len(data))
    return data


_DTYPE_NAMES = ["float32", "float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8",
                "uint16", "uint32", "uint64", "bool", "float", "", "Float32", "complex64"]
_DIMS = st.sampled_from([0, 1, 1, 2, 3, 255, 65_536, 2**31 - 1, 2**31, 2**32, 2**53, 2**63 - 1, 2**63, 2**64, -1,
                         -2**63, 1.0, 1.5, 1e3, "3", None, True])


@st.composite
def hostile_calls(draw: st.DrawFn) -> bytes:
    """A calls.json (loader/include/fatpte/tensor.hpp: `[{"inputs": [tensor, ...]}, ...]`): tensors
    of any dtype name whose shapes hold huge, zero, negative, overflowing or non-integer dims, with
    as many values as the shape says (up to some thousands), or another count, or values of the
    wrong kind (NaN, Infinity, out-of-range integers, strings, nested lists), nested deep; now and
    then text that is no JSON of that shape (a key twice, a cut, a comma too many)."""
    import json
    import math

    calls = []
    for _ in range(draw(st.integers(0, 3))):
        inputs = []
        for _ in range(draw(st.integers(0, 3))):
            shape = draw(st.lists(_DIMS, max_size=8) | st.lists(st.just(1), min_size=60, max_size=200))
            numel = math.prod(d for d in shape if isinstance(d, int) and not isinstance(d, bool))
            count = numel if 0 <= numel <= 4096 and draw(st.integers(0, 3)) else draw(few_or_many(20_000))
            number = st.sampled_from([0, 1, -1, 0.5, 1e38, 3.5e38, -1e308, 5e-324, float("nan"), float("inf"),
                                      float("-inf"), 255, 256, -129, 2**31, 2**63, 2**64, True, False])
            value = draw(number | st.sampled_from(["1", None, [], [1], {"a": 1}]))
            values: object = [value] * count
            if draw(st.integers(0, 9)) == 0:
                values = draw(st.sampled_from([None, "x", {"a": []}])) if draw(st.booleans()) else \
                    json.loads("[" * 70 + "]" * 70)
            tensor: object = {"dtype": draw(st.sampled_from(_DTYPE_NAMES)), "shape": shape, "values": values}
            if draw(st.integers(0, 9)) == 0:
                tensor = draw(json_edits(tensor))
            inputs.append(tensor)
        call: object = {"inputs": inputs, **({"outputs": []} if draw(st.booleans()) else {})}
        if draw(st.integers(0, 12)) == 0:
            call = draw(st.sampled_from([[], None, {"inputs": None}, {"inputs": {}}]))
        calls.append(call)
    text = json.dumps(calls)
    if draw(st.integers(0, 7)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["", ",", "{", "]", '"inputs": [], ', "NaN", "nan", "\x00", "é"])) \
            + text[at + draw(st.integers(0, 2)):]
    return text.encode("utf-8", "surrogatepass")


_FAT_FIXTURE: list[bytes] = []


@st.composite
def hostile_fat_trees(draw: st.DrawFn, max_levels: int = 8, max_fan: int = 64) -> tuple[bytes, tuple[
        tuple[int, tuple[str, ...]], ...], bool]:
    """(program, levels, pristine): tests/fixtures/executorch/mlp_fat.pte with its fat delegate
    wrapped in 0 to `max_levels` levels (tests/support/hostile.fat_tree): version 1 or 2 containers of up
    to `max_fan` entries mixing fat payloads, nested programs and junk, each kind sharing the level
    below (in version 1, now and then each entry one byte longer than the one before); now and then
    one byte of the fat delegate's payload changed (not pristine)."""
    from tests.paths import ET_FIXTURES
    from tests.support import hostile

    if not _FAT_FIXTURE:
        _FAT_FIXTURE.append((ET_FIXTURES / "mlp_fat.pte").read_bytes())
    kinds = st.sampled_from([hostile.FAT, hostile.FAT, hostile.PROGRAM, hostile.JUNK])
    levels = tuple((draw(st.sampled_from([L.VERSION_1, L.VERSION_2])),
                    tuple(draw(st.lists(kinds, min_size=1, max_size=max(1, draw(few_or_many(max_fan)))))))
                   for _ in range(draw(st.integers(0, max_levels))))
    data = bytearray(hostile.fat_tree(_FAT_FIXTURE[0], levels, overlap=draw(st.booleans())))
    pristine = draw(st.integers(0, 4)) > 0
    if not pristine:  # inside the fat delegate's payload: the program around it is ExecuTorch's to read
        delegate = hostile.first_delegate(bytes(data))
        data[delegate.offset + draw(st.integers(0, delegate.size - 1))] = draw(st.integers(0, 255))
    return bytes(data), levels, pristine
