"""Signed containers (specs/nfat-signature.md): `sign`, `verify`, `unsign`.

A signature is a Sigstore bundle (JSON) holding a DSSE envelope whose payload is an in-toto
Statement v1. The statement lists, for every entry, its name, backend id, payload kind, priority,
alignment, the SHA-256 of its payload (a subject) and the SHA-256 of the canonical encoding of its
manifest record (fatpte.manifest.canonical); and for every named-data key the SHA-256 of its bytes
(a subject) and of its record. Nothing in it depends on where a region lies, so a thinned
container, whose tables and manifest are rewritten, still matches the statement of the container
it came from: `verify` reports the entries that are absent as thinned.

The bundle lives in the container's signature region (specs/nfat.md section 4.9) or in a detached
file beside it (`model.nfat.sig`). Keys are ECDSA P-256 (SHA-256) or Ed25519, through
`cryptography`, imported only by the functions that sign or check a signature.

Every input is bounded: the bundle by MAX_SIGNATURE_SIZE, its JSON by MAX_JSON_DEPTH, the
signatures by MAX_SIGNATURES and MAX_SIG_BASE64, so a hostile bundle costs work linear in its
size and no more. Checks run in the order of specs/nfat-signature.md section 6, which the C++
loader follows too: the first error is the same code, offset and field in both.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from fatpte.container.reader import Container
from fatpte.container.reader import open as open_container
from fatpte.container.validation import validate_buffer
from fatpte.errors import ErrorCode, FatpteError, Finding, finding
from fatpte.fileio.atomic import atomic_output, io_error
from fatpte.fileio.buffers import BytesLike
from fatpte.fileio.checksum import crc32c
from fatpte.fileio.mapping import releasable, release_pages
from fatpte.fileio.streams import Advance, Progress, copy_range, progress_counter
from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads
from fatpte.format import layout as L
from fatpte.format.codec import encode
from fatpte.format.structure import id_problem, valid_alignment
from fatpte.manifest.canonical import entry_record, named_data_record

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes

# The formats this module reads and writes (specs/nfat-signature.md section 3).
BUNDLE_MEDIA_TYPE: Final = "application/vnd.dev.sigstore.bundle.v0.3+json"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://fatpte.dev/nfat-signature/v1"
FORMAT_VERSION: Final = L.VERSION_2
ENTRY_SUBJECT: Final = "entries/"
NAMED_DATA_SUBJECT: Final = "named_data/"
DETACHED_SUFFIX: Final = ".sig"

# Limits (specs/nfat-signature.md section 7).
MAX_JSON_DEPTH: Final = 16  # the documents need 5 levels
MAX_SIGNATURES: Final = 16  # signatures in one envelope
MAX_SIG_BASE64: Final = 512  # an ECDSA P-256 DER signature is at most 72 bytes, Ed25519 64
MAX_HINT: Final = 256  # verificationMaterial.publicKey.hint
MAX_TEXT_BYTES: Final = 4096  # a named-data key, as in the manifest
_HEX = frozenset("0123456789abcdef")
# Bytes hashed per call: progress between, the GIL released during, and the pages read released
# after each (a mapped file's pages stay resident once read: verifying 3 GiB held 3 GiB).
_HASH_STEP = 8 << 20

_SLOT = L.RECORDS["v2_signature_slot"]
_SLOT_AT = {name: L.SIGNATURE_SLOT_OFFSET + off for name, (off, _) in _SLOT.offsets.items()}


# ---------------------------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------------------------


class TrustedKey(NamedTuple):
    """A public key a verifier trusts, with the id bundles name it by (its `hint`)."""

    key_id: str  # SHA-256 of the DER SubjectPublicKeyInfo, lowercase hex
    key: PublicKeyTypes
    source: str


def key_id(public_key: PublicKeyTypes) -> str:
    """The id of a public key: the SHA-256 of its DER SubjectPublicKeyInfo, in lowercase hex."""
    from cryptography.hazmat.primitives import serialization

    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _supported(key: Any, path: str) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)) and isinstance(
            key.curve, ec.SECP256R1):
        return
    raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                      f"{path} holds a {type(key).__name__.lstrip('_')} key; fatpte signs with ECDSA P-256 or Ed25519",
                      source=path, field="key")


def _read_key_file(path: str | os.PathLike[str]) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20)
    except OSError as exc:
        raise io_error(exc, path, "cannot read the key") from exc


def load_private_key(path: str | os.PathLike[str], password: bytes | None = None) -> PrivateKeyTypes:
    """An ECDSA P-256 or Ed25519 private key from a PEM file (PKCS#8 or SEC1)."""
    from cryptography.hazmat.primitives import serialization

    data = _read_key_file(path)
    try:
        key = serialization.load_pem_private_key(data, password)
    except (ValueError, TypeError) as exc:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(path)} is not a PEM private key: {exc}",
                          source=os.fspath(path), field="key") from None
    _supported(key, os.fspath(path))
    return key


