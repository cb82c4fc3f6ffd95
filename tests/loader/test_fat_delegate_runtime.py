"""The fat delegate runs in ExecuTorch itself (issue 20): libexecutorch_backend_fatpte.so.

The committed fixtures `<model>_fat.pte` (add, mlp, the stateful buffer model, the KV cache; made
by `make test-executorch` with fatpte.ops.fat_lowering) hold, per partition XNNPACK takes, a fat
delegate (backend id FatpteBackend) whose NFAT payload has the XNNPACK payload (priority 10) and
the same partition as a nested portable program. Through two doors:

- a plain ExecuTorch application (et_module_runner: ExecuTorch's Module API; backend libraries
  dlopen'ed like any backend library): with the XNNPACK library loaded the XNNPACK entry runs;
  without it the nested program runs; outputs equal eager over two calls (state kept), and the
  log says which entry ran and why the others did not;
- fatpte-run, with the fat-delegate program packed as a container entry.

Also: a fat program in upstream's layout (the NfatNativeBackend fixtures, registered under that id
by the library's registration call) has its choice explained and fails naming each entry and
what it needed; its version 1 form is read the same way; and every invalid conformance vector of
specs/vectors/ as the delegate payload is refused at init with the fatpte code in ExecuTorch's
log, never a crash (release and ASan builds). No torch here: only the committed fixtures.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fatpte.errors import ErrorCode, FatpteError
from fatpte.executorch.pte import read_program
from fatpte.executorch.rewrite import replace_segment
from tests.builds import SDK_LIB, loader_build
from tests.paths import ROOT
from tests.scripts import load_script

pytestmark = pytest.mark.loader_build("et_module_runner", sdk=True)  # `build`: tests/loader/conftest.py
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
VECTORS = ROOT / "specs" / "vectors"
KERNELS = SDK_LIB / "libexecutorch_kernels_optimized.so"
XNNPACK = SDK_LIB / "libexecutorch_backend_xnnpack.so"
MODELS = ["add", "mlp", "buffer", "kvcache"]
FATPTE = [sys.executable, "-m", "fatpte"]


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


def call_files(model: str, tmp: Path) -> list[str]:
    """Each call's inputs as raw files, as et_module_runner takes them (IN0.bin,IN1.bin)."""
    calls = json.loads(_example().write_calls(model, tmp / "calls.json").read_text())
    files: list[str] = load_script("tools/tier_matrix.py").call_files({"calls": calls}, tmp, model)
    return files


def _module_cmd(build: Path, libs: tuple[Path, ...]) -> list[str]:
    cmd = [str(build / "et_module_runner")]
    for lib in (*libs, build / "libexecutorch_backend_fatpte.so"):
        cmd += ["--lib", str(lib)]
    return cmd


def module_run(build: Path, program: Path, *args: str, libs: tuple[Path, ...] = (KERNELS,),
               calls: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_module_cmd(build, libs), *args, str(program), *(calls or [])], capture_output=True,
                          text=True, timeout=300, check=False)


def module_run_raw(build: Path, program: Path) -> subprocess.CompletedProcess[bytes]:
    """module_run with the output as bytes, for tests that look for bytes of the file in it."""
    return subprocess.run([*_module_cmd(build, (KERNELS,)), str(program)], capture_output=True, timeout=300,
                          check=False)


def parsed(stdout: str) -> list[list[dict[str, Any]]]:
    """`call N output K: DTYPE [SHAPE] V...` lines as the calls' outputs."""
    calls: list[list[dict[str, Any]]] = []
    for line in stdout.splitlines():
        m = re.fullmatch(r"call (\d+) output (\d+): (\w+) \[([\d, ]*)\](.*)", line)
        assert m, line
        c, dtype, shape, values = int(m[1]), m[3], m[4], m[5].split()
        while len(calls) <= c:
            calls.append([])
        number = float if dtype.startswith("float") else int
        calls[c].append({"dtype": dtype, "shape": [int(s) for s in shape.split(",") if s.strip()],
                         "values": [number(v) for v in values]})
    return calls


