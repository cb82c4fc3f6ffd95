"""`verify` (specs/nfat-signature.md section 6): a container's signature checked against trusted
keys, then every entry and named-data key it holds against the signed statement, in the canonical
order of the checks, which the C++ loader follows too: the first error is the same code, offset
and field in both. Signed entries and keys the container no longer holds are reported as thinned.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from fatpte.container.reader import Container, key_segments
from fatpte.container.reader import open as open_container
from fatpte.errors import ErrorCode, FatpteError, Finding, finding, quoted
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.mapping import read_regular
from fatpte.fileio.streams import Progress, progress_counter
from fatpte.format import layout as L
from fatpte.manifest.canonical import entry_record, named_data_record
from fatpte.manifest.model import ManifestEntry
from fatpte.ops.signing.bundle import DETACHED_SUFFIX, Envelope, Malformed, pae, read_bundle
from fatpte.ops.signing.keys import TrustedKey, verifies
from fatpte.ops.signing.statement import (
    NAMED_DATA_SUBJECT,
    SignedEntry,
    Statement,
    golden_of,
    golden_vouched,
    read_statement,
    sha256_of_ranges,
)

if TYPE_CHECKING:
    from fatpte.device.profile import DeviceProfile


class EntryVerdict(NamedTuple):
    name: str
    backend_id: str
    status: str  # "verified", "tampered", "unsigned"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "backend_id": self.backend_id, "status": self.status}


class VerifyReport(NamedTuple):
    """The outcome of verifying one container against trusted keys."""

    source: str
    signature: str | None  # "embedded", the detached file's path, or None when there was none
    key_id: str | None  # the trusted key that verified the envelope
    entries: tuple[EntryVerdict, ...] = ()
    thinned: tuple[str, ...] = ()  # signed entries the container no longer holds
    named_data: int = 0  # named-data keys whose bytes and record match
    thinned_named_data: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    # Entries whose golden calls the signature does not vouch for (section 6.1): a signed load does
    # not run them. Not an error: the signature vouches for everything else.
    unsigned_golden: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def first_error(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.source, "ok": self.ok, "signature": self.signature, "key_id": self.key_id,
            "entries": [e.to_json() for e in self.entries], "thinned": list(self.thinned),
            "named_data_verified": self.named_data, "thinned_named_data": list(self.thinned_named_data),
            "unsigned_golden": list(self.unsigned_golden), "findings": [f.to_json() for f in self.findings],
        }


def _locate(c: Container, signature: str | os.PathLike[str] | bytes | None) -> tuple[bytes | None, str | None,
                                                                                    int | None]:
    """(bundle bytes, where they came from, file offset for findings)."""
    if isinstance(signature, bytes):
        return signature, "given", None
    if signature is not None:
        # A regular file (a FIFO never blocks), read up to one byte past the limit: the bundle's
        # reader refuses a larger one (E1302).
        return read_regular(signature, L.MAX_SIGNATURE_SIZE, "the signature"), os.fspath(signature), None
    # Nothing else is looked for: a file beside the container is not read unless the caller names
    # it (specs/nfat-signature.md section 6 step 1).
    h = c.header
    if c.version == L.VERSION_2 and h.signature_size:
        return bytes(c.buffer[h.signature_offset:h.signature_offset + h.signature_size]), "embedded", \
            h.signature_offset
    return None, None, None


def check_envelope(env: Envelope, keys: Sequence[TrustedKey]) -> TrustedKey:
    """The trusted key one of the envelope's signatures verifies with (6.4)."""
    message = pae(env.payload_type, env.payload)
    named = [k for k in keys if env.hint is not None and k.key_id == env.hint]
    candidates = named or list(keys)
    for sig in env.signatures:
        for k in candidates:
            if verifies(k.key, sig, message):
                return k
    path = "signature.dsseEnvelope.signatures[0].sig"
    if named:
        raise Malformed(path, f"the signature does not verify with the trusted key {named[0].key_id[:16]}... "
                         f"({named[0].source}) it names: the statement was altered after signing, or the "
                         "signature is damaged", ErrorCode.SIGNATURE_INVALID)
    # The hint is not signed: anyone can write anything there, so it is quoted escaped and cut.
    who = f"key {quoted(env.hint, 16)}" if env.hint else "an unnamed key"
    raise Malformed(path, f"the container is signed by {who}, which is not among the {len(keys)} trusted key(s)",
                     ErrorCode.SIGNATURE_UNTRUSTED)


def _entry_base(c: Container, index: int) -> int:
    return c.header.header_size + index * c.header.entry_size


class Problems(NamedTuple):
    """What the record checks found wrong, by entry table index and by named-data key: the
    verdicts are read from these, never by matching the findings' field paths (which cost one
    pass over the findings per entry)."""

    entries: set[int]
    keys: set[str]