def load_public_key(path: str | os.PathLike[str]) -> TrustedKey:
    """An ECDSA P-256 or Ed25519 public key from a PEM file (SubjectPublicKeyInfo)."""
    from cryptography.hazmat.primitives import serialization

    data = _read_key_file(path)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(path)} is not a PEM public key: {exc}",
                          source=os.fspath(path), field="key") from None
    _supported(key, os.fspath(path))
    return TrustedKey(key_id(key), key, os.fspath(path))


def load_trusted_keys(keys: Iterable[str | os.PathLike[str]] = (),
                      trust_dirs: Iterable[str | os.PathLike[str]] = ()) -> list[TrustedKey]:
    """The public keys in `keys`, then every `*.pem` of each folder of `trust_dirs` in name order."""
    paths = [Path(k) for k in keys]
    for d in trust_dirs:
        folder = Path(d)
        if not folder.is_dir():
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{folder} is not a folder of public keys",
                              source=str(folder), field="trust")
        paths += sorted(folder.glob("*.pem"))
    trusted = [load_public_key(p) for p in paths]
    if not trusted:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "no trusted public key: give --key PUBLIC.pem or --trust DIR",
                          field="key")
    return trusted


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed, binding the payload to its type."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _sign_bytes(key: PrivateKeyTypes, message: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(message)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    # RFC 6979 nonces: the same container and key give the same bytes, as `pack` does.
    return key.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))


def _verifies(key: PublicKeyTypes, signature: bytes, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, message)
        else:
            assert isinstance(key, ec.EllipticCurvePublicKey)
            key.verify(signature, message, ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# The statement
# ---------------------------------------------------------------------------------------------


class SignedEntry(NamedTuple):
    """What the statement says of one entry."""

    name: str
    backend_id: str
    payload_kind: bytes
    priority: int
    alignment: int
    payload_sha256: str
    record_sha256: str


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


def _digests(buf: BytesLike, ranges: Iterable[tuple[int, int]], advance: Advance | None) -> dict[tuple[int, int],
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


def _segment_of(c: Container) -> dict[str, int]:
    m = c.manifest
    return {} if m is None else dict(m.named_data)


def statement_of(c: Container, *, progress: Progress | None = None) -> dict[str, Any]:
    """The in-toto statement that describes container `c` (specs/nfat-signature.md section 4)."""
    if c.version != L.VERSION_2:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "only version 2 containers can be signed; convert it first "
                          "(fatpte convert --to 2)", source=c.source, field="header.version", actual=c.version)
    manifest = c.manifest
    seg_of = _segment_of(c)
    ranges = [(e.offset, e.size) for e in c.entries]
    ranges += [(c.segments[s].offset, c.segments[s].size) for s in seg_of.values()]
    total = sum(size for _, size in set(ranges))
    advance = None if progress is None else progress_counter(progress, total)
    digest = _digests(c.buffer, ranges, advance)
    subjects: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    for e in c.entries:
        me = None if manifest is None else manifest.entry(e.name)
        subjects.append({"name": ENTRY_SUBJECT + e.name, "digest": {"sha256": digest[(e.offset, e.size)]}})
        assert e.payload_kind is not None
        entries.append({"name": e.name, "backend_id": e.backend_id, "payload_kind": e.payload_kind.hex(),
                        "priority": e.priority, "alignment": e.alignment,
                        "record_sha256": hashlib.sha256(entry_record(me)).hexdigest()})
    keys: list[dict[str, Any]] = []
    for key, seg in seg_of.items():
        s = c.segments[seg]
        subjects.append({"name": NAMED_DATA_SUBJECT + key, "digest": {"sha256": digest[(s.offset, s.size)]}})
        layout = None if manifest is None else manifest.layout(key)
        keys.append({"key": key, "record_sha256": hashlib.sha256(named_data_record(key, layout)).hexdigest()})
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": {"format_version": FORMAT_VERSION, "entries": entries, "named_data": keys},
    }


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def bundle_for(statement: dict[str, Any], key: PrivateKeyTypes) -> bytes:
    """A Sigstore bundle (JSON, UTF-8) holding the DSSE envelope of `statement`, signed with `key`."""
    payload = _dumps(statement)
    sig = _sign_bytes(key, pae(PAYLOAD_TYPE, payload))
    bundle = {
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": key_id(key.public_key())}, "tlogEntries": []},
        "dsseEnvelope": {
            "payload": base64.b64encode(payload).decode("ascii"),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": base64.b64encode(sig).decode("ascii"), "keyid": ""}],
        },
    }
    return _dumps(bundle) + b"\n"


# ---------------------------------------------------------------------------------------------
# Writing: sign, unsign
# ---------------------------------------------------------------------------------------------


def _align_up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def _max_alignment(c: Container) -> int:
    aligns = [L.MANIFEST_ALIGNMENT, L.SIGNATURE_ALIGNMENT]
    aligns += [e.alignment for e in c.entries] + [s.alignment for s in c.segments]
    return max(aligns)