@pytest.mark.parametrize("model", MODELS)
def test_xnnpack_runs_when_its_library_is_loaded_else_the_nested_portable_program(build: Path, tmp_path: Path,
                                                                                   model: str) -> None:
    program = FIXTURES / f"{model}_fat.pte"
    delegates = [d.backend_id for m in read_program(program.read_bytes()).methods for d in m.delegates]
    assert delegates and set(delegates) == {"FatpteBackend"}
    calls = call_files(model, tmp_path)
    want = _example().recorded_outputs(model)
    assert len(calls) == 2

    xnnpack_then_portable(build, program, calls, want)


def xnnpack_then_portable(build: Path, program: Path, calls: list[str],
                          want: list[list[dict[str, Any]]]) -> tuple[str, str]:
    """Run the fat program `program` with XNNPACK's library loaded, then without it: the XNNPACK
    entry runs, then the nested portable program, the log saying which and why, each giving the
    outputs `want`. Their outputs as et_module_runner printed them."""
    with_xnnpack = module_run(build, program, libs=(KERNELS, XNNPACK), calls=calls)
    assert with_xnnpack.returncode == 0, with_xnnpack.stderr
    assert "fatpte fat delegate: running entry xnnpack [xnnpack]" in with_xnnpack.stderr
    assert _example().mismatches(parsed(with_xnnpack.stdout), want) == []

    alone = module_run(build, program, calls=calls)
    assert alone.returncode == 0, alone.stderr
    # Selection is runtime-aware: the XNNPACK entry is rejected because this process's registry
    # has no XnnpackBackend, and the log says so.
    assert "xnnpack [xnnpack]: rejected: executorch_backends: needs XnnpackBackend" in alone.stderr
    assert re.search(r"fatpte fat delegate: (.* \| )?running entry portable \[portable\] as a nested program",
                     alone.stderr), alone.stderr
    assert "running entry xnnpack" not in alone.stderr
    assert _example().mismatches(parsed(alone.stdout), want) == []
    return with_xnnpack.stdout, alone.stdout


def test_each_partition_says_what_the_first_said_only_once(build: Path, tmp_path: Path) -> None:
    # kvcache_fat.pte has three fat delegates (one per partition XNNPACK takes). Each line of the
    # log is news once per process, and the lines of one init go out as one message: with XNNPACK,
    # one line names the entry that ran; without it, one message holds the rejection and the entry
    # that ran, joined by " | ", and the two other partitions add nothing.
    program = FIXTURES / "kvcache_fat.pte"
    delegates = [d for m in read_program(program.read_bytes()).methods for d in m.delegates]
    assert len(delegates) == 3
    calls = call_files("kvcache", tmp_path)
    with_xnnpack = module_run(build, program, libs=(KERNELS, XNNPACK), calls=calls)
    assert with_xnnpack.returncode == 0, with_xnnpack.stderr
    lines = [line for line in with_xnnpack.stderr.splitlines() if "fatpte fat delegate:" in line]
    assert len(lines) == 1 and lines[0].endswith(
        "fatpte fat delegate: running entry xnnpack [xnnpack] (said once per process)"), lines

    alone = module_run(build, program, calls=calls)
    assert alone.returncode == 0, alone.stderr
    lines = [line for line in alone.stderr.splitlines() if "fatpte fat delegate:" in line]
    assert len(lines) == 1, lines
    rejected, ran = lines[0].split("fatpte fat delegate: ", 1)[1].split(" | ")
    assert rejected.startswith("-  xnnpack [xnnpack]: rejected: executorch_backends: needs XnnpackBackend")
    assert ran == "running entry portable [portable] as a nested program (said once per process)"


def test_state_is_kept_between_calls_in_the_nested_program(build: Path, tmp_path: Path) -> None:
    program = FIXTURES / "kvcache_fat.pte"
    calls = call_files("kvcache", tmp_path)
    both = module_run(build, program, calls=calls)
    second_alone = module_run(build, program, calls=calls[1:])
    assert both.returncode == 0 and second_alone.returncode == 0, both.stderr + second_alone.stderr
    got = parsed(both.stdout)
    assert _example().mismatches(got, _example().recorded_outputs("kvcache")) == []
    assert _example().mismatches([got[1]], parsed(second_alone.stdout)) != []


