"""The manifest's rules against itself and its container (specs/nfat-manifest.md, "Consistency"):
`consistency_problems` (shared by validate and pack), `read_manifest` (CRC32C, then decode) and
`check_container`, the last checks of the content pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import layout as L
from fatpte.manifest.codec import decode
from fatpte.manifest.model import Manifest, ManifestEntry, Signature, TensorSpec

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
                out.append((i, f"entries {first.name!r} and {e.name!r} declare different program signatures: {diff}"))
                continue
        clash = None
        for m in e.signature.methods:
            for part in ("inputs", "outputs", "buffers"):
                for j, t in enumerate(getattr(m, part)):
                    if t.name is None:
                        continue
                    name, who = namers.setdefault((m.name, part, j), (t.name, e.name))
                    if name != t.name and clash is None:
                        clash = (f"entries {who!r} and {e.name!r} declare different program signatures: method "
                                 f"{m.name!r} {part}[{j}] is named {name!r} by {who!r} and {t.name!r} by "
                                 f"{e.name!r}")
        if clash is not None:
            out.append((i, clash))
    return out


def consistency_problems(
    manifest: Manifest, table_names: Sequence[str], segment_sizes: Sequence[int]
) -> list[tuple[ErrorCode, str, str, int | None]]:
    """Every consistency problem as (code, field path, message, manifest position or None).
    `segment_sizes` holds the size of each segment of the table, in table order."""
    segment_count = len(segment_sizes)
    out: list[tuple[ErrorCode, str, str, int | None]] = []

    def add(code: ErrorCode, path: str, message: str, position: int | None) -> None:
        out.append((code, path, message, position))

    seen: dict[str, int] = {}
    table = set(table_names)
    for i, e in enumerate(manifest.entries):
        path = f"manifest.entries[{i}].name"
        if e.name in seen:
            add(ErrorCode.DUPLICATE_MANIFEST_ENTRY, path,
                f"manifest entries {seen[e.name]} and {i} are both named {e.name!r}", e.position)
            continue
        seen[e.name] = i
        if e.name not in table:
            add(ErrorCode.MANIFEST_ENTRY_UNKNOWN, path,
                f"manifest entry {e.name!r} names no entry of the table "
                f"(the table holds {', '.join(repr(n) for n in table_names)})", e.position)
    for i, name in enumerate(table_names):
        if name not in seen:
            add(ErrorCode.MANIFEST_ENTRY_MISSING, f"entries[{i}].name",
                f"entry {name!r} has no entry in the manifest; every entry must have exactly one", None)
    keys = manifest.keys
    layouts = dict(manifest.layouts)
    referenced: set[int] = set()
    for i, (key, segment) in enumerate(manifest.named_data):
        if segment >= segment_count:
            add(ErrorCode.NAMED_DATA_BAD_SEGMENT, f"manifest.named_data[{i}].segment",
                f"named-data key {key!r} points at segment {segment}, but the segment table has "
                f"{segment_count}", None)
        else:
            layout = layouts.get(key)
            nbytes = None if layout is None else layout.nbytes
            if layout is not None and nbytes != segment_sizes[segment]:
                add(ErrorCode.NAMED_DATA_LAYOUT_MISMATCH, f"manifest.named_data[{i}].layout",
                    f"named-data key {key!r} has layout {layout.text()}, {nbytes} bytes, but its segment "
                    f"{segment} holds {segment_sizes[segment]}", None)
        referenced.add(segment)
    for s in range(segment_count):
        if s not in referenced:
            add(ErrorCode.SEGMENT_UNREFERENCED, f"segments[{s}]",
                f"segment {s} is named by no named-data key: its bytes are unreachable", None)
    for i, e in enumerate(manifest.entries):
        for k, key in enumerate(e.named_data):
            if key not in keys:
                add(ErrorCode.NAMED_DATA_KEY_MISSING, f"manifest.entries[{i}].named_data[{k}]",
                    f"entry {e.name!r} needs named-data key {key!r}, which the manifest does not define",
                    e.position)
    problems = dict(signature_problems([(i, e) for i, e in enumerate(manifest.entries) if e.signature is not None]))
    first_digest: ManifestEntry | None = None
    for i, e in enumerate(manifest.entries):
        if i in problems:
            add(ErrorCode.SIGNATURE_MISMATCH, f"manifest.entries[{i}].signature", problems[i], e.position)
        if e.source_digest is not None:
            if first_digest is None:
                first_digest = e
            elif e.source_digest != first_digest.source_digest:
                add(ErrorCode.SOURCE_DIGEST_MISMATCH, f"manifest.entries[{i}].source_digest",
                    f"entries {first_digest.name!r} and {e.name!r} were built from different source "
                    f"programs: {first_digest.source_digest} vs {e.source_digest}", e.position)
    return out


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
    for code, path, message, position in consistency_problems(manifest, [e.name for e in st.entries],
                                                              [s.size for s in st.segments]):
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
    for i, me in enumerate(manifest.entries):
        e = by_name.get(me.name)
        if me.payload_sha256 is None or e is None or e.index not in st.placed_entries:
            continue
        digest = src.sha256(e.offset, e.end)
        if digest != me.payload_sha256:
            st.add(finding(ErrorCode.PAYLOAD_DIGEST_MISMATCH,
                           f"payload of {e.name!r} has SHA-256 {digest.hex()}, but its manifest entry says "
                           f"{me.payload_sha256.hex()}", offset=h.manifest_offset + me.position,
                           field=f"manifest.entries[{i}].payload_sha256", expected=me.payload_sha256.hex(),
                           actual=digest.hex()))