def _content_regions(c: Container) -> list[tuple[int, int]]:
    """Every region but the header, tables and signature: (start, end), empty ones included."""
    h = c.header
    out = [(e.offset, e.end) for e in c.entries] + [(s.offset, s.end) for s in c.segments]
    if h.manifest_size:
        out.append((h.manifest_offset, h.manifest_offset + h.manifest_size))
    return out


class _Layout(NamedTuple):
    """A container rewritten with another header size: every region moves by `shift`."""

    header_size: int
    shift: int
    end: int  # end of the last region after the move, before any signature


def _relayout(c: Container, header_size: int) -> _Layout:
    """Move every region by the smallest (growing) or largest (shrinking) multiple of the largest
    alignment in the container that keeps them clear of the resized tables: alignments, order and
    the gaps between regions stay, and shrinking undoes growing exactly."""
    h = c.header
    grow = header_size - h.header_size
    table_end = h.table_end + grow
    align = _max_alignment(c)
    regions = _content_regions(c)
    filled = [start for start, end in regions if end > start]
    first = min(filled, default=h.table_end)
    if grow >= 0:
        shift = _align_up(max(0, table_end - first), align)
    else:
        shift = -((first - table_end) // align * align)
    ends = [end for _, end in regions]
    end = max([h.table_end, *ends]) + shift
    return _Layout(header_size, shift, max(end, table_end))


def _write(c: Container, dest: Path, lay: _Layout, bundle: bytes | None) -> None:
    """Write `c` to `dest` with its header resized and its regions moved as `lay` says, and
    `bundle` as its signature region (or none)."""
    h = c.header
    fd = c.fileno
    if fd is None:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "signing reads from a file, not a buffer", source=c.source)
    signed = bundle is not None
    sig_at = _align_up(lay.end, L.SIGNATURE_ALIGNMENT) if signed else 0
    total = sig_at + len(bundle) if bundle is not None else lay.end
    fields = dict(zip(L.RECORDS["v2_header"].fields, L.RECORDS["v2_header"].codec.unpack_from(c.buffer, 0)))
    fields.update(header_size=lay.header_size, container_size=total, header_checksum=0)
    if h.manifest_size:
        fields["manifest_offset"] = h.manifest_offset + lay.shift
    prefix = bytearray(encode(L.RECORDS["v2_header"], fields, "header"))
    if lay.header_size >= L.SIGNED_HEADER_SIZE:
        slot = {"signature_offset": sig_at, "signature_size": len(bundle) if bundle else 0,
                "signature_checksum": crc32c(bundle) if bundle else 0}
        prefix += encode(_SLOT, slot, "header")
        # Fields of a later revision, past the slot, are kept as they were.
        prefix += bytes(c.buffer[L.SIGNED_HEADER_SIZE:h.header_size])
    entries_at = h.header_size
    ent, seg = L.RECORDS["v2_entry"], L.RECORDS["v2_segment"]
    for e in c.entries:
        rec = bytearray(c.buffer[entries_at + e.index * h.entry_size: entries_at + (e.index + 1) * h.entry_size])
        ent_off = ent.offsets["offset"][0]
        rec[ent_off:ent_off + 8] = (e.offset + lay.shift).to_bytes(8, "little")
        prefix += rec
    segments_at = entries_at + h.entry_count * h.entry_size
    for s in c.segments:
        at = segments_at + s.index * h.segment_entry_size
        rec = bytearray(c.buffer[at: at + h.segment_entry_size])
        rec[seg.offsets["offset"][0]:seg.offsets["offset"][0] + 8] = (s.offset + lay.shift).to_bytes(8, "little")
        prefix += rec
    value = crc32c(prefix)
    prefix[L.HEADER_CHECKSUM_OFFSET:L.HEADER_CHECKSUM_OFFSET + 4] = value.to_bytes(4, "little")
    filled = [start for start, end in _content_regions(c) if end > start]
    body_end = max(h.table_end, lay.end - lay.shift)
    body_start = min(filled, default=body_end)  # what lies before it is zero padding
    old_sig = (h.signature_offset, h.signature_offset + h.signature_size) if h.signature_size else None
    with atomic_output(dest) as out:
        out.write(prefix)
        out.flush()
        ofd = out.fileno()
        pieces = [(body_start, body_end)]
        if old_sig is not None and old_sig[0] < body_end:
            # The old signature sits between other regions: it is not carried over.
            pieces = [(body_start, old_sig[0]), (old_sig[1], body_end)]
        for start, end in pieces:
            if end > start:
                copy_range(fd, start, ofd, start + lay.shift, end - start)
        if bundle is not None:
            os.pwrite(ofd, bundle, sig_at)
        os.ftruncate(ofd, total)


