"""The signed statement (specs/nfat-signature.md section 3.2): an in-toto Statement v1 whose
predicate lists every entry and named-data key of a container; built from a container (hashing
every payload and segment once, on as many threads as cores) and read back from a verified
envelope with every field's shape checked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, NamedTuple

from fatpte.container.reader import Container, key_segments
from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.mapping import releasable, release_pages
from fatpte.fileio.streams import Advance, Progress, progress_counter
from fatpte.format import layout as L
from fatpte.format.structure import id_problem, valid_alignment
from fatpte.manifest.canonical import entry_record, named_data_record
from fatpte.manifest.model import (
    GOLDEN_DIGEST_KEY,
    AbiRange,
    AcceleratorRequirement,
    ManifestEntry,
    Requirements,
    VersionConstraint,
    golden_digest,
)
from fatpte.ops.signing.bundle import Malformed, known, member, parse_json

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://fatpte.dev/nfat-signature/v1"
FORMAT_VERSION: Final = L.VERSION_2
ENTRY_SUBJECT: Final = "entries/"
NAMED_DATA_SUBJECT: Final = "named_data/"
MAX_TEXT_BYTES: Final = 4096  # a named-data key, as in the manifest
# Memory sizes in `selection` are JSON integers (at most 2^63 - 1, section 2); a requirement above
# that is written as it, which no device profile exceeds (fatpte.device.fields.MAX_MEMORY_BYTES).
_MAX_JSON_INT: Final = (1 << 63) - 1
_U32: Final = (1 << 32) - 1
_HEX = frozenset("0123456789abcdef")
# Bytes hashed per call: progress between, the GIL released during, and the pages read released
# after each (a mapped file's pages stay resident once read: verifying 3 GiB held 3 GiB).
_HASH_STEP = 8 << 20


class SignedSelection(NamedTuple):
    """What selection reads of a signed entry's manifest record (its `selection` member, section
    3.2): enough to replay selection over entries a thinned container no longer holds."""

    requires: Requirements
    executorch_backends: tuple[str, ...] | None


class SignedEntry(NamedTuple):
    """What the statement says of one entry."""

    name: str
    backend_id: str
    payload_kind: bytes
    priority: int
    alignment: int
    payload_sha256: str
    record_sha256: str
    selection: SignedSelection | None = None  # None: a statement written before revision 2
    # The golden digest (specs/nfat-manifest.md 11.3) of the entry's golden calls, the empty list's
    # when it has none (revision 3); None: a statement written before revision 3.
    golden_sha256: str | None = None


class SignedKey(NamedTuple):
    """What the statement says of one named-data key."""

    key: str
    sha256: str
    record_sha256: str


class Statement(NamedTuple):
    """A parsed statement (only the fields this module reads; others are ignored)."""

    entries: tuple[SignedEntry, ...]
    named_data: tuple[SignedKey, ...]

    def entry_index(self) -> dict[str, int]:
        return {e.name: i for i, e in enumerate(self.entries)}


def golden_of(me: ManifestEntry | None) -> str:
    """The golden digest of a manifest entry's golden calls (11.3): the empty list's when the entry
    has none or no manifest record. What a statement's `golden_sha256` states (section 3.2)."""
    return golden_digest(() if me is None else me.golden)


def golden_vouched(signed: SignedEntry, me: ManifestEntry | None) -> bool:
    """Whether the signature vouches for the golden calls of an entry whose record matched `signed`
    (specs/nfat-signature.md section 6.1): the statement states their digest (revision 3; step 7e
    checked it), or the signed record's provenance does (11.3, which E0423 holds the calls to). An
    entry without calls has nothing to vouch for."""
    if me is None or not me.golden or signed.golden_sha256 is not None:
        return True
    return any(k == GOLDEN_DIGEST_KEY for k, _ in me.provenance)



def sha256_of_ranges(buf: BytesLike, ranges: Iterable[tuple[int, int]], advance: Advance | None) -> dict[tuple[int, int],
                                                                                                    str]:
    """SHA-256 of each distinct (offset, size) range of `buf`, hashed on as many threads as cores:
    hashlib releases the GIL, so distinct regions hash in parallel, each read once."""
    todo = sorted(set(ranges), key=lambda r: -r[1])
    view = memoryview(buf)
    release = releasable(buf)

    def one(region: tuple[int, int]) -> str:
        start, size = region
        h = hashlib.sha256()
        pos, end = start, start + size
        while pos < end:
            step = min(end, pos + _HASH_STEP)
            h.update(view[pos:step])
            if advance is not None:
                advance(step - pos)
            if release:  # a page another thread still reads is only faulted in again from the page cache
                release_pages(buf, pos, step)
            pos = step
        return h.hexdigest()

    try:
        workers = min(len(todo), os.cpu_count() or 1)
        if workers <= 1:
            return {r: one(r) for r in todo}
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return dict(zip(todo, pool.map(one, todo)))
    finally:
        view.release()


