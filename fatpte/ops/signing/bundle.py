"""The signature bundle (specs/nfat-signature.md sections 2, 3.1 and 6 steps 2 and 3): a Sigstore
bundle holding a DSSE envelope, written for a statement and read back with every field's shape
checked, under the strict, bounded JSON rules of section 2. `Malformed` is how the readers of the
bundle and the statement report what breaks a rule, before verification turns it into a finding.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from fatpte.errors import ErrorCode
from fatpte.fileio.strict_json import JsonRefused, JsonRules, loads
from fatpte.format import layout as L
from fatpte.ops.signing.keys import key_id, sign_bytes

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

# The formats (specs/nfat-signature.md section 3.1).
BUNDLE_MEDIA_TYPE: Final = "application/vnd.dev.sigstore.bundle.v0.3+json"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
DETACHED_SUFFIX: Final = ".sig"  # what `fatpte sign --detached` names the bundle: FILE.sig

# Limits (specs/nfat-signature.md section 7).
MAX_JSON_DEPTH: Final = 16  # the documents need 5 levels
MAX_SIGNATURES: Final = 16  # signatures in one envelope
MAX_SIG_BASE64: Final = 512  # an ECDSA P-256 DER signature is at most 72 bytes, Ed25519 64
MAX_HINT: Final = 256  # verificationMaterial.publicKey.hint
# The bundle is parsed before its signature is checked, so what an attacker adds to it without a
# key (an ignored member of 30 million zeros) must cost next to nothing: a bundle holds a few
# dozen values (a Sigstore bundle with transparency-log entries a few hundred).
MAX_BUNDLE_VALUES: Final = 4096


class Malformed(Exception):
    """A rule of the bundle or the statement broken, at `field`, with its error code."""

    def __init__(self, field: str, message: str, code: ErrorCode = ErrorCode.SIGNATURE_MALFORMED) -> None:
        super().__init__(message)
        self.field, self.message, self.code = field, message, code



# How a bundle and a statement are read (specs/nfat-signature.md section 2); the C++ reader applies
# the same rules.
SIGNATURE_JSON: Final = JsonRules(max_depth=MAX_JSON_DEPTH, depth_of="values", fractions=False,
                                  integers=(-(1 << 63), (1 << 63) - 1), lone_surrogates=False)
# The bundle, read before anything vouches for it, is also bounded in values (section 7).
BUNDLE_JSON: Final = SIGNATURE_JSON._replace(max_values=MAX_BUNDLE_VALUES)


def parse_json(data: bytes, field: str, rules: JsonRules = SIGNATURE_JSON) -> Any:
    """A JSON document by the rules of specs/nfat-signature.md section 2: UTF-8, no duplicate keys,
    integers only (64-bit), no lone surrogates, at most MAX_JSON_DEPTH levels (and, for the
    bundle, at most MAX_BUNDLE_VALUES values)."""
    try:
        return loads(data, rules)
    except JsonRefused as exc:
        if exc.kind == "depth":
            raise Malformed(field, f"the JSON nests deeper than {MAX_JSON_DEPTH} levels") from None
        raise Malformed(field, f"not a JSON document of the documented shape: {exc}") from None



def member(obj: Any, key: str, kind: type | tuple[type, ...], path: str, *, required: bool = True) -> Any:
    if not isinstance(obj, dict):
        raise Malformed(path, f"{path} must be a JSON object")
    if key not in obj:
        if required:
            raise Malformed(f"{path}.{key}", f"{path}.{key} is missing")
        return None
    value = obj[key]
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is int)
    if not ok:
        want = {str: "a string", int: "an integer", list: "an array", dict: "an object"}.get(
            kind if isinstance(kind, type) else dict, "a value of another type")
        raise Malformed(f"{path}.{key}", f"{path}.{key} must be {want}")
    return value


def known(obj: Any, key: str, want: str, path: str) -> str:
    """A string member that names a format this reader knows: E1302 when missing or not a string,
    E1303 SIGNATURE_UNSUPPORTED when another string (section 3)."""
    got: str = member(obj, key, str, path)
    if got != want:
        raise Malformed(f"{path}.{key}", f"{key} is {got[:80]!r}, not {want!r}", ErrorCode.SIGNATURE_UNSUPPORTED)
    return got


# Standard base64, padded, nothing else (RFC 4648 section 4): the C++ reader applies this rule.
_BASE64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"


def _b64(text: str, path: str) -> bytes:
    import re

    if re.fullmatch(_BASE64, text) is None:
        raise Malformed(path, f"{path} is not standard base64 (A-Z a-z 0-9 + /, padded with =)")
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
        raise Malformed(p, f"the bundle is {len(data)} bytes, above the limit of {L.MAX_SIGNATURE_SIZE}")
    root = parse_json(data, p, BUNDLE_JSON)
    if not isinstance(root, dict):
        raise Malformed(p, "the bundle must be a JSON object")
    known(root, "mediaType", BUNDLE_MEDIA_TYPE, p)
    env = member(root, "dsseEnvelope", dict, p)
    ep = f"{p}.dsseEnvelope"
    payload_type = known(env, "payloadType", PAYLOAD_TYPE, ep)
    payload = _b64(member(env, "payload", str, ep), f"{ep}.payload")
    sigs = member(env, "signatures", list, ep)
    if not 1 <= len(sigs) <= MAX_SIGNATURES:
        raise Malformed(f"{ep}.signatures", f"the envelope holds {len(sigs)} signatures; 1 to {MAX_SIGNATURES} "
                         "are allowed")
    raw_sigs = []
    for i, s in enumerate(sigs):
        sp = f"{ep}.signatures[{i}]"
        text = member(s, "sig", str, sp) if isinstance(s, dict) else member(None, "sig", str, sp)
        if len(text) > MAX_SIG_BASE64:
            raise Malformed(f"{sp}.sig", f"sig is {len(text)} characters, above the limit of {MAX_SIG_BASE64}")
        raw_sigs.append(_b64(text, f"{sp}.sig"))
    hint = None
    material = member(root, "verificationMaterial", dict, p, required=False)
    if material is not None:
        public = member(material, "publicKey", dict, f"{p}.verificationMaterial", required=False)
        if public is not None:
            hint = member(public, "hint", str, f"{p}.verificationMaterial.publicKey", required=False)
            if hint is not None and len(hint.encode("utf-8", "surrogatepass")) > MAX_HINT:
                raise Malformed(f"{p}.verificationMaterial.publicKey.hint",
                                 f"hint is {len(hint)} characters, above the limit of {MAX_HINT}")
    return Envelope(payload_type, payload, tuple(raw_sigs), hint)



def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE's pre-authentication encoding: what is signed, binding the payload to its type."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)



def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def bundle_for(statement: dict[str, Any], key: PrivateKeyTypes) -> bytes:
    """A Sigstore bundle (JSON, UTF-8) holding the DSSE envelope of `statement`, signed with `key`."""
    payload = _dumps(statement)
    sig = sign_bytes(key, pae(PAYLOAD_TYPE, payload))
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

