"""The manifest's rules against itself and its container (specs/nfat-manifest.md, "Consistency"):
`consistency_problems` (shared by validate and pack), `read_manifest` (CRC32C, then decode) and
`check_container`, the last checks of the content pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fatpte.errors import LIST_LIMIT, MAX_FINDINGS_PER_CODE, ErrorCode, FatpteError, clipped, listed, quoted
from fatpte.format import layout as L
from fatpte.manifest.codec import decode
from fatpte.manifest.model import (
    GOLDEN_DIGEST_KEY,
    Manifest,
    ManifestEntry,
    Signature,
    TensorLayout,
    TensorSpec,
    golden_digest,
    golden_fit_problem,
)

# ---------------------------------------------------------------------------------------------
# Consistency (specs/nfat-manifest.md section "Consistency"), shared by validate and pack
# ---------------------------------------------------------------------------------------------


# The hint a difference in unnamed buffers carries: ExecuTorch keeps the names of a program's own
# mutable buffers only when asked to, and a name is what tells two buffers of one shape apart.
NAMES_HINT = ("buffers without a name were exported without their names; "
              "ExecutorchBackendConfig(emit_mutable_buffer_names=True) keeps them")


def tensors_agree(a: TensorSpec, b: TensorSpec) -> bool:
    """Same dtype and dims, and the same name where both have one (specs/nfat-manifest.md 5)."""
    return a.dtype == b.dtype and a.shape == b.shape and (a.name is None or b.name is None or a.name == b.name)


def _texts(tensors: Sequence[TensorSpec]) -> str:
    return "[" + ", ".join(t.text() for t in tensors) + "]"


def signature_difference(a: Signature, b: Signature) -> str | None:
    """The first difference between two signatures, in words, or None when they agree: the same
    method names, and per method inputs, outputs and buffers that agree position by position
    (`tensors_agree`)."""
    names_a, names_b = [m.name for m in a.methods], [m.name for m in b.methods]
    if sorted(names_a) != sorted(names_b):
        return f"methods {sorted(names_a)} differ from {sorted(names_b)}"
    for ma in a.methods:
        mb = b.method(ma.name)
        assert mb is not None
        for part in ("inputs", "outputs", "buffers"):
            ta, tb = getattr(ma, part), getattr(mb, part)
            if len(ta) != len(tb):
                what = f"{len(ta)} vs {len(tb)} {part}"
            else:
                j = next((j for j, (x, y) in enumerate(zip(ta, tb)) if not tensors_agree(x, y)), None)
                if j is None:
                    continue
                what = f"{part}[{j}] is {ta[j].text()} vs {tb[j].text()}"
            text = f"method {ma.name!r} {part} differ ({what}): {_texts(ta)} vs {_texts(tb)}"
            if part == "buffers" and any(t.name is None for t in (*ta, *tb)):
                text += f" ({NAMES_HINT})"
            return text
    return None


class Problems:
    """Consistency problems as (code, field path, message, manifest position or None), at most
    MAX_FINDINGS_PER_CODE of each code in full and the rest counted in `omitted`. `wants(code)` is
    asked before a message is built, so the ones not kept cost nothing."""

    def __init__(self) -> None:
        self.found: list[tuple[ErrorCode, str, str, int | None]] = []
        self.omitted: dict[ErrorCode, int] = {}
        self._kept: dict[ErrorCode, int] = {}

    def wants(self, code: ErrorCode) -> bool:
        if self._kept.get(code, 0) < MAX_FINDINGS_PER_CODE:
            self._kept[code] = self._kept.get(code, 0) + 1
            return True
        self.omitted[code] = self.omitted.get(code, 0) + 1
        return False

    def add(self, code: ErrorCode, path: str, message: str, position: int | None) -> None:
        self.found.append((code, path, message, position))


def signature_problems(signed: Sequence[tuple[int, ManifestEntry]]) -> list[tuple[int, str]]:
    """E0411 for the (index, entry) pairs that state a signature, as (index, message): each
    entry's dtypes and dims against the first entry's, and each name against the first entry
    that names that position. Comparing every pair would say the same (agreeing dtypes and dims
    are transitive, and two entries disagree on a name only where both name it) in linear work."""
    out: list[tuple[int, str]] = []
    first: ManifestEntry | None = None
    namers: dict[tuple[str, str, int], tuple[str, str]] = {}  # (method, part, position) -> (name, entry)
    for i, e in signed:
        assert e.signature is not None
        if first is None:
            first = e
        else:
            assert first.signature is not None
            diff = signature_difference(first.signature, e.signature)
            if diff is not None:
                out.append((i, f"entries {quoted(first.name)} and {quoted(e.name)} declare different program signatures: {diff}"))
                continue
        clash = None
        for m in e.signature.methods:
            for part in ("inputs", "outputs", "buffers"):
                for j, t in enumerate(getattr(m, part)):
                    if t.name is None:
                        continue
                    name, who = namers.setdefault((m.name, part, j), (t.name, e.name))
                    if name != t.name and clash is None:
                        clash = (f"entries {quoted(who)} and {quoted(e.name)} declare different program signatures: "
                                 f"method {quoted(m.name)} {part}[{j}] is named {quoted(name)} by {quoted(who)} and "
                                 f"{quoted(t.name)} by {quoted(e.name)}")
        if clash is not None:
            out.append((i, clash))
    return out


def consistency_problems(
    manifest: Manifest, table_names: Sequence[str], segment_sizes: Sequence[int]
) -> list[tuple[ErrorCode, str, str, int | None]]:
    """Every consistency problem as (code, field path, message, manifest position or None), at most
    MAX_FINDINGS_PER_CODE of each code (`consistency` also counts the rest). `segment_sizes` holds
    the size of each segment of the table, in table order."""
    return consistency(manifest, table_names, segment_sizes).found


def consistency(manifest: Manifest, table_names: Sequence[str], segment_sizes: Sequence[int]) -> Problems:
    """The consistency rules (specs/nfat-manifest.md section 7, steps 3 to 8), in their order. Each
    check looks names and keys up in sets built once, so the work is linear in the manifest's
    expanded size (bounded by its work budget, section 2.3) and in the table's length."""
    segment_count = len(segment_sizes)
    out = Problems()
    C = ErrorCode
    seen: dict[str, int] = {}
    table = set(table_names)
    for i, e in enumerate(manifest.entries):
        path = f"manifest.entries[{i}].name"
        if e.name in seen:
            if out.wants(C.DUPLICATE_MANIFEST_ENTRY):
                out.add(C.DUPLICATE_MANIFEST_ENTRY, path,
                        f"manifest entries {seen[e.name]} and {i} are both named {quoted(e.name)}", e.position)
            continue
        seen[e.name] = i
        if e.name not in table and out.wants(C.MANIFEST_ENTRY_UNKNOWN):
            held = listed([quoted(n) for n in table_names[:LIST_LIMIT]])
            if len(table_names) > LIST_LIMIT:
                held += f" and {len(table_names) - LIST_LIMIT} more"
            out.add(C.MANIFEST_ENTRY_UNKNOWN, path,
                    f"manifest entry {quoted(e.name)} names no entry of the table (the table holds {held})",
                    e.position)
    for i, name in enumerate(table_names):
        if name not in seen and out.wants(C.MANIFEST_ENTRY_MISSING):
            out.add(C.MANIFEST_ENTRY_MISSING, f"entries[{i}].name",
                    f"entry {quoted(name)} has no entry in the manifest; every entry must have exactly one", None)
    keys = manifest.keys
    layouts = dict(manifest.layouts)
    referenced: set[int] = set()
    for i, (key, segment) in enumerate(manifest.named_data):
        if segment >= segment_count:
            if out.wants(C.NAMED_DATA_BAD_SEGMENT):
                out.add(C.NAMED_DATA_BAD_SEGMENT, f"manifest.named_data[{i}].segment",
                        f"named-data key {quoted(key)} points at segment {segment}, but the segment table has "
                        f"{segment_count}", None)
        else:
            layout = layouts.get(key)
            nbytes = None if layout is None else layout.nbytes
            if layout is not None and nbytes != segment_sizes[segment] and out.wants(C.NAMED_DATA_LAYOUT_MISMATCH):
                out.add(C.NAMED_DATA_LAYOUT_MISMATCH, f"manifest.named_data[{i}].layout",
                        f"named-data key {quoted(key)} has layout {clipped(layout.text())}, {nbytes} bytes, but "
                        f"its segment {segment} holds {segment_sizes[segment]}", None)
        referenced.add(segment)
    for s in range(segment_count):
        if s not in referenced and out.wants(C.SEGMENT_UNREFERENCED):
            out.add(C.SEGMENT_UNREFERENCED, f"segments[{s}]",
                    f"segment {s} is named by no named-data key: its bytes are unreachable", None)
    for i, e in enumerate(manifest.entries):
        for k, key in enumerate(e.named_data):
            if key not in keys and out.wants(C.NAMED_DATA_KEY_MISSING):
                out.add(C.NAMED_DATA_KEY_MISSING, f"manifest.entries[{i}].named_data[{k}]",
                        f"entry {quoted(e.name)} needs named-data key {quoted(key)}, which the manifest does not "
                        "define", e.position)
    problems = dict(signature_problems([(i, e) for i, e in enumerate(manifest.entries) if e.signature is not None]))
    first_digest: ManifestEntry | None = None
    for i, e in enumerate(manifest.entries):
        if i in problems and out.wants(C.SIGNATURE_MISMATCH):
            out.add(C.SIGNATURE_MISMATCH, f"manifest.entries[{i}].signature", problems[i], e.position)
        if e.source_digest is not None:
            if first_digest is None:
                first_digest = e
            elif e.source_digest != first_digest.source_digest and out.wants(C.SOURCE_DIGEST_MISMATCH):
                out.add(C.SOURCE_DIGEST_MISMATCH, f"manifest.entries[{i}].source_digest",
                        f"entries {quoted(first_digest.name)} and {quoted(e.name)} were built from different "
                        f"source programs: {first_digest.source_digest} vs {e.source_digest}", e.position)
    return out


