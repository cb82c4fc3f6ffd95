"""Signed containers (specs/nfat-signature.md): `sign`, `verify`, `unsign`.

A signature is a Sigstore bundle (JSON) holding a DSSE envelope whose payload is an in-toto
Statement v1. The statement lists, for every entry, its name, backend id, payload kind, priority,
alignment, the SHA-256 of its payload (a subject), the SHA-256 of the canonical encoding of its
manifest record (fatpte.manifest.canonical) and the digest of its golden calls, or of their
absence (revision 3: a signed load makes only golden calls the signature vouches for); and for
every named-data key the SHA-256 of its bytes (a subject) and of its record. Nothing in it depends on where a region lies, so a thinned
container, whose tables and manifest are rewritten, still matches the statement of the container
it came from: `verify` reports the entries that are absent as thinned.

Rooms, lowest first: `keys` (trusted and private keys, key ids, the two algorithms), `bundle`
(the Sigstore bundle and its DSSE envelope, written and read under strict, bounded JSON),
`statement` (the in-toto statement, built by hashing a container and read back), `relayout`
(moving a container's regions to add or remove the signature slot), then `writing` (`sign`,
`unsign`) and `verification` (`verify`). Every input is bounded (section 7), so a hostile bundle
costs work linear in its size; checks run in the order of section 6, which the C++ loader follows.

May use: fatpte.device (selection, to replay it for the downgrade check), fatpte.container,
fatpte.manifest, fatpte.format, fatpte.fileio, fatpte.errors, and `cryptography` (imported only by
the functions that sign or check a signature).
"""

from fatpte.ops.signing.bundle import (
    BUNDLE_MEDIA_TYPE,
    DETACHED_SUFFIX,
    MAX_HINT,
    MAX_JSON_DEPTH,
    MAX_SIG_BASE64,
    MAX_SIGNATURES,
    PAYLOAD_TYPE,
    Envelope,
    bundle_for,
    pae,
    parse_json,
    read_bundle,
)
from fatpte.ops.signing.keys import TrustedKey, key_id, load_private_key, load_public_key, load_trusted_keys
from fatpte.ops.signing.statement import (
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    SignedEntry,
    SignedKey,
    Statement,
    read_statement,
    statement_of,
)
from fatpte.ops.signing.verification import (
    EntryVerdict,
    VerifyReport,
    check_bytes,
    check_downgrade,
    check_envelope,
    check_records,
    verify,
    verify_buffer,
    verify_container,
)
from fatpte.ops.signing.writing import sign, unsign

__all__ = [
    "BUNDLE_MEDIA_TYPE", "DETACHED_SUFFIX", "MAX_HINT", "MAX_JSON_DEPTH", "MAX_SIGNATURES", "MAX_SIG_BASE64",
    "PAYLOAD_TYPE", "PREDICATE_TYPE", "STATEMENT_TYPE", "EntryVerdict", "Envelope", "SignedEntry", "SignedKey",
    "Statement", "TrustedKey", "VerifyReport", "bundle_for", "check_bytes", "check_downgrade", "check_envelope", "check_records",
    "key_id", "load_private_key", "load_public_key", "load_trusted_keys", "pae", "parse_json", "read_bundle",
    "read_statement", "sign", "statement_of", "unsign", "verify", "verify_buffer", "verify_container",
]