def sign(
    path: str | os.PathLike[str],
    key: str | os.PathLike[str] | PrivateKeyTypes,
    dest: str | os.PathLike[str] | None = None,
    *,
    detached: bool = False,
    progress: Progress | None = None,
) -> Path:
    """Sign the container at `path` with `key` (a PEM file or a loaded key).

    Embedded (the default): writes the container with the bundle in its signature region to `dest`
    (default: `path` itself, replaced atomically); an earlier signature is replaced. Detached:
    writes only the bundle to `dest` (default `path` + ".sig") and leaves the container as it is.
    The container must be valid (`fatpte.validate`): a signature vouches for what it describes.
    """
    private = key if not isinstance(key, (str, os.PathLike)) else load_private_key(key)
    _supported(private, "key")
    with open_container(path) as c:
        report = validate_buffer(c.buffer, source=os.fspath(path))
        if report.first_error is not None:
            raise FatpteError.from_finding(report.first_error, os.fspath(path))
        statement = statement_of(c, progress=progress)
        bundle = bundle_for(statement, private)
        if len(bundle) > L.MAX_SIGNATURE_SIZE:
            raise FatpteError(ErrorCode.SIGNATURE_TOO_LARGE,
                              f"the signature bundle is {len(bundle)} bytes, above the limit of "
                              f"{L.MAX_SIGNATURE_SIZE}", source=os.fspath(path), actual=len(bundle))
        if detached:
            target = Path(dest) if dest is not None else Path(os.fspath(path) + DETACHED_SUFFIX)
            with atomic_output(target) as out:
                out.write(bundle)
            return target
        h = c.header
        if L.V2_HEADER_SIZE < h.header_size < L.SIGNED_HEADER_SIZE:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT,
                              f"header_size is {h.header_size}: its bytes 64..{h.header_size} belong to a later "
                              "revision this fatpte does not know, so it cannot add the signature slot there",
                              source=c.source, field="header.header_size", actual=h.header_size)
        size = max(h.header_size, L.SIGNED_HEADER_SIZE)
        target = Path(dest) if dest is not None else Path(path)
        _write(c, target, _relayout(c, size), bundle)
    return target


def unsign(path: str | os.PathLike[str], dest: str | os.PathLike[str] | None = None) -> Path:
    """Write the container at `path` without its signature region to `dest` (default: `path`).

    A container signed by `sign` gets back the exact bytes it had before; the header returns to 64
    bytes when it held nothing but the signature slot."""
    target = Path(dest) if dest is not None else Path(path)
    with open_container(path) as c:
        h = c.header
        if c.version != L.VERSION_2 or h.signature_size == 0:
            raise FatpteError(ErrorCode.INVALID_ARGUMENT, "the container has no embedded signature",
                              source=c.source, field="header.signature_size")
        size = L.V2_HEADER_SIZE if h.header_size == L.SIGNED_HEADER_SIZE else h.header_size
        _write(c, target, _relayout(c, size), None)
    return target


# ---------------------------------------------------------------------------------------------
# Reading a bundle
# ---------------------------------------------------------------------------------------------


class _Malformed(Exception):
    def __init__(self, field: str, message: str, code: ErrorCode = ErrorCode.SIGNATURE_MALFORMED) -> None:
        super().__init__(message)
        self.field, self.message, self.code = field, message, code


# How a bundle and a statement are read (specs/nfat-signature.md section 2); the C++ reader applies
# the same rules.
SIGNATURE_JSON: Final = JsonRules(max_depth=MAX_JSON_DEPTH, depth_of="values", fractions=False,
                                  integers=(-(1 << 63), (1 << 63) - 1), lone_surrogates=False)


def parse_json(data: bytes, field: str) -> Any:
    """A JSON document by the rules of specs/nfat-signature.md section 2: UTF-8, no duplicate keys,
    integers only (64-bit), no lone surrogates, at most MAX_JSON_DEPTH levels."""
    try:
        return loads(data, SIGNATURE_JSON)
    except JsonRefused as exc:
        if exc.kind == "depth":
            raise _Malformed(field, f"the JSON nests deeper than {MAX_JSON_DEPTH} levels") from None
        raise _Malformed(field, f"not a JSON document of the documented shape: {exc}") from None


def _get(obj: Any, key: str, kind: type | tuple[type, ...], path: str, *, required: bool = True) -> Any:
    if not isinstance(obj, dict):
        raise _Malformed(path, f"{path} must be a JSON object")
    if key not in obj:
        if required:
            raise _Malformed(f"{path}.{key}", f"{path}.{key} is missing")
        return None
    value = obj[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is int)
    if not ok:
        want = {str: "a string", int: "an integer", list: "an array", dict: "an object"}.get(
            kind if isinstance(kind, type) else dict, "a value of another type")
        raise _Malformed(f"{path}.{key}", f"{path}.{key} must be {want}")
    return value


# Standard base64, padded, nothing else (RFC 4648 section 4): the C++ reader applies this rule.
_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"


