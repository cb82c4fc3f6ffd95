"""The loader cross-built for Linux aarch64 and run under qemu-aarch64 (issues 5 and 29).

`make test-aarch64` (part of `make test`) installs Debian's cross compiler and qemu-user, unpacks
the aarch64 ExecuTorch SDK and Debian's arm64 OpenSSL and GoogleTest, builds the full loader into
build/loader-aarch64 (libfatpte, fatpte-run, the fat delegate's library, et_module_runner, the
example backends, the GoogleTest suite, which ctest runs under qemu), then runs these tests; a
missing build fails them there (tests/loader/aarch64_builds.py) and skips them elsewhere.

Checked here: the build is that configuration (ExecuTorch and signatures on, ctest's emulator
with a CPU model whose int8 results are right); the dense example's `dense_neon` backend is chosen
with the Raspberry Pi 5 profile, loads and runs, and its output equals a forced `dense_ref` run
and the Python reference within 1e-5; the host probe reports aarch64 with asimd; a signed tier
container is verified by the aarch64 fatpte-run (OpenSSL's arm64 libcrypto opened with dlopen)
before its entry runs, and one signed by another key is refused with exit 5. The feature-tier
matrix is test_aarch64_tiers.py's, the named profiles against the probe test_aarch64_profiles.py's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from fatpte.ops import signing
from tests.loader.aarch64_builds import BUILD, MATRIX, require
from tests.loader.test_cpp_dispatch import _example, close, outputs
from tests.paths import ROOT

PI5 = ROOT / "specs" / "devices" / "raspberry-pi-5.json"
TEST_CPU = "max,sme=off"  # the Makefile's AARCH64_TEST_CPU


@pytest.fixture(scope="module")
def cpu() -> Any:
    require()
    return MATRIX.emulated_cpu(TEST_CPU)


def test_the_aarch64_build_is_the_full_loader_with_executorch_and_signatures() -> None:
    require()
    cache = (BUILD / "CMakeCache.txt").read_text(encoding="utf-8")
    for setting in ("FATPTE_EXECUTORCH:BOOL=ON", "FATPTE_SIGNATURES:BOOL=ON", "FATPTE_BUILD_TESTS:BOOL=ON"):
        assert setting in cache
    assert re.search(r"^FATPTE_LIBCRYPTO_SONAME:STRING=libcrypto\.so\.3$", cache, re.MULTILINE)
    assert f"{MATRIX.AARCH64_SDK_LIB.parent}/share/cmake" in cache  # the aarch64 SDK, not this machine's
    for built in ("fatpte-run", "libfatpte.so", "libexecutorch_backend_fatpte.so", "et_module_runner",
                  "fatpte_tests", "backends/libfatpte_backend_dense_neon.so"):
        head = (BUILD / built).read_bytes()[:20]
        assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183, built  # EM_AARCH64
    # ctest runs the suite under qemu with a CPU model that computes int8 right (not qemu's default, max).
    discovered = next(BUILD.glob("fatpte_tests*_include.cmake")).read_text(encoding="utf-8")
    assert f"qemu-aarch64;-L;/usr/aarch64-linux-gnu;-cpu;{TEST_CPU};-E;LD_LIBRARY_PATH=" in discovered


def test_neon_runs_and_matches_dense_ref_and_python(cpu: Any, tmp_path: Path) -> None:
    ex = _example()
    container = ex.pack_example(tmp_path / "dense.nfat", neon=True)
    values = ex.example_input()
    inp = tmp_path / "input.txt"
    inp.write_text(" ".join(f"{v:.9g}" for v in values))
    want = ex.reference(values)
    common = (str(container), "--device", str(PI5), "--backend-path", str(BUILD / "backends"), "--input", str(inp))

    best = cpu.run("fatpte-run", *common, "--explain")
    assert best.returncode == 0, best.stderr
    ran, got = outputs(best.stdout)
    assert ran == "ran: dense_neon [dense_neon]"
    assert "dispatch: dense_neon [dense_neon]: loaded" in best.stdout

    forced = cpu.run("fatpte-run", *common, "--exclude", "dense_neon")
    assert forced.returncode == 0, forced.stderr
    ran_p, got_p = outputs(forced.stdout)
    assert ran_p == "ran: dense_ref [dense_ref]"

    assert close(got, want), (got, want)
    assert close(got_p, want), (got_p, want)
    assert close(got, got_p), (got, got_p)


def test_host_probe_under_qemu_reports_aarch64_with_asimd(cpu: Any) -> None:
    profile = cpu.probe()
    assert profile["arch"] == "aarch64"
    assert "asimd" in profile["cpu_features"]


def _public_key(key: ed25519.Ed25519PrivateKey, dest: Path) -> Path:
    dest.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo))
    return dest


def test_a_signed_tier_container_is_verified_then_runs_and_another_key_is_refused(tmp_path: Path) -> None:
    require()
    a76 = MATRIX.emulated_cpu("cortex-a76")
    record = json.loads((MATRIX.FIXTURES / "fixtures.json").read_text(encoding="utf-8"))["tiers"]["models"]["mlp"]
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps(record["calls"]), encoding="utf-8")
    key = ed25519.Ed25519PrivateKey.generate()
    signed = signing.sign(MATRIX.tier_container("mlp", tmp_path), key, tmp_path / "signed.nfat")
    trusted = _public_key(key, tmp_path / "trusted.pem")
    other = _public_key(ed25519.Ed25519PrivateKey.generate(), tmp_path / "other.pem")

    done = a76.run("fatpte-run", str(signed), "--inputs", str(calls), "--json", "--require-signature",
                   "--trusted-key", str(trusted))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["chosen"] == "xnnpack-int8-asimddp"
    assert any("signature: entry 'xnnpack-int8-asimddp' and its named data hash as signed" in line
               for line in doc["dispatch"]), doc["dispatch"]
    variant = record["variants"]["xnnpack-int8"]
    _, within, _ = MATRIX.largest_error([c["outputs"] for c in doc["calls"]], variant["reference"],
                                        variant["tolerance"]["reference"])
    assert within

    refused = a76.run("fatpte-run", str(signed), "--inputs", str(calls), "--require-signature",
                      "--trusted-key", str(other))
    assert refused.returncode == 5, (refused.stdout, refused.stderr)
    # libcrypto was found (no E1303): the key is what is refused.
    assert "E1305" in refused.stderr and "not among the trusted keys" in refused.stderr
    assert "call 0" not in refused.stdout
