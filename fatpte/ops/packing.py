"""`fatpte.pack`: write a container from specializations, streaming, atomically, deterministically.

Payloads given as paths are never read into memory whole: each passes once through a few 1 MiB
buffers (`streams.copy_range_crc`), hashed while the buffer is in the CPU cache and written by a
second thread, so each payload is read once. Every offset is planned first from sizes and
alignments; then the payloads are written into a temporary file beside `dest`, the header and
tables (which hold the checksums) last at offset 0, and the file is renamed onto `dest`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.atomic import atomic_output
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.checksum import crc32c
from fatpte.fileio.sources import Source, check_unchanged, open_source, same_bytes
from fatpte.fileio.streams import Progress, copy_range, copy_range_crc, progress_counter
from fatpte.format import layout as L
from fatpte.format.codec import encode
from fatpte.format.structure import id_problem, valid_alignment
from fatpte.ops.specialization import Specialization

if TYPE_CHECKING:
    from fatpte.ops.named_data import NamedDataPlan

_KIND_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_I32 = (-(1 << 31), (1 << 31) - 1)
_PREFIX = 64 << 10  # bytes hashed up front to find candidate duplicates


def detect_payload_kind(buf: BytesLike) -> bytes:
    """Bytes 4..8 when the payload looks like a flatbuffer with a file identifier, or like a
    wrapper that puts its magic there after 4 zero bytes (XNNPACK's XH00); else zero.

    A flatbuffer starts with the u32 offset of its root table, which lies past the identifier
    and inside the buffer; requiring that keeps text or raw weights from passing for a kind."""
    if len(buf) < 8:
        return b"\0\0\0\0"
    kind = bytes(buf[4:8])
    root = int.from_bytes(bytes(buf[0:4]), "little")
    plausible = root == 0 or 8 <= root < len(buf)
    if plausible and all(b in _KIND_ALPHABET for b in kind):
        return kind
    return b"\0\0\0\0"


@dataclass(slots=True)
class _Placement:
    source: Source
    offset: int
    entries: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Layout:
    """Where every region goes. `build_prefix` returns the header, the tables and the manifest;
    it is called once every payload has been copied, when all checksums are known."""

    placements: list[_Placement]
    total: int
    build_prefix: Callable[[], bytes]


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _pad_id(text: str, what: str, label: str, code: ErrorCode) -> bytes:
    raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else b""
    if not isinstance(text, str) or len(raw) > L.ID_FIELD_SIZE:
        raise FatpteError(code, f"{label}: {what} {text!r} must be a string of 1 to {L.ID_FIELD_SIZE} bytes",
                          field=label, actual=text)
    padded = raw.ljust(L.ID_FIELD_SIZE, b"\0")
    problem = id_problem(padded) if b"\0" not in raw else "contains a NUL byte"
    if problem:
        raise FatpteError(code, f"{label}: {what} {text!r} {problem}", field=label, actual=text)
    return padded


def pack(
    specializations: Iterable[Specialization | str | os.PathLike[str]],
    dest: str | os.PathLike[str],
    *,
    version: int = L.VERSION_2,
    alignment: int | None = None,
    named_data: Any = None,
    segment_alignment: int | None = None,
    progress: Progress | None = None,
    signature_from: str | None = None,
    check_signatures: bool = True,
    golden: Any = None,
    golden_from: str | None = None,
    runtime: str | None = None,
    aarch64_runtime: str | None = None,
    data: Sequence[str] = (),
    share_named_data: bool = False,
    adapt_io: bool = False,
) -> Path:
    """Write a container holding `specializations` to `dest` and return its path: `write` of what
    the packing policy `fatpte pack` shares makes of them (fatpte.ops.pack_policy.resolve).

    A specialization may be the path of an ExecuTorch program (.pte) or native package (.ptn):
    its backend id is then derived from it. One whose payload is such a path, and which states no
    signature and no ExecuTorch backends, is read the same way (its signature, backends and, for
    a package, its provenance). `data` ([NAME=]FILE.ptd, repeatable) adds a .ptd's tensors to the
    named data of program entries, and `share_named_data` moves the programs' and packages' own
    named data into the container's, as `fatpte pack --data` and `--share-pte-named-data` do.
    With `version` 1 the programs' signatures are checked against each other (unless not
    `check_signatures`), then left out. The other arguments are `write`'s.
    """
    from fatpte.ops.pack_policy import resolve

    specs = resolve(specializations, data=data, share_named_data=share_named_data, version=version,
                    check_signatures=check_signatures)
    return write(specs, dest, version=version, alignment=alignment, named_data=named_data,
                 segment_alignment=segment_alignment, progress=progress, signature_from=signature_from,
                 check_signatures=check_signatures, golden=golden, golden_from=golden_from, runtime=runtime,
                 aarch64_runtime=aarch64_runtime, adapt_io=adapt_io)


def write(
    specializations: Iterable[Specialization],
    dest: str | os.PathLike[str],
    *,
    version: int = L.VERSION_2,
    alignment: int | None = None,
    named_data: Any = None,
    segment_alignment: int | None = None,
    progress: Progress | None = None,
    signature_from: str | None = None,
    check_signatures: bool = True,
    golden: Any = None,
    golden_from: str | None = None,
    runtime: str | None = None,
    aarch64_runtime: str | None = None,
    adapt_io: bool = False,
) -> Path:
    """Write a container holding `specializations`, as they are, to `dest` and return its path.

    `alignment` is the default payload alignment for version 2 (64 when None); an entry's own
    `alignment` overrides it. Version 1 stores payloads back to back and has no names,
    alignment or priority: asking for them raises NOT_REPRESENTABLE_IN_V1.

    `named_data` maps keys to bytes, paths or `NamedData` shared by the specializations (which
    may then list just the keys); its segments come first, in its order. `segment_alignment` is
    the default segment alignment (64 when None).

    `progress(done, total)` is called as payload and segment bytes are written.

    An entry whose payload is an ExecuTorch program gets its signature, ExecuTorch backends and
    program digest from the program, and what the specialization states of them is checked
    against it (fatpte.ops.program_entry); entries must state agreeing signatures (E0411). When
    the caller knows better: `signature_from=NAME` gives every entry entry NAME's signature, and
    `check_signatures=False` stores none; either is recorded in each entry's provenance
    (`fatpte.signature_check`), and `fatpte info` shows it. Version 1 stores no signature, so
    `check_signatures=False` records nothing there.

    `golden` (a calls.json path or its decoded list) gives golden calls (specs/nfat-manifest.md
    section 11) to every entry that states a program signature; with `golden_from=NAME` their
    outputs are recorded by running entry NAME with the real runtime (fatpte-run: `runtime`, else
    $FATPTE_RUN or one on PATH; `aarch64_runtime` for an aarch64 entry under qemu), else each call
    states them. A specialization's `golden_tolerance` widens its outputs' tolerances
    (fatpte.ops.golden).

    `adapt_io`: entries whose programs take or give float16 or bfloat16 where the others have float32
    state the float32 signature with their program's dtypes behind it (a signature adapter,
    specs/nfat-manifest.md 5.3; the loader converts at the edge); golden calls are then given in
    float32.
    """
    specs = list(specializations)
    if not specs:
        raise FatpteError(ErrorCode.NO_SPECIALIZATIONS, "nothing to pack: give at least one specialization")
    if adapt_io:
        specs = _adapt_io(specs, signature_from, check_signatures)
    if signature_from is not None or (not check_signatures and version != L.VERSION_1):
        specs = _decide_signatures(specs, signature_from, check_signatures)
    specs, named_data = _golden(specs, dest, version, named_data, golden, golden_from, runtime, aarch64_runtime)
    if version not in L.SUPPORTED_VERSIONS:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"version must be 1 or 2, not {version!r}",
                          field="version", actual=version)
    limit = L.MAX_ENTRIES
    if len(specs) > limit:
        raise FatpteError(ErrorCode.TOO_MANY_ENTRIES, f"{len(specs)} specializations exceed the limit of {limit}",
                          field="specializations", actual=len(specs))
    target = Path(dest)
    with contextlib.ExitStack() as stack:
        sources = [stack.enter_context(open_source(s.payload, f"specialization[{i}].payload"))
                   for i, s in enumerate(specs)]
        if version == L.VERSION_1:
            _reject_manifest_in_v1(specs, named_data)
            layout = _plan_v1(specs, sources, alignment)
        else:
            from fatpte.ops import named_data as nd

            seg_align = L.DEFAULT_ALIGNMENT if segment_alignment is None else segment_alignment
            plan = nd.plan(specs, named_data, seg_align, stack)
            layout = _plan_v2(specs, sources, alignment, plan)
        with atomic_output(target) as out:
            _write(out, layout, progress)
    return target


def _golden(specs: list[Specialization], dest: str | os.PathLike[str], version: int, named_data: Any, golden: Any,
            golden_from: str | None, runtime: str | None,
            aarch64_runtime: str | None) -> tuple[list[Specialization], Any]:
    """`specs` and `named_data` with the golden calls `golden` gives (fatpte.ops.golden.prepare)."""
    if golden_from is not None and golden is None:
        raise FatpteError(ErrorCode.NO_GOLDEN_CALLS, "golden_from records the outputs of golden calls: give their "
                          "inputs too (golden=CALLS.json)", field="golden_from", actual=golden_from)
    if golden is None:
        return specs, named_data
    if version == L.VERSION_1:
        raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1, "version 1 has no manifest for golden calls",
                          field="golden")
    from fatpte.ops.golden import prepare

    return prepare(specs, golden, golden_from, named_data, Path(dest),
                   lambda spec, where, nd: write([spec], where, named_data=nd), runtime=runtime,
                   aarch64_runtime=aarch64_runtime)


def _adapt_io(specs: list[Specialization], signature_from: str | None,
              check_signatures: bool) -> list[Specialization]:
    """`specs` with each stated signature put behind the container's (fatpte.manifest.adapters):
    E0411 when they differ in more than an adapter bridges."""
    import dataclasses

    from fatpte.manifest.adapters import adapt_all
    from fatpte.manifest.model import Signature

    if signature_from is not None or not check_signatures:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "adapt_io states each entry's signature from its own program; "
                          "signature_from and check_signatures=False give up that check", field="adapt_io")
    stated = [None if s.signature is None else Signature.from_mapping(s.signature, f"specialization[{i}].signature")
              for i, s in enumerate(specs)]
    adapted = adapt_all(stated)
    if adapted is None:
        return specs  # the manifest's consistency rule (E0411) names the difference
    return [s if a is None or a == st else dataclasses.replace(s, signature=a)
            for s, st, a in zip(specs, stated, adapted)]


def _decide_signatures(specs: list[Specialization], signature_from: str | None,
                       check_signatures: bool) -> list[Specialization]:
    """`specs` with the caller's signature decision recorded in each one's provenance."""
    import dataclasses

    from fatpte.manifest.model import SIGNATURE_CHECK_KEY
    from fatpte.ops.program_entry import FROM, SKIPPED

    if signature_from is not None and not check_signatures:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "signature_from and check_signatures=False exclude each "
                          "other: take one entry's signature, or store none", field="signature_from")
    names = [s.entry_name for s in specs]
    if signature_from is not None and signature_from not in names:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"signature_from names no entry: {signature_from!r} is not "
                          f"one of {', '.join(map(repr, names))}", field="signature_from", actual=signature_from)
    value = SKIPPED if signature_from is None else FROM + signature_from
    return [dataclasses.replace(s, provenance={**dict(s.provenance or {}), SIGNATURE_CHECK_KEY: value})
            for s in specs]


def _write(out: BinaryIO, layout: _Layout, progress: Progress | None) -> None:
    """Copy every payload to its offset, hashing it on the way, then write the header, tables
    and manifest at offset 0: one read of each payload, however large."""
    out.flush()
    fd = out.fileno()
    advance = None if progress is None else progress_counter(progress, sum(p.source.size for p in layout.placements))
    for p in layout.placements:
        src = p.source
        if src.fd is not None:
            if src.hashed:
                copy_range(src.fd, 0, fd, p.offset, src.size, advance=advance)
            else:
                src.checksum = copy_range_crc(src.fd, 0, fd, p.offset, src.size, advance=advance)
                src.hashed = True
            check_unchanged(src)
        else:
            view = memoryview(src.buf)
            try:
                done = 0
                while done < src.size:
                    n = os.pwrite(fd, view[done : done + (8 << 20)], p.offset + done)
                    done += n
                    if advance is not None:
                        advance(n)
            finally:
                view.release()
            src.hash()
    prefix = layout.build_prefix()
    done = 0
    while done < len(prefix):
        done += os.pwrite(fd, prefix[done:], done)
    # Gaps between regions were never written: the file system reads them as zero, as the spec
    # requires of padding, and a sparse file costs no disk for them.
    os.ftruncate(fd, layout.total)


def _plan_v1(specs: list[Specialization], sources: list[Source], alignment: int | None) -> _Layout:
    for i, s in enumerate(specs):
        label = f"specialization[{i}]"
        if alignment is not None or s.alignment is not None or s.priority != 0:
            raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1,
                              f"{label}: version 1 stores payloads back to back with no alignment or priority",
                              field=label)
        if s.name is not None and s.name != s.backend_id:
            raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1,
                              f"{label}: version 1 has no entry names (name {s.name!r} differs from backend id "
                              f"{s.backend_id!r})", field=f"{label}.name")
    header = encode(L.RECORDS["v1_header"], {"magic": L.MAGIC, "version": 1, "entry_count": len(specs)}, "header")
    data_start = L.V1_HEADER_SIZE + len(specs) * L.V1_ENTRY_SIZE
    table = bytearray()
    placements: list[_Placement] = []
    rel = 0
    for i, (s, src) in enumerate(zip(specs, sources)):
        raw = _v1_id(s.backend_id, f"specialization[{i}].backend_id")
        table += encode(L.RECORDS["v1_entry"], {"backend_id": raw, "offset": rel, "size": src.size},
                        f"entries[{i}]")
        placements.append(_Placement(src, data_start + rel, [i]))
        rel += src.size
    prefix = header + bytes(table)
    return _Layout(placements, data_start + rel, lambda: prefix)


def _reject_manifest_in_v1(specs: list[Specialization], named_data: Any) -> None:
    for i, s in enumerate(specs):
        stated = [what for what, value in (("requirements", s.requires), ("named data", s.named_data),
                                           ("a program signature", s.signature),
                                           ("a source digest", s.source_digest), ("provenance", s.provenance),
                                           ("a payload SHA-256", s.payload_sha256)) if value]
        if stated:
            said = stated[0] if len(stated) == 1 else f"{', '.join(stated[:-1])} and {stated[-1]}"
            why = ""
            derived = s.executorch_backends is not None or any(k.startswith("executorch.") for k in s.provenance or {})
            if s.signature and derived:
                # What fatpte itself derived from an ExecuTorch file, not what the caller wrote.
                why = (": a .pte or .ptn is packed with the signature and provenance fatpte reads from it, and "
                       "version 1 has no place for them; pack into version 2 (the default)")
            raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1,
                              f"specialization[{i}] ({s.entry_name!r}) has {said}, which only a version 2 manifest "
                              f"holds{why}", field=f"specialization[{i}]")
    if named_data:
        raise FatpteError(ErrorCode.NOT_REPRESENTABLE_IN_V1, "version 1 has no named data", field="named_data")


def _v1_id(text: str, label: str) -> bytes:
    raw = text.encode("ascii", "replace") if isinstance(text, str) else b""
    ok = isinstance(text, str) and text.isascii() and 1 <= len(raw) <= L.ID_FIELD_SIZE and b"\0" not in raw
    if not ok:
        raise FatpteError(ErrorCode.V1_BAD_ID,
                          f"{label}: {text!r} is not a v1 backend id (1 to 32 ASCII characters, no NUL)",
                          field=label, actual=text)
    return raw.ljust(L.ID_FIELD_SIZE, b"\0")


def _plan_v2(
    specs: list[Specialization], sources: list[Source], alignment: int | None, nd: NamedDataPlan
) -> _Layout:
    """Version 2's layout: header, entry and segment tables, the manifest, each distinct payload
    once, then the named-data segments; the prefix built once the checksums are known."""
    default_alignment = L.DEFAULT_ALIGNMENT if alignment is None else alignment
    if not isinstance(default_alignment, int) or not valid_alignment(default_alignment):
        raise FatpteError(ErrorCode.BAD_ALIGNMENT,
                          f"alignment {default_alignment!r} is not a power of two from 1 to {L.MAX_ALIGNMENT}",
                          field="alignment", actual=default_alignment)
    rows = _entry_rows(specs, sources, default_alignment)
    placements = _distinct_payloads(sources)

    from fatpte.ops.pack_manifest import manifest_for_pack

    table_end = L.V2_HEADER_SIZE + len(specs) * L.V2_ENTRY_SIZE + len(nd.segments) * L.V2_SEGMENT_SIZE
    manifest = manifest_for_pack(specs, sources, nd)
    cursor = table_end
    manifest_at = 0
    if manifest:
        manifest_at = cursor = _align_up(cursor, L.MANIFEST_ALIGNMENT)
        cursor += len(manifest)
    cursor = _place_payloads(placements, rows, cursor)
    seg_rows, total = _place_segments(nd, placements, cursor)

    def build_prefix() -> bytes:
        return _v2_prefix(placements, rows, seg_rows, total, manifest_at, manifest)

    # Empty payloads need no copy; their checksum is the CRC32C of nothing, 0.
    return _Layout([p for p in placements if p.source.size], total, build_prefix)


def _entry_rows(specs: list[Specialization], sources: list[Source], default_alignment: int) -> list[dict[str, object]]:
    """Each entry's row of the table, offset, size and checksum still to come; names unique,
    alignments and priorities checked, payload kinds detected."""
    names: dict[str, int] = {}
    rows: list[dict[str, object]] = []
    for i, (s, src) in enumerate(zip(specs, sources)):
        label = f"specialization[{i}]"
        name = _pad_id(s.entry_name, "name", f"{label}.name", ErrorCode.BAD_NAME)
        backend = _pad_id(s.backend_id, "backend id", f"{label}.backend_id", ErrorCode.BAD_BACKEND_ID)
        if s.entry_name in names:
            raise FatpteError(ErrorCode.DUPLICATE_NAME,
                              f"{label}: name {s.entry_name!r} is already used by specialization[{names[s.entry_name]}]"
                              f"; give each variant its own name (NAME:{s.backend_id}=PAYLOAD on the command line, "
                              "name = \"...\" in a pack.toml)",
                              field=f"{label}.name", actual=s.entry_name)
        names[s.entry_name] = i
        align = default_alignment if s.alignment is None else s.alignment
        if not isinstance(align, int) or not valid_alignment(align):
            raise FatpteError(ErrorCode.BAD_ALIGNMENT,
                              f"{label}: alignment {align!r} is not a power of two from 1 to {L.MAX_ALIGNMENT}",
                              field=f"{label}.alignment", actual=align)
        if not isinstance(s.priority, int) or not _I32[0] <= s.priority <= _I32[1]:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{label}: priority {s.priority!r} is not a 32-bit integer",
                              field=f"{label}.priority", actual=s.priority)
        src.kind = detect_payload_kind(src.buf)
        rows.append({"name": name, "backend_id": backend, "payload_kind": src.kind, "alignment": align,
                     "priority": s.priority, "flags": 0, "reserved": 0})
    return rows


def _distinct_payloads(sources: list[Source]) -> list[_Placement]:
    """One placement per distinct payload, listing the entries that share it.

    Byte-identical payloads are stored once; the shared region satisfies every alignment.
    Candidates share the size and the CRC32C of the first 64 KiB; only then are both hashed
    whole and, when those CRCs match too, compared byte for byte. So distinct payloads are not
    read beforehand (each is hashed while it is copied), the work stays linear in the number of
    payloads, and an entry sharing a region takes the checksum of the source copied there."""
    placements: list[_Placement] = []
    by_prefix: dict[tuple[int, int], list[_Placement]] = {}
    for i, src in enumerate(sources):
        group = by_prefix.setdefault((src.size, crc32c(src.buf, 0, min(src.size, _PREFIX))), [])
        home = next((p for p in group if p.source.hash() == src.hash() and same_bytes(p.source, src)), None)
        if home is None:
            home = _Placement(src, 0)
            group.append(home)
            placements.append(home)
        home.entries.append(i)
    return placements


def _place_payloads(placements: list[_Placement], rows: list[dict[str, object]], cursor: int) -> int:
    """Each payload's offset from `cursor` on, aligned for every entry sharing it; the end."""
    for p in placements:
        align = max(cast(int, rows[i]["alignment"]) for i in p.entries)
        p.offset = _align_up(cursor, align)
        cursor = p.offset + p.source.size
        for i in p.entries:
            rows[i]["offset"] = p.offset
            rows[i]["size"] = p.source.size
    return cursor