def golden_problems(manifest: Manifest, out: Problems | None = None) -> Problems:
    """The golden rules (specs/nfat-manifest.md 11.2 and 11.3: section 7 step 10, after the payload
    digests of step 9), in their order, added to `out` (a new Problems when None)."""
    out = Problems() if out is None else out
    C = ErrorCode
    keys = manifest.keys
    layouts = dict(manifest.layouts)
    for i, e in enumerate(manifest.entries):
        for c, call in enumerate(e.golden):
            found = _golden_call_problem(e, call, keys, layouts)
            if found is not None and out.wants(found[0]):
                code, where, message = found
                out.add(code, f"manifest.entries[{i}].golden[{c}]{where}",
                        f"entry {quoted(e.name)}, golden call {c} (method {quoted(call.method)}): {message}",
                        e.position)
    for i, e in enumerate(manifest.entries):
        stated = next((v for k, v in e.provenance if k == GOLDEN_DIGEST_KEY), None)  # the first, as C++ reads it
        if stated is None:
            continue
        actual = golden_digest(e.golden)
        if stated != actual and out.wants(C.GOLDEN_DIGEST_MISMATCH):
            out.add(C.GOLDEN_DIGEST_MISMATCH, f"manifest.entries[{i}].provenance",
                    f"the golden calls of entry {quoted(e.name)} have SHA-256 {actual}, but its provenance "
                    f"{GOLDEN_DIGEST_KEY} says {clipped(stated)}", e.position)
    return out


