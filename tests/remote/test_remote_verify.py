"""`fatpte verify URL` (issue 32, Why 5: it failed with `E0801 ... No such file or directory`): the
same verdicts, codes and JSON as verify of the local file, from the bytes it needs only, counted
from nginx's access log: the prefix, the signature region, then (only when a trusted key signed
it) the payloads and named data, near ones in one request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import fatpte
from fatpte.errors import ErrorCode
from fatpte.fileio.remote import PREFIX_SIZE
from fatpte.ops import signing
from fatpte.ops.verify_remote import verify_remote
from tests.remote.servers import Nginx


def fatpte_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", *args], capture_output=True, text=True, check=False)


def _pem(folder: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = folder / f"{name}.pem", folder / f"{name}.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


class Signed(NamedTuple):
    nginx: Nginx
    www: Path
    public: Path  # the key that signed
    other: Path  # a key that did not


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Signed:
    www, keys = tmp_path_factory.mktemp("www"), tmp_path_factory.mktemp("keys")
    private, public = _pem(keys, "signer")
    _, other = _pem(keys, "other")
    named = {f"w{i}": os.urandom(64) for i in range(3)}
    path = fatpte.pack([fatpte.Specialization("portable", os.urandom(1000), named_data=list(named)),
                        fatpte.Specialization("xnnpack", os.urandom(300_000), priority=1)],
                       www / "signed.nfat", named_data=named)
    signing.sign(path, private, None)
    tampered = bytearray(path.read_bytes())
    with fatpte.open(path) as c:
        at = c.entry("xnnpack").offset + 200_000
    tampered[at] ^= 1  # a payload byte, past the prefix: its CRC32C and its SHA-256 both change
    (www / "tampered.nfat").write_bytes(tampered)
    server = Nginx(www, tmp_path_factory.mktemp("nginx"))
    yield Signed(server, www, public, other)  # type: ignore[misc]
    server.close()


def _same_as_local(signed: Signed, name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """verify of the URL and of the file: same exit, same JSON but the path; the URL's requests."""
    url = signed.nginx.url(name)
    mark = signed.nginx.mark()
    remote = fatpte_cli("verify", url, *args, "--json")
    log = signed.nginx.requests(mark)
    local = fatpte_cli("verify", str(signed.www / name), *args, "--json")
    assert remote.returncode == local.returncode, remote.stderr
    a, b = json.loads(remote.stdout), json.loads(local.stdout)
    assert (a.pop("path"), b.pop("path")) == (url, str(signed.www / name))
    assert a == b
    return remote, [f"{r.range} {r.body_bytes}" for r in log]


def test_verify_of_a_url_fetches_the_signature_then_what_it_hashes(signed: Signed) -> None:
    done, log = _same_as_local(signed, "signed.nfat", "--key", str(signed.public))
    assert done.returncode == 0, done.stderr
    with fatpte.open(signed.www / "signed.nfat") as c:
        h = c.header
        xnnpack = c.entry("xnnpack")
        segments = [(s.offset, s.end) for s in c.segments]
    assert h.signature_offset > PREFIX_SIZE and segments[0][0] > PREFIX_SIZE
    assert 0 <= segments[0][0] - xnnpack.end < 64 and xnnpack.offset < PREFIX_SIZE  # the segments follow it
    assert log == [f"bytes=0-{PREFIX_SIZE - 1} {PREFIX_SIZE}",
                   f"bytes={h.signature_offset}-{h.signature_offset + h.signature_size - 1} {h.signature_size}",
                   # the payload's bytes past the prefix and the three segments after it: one request
                   f"bytes={PREFIX_SIZE}-{segments[-1][1] - 1} {segments[-1][1] - PREFIX_SIZE}"]


def test_an_untrusted_signature_fetches_no_payload(signed: Signed) -> None:
    done, log = _same_as_local(signed, "signed.nfat", "--key", str(signed.other))
    assert done.returncode == 5
    assert json.loads(done.stdout)["findings"][0]["code"] == ErrorCode.SIGNATURE_UNTRUSTED.tag
    with fatpte.open(signed.www / "signed.nfat") as c:
        h = c.header
    assert log == [f"bytes=0-{PREFIX_SIZE - 1} {PREFIX_SIZE}",
                   f"bytes={h.signature_offset}-{h.signature_offset + h.signature_size - 1} {h.signature_size}"]


def test_a_tampered_payload_at_a_url_is_found(signed: Signed) -> None:
    done, _ = _same_as_local(signed, "tampered.nfat", "--key", str(signed.public))
    assert done.returncode == 5
    codes = {f["code"] for f in json.loads(done.stdout)["findings"]}
    assert codes == {ErrorCode.SIGNED_PAYLOAD_MISMATCH.tag}


def test_a_detached_signature_for_a_url(signed: Signed, tmp_path: Path) -> None:
    plain = fatpte.pack([fatpte.Specialization("portable", os.urandom(200_000))], signed.www / "plain.nfat")
    keys = tmp_path / "keys"
    keys.mkdir()
    private, public = _pem(keys, "k")
    detached = signing.sign(plain, private, tmp_path / "plain.nfat.sig", detached=True)
    with fatpte.open(plain) as c:
        assert c.header.signature_size == 0
    trusted = signing.load_trusted_keys([public])
    report = verify_remote(signed.nginx.url("plain.nfat"), trusted, signature=detached)
    assert report.ok and [e.status for e in report.entries] == ["verified"]
    assert report.signature == str(detached)
    unsigned = verify_remote(signed.nginx.url("plain.nfat"), trusted)  # no FILE.sig is looked for beside a URL
    assert [f.code for f in unsigned.findings] == [ErrorCode.SIGNATURE_REQUIRED]
