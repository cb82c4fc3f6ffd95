"""Golden calls run by the real runtime (specs/nfat-manifest.md section 11, issue 30): containers
packed from the committed ExecuTorch fixtures with `fatpte pack --golden CALLS --golden-from
portable`, checked with `fatpte check` (fatpte-run --golden-report underneath) and served with
`fatpte-run --self-test`.

- The portable, XNNPACK fp32, fp16 and int8 lowerings of mlp and of the KV-cache model agree with
  the portable recording within their tolerances (fixtures.json "tiers", eager tolerance), the
  KV cache over three calls in order.
- Another program of the same signature in the XNNPACK entry (`fatpte replace`, checksums right):
  `check` exits 6 naming the entry, the call and the output, and `--self-test` falls back to
  portable with that reason; the golden calls of a stateful program out of order fail too.
- The C++ figures equal Python's from the saved outputs and the golden tensors.
- Golden bytes are read only when asked: a damaged golden segment stops a self-test (E0305) and
  nothing else; a signed self-test hashes the golden tensors against the statement.

Release and ASan builds run (a missing build is skipped with the reason; `make test` builds both).
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

import fatpte
from fatpte.fileio.checksum import crc32c
from fatpte.format import layout as L
from fatpte.ops import signing
from fatpte.ops.check import compare_files
from tests.paths import ROOT
from tests.support.vectors import reseal

pytestmark = pytest.mark.loader_build("fatpte-run", sdk=True)  # `build`: tests/loader/conftest.py
MODULE_RUNNER = pytest.mark.loader_build("fatpte-run", "et_module_runner", sdk=True)
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
TIERS = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"]
FILES = {"mlp": {"portable": "mlp_portable.pte", "xnnpack": "mlp_xnnpack.pte", "xnnpack-fp16": "mlp_xnnpack_fp16.pte",
                 "xnnpack-int8": "mlp_xnnpack_int8.pte"},
         "kvcache": {"portable": "kvcache_portable_default.pte", "xnnpack": "kvcache_xnnpack_default.pte",
                     "xnnpack-fp16": "kvcache_xnnpack_fp16_default.pte",
                     "xnnpack-int8": "kvcache_xnnpack_int8_default.pte"}}
VARIANT = {"portable": "portable", "xnnpack": "xnnpack-fp32", "xnnpack-fp16": "xnnpack-fp16",
           "xnnpack-int8": "xnnpack-int8"}


def fatpte_cli(build: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fatpte", "--runtime", str(build / "fatpte-run"),
                           *map(str, args)], capture_output=True, text=True, timeout=600, check=False)


def run(build: Path, *args: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(build / "fatpte-run"), *map(str, args)], capture_output=True, text=True,
                          timeout=600, check=False)


def calls_of(model: str, tmp: Path) -> Path:
    """The model's tier calls (inputs, and the eager outputs, which --golden-from replaces)."""
    path = tmp / f"{model}-calls.json"
    path.write_text(json.dumps(TIERS[model]["calls"]))
    return path


def pack(build: Path, model: str, tmp: Path, entries: tuple[str, ...] = tuple(FILES["mlp"])) -> Path:
    """The model's lowerings, XNNPACK ones first, recorded from portable, each entry's tolerance its
    variant's eager tolerance from fixtures.json."""
    out = tmp / f"{model}.nfat"
    args: list[Any] = ["pack", "-q", "-f", "-o", out]
    for name in entries:
        args.append(f"{name}:{'portable' if name == 'portable' else 'xnnpack'}={FIXTURES / FILES[model][name]}")
        tol = TIERS[model]["variants"][VARIANT[name]]["tolerance"]["eager"]
        args += ["--golden-tolerance", f"{name}={tol['atol']},{tol['rtol']}"]
        if name != "portable":
            args += ["--priority", f"{name}=10"]
    done = fatpte_cli(build, *args, "--golden", calls_of(model, tmp), "--golden-from", "portable")
    assert done.returncode == 0, done.stderr
    assert fatpte.validate(out).ok
    return out


