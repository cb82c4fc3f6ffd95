"""Golden calls (issue 30): what they cost a device that does not run them, and what a self-test
and `fatpte check` cost.

1. Bytes read, counted exactly: the C API's range reader (fatpte_reader, the device-side path of
   docs/remote.md) over the file, every read_at call counted. Open, select, fetch the chosen
   entry, load it, one call: on a container of mlp's XNNPACK and portable lowerings without golden
   calls, and on the same with them; then with the self-test (fetch the golden tensors, load with
   the self-test option). Target: no golden byte read without the self-test.
2. Load + first call, whole processes: `fatpte-run --self-test` against `fatpte-run` on the same
   container (the self-test's golden calls, and the reload of a stateful method, are the cost).
3. `fatpte check` of the same container and of that container with a 1 GiB entry this host cannot
   run (CUDA): time, and peak RSS of check's Python process and of a fatpte-run as check runs it.
   Target: the other entry's gigabyte costs no memory.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import fatpte
from bench import fixtures
from bench.harness import (
    PYTHON,
    ROOT,
    Context,
    Pair,
    Section,
    alternate,
    fmt_bytes,
    gib,
    run_cmd,
    runs,
    verdict,
)

BUILD = ROOT / "build" / "loader"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
READ_AT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("offset", ctypes.c_uint64), ("field", ctypes.c_char * 96),
                ("message", ctypes.c_char * 512)]


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_uint32), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("data", ctypes.c_void_p), ("nbytes", ctypes.c_uint64)]


def reader_bytes(container: Path, call: dict[str, Any], *, self_test: bool) -> dict[str, int]:
    """Bytes and read_at calls of open + select + fetch + load + one call through fatpte_reader,
    and the golden segments' bytes fetched (`golden`). The library is loaded in a child process so
    that each measurement starts from a fresh process (ExecuTorch's registries are per process)."""
    code = f"""
import ctypes, json, sys
sys.path.insert(0, {str(ROOT)!r})
from bench.op_golden import _measure
print(json.dumps(_measure(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "1")))
"""
    done = subprocess.run([PYTHON, "-c", code, str(container), json.dumps(call), "1" if self_test else "0"],
                          capture_output=True, text=True, check=True)
    out: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def _measure(path: str, call: dict[str, Any], self_test: bool) -> dict[str, int]:
    import array

    import fatpte

    lib = ctypes.CDLL(str(BUILD / "libfatpte.so"))
    data = Path(path).read_bytes()
    read: list[tuple[int, int]] = []

    @READ_AT
    def read_at(user: int, offset: int, buffer: int, count: int) -> int:
        read.append((offset, count))
        ctypes.memmove(buffer, data[offset : offset + count], count)
        return 0

    err = _Error()
    reader = ctypes.c_void_p()
    assert lib.fatpte_reader_open(read_at, None, ctypes.c_uint64(len(data)), ctypes.byref(reader),
                                  ctypes.byref(err)) == 0, err.message
    lib.fatpte_reader_container.restype = ctypes.c_void_p
    container = ctypes.c_void_p(lib.fatpte_reader_container(reader))
    selection = ctypes.c_void_p()
    assert lib.fatpte_select(container, None, None, 0, None, 0, ctypes.byref(selection), ctypes.byref(err)) == 0
    chosen = ctypes.c_uint32()
    lib.fatpte_selection_chosen(selection, ctypes.byref(chosen))
    assert lib.fatpte_reader_fetch_entry(reader, chosen, ctypes.byref(err)) == 0, err.message
    if self_test:
        assert lib.fatpte_reader_fetch_golden(reader, chosen, ctypes.byref(err)) == 0, err.message
    options = ctypes.c_void_p()
    lib.fatpte_load_options_new(ctypes.byref(options))
    lib.fatpte_load_options_set_self_test(options, 1 if self_test else 0)
    lib.fatpte_load_options_set_entry(options, chosen)  # only the fetched entry: the others were never read
    loaded = ctypes.c_void_p()
    assert lib.fatpte_load_for(container, None, None, 0, None, 0, options, ctypes.byref(loaded), None,
                               ctypes.byref(err)) == 0, err.message
    inputs = []
    keep = []
    codes = {"float32": ("f", 6), "int64": ("q", 4)}  # what the fixtures' calls hold
    for t in call["inputs"]:
        fmt, code = codes[t["dtype"]]
        values = array.array(fmt, t["values"])
        shape = (ctypes.c_int64 * len(t["shape"]))(*t["shape"])
        keep += [values, shape]
        inputs.append(_Tensor(code, len(t["shape"]), shape, values.buffer_info()[0], len(values) * values.itemsize))
    tensors = (_Tensor * len(inputs))(*inputs)
    assert lib.fatpte_execute(loaded, tensors, len(inputs), ctypes.byref(err)) == 0, err.message
    total, calls = ctypes.c_uint64(), ctypes.c_uint64()
    lib.fatpte_reader_stats(reader, ctypes.byref(total), ctypes.byref(calls))
    with fatpte.open(path) as c:
        manifest = c.manifest
        golden_keys = {k for e in (manifest.entries if manifest else ()) for k in e.golden_keys()}
        segments = [c.segments[manifest.keys[k]] for k in golden_keys] if manifest else []
    golden = sum(max(0, min(off + n, s.offset + s.size) - max(off, s.offset)) for off, n in read for s in segments)
    lib.fatpte_unload(loaded)
    lib.fatpte_load_options_free(options)
    lib.fatpte_selection_free(selection)
    lib.fatpte_reader_close(reader)
    return {"bytes": total.value, "calls": calls.value, "golden": golden}


def _pack(ctx: Context, name: str, golden: bool, extra: list[str] | None = None) -> Path:
    out = ctx.work / f"{name}.nfat"
    args = [PYTHON, "-m", "fatpte", "--runtime", str(BUILD / "fatpte-run"), "pack", "-q", "-f", "-o", str(out),
            f"xnnpack:xnnpack={FIXTURES / 'kvcache_xnnpack_default.pte'}",
            f"portable:portable={FIXTURES / 'kvcache_portable_default.pte'}", "--priority", "xnnpack=10"]
    if golden:
        calls = ctx.work / "golden-calls.json"
        calls.write_text(json.dumps(_calls()))
        args += ["--golden", str(calls), "--golden-from", "portable"]
    subprocess.run(args + (extra or []), check=True, capture_output=True)
    return out


def _calls() -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = json.loads((FIXTURES / "fixtures.json").read_text())["tiers"]["models"][
        "kvcache"]["calls"]
    return calls


def _check_rss(container: Path) -> tuple[float, int, int]:
    """(seconds, peak RSS of check's Python process, peak RSS of its fatpte-run processes), in a
    child so that RUSAGE_CHILDREN counts only that check's runners."""
    code = f"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run([{PYTHON!r}, "-m", "fatpte", "--runtime", {str(BUILD / 'fatpte-run')!r}, "check", sys.argv[1]],
                      capture_output=True, text=True)