def golden_problem_of_each_entry(manifest: Manifest) -> dict[int, tuple[ErrorCode, str, str]]:
    """The first golden problem (11.2, then 11.3) of each manifest entry that has one, by its index:
    (code, field path, message), as golden_problems words them; what `fatpte check` reports for an
    entry instead of running it (a golden call naming a method the program lacks is E0422, an
    invalid container, not an entry that cannot run here). One finding per entry, in one pass."""
    keys = manifest.keys
    layouts = dict(manifest.layouts)
    out: dict[int, tuple[ErrorCode, str, str]] = {}
    for i, e in enumerate(manifest.entries):
        for c, call in enumerate(e.golden):
            found = _golden_call_problem(e, call, keys, layouts)
            if found is not None:
                code, where, message = found
                out[i] = (code, f"manifest.entries[{i}].golden[{c}]{where}",
                          f"entry {quoted(e.name)}, golden call {c} (method {quoted(call.method)}): {message}")
                break
        stated = next((v for k, v in e.provenance if k == GOLDEN_DIGEST_KEY), None)
        actual = golden_digest(e.golden) if stated is not None and i not in out else stated
        if stated != actual:
            said = (f"the golden calls of entry {quoted(e.name)} have SHA-256 {actual}, but its provenance "
                    f"{GOLDEN_DIGEST_KEY} says {clipped(stated or '')}")
            out[i] = (ErrorCode.GOLDEN_DIGEST_MISMATCH, f"manifest.entries[{i}].provenance", said)
    return out


