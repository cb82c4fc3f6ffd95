"""The load policy lives in libfatpte (fatpte/dispatch.hpp `load(container, choice, options, out)`,
C `fatpte_load_for`), and fatpte-run is a thin tool over it: a required signature is verified
before anything is tried; the eligible entries are tried by index in rank order; for each, its
backends and libraries are found before its bytes are hashed, and its bytes hashed before it is
loaded; every attempt is kept, in signed and unsigned runs, in `--explain` and in `--json`, also
when nothing loads. Real ExecuTorch programs (the committed KV-cache fixture, XNNPACK and portable),
run through the release build and under ASan + UBSan."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import fatpte
from tests.builds import loader_build  # and `exe`, the loader-build fixture: tests/loader/conftest.py
from tests.paths import ROOT
from tests.scripts import load_script

FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
FATPTE = [sys.executable, "-m", "fatpte"]
WITHHELD = ("--backend-lib", "XnnpackBackend=")


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


def _keys(tmp: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = tmp / "k.pem", tmp / "k.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


@pytest.fixture
def two_of_one_backend_word(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The reproduction of issue 31: an entry named `portable` (XNNPACK) and an entry `cpu` whose
    backend id is `portable`, signed, as a new user packs and signs them with the command line."""
    container = tmp_path / "m.nfat"
    # Aligned to 64 KiB: each payload on pages of its own, past the 64 KiB a reader fetches first.
    subprocess.run([*FATPTE, "pack", "-q", "--align", "65536", "-o", str(container),
                    f"portable:xnnpack={FIXTURES / 'kvcache_xnnpack.pte'}",
                    f"cpu:portable={FIXTURES / 'kvcache_portable.pte'}"], check=True, capture_output=True)
    private, public = _keys(tmp_path)
    subprocess.run([*FATPTE, "sign", "-q", str(container), "--key", str(private)], check=True, capture_output=True)
    calls = _example().write_calls("kvcache", tmp_path / "calls.json")
    return container, public, calls


def _run(exe: Path, container: Path, calls: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), str(container), "--inputs", str(calls), *args], check=False,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_fallback_goes_by_entry_not_by_word(exe: Path, two_of_one_backend_word: tuple[Path, Path, Path],
                                            signed: bool) -> None:
    container, public, calls = two_of_one_backend_word
    signature = ("--require-signature", "--trusted-key", str(public)) if signed else ()
    proc = _run(exe, container, calls, *WITHHELD, *signature, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["chosen"], doc["backend_id"]) == ("cpu", "portable")
    ex = _example()
    assert ex.mismatches([c["outputs"] for c in doc["calls"]], ex.recorded_outputs("kvcache")) == []
    # Every attempt, in the order tried, with its reason: the first skipped before it was read.
    tried = [line for line in doc["dispatch"] if line.startswith("dispatch: ")]
    assert len(tried) == 2
    assert tried[0].startswith("dispatch: portable [xnnpack]: needs ExecuTorch backend XnnpackBackend: withheld")
    assert tried[1].startswith("dispatch: cpu [portable]: loaded")
    hashed = [line for line in doc["dispatch"] if line.startswith("signature: entry")]
    assert hashed == (["signature: entry 'cpu' and its named data hash as signed"] if signed else [])
    if signed:
        assert any(line.startswith("signature: verified with key ") for line in doc["dispatch"])


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_json_keeps_every_attempt_when_nothing_loads(exe: Path, two_of_one_backend_word: tuple[Path, Path, Path],
                                                     signed: bool) -> None:
    container, public, calls = two_of_one_backend_word
    signature = ("--require-signature", "--trusted-key", str(public)) if signed else ()
    proc = _run(exe, container, calls, *WITHHELD, *signature, "--no-fallback", "--json")
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["chosen"] is None and doc["calls"] == []
    tried = [line for line in doc["dispatch"] if line.startswith("dispatch: ")]
    assert len(tried) == 1 and tried[0].startswith("dispatch: portable [xnnpack]: needs ExecuTorch backend")
    assert "E0901" in proc.stderr and "withheld by the caller" in proc.stderr