def impostor(build: Path, tmp: Path) -> Path:
    """mlp's XNNPACK and portable lowerings with golden calls recorded from portable, then the
    XNNPACK entry replaced by the int8 lowering: the same signature, outputs about 1% off the fp32
    model's, so only running it against its golden calls tells (`tmp/bad.nfat`)."""
    container = pack(build, "mlp", tmp, ("xnnpack", "portable"))
    bad = tmp / "bad.nfat"
    done = fatpte_cli(build, "replace", container, FIXTURES / FILES["mlp"]["xnnpack-int8"], "--name", "xnnpack",
                      "-o", bad)
    assert done.returncode == 0, done.stderr
    return bad


def check(build: Path, container: Path) -> tuple[int, dict[str, Any], str]:
    done = fatpte_cli(build, "check", container, "--json")
    text = fatpte_cli(build, "check", container)
    assert text.returncode == done.returncode, text.stderr
    return done.returncode, json.loads(done.stdout), text.stdout


@pytest.mark.parametrize("model", ["mlp", "kvcache"])
def test_every_lowering_agrees_with_the_portable_recording(build: Path, model: str, tmp_path: Path) -> None:
    container = pack(build, model, tmp_path)
    rc, report, text = check(build, container)
    assert rc == 0, text
    assert report["ok"] and [e["state"] for e in report["entries"]] == ["agrees"] * 4
    calls = len(TIERS[model]["calls"])
    for e in report["entries"]:
        assert [(o["call"], o["output"]) for o in e["outputs"]] == [(k, 0) for k in range(calls)]
        tol = TIERS[model]["variants"][VARIANT[e["name"]]]["tolerance"]["eager"]
        for o in e["outputs"]:
            assert o["passed"] and o["max_abs"] <= o["bound"]
            assert (o["atol"], o["rtol"]) == (max(tol["atol"], 1e-5), max(tol["rtol"], 1e-5))
    portable = next(e for e in report["entries"] if e["name"] == "portable")
    assert all(o["max_abs"] == 0 for o in portable["outputs"])  # it recorded them
    fp32 = next(e for e in report["entries"] if e["name"] == "xnnpack")
    assert all(o["max_rel"] < 1e-5 for o in fp32["outputs"])
    assert len(report["pairs"]) == 6 * calls and all(p["passed"] for p in report["pairs"])
    assert "agrees with its golden calls" in text and "xnnpack-int8" in text


def test_another_program_of_the_signature_is_caught(build: Path, tmp_path: Path) -> None:
    bad = impostor(build, tmp_path)
    assert fatpte.validate(bad).ok  # well formed: only running it tells
    rc, report, text = check(build, bad)
    assert rc == 6, text
    assert report["error"]["code"] == "E1401"
    assert "entry xnnpack: golden call 0, output 0: max abs" in report["error"]["message"]
    assert [e["state"] for e in report["entries"]] == ["disagrees", "agrees"]
    assert "FAIL" in text and "E1401" in text
    served = run(build, bad, "--self-test", "--explain")
    assert served.returncode == 0, served.stderr
    assert "dispatch: xnnpack [xnnpack]: self-test failed: E1401: golden call 0 of method 'forward', output 0" \
        in served.stdout
    assert "ran: portable [portable]" in served.stdout
    assert run(build, bad, "--self-test", "--no-fallback").returncode == 3


def test_stateful_calls_run_in_order_and_serving_starts_fresh(build: Path, tmp_path: Path) -> None:
    container = pack(build, "kvcache", tmp_path, ("xnnpack", "portable"))
    calls = calls_of("kvcache", tmp_path)
    plain = run(build, container, "--inputs", calls, "--json")
    tested = run(build, container, "--inputs", calls, "--json", "--self-test")
    assert plain.returncode == tested.returncode == 0, tested.stderr
    # The self-test made three calls on the cache; the calls served after it see a fresh one.
    assert json.loads(tested.stdout)["calls"] == json.loads(plain.stdout)["calls"]
    assert any("loaded again" in line for line in json.loads(tested.stdout)["dispatch"])
    # The same golden calls in another order: the cache holds other rows, the outputs differ.
    reordered = tmp_path / "reordered.json"
    recorded = fatpte.open(container)
    assert recorded.manifest is not None
    golden = recorded.manifest.entries[0].golden
    recorded.close()
    doc = json.loads(calls.read_text())
    doc = [doc[1], doc[0], doc[2]]
    reordered.write_text(json.dumps(doc))
    swapped = tmp_path / "swapped.nfat"
    assert fatpte_cli(build, "pack", "-q", "-o", swapped, f"xnnpack:xnnpack={FIXTURES / FILES['kvcache']['xnnpack']}",
                      "--golden", reordered).returncode == 0
    rc, report, _ = check(build, swapped)
    assert rc == 6 and report["entries"][0]["state"] == "disagrees"
    assert len(golden) == 3