def test_prefer_and_exclude_come_from_the_load_time_backend_options(build: Path, tmp_path: Path) -> None:
    program = FIXTURES / "mlp_fat.pte"
    calls = call_files("mlp", tmp_path)
    excluded = module_run(build, program, "--option", "FatpteBackend:exclude=xnnpack", libs=(KERNELS, XNNPACK),
                          calls=calls)
    assert excluded.returncode == 0, excluded.stderr
    assert "running entry portable [portable] as a nested program" in excluded.stderr
    assert _example().mismatches(parsed(excluded.stdout), _example().recorded_outputs("mlp")) == []


def test_a_failing_inner_init_falls_back_to_the_next_entry(build: Path, tmp_path: Path) -> None:
    # The XNNPACK payload cut short: XNNPACK's own init refuses it, the fat delegate logs that and
    # runs the nested program instead.
    data = (FIXTURES / "add_fat.pte").read_bytes()
    calls = call_files("add", tmp_path)
    program = read_program(data)
    (delegate,) = [d for m in program.methods for d in m.delegates]
    blob = bytearray(data[delegate.offset:delegate.offset + delegate.size])
    from fatpte.container.reader import Container
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    container = Container.from_buffer(bytes(blob))
    xnn, portable = (container.entries[0], container.entries[1])
    assert (xnn.name, portable.name) == ("xnnpack", "portable")
    damaged = pack([Specialization("xnnpack", container.payload(xnn)[:64].tobytes(), name="xnnpack", priority=10,
                                   executorch_backends=["XnnpackBackend"]),
                    Specialization("portable", container.payload(portable).tobytes(), name="portable",
                                   executorch_backends=[])], tmp_path / "inner.nfat")
    bad = tmp_path / "add_bad_xnnpack.pte"
    bad.write_bytes(replace_segment(data, delegate.data_index, damaged.read_bytes()))
    proc = module_run(build, bad, libs=(KERNELS, XNNPACK), calls=calls)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"entry xnnpack \[xnnpack\] skipped: XnnpackBackend could not initialise the payload "
                     r"\(init\): error 0x\w+", proc.stderr), proc.stderr
    assert "running entry portable [portable] as a nested program" in proc.stderr
    assert _example().mismatches(parsed(proc.stdout), _example().recorded_outputs("add")) == []


def test_upstream_layout_is_read_and_fails_naming_each_entry(build: Path) -> None:
    # NfatNativeBackend's payload (tests/fixtures/executorch/*_nfat.pte) is an NFAT container of
    # two NativeBackend payloads; no NativeBackend is registered here.
    proc = module_run(build, FIXTURES / "add_nfat.pte", "--register", "NfatNativeBackend")
    assert proc.returncode == 1
    assert "fatpte fat delegate: chosen: native-avx2 [native]" in proc.stderr
    assert "E0901: no entry of the fat delegate can run in this process" in proc.stderr
    for entry in ("native-avx2", "native-generic"):
        assert (f"E0901: entry {entry} [native]: needs ExecuTorch backend NativeBackend, which is not registered "
                "in this process") in proc.stderr
    assert "Init failed for backend NfatNativeBackend" in proc.stderr


def test_a_version_1_blob_as_the_payload_is_read(build: Path, tmp_path: Path) -> None:
    from fatpte.container.reader import Container
    from fatpte.format import layout as L
    from fatpte.ops.packing import pack
    from fatpte.ops.specialization import Specialization

    data = (FIXTURES / "add_nfat.pte").read_bytes()
    (delegate,) = [d for m in read_program(data).methods for d in m.delegates]
    fat = Container.from_buffer(data[delegate.offset:delegate.offset + delegate.size])
    inner = fat.payload(fat.entries[0]).tobytes()
    v1 = pack([Specialization("native", inner)], tmp_path / "v1.nfat", version=L.VERSION_1).read_bytes()
    assert v1[4:8] == struct.pack("<I", 1)
    program = tmp_path / "add_v1.pte"
    program.write_bytes(replace_segment(data, delegate.data_index, v1))
    proc = module_run(build, program, "--register", "NfatNativeBackend")
    assert proc.returncode == 1
    assert ("E0901: entry native [native]: needs ExecuTorch backend NativeBackend, which is not registered in "
            "this process") in proc.stderr