def _b64(text: str, path: str) -> bytes:
    import re

    if re.fullmatch(_BASE64, text) is None:
        raise _Malformed(path, f"{path} is not standard base64 (A-Z a-z 0-9 + /, padded with =)")
    return binascii.a2b_base64(text.encode("ascii"))


class Envelope(NamedTuple):
    payload_type: str
    payload: bytes
    signatures: tuple[bytes, ...]
    hint: str | None


def read_bundle(data: bytes) -> Envelope:
    """The DSSE envelope of a Sigstore bundle, shape checked (specs/nfat-signature.md 6.2, 6.3)."""
    p = "signature"
    if len(data) > L.MAX_SIGNATURE_SIZE:
        raise _Malformed(p, f"the bundle is {len(data)} bytes, above the limit of {L.MAX_SIGNATURE_SIZE}")
    root = parse_json(data, p)
    if not isinstance(root, dict):
        raise _Malformed(p, "the bundle must be a JSON object")
    media = _get(root, "mediaType", str, p)
    if media != BUNDLE_MEDIA_TYPE:
        raise _Malformed(f"{p}.mediaType", f"mediaType is {media[:80]!r}, not {BUNDLE_MEDIA_TYPE!r}",
                         ErrorCode.SIGNATURE_UNSUPPORTED)
    env = _get(root, "dsseEnvelope", dict, p)
    ep = f"{p}.dsseEnvelope"
    payload_type = _get(env, "payloadType", str, ep)
    if payload_type != PAYLOAD_TYPE:
        raise _Malformed(f"{ep}.payloadType", f"payloadType is {payload_type[:80]!r}, not {PAYLOAD_TYPE!r}",
                         ErrorCode.SIGNATURE_UNSUPPORTED)
    payload = _b64(_get(env, "payload", str, ep), f"{ep}.payload")
    sigs = _get(env, "signatures", list, ep)
    if not 1 <= len(sigs) <= MAX_SIGNATURES:
        raise _Malformed(f"{ep}.signatures", f"the envelope holds {len(sigs)} signatures; 1 to {MAX_SIGNATURES} "
                         "are allowed")
    raw_sigs = []
    for i, s in enumerate(sigs):
        sp = f"{ep}.signatures[{i}]"
        text = _get(s, "sig", str, sp) if isinstance(s, dict) else _get(None, "sig", str, sp)
        if len(text) > MAX_SIG_BASE64:
            raise _Malformed(f"{sp}.sig", f"sig is {len(text)} characters, above the limit of {MAX_SIG_BASE64}")
        raw_sigs.append(_b64(text, f"{sp}.sig"))
    hint = None
    material = _get(root, "verificationMaterial", dict, p, required=False)
    if material is not None:
        public = _get(material, "publicKey", dict, f"{p}.verificationMaterial", required=False)
        if public is not None:
            hint = _get(public, "hint", str, f"{p}.verificationMaterial.publicKey", required=False)
            if hint is not None and len(hint.encode("utf-8", "surrogatepass")) > MAX_HINT:
                raise _Malformed(f"{p}.verificationMaterial.publicKey.hint",
                                 f"hint is {len(hint)} characters, above the limit of {MAX_HINT}")
    return Envelope(payload_type, payload, tuple(raw_sigs), hint)


def _hex_digest(text: Any, path: str) -> str:
    if not isinstance(text, str) or len(text) != 64 or not set(text) <= _HEX:
        raise _Malformed(path, f"{path} must be 64 lowercase hexadecimal digits (a SHA-256)")
    return text


def _int(obj: Any, key: str, path: str, low: int, high: int) -> int:
    value: int = _get(obj, key, int, path)
    if not low <= value <= high:
        raise _Malformed(f"{path}.{key}", f"{path}.{key} is {value}, outside {low}..{high}")
    return value