def _golden_call_problem(e: ManifestEntry, call: Any, keys: dict[str, int],
                         layouts: dict[str, TensorLayout]) -> tuple[ErrorCode, str, str] | None:
    """The first problem of one golden call as (code, field path below the call, message), or None."""
    C = ErrorCode
    if e.signature is None:
        return C.GOLDEN_CALL_MISMATCH, "", "the entry states no program signature to check the call against"
    method = e.signature.method(call.method)
    if method is None:
        names = listed([quoted(m.name) for m in e.signature.methods]) or "none"
        return C.GOLDEN_CALL_MISMATCH, ".method", f"the entry's program has no such method (it has {names})"
    for part, given, specs in (("inputs", call.inputs, method.inputs),
                               ("outputs", tuple(o.key for o in call.outputs), method.outputs)):
        if len(given) != len(specs):
            return (C.GOLDEN_CALL_MISMATCH, f".{part}",
                    f"the call has {len(given)} {part}, the method {len(specs)}: {_texts(specs)}")
        for j, (key, spec) in enumerate(zip(given, specs)):
            where = f".{part}[{j}]" + (".key" if part == "outputs" else "")
            layout = layouts.get(key)
            if key not in keys:
                return C.GOLDEN_KEY_INVALID, where, f"{part[:-1]} {j}: key {quoted(key)} is not a named-data key"
            if layout is None or list(layout.dim_order or range(len(layout.sizes))) != list(range(len(layout.sizes))):
                what = "has no tensor layout" if layout is None else f"has a layout that is not contiguous ({layout.text()})"
                return C.GOLDEN_KEY_INVALID, where, f"{part[:-1]} {j}: key {quoted(key)} {what}"
            why = golden_fit_problem(spec, layout)
            if why is not None:
                return C.GOLDEN_CALL_MISMATCH, where, f"{part[:-1]} {j} ({quoted(key)}): {why}"
    return None