# What a program entry's record says against its program (specs/executorch.md section 7: E1101 to
# E1104) is a rule of `validate`, not of a load: a fat delegate, like fatpte-run and Python's
# validate_nfat_delegates, runs the container rules and the program reader, not these.
RECORD_CODES = ("E1101", "E1102", "E1103", "E1104")


def _invalid_vectors() -> list[tuple[str, str]]:
    index = json.loads((VECTORS / "index.json").read_text())["vectors"]
    return sorted((name, v["error"]["code"]) for name, v in index.items()
                  if not v["valid"] and v["error"]["code"] not in RECORD_CODES)


def test_every_invalid_vector_as_the_payload_is_refused_at_init(build: Path, tmp_path: Path) -> None:
    data = (FIXTURES / "add_fat.pte").read_bytes()
    (delegate,) = [d for m in read_program(data).methods for d in m.delegates]
    vectors = _invalid_vectors()
    assert len(vectors) > 100
    for name, code in vectors:
        program = tmp_path / f"{name}.pte"
        program.write_bytes(replace_segment(data, delegate.data_index, (VECTORS / name).read_bytes()))
        proc = module_run(build, program, libs=(KERNELS, XNNPACK))
        assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
        assert "AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr, (name, proc.stderr)
        # A program entry's own defect (a v2-program-* vector: container rules pass, the program does
        # not read) skips that entry with the reader's code, and no entry runs.
        # (E1010: the fat delegate's own refusal of the depth it reaches, as for a container.)
        said = f"fatpte refused the nested program: {code}" if name.startswith("v2-program-") and code != "E1010" \
            else code
        assert f"fatpte fat delegate: {said}" in proc.stderr or f"skipped: {said}" in proc.stderr, \
            (name, code, proc.stderr[-2000:])
        assert "Init failed for backend FatpteBackend" in proc.stderr, name