def read_statement(payload: bytes) -> Statement:
    """The statement of a verified envelope, shape checked (specs/nfat-signature.md 6.5)."""
    p = "signature.statement"
    root = parse_json(payload, p)
    if not isinstance(root, dict):
        raise _Malformed(p, "the statement must be a JSON object")
    kind = _get(root, "_type", str, p)
    if kind != STATEMENT_TYPE:
        raise _Malformed(f"{p}._type", f"_type is {kind[:80]!r}, not {STATEMENT_TYPE!r}",
                         ErrorCode.SIGNATURE_UNSUPPORTED)
    predicate_type = _get(root, "predicateType", str, p)
    if predicate_type != PREDICATE_TYPE:
        raise _Malformed(f"{p}.predicateType", f"predicateType is {predicate_type[:80]!r}, not {PREDICATE_TYPE!r}",
                         ErrorCode.SIGNATURE_UNSUPPORTED)
    pred = _get(root, "predicate", dict, p)
    pp = f"{p}.predicate"
    version = _get(pred, "format_version", int, pp)
    if version != FORMAT_VERSION:
        raise _Malformed(f"{pp}.format_version", f"format_version is {version}; this reader knows {FORMAT_VERSION}",
                         ErrorCode.SIGNATURE_UNSUPPORTED)
    raw_entries = _get(pred, "entries", list, pp)
    if not 1 <= len(raw_entries) <= L.MAX_ENTRIES:
        raise _Malformed(f"{pp}.entries", f"the statement lists {len(raw_entries)} entries; 1 to {L.MAX_ENTRIES} "
                         "are allowed")
    rows: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, e in enumerate(raw_entries):
        ep = f"{pp}.entries[{i}]"
        row: dict[str, Any] = {}
        for fld in ("name", "backend_id"):
            text = _get(e, fld, str, ep)
            raw = text.encode("utf-8")
            if len(raw) > L.ID_FIELD_SIZE or id_problem(raw.ljust(L.ID_FIELD_SIZE, b"\0")) or b"\0" in raw:
                raise _Malformed(f"{ep}.{fld}", f"{fld} {text[:40]!r} is not 1 to 32 characters of [A-Za-z0-9_.-]")
            row[fld] = text
        if row["name"] in names:
            raise _Malformed(f"{ep}.name", f"entry {row['name']!r} is listed twice")
        names.add(row["name"])
        kind_hex = _get(e, "payload_kind", str, ep)
        if len(kind_hex) != 8 or not set(kind_hex) <= _HEX:
            raise _Malformed(f"{ep}.payload_kind", "payload_kind must be 8 lowercase hexadecimal digits")
        row["payload_kind"] = bytes.fromhex(kind_hex)
        row["priority"] = _int(e, "priority", ep, -(1 << 31), (1 << 31) - 1)
        row["alignment"] = _int(e, "alignment", ep, L.MIN_ALIGNMENT, L.MAX_ALIGNMENT)
        if not valid_alignment(row["alignment"]):
            raise _Malformed(f"{ep}.alignment", f"alignment {row['alignment']} is not a power of two")
        row["record_sha256"] = _hex_digest(_get(e, "record_sha256", str, ep), f"{ep}.record_sha256")
        rows.append(row)
    raw_keys = _get(pred, "named_data", list, pp)
    if len(raw_keys) > L.MAX_SEGMENTS:
        raise _Malformed(f"{pp}.named_data", f"the statement lists {len(raw_keys)} keys, above {L.MAX_SEGMENTS}")
    keys: list[tuple[str, str]] = []
    previous: bytes | None = None
    for i, k in enumerate(raw_keys):
        kp = f"{pp}.named_data[{i}]"
        key = _get(k, "key", str, kp)
        raw = key.encode("utf-8")
        if not 1 <= len(raw) <= MAX_TEXT_BYTES:
            raise _Malformed(f"{kp}.key", f"a key is 1 to {MAX_TEXT_BYTES} bytes")
        if previous is not None and raw <= previous:
            raise _Malformed(f"{kp}.key", "keys must be unique and sorted bytewise")
        previous = raw
        keys.append((key, _hex_digest(_get(k, "record_sha256", str, kp), f"{kp}.record_sha256")))
    subjects = _get(root, "subject", list, p)
    want = [ENTRY_SUBJECT + r["name"] for r in rows] + [NAMED_DATA_SUBJECT + k for k, _ in keys]
    if len(subjects) != len(want):
        raise _Malformed(f"{p}.subject", f"the statement has {len(subjects)} subjects; its predicate needs "
                         f"{len(want)}, one per entry then one per named-data key")
    digests: list[str] = []
    for i, (s, name) in enumerate(zip(subjects, want)):
        sp = f"{p}.subject[{i}]"
        got = _get(s, "name", str, sp)
        if got != name:
            raise _Malformed(f"{sp}.name", f"subject {i} is named {got[:80]!r}, not {name[:80]!r}")
        digests.append(_hex_digest(_get(_get(s, "digest", dict, sp), "sha256", str, f"{sp}.digest"),
                                   f"{sp}.digest.sha256"))
    entries = tuple(SignedEntry(r["name"], r["backend_id"], r["payload_kind"], r["priority"], r["alignment"],
                                d, r["record_sha256"]) for r, d in zip(rows, digests))
    signed_keys = tuple(SignedKey(k, d, rec) for (k, rec), d in zip(keys, digests[len(rows):]))
    return Statement(entries, signed_keys)


# ---------------------------------------------------------------------------------------------
# Verifying
# ---------------------------------------------------------------------------------------------


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
            "findings": [f.to_json() for f in self.findings],
        }


def _locate(c: Container, signature: str | os.PathLike[str] | bytes | None) -> tuple[bytes | None, str | None,
                                                                                    int | None]:
    """(bundle bytes, where they came from, file offset for findings)."""
    if isinstance(signature, bytes):
        return signature, "given", None
    if signature is not None:
        try:
            with open(signature, "rb") as f:
                data = f.read(L.MAX_SIGNATURE_SIZE + 1)
        except OSError as exc:
            raise io_error(exc, signature, "cannot read the signature") from exc
        return data, os.fspath(signature), None
    h = c.header
    if c.version == L.VERSION_2 and h.signature_size:
        return bytes(c.buffer[h.signature_offset:h.signature_offset + h.signature_size]), "embedded", \
            h.signature_offset
    if c.source is not None and os.path.isfile(c.source + DETACHED_SUFFIX):
        return _locate(c, c.source + DETACHED_SUFFIX)
    return None, None, None