def check_records(c: Container, st: Statement, sig_offset: int | None,
                  add: Callable[[Finding], None]) -> Problems:
    """Everything that needs no payload byte (6.6, 6.7, 6.8): which entries are signed, their
    table fields and order, their manifest records, the named-data keys and their records. Linear
    in the entries and keys: every lookup is a dict built once."""
    ent = L.RECORDS["v2_entry"]
    signed = st.entry_index()
    found = Problems(set(), set())
    if c.version != L.VERSION_2 or not any(e.name in signed for e in c.entries):
        names = ", ".join(repr(e.name) for e in st.entries[:8])
        add(finding(ErrorCode.SIGNATURE_NOT_FOR_CONTAINER,
                    f"the signature describes entries {names}, none of which this container holds: it belongs "
                    "to another container", offset=sig_offset, field="signature"))
        return found
    manifest = c.manifest
    described = {} if manifest is None else manifest.by_name()
    position: dict[str, int] = {}  # the index of the first manifest entry of each name
    for i, record in enumerate(() if manifest is None else manifest.entries):
        position.setdefault(record.name, i)
    last = -1
    for e in c.entries:
        base = _entry_base(c, e.index)
        p = f"entries[{e.index}]"
        k = signed.get(e.name)
        if k is None:
            add(finding(ErrorCode.ENTRY_NOT_SIGNED, f"entry {e.name!r} is not in the signed statement: it was added "
                        "after signing", offset=base, field=f"{p}.name", actual=e.name))
            continue
        s = st.entries[k]
        if k < last:
            found.entries.add(e.index)
            add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                        f"entry {e.name!r} comes after {st.entries[last].name!r} in the table but before it in "
                        "the signed statement: the entries were reordered", offset=base, field=f"{p}.name"))
        last = max(last, k)
        assert e.payload_kind is not None
        for fld, have, want in (("backend_id", e.backend_id, s.backend_id),
                                ("payload_kind", e.payload_kind, s.payload_kind),
                                ("priority", e.priority, s.priority), ("alignment", e.alignment, s.alignment)):
            if have != want:
                found.entries.add(e.index)
                add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                            f"entry {e.name!r}: {fld} is {have!r}, the signed statement says {want!r}",
                            offset=base + ent.offsets[fld][0], field=f"{p}.{fld}", expected=want, actual=have))
        me = described.get(e.name)
        at, where = base, f"{p}.name"
        if me is not None:
            at, where = c.header.manifest_offset + me.position, f"manifest.entries[{position[e.name]}]"
        if not _record_matches(e.name, me, s, at, where, add):
            found.entries.add(e.index)
    keys = {k.key: k for k in st.named_data}
    if manifest is not None:
        layouts = dict(manifest.layouts)
        for j, (key, _) in enumerate(manifest.named_data):
            where = f"manifest.named_data[{j}]"
            sk = keys.get(key)
            if sk is None:
                found.keys.add(key)
                add(finding(ErrorCode.NAMED_DATA_NOT_SIGNED, f"named-data key {key!r} is not in the signed "
                            "statement: it was added after signing", offset=c.header.manifest_offset,
                            field=where, actual=key))
            elif hashlib.sha256(named_data_record(key, layouts.get(key))).hexdigest() != sk.record_sha256:
                found.keys.add(key)
                add(finding(ErrorCode.SIGNED_NAMED_DATA_MISMATCH,
                            f"named-data key {key!r}: its tensor layout differs from the signed one",
                            offset=c.header.manifest_offset, field=where))
    return found


def _record_matches(name: str, me: ManifestEntry | None, s: SignedEntry, at: int, where: str,
                    add: Callable[[Finding], None]) -> bool:
    """Steps 7d and 7e for one entry: its manifest record `me` (None: none, `where` then names the
    table entry) and its golden calls against statement entry `s`, each finding at `at`."""
    ok = True
    if hashlib.sha256(entry_record(me)).hexdigest() != s.record_sha256:
        ok = False
        add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                    f"entry {name!r}: its manifest record (requirements, program signature, named data, digests, "
                    "provenance, ExecuTorch backends) differs from the signed one", offset=at, field=where))
    if s.golden_sha256 is not None and golden_of(me) != s.golden_sha256:
        ok = False
        calls = 0 if me is None else len(me.golden)
        add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                    f"entry {name!r}: its {calls} golden call(s) are not the signed ones (the statement states golden "
                    f"calls with SHA-256 {s.golden_sha256[:16]}...): they were added, changed or removed after "
                    "signing", offset=at, field=f"{where}.golden" if me is not None else where))
    return ok