def read_manifest(buf: Any, header: Any, *, source: str | None = None, base: int = 0) -> Manifest | None:
    """The manifest of a structurally sound v2 container (None when it has none), after checking
    its CRC32C: bounds-checked, FatpteError on any defect. `buf` holds the file's bytes from
    offset `base` on (a range read on its own, fatpte/container/remote.py); offsets in errors stay
    the file's."""
    if header is None or header.version != L.VERSION_2 or header.manifest_size == 0:
        return None
    from fatpte.fileio.checksum import crc32c

    start, end = header.manifest_offset, header.manifest_offset + header.manifest_size
    actual = crc32c(buf, start - base, end - base)
    if actual != header.manifest_checksum:
        raise FatpteError(ErrorCode.MANIFEST_CHECKSUM_MISMATCH,
                          f"the manifest ({start:#x}..{end:#x}) has CRC32C {actual:08x}, but manifest_checksum "
                          f"says {header.manifest_checksum:08x}", source=source, field="header.manifest_checksum",
                          offset=L.RECORDS["v2_header"].offsets["manifest_checksum"][0],
                          expected=header.manifest_checksum, actual=actual)
    view = memoryview(buf)
    try:
        return decode(view[start - base : end - base], base=start, source=source)
    finally:
        view.release()


def check_container(src: Any, st: Any) -> None:
    """Append the manifest findings of a v2 container to `st.findings` (the last checks of the
    canonical order): decoding, then the consistency rules, then payload SHA-256 digests. `src`
    answers for the file's bytes (a RangeReader, fatpte/fileio/ranges.py)."""
    from fatpte.errors import finding

    h = st.header
    if h is None or h.version != L.VERSION_2:
        return
    entry_at = {e.index: h.header_size + e.index * h.entry_size for e in st.entries}
    seg_at = h.header_size + h.entry_count * h.entry_size
    if h.manifest_size == 0:
        for s in st.segments:
            st.add(finding(ErrorCode.SEGMENT_UNREFERENCED,
                           f"segment {s.index} is named by no named-data key (the container has no manifest)",
                           offset=seg_at + s.index * h.segment_entry_size, field=f"segments[{s.index}]"))
        return
    if not st.manifest_placed or any(f.code in (ErrorCode.MANIFEST_CHECKSUM_MISMATCH,
                                                ErrorCode.BAD_MANIFEST_IDENTIFIER) for f in st.findings):
        return
    try:
        start = h.manifest_offset
        manifest = read_manifest(src.bytes(start, start + h.manifest_size), h, source=st.source, base=start)
    except FatpteError as exc:
        st.add(exc.finding)
        return
    assert manifest is not None
    problems = consistency(manifest, [e.name for e in st.entries], [s.size for s in st.segments])
    for code, count in problems.omitted.items():
        st.omit(code, count)
    for code, path, message, position in problems.found:
        if position is not None:
            offset: int | None = h.manifest_offset + position
        elif path.startswith("entries["):
            offset = entry_at[int(path[8 : path.index("]")])]
        elif path.startswith("segments["):
            offset = seg_at + int(path[9 : path.index("]")]) * h.segment_entry_size
        else:
            offset = h.manifest_offset
        st.add(finding(code, message, offset=offset, field=path))
    by_name = {e.name: e for e in st.entries}
    # Each payload is hashed once, however many manifest entries (repeated names, E0410) claim it.
    digests: dict[int, bytes] = {}
    for i, me in enumerate(manifest.entries):
        e = by_name.get(me.name)
        if me.payload_sha256 is None or e is None or e.index not in st.placed_entries:
            continue
        digest = digests.get(e.index)
        if digest is None:
            digest = digests[e.index] = src.sha256(e.offset, e.end)
        if digest != me.payload_sha256:
            st.add(finding(ErrorCode.PAYLOAD_DIGEST_MISMATCH,
                           f"payload of {quoted(e.name)} has SHA-256 {digest.hex()}, but its manifest entry says "
                           f"{me.payload_sha256.hex()}", offset=h.manifest_offset + me.position,
                           field=f"manifest.entries[{i}].payload_sha256", expected=me.payload_sha256.hex(),
                           actual=digest.hex()))
    golden = golden_problems(manifest)
    for code, count in golden.omitted.items():
        st.omit(code, count)
    for code, path, message, position in golden.found:
        st.add(finding(code, message, offset=h.manifest_offset + (position or 0), field=path))