def check_envelope(env: Envelope, keys: Sequence[TrustedKey]) -> TrustedKey:
    """The trusted key one of the envelope's signatures verifies with (6.4)."""
    message = pae(env.payload_type, env.payload)
    named = [k for k in keys if env.hint is not None and k.key_id == env.hint]
    candidates = named or list(keys)
    for sig in env.signatures:
        for k in candidates:
            if _verifies(k.key, sig, message):
                return k
    path = "signature.dsseEnvelope.signatures[0].sig"
    if named:
        raise _Malformed(path, f"the signature does not verify with the trusted key {named[0].key_id[:16]}... "
                         f"({named[0].source}) it names: the statement was altered after signing, or the "
                         "signature is damaged", ErrorCode.SIGNATURE_INVALID)
    who = f"key {env.hint[:16]}..." if env.hint else "an unnamed key"
    raise _Malformed(path, f"the container is signed by {who}, which is not among the {len(keys)} trusted key(s)",
                     ErrorCode.SIGNATURE_UNTRUSTED)


def _entry_base(c: Container, index: int) -> int:
    return c.header.header_size + index * c.header.entry_size


def check_records(c: Container, st: Statement, sig_offset: int | None,
                  add: Callable[[Finding], None]) -> None:
    """Everything that needs no payload byte (6.6, 6.7, 6.8): which entries are signed, their
    table fields and order, their manifest records, the named-data keys and their records."""
    ent = L.RECORDS["v2_entry"]
    signed = st.entry_index()
    if c.version != L.VERSION_2 or not any(e.name in signed for e in c.entries):
        names = ", ".join(repr(e.name) for e in st.entries[:8])
        add(finding(ErrorCode.SIGNATURE_NOT_FOR_CONTAINER,
                    f"the signature describes entries {names}, none of which this container holds: it belongs "
                    "to another container", offset=sig_offset, field="signature"))
        return
    manifest = c.manifest
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
            add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                        f"entry {e.name!r} comes after {st.entries[last].name!r} in the table but before it in "
                        "the signed statement: the entries were reordered", offset=base, field=f"{p}.name"))
        last = max(last, k)
        assert e.payload_kind is not None
        for fld, have, want in (("backend_id", e.backend_id, s.backend_id),
                                ("payload_kind", e.payload_kind, s.payload_kind),
                                ("priority", e.priority, s.priority), ("alignment", e.alignment, s.alignment)):
            if have != want:
                add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                            f"entry {e.name!r}: {fld} is {have!r}, the signed statement says {want!r}",
                            offset=base + ent.offsets[fld][0], field=f"{p}.{fld}", expected=want, actual=have))
        me = None if manifest is None else manifest.entry(e.name)
        if hashlib.sha256(entry_record(me)).hexdigest() != s.record_sha256:
            at, where = base, f"{p}.name"
            if manifest is not None and me is not None:
                pos = next(i for i, x in enumerate(manifest.entries) if x.name == e.name)
                at, where = c.header.manifest_offset + me.position, f"manifest.entries[{pos}]"
            add(finding(ErrorCode.SIGNED_RECORD_MISMATCH,
                        f"entry {e.name!r}: its manifest record (requirements, program signature, named data, "
                        "digests, provenance, ExecuTorch backends) differs from the signed one",
                        offset=at, field=where))
    keys = {k.key: k for k in st.named_data}
    if manifest is not None:
        for j, (key, _) in enumerate(manifest.named_data):
            where = f"manifest.named_data[{j}]"
            sk = keys.get(key)
            if sk is None:
                add(finding(ErrorCode.NAMED_DATA_NOT_SIGNED, f"named-data key {key!r} is not in the signed "
                            "statement: it was added after signing", offset=c.header.manifest_offset,
                            field=where, actual=key))
            elif hashlib.sha256(named_data_record(key, manifest.layout(key))).hexdigest() != sk.record_sha256:
                add(finding(ErrorCode.SIGNED_NAMED_DATA_MISMATCH,
                            f"named-data key {key!r}: its tensor layout differs from the signed one",
                            offset=c.header.manifest_offset, field=where))