def test_cpp_figures_equal_pythons_from_the_saved_outputs(build: Path, tmp_path: Path) -> None:
    container = pack(build, "mlp", tmp_path, ("xnnpack-fp16", "portable"))
    saved = tmp_path / "out"
    saved.mkdir()
    done = run(build, container, "--entry", "xnnpack-fp16", "--golden-report", "--json", "--save-outputs", saved)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)["golden"]
    with fatpte.open(container) as c:
        assert c.manifest is not None
        for k, call in enumerate(report["calls"]):
            for j, o in enumerate(call["outputs"]):
                want = tmp_path / f"want-{k}-{j}.bin"
                want.write_bytes(bytes(c.named_data(o["key"])))
                max_abs = compare_files(saved / f"call-{k}-output-{j}.bin", want, o["dtype"])
                values = [abs(x) for x in memoryview(want.read_bytes()).cast("f") if math.isfinite(x)]
                assert max_abs == o["max_abs"] and max(values) == o["max_want"]
                assert o["bound"] == o["atol"] + o["rtol"] * o["max_want"]
                assert o["passed"] is (max_abs <= o["bound"])


def _golden_segment(container: Path) -> tuple[int, int, int]:
    """(offset, size, segment-table record offset) of the first golden tensor's segment."""
    with fatpte.open(container) as c:
        assert c.manifest is not None
        key = c.manifest.entries[0].golden[0].outputs[0].key
        s = c.segments[c.manifest.keys[key]]
        return s.offset, s.size, c.header.header_size + len(c.entries) * c.header.entry_size + \
            s.index * c.header.segment_entry_size


def test_golden_bytes_are_read_only_for_a_self_test(build: Path, tmp_path: Path) -> None:
    container = pack(build, "mlp", tmp_path, ("xnnpack", "portable"))
    damaged = tmp_path / "damaged.nfat"
    data = bytearray(container.read_bytes())
    offset, _, _ = _golden_segment(container)
    data[offset] ^= 0x40  # its CRC32C no longer matches
    damaged.write_bytes(data)
    calls = calls_of("mlp", tmp_path)
    assert run(build, damaged, "--inputs", calls).returncode == 0  # never reads it
    stopped = run(build, damaged, "--inputs", calls, "--self-test")
    assert stopped.returncode == 1 and "E0305" in stopped.stderr
    assert fatpte_cli(build, "check", damaged).returncode == 1


def test_a_signed_self_test_hashes_the_golden_tensors(build: Path, tmp_path: Path) -> None:
    container = pack(build, "mlp", tmp_path, ("xnnpack", "portable"))
    key = ed25519.Ed25519PrivateKey.generate()
    pub = tmp_path / "key.pub.pem"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    signed = signing.sign(container, key, tmp_path / "signed.nfat")
    ok = run(build, signed, "--self-test", "--require-signature", "--trusted-key", pub, "--explain")
    assert ok.returncode == 0, ok.stderr
    assert "self-test: 3 golden calls of method 'forward' passed" in ok.stdout
    # A golden tensor changed with its CRC32C made right: only the signature can tell.
    forged = tmp_path / "forged.nfat"
    data = bytearray(signed.read_bytes())
    offset, size, record = _golden_segment(signed)
    data[offset] ^= 0x01
    at = record + L.RECORDS["v2_segment"].offsets["checksum"][0]
    data[at : at + 4] = crc32c(bytes(data[offset : offset + size])).to_bytes(4, "little")
    assert reseal(data)
    forged.write_bytes(data)
    assert run(build, forged, "--inputs", calls_of("mlp", tmp_path), "--require-signature", "--trusted-key",
               pub).returncode == 0  # the load hashes only what it loads
    refused = run(build, forged, "--self-test", "--require-signature", "--trusted-key", pub)
    assert refused.returncode == 5 and "E1310" in refused.stderr
    # The golden report of a signed load hashes them too (issue 42: it made the calls unchecked).
    reported = run(build, forged, "--golden-report", "--require-signature", "--trusted-key", pub)
    assert reported.returncode == 5 and "E1310" in reported.stderr, reported.stderr