def selection_json(me: ManifestEntry | None) -> dict[str, Any]:
    """The `selection` member of a statement's entry (section 3.2): the requirements and ExecuTorch
    backends of its manifest record, as decoded, words and numbers unchanged."""
    req = Requirements() if me is None else me.requires
    out: dict[str, Any] = {
        "os": list(req.os), "arch": list(req.arch), "cpu_features": list(req.cpu_features),
        "accelerators": [_accelerator_json(a) for a in req.accelerators],
        "min_memory_bytes": min(req.min_memory_bytes, _MAX_JSON_INT),
    }
    if req.backend_abi is not None:
        out["backend_abi"] = [req.backend_abi.min, req.backend_abi.max]
    if me is not None and me.executorch_backends is not None:
        out["executorch_backends"] = list(me.executorch_backends)
    if req.cpu_cores:  # manifest revision 4: only when stated, so earlier statements are unchanged
        out["cpu_cores"] = list(req.cpu_cores)
    if req.min_core is not None:
        out["min_core"] = req.min_core
    if req.soc:
        out["soc"] = list(req.soc)
    return out


def statement_of(c: Container, *, progress: Progress | None = None) -> dict[str, Any]:
    """The in-toto statement that describes container `c` (specs/nfat-signature.md section 4)."""
    if c.version != L.VERSION_2:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "only version 2 containers can be signed; convert it first "
                          "(fatpte convert --to 2)", source=c.source, field="header.version", actual=c.version)
    manifest = c.manifest
    seg_of = key_segments(c)  # E0414 for a key past the segment table
    ranges = [(e.offset, e.size) for e in c.entries]
    ranges += [(s.offset, s.size) for s in seg_of.values()]
    total = sum(size for _, size in set(ranges))
    advance = None if progress is None else progress_counter(progress, total)
    digest = sha256_of_ranges(c.buffer, ranges, advance)
    subjects: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    # Each looked up once per entry or key, by dict: a container of 65536 entries must not scan
    # the manifest once per entry.
    described = {} if manifest is None else manifest.by_name()
    layouts = {} if manifest is None else dict(manifest.layouts)
    for e in c.entries:
        me = described.get(e.name)
        subjects.append({"name": ENTRY_SUBJECT + e.name, "digest": {"sha256": digest[(e.offset, e.size)]}})
        assert e.payload_kind is not None
        entries.append({"name": e.name, "backend_id": e.backend_id, "payload_kind": e.payload_kind.hex(),
                        "priority": e.priority, "alignment": e.alignment,
                        "record_sha256": hashlib.sha256(entry_record(me)).hexdigest(),
                        "selection": selection_json(me), "golden_sha256": golden_of(me)})
    keys: list[dict[str, Any]] = []
    for key, s in seg_of.items():
        subjects.append({"name": NAMED_DATA_SUBJECT + key, "digest": {"sha256": digest[(s.offset, s.size)]}})
        layout = layouts.get(key)
        keys.append({"key": key, "record_sha256": hashlib.sha256(named_data_record(key, layout)).hexdigest()})
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": {"format_version": FORMAT_VERSION, "entries": entries, "named_data": keys},
    }



def _hex_digest(text: Any, path: str) -> str:
    if not isinstance(text, str) or len(text) != 64 or not set(text) <= _HEX:
        raise Malformed(path, f"{path} must be 64 lowercase hexadecimal digits (a SHA-256)")
    return text


def _int(obj: Any, key: str, path: str, low: int, high: int) -> int:
    value: int = member(obj, key, int, path)
    if not low <= value <= high:
        raise Malformed(f"{path}.{key}", f"{path}.{key} is {value}, outside {low}..{high}")
    return value