def _place_segments(nd: NamedDataPlan, placements: list[_Placement],
                    cursor: int) -> tuple[list[dict[str, object]], int]:
    """The named-data segments after the payloads (appended to `placements`): their rows, the end."""
    seg_rows: list[dict[str, object]] = []
    for seg in nd.segments:
        seg.offset = _align_up(cursor, seg.alignment)
        cursor = seg.offset + seg.source.size
        seg_rows.append({"offset": seg.offset, "size": seg.source.size, "alignment": seg.alignment,
                         "checksum": seg.source.checksum, "flags": 0, "reserved": 0})
        placements.append(_Placement(seg.source, seg.offset))
    return seg_rows, cursor


def _v2_prefix(placements: list[_Placement], rows: list[dict[str, object]], seg_rows: list[dict[str, object]],
               total: int, manifest_at: int, manifest: bytes) -> bytes:
    """The header, the tables and the manifest, once every payload's checksum is known."""
    for p in placements:
        for i in p.entries:
            rows[i]["checksum"] = p.source.checksum  # hashed while copying (0 when empty)
    table = b"".join(encode(L.RECORDS["v2_entry"], row, f"entries[{i}]") for i, row in enumerate(rows))
    table += b"".join(encode(L.RECORDS["v2_segment"], row, f"segments[{i}]") for i, row in enumerate(seg_rows))
    header_values: dict[str, object] = {
        "magic": L.MAGIC, "version": L.VERSION_2, "header_size": L.V2_HEADER_SIZE,
        "entry_size": L.V2_ENTRY_SIZE, "entry_count": len(rows), "segment_entry_size": L.V2_SEGMENT_SIZE,
        "segment_count": len(seg_rows), "flags": 0, "container_size": total,
        "manifest_offset": manifest_at, "manifest_size": len(manifest),
        "manifest_checksum": crc32c(manifest) if manifest else 0, "header_checksum": 0,
    }
    prefix = bytearray(encode(L.RECORDS["v2_header"], header_values, "header") + table)
    checksum = crc32c(prefix)
    prefix[L.HEADER_CHECKSUM_OFFSET : L.HEADER_CHECKSUM_OFFSET + 4] = checksum.to_bytes(4, "little")
    if manifest:
        prefix += bytes(manifest_at - len(prefix)) + manifest
    return bytes(prefix)
