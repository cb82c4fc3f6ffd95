"""`fatpte-run --require-signature --trusted-key K` (specs/nfat-signature.md section 6): the
loader verifies the signature before it selects, hashes the selected entry and its named data
before its bytes reach a backend, and nothing else; an unsigned container, an untrusted key or
changed bytes stop the run with exit 5 before a backend is called. Runs on the release build and
under ASan + UBSan (a missing build is skipped with the reason; `make test` builds both and fails
on a missing one: tests/builds.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

import fatpte
from fatpte.fileio.checksum import crc32c
from fatpte.ops import signing
from tests.loader.test_cpp_dispatch import close, outputs, pack_dense
from tests.support.vectors import reseal

pytestmark = pytest.mark.loader_build("fatpte-run", "backends")  # `build`: tests/loader/conftest.py


@pytest.fixture
def packed(tmp_path: Path) -> tuple[Path, Path, list[float]]:
    return pack_dense(tmp_path)


def _key(tmp: Path, name: str) -> tuple[ed25519.Ed25519PrivateKey, Path]:
    key = ed25519.Ed25519PrivateKey.generate()
    pub = tmp / f"{name}.pub.pem"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    return key, pub


def run(build: Path, container: Path, inp: Path, key: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(build / "fatpte-run"), str(container), "--input", str(inp), "--backend-path",
                           str(build / "backends"), "--require-signature", "--trusted-key", str(key), *args],
                          check=False, capture_output=True, text=True, timeout=120)


def _flip_payload(path: Path, name: str, dest: Path) -> None:
    """Change one byte of entry `name`'s payload and recompute its CRC32C: damage a checksum
    cannot see, as an attacker would leave it."""
    data = bytearray(path.read_bytes())
    with fatpte.open(path) as c:
        e = c.entry(name)
        at = c.header.header_size + e.index * c.header.entry_size + 88
    data[e.offset + e.size // 2] ^= 1
    data[at : at + 4] = crc32c(bytes(data[e.offset : e.end])).to_bytes(4, "little")
    assert reseal(data)
    dest.write_bytes(data)
    with fatpte.open(dest):  # the header and tables are sound: only the signature can tell
        pass


def test_a_signed_container_runs_as_an_unsigned_one(build: Path, packed: tuple[Path, Path, list[float]],
                                                    tmp_path: Path) -> None:
    container, inp, reference = packed
    key, pub = _key(tmp_path, "k")
    signed = signing.sign(container, key, tmp_path / "signed.nfat")
    r = run(build, signed, inp, pub, "--explain")
    assert r.returncode == 0, r.stderr
    ran, values = outputs(r.stdout)
    assert close(values, reference)
    chosen = ran.split()[1]
    assert f"signature: entry '{chosen}' and its named data hash as signed" in r.stdout


@pytest.mark.parametrize("case", ["unsigned", "untrusted", "tampered"])
def test_refused_before_any_backend_runs(build: Path, packed: tuple[Path, Path, list[float]], tmp_path: Path,
                                         case: str) -> None:
    container, inp, _ = packed
    key, pub = _key(tmp_path, "k")
    _, stranger = _key(tmp_path, "stranger")
    signed = signing.sign(container, key, tmp_path / "signed.nfat")
    chosen = outputs(run(build, signed, inp, pub).stdout)[0].split()[1]
    target, trusted, code = {
        "unsigned": (container, pub, "E1301"),
        "untrusted": (signed, stranger, "E1305"),
        "tampered": (tmp_path / "tampered.nfat", pub, "E1311"),
    }[case]
    if case == "tampered":
        _flip_payload(signed, chosen, target)
    r = run(build, target, inp, trusted)
    assert r.returncode == 5, r.stderr
    assert code in r.stderr and "ran:" not in r.stdout


def test_only_the_selected_entry_is_hashed(build: Path, packed: tuple[Path, Path, list[float]],
                                           tmp_path: Path) -> None:
    """Bytes of an entry the device does not select are not read: damage there does not stop the
    run (fatpte verify, which reads everything, reports it)."""
    from fatpte.ops.edit import add

    container, inp, reference = packed
    # An entry no host selects, with bytes of its own (the example's two entries share theirs).
    spare = fatpte.Specialization("portable", bytes(range(256)) * 4, name="spare", priority=-100,
                                  requires={"os": ["ios"]})
    add(container, tmp_path / "more.nfat", [spare])
    key, pub = _key(tmp_path, "k")
    signed = signing.sign(tmp_path / "more.nfat", key, tmp_path / "signed.nfat")
    _flip_payload(signed, "spare", tmp_path / "other.nfat")
    r = run(build, tmp_path / "other.nfat", inp, pub)
    assert r.returncode == 0, r.stderr
    assert close(outputs(r.stdout)[1], reference)
    assert not signing.verify(tmp_path / "other.nfat", signing.load_trusted_keys([pub])).ok


def test_a_fallback_is_verified_before_it_is_loaded(build: Path, packed: tuple[Path, Path, list[float]],
                                                    tmp_path: Path) -> None:
    """When the chosen entry's library is missing, the next choice is hashed, then loaded."""
    container, inp, reference = packed
    key, pub = _key(tmp_path, "k")
    signed = signing.sign(container, key, tmp_path / "signed.nfat")
    only = tmp_path / "backends"
    only.mkdir()
    shutil.copy(build / "backends" / "libfatpte_backend_dense_ref.so", only)
    r = subprocess.run([str(build / "fatpte-run"), str(signed), "--input", str(inp), "--backend-path", str(only),
                        "--require-signature", "--trusted-key", str(pub), "--explain"],
                       check=False, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert outputs(r.stdout)[0].startswith("ran: dense_ref")
    assert "signature: entry 'dense_ref' and its named data hash as signed" in r.stdout
    assert close(outputs(r.stdout)[1], reference)


def _opened_libraries(proc_stderr: str) -> set[str]:
    """The files the dynamic loader opened, from LD_DEBUG=files (`file=NAME [0];  ...`)."""
    return {line.split("file=", 1)[1].split()[0] for line in proc_stderr.splitlines()
            if "file=" in line and "generating link map" in line}


@pytest.mark.loader_build("fatpte-run", "backends", only="release")
def test_libcrypto_is_opened_only_to_verify(build: Path, packed: tuple[Path, Path, list[float]],
                                            tmp_path: Path) -> None:
    """libfatpte links no OpenSSL: a run that checks no signature never maps libcrypto; a run with
    --require-signature opens it to load the trusted key (src/signature/libcrypto.hpp)."""
    container, inp, reference = packed
    key, pub = _key(tmp_path, "k")
    signed = signing.sign(container, key, tmp_path / "signed.nfat")
    env = {"LD_DEBUG": "files", "PATH": "/usr/bin:/bin"}
    plain = subprocess.run([str(build / "fatpte-run"), str(signed), "--input", str(inp), "--backend-path",
                            str(build / "backends")], check=False, capture_output=True, text=True, timeout=120,
                           env=env)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert close(outputs(plain.stdout)[1], reference)
    opened = _opened_libraries(plain.stderr)
    assert opened, "LD_DEBUG=files printed no link map: the check would prove nothing"
    assert not [name for name in opened if "libcrypto" in name], opened
    verified = subprocess.run([str(build / "fatpte-run"), str(signed), "--input", str(inp), "--backend-path",
                               str(build / "backends"), "--require-signature", "--trusted-key", str(pub)],
                              check=False, capture_output=True, text=True, timeout=120, env=env)
    assert verified.returncode == 0, verified.stderr[-2000:]
    assert [name for name in _opened_libraries(verified.stderr) if "libcrypto" in name]