def check_bytes(c: Container, st: Statement, add: Callable[[Finding], None], *,
                names: Sequence[str] | None = None, progress: Progress | None = None) -> set[str]:
    """The SHA-256 of every payload and named-data segment against the statement (6.9, 6.10):
    of every entry, or of the entries `names` and the keys they use. Returns the entries and keys
    (`named_data/KEY`) whose bytes did not match. Each region is hashed once."""
    signed = st.entry_index()
    keys = {k.key: k for k in st.named_data}
    manifest = c.manifest
    seg_of = key_segments(c)
    wanted = None if names is None else frozenset(names)
    entries = [e for e in c.entries if e.name in signed and (wanted is None or e.name in wanted)]
    if wanted is None:
        wanted_keys = [k for k in seg_of if k in keys]
    else:
        described = {} if manifest is None else manifest.by_name()
        used: set[str] = set()
        for e in entries:
            me = described.get(e.name)
            used.update(() if me is None else me.named_data)
        wanted_keys = [k for k in seg_of if k in keys and k in used]
    ranges = [(e.offset, e.size) for e in entries]
    ranges += [(seg_of[k].offset, seg_of[k].size) for k in wanted_keys]
    total = sum(size for _, size in set(ranges))
    digest = sha256_of_ranges(c.buffer, ranges, None if progress is None else progress_counter(progress, total))
    bad: set[str] = set()
    for e in entries:
        s = st.entries[signed[e.name]]
        if digest[(e.offset, e.size)] != s.payload_sha256:
            bad.add(e.name)
            add(finding(ErrorCode.SIGNED_PAYLOAD_MISMATCH,
                        f"the payload of {e.name!r} ({e.offset:#x}..{e.end:#x}) has SHA-256 "
                        f"{digest[(e.offset, e.size)][:16]}..., the signed statement says {s.payload_sha256[:16]}...: "
                        "its bytes were changed after signing", offset=_entry_base(c, e.index)
                        + L.RECORDS["v2_entry"].offsets["offset"][0], field=f"entries[{e.index}].offset"))
    h = c.header
    seg_at = h.header_size + h.entry_count * h.entry_size
    for key in wanted_keys:
        seg = seg_of[key]
        got = digest[(seg.offset, seg.size)]
        if got != keys[key].sha256:
            bad.add(NAMED_DATA_SUBJECT + key)
            add(finding(ErrorCode.SIGNED_NAMED_DATA_MISMATCH,
                        f"the bytes of named-data key {key!r} (segment {seg.index}) have SHA-256 {got[:16]}..., the "
                        f"signed statement says {keys[key].sha256[:16]}...: they were changed after signing",
                        offset=seg_at + seg.index * h.segment_entry_size, field=f"segments[{seg.index}].offset"))
    return bad


def check_downgrade(c: Container, st: Statement, device: DeviceProfile, sig_offset: int | None,
                    add: Callable[[Finding], None], *, prefer: Sequence[str] = (),
                    exclude: Sequence[str] = ()) -> None:
    """Step 11, when the caller asks for it: replay selection for `device` over the entries the
    statement lists, in its order (the signed container's table order), each held entry as the
    container describes it and each thinned one as its `selection` member does. When the winner is
    an entry the container no longer holds, a weaker one was left to run here: E1308 at that
    statement entry. A thinned entry whose statement has no `selection` (written before revision
    2) cannot be ranked, and is refused the same way: asked for, the check never passes unproven."""
    from fatpte.device.selection import Candidate, rank
    from fatpte.format.model import Entry
    from fatpte.manifest.model import Requirements

    manifest = c.manifest
    described = {} if manifest is None else manifest.by_name()
    held = {e.name: e for e in c.entries}
    candidates: list[Candidate] = []
    for k, s in enumerate(st.entries):
        entry = Entry(k, s.name, s.backend_id, 0, 0, s.payload_kind, s.alignment, None, s.priority, 0)
        if s.name in held:
            me = described.get(s.name)
            candidates.append(Candidate(entry, Requirements() if me is None else me.requires,
                                        None if me is None else me.executorch_backends))
        elif s.selection is None:
            add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                        f"entry {s.name!r} was thinned away and the signed statement does not say what it needs "
                        "(no `selection`: signed before revision 2), so it cannot be shown that it would not run "
                        f"on {device.name!r}: sign the container again to check thinning", offset=sig_offset,
                        field=f"signature.statement.predicate.entries[{k}]"))
            return
        else:
            candidates.append(Candidate(entry, s.selection.requires, s.selection.executorch_backends))
    _, chosen = rank(candidates, device, prefer=prefer, exclude=exclude)
    if chosen is not None and chosen.name not in held:
        add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                    f"entry {chosen.name!r} ({chosen.backend_id}) is what {device.name!r} gets among the signed "
                    "entries, and it was thinned away: the container offers this device a weaker entry "
                    "(a downgrade)", offset=sig_offset, field=f"signature.statement.predicate.entries[{chosen.index}]"))