def test_entries_this_machine_cannot_run_are_listed_with_the_reason(build: Path, tmp_path: Path) -> None:
    toml = tmp_path / "tiers.pack.toml"
    text = (FIXTURES / "mlp_tiers.pack.toml").read_text().replace('payload = "', f'payload = "{FIXTURES}/')
    (tmp_path / "calls.json").write_text(json.dumps(TIERS["mlp"]["calls"]))
    toml.write_text('golden = "calls.json"\ngolden_from = "portable"\n' + text)
    out = tmp_path / "tiers.nfat"
    done = fatpte_cli(build, "pack", "-q", "-o", out, "--from", toml)
    assert done.returncode == 0, done.stderr
    # The aarch64 runner is looked for before the emulator (fatpte/ops/runner.py): without one the
    # reason names the variable that gives it, whether or not qemu-aarch64 is installed.
    runner_given = bool(os.environ.get("FATPTE_RUN_AARCH64"))
    rc, report, text_out = check(build, out)
    states = {e["name"]: (e["state"], e["reason"]) for e in report["entries"]}
    assert states["portable"][0] == "agrees" and states["xnnpack-fp32-avx2"][0] in ("agrees", "cannot run")
    for name in ("xnnpack-int8-asimddp", "xnnpack-fp16-asimdhp", "xnnpack-fp32-aarch64"):
        state, reason = states[name]
        assert state == "cannot run" and "arch: needs one of aarch64" in reason
        assert ("no qemu-aarch64" in reason) if runner_given else ("FATPTE_RUN_AARCH64" in reason)
    # The strict gate (issue 36): the three aarch64 entries did not run their golden calls here.
    assert rc == 7 and not report["ok"] and "not run:" in text_out


def _merged_mlp(tmp_path: Path) -> tuple[list[dict[str, Any]], list[str], Path]:
    """mlp's XNNPACK and portable programs merged into a fat program with golden calls recorded
    from portable's reference outputs: (the calls, each call's input as a raw file, the program)."""
    tier = TIERS["mlp"]
    reference = tier["variants"]["portable"]["reference"]
    calls = [{"inputs": c["inputs"], "outputs": out} for c, out in zip(tier["calls"], reference)]
    inputs = []
    for k, c in enumerate(calls):
        path = tmp_path / f"in{k}.bin"
        path.write_bytes(struct.pack(f"<{len(c['inputs'][0]['values'])}f", *c["inputs"][0]["values"]))
        inputs.append(str(path))
    good = fatpte.merge_programs([FIXTURES / "mlp_xnnpack.pte", FIXTURES / "mlp_portable.pte"],
                                 tmp_path / "good.pte", golden=calls)
    return calls, inputs, good


@MODULE_RUNNER
def test_the_fat_delegate_runs_the_golden_calls_when_asked(build: Path, tmp_path: Path) -> None:
    from tests.loader.test_fat_delegate_runtime import KERNELS, XNNPACK, module_run

    calls, inputs, good = _merged_mlp(tmp_path)
    wrong = [{"inputs": c["inputs"], "outputs": [{**o, "values": [v + 0.5 for v in o["values"]]} for o in c["outputs"]]}
             for c in calls]
    bad = fatpte.merge_programs([FIXTURES / "mlp_xnnpack.pte", FIXTURES / "mlp_portable.pte"],
                                tmp_path / "bad.pte", golden=wrong)
    on = ("--option", "FatpteBackend:self_test=1")
    # Without XNNPACK's library the nested portable program runs: with the option, after its calls.
    plain = module_run(build, good, libs=(KERNELS,), calls=inputs)
    tested = module_run(build, good, *on, libs=(KERNELS,), calls=inputs)
    assert plain.returncode == tested.returncode == 0, tested.stderr
    assert tested.stdout == plain.stdout  # served from a fresh load
    assert "self-test: 3 golden calls passed" in tested.stderr and "self-test" not in plain.stderr
    refused = module_run(build, bad, *on, libs=(KERNELS,), calls=inputs)
    assert refused.returncode != 0 and "self-test failed: E1401: golden call 0 of method 'forward', output 0" \
        in refused.stderr
    assert module_run(build, bad, libs=(KERNELS,), calls=inputs).returncode == 0  # off by default
    # An XNNPACK payload entry is a backend's blob, not a whole program: its golden calls, had it
    # any, are not run by the fat delegate (docs/golden.md).
    assert module_run(build, bad, *on, libs=(KERNELS, XNNPACK), calls=inputs).returncode == 0



