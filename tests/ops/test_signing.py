"""fatpte/ops/signing/ and fatpte/manifest/canonical.py: sign, verify, unsign, thinning a signed
container, detached signatures, the command line, and bounded work on hostile bundles."""

from __future__ import annotations

import hashlib
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

import fatpte
from fatpte.cli.main import main as cli
from fatpte.errors import ErrorCode, FatpteError
from fatpte.format import layout as L
from fatpte.manifest.canonical import entry_record, named_data_record
from fatpte.manifest.codec import decode, encode
from fatpte.ops import signing
from fatpte.ops.signing.bundle import Malformed
from tests.paths import ROOT

S = fatpte.Specialization
SIG = {"methods": [{"name": "forward", "inputs": [{"dtype": "float32", "shape": [1, "batch"]}],
                    "outputs": [{"dtype": "float32", "shape": [4]}]}]}


def _key(kind: str) -> Any:
    return ed25519.Ed25519PrivateKey.generate() if kind == "ed25519" else ec.generate_private_key(ec.SECP256R1())


def _trusted(key: Any) -> list[signing.TrustedKey]:
    public = key.public_key()
    return [signing.TrustedKey(signing.key_id(public), public, "test")]


def _write_keys(tmp: Path, key: Any, name: str = "k") -> tuple[Path, Path]:
    private, public = tmp / f"{name}.pem", tmp / f"{name}.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def _container(tmp: Path, name: str = "m.nfat", alignment: int = 64) -> Path:
    return fatpte.pack([
        S("xnnpack", os.urandom(1000), name="cpu", requires={"arch": ["x86_64"]}, named_data=["w0", "w1"],
          signature=SIG, payload_sha256=True, provenance={"tool": "test"}),
        S("cuda", os.urandom(3000), name="gpu", alignment=alignment, named_data=["w0"],
          requires={"accelerators": [{"kind": "cuda", "targets": ["sm_80"]}]}),
        S("portable", os.urandom(10), name="any", priority=-5),
    ], tmp / name, named_data={"w0": os.urandom(500), "w1": os.urandom(70)})


@pytest.mark.parametrize("kind", ["ed25519", "p256"])
@pytest.mark.parametrize("alignment", [8, 64, 4096])
def test_sign_verify_unsign_round_trip(tmp_path: Path, kind: str, alignment: int) -> None:
    src = _container(tmp_path, alignment=alignment)
    original = src.read_bytes()
    key = _key(kind)
    signed = signing.sign(src, key, tmp_path / "s.nfat")
    assert fatpte.validate(signed).ok
    with fatpte.open(signed) as c:
        assert c.header.header_size == L.SIGNED_HEADER_SIZE and c.header.signature_size > 0
        assert [bytes(c.payload(e)) for e in c.entries] == [bytes(fatpte.open(src).payload(e.name))
                                                             for e in c.entries]
    report = signing.verify(signed, _trusted(key))
    assert report.ok, report.findings
    assert [(e.name, e.status) for e in report.entries] == [("cpu", "verified"), ("gpu", "verified"),
                                                            ("any", "verified")]
    assert report.named_data == 2
    # Deterministic: the same container and key give the same bytes (RFC 6979, Ed25519).
    assert signing.sign(src, key, tmp_path / "again.nfat").read_bytes() == signed.read_bytes()
    signing.unsign(signed, tmp_path / "u.nfat")
    assert (tmp_path / "u.nfat").read_bytes() == original


def test_signing_again_replaces_the_signature(tmp_path: Path) -> None:
    src = _container(tmp_path)
    first, second = _key("ed25519"), _key("p256")
    signed = signing.sign(src, first, tmp_path / "s.nfat")
    again = signing.sign(signed, second, tmp_path / "s2.nfat")
    assert signing.verify(again, _trusted(second)).ok
    assert signing.verify(again, _trusted(first)).first_error.code is ErrorCode.SIGNATURE_UNTRUSTED  # type: ignore[union-attr]
    assert signing.unsign(again, tmp_path / "u.nfat").read_bytes() == src.read_bytes()


