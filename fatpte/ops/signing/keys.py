"""Keys of signed containers (specs/nfat-signature.md section 5): the trusted public keys a
verifier reads, the private key a signer reads, key ids, and the two signature algorithms (ECDSA
P-256 with SHA-256, Ed25519) through `cryptography`, imported only by the functions that need it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from fatpte.errors import ErrorCode, FatpteError
from fatpte.fileio.mapping import read_regular

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes


# A PEM public key is under 200 bytes; a file larger than this is not one (section 7).
MAX_KEY_FILE_SIZE: Final = 64 << 10
_BEGIN: Final = "-----BEGIN PUBLIC KEY-----"
_END: Final = "-----END PUBLIC KEY-----"
_WHITESPACE: Final = " \t\r\n"
# In a SubjectPublicKeyInfo, SEQUENCE { SEQUENCE { algorithm OID, parameters }, BIT STRING }, an
# ECDSA key has this algorithm and, as parameters, the namedCurve OID of P-256 (or a SEQUENCE of
# explicit parameters, which are refused).
_EC_PUBLIC_KEY: Final = bytes.fromhex("2a8648ce3d0201")  # 1.2.840.10045.2.1
_PRIME256V1: Final = bytes.fromhex("2a8648ce3d030107")  # 1.2.840.10045.3.1.7


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


def check_supported(key: Any, path: str) -> None:
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
    """A key file's bytes: a regular file (a FIFO or /dev/zero is refused before a byte is read)
    of at most MAX_KEY_FILE_SIZE bytes (specs/nfat-signature.md section 5.4)."""
    data = read_regular(path, MAX_KEY_FILE_SIZE, "the key")
    if len(data) > MAX_KEY_FILE_SIZE:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(path)} is larger than {MAX_KEY_FILE_SIZE} bytes: "
                          "not a key file", source=os.fspath(path), field="key")
    return data


def load_private_key(path: str | os.PathLike[str], password: bytes | None = None) -> PrivateKeyTypes:
    """An ECDSA P-256 or Ed25519 private key from a PEM file (PKCS#8 or SEC1)."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    data = _read_key_file(path)
    try:
        key = serialization.load_pem_private_key(data, password)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(path)} is not a PEM private key: {exc}",
                          source=os.fspath(path), field="key") from None
    check_supported(key, os.fspath(path))
    return key


def public_key_der(data: bytes, path: str) -> bytes:
    """The DER SubjectPublicKeyInfo of a trusted-key file, by the rules of specs/nfat-signature.md
    section 5.4: exactly one PEM block, labelled PUBLIC KEY, with nothing but whitespace around
    it; its body standard base64; the key Ed25519 or P-256 on its named curve (explicit curve
    parameters are refused, as RFC 5480 forbids them). Anything else: INVALID_ARGUMENT."""
    import binascii
    import re

    def refuse(why: str) -> FatpteError:
        return FatpteError(ErrorCode.INVALID_ARGUMENT, f"{path} is not a trusted-key file: {why}", source=path,
                           field="key")

    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise refuse("it holds bytes that are not ASCII") from None
    lines = text.strip(_WHITESPACE).splitlines()
    if not lines or lines[0] != _BEGIN or lines[-1] != _END:
        raise refuse("it must hold one PEM block, -----BEGIN PUBLIC KEY----- to -----END PUBLIC KEY-----, and "
                     "nothing else (no certificate, no private key, no other text)")
    body = lines[1:-1]
    if not all(re.fullmatch(r"[A-Za-z0-9+/=]+", line) for line in body):
        raise refuse("a line of the PEM block is not base64 (or a second block follows the first)")
    try:
        der = binascii.a2b_base64("".join(body).encode("ascii"), strict_mode=True)
    except binascii.Error as exc:
        raise refuse(f"the PEM block is not standard base64: {exc}") from None
    if _ec_parameters(der) not in (None, (0x06, _PRIME256V1)):
        raise refuse("an ECDSA key must name its curve, P-256 (prime256v1); explicit curve parameters are "
                     "refused (RFC 5480): convert it with `openssl ec -pubin -in KEY -param_enc named_curve`")
    return der


def _ec_parameters(der: bytes) -> tuple[int, bytes] | None:
    """The tag and content of the algorithm parameters of an ECDSA SubjectPublicKeyInfo; None for
    another algorithm or DER too damaged to tell (which the key parser then refuses)."""

    def element(pos: int, end: int) -> tuple[int, int, int] | None:  # tag, content start, content end
        if pos + 2 > end:
            return None
        tag, size, pos = der[pos], der[pos + 1], pos + 2
        if size & 0x80:
            n = size & 0x7F
            if not 1 <= n <= 4 or pos + n > end:
                return None
            size, pos = int.from_bytes(der[pos:pos + n], "big"), pos + n
        return (tag, pos, pos + size) if pos + size <= end else None

    outer = element(0, len(der))
    algorithm = None if outer is None or outer[0] != 0x30 else element(outer[1], outer[2])
    oid = None if algorithm is None or algorithm[0] != 0x30 else element(algorithm[1], algorithm[2])
    if oid is None or oid[0] != 0x06 or der[oid[1]:oid[2]] != _EC_PUBLIC_KEY:
        return None
    assert algorithm is not None
    params = element(oid[2], algorithm[2])
    return (-1, b"") if params is None else (params[0], der[params[1]:params[2]])


def load_public_key(path: str | os.PathLike[str]) -> TrustedKey:
    """An ECDSA P-256 or Ed25519 public key from a trusted-key file (public_key_der). Its id is
    that of the key, whatever the file's form (a compressed point gives the same id)."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    where = os.fspath(path)
    der = public_key_der(_read_key_file(path), where)
    try:
        key = serialization.load_der_public_key(der)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:  # an algorithm OID no library knows
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{where} is not a PEM public key: {exc}",
                          source=where, field="key") from None
    check_supported(key, where)
    return TrustedKey(key_id(key), key, where)


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



def sign_bytes(key: PrivateKeyTypes, message: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(message)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    # RFC 6979 nonces: the same container and key give the same bytes, as `pack` does.
    return key.sign(message, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))


def verifies(key: PublicKeyTypes, signature: bytes, message: bytes) -> bool:
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

