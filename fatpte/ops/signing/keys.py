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


# A PEM public key is under 200 bytes; a file larger than this is not one.
MAX_KEY_FILE_SIZE: Final = 64 << 10


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
    of at most MAX_KEY_FILE_SIZE bytes."""
    data = read_regular(path, MAX_KEY_FILE_SIZE, "the key")
    if len(data) > MAX_KEY_FILE_SIZE:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(path)} is larger than {MAX_KEY_FILE_SIZE} bytes: "
                          "not a key file", source=os.fspath(path), field="key")
    return data


def load_private_key(path: str | os.PathLike[str], password: bytes | None = None) -> PrivateKeyTypes:
    """An ECDSA P-256 or Ed25519 private key from a PEM file (PKCS#8 or SEC1)."""
    from cryptography.hazmat.primitives import serialization

    data = _read_key_file(path)
    try:
        key = serialization.load_pem_private_key(data, password)
    except (ValueError, TypeError) as exc:
        raise FatpteError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(path)} is not a PEM private key: {exc}",
                          source=os.fspath(path), field="key") from None
    check_supported(key, os.fspath(path))
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
    check_supported(key, os.fspath(path))
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