def verify(
    path: str | os.PathLike[str],
    keys: Sequence[TrustedKey],
    *,
    signature: str | os.PathLike[str] | bytes | None = None,
    progress: Progress | None = None,
    downgrade: DeviceProfile | None = None,
) -> VerifyReport:
    """Verify the container at `path` against `keys` (specs/nfat-signature.md section 6).

    With `downgrade` (a device profile; off by default, section 6 step 11), a container from which
    the entry that device would get among the signed entries was thinned is refused (E1308).

    The signature is `signature` (a detached file or its bytes) when given, else the embedded one;
    a file beside the container is never looked for (section 6 step 1). Every entry present must
    match the statement;
    signed entries and keys the container no longer holds are reported as thinned. Raises
    FatpteError only when the container cannot be opened (its structural error), its manifest
    read or its named-data keys resolved (section 6, before step 1), or a file read."""
    if not keys:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "no trusted public key to verify with", field="key")
    with open_container(path) as c:
        return verify_container(c, keys, signature=signature, progress=progress, downgrade=downgrade)


def verify_buffer(buf: BytesLike, keys: Sequence[TrustedKey], *, signature: bytes | None = None,
                  source: str = "<buffer>", downgrade: DeviceProfile | None = None) -> VerifyReport:
    """`verify` of a container held in memory."""
    with Container.from_buffer(buf, source=source) as c:
        return verify_container(c, keys, signature=signature, downgrade=downgrade)


def verify_container(c: Container, keys: Sequence[TrustedKey], *,
                     signature: str | os.PathLike[str] | bytes | None = None,
                     progress: Progress | None = None, downgrade: DeviceProfile | None = None) -> VerifyReport:
    """`verify` of an open container. With `downgrade`, also step 11: refuse the container when
    the entry that device gets among the signed entries was thinned away (check_downgrade)."""
    source = c.source or "<buffer>"
    # What the statement speaks of must be readable first (specs/nfat-signature.md section 6,
    # before step 1): the manifest (E0407, E0415, E0418, E0420) and each named-data key's segment
    # (E0414), reported as the container errors they are.
    key_segments(c)
    data, where, sig_offset = _locate(c, signature)
    if data is None:
        beside = c.source is not None and os.path.lexists(c.source + DETACHED_SUFFIX)
        hint = (f"; {source}{DETACHED_SUFFIX} lies beside it, but a detached signature is read only when given "
                "(--signature)") if beside else " and no detached signature was given"
        return VerifyReport(source, None, None, findings=(finding(
            ErrorCode.SIGNATURE_REQUIRED, f"the container carries no signature region{hint}", field="signature"),))
    try:
        env = read_bundle(data)
        trusted = check_envelope(env, keys)
        st = read_statement(env.payload)
    except Malformed as problem:
        return VerifyReport(source, where, None, findings=(finding(
            problem.code, problem.message, offset=sig_offset, field=problem.field),))
    findings: list[Finding] = []
    problems = check_records(c, st, sig_offset, findings.append)
    if any(f.code is ErrorCode.SIGNATURE_NOT_FOR_CONTAINER for f in findings):
        return VerifyReport(source, where, trusted.key_id, findings=tuple(findings))
    bad = check_bytes(c, st, findings.append, progress=progress)
    if downgrade is not None:
        check_downgrade(c, st, downgrade, sig_offset, findings.append)
    signed = st.entry_index()
    verdicts = []
    for e in c.entries:
        if e.name not in signed:
            status = "unsigned"
        elif e.name in bad or e.index in problems.entries:
            status = "tampered"
        else:
            status = "verified"
        verdicts.append(EntryVerdict(e.name, e.backend_id, status))
    present = {e.name for e in c.entries}
    seg_of = key_segments(c)
    thinned_keys = tuple(k.key for k in st.named_data if k.key not in seg_of)
    good_keys = sum(1 for k in seg_of if NAMED_DATA_SUBJECT + k not in bad and k not in problems.keys)
    return VerifyReport(source, where, trusted.key_id, tuple(verdicts),
                        tuple(s.name for s in st.entries if s.name not in present), good_keys, thinned_keys,
                        tuple(findings), unsigned_golden(c, st))


def unsigned_golden(c: Container, st: Statement) -> tuple[str, ...]:
    """The signed entries of `c`, in table order, whose golden calls the signature does not vouch
    for (section 6.1: signed before revision 3, no golden digest in the signed provenance)."""
    signed = st.entry_index()
    described = {} if c.manifest is None else c.manifest.by_name()
    return tuple(e.name for e in c.entries if e.name in signed
                 and not golden_vouched(st.entries[signed[e.name]], described.get(e.name)))