@pytest.mark.loader_build("fatpte-run", "libfatpte.so", sdk=True, only="release")
def test_a_load_without_the_self_test_reads_no_golden_byte(build: Path, tmp_path: Path) -> None:
    """Counted through the release library's range reader (bench/op_golden.py measures the same)."""
    from bench.op_golden import reader_bytes

    container = pack(build, "kvcache", tmp_path, ("xnnpack", "portable"))
    big = tmp_path / "big.nfat"
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4096)  # 1 MiB, after which the segments lie
    assert fatpte_cli(build, "add", container, f"cuda:cuda={tmp_path / 'blob.bin'}", "-o", big).returncode == 0
    call = TIERS["kvcache"]["calls"][0]
    without = reader_bytes(big, call, self_test=False)
    tested = reader_bytes(big, call, self_test=True)
    with fatpte.open(big) as c:
        assert c.manifest is not None
        keys = c.manifest.entries[0].golden_keys()
        assert min(c.segments[c.manifest.keys[k]].offset for k in keys) > 1 << 20
        size = sum(c.segments[c.manifest.keys[k]].size for k in keys)
    assert without["golden"] == 0 and tested["golden"] == size
    assert tested["bytes"] - without["bytes"] == size


def _forged_golden(build: Path, tmp: Path, revision: int) -> tuple[Path, Path, Path]:
    """Issue 42, G1, as the issue describes it: the best signed entry ('xnnpack', priority 10) packed
    without golden calls, the container signed (a statement of `revision`: 3 states every entry's
    golden digest, 2 does not), then, without any key, golden calls added to 'xnnpack' that name the
    golden tensors the container already holds (signed keys), each expecting another call's outputs,
    so that the entry would fail them. Returns (the forged container, the public key, the inputs)."""
    from tests.support.vectors import (
        bundle_of,
        golden_of_entries,
        signed_before_golden,
        with_bundle,
        with_golden,
    )
    from tests.support.vectors import signed as signed_bytes

    packed = pack(build, "mlp", tmp, ("xnnpack", "portable"))
    calls = golden_of_entries(packed.read_bytes())["portable"]
    plain = with_golden(packed.read_bytes(), "xnnpack", ())
    key = ed25519.Ed25519PrivateKey.generate()
    pub = tmp / "key.pub.pem"
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    signed = signed_bytes(plain, key)
    if revision == 2:
        signed = signed_before_golden(signed, key)
    wrong = tuple(c._replace(outputs=calls[(k + 1) % len(calls)].outputs) for k, c in enumerate(calls))
    forged = tmp / f"forged-r{revision}.nfat"
    forged.write_bytes(with_bundle(signed_bytes(with_golden(plain, "xnnpack", wrong), key), bundle_of(signed)))
    assert fatpte.validate(forged).ok  # nothing but the signature can tell
    return forged, pub, calls_of("mlp", tmp)


@pytest.mark.parametrize("revision", [3, 2])
def test_forged_golden_calls_never_make_a_signed_load_serve_a_weaker_entry(build: Path, revision: int,
                                                                           tmp_path: Path) -> None:
    """`fatpte-run --require-signature --refuse-downgrade --self-test` on golden calls added without
    a key to the best signed entry: a statement of revision 3 vouches for the entry's calls (none),
    so the container is refused (E1308 at its golden calls, exit 5, nothing served); one of revision
    2 vouches for none of them, so they are not made and the best signed entry is served, the
    attempt saying why (specs/nfat-signature.md section 6.1). Never portable, exit 0, as before."""
    forged, pub, inputs = _forged_golden(build, tmp_path, revision)
    done = run(build, forged, "--inputs", inputs, "--require-signature", "--trusted-key", pub, "--refuse-downgrade",
               "--self-test", "--json")
    if revision == 3:
        assert done.returncode == 5, done.stderr
        assert "E1308" in done.stderr and "manifest.entries[0].golden" in done.stderr, done.stderr
        assert "portable" not in done.stdout
        return
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["chosen"] == "xnnpack", doc["dispatch"]
    assert any("self-test: not run: the signature does not vouch for the golden calls of entry 'xnnpack'" in line
               for line in doc["dispatch"]), doc["dispatch"]
    assert not any("self-test failed" in line for line in doc["dispatch"]), doc["dispatch"]
    # The golden report of a signed load makes none of them either, and says why.
    report = run(build, forged, "--golden-report", "--entry", "xnnpack", "--require-signature", "--trusted-key", pub,
                 "--json")
    assert report.returncode == 0, report.stderr
    golden = json.loads(report.stdout)["golden"]
    assert golden["unsigned_calls"] and golden["passed"] and golden["calls"] == [], golden