def test_a_tampered_fallback_stops_the_run(exe: Path, two_of_one_backend_word: tuple[Path, Path, Path],
                                           tmp_path: Path) -> None:
    """Bytes that do not hash as signed (E1311) are not a reason to try another entry: the run stops (exit 5)
    with the attempt saying so, before a byte of the entry reaches ExecuTorch."""
    from fatpte.fileio.checksum import crc32c
    from tests.support.vectors import reseal

    container, public, calls = two_of_one_backend_word
    data = bytearray(container.read_bytes())
    with fatpte.open(container) as c:
        cpu = c.entry("cpu")
        record = c.header.header_size + cpu.index * c.header.entry_size + 88  # its checksum
    data[cpu.offset + cpu.size // 2] ^= 1  # and its CRC32C recomputed: only the signature can tell
    data[record:record + 4] = crc32c(bytes(data[cpu.offset:cpu.end])).to_bytes(4, "little")
    assert reseal(data)
    tampered = tmp_path / "tampered.nfat"
    tampered.write_bytes(data)
    proc = _run(exe, tampered, calls, *WITHHELD, "--require-signature", "--trusted-key", str(public), "--json")
    assert proc.returncode == 5, proc.stderr
    doc = json.loads(proc.stdout)
    tried = [line for line in doc["dispatch"] if line.startswith("dispatch: ")]
    assert tried[1].startswith("dispatch: cpu [portable]: stopped: E1311")


# The device-side flow of specs/remote.md through the C API, in a process of its own: only the
# prefix, the signature region and the entry the device may load are fetched; every other byte of
# the reader's mapping is unreadable, so a loader that read (hashed) the XNNPACK entry, whose
# backend is withheld, would die on it.
# A C reader over the file argv[2] in memory, `read` listing each (offset, count) it asked for.
OPEN_READER = textwrap.dedent("""
    import ctypes, sys
    lib = ctypes.CDLL(sys.argv[1])
    data = open(sys.argv[2], "rb").read()
    read = []
    READ_AT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)
    @READ_AT
    def read_at(user, offset, buffer, count):
        read.append((offset, count))
        ctypes.memmove(buffer, data[offset:offset + count], count)
        return 0
    class Error(ctypes.Structure):
        _fields_ = [("code", ctypes.c_int), ("offset", ctypes.c_uint64), ("field", ctypes.c_char * 96),
                    ("message", ctypes.c_char * 512)]
    err = Error()
    reader = ctypes.c_void_p()
    assert lib.fatpte_reader_open(read_at, None, ctypes.c_uint64(len(data)), ctypes.byref(reader),
                                  ctypes.byref(err)) == 0, err.message
    lib.fatpte_reader_container.restype = ctypes.c_void_p
    container = ctypes.c_void_p(lib.fatpte_reader_container(reader))
""")

READER = OPEN_READER + textwrap.dedent("""
    key, fetch = sys.argv[3].encode(), [int(i) for i in sys.argv[4].split(",") if i]
    assert lib.fatpte_reader_fetch_signature(reader, ctypes.byref(err)) == 0, err.message
    for index in fetch:
        assert lib.fatpte_reader_fetch_entry(reader, index, ctypes.byref(err)) == 0, err.message
    trust = ctypes.c_void_p()
    keys = (ctypes.c_char_p * 1)(key)
    assert lib.fatpte_trust_load(keys, 1, ctypes.byref(trust), ctypes.byref(err)) == 0, err.message
    options = ctypes.c_void_p()
    assert lib.fatpte_load_options_new(ctypes.byref(options)) == 0
    assert lib.fatpte_load_options_require_signature(options, trust) == 0
    lib.fatpte_trust_free(trust)
    if sys.argv[5] == "withheld":
        assert lib.fatpte_load_options_set_library(options, b"XnnpackBackend", b"") == 0
    loaded = ctypes.c_void_p()
    status = lib.fatpte_load_for(container, None, None, 0, None, 0, options, ctypes.byref(loaded), None,
                                 ctypes.byref(err))
    assert status == 0, err.message
    index = ctypes.c_uint32()
    assert lib.fatpte_loaded_entry(loaded, ctypes.byref(index)) == 0
    print(index.value, sum(count for _, count in read))
    """)


def _entries(container: Path) -> dict[str, dict[str, int]]:
    out = subprocess.run([*FATPTE, "info", str(container), "--json"], check=True, capture_output=True, text=True)
    return {e["name"]: e for e in json.loads(out.stdout)["entries"]}


def test_a_withheld_entry_is_never_read_in_signed_mode(two_of_one_backend_word: tuple[Path, Path, Path]) -> None:
    release = loader_build("release", "libfatpte.so")
    library = release / "libfatpte.so"
    container, public, _ = two_of_one_backend_word
    entries = _entries(container)
    cpu, xnnpack = entries["cpu"], entries["portable"]
    proc = subprocess.run([sys.executable, "-c", READER, str(library), str(container), str(public),
                           str(cpu["index"]), "withheld"], check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    index, bytes_read = map(int, proc.stdout.split())
    assert index == cpu["index"]
    # What was read: the prefix and the rest of the tables, the signature, the cpu entry; never the
    # XNNPACK entry's payload.
    assert xnnpack["offset"] >= 65536 and cpu["offset"] >= 65536
    assert bytes_read <= container.stat().st_size - xnnpack["size"]
    # With XNNPACK available the XNNPACK entry is chosen; it was not fetched, so the load skips it
    # without reading a byte of it (issue 42 R6; before, reading its unfetched bytes killed the
    # process) and loads the entry that was.
    chosen = subprocess.run([sys.executable, "-c", READER, str(library), str(container), str(public),
                             str(cpu["index"]), "available"], check=False, capture_output=True, text=True,
                            timeout=300)
    assert chosen.returncode == 0, (chosen.returncode, chosen.stdout, chosen.stderr[-2000:])
    assert list(map(int, chosen.stdout.split())) == [cpu["index"], bytes_read]


UNSIGNED_READER = OPEN_READER + textwrap.dedent("""
    for index in range(2):
        assert lib.fatpte_reader_fetch_entry(reader, index, ctypes.byref(err)) == 0, err.message
    trust = ctypes.c_void_p()
    keys = (ctypes.c_char_p * 1)(sys.argv[3].encode())
    assert lib.fatpte_trust_load(keys, 1, ctypes.byref(trust), ctypes.byref(err)) == 0, err.message
    options = ctypes.c_void_p()
    assert lib.fatpte_load_options_new(ctypes.byref(options)) == 0
    assert lib.fatpte_load_options_require_signature(options, trust) == 0
    loaded = ctypes.c_void_p()
    status = lib.fatpte_load_for(container, None, None, 0, None, 0, options, ctypes.byref(loaded), None,
                                 ctypes.byref(err))
    print(status, err.field.decode(), err.message.decode())
    """)


def test_a_signed_load_through_the_reader_never_reads_an_unfetched_signature(
        two_of_one_backend_word: tuple[Path, Path, Path]) -> None:
    """Issue 42 R6: the same guarantee for the signature region: a signed load through the reader
    whose caller fetched both entries but not the signature (fatpte_reader_fetch_signature) is
    refused, E0702 naming the region, instead of reading pages never fetched."""
    release = loader_build("release", "libfatpte.so")
    library = release / "libfatpte.so"
    container, public, _ = two_of_one_backend_word
    with fatpte.open(container) as c:
        assert c.header.signature_offset >= 65536  # past the prefix: only a fetch reaches it
    proc = subprocess.run([sys.executable, "-c", UNSIGNED_READER, str(library), str(container), str(public)],
                          check=False, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    status, field, message = proc.stdout.split(" ", 2)
    assert (int(status), field) == (702, "header.signature_offset"), proc.stdout
    assert "not fetched (fatpte_reader_fetch_signature)" in message


def _dense(tmp: Path, listed: bool) -> tuple[Path, Path]:
    """The dense example packed for `dense_ref` alone, its entry listing its weights' keys or none."""
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    ex = load_script("loader/examples/dense_example.py")
    data = {key: ex._f32(values) for key, values in ex.weights().items()}
    container = pack([Specialization("dense_ref", ex.payload(), name="dense_ref",
                                     named_data=sorted(data) if listed else [])],
                     tmp / ("listed.nfat" if listed else "unlisted.nfat"), named_data=data)
    inp = tmp / "input.txt"
    inp.write_text(" ".join(f"{v:.9g}" for v in ex.example_input()))
    return Path(container), inp


def test_an_example_backend_gets_exactly_the_keys_its_entry_lists(exe: Path, tmp_path: Path) -> None:
    """Issue 33 S1 and S1b: the example ABI's named data are the keys the entry's manifest record
    lists, nothing else (specs/nfat-manifest.md 4.3): a backend that looks up another key finds
    nothing, so bytes that were never hashed (signed) or never fetched (a reader) never reach it."""
    backends = str(exe.parent / "backends")
    listed, inp = _dense(tmp_path, listed=True)
    ok = subprocess.run([str(exe), str(listed), "--input", str(inp), "--backend-path", backends],
                        check=False, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    unlisted, _ = _dense(tmp_path, listed=False)
    refused = subprocess.run([str(exe), str(unlisted), "--input", str(inp), "--backend-path", backends],
                             check=False, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 3, refused.stderr
    assert "the backend could not load the payload" in refused.stderr and "output:" not in refused.stdout


def test_signed_weights_of_another_entry_are_not_handed_out(exe: Path, tmp_path: Path) -> None:
    """Issue 33 S1: a signed container whose entry lists no keys, its weights changed after signing
    (each CRC32C recomputed): the run must not compute with them."""
    from fatpte.fileio.checksum import crc32c
    from fatpte.ops import signing
    from tests.support.vectors import reseal

    unlisted, inp = _dense(tmp_path, listed=False)
    private, public = _keys(tmp_path)
    subprocess.run([*FATPTE, "sign", "-q", str(unlisted), "--key", str(private)], check=True, capture_output=True)
    data = bytearray(unlisted.read_bytes())
    with fatpte.open(unlisted) as c:
        segment = c.segments[0]
        record = c.header.header_size + c.header.entry_count * c.header.entry_size + segment.index * 32 + 20
    data[segment.offset] ^= 0x40
    data[record:record + 4] = crc32c(bytes(data[segment.offset:segment.offset + segment.size])).to_bytes(4, "little")
    assert reseal(data)
    tampered = tmp_path / "tampered.nfat"
    tampered.write_bytes(data)
    assert not signing.verify(tampered, signing.load_trusted_keys([public])).ok
    proc = subprocess.run([str(exe), str(tampered), "--input", str(inp), "--backend-path", str(exe.parent / "backends"),
                           "--require-signature", "--trusted-key", str(public)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "output:" not in proc.stdout, (proc.returncode, proc.stdout, proc.stderr)


def test_a_backend_id_from_the_file_never_names_a_path(exe: Path, tmp_path: Path) -> None:
    """Issue 33 L1: a version 1 backend id may hold '/' and "..": `a/../../EVIL` would name
    `../EVIL.so` from the current folder when it holds a `libfatpte_backend_a` folder. A library
    name taken from a file is a plain file name searched in the caller's folders, or none."""
    from fatpte.format import layout as L
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    marker = tmp_path / "constructor-ran"
    source = tmp_path / "evil.c"
    source.write_text('#include <stdio.h>\n__attribute__((constructor)) static void ran(void) {\n'
                      f'  FILE* f = fopen("{marker}", "w"); if (f) fclose(f);\n}}\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "EVIL.so"), str(source)], check=True)
    work = tmp_path / "work"
    (work / "libfatpte_backend_a").mkdir(parents=True)
    container = Path(pack([Specialization("a/../../EVIL", b"\x01" * 64)], tmp_path / "v1.nfat",
                          version=L.VERSION_1))
    inp = tmp_path / "input.txt"
    inp.write_text("1 2 3\n")
    proc = subprocess.run([str(exe), str(container), "--input", str(inp), "--backend-path", str(tmp_path)],
                          cwd=work, check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert "no library is looked up for a backend id outside letters" in proc.stderr
    assert not marker.exists(), "a library named by the file was opened"


def test_a_downgrade_by_thinning_is_refused_when_asked(exe: Path, tmp_path: Path) -> None:
    """Issue 33, downgrade by thinning: a signed container thinned down to its weakest entry still
    verifies (thinning keeps signatures by design), but with --refuse-downgrade a device whose best
    signed entry was thinned away refuses it (E1308, exit 5) before any entry is tried; a device
    for which the entry left is the best runs it (specs/nfat-signature.md section 6, step 11)."""
    ex = load_script("loader/examples/dense_example.py")
    container = ex.pack_example(tmp_path / "dense.nfat")
    private, public = _keys(tmp_path)
    subprocess.run([*FATPTE, "sign", "-q", str(container), "--key", str(private)], check=True, capture_output=True)
    thinned = tmp_path / "thinned.nfat"
    subprocess.run([*FATPTE, "thin", "-q", str(container), "--name", "dense_ref", "-o", str(thinned)], check=True,
                   capture_output=True)
    inp = tmp_path / "input.txt"
    inp.write_text(" ".join(f"{v:.9g}" for v in ex.example_input()))
    base = [str(exe), str(thinned), "--input", str(inp), "--backend-path", str(exe.parent / "backends"),
            "--require-signature", "--trusted-key", str(public)]
    assert subprocess.run([*base, "--device", "x86-64-v3"], capture_output=True, text=True, timeout=120,
                          check=False).returncode == 0  # not asked: it runs the entry left
    refused = subprocess.run([*base, "--device", "x86-64-v3", "--refuse-downgrade", "--explain"], capture_output=True,
                             text=True, timeout=120, check=False)
    assert refused.returncode == 5, refused.stderr
    assert "E1308" in refused.stderr and "dense_avx2" in refused.stderr and "a downgrade" in refused.stderr
    assert "output:" not in refused.stdout
    weak = subprocess.run([*base, "--device", "x86-64-v2", "--refuse-downgrade"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert weak.returncode == 0, weak.stderr  # without AVX2 the entry left is this device's best


S1B_READER = OPEN_READER + textwrap.dedent("""
    assert lib.fatpte_reader_fetch_entry(reader, 0, ctypes.byref(err)) == 0, err.message
    dirs = (ctypes.c_char_p * 1)(sys.argv[3].encode())
    selection = ctypes.c_void_p()
    assert lib.fatpte_select(container, None, None, 0, None, 0, ctypes.byref(selection), ctypes.byref(err)) == 0
    loaded = ctypes.c_void_p()
    status = lib.fatpte_load(container, selection, dirs, 1, ctypes.byref(loaded), ctypes.byref(err))
    print(status, err.message.decode())
    """)


def test_the_reader_flow_never_hands_out_a_key_the_entry_does_not_list(tmp_path: Path) -> None:
    """Issue 33 S1b: a container read through the C reader (open, fetch the chosen entry, load):
    the example backend asked for keys its entry does not list, which were never fetched, and
    the process died (SIGSEGV). It now finds nothing under them, and the load fails with the reason."""
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    release = loader_build("release", "libfatpte.so", "backends")
    library = release / "libfatpte.so"
    ex = load_script("loader/examples/dense_example.py")
    data = {key: ex._f32(values) for key, values in ex.weights().items()}
    # Every region on pages of its own, past the 64 KiB a reader fetches first.
    container = Path(pack([Specialization("dense_ref", ex.payload(), name="dense_ref", named_data=[])],
                          tmp_path / "unlisted.nfat", named_data=data, alignment=65536, segment_alignment=65536))
    proc = subprocess.run([sys.executable, "-c", S1B_READER, str(library), str(container),
                           str(release / "backends")], capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    status, message = proc.stdout.split(" ", 1)
    assert int(status) == 901 and "the backend could not load the payload" in message, proc.stdout


# `load()`: fatpte_load_for with the script's `options`, its status and every attempt of its report.
LOAD_WITH_REPORT = textwrap.dedent("""
    import json
    def load():
        loaded, report = ctypes.c_void_p(), ctypes.c_void_p()
        status = lib.fatpte_load_for(container, None, None, 0, None, 0, options, ctypes.byref(loaded),
                                     ctypes.byref(report), ctypes.byref(err))
        count, index, outcome = ctypes.c_size_t(), ctypes.c_uint32(), ctypes.c_char_p()
        assert lib.fatpte_load_report_attempt_count(report, ctypes.byref(count)) == 0
        tried = []
        for i in range(count.value):
            assert lib.fatpte_load_report_attempt(report, ctypes.c_size_t(i), ctypes.byref(index),
                                                  ctypes.byref(outcome)) == 0
            tried.append([index.value, outcome.value.decode()])
        lib.fatpte_load_report_free(report)
        return {"status": status, "tried": tried}
    """)

R6_READER = OPEN_READER + LOAD_WITH_REPORT + textwrap.dedent("""
    chosen = int(sys.argv[4])
    assert lib.fatpte_reader_fetch_entry(reader, chosen, ctypes.byref(err)) == 0, err.message
    options = ctypes.c_void_p()
    assert lib.fatpte_load_options_new(ctypes.byref(options)) == 0
    dirs = sys.argv[3].encode()
    assert lib.fatpte_load_options_add_search_dir(options, dirs) == 0
    first = load()
    # The docs' flow (docs/remote.md): fetch the entry the report says was not fetched, load again.
    missing = [i for i, outcome in first["tried"] if outcome.startswith("not fetched")]
    assert lib.fatpte_reader_fetch_entry(reader, missing[0], ctypes.byref(err)) == 0, err.message
    print(json.dumps({"first": first, "again": load()}))
    """)


def test_the_reader_flow_skips_an_entry_it_did_not_fetch(tmp_path: Path) -> None:
    """Issue 42 R6: the reader flow of docs/remote.md (open, select, fetch the chosen entry, load)
    where the chosen entry's backend refuses its payload and the load falls back into the next
    eligible entry, which was never fetched: the process died (SIGSEGV). The load now reads nothing
    of it: the entry is skipped with "not fetched" as its reason in the report, and once fetched
    through the reader it loads. An unfetched entry whose backend library is missing keeps that
    reason: the docs' loop never downloads an entry that cannot run."""
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    release = loader_build("release", "libfatpte.so", "backends")
    library = release / "libfatpte.so"
    ex = load_script("loader/examples/dense_example.py")
    data = {key: ex._f32(values) for key, values in ex.weights().items()}
    # The chosen entry lists no keys (its backend refuses the payload, issue 33 S1b); the next one
    # lists them. Every region on pages of its own, past the 64 KiB a reader fetches first.
    container = Path(pack([Specialization("dense_ref", ex.payload(), name="refused", named_data=[], priority=5),
                           Specialization("dense_nowhere", ex.payload() + bytes(16), name="nowhere",
                                          named_data=sorted(data), priority=3),
                           Specialization("dense_ref", ex.payload() + bytes(8), name="next",
                                          named_data=sorted(data))],
                          tmp_path / "fallback.nfat", named_data=data, alignment=65536, segment_alignment=65536))
    entries = _entries(container)
    refused, nowhere, following = (entries[name]["index"] for name in ("refused", "nowhere", "next"))
    proc = subprocess.run([sys.executable, "-c", R6_READER, str(library), str(container),
                           str(release / "backends"), str(refused)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    doc = json.loads(proc.stdout)
    first, again = doc["first"], doc["again"]
    assert first["status"] == 901
    assert [index for index, _ in first["tried"]] == [refused, nowhere, following]
    assert first["tried"][0][1].startswith("the backend could not load the payload")
    assert first["tried"][1][1].startswith("library libfatpte_backend_dense_nowhere.so not found")
    assert first["tried"][2][1].startswith("not fetched: its payload"), first["tried"]
    assert "fatpte_reader_fetch_entry" in first["tried"][2][1]
    assert again["status"] == 0
    assert again["tried"] == [*first["tried"][:2], [following, "loaded"]]


GOLDEN_READER = OPEN_READER + LOAD_WITH_REPORT + textwrap.dedent("""
    for index in range(2):
        assert lib.fatpte_reader_fetch_entry(reader, index, ctypes.byref(err)) == 0, err.message
    options = ctypes.c_void_p()
    assert lib.fatpte_load_options_new(ctypes.byref(options)) == 0
    assert lib.fatpte_load_options_set_self_test(options, 1) == 0
    first = load()
    assert lib.fatpte_reader_fetch_golden(reader, first["tried"][0][0], ctypes.byref(err)) == 0, err.message
    print(json.dumps({"first": first, "again": load()}))
    """)


def test_a_self_test_through_the_reader_never_reads_unfetched_golden_tensors(tmp_path: Path) -> None:
    """Issue 42 R6 with self-test: both entries fetched (fatpte_reader_fetch_entry), their golden
    tensors not (fatpte_reader_fetch_golden): a self-testing load skips each entry, "not fetched"
    naming the golden tensor, instead of reading pages never fetched; once the chosen entry's are
    fetched, it is self-tested and loaded."""
    release = loader_build("release", "libfatpte.so", "fatpte-run")
    library = release / "libfatpte.so"
    container = tmp_path / "golden.nfat"
    calls = _example().write_calls("kvcache", tmp_path / "calls.json")
    packed = subprocess.run([*FATPTE, "--runtime", str(release / "fatpte-run"), "pack", "-q", "--align",
                             "65536", "-o", str(container), f"xnnpack:xnnpack={FIXTURES / 'kvcache_xnnpack.pte'}",
                             f"portable:portable={FIXTURES / 'kvcache_portable.pte'}", "--priority", "xnnpack=10",
                             "--golden", str(calls), "--golden-from", "portable"],
                            check=False, capture_output=True, text=True, timeout=600)
    assert packed.returncode == 0, packed.stderr
    proc = subprocess.run([sys.executable, "-c", GOLDEN_READER, str(library), str(container)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    doc = json.loads(proc.stdout)
    first, again = doc["first"], doc["again"]
    entries = _entries(container)
    assert first["status"] == 901
    assert [index for index, _ in first["tried"]] == [entries["xnnpack"]["index"], entries["portable"]["index"]]
    assert all(outcome.startswith("not fetched: its golden tensor 'fatpte.golden/") for _, outcome in first["tried"])
    assert again["status"] == 0 and again["tried"] == [[entries["xnnpack"]["index"], "loaded"]]


def test_the_r5_shape_is_valid_and_fetched_one_read_per_key(tmp_path: Path) -> None:
    """Issue 42 R5's shape (tests/support/hostile.many_keys, bench/op_hostile.py's R5 row): one entry
    listing many keys, each in a segment of its own, is valid in both languages, and the C reader
    fetches it with one read_at call per segment after opening (the work per read is counted by
    loader/tests/reader_test.cpp, FetchingAnEntryCostsWorkLinearInItsRanges)."""
    from tests.support import hostile

    release = loader_build("release", "libfatpte.so", "fatpte-validate")
    library = release / "libfatpte.so"
    container = tmp_path / "keys.nfat"
    container.write_bytes(hostile.many_keys(2000))
    assert fatpte.validate(container).ok
    assert subprocess.run([str(release / "fatpte-validate"), str(container)], check=False,
                          capture_output=True, timeout=120).returncode == 0
    script = OPEN_READER + textwrap.dedent("""
        opened = len(read)
        assert lib.fatpte_reader_fetch_entry(reader, 0, ctypes.byref(err)) == 0, err.message
        print(len(read) - opened)
        """)
    proc = subprocess.run([sys.executable, "-c", script, str(library), str(container)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout) == 1 + 2000  # the payload (after the manifest), then each segment
