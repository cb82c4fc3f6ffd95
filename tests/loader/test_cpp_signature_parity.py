"""The C++ loader verifies signatures as Python does (specs/nfat-signature.md section 6).

`fatpte-verify` (the C API: fatpte_trust_load, fatpte_verify_signature,
fatpte_signature_verify_all) must report, for every signing vector of specs/vectors/ and for
hundreds of mutated bundles, the first error Python's `verify` reports: the same code, offset and
field, the same thinned entries, and the same entries whose golden calls the signature does not
vouch for (section 6.1); a trusted-key file that cannot be used ends both with the same exit code. The loader is built by `make loader`; a missing build is
skipped with the reason, except under `make test`, which builds it first and fails on a missing
build (tests/builds.py).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fatpte.errors import FatpteError
from fatpte.fileio.checksum import crc32c
from fatpte.format import layout as L
from fatpte.ops.signing import load_trusted_keys, verify
from tests.builds import loader_build
from tests.paths import ROOT

VECTORS = ROOT / "specs" / "vectors"
INDEX = json.loads((VECTORS / "index.json").read_text())["vectors"]
SIGNED = sorted(n for n, row in INDEX.items() if "verify" in row)
KEYS = [VECTORS / k for k in INDEX["v2-signed.nfat"]["verify"]["keys"]]


def tool() -> Path:
    return loader_build("release", "fatpte-verify") / "fatpte-verify"


def cpp_lines(path: Path, keys: list[Path] = KEYS, *extra: str) -> list[str]:
    """`fatpte-verify`'s three lines: the outcome, `thinned: ...`, `unsigned golden: ...`."""
    args = [str(tool()), str(path), *extra]
    for k in keys:
        args += ["--trusted-key", str(k)]
    out = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60).stdout.splitlines()
    assert len(out) == 3 and out[2].startswith("unsigned golden: "), out
    return out


def cpp(path: Path, keys: list[Path] = KEYS, *extra: str) -> tuple[str, str]:
    out = cpp_lines(path, keys, *extra)
    return out[0], out[1]


def python(path: Path) -> tuple[str, str]:
    try:
        report = verify(path, load_trusted_keys(KEYS))
    except FatpteError as exc:
        return f"{exc.code.tag} {'-' if exc.offset is None else exc.offset} {exc.field or '-'}", "thinned: "
    first = report.first_error
    head = "OK" if first is None else f"{first.code.tag} {'-' if first.offset is None else first.offset} {first.field}"
    return head, "thinned: " + ",".join(report.thinned)


@pytest.mark.parametrize("name", SIGNED)
def test_signing_vector(name: str) -> None:
    want = INDEX[name]["verify"]
    offset = "-" if want["offset"] is None else str(want["offset"])
    expected = "OK" if want["code"] is None else f"{want['code']} {offset} {want['field']}"
    keys = [VECTORS / k for k in want["keys"]]  # some name other key files (a compressed-point key)
    unsigned = "unsigned golden: " + ",".join(want.get("unsigned_golden", []))
    assert cpp_lines(VECTORS / name, keys) == [expected, "thinned: " + ",".join(want["thinned"]), unsigned]
    check = want.get("refuse_downgrade")
    if check is not None:  # step 11 for the device the index names, as `fatpte verify --refuse-downgrade`
        offset = "-" if check["offset"] is None else str(check["offset"])
        expected = "OK" if check["code"] is None else f"{check['code']} {offset} {check['field']}"
        got = cpp(VECTORS / name, keys, "--refuse-downgrade", check["device"])
        assert got[0] == expected, got