assert done.returncode == 0, done.stdout + done.stderr
print(json.dumps([time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))
"""
    # The check's own process is the only child of this one; its runners are its children, so the
    # two peaks are taken apart: check's Python in this child's RUSAGE_CHILDREN, the runners by
    # running one the way check does (one process per entry and method).
    done = subprocess.run([PYTHON, "-c", code, str(container)], capture_output=True, text=True, check=True)
    seconds, check_kib = json.loads(done.stdout)
    runner = run_cmd([str(BUILD / "fatpte-run"), str(container), "--entry", "xnnpack", "--golden-report", "--json"])
    return seconds, check_kib * 1024, runner.max_rss


def measure(ctx: Context) -> Section:
    section = Section("Golden calls: self-test and check", "")
    if not (BUILD / "fatpte-run").exists() or not (BUILD / "libfatpte.so").exists():
        section.intro = "**Not measured**: build/loader is not built (`make loader`)."
        return section
    section.intro = (
        "The KV-cache fixture (ExecuTorch 1.5.1, tests/fixtures/executorch/) packed as its XNNPACK lowering (chosen) "
        "and its portable one, with and without three golden calls recorded from portable "
        "(`--golden-from portable`). Bytes read are counted by the C API's range reader (fatpte_reader, every "
        "read_at call): open, select, fetch the chosen entry, load it and make one call, in a fresh process each.")
    plain = _pack(ctx, "golden-none", False)
    golden = _pack(ctx, "golden-calls", True)
    # The same, with a 1 GiB entry this host never runs added after them: the golden segments then
    # lie past the reader's first 64 KiB read, where only a fetch reaches them.
    blob = fixtures.payload(ctx.work / "golden-cuda.bin", gib(1), seed=930)
    big_plain, big = ctx.work / "golden-none-big.nfat", ctx.work / "golden-calls-big.nfat"
    for src, dest in ((plain, big_plain), (golden, big)):
        subprocess.run([PYTHON, "-m", "fatpte", "add", str(src), f"cuda-sm90:cuda={blob}", "-o", str(dest), "-f",
                        "-q"], check=True, capture_output=True)
    blob.unlink()
    call = _calls()[0]
    base = reader_bytes(big_plain, call, self_test=False)
    without = reader_bytes(big, call, self_test=False)
    tested = reader_bytes(big, call, self_test=True)
    with fatpte.open(big) as c:
        assert c.manifest is not None
        keys = set(c.manifest.entries[0].golden_keys())
        golden_size = sum(c.segments[c.manifest.keys[k]].size for k in keys)
        first_golden = min(c.segments[c.manifest.keys[k]].offset for k in keys)
    rows = ["| container | self-test | bytes read | read_at calls | golden bytes read |", "|---|---|---|---|---|"]
    for label, st, r in (("no golden calls", "no", base), ("golden calls", "no", without),
                         ("golden calls", "yes", tested)):
        rows.append(f"| {label} | {st} | {r['bytes']} | {r['calls']} | {r['golden']} |")
    section.lines += [
        (f"Both containers also hold a {fmt_bytes(gib(1))} CUDA entry this host never runs, so that the golden "
        f"segments lie past the reader's first 64 KiB read (the first at byte {first_golden})."), "",
        *rows, "",
        (f"- Golden bytes read without the self-test: **{without['golden']}** (target 0: "
         f"{verdict(without['golden'] == 0, str(without['golden']))}); the whole read is "
         f"{without['bytes'] - base['bytes']:+d} bytes against the container without golden calls: the header, "
         "tables and manifest come in the reader's first 64 KiB read either way, and the golden keys' records "
         "(named data and segment table, the calls in the manifest) are inside it."),
        (f"- With the self-test the golden tensors the chosen entry names are fetched: {tested['golden']} bytes, "
         f"{len(keys)} tensors of {golden_size} bytes, in {tested['calls'] - without['calls']} more read_at calls."),
    ]
    fatpte_run = str(BUILD / "fatpte-run")
    inputs = ctx.work / "golden-first-call.json"
    inputs.write_text(json.dumps([call]))
    pair = alternate(Pair("load + first call, whole process, with --self-test", "the same without --self-test",
                          "shown"),
                     partial(run_cmd, [fatpte_run, str(golden), "--inputs", str(inputs)]),
                     partial(run_cmd, [fatpte_run, str(golden), "--inputs", str(inputs), "--self-test"]),
                     rounds=10 * runs())
    pair.note = ("the self-test makes the three golden calls on the KV-cache method, then loads the method again "
                 "(it has state) before serving: the cost is one more load and three calls")
    section.pairs.append(pair)
    small_s, small_py, small_run = _check_rss(golden)
    big_s, big_py, big_run = _check_rss(big)
    section.lines += [
        "",
        ("| `fatpte check` of | container | time | peak RSS, check (Python) | peak RSS, a fatpte-run of it |"),
        "|---|---|---|---|---|",
        (f"| the two entries | {golden.stat().st_size >> 10} KiB | {small_s:.2f} s | {fmt_bytes(small_py)} | "
        f"{fmt_bytes(small_run)} |"),
        (f"| the same and the CUDA entry | {fmt_bytes(big.stat().st_size)} | {big_s:.2f} s | {fmt_bytes(big_py)} | "
        f"{fmt_bytes(big_run)} |"),
        "",
        (f"- Memory of `check` with the {fmt_bytes(gib(1))} entry against without: Python {big_py / small_py:.2f}x, "
         f"runner {big_run / small_run:.2f}x (target: the other entry costs no memory, within 1.10x + 2 MiB: "
         f"{verdict(big_py <= 1.10 * small_py + (2 << 20) and big_run <= 1.10 * small_run + (2 << 20))})."),
    ]
    return section