def test_thinning_keeps_the_signature_and_reports_what_it_dropped(tmp_path: Path) -> None:
    key = _key("ed25519")
    signed = signing.sign(_container(tmp_path), key, tmp_path / "s.nfat")
    thin = fatpte.thin(signed, tmp_path / "t.nfat", names=["gpu"])
    assert fatpte.validate(thin).ok
    report = signing.verify(thin, _trusted(key))
    assert report.ok, report.findings
    assert [e.name for e in report.entries] == ["gpu"]
    assert report.thinned == ("cpu", "any")
    assert report.thinned_named_data == ("w1",)
    # Thinning twice, down to nothing but one entry with no named data, still verifies.
    thinner = fatpte.thin(thin, tmp_path / "t2.nfat", names=["gpu"])
    assert signing.verify(thinner, _trusted(key)).ok


def test_thin_by_device_keeps_the_signature(tmp_path: Path) -> None:
    key = _key("p256")
    signed = signing.sign(_container(tmp_path), key, tmp_path / "s.nfat")
    orin = fatpte.DeviceProfile.load("jetson-orin")
    thin = fatpte.thin(signed, tmp_path / "t.nfat", device=orin, only_chosen=True)
    report = signing.verify(thin, _trusted(key))
    assert report.ok and len(report.entries) == 1 and len(report.thinned) == 2
    chain = fatpte.thin(signed, tmp_path / "c.nfat", device=orin)  # gpu, and any to fall back to
    report = signing.verify(chain, _trusted(key))
    assert report.ok and [e.name for e in report.entries] == ["gpu", "any"] and report.thinned == ("cpu",)


def test_detached_signature(tmp_path: Path) -> None:
    key = _key("ed25519")
    src = _container(tmp_path)
    before = src.read_bytes()
    sig = signing.sign(src, key, detached=True)
    assert sig == Path(str(src) + ".sig") and src.read_bytes() == before
    json.loads(sig.read_bytes())  # the bundle is plain JSON
    # Beside the container, it is read only when named (specs/nfat-signature.md section 6 step 1).
    first = signing.verify(src, _trusted(key)).first_error
    assert first is not None and first.code is ErrorCode.SIGNATURE_REQUIRED and "--signature" in first.message
    report = signing.verify(src, _trusted(key), signature=sig)
    assert report.ok and report.signature == str(sig)
    assert signing.verify_buffer(src.read_bytes(), _trusted(key), signature=sig.read_bytes()).ok
    moved = tmp_path / "elsewhere.sig"
    sig.rename(moved)
    assert "--signature" not in signing.verify(src, _trusted(key)).first_error.message  # type: ignore[union-attr]
    assert signing.verify(src, _trusted(key), signature=moved).ok