def _mutants(data: bytes, rng: random.Random, count: int) -> list[bytes]:
    """`data` (a signed container whose bundle is last) with its bundle damaged: bytes flipped,
    cut, or JSON punctuation swapped; the region's size, CRC32C and header checksum kept sound so
    the bundle, not the container, is what fails."""
    slot = L.SIGNATURE_SLOT_OFFSET
    off = int.from_bytes(data[slot : slot + 8], "little")
    bundle = data[off:]
    out = []
    for _ in range(count):
        b = bytearray(bundle)
        kind = rng.randrange(4)
        if kind == 0:
            for _ in range(rng.randrange(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 1:
            del b[rng.randrange(len(b)) :]
        elif kind == 2:
            at = rng.randrange(len(b))
            b[at:at] = rng.choice([b"{", b"[", b'"', b",", b"\\u", b"1e5", b"-", b"\xc3"])
        else:
            at = rng.randrange(len(b))
            b[at] = ord(rng.choice('{}[]":,0Aa=+/\\'))
        if not b:
            b = bytearray(b"x")
        buf = bytearray(data[:off]) + b
        buf[slot + 8 : slot + 12] = len(b).to_bytes(4, "little")
        buf[slot + 12 : slot + 16] = crc32c(bytes(b)).to_bytes(4, "little")
        buf[32:40] = len(buf).to_bytes(8, "little")
        at = L.HEADER_CHECKSUM_OFFSET
        end = int.from_bytes(buf[8:12], "little") + int.from_bytes(buf[16:20], "little") * int.from_bytes(
            buf[12:16], "little") + int.from_bytes(buf[24:28], "little") * int.from_bytes(buf[20:24], "little")
        buf[at : at + 4] = crc32c(bytes(buf[:at]) + b"\0\0\0\0" + bytes(buf[at + 4 : end])).to_bytes(4, "little")
        out.append(bytes(buf))
    return out


@pytest.mark.parametrize("base", ["v2-signed.nfat", "v2-signed-p256.nfat"])
def test_damaged_bundles_give_the_same_error(base: str, tmp_path: Path) -> None:
    rng = random.Random(18)
    data = (VECTORS / base).read_bytes()
    codes = set()
    for i, mutant in enumerate(_mutants(data, rng, 150)):
        path = tmp_path / f"m{i}.nfat"
        path.write_bytes(mutant)
        got, want = cpp(path), python(path)
        assert got == want, f"mutant {i} of {base}"
        codes.add(want[0].split()[0])
    assert {"E1302", "E1304"} <= codes, codes  # damage reached the JSON and the signature


KEY_FILES = json.loads((VECTORS / "index.json").read_text())["trusted_key_files"]


@pytest.mark.parametrize("name", sorted(KEY_FILES))
def test_trusted_key_file(name: str) -> None:
    """`fatpte-verify --trusted-key FILE` trusts the key files the index accepts (exit 0 or 5: the
    key was loaded) and refuses the others (exit 2, E0702), as Python's load_public_key does."""
    done = subprocess.run([str(tool()), str(VECTORS / "v2-signed.nfat"), "--trusted-key", str(VECTORS / name)],
                          capture_output=True, text=True, check=False, timeout=60)
    if KEY_FILES[name]["accepted"]:
        assert done.returncode in (0, 5), done.stderr
    else:
        assert done.returncode == 2 and "E0702" in done.stderr, (done.returncode, done.stderr)


@pytest.mark.parametrize("kind", ["fifo", "device", "missing", "directory", "text", "private key"])
def test_a_bad_trusted_key_file_exits_as_in_python(kind: str, tmp_path: Path) -> None:
    """Issue 42, point 8: the same bad trusted-key file ends `fatpte verify --key` and
    `fatpte-verify --trusted-key` with the same exit code, the one docs/cli.md's table gives its
    error's category: 4 for a file that cannot be read as a regular file (E0811, E0801), 2 for one
    that holds no single public key (E0702, a malformed input the user gave). It was 4 in Python
    and 2 in fatpte-verify."""
    path = tmp_path / "key.pem"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "text":
        path.write_text("this is not a key\n")
    elif kind == "private key":
        path = VECTORS / "refused-private-key-first.pub.pem"
    want = {"fifo": (4, "E0811"), "device": (4, "E0811"), "missing": (4, "E0801"), "directory": (4, "E0811"),
            "text": (2, "E0702"), "private key": (2, "E0702")}[kind]
    signed = str(VECTORS / "v2-signed.nfat")
    cpp_done = subprocess.run([str(tool()), signed, "--trusted-key", str(path)], capture_output=True, text=True,
                              check=False, timeout=60)
    py_done = subprocess.run([sys.executable, "-m", "fatpte", "verify", signed, "-q", "--key", str(path)],
                             capture_output=True, text=True, check=False, timeout=60)
    assert (cpp_done.returncode, py_done.returncode) == (want[0], want[0]), (cpp_done.stderr, py_done.stderr)
    assert want[1] in cpp_done.stderr and want[1] in py_done.stderr, (cpp_done.stderr, py_done.stderr)


@pytest.mark.parametrize("name", sorted(n for n in SIGNED if "unsigned_golden" in INDEX[n]["verify"]))
def test_a_signed_self_test_load_of_a_golden_vector(name: str, tmp_path: Path) -> None:
    """Issue 42, G1: `fatpte-run --require-signature --self-test` on the golden signing vectors stops
    where verify does (E1308 at the entry's golden calls when a revision 3 statement does not vouch
    for them: never a fallback), and otherwise gets past the signature to the entries (which no
    backend here runs: their payloads are blobs, so exit 3; tests/loader/test_cpp_golden.py runs
    the same cases on real programs)."""
    want = INDEX[name]["verify"]
    run = loader_build("release", "fatpte-run") / "fatpte-run"
    calls = tmp_path / "calls.json"
    calls.write_text("[]")
    args = [str(run), str(VECTORS / name), "--inputs", str(calls), "--require-signature", "--self-test"]
    for k in want["keys"]:
        args += ["--trusted-key", str(VECTORS / k)]
    done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    if want["code"] is None:
        assert done.returncode == 3 and "E13" not in done.stderr, done.stderr
    else:
        assert done.returncode == 5, done.stderr
        assert f"{want['code']} at {want['offset']:#x} ({want['field']})" in done.stderr, done.stderr


@pytest.mark.parametrize("size", [L.MAX_SIGNATURE_SIZE + 1, 0], ids=["past-the-limit", "empty"])
def test_a_detached_signature_past_the_limit_or_empty_is_malformed_in_both(size: int, tmp_path: Path) -> None:
    """A detached signature file of MAX_SIGNATURE_SIZE + 1 bytes is a bundle past its limit, an
    empty one no bundle at all: E1302 at `signature`, no offset, exit 5 (specs/nfat-signature.md
    section 6 steps 1 and 2), from `fatpte verify --signature` and `fatpte-verify --signature`
    alike. fatpte-verify refused the first as an input too large (E0702, exit 2) before the
    container was opened, and took the second for no detached signature (E1301: the C API read a
    size of 0 as none)."""
    sig = tmp_path / "detached.sig"
    with open(sig, "wb") as f:
        f.truncate(size)  # sparse: no 64 MiB written
    stripped = VECTORS / "v2-sig-stripped.nfat"
    args = [str(tool()), str(stripped), "--signature", str(sig)]
    for k in KEYS:
        args += ["--trusted-key", str(k)]
    cpp_done = subprocess.run(args, capture_output=True, text=True, check=False, timeout=60)
    py_done = subprocess.run([sys.executable, "-m", "fatpte", "verify", str(stripped), "-q", "--signature", str(sig),
                              *[a for k in KEYS for a in ("--key", str(k))]],
                             capture_output=True, text=True, check=False, timeout=60)
    assert (cpp_done.returncode, py_done.returncode) == (5, 5), (cpp_done.stderr, py_done.stderr)
    assert cpp_done.stdout.splitlines()[0] == "E1302 - signature", cpp_done.stdout
    assert "E1302" in py_done.stdout + py_done.stderr, (py_done.stdout, py_done.stderr)
    first = verify(stripped, load_trusted_keys(KEYS), signature=sig).first_error
    assert first is not None and (first.code.tag, first.offset, first.field) == ("E1302", None, "signature")