@pytest.mark.parametrize("revision", [3, 2])
@pytest.mark.loader_build("fatpte-run", "fatpte-verify", sdk=True)
def test_verify_reports_golden_calls_the_signature_does_not_vouch_for(build: Path, revision: int,
                                                                      tmp_path: Path) -> None:
    """`fatpte verify` and `fatpte-verify` on the same forged container: E1308 at the entry's golden
    calls for a statement of revision 3; for one of revision 2 verified, the calls reported as
    unsigned ('xnnpack'; 'portable''s are covered by the digest its signed provenance states)."""
    forged, pub, _ = _forged_golden(build, tmp_path, revision)
    py = fatpte_cli(build, "verify", forged, "--key", pub, "--json")
    report = json.loads(py.stdout)
    cpp = subprocess.run([str(build / "fatpte-verify"), str(forged), "--trusted-key", str(pub)], capture_output=True,
                         text=True, timeout=120, check=False)
    lines = cpp.stdout.splitlines()
    if revision == 3:
        assert py.returncode == cpp.returncode == 5, (py.stderr, cpp.stderr)
        first = report["findings"][0]
        assert (first["code"], first["field"]) == ("E1308", "manifest.entries[0].golden")
        assert lines[0] == f"E1308 {first['offset']} manifest.entries[0].golden"
        assert report["unsigned_golden"] == [] and lines[2] == "unsigned golden: "
        return
    assert py.returncode == cpp.returncode == 0, (py.stderr, cpp.stderr)
    assert report["ok"] and report["unsigned_golden"] == ["xnnpack"]
    assert lines == ["OK", "thinned: ", "unsigned golden: xnnpack"]
    text = fatpte_cli(build, "verify", forged, "--key", pub)
    assert "golden calls of xnnpack are not signed" in text.stdout, text.stdout


def misnamed(container: bytes, names: tuple[str, ...]) -> bytes:
    """`container` with the golden calls of the entries `names` naming a method no program has:
    each call's method offset aimed at the name of an entry (the first whose name lies past every
    such offset: flatbuffers offsets point forward), the digest of their calls restated, the
    checksums resealed. E0422: the container is invalid."""
    from fatpte.manifest import model as M
    from tests.support.vectors import ManifestMap

    data = bytearray(container)
    with fatpte.Container.from_buffer(bytes(data)) as c:
        base, size = c.header.manifest_offset, c.header.manifest_size
        assert c.manifest is not None
        entries = list(c.manifest.entries)
    where = ManifestMap(data, base)
    chosen = [(i, e) for i, e in enumerate(entries) if e.name in names]
    slots = [where.slot(f"entries[{i}].golden[{k}].method") for i, e in chosen for k in range(len(e.golden))]
    target, method = min((where.locate(f"entries[{i}].name")[0] - 4, e.name) for i, e in enumerate(entries)
                         if where.locate(f"entries[{i}].name")[0] - 4 > max(slots))
    for slot in slots:
        data[slot : slot + 4] = (target - slot).to_bytes(4, "little")
    for _, e in chosen:
        old = M.golden_digest(e.golden).encode()
        new = M.golden_digest([x._replace(method=method) for x in e.golden]).encode()
        data[base : base + size] = bytes(data[base : base + size]).replace(old, new)
    at, n = L.RECORDS["v2_header"].offsets["manifest_checksum"]
    data[at : at + n] = crc32c(bytes(data[base : base + size])).to_bytes(n, "little")
    assert reseal(data)
    return bytes(data)