def read_statement(payload: bytes) -> Statement:
    """The statement of a verified envelope, shape checked (specs/nfat-signature.md 6.5)."""
    p = "signature.statement"
    root = parse_json(payload, p)
    if not isinstance(root, dict):
        raise Malformed(p, "the statement must be a JSON object")
    known(root, "_type", STATEMENT_TYPE, p)
    known(root, "predicateType", PREDICATE_TYPE, p)
    pred = member(root, "predicate", dict, p)
    pp = f"{p}.predicate"
    version = member(pred, "format_version", int, pp)
    if version != FORMAT_VERSION:
        raise Malformed(f"{pp}.format_version", f"format_version is {version}; this reader knows {FORMAT_VERSION}",
                         ErrorCode.SIGNATURE_UNSUPPORTED)
    raw_entries = member(pred, "entries", list, pp)
    if not 1 <= len(raw_entries) <= L.MAX_ENTRIES:
        raise Malformed(f"{pp}.entries", f"the statement lists {len(raw_entries)} entries; 1 to {L.MAX_ENTRIES} "
                         "are allowed")
    rows: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, e in enumerate(raw_entries):
        ep = f"{pp}.entries[{i}]"
        row: dict[str, Any] = {}
        for fld in ("name", "backend_id"):
            text = member(e, fld, str, ep)
            raw = text.encode("utf-8")
            if len(raw) > L.ID_FIELD_SIZE or id_problem(raw.ljust(L.ID_FIELD_SIZE, b"\0")) or b"\0" in raw:
                raise Malformed(f"{ep}.{fld}", f"{fld} {text[:40]!r} is not 1 to 32 characters of [A-Za-z0-9_.-]")
            row[fld] = text
        if row["name"] in names:
            raise Malformed(f"{ep}.name", f"entry {row['name']!r} is listed twice")
        names.add(row["name"])
        kind_hex = member(e, "payload_kind", str, ep)
        if len(kind_hex) != 8 or not set(kind_hex) <= _HEX:
            raise Malformed(f"{ep}.payload_kind", "payload_kind must be 8 lowercase hexadecimal digits")
        row["payload_kind"] = bytes.fromhex(kind_hex)
        row["priority"] = _int(e, "priority", ep, -(1 << 31), (1 << 31) - 1)
        row["alignment"] = _int(e, "alignment", ep, L.MIN_ALIGNMENT, L.MAX_ALIGNMENT)
        if not valid_alignment(row["alignment"]):
            raise Malformed(f"{ep}.alignment", f"alignment {row['alignment']} is not a power of two")
        row["record_sha256"] = _hex_digest(member(e, "record_sha256", str, ep), f"{ep}.record_sha256")
        raw_selection = member(e, "selection", dict, ep, required=False)
        row["selection"] = None if raw_selection is None else _selection(raw_selection, f"{ep}.selection")
        golden = member(e, "golden_sha256", str, ep, required=False)
        row["golden_sha256"] = None if golden is None else _hex_digest(golden, f"{ep}.golden_sha256")
        rows.append(row)
    raw_keys = member(pred, "named_data", list, pp)
    if len(raw_keys) > L.MAX_SEGMENTS:
        raise Malformed(f"{pp}.named_data", f"the statement lists {len(raw_keys)} keys, above {L.MAX_SEGMENTS}")
    keys: list[tuple[str, str]] = []
    previous: bytes | None = None
    for i, k in enumerate(raw_keys):
        kp = f"{pp}.named_data[{i}]"
        key = member(k, "key", str, kp)
        raw = key.encode("utf-8")
        if not 1 <= len(raw) <= MAX_TEXT_BYTES:
            raise Malformed(f"{kp}.key", f"a key is 1 to {MAX_TEXT_BYTES} bytes")
        if previous is not None and raw <= previous:
            raise Malformed(f"{kp}.key", "keys must be unique and sorted bytewise")
        previous = raw
        keys.append((key, _hex_digest(member(k, "record_sha256", str, kp), f"{kp}.record_sha256")))
    subjects = member(root, "subject", list, p)
    want = [ENTRY_SUBJECT + r["name"] for r in rows] + [NAMED_DATA_SUBJECT + k for k, _ in keys]
    if len(subjects) != len(want):
        raise Malformed(f"{p}.subject", f"the statement has {len(subjects)} subjects; its predicate needs "
                         f"{len(want)}, one per entry then one per named-data key")
    digests: list[str] = []
    for i, (s, name) in enumerate(zip(subjects, want)):
        sp = f"{p}.subject[{i}]"
        got = member(s, "name", str, sp)
        if got != name:
            raise Malformed(f"{sp}.name", f"subject {i} is named {got[:80]!r}, not {name[:80]!r}")
        digests.append(_hex_digest(member(member(s, "digest", dict, sp), "sha256", str, f"{sp}.digest"),
                                   f"{sp}.digest.sha256"))
    entries = tuple(SignedEntry(r["name"], r["backend_id"], r["payload_kind"], r["priority"], r["alignment"],
                                d, r["record_sha256"], r["selection"], r["golden_sha256"])
                    for r, d in zip(rows, digests))
    signed_keys = tuple(SignedKey(k, d, rec) for (k, rec), d in zip(keys, digests[len(rows):]))
    return Statement(entries, signed_keys)