def test_fatpte_run_runs_a_fat_delegate_program_from_a_container(tmp_path: Path) -> None:
    """Issue 32: with no path options fatpte-run finds the fat delegate library beside libfatpte,
    loads the libraries the fat delegate's entries run on (XNNPACK, from the SDK's folder, as for
    any program), and says in --explain and --json which inner entry ran and why not the others."""
    release = loader_build("release", "fatpte-run", sdk=True)
    exe = release / "fatpte-run"
    container = tmp_path / "mlp_fat.nfat"
    subprocess.run([*FATPTE, "pack", "-q", "-f", "-o", str(container),
                    str(FIXTURES / "mlp_fat.pte")], check=True)
    calls = _example().write_calls("mlp", tmp_path / "calls.json")
    want = _example().recorded_outputs("mlp")
    base = [str(exe), str(container), "--inputs", str(calls)]
    for extra, said in (((), "fat delegate: running entry xnnpack [xnnpack]"),
                        (("--backend-lib", "XnnpackBackend="),
                         "fat delegate: -  xnnpack [xnnpack]: rejected: executorch_backends: needs XnnpackBackend")):
        proc = subprocess.run([*base, *extra, "--json"], capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert _example().mismatches([c["outputs"] for c in doc["calls"]], want) == []
        assert any(line.startswith(said) for line in doc["dispatch"]), doc["dispatch"]
        explained = subprocess.run([*base, *extra, "--explain"], capture_output=True, text=True, timeout=300,
                                   check=False)
        assert explained.returncode == 0, explained.stderr
        assert said in explained.stdout
    withheld = subprocess.run([*base, "--backend-lib", "XnnpackBackend=", "--explain"], capture_output=True,
                              text=True, timeout=300, check=False)
    assert "running entry portable [portable] as a nested program" in withheld.stdout


def test_an_alias_declines_a_payload_that_is_not_nfat_without_an_error_line(build: Path) -> None:
    """Registered under another producer's id (NativeBackend), the fat delegate declines that
    backend's own payloads (NPTG) as a backend declines what it does not run: said at Info level,
    no Error line of its own (ExecuTorch's loader still reports the init that failed)."""
    proc = module_run(build, FIXTURES / "mlp_native.pte", "--register", "NativeBackend")
    assert proc.returncode == 1
    assert "E0101" not in proc.stderr
    assert "registered as NativeBackend: a payload that is not an NFAT container is NativeBackend's own" in proc.stderr
    assert not [line for line in proc.stderr.splitlines() if line.startswith("E ") and "fatpte fat delegate" in line]


def test_the_backend_words_of_the_library_are_pythons() -> None:
    # executorch/backend_ids.cpp's table of backend words (a delegate-payload entry's ExecuTorch backend
    # id) is fatpte/ops/program_entry.py's BACKEND_WORDS.
    from fatpte.ops.program_entry import BACKEND_WORDS

    source = (ROOT / "loader" / "src" / "executorch" / "backend_ids.cpp").read_text()
    table = source[source.index("kWords[][2] = {"):source.index("};", source.index("kWords[][2] = {"))]
    assert dict(re.findall(r'\{"(\w+)", "(\w+)"\}', table)) == BACKEND_WORDS


@pytest.mark.parametrize("depth", [4, 5, 10_000])
def test_fat_delegates_nest_at_most_four_deep(build: Path, tmp_path: Path, depth: int) -> None:
    """Issue 33 F1: 10,000 nested fat delegates overflowed the stack of any runner. Up to
    MAX_FAT_DELEGATE_DEPTH they run; past it the init at depth 5 is refused with E1010, as
    `fatpte validate` reports the same file (tests/ops/test_fat_nesting.py), and nothing deeper is
    read."""
    from tests.support.hostile import nested_fat_delegates

    program = tmp_path / f"deep{depth}.pte"
    program.write_bytes(nested_fat_delegates((FIXTURES / "mlp_fat.pte").read_bytes(), depth))
    proc = module_run(build, program, calls=call_files("mlp", tmp_path))
    assert "AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr[-3000:]
    if depth <= 4:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert _example().mismatches(parsed(proc.stdout), _example().recorded_outputs("mlp")) == []
    else:
        assert proc.returncode == 1, proc.stderr[-3000:]
        assert ("fatpte fat delegate: E1010 at 0x0 (payload): a fat delegate at depth 5: fat delegates nest at "
                "most 4 levels deep") in proc.stderr
        assert proc.stderr.count("E1010") == 1


@pytest.mark.parametrize("version", [1, 2])
def test_entries_sharing_the_level_below_are_initialised_once(build: Path, tmp_path: Path, version: int) -> None:
    """Found writing the nested fat-delegate fuzz target's generator (issue 33): 16 entries a
    level sharing the level below, five levels (a 10 KB program). The init at depth 5 was refused
    and every entry above it tried again, 16**4 times: 65,536 refusals and 288,000 log lines (32
    entries a level, a 14 KB program: 1,048,576 refusals, 4.4 million lines, 6.8 s). An entry whose
    payload already failed at its depth is now skipped with that reason, so the container at depth
    5 is refused once; and a tree that fits the limit still runs, through shared levels, wrappers
    and nested programs."""
    from tests.support import hostile

    fixture = (FIXTURES / "mlp_fat.pte").read_bytes()
    deep = tmp_path / "deep.pte"
    deep.write_bytes(hostile.fat_tree(fixture, [(version, [hostile.FAT] * 16)] * 5))
    proc = module_run(build, deep)
    assert "AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stderr.count("E1010") == 1
    assert len(proc.stderr.splitlines()) < 400
    # Version 1 entries each seeing the level below one byte longer: regions from one first byte,
    # which validated the same table once per entry (300 a level: 40 s and 12 million log lines for
    # a 200 KB program before a container that ran no entry was remembered by its first byte).
    wide = tmp_path / "wide.pte"
    wide.write_bytes(hostile.fat_tree(fixture, [(1, [hostile.FAT] * 300)] * 5, overlap=True))
    proc = module_run(build, wide)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert proc.stderr.count("E1010") == 1
    assert len(proc.stderr.splitlines()) < 5000
    fits = [(version, [hostile.JUNK, *[hostile.PROGRAM] * 8]), (version, [hostile.FAT] * 8)]
    assert hostile.fat_tree_depth(fits) == 3
    runs = tmp_path / "fits.pte"
    runs.write_bytes(hostile.fat_tree(fixture, fits))
    proc = module_run(build, runs, calls=call_files("mlp", tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _example().mismatches(parsed(proc.stdout), _example().recorded_outputs("mlp")) == []


def test_generated_trees_in_the_runtime(build: Path, tmp_path: Path) -> None:
    """The nested fat-delegate fuzz target's generator (tests/strategies.hostile_fat_trees) replayed
    through the C++ fat delegate, which the libFuzzer build cannot link: 24 trees of version 1 and
    2 levels mixing fat payloads, nested programs and junk, shared and up to eight deep, run by
    et_module_runner under fuzz/fuzz_nested_delegates.py's checks (a tree that fits runs and gives
    the model's outputs, one that does not is refused with E1010 at most once per container,
    logs in proportion to the file, no sanitizer report)."""
    import hashlib
    import os

    seeds = tmp_path / "trees"
    seeds.mkdir()
    for i in range(24):
        (seeds / f"tree{i:02d}").write_bytes(hashlib.sha256(b"nested fat delegates %d" % i).digest() * 16)
    proc = subprocess.run([sys.executable, str(ROOT / "fuzz" / "replay.py"), "nested_delegates", str(seeds)],
                          env={**os.environ, "FATPTE_FUZZ_RUNTIME": str(build)}, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "nested_delegates: 24 passed, 0 failed" in proc.stdout, proc.stdout


def test_what_an_entry_needed_is_logged_escaped(build: Path, tmp_path: Path) -> None:
    """Found by the nested fat-delegate target replayed through the runtime (issue 33): when no
    entry runs, the fat delegate logs each entry and what it needed, and that line quoted the
    entry's name, its backend id and a nested program's delegate ids raw, so bytes of the file
    reached the terminal (the `skipped` line before it was escaped). Every one is escaped now."""
    from tests.support import hostile

    fixture = (FIXTURES / "mlp_fat.pte").read_bytes()
    data = bytearray(hostile.fat_tree(fixture, [(1, [hostile.PROGRAM])]))
    nested = data.index(b"FatpteBackend", data.index(b"FatpteBackend") + 1)  # the nested program's delegate id
    data[nested : nested + 13] = b"Fa\x1b[1mBackend"
    program = tmp_path / "escape.pte"
    program.write_bytes(bytes(data))
    proc = module_run_raw(build, program)
    log = proc.stderr
    assert proc.returncode == 1, log[-3000:]
    assert b"needs ExecuTorch backend Fa\\x1b[1mBackend" in log
    assert b"E0901: entry portable [portable]: nested program needs ExecuTorch backend Fa\\x1b" in log
    assert b"\x1b" not in log


def test_a_nested_program_at_an_odd_offset_is_read_aligned(build: Path, tmp_path: Path) -> None:
    """Found by the nested fat-delegate target replayed through the ASan build (issue 33): a nested
    program at an odd offset of a version 1 container (after a one-byte payload) was read in place
    by fatpte's own reader, to see which backends it needs, before the aligned copy ExecuTorch gets
    was made: UBSan stopped the run at a misaligned flatbuffer vector (issue 33's U1 again, one call
    earlier). Both now read one aligned copy, and the program runs."""
    from fatpte.executorch.rewrite import replace_segment
    from tests.support import hostile

    fixture = (FIXTURES / "mlp_fat.pte").read_bytes()
    delegate = hostile.first_delegate(fixture)
    odd = hostile.v1_container([("NoSuchBackend", b"x"), ("portable", fixture)])
    program = tmp_path / "odd.pte"
    program.write_bytes(replace_segment(fixture, delegate.data_index, odd))
    proc = module_run(build, program, calls=call_files("mlp", tmp_path))
    assert "runtime error" not in proc.stderr and "Sanitizer" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _example().mismatches(parsed(proc.stdout), _example().recorded_outputs("mlp")) == []


def test_a_nested_method_name_that_is_no_text_is_not_asked_for(build: Path, tmp_path: Path) -> None:
    """Found by the nested fat-delegate target run through the runtime (issue 33): a nested
    program's only method, named by the file (\\xa9orward, or ESC...), was asked for by that name,
    and ExecuTorch's own log printed it raw ("No method named ... in program"). The fat delegate
    now skips such a program, saying why, escaped, without asking ExecuTorch for the name."""
    from tests.support import hostile

    data = bytearray(hostile.fat_tree((FIXTURES / "mlp_fat.pte").read_bytes(), [(1, [hostile.PROGRAM])]))
    nested = data.index(b"forward", data.index(b"forward") + 1)  # the nested program's method
    data[nested : nested + 7] = b"\x1b[31mrd"
    program = tmp_path / "method.pte"
    program.write_bytes(bytes(data))
    proc = module_run_raw(build, program)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert b"the nested program's only method is named '\\x1b[31mrd', which is not printable text" in proc.stderr
    assert b"\x1b" not in proc.stderr


@pytest.mark.parametrize("where", ["inputs[0]", "outputs[0]", "int list", "processed", "value"])
def test_a_nested_program_the_runtime_aborts_on_is_skipped_with_validates_code(build: Path, tmp_path: Path,
                                                                                where: str) -> None:
    """Issue 42, point 9: a nested program whose method input or output is one past its values, or
    whose int list names a tensor, passed fatpte's reader and ExecuTorch's load, and the process
    aborted at the first call (ET_CHECK in Method::get_value, EValue::toInt; exit 134); a nested fat
    program whose delegate lacks `processed` or a compile spec's value crashed in Method::init
    (SIGSEGV, exit 139). The fat delegate now refuses each before ExecuTorch sees it, with
    validate's code and the offset of the table (tests/executorch/test_executorch_references.py)."""
    from tests.support import hostile

    fixture = (FIXTURES / "mlp_fat.pte").read_bytes()
    nested = (FIXTURES / "mlp_portable.pte").read_bytes()
    code = "E1008"
    if where == "int list":
        tensor = min(read_program(nested).methods[0].tensors)
        changed, table, _ = hostile.with_int_list_item(nested, tensor)
    elif where in ("processed", "value"):
        changed, table = hostile.without_delegate_field(fixture, where)
    else:
        changed, table = hostile.with_value_index(nested, where)
        code = "E1006"
    tree = hostile.fat_with_program(fixture, changed)
    program = tmp_path / "tree.pte"
    program.write_bytes(tree)
    proc = module_run(build, program, calls=call_files("mlp", tmp_path))
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "assert failed" not in proc.stderr and "Sanitizer" not in proc.stderr, proc.stderr[-3000:]
    entry = tree.index(changed) - hostile.first_delegate(tree).offset  # in the fat delegate's container
    assert f"skipped: fatpte refused the nested program: {code} at {entry + table:#x} (entries[0].payload)" \
        in proc.stderr, proc.stderr[-3000:]


def _program_vectors() -> list[tuple[str, dict[str, Any]]]:
    index = json.loads((VECTORS / "index.json").read_text())["vectors"]
    return sorted((name, v) for name, v in index.items() if name.startswith("v2-program")
                  and (v["valid"] or v["error"]["code"].startswith("E100")))


def test_fatpte_run_refuses_each_program_vector_with_its_code_offset_and_field(tmp_path: Path) -> None:
    """The program reference vectors (v2-program-*: specs/executorch.md section 4) through
    fatpte-run: the valid ones run; each the program reader refuses is refused with the code, offset
    and field the index gives (Python's), never by ExecuTorch aborting or crashing (exit 134, 139
    before). The record's rules (E1101 to E1104) are validate's (RECORD_CODES); a program whose fat
    delegates nest too deep (E1010) fails at load, in the fat delegate."""
    release = loader_build("release", "fatpte-run", sdk=True)
    exe = release / "fatpte-run"
    calls = _example().write_calls("mlp", tmp_path / "calls.json")
    vectors = _program_vectors()
    assert len(vectors) == 23
    for name, v in vectors:
        proc = subprocess.run([str(exe), str(VECTORS / name), "--inputs", str(calls)], capture_output=True,
                              text=True, timeout=300, check=False)
        if v["valid"]:
            assert proc.returncode == 0, (name, proc.stderr[-2000:])
            continue
        e = v["error"]
        assert proc.returncode == 3, (name, proc.returncode, proc.stderr[-2000:])
        assert f"fatpte refused the ExecuTorch program: {e['code']} at {e['offset']:#x} ({e['field']})" \
            in proc.stderr, (name, proc.stderr[-2000:])


def test_fatpte_run_bounds_the_reference_check_of_shared_instructions(tmp_path: Path) -> None:
    """The C++ reader's check of every value reference counts its work against the budget Python's
    reader has (1,000,000 objects plus the size): a chain listing 1000, 4000 and 16,000 references
    to one instruction of 2000 arguments is refused with E1005 by both (Python:
    tests/executorch/test_executorch_references.py), and 100 of 100 pass to ExecuTorch."""
    from tests.support import hostile

    release = loader_build("release", "fatpte-run", sdk=True)
    exe = release / "fatpte-run"
    calls = _example().write_calls("mlp", tmp_path / "calls.json")
    for refs, args, said in ((100, 100, "ExecuTorch refused the program"),
                             (1000, 2000, "fatpte refused the ExecuTorch program: E1005"),
                             (4000, 2000, "fatpte refused the ExecuTorch program: E1005"),
                             (16000, 2000, "fatpte refused the ExecuTorch program: E1005")):
        container = tmp_path / f"shared{refs}.nfat"
        container.write_bytes(hostile.v1_container([("portable", hostile.pte_shared_instruction(refs, args))]))
        proc = subprocess.run([str(exe), str(container), "--inputs", str(calls)], capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 3 and said in proc.stderr, (refs, proc.returncode, proc.stderr[-2000:])


@pytest.mark.parametrize(("shape", "field"), [
    ({"sizes": (-1,)}, ".sizes[0]"), ({"sizes": None}, ".sizes"), ({"sizes": (2**31 - 1, 2**31 - 1, 4)}, ".sizes"),
    ({"sizes": (2**31 - 1, 2**31 - 1), "scalar_type": 7}, ".sizes"), ({"sizes": (1,), "scalar_type": 9}, ".scalar_type"),
])
def test_fatpte_run_refuses_a_tensor_executorch_cannot_size_as_python_does(tmp_path: Path, shape: dict[str, Any],
                                                                          field: str) -> None:
    """A dynamic-shape input whose tensor ExecuTorch's verification refuses passes it, after a
    search of the inputs per such value (200,000 of them, a 4 MB program: 10.5 s in fatpte-run
    before), and set_input aborts when MethodMeta cannot size it. The C++ reader refuses every such
    tensor with Python's code and offset (tests/executorch/test_executorch_references.py), at the
    first of 16,000 inputs as at the first of 3."""
    from tests.support import hostile

    release = loader_build("release", "fatpte-run", sdk=True)
    exe = release / "fatpte-run"
    calls = _example().write_calls("mlp", tmp_path / "calls.json")
    for inputs in (3, 16000):
        program = hostile.pte_dynamic_inputs(inputs, **shape)
        with pytest.raises(FatpteError) as python:
            read_program(program)
        container = tmp_path / "dynamic.nfat"
        container.write_bytes(hostile.v1_container([("portable", program)]))
        at = hostile.v1_container([("portable", program)]).index(program)
        proc = subprocess.run([str(exe), str(container), "--inputs", str(calls)], capture_output=True, text=True,
                              timeout=120, check=False)
        assert python.value.code is ErrorCode.ET_BAD_VALUE and python.value.field.endswith(field)
        assert proc.returncode == 3, proc.stderr[-2000:]
        assert f"fatpte refused the ExecuTorch program: E1008 at {at + (python.value.offset or 0):#x} " \
            f"(entries[0].payload)" in proc.stderr, proc.stderr[-2000:]
        assert f"(root.execution_plan[0].values[0].val{field})" in proc.stderr