def _calls_of_a_missing_method(tmp_path: Path) -> Path:
    """Two mlp entries with golden calls, `first` (priority 10) and `second` (other tolerances, so
    other digests); the calls of `first` name a method the program lacks (`misnamed`)."""
    out = tmp_path / "two.nfat"
    fatpte.pack([fatpte.Specialization("portable", FIXTURES / FILES["mlp"]["portable"], name=name, priority=priority,
                                       golden_tolerance={"atol": tol, "rtol": tol})
                 for name, priority, tol in (("first", 10, 1e-3), ("second", 0, 2e-3))], out,
                golden=TIERS["mlp"]["calls"])
    bad = tmp_path / "missing-method.nfat"
    bad.write_bytes(misnamed(out.read_bytes(), ("first",)))
    report = fatpte.validate(bad)
    assert [(f.code.tag, f.field) for f in report.errors][:1] == [("E0422", "manifest.entries[0].golden[0].method")]
    assert all(f.field.startswith("manifest.entries[0].") for f in report.errors), report.errors
    return bad


def test_golden_calls_of_a_method_the_program_lacks_fail_check_and_the_self_test(build: Path, tmp_path: Path) -> None:
    """Issue 42 point 8: `check` said "no entry can run" (exit 3) and `--self-test` served the entry
    as passed ("3 golden calls of other methods not made"). Now `check` exits 1 with the E0422
    finding (docs/cli.md: E04xx exit 1) and runs the other entry; the self-test fails the entry
    with E0422 and falls back to `second`, whose calls pass."""
    bad = _calls_of_a_missing_method(tmp_path)
    rc, report, text = check(build, bad)
    states = {e["name"]: (e["state"], e["reason"]) for e in report["entries"]}
    assert rc == 1 and report["error"]["code"] == "E0422", report
    assert states["first"][0] == "failed" and "has no such method" in states["first"][1]
    assert states["first"][1].endswith("(E0422 at manifest.entries[0].golden[0].method)")
    assert states["second"][0] == "agrees"
    assert "result: E0422" in text
    calls = tmp_path / "calls.json"
    calls.write_text(json.dumps([{"inputs": c["inputs"]} for c in TIERS["mlp"]["calls"]]))
    done = run(build, bad, "--self-test", "--inputs", calls, "--json")
    assert done.returncode == 0, done.stderr
    dispatch = json.loads(done.stdout)["dispatch"]
    assert any(line.startswith("dispatch: first [portable]: self-test failed: E1401: golden call 0 of method ")
               and "could not run: E0422" in line for line in dispatch), dispatch
    assert json.loads(done.stdout)["chosen"] == "second"


@MODULE_RUNNER
def test_the_fat_delegate_refuses_calls_naming_a_missing_method(build: Path, tmp_path: Path) -> None:
    """Issue 42 point 8, in the fat delegate: it checks its nested container whole when it
    initialises (golden rules included), so a nested entry whose golden calls name a method its
    program lacks is refused with E0422, self-test or not: the same finding as check and
    fatpte-run's self-test (this passed before the fix too; it holds the three to one answer)."""
    from tests.loader.test_fat_delegate_runtime import KERNELS, module_run
    from tests.support.hostile import first_delegate

    _, inputs, good = _merged_mlp(tmp_path)
    program = good.read_bytes()
    d = first_delegate(program)
    assert d.backend_id == "FatpteBackend"
    nested = program[d.offset : d.offset + d.size]
    with fatpte.Container.from_buffer(nested) as c:
        assert c.manifest is not None
        names = tuple(e.name for e in c.manifest.entries if e.golden)
    assert names
    bad = tmp_path / "bad.pte"
    bad.write_bytes(program[: d.offset] + misnamed(nested, names) + program[d.offset + d.size :])
    on = ("--option", "FatpteBackend:self_test=1")
    assert module_run(build, good, *on, libs=(KERNELS,), calls=inputs).returncode == 0
    for options in (on, ()):
        refused = module_run(build, bad, *options, libs=(KERNELS,), calls=inputs)
        assert refused.returncode != 0, refused.stderr
        assert "E0422" in refused.stderr and "golden[0].method" in refused.stderr, refused.stderr