def _words(obj: Any, key: str, path: str, *, required: bool = True) -> tuple[str, ...] | None:
    raw = member(obj, key, list, path, required=required)
    if raw is None:
        return None
    for i, w in enumerate(raw):
        if not isinstance(w, str) or not 1 <= len(w.encode("utf-8")) <= MAX_TEXT_BYTES:
            raise Malformed(f"{path}.{key}[{i}]", f"{path}.{key}[{i}] must be a string of 1 to {MAX_TEXT_BYTES} bytes")
    return tuple(raw)


def _accelerator_json(a: AcceleratorRequirement) -> dict[str, Any]:
    """One accelerator requirement of `selection`; `device` and `capabilities` (manifest revision 4)
    only when stated, so statements of entries without them are unchanged."""
    out: dict[str, Any] = {"kind": a.kind, "targets": [[t.match, t.major, t.minor] for t in a.targets],
                           "min_memory_bytes": min(a.min_memory_bytes, _MAX_JSON_INT)}
    if a.device:
        out["device"] = a.device
    if a.capabilities:
        out["capabilities"] = list(a.capabilities)
    return out


def _number(value: Any, path: str, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise Malformed(path, f"{path} must be an integer from 0 to {high}")
    return value


def _selection(obj: dict[str, Any], path: str) -> SignedSelection:
    """The `selection` member of a statement's entry, shape checked (section 3.2). Words are taken
    as they are: a word outside the device-profile vocabulary is a requirement no device meets,
    as in the manifest."""
    accelerators = []
    for i, a in enumerate(member(obj, "accelerators", list, path)):
        ap = f"{path}.accelerators[{i}]"
        kind = member(a, "kind", str, ap)
        targets = []
        for j, t in enumerate(member(a, "targets", list, ap)):
            tp = f"{ap}.targets[{j}]"
            if not isinstance(t, list) or len(t) != 3:
                raise Malformed(tp, f"{tp} must be [match, major, minor]")
            targets.append(VersionConstraint(_number(t[0], f"{tp}[0]", 255), _number(t[1], f"{tp}[1]", _U32),
                                             _number(t[2], f"{tp}[2]", _U32)))
        memory = _number(member(a, "min_memory_bytes", int, ap), f"{ap}.min_memory_bytes", _MAX_JSON_INT)
        device = member(a, "device", str, ap, required=False) or ""
        accelerators.append(AcceleratorRequirement(kind, tuple(targets), memory, device,
                                                   _words(a, "capabilities", ap, required=False) or ()))
    abi = member(obj, "backend_abi", list, path, required=False)
    backend_abi = None
    if abi is not None:
        if len(abi) != 2:
            raise Malformed(f"{path}.backend_abi", f"{path}.backend_abi must be [min, max]")
        backend_abi = AbiRange(_number(abi[0], f"{path}.backend_abi[0]", _U32),
                               _number(abi[1], f"{path}.backend_abi[1]", _U32))
    os_, arch, features = (_words(obj, k, path) or () for k in ("os", "arch", "cpu_features"))
    memory = _number(member(obj, "min_memory_bytes", int, path), f"{path}.min_memory_bytes", _MAX_JSON_INT)
    backends = _words(obj, "executorch_backends", path, required=False)
    cores = _words(obj, "cpu_cores", path, required=False) or ()
    min_core = member(obj, "min_core", str, path, required=False)
    if min_core is not None and not 1 <= len(min_core.encode("utf-8")) <= MAX_TEXT_BYTES:
        raise Malformed(f"{path}.min_core", f"{path}.min_core must be a string of 1 to {MAX_TEXT_BYTES} bytes")
    soc = _words(obj, "soc", path, required=False) or ()
    requires = Requirements(os_, arch, features, tuple(accelerators), memory, backend_abi, cores, min_core, soc)
    return SignedSelection(requires, backends)