def test_what_cannot_be_signed(tmp_path: Path) -> None:
    v1 = fatpte.pack([S("cpu", b"12345678")], tmp_path / "v1.nfat", version=1)
    with pytest.raises(FatpteError) as info:
        signing.sign(v1, _key("ed25519"), tmp_path / "s.nfat")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "convert" in info.value.message
    with pytest.raises(FatpteError) as info:
        signing.unsign(_container(tmp_path), tmp_path / "u.nfat")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_a_reader_of_revision_2_0_reads_a_signed_container(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """specs/nfat.md 4.9: a reader that predates the slot skips header bytes 64..80, reads every
    entry, and (as a validator) sees the region as padding."""
    from fatpte.format import structure

    signed = signing.sign(_container(tmp_path), _key("ed25519"), tmp_path / "s.nfat")
    monkeypatch.setattr(structure, "_check_signature_fields", lambda st: None)
    with fatpte.open(signed) as c:
        assert [e.name for e in c.entries] == ["cpu", "gpu", "any"]
        assert all(c.payload(e, verify=True) for e in c.entries if e.size)
        assert bytes(c.named_data("w0"))
    codes = [f.code for f in fatpte.validate(signed).findings]
    assert codes == [ErrorCode.PADDING_NOT_ZERO]


def test_canonical_records_survive_re_encoding_and_change_with_every_field(tmp_path: Path) -> None:
    src = _container(tmp_path)
    with fatpte.open(src) as c:
        m = c.manifest
        assert m is not None
        again = decode(encode(m))
        for a, b in zip(m.entries, again.entries):
            assert entry_record(a) == entry_record(b)
        base = m.entries[0]
        variants = [base._replace(requires=base.requires._replace(arch=("aarch64",))),
                    base._replace(signature=None), base._replace(named_data=("w0",)),
                    base._replace(provenance=(("tool", "other"),)), base._replace(executorch_backends=()),
                    base._replace(payload_sha256=None), base._replace(source_digest="sha256:00")]
        records = {entry_record(v) for v in variants} | {entry_record(base), entry_record(None)}
        assert len(records) == len(variants) + 2
        assert named_data_record("w0", None) != named_data_record("w1", None)


def test_statement_names_entries_and_keys_not_offsets(tmp_path: Path) -> None:
    with fatpte.open(_container(tmp_path)) as c:
        st = signing.statement_of(c)
        subjects = [s["name"] for s in st["subject"]]
        assert subjects == ["entries/cpu", "entries/gpu", "entries/any", "named_data/w0", "named_data/w1"]
        assert st["subject"][0]["digest"]["sha256"] == hashlib.sha256(bytes(c.payload("cpu"))).hexdigest()
        assert [e["priority"] for e in st["predicate"]["entries"]] == [0, 0, -5]
        assert "offset" not in json.dumps(st)


@pytest.mark.parametrize("size", [1 << 20, 4 << 20, 16 << 20])
def test_a_huge_field_costs_memory_linear_in_the_bundle(size: int) -> None:
    """A hostile bundle with one huge sig field is refused by its length, before decoding: the
    peak memory of reading it is a small multiple of its size."""
    bundle = json.dumps({"mediaType": signing.BUNDLE_MEDIA_TYPE, "dsseEnvelope": {
        "payloadType": signing.PAYLOAD_TYPE, "payload": "", "signatures": [{"sig": "A" * size}]}}).encode()
    tracemalloc.start()
    try:
        with pytest.raises(Exception) as info:
            signing.read_bundle(bundle)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "signatures[0].sig" in getattr(info.value, "field", "")
    assert peak < 4 * len(bundle) + (1 << 20)


def test_command_line(tmp_path: Path) -> None:
    runner = CliRunner()
    key = _key("ed25519")
    private, public = _write_keys(tmp_path, key)
    src = _container(tmp_path)
    out = tmp_path / "s.nfat"
    r = runner.invoke(cli, ["sign", str(src), "--key", str(private), "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["verify", str(out), "--key", str(public), "-q"])
    assert r.exit_code == 0 and "verified  cpu (xnnpack)" in r.output, r.output
    trust = tmp_path / "trust"
    trust.mkdir()
    (trust / "a.pem").write_bytes(public.read_bytes())
    r = runner.invoke(cli, ["verify", str(out), "--trust", str(trust), "--json", "-q"])
    assert r.exit_code == 0 and json.loads(r.output)["ok"] is True
    thin = tmp_path / "t.nfat"
    assert runner.invoke(cli, ["thin", str(out), "--name", "cpu", "-o", str(thin), "-q"]).exit_code == 0
    r = runner.invoke(cli, ["verify", str(thin), "--key", str(public), "-q"])
    assert r.exit_code == 0 and "thinned   gpu" in r.output and "thinned   any" in r.output, r.output
    _, other = _write_keys(tmp_path, _key("p256"), "other")
    r = runner.invoke(cli, ["verify", str(out), "--key", str(other), "-q"])
    assert r.exit_code == 5 and "E1305" in r.output
    r = runner.invoke(cli, ["unsign", str(out), "-o", str(tmp_path / "u.nfat")])
    assert r.exit_code == 0 and (tmp_path / "u.nfat").read_bytes() == src.read_bytes()
    r = runner.invoke(cli, ["verify", str(tmp_path / "u.nfat"), "--key", str(public), "-q"])
    assert r.exit_code == 5 and "E1301" in r.output
    r = runner.invoke(cli, ["verify", str(out)])
    assert r.exit_code == 2
    r = runner.invoke(cli, ["sign", str(src), "--key", str(public)])
    assert r.exit_code == 2 and "private key" in r.output


_VERIFY_PEAK = """
import sys
from fatpte.ops import signing

def peak_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

keys = signing.load_trusted_keys([sys.argv[2]])
before = peak_kib()
report = signing.verify(sys.argv[1], keys)
assert report.ok, report.findings
print(peak_kib() - before)
"""


def test_verify_holds_a_bounded_resident_set(tmp_path: Path) -> None:
    """Verifying hashes every byte of a mapped container; the pages hashed are given back as it
    goes (fileio.mapping.release_pages), so the peak resident set grows by a few hashing steps,
    not by the file's size (3 GiB verified held 3 GiB before)."""
    import subprocess
    import sys

    size = 256 << 20
    src = fatpte.pack([S("xnnpack", bytes(size), name="big", payload_sha256=True),
                       S("portable", os.urandom(100), name="small", priority=-1)], tmp_path / "big.nfat",
                      named_data={"w": bytes(16 << 20)})
    key = _key("ed25519")
    signed = signing.sign(src, key, tmp_path / "signed.nfat")
    src.unlink()
    _, public = _write_keys(tmp_path, key)
    out = subprocess.run([sys.executable, "-c", _VERIFY_PEAK, str(signed), str(public)], check=True,
                         capture_output=True, text=True, timeout=300)
    grew_mib = int(out.stdout.strip()) / 1024
    assert grew_mib < 64, f"verifying {size >> 20} MiB raised the peak resident set by {grew_mib:.0f} MiB"


def _certificate_pem(key: Any) -> bytes:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fatpte test")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM)


def _explicit_p256_spki(public: ec.EllipticCurvePublicKey) -> bytes:
    """The SubjectPublicKeyInfo of `public` with P-256's parameters written out (specifiedCurve), as
    `openssl ec -param_enc explicit` writes it."""
    def tlv(tag: int, body: bytes) -> bytes:
        n = len(body)
        size = bytes([n]) if n < 0x80 else bytes([0x80 | ((n.bit_length() + 7) // 8)]) + n.to_bytes(
            (n.bit_length() + 7) // 8, "big")
        return bytes([tag]) + size + body

    def integer(v: int) -> bytes:
        raw = v.to_bytes((v.bit_length() + 8) // 8, "big")
        return tlv(0x02, raw)

    p = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
    a, b = p - 3, 0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B
    gx = 0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296
    gy = 0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5
    n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    field = tlv(0x30, tlv(0x06, bytes.fromhex("2a8648ce3d0101")) + integer(p))
    curve = tlv(0x30, tlv(0x04, a.to_bytes(32, "big")) + tlv(0x04, b.to_bytes(32, "big")))
    params = tlv(0x30, integer(1) + field + curve + tlv(0x04, b"\x04" + gx.to_bytes(32, "big") + gy.to_bytes(32, "big"))
                 + integer(n) + integer(1))
    point = public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return tlv(0x30, tlv(0x30, tlv(0x06, bytes.fromhex("2a8648ce3d0201")) + params) + tlv(0x03, b"\0" + point))


def _pem(der: bytes, label: str = "PUBLIC KEY") -> bytes:
    import base64
    import textwrap

    body = "\n".join(textwrap.wrap(base64.b64encode(der).decode(), 64))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----\n".encode()


def test_trusted_key_files_follow_section_5_4(tmp_path: Path) -> None:
    """One PEM block labelled PUBLIC KEY and nothing else; P-256 on its named curve, compressed or
    not, with one key id; explicit parameters, certificates and private keys refused."""
    key = ec.generate_private_key(ec.SECP256R1())
    public = key.public_key()
    spki = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    canonical = hashlib.sha256(spki).hexdigest()
    private_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
    point = public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
    compressed = b"\x30\x39" + spki[2:23] + b"\x03\x22\x00" + point  # SEQUENCE { algorithm, BIT STRING }
    assert compressed[1] == 0x39 and len(compressed) == 0x39 + 2
    cases: dict[str, tuple[bytes, str | None]] = {
        "plain": (_pem(spki), canonical),
        "crlf and surrounding whitespace": (b"\n \r\n" + _pem(spki).replace(b"\n", b"\r\n") + b"\n\n", canonical),
        "one line of base64": (_pem(spki).replace(b"\n", b"", 2).replace(b"KEY-----", b"KEY-----\n", 1), canonical),
        "compressed point": (_pem(compressed), canonical),
        "explicit parameters": (_pem(_explicit_p256_spki(public)), None),
        "certificate first": (_certificate_pem(key) + _pem(spki), None),
        "private key first": (private_pem + _pem(spki), None),
        "a second public key": (_pem(spki) + _pem(spki), None),
        "text before": (b"my release key\n" + _pem(spki), None),
        "1 MiB of text first": (b"#" * (1 << 20) + b"\n" + _pem(spki), None),
        "a certificate alone": (_certificate_pem(key), None),
        "an RSA-style label": (_pem(spki, "RSA PUBLIC KEY"), None),
        "base64 with a space": (_pem(spki).replace(b"\n", b"\n ", 2), None),
        # Found by the trusted_keys fuzz target: an algorithm OID no library knows (an X25519
        # key whose 1.3.101.110 lost its first byte) escaped as cryptography's UnsupportedAlgorithm.
        "an unknown algorithm": (_pem(bytes.fromhex("302a3005060300656e032100") + bytes(range(32))), None),
    }
    for label, (data, want) in cases.items():
        path = tmp_path / "k.pem"
        path.write_bytes(data)
        if want is None:
            with pytest.raises(FatpteError) as info:
                signing.load_public_key(path)
            assert (info.value.code, info.value.field) == (ErrorCode.INVALID_ARGUMENT, "key"), label
        else:
            assert signing.load_public_key(path).key_id == want, label
    # The explicit form is the same key: cryptography would read it; the rule refuses it all the same.
    assert serialization.load_der_public_key(_explicit_p256_spki(public)).public_numbers() == public.public_numbers()


@pytest.mark.parametrize("zeros", [1 << 20, 4 << 20])
def test_an_unsigned_addition_to_the_bundle_is_refused_before_it_costs_memory(zeros: int) -> None:
    """S5: a member of millions of zeros added to a bundle (no key needed) is E1302 at the 4097th
    value: the work does not grow with the addition, the memory only by the text itself."""
    from tests.work import executed_lines, peak_allocation

    signed = (ROOT / "specs" / "vectors" / "v2-signed.nfat").read_bytes()
    off = int.from_bytes(signed[64:72], "little")
    size = int.from_bytes(signed[72:76], "little")
    bundle = signed[off:off + size].rstrip()
    assert bundle.endswith(b"}")
    hostile = bundle[:-1] + b',"x":[' + b"0," * (zeros - 1) + b"0]}"
    with pytest.raises(Exception) as info:
        signing.read_bundle(hostile)
    assert (getattr(info.value, "code", None), getattr(info.value, "field", None)) == (
        ErrorCode.SIGNATURE_MALFORMED, "signature")
    assert "more than 4096 values" in str(info.value)
    lines = executed_lines(lambda: _refused(hostile))
    assert lines < 100_000, lines  # about 4096 tokens' worth, whatever the addition's size
    assert peak_allocation(lambda: _refused(hostile)) < 2 * len(hostile) + (1 << 20)
    ok = bundle[:-1] + b',"x":[' + b"0," * 4000 + b"0]}"  # within the limit: still verifies
    assert signing.read_bundle(ok).payload_type == signing.PAYLOAD_TYPE


def _refused(bundle: bytes) -> None:
    with pytest.raises(Malformed):
        signing.read_bundle(bundle)


def _many(tmp_path: Path, n: int) -> Path:
    """A container of `n` entries, each with its own named-data key and tensor layout."""
    from fatpte.manifest.model import TensorLayout
    from fatpte.ops.specialization import NamedData

    specs = [S("xnnpack", i.to_bytes(4, "little") * 2, name=f"e{i}", named_data=[f"k{i:06d}"]) for i in range(n)]
    data = {f"k{i:06d}": NamedData(i.to_bytes(4, "little"), layout=TensorLayout("float32", (1,))) for i in range(n)}
    return fatpte.pack(specs, tmp_path / f"many{n}.nfat", named_data=data)


def test_sign_and_verify_are_linear_in_the_entries(tmp_path: Path) -> None:
    """S6: signing, verifying, and verifying a copy whose every payload was changed (one finding per
    entry) run a number of lines of fatpte linear in the entries and keys: x4 entries, at most x5
    lines (counted, never timed). The manifest was scanned once per entry, the findings once per
    entry."""
    from tests.work import executed_lines, growth

    key = _key("ed25519")
    trusted = _trusted(key)
    work: dict[str, list[int]] = {"sign": [], "verify": [], "verify tampered": []}
    for n in (150, 600, 2400):
        src = _many(tmp_path, n)
        out = tmp_path / f"signed{n}.nfat"
        work["sign"].append(executed_lines(lambda s=src, o=out: signing.sign(s, key, o)))
        report = signing.verify(out, trusted)
        assert report.ok and report.named_data == n
        work["verify"].append(executed_lines(lambda o=out: signing.verify(o, trusted)))
        data = bytearray(out.read_bytes())
        with fatpte.Container.from_buffer(bytes(data)) as c:
            for e in c.entries:
                data[e.offset] ^= 0xFF
        bad = tmp_path / f"bad{n}.nfat"
        bad.write_bytes(bytes(data))
        report = signing.verify(bad, trusted)
        assert [f.code for f in report.findings] == [ErrorCode.SIGNED_PAYLOAD_MISMATCH] * n
        assert {e.status for e in report.entries} == {"tampered"}
        work["verify tampered"].append(executed_lines(lambda b=bad: signing.verify(b, trusted)))
    for what, lines in work.items():
        assert all(g <= 5 for g in growth(lines)), (what, lines)


def _fast_and_portable(tmp_path: Path) -> Path:
    return fatpte.pack([
        S("xnnpack", b"fast program", name="fast", priority=10, requires={"arch": ["x86_64"], "cpu_features": ["avx2"]}),
        S("portable", b"slow program", name="slow"),
    ], tmp_path / "two.nfat")


def test_the_statement_carries_what_selection_reads(tmp_path: Path) -> None:
    """Revision 2: each statement entry's `selection` holds its requirements and ExecuTorch
    backends as decoded, words and numbers unchanged, and reads back to the same values."""
    src = fatpte.pack([
        S("cuda", b"gpu program", name="gpu", requires={
            "os": ["linux"], "arch": ["x86_64", "aarch64"], "min_memory_bytes": 1 << 34, "backend_abi": {"min": 2},
            "accelerators": [{"kind": "cuda", "targets": ["sm_80", "compute_90", "sm_90a"],
                              "min_memory_bytes": 1 << 33}]}),
        S("portable", b"cpu program", name="cpu"),
    ], tmp_path / "c.nfat")
    with fatpte.open(src) as c:
        statement = signing.statement_of(c)
        described = c.manifest.by_name()  # type: ignore[union-attr]
    rows = statement["predicate"]["entries"]
    assert rows[1]["selection"] == {"os": [], "arch": [], "cpu_features": [], "accelerators": [],
                                    "min_memory_bytes": 0}
    assert rows[0]["selection"]["accelerators"][0]["targets"] == [[1, 8, 0], [0, 9, 0], [2, 9, 0]]
    back = signing.read_statement(json.dumps(statement).encode())
    assert back.entries[0].selection == (described["gpu"].requires, described["gpu"].executorch_backends)
    assert back.entries[1].selection is not None and back.entries[1].selection.requires.specificity == 0
    for bad in ({"os": "linux"}, {"min_memory_bytes": -1}, {"backend_abi": [1]},
                {"accelerators": [{"kind": "cuda", "targets": [[0, 1]], "min_memory_bytes": 0}]}):
        broken = json.loads(json.dumps(statement))
        broken["predicate"]["entries"][0]["selection"].update(bad)
        with pytest.raises(Exception) as info:
            signing.read_statement(json.dumps(broken).encode())
        assert getattr(info.value, "field", "").startswith("signature.statement.predicate.entries[0].selection")


def test_downgrade_by_thinning_is_refused_only_when_asked(tmp_path: Path) -> None:
    """Thinned to its portable entry, a container still verifies (thinning is by design), unless
    the caller names a device on which the thinned-away entry would win: then E1308 at that
    statement entry. On a device where it would not, or thinned to the winner, it verifies."""
    from fatpte.device.profile import DeviceProfile

    key = _key("ed25519")
    signed = signing.sign(_fast_and_portable(tmp_path), key, tmp_path / "s.nfat")
    slow = fatpte.thin(signed, tmp_path / "slow.nfat", names=["slow"])
    fast = fatpte.thin(signed, tmp_path / "fast.nfat", names=["fast"])
    v3, v2 = DeviceProfile.load("x86-64-v3"), DeviceProfile.load("x86-64-v2")
    assert signing.verify(slow, _trusted(key)).ok
    report = signing.verify(slow, _trusted(key), downgrade=v3)
    first = report.first_error
    assert first is not None and (first.code, first.field) == (
        ErrorCode.SIGNED_RECORD_MISMATCH, "signature.statement.predicate.entries[0]")
    with fatpte.open(slow) as c:
        assert first.offset == c.header.signature_offset
    assert "'fast'" in first.message and "downgrade" in first.message
    assert signing.verify(slow, _trusted(key), downgrade=v2).ok  # no avx2: 'slow' is what it gets anyway
    assert signing.verify(fast, _trusted(key), downgrade=v3).ok
    assert signing.verify(signed, _trusted(key), downgrade=v3).ok
    # A statement written before revision 2 says nothing of what a thinned entry needs: refused.
    with fatpte.open(_fast_and_portable(tmp_path)) as c:
        old = signing.statement_of(c)
    for row in old["predicate"]["entries"]:
        del row["selection"]
    bundle = signing.bundle_for(old, key)
    plain_slow = fatpte.thin(_fast_and_portable(tmp_path), tmp_path / "plain-slow.nfat", names=["slow"])
    assert signing.verify(plain_slow, _trusted(key), signature=bundle).ok
    refused = signing.verify(plain_slow, _trusted(key), signature=bundle, downgrade=v2).first_error
    assert refused is not None and refused.code is ErrorCode.SIGNED_RECORD_MISMATCH and "revision 2" in refused.message
    # The command line.
    runner = CliRunner()
    _, public = _write_keys(tmp_path, key)
    r = runner.invoke(cli, ["verify", str(slow), "--key", str(public), "-q", "--refuse-downgrade", "x86-64-v3"])
    assert r.exit_code == 5 and "E1308" in r.output and "downgrade" in r.output, r.output
    r = runner.invoke(cli, ["verify", str(slow), "--key", str(public), "-q", "--refuse-downgrade", "x86-64-v2"])
    assert r.exit_code == 0, r.output


def _statement(data: bytes) -> Any:
    import base64

    from tests.support.vectors import bundle_of

    return json.loads(base64.b64decode(json.loads(bundle_of(data))["dsseEnvelope"]["payload"]))


def test_the_statement_states_every_entry_s_golden_calls_or_their_absence(tmp_path: Path) -> None:
    """Issue 42, G1 (specs/nfat-signature.md 3.2, revision 3): `golden_sha256` is the golden digest
    of 11.3 for every entry, the empty list's for one without calls (pinned), so calls cannot be
    added later without the key."""
    from fatpte.manifest.model import golden_digest
    from tests.support.vectors import golden_packed, signed, test_key

    empty = hashlib.sha256(b"\x0d\x00\x00\x00nfat.golden/1\x00\x00\x00\x00").hexdigest()
    assert golden_digest(()) == empty
    plain = signed(_container(tmp_path).read_bytes(), test_key("ed25519"))
    assert [e["golden_sha256"] for e in _statement(plain)["predicate"]["entries"]] == [empty] * 3
    golden = signed(golden_packed(), test_key("ed25519"))
    with fatpte.Container.from_buffer(golden) as c:
        assert c.manifest is not None
        want = [golden_digest(e.golden) for e in c.manifest.entries]
    assert [e["golden_sha256"] for e in _statement(golden)["predicate"]["entries"]] == want != [empty, empty]


@pytest.mark.parametrize("revision", [3, 2])
def test_golden_calls_added_to_a_signed_entry_are_refused_or_reported(revision: int) -> None:
    """The attack of issue 42, G1, written from its description: golden calls added without any key
    to a signed entry that had none, naming golden tensors the container already holds (signed
    keys). It used to verify (OK), and a signed self-test then rejected the entry on them. Now a
    statement of revision 3 refuses them (E1308 at the entry's golden calls); one of revision 2,
    which cannot, verifies and reports them as unsigned, which a signed self-test does not make."""
    from tests.support.vectors import (
        bundle_of,
        golden_of_entries,
        golden_packed,
        signed,
        signed_before_golden,
        test_key,
        with_bundle,
        with_golden,
    )

    key = test_key("ed25519")
    golden = golden_packed()
    plain = with_golden(golden, "gpu", ())  # 'gpu' without calls; 'cpu''s calls stated with their digest
    original = signed(plain, key)
    if revision == 2:
        original = signed_before_golden(original, key)
    forged = bytes(with_bundle(signed(with_golden(plain, "gpu", golden_of_entries(golden)["gpu"]), key),
                               bundle_of(original)))
    assert fatpte.validate_buffer(forged).ok
    report = signing.verify_buffer(forged, _trusted(key))
    entries = {e.name: e.status for e in report.entries}
    with fatpte.Container.from_buffer(forged) as c:
        assert c.manifest is not None
        at = c.header.manifest_offset + c.manifest.entries[1].position
    if revision == 3:
        first = report.first_error
        assert first is not None and (first.code, first.offset, first.field) == (
            ErrorCode.SIGNED_RECORD_MISMATCH, at, "manifest.entries[1].golden")
        assert entries == {"cpu": "verified", "gpu": "tampered"} and report.unsigned_golden == ()
    else:
        # 'cpu''s calls are vouched for by the digest its signed provenance states; 'gpu''s by nothing.
        assert report.ok and entries == {"cpu": "verified", "gpu": "verified"}
        assert report.unsigned_golden == ("gpu",)
        assert report.to_json()["unsigned_golden"] == ["gpu"]
