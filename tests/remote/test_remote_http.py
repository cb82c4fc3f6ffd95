"""Containers read from nginx over HTTP: what each verb transfers, counted from nginx's access
log, and that it gives what the same verb gives on the local file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fatpte
from fatpte.container.validation import validate as validate_container_rules
from fatpte.fileio.remote import PREFIX_SIZE, RANGE_SIZE
from tests.paths import ROOT
from tests.remote.conftest import BIG_ENTRY, Served
from tests.remote.servers import Nginx

VECTORS = ROOT / "specs" / "vectors"


def fatpte_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})


def same_files(a: Path, b: Path) -> bool:
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(8 << 20), fb.read(8 << 20)
            if x != y:
                return False
            if not x:
                return True


def test_info_of_3_gib_transfers_the_prefix_only(nginx: Nginx, big: Served) -> None:
    url = nginx.url(big.name)
    mark = nginx.mark()
    done = fatpte_cli("info", url, "--json", "--map")
    assert done.returncode == 0, done.stderr
    log = nginx.requests(mark)
    assert [(r.status, r.range, r.body_bytes) for r in log] == [(206, f"bytes=0-{PREFIX_SIZE - 1}", PREFIX_SIZE)]
    remote = json.loads(done.stdout)
    local = json.loads(fatpte_cli("info", str(big.path), "--json", "--map").stdout)
    assert remote.pop("path") == url and local.pop("path") == str(big.path)
    assert remote == local
    assert remote["size"] > 3 << 30


def test_select_of_3_gib_transfers_the_prefix_only(nginx: Nginx, big: Served) -> None:
    url = nginx.url(big.name)
    mark = nginx.mark()
    done = fatpte_cli("select", url, "--device", "host", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["chosen"] == "portable"
    assert [(r.status, r.body_bytes) for r in nginx.requests(mark)] == [(206, PREFIX_SIZE)]
    assert fatpte_cli("select", url, "--device", "nvidia-sm90-server").stdout.strip() == "huge"


def test_extract_of_1_gib_transfers_its_size_and_equals_the_local_extract(nginx: Nginx, big: Served,
                                                                         tmp_path: Path) -> None:
    url = nginx.url(big.name)
    mark = nginx.mark()
    done = fatpte_cli("extract", url, "--name", "big", "-q", "-o", str(tmp_path / "remote.bin"))
    assert done.returncode == 0, done.stderr
    log = nginx.requests(mark)
    payload = sum(r.body_bytes for r in log[1:])
    assert log[0].body_bytes == PREFIX_SIZE
    assert payload == BIG_ENTRY  # at most its size + 1%: exactly its size
    assert sum(r.body_bytes for r in log) <= BIG_ENTRY * 1.01
    assert len(log) == 1 + -(-BIG_ENTRY // RANGE_SIZE)  # ranges of bounded size
    assert all(r.status == 206 for r in log)
    fatpte.extract(big.path, "big", tmp_path / "local.bin")
    assert same_files(tmp_path / "remote.bin", tmp_path / "local.bin")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_thin_fetches_the_entry_and_its_named_data_only(nginx: Nginx, big: Served, tmp_path: Path) -> None:
    url = nginx.url(big.name)
    with fatpte.open(big.path) as c:
        entry = c.entry("portable")
        keys = c.manifest.entry("portable").named_data  # type: ignore[union-attr]
        segments = sorted({c.manifest.keys[k] for k in keys})  # type: ignore[union-attr]
        regions = [(entry.offset, entry.end)] + [(c.segments[s].offset, c.segments[s].end) for s in segments]
    assert entry.offset < PREFIX_SIZE < entry.end and len(regions) == 2  # the payload starts in the prefix
    mark = nginx.mark()
    done = fatpte_cli("thin", url, "--device", "host", "--only-chosen", "-q", "-o", str(tmp_path / "remote.nfat"))
    assert done.returncode == 0, done.stderr
    assert "kept 'portable'" in done.stdout and f"(was {big.path.stat().st_size})" in done.stdout
    log = nginx.requests(mark)
    # The prefix, the rest of the payload (its first bytes came with the prefix), the segment.
    (_, payload_end), (segment, segment_end) = regions
    assert [(r.range, r.body_bytes) for r in log] == [
        (f"bytes=0-{PREFIX_SIZE - 1}", PREFIX_SIZE),
        (f"bytes={PREFIX_SIZE}-{payload_end - 1}", payload_end - PREFIX_SIZE),
        (f"bytes={segment}-{segment_end - 1}", segment_end - segment)]
    fatpte.thin(big.path, tmp_path / "local.nfat", names=["portable"])
    assert (tmp_path / "remote.nfat").read_bytes() == (tmp_path / "local.nfat").read_bytes()
    assert fatpte.validate(tmp_path / "remote.nfat").ok


def test_validate_reads_every_byte_once(nginx: Nginx, big: Served) -> None:
    url = nginx.url(big.name)
    mark = nginx.mark()
    report = fatpte.validate(url)
    assert report.ok, report.findings
    log = nginx.requests(mark)
    # The prefix, then the rest of the file once, in file order, in ranges of bounded size.
    assert sum(r.body_bytes for r in log) == big.path.stat().st_size
    starts = [int(r.range.removeprefix("bytes=").split("-")[0]) for r in log]
    assert starts == sorted(starts)
    assert max(r.body_bytes for r in log) <= RANGE_SIZE


@pytest.mark.parametrize("vector", sorted(p.name for p in VECTORS.glob("*.nfat")))
def test_validate_of_a_url_reports_what_validate_of_the_file_reports(nginx: Nginx, www: Path, vector: str) -> None:
    """A URL is validated by every rule of the container, streaming; the checks of an ExecuTorch
    program entry against its record (specs/executorch.md section 7, E10xx and E11xx) need the
    payload whole and are made once the container is downloaded (docs/remote.md): the URL's report
    is the file's without them, and equal to the file's whenever the file has none of them."""
    copy = www / f"vector-{vector}"
    copy.write_bytes((VECTORS / vector).read_bytes())
    local = fatpte.validate(copy).to_json()
    rules = validate_container_rules(copy).to_json()
    remote = fatpte.validate(nginx.url(copy.name)).to_json()
    assert remote.pop("path") == nginx.url(copy.name) and local.pop("path") == str(copy) == rules.pop("path")
    assert remote == rules
    program_only = [f for f in local["findings"] if f not in rules["findings"]]
    assert all(f["code"][:3] in ("E10", "E11") for f in program_only), program_only
    if not program_only:
        assert remote == local


def test_coverage_and_diff_of_urls(nginx: Nginx, big: Served) -> None:
    url = nginx.url(big.name)
    remote = json.loads(fatpte_cli("coverage", url, "--json").stdout)
    local = json.loads(fatpte_cli("coverage", str(big.path), "--json").stdout)
    assert remote.pop("path") == url and local.pop("path") == str(big.path)
    assert remote == local
    mark = nginx.mark()
    done = fatpte_cli("diff", url, str(big.path), "--json", "--exit-code")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["unchanged"]
    assert [r.body_bytes for r in nginx.requests(mark)] == [PREFIX_SIZE]


def test_the_python_api_reads_a_url(nginx: Nginx, big: Served) -> None:
    with fatpte.open(nginx.url(big.name)) as c, fatpte.open(big.path) as local:
        assert isinstance(c, fatpte.RemoteContainer)
        assert c.entries == local.entries and c.manifest == local.manifest
        assert c.stats.requests == 1
        assert bytes(c.payload("portable", verify=True)) == bytes(local.payload("portable"))
        assert bytes(c.named_data("w.big")) == bytes(local.named_data("w.big"))
        entry = c.entry("big")
        chunks = list(c.stream(entry.offset + entry.size - 3_000_000, 3_000_000))
        assert max(len(x) for x in chunks) <= 1 << 20
        assert b"".join(chunks) == bytes(local.read(entry.offset + entry.size - 3_000_000, 3_000_000))
        with pytest.raises(fatpte.FatpteError) as info:
            c.buffer  # noqa: B018 - the property raises
        assert info.value.code is fatpte.ErrorCode.INVALID_ARGUMENT


def test_a_manifest_beyond_the_prefix_costs_one_more_request(nginx: Nginx, www: Path) -> None:
    keys = {f"weights.layer{i:05d}.{'x' * 40}": os.urandom(16) for i in range(3000)}
    path = fatpte.pack([fatpte.Specialization("portable", b"\0\0\0\0payload", named_data=list(keys))],
                       www / "many-keys.nfat", named_data=keys)
    with fatpte.open(path) as local:
        assert local.header.manifest_offset + local.header.manifest_size > PREFIX_SIZE
        expected = local.named_data_keys
    mark = nginx.mark()
    with fatpte.open(nginx.url(path.name)) as c:
        assert c.named_data_keys == expected
    log = nginx.requests(mark)
    assert [r.range for r in log] == [f"bytes=0-{PREFIX_SIZE - 1}",
                                      f"bytes={PREFIX_SIZE}-{c.header.manifest_offset + c.header.manifest_size - 1}"]


def test_a_plain_url_needs_neither_fsspec_nor_aiohttp(nginx: Nginx, big: Served) -> None:
    """http(s) URLs with no storage option but headers are read with the standard library's
    http.client (fatpte/fileio/remote.py): a device that only downloads its slice installs no
    extra, and the command starts without importing fsspec and aiohttp (0.2 s measured)."""
    code = ("import sys, fatpte\n"
            "with fatpte.open(sys.argv[1], headers={'X-Device': 'test'}) as c:\n"
            "    assert bytes(c.payload('portable', verify=True))\n"
            "print(sorted(m for m in ('fsspec', 'aiohttp', 'asyncio') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code, nginx.url(big.name)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (the IP in its subjectAltName) and its key, in PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.mark.parametrize("client", ["http.client", "aiohttp"])
def test_https_checks_the_certificate(client: str, tmp_path: Path) -> None:
    """An https URL is read over TLS on both clients, the server's certificate checked against
    the trusted ones (SSL_CERT_FILE here): an untrusted one is refused, not read."""
    www, work = tmp_path / "www", tmp_path / "nginx"
    www.mkdir()
    work.mkdir()
    cert, key = _self_signed(tmp_path)
    container = fatpte.pack([fatpte.Specialization("portable", os.urandom(300_000))], www / "c.nfat")
    server = Nginx(www, work, tls=(cert, key))
    try:
        url = server.https_url("c.nfat")
        env = {"FATPTE_REMOTE_ATTEMPTS": "1"}
        if client == "aiohttp":
            env["FSSPEC_HTTPS"] = '{"client_kwargs": {}}'  # any option but headers: fsspec's aiohttp
        dest = tmp_path / "out.bin"
        done = fatpte_cli("extract", url, "--name", "portable", "-q", "-o", str(dest),
                          env={**env, "SSL_CERT_FILE": str(cert)})
        assert done.returncode == 0, done.stderr
        with fatpte.open(container) as local:
            assert dest.read_bytes() == bytes(local.payload("portable"))
        refused = fatpte_cli("info", url, env=env)
        assert refused.returncode == 4
        assert refused.stderr.startswith(f"{url}: E0810: ") and "CERTIFICATE_VERIFY_FAILED" in refused.stderr
    finally:
        server.close()