def check_bytes(c: Container, st: Statement, add: Callable[[Finding], None], *,
                names: Sequence[str] | None = None, progress: Progress | None = None) -> set[str]:
    """The SHA-256 of every payload and named-data segment against the statement (6.9, 6.10):
    of every entry, or of the entries `names` and the keys they use. Returns the entries and keys
    whose bytes did not match."""
    signed = st.entry_index()
    keys = {k.key: k for k in st.named_data}
    manifest = c.manifest
    seg_of = _segment_of(c)
    entries = [e for e in c.entries if e.name in signed and (names is None or e.name in names)]
    if names is None:
        wanted_keys = [k for k in seg_of if k in keys]
    else:
        used: set[str] = set()
        for e in entries:
            me = None if manifest is None else manifest.entry(e.name)
            used.update(() if me is None else me.named_data)
        wanted_keys = [k for k in seg_of if k in keys and k in used]
    ranges = [(e.offset, e.size) for e in entries]
    ranges += [(c.segments[seg_of[k]].offset, c.segments[seg_of[k]].size) for k in wanted_keys]
    total = sum(size for _, size in set(ranges))
    digest = _digests(c.buffer, ranges, None if progress is None else progress_counter(progress, total))
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
        seg = c.segments[seg_of[key]]
        got = digest[(seg.offset, seg.size)]
        if got != keys[key].sha256:
            bad.add(NAMED_DATA_SUBJECT + key)
            add(finding(ErrorCode.SIGNED_NAMED_DATA_MISMATCH,
                        f"the bytes of named-data key {key!r} (segment {seg.index}) have SHA-256 {got[:16]}..., the "
                        f"signed statement says {keys[key].sha256[:16]}...: they were changed after signing",
                        offset=seg_at + seg.index * h.segment_entry_size, field=f"segments[{seg.index}].offset"))
    return bad


def verify(
    path: str | os.PathLike[str],
    keys: Sequence[TrustedKey],
    *,
    signature: str | os.PathLike[str] | bytes | None = None,
    progress: Progress | None = None,
) -> VerifyReport:
    """Verify the container at `path` against `keys` (specs/nfat-signature.md section 6).

    The signature is `signature` (a detached file or its bytes) when given, else the embedded one,
    else `path` + ".sig" when that file exists. Every entry present must match the statement;
    signed entries and keys the container no longer holds are reported as thinned. Raises
    FatpteError only when the container cannot be opened (its structural error) or read."""
    if not keys:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, "no trusted public key to verify with", field="key")
    with open_container(path) as c:
        return verify_container(c, keys, signature=signature, progress=progress)


def verify_buffer(buf: BytesLike, keys: Sequence[TrustedKey], *, signature: bytes | None = None,
                  source: str = "<buffer>") -> VerifyReport:
    """`verify` of a container held in memory."""
    with Container.from_buffer(buf, source=source) as c:
        return verify_container(c, keys, signature=signature)


def verify_container(c: Container, keys: Sequence[TrustedKey], *,
                     signature: str | os.PathLike[str] | bytes | None = None,
                     progress: Progress | None = None) -> VerifyReport:
    """`verify` of an open container."""
    source = c.source or "<buffer>"
    data, where, sig_offset = _locate(c, signature)
    if data is None:
        return VerifyReport(source, None, None, findings=(finding(
            ErrorCode.SIGNATURE_REQUIRED, "the container carries no signature region and no detached "
            f"signature ({source}{DETACHED_SUFFIX}) was found", field="signature"),))
    try:
        env = read_bundle(data)
        trusted = check_envelope(env, keys)
        st = read_statement(env.payload)
    except _Malformed as problem:
        return VerifyReport(source, where, None, findings=(finding(
            problem.code, problem.message, offset=sig_offset, field=problem.field),))
    findings: list[Finding] = []
    check_records(c, st, sig_offset, findings.append)
    if any(f.code is ErrorCode.SIGNATURE_NOT_FOR_CONTAINER for f in findings):
        return VerifyReport(source, where, trusted.key_id, findings=tuple(findings))
    bad = check_bytes(c, st, findings.append, progress=progress)
    signed = st.entry_index()
    flagged = {f.field for f in findings}
    verdicts = []
    for e in c.entries:
        if e.name not in signed:
            status = "unsigned"
        elif e.name in bad or any(fl and fl.startswith(f"entries[{e.index}].") for fl in flagged):
            status = "tampered"
        else:
            status = "verified"
        verdicts.append(EntryVerdict(e.name, e.backend_id, status))
    present = {e.name for e in c.entries}
    seg_of = _segment_of(c)
    thinned_keys = tuple(k.key for k in st.named_data if k.key not in seg_of)
    key_problems = {f.actual for f in findings if f.code is ErrorCode.NAMED_DATA_NOT_SIGNED}
    key_problems |= {f.field for f in findings if f.code is ErrorCode.SIGNED_NAMED_DATA_MISMATCH}
    good_keys = sum(1 for j, k in enumerate(seg_of) if NAMED_DATA_SUBJECT + k not in bad
                    and k not in key_problems and f"manifest.named_data[{j}]" not in key_problems)
    return VerifyReport(source, where, trusted.key_id, tuple(verdicts),
                        tuple(s.name for s in st.entries if s.name not in present), good_keys, thinned_keys,
                        tuple(findings))
