"""Worst cases (issues 15 and 33): the shapes of the attacks on the readers (tests/support/hostile.py), each
built at three sizes (x1, x4, x16) and read by Python (the `fatpte` command) and by the C++ loader
(its tools), timed as whole processes (start-up included) with their peak RSS. Work is bounded by
the file (specs/nfat.md section 9): time and memory must grow no faster than the file, i.e. at
most 4x (with SLACK for noise and start-up) from x4 to x16.

The shapes are the largest amplification the budgets allow, not the refused ones alone: a manifest
naming one key from every offset it can hold while staying within its work budget, the same key
undefined (a finding per reference, capped), requirement words shared by every entry, thousands
of entries sharing one payload, a manifest over its budget (refused after bounded work), a
program whose operators are one operator, a profile of many keys. Issue 33's surfaces: a
signature region near and past its value limit (S5), one signed entry and thousands added after
signing (S6), a hostile manifest under a signature (S2), trusted-key files growing past their
64 KiB limit, calls.json of many values and of a shape whose product overflows, fat delegates
nested ever deeper and shared ever wider (F1); issue 42's `fatpte check` of two entries with
ever more golden calls (C1). The entry counts of the scale section's table (1k,
16k, 64k entries sharing a payload) come from `entries_table` here too.
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.harness import (
    PYTHON,
    ROOT,
    Context,
    Section,
    fmt_bytes,
    fmt_seconds,
    run_cmd,
    runs,
    scale,
    verdict,
)

SLACK = 1.5
FATPTE = str(Path(PYTHON).parent / "fatpte")
LOADER = ROOT / "build" / "loader"
PROFILE = str(ROOT / "specs" / "devices" / "x86-64-v3.json")
SIZES = (1, 4, 16)
VECTORS = ROOT / "specs" / "vectors"
SIGNED = str(VECTORS / "v2-signed.nfat")
KEYS = [str(VECTORS / "trusted-ed25519.pub.pem"), str(VECTORS / "trusted-p256.pub.pem")]
ET_FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
ET_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"


@dataclass(frozen=True)
class Reader:
    label: str
    argv: Callable[[str], list[str]]  # the command for a file's path
    accept: tuple[int, ...]  # the exit statuses it gives for this shape


@dataclass(frozen=True)
class Shape:
    name: str
    build: Callable[[int], bytes]  # the file at size factor k
    suffix: str
    readers: tuple[Reader, ...]


def _python(args: list[str], accept: tuple[int, ...]) -> Reader:
    return Reader("Python `fatpte " + " ".join(a for a in args if a != "{}") + "`",
                  lambda p: [FATPTE, *[p if a == "{}" else a for a in args]], accept)


def _cpp(tool: str, args: list[str], accept: tuple[int, ...]) -> Reader:
    return Reader(f"C++ `{tool} " + " ".join(a for a in args if a not in ("{}", PROFILE)).strip() + "`",
                  lambda p: [str(LOADER / tool), *[p if a == "{}" else a for a in args]], accept)


def _n(base: int, k: int) -> int:
    return max(1, int(base * k * scale()))


def _tool(label: str, argv: list[str], accept: tuple[int, ...]) -> Reader:
    """A reader given by its whole command line, "{}" standing for the file."""
    return Reader(label, lambda p: [p if a == "{}" else a for a in argv], accept)


def _keys(flag: str) -> list[str]:
    return [x for k in KEYS for x in (flag, k)]


def signed_shapes(work: Path) -> list[Shape]:
    """Issue 33: signed loading (S2, S5, S6) and trusted-key files, as `fatpte verify`,
    `fatpte-verify` and `fatpte-run --require-signature` read them."""
    from tests.support import hostile
    from tests.support.vectors import bundle_of, with_bundle

    base = Path(SIGNED).read_bytes()
    no_calls = work / "hostile-no-calls.json"
    no_calls.write_text("[]\n")
    verify_py = _tool("Python `fatpte verify -q --key`", [FATPTE, "verify", "{}", "-q", *_keys("--key")], (0, 1, 5))
    verify_cpp = _tool("C++ `fatpte-verify --trusted-key`", [str(LOADER / "fatpte-verify"), "{}", *_keys("--trusted-key")],
                       (0, 1, 5))
    run_cpp = _tool("C++ `fatpte-run --require-signature`",
                    [str(LOADER / "fatpte-run"), "{}", "--inputs", str(no_calls), "--require-signature",
                     *_keys("--trusted-key")], (1, 3, 5))
    signed = (verify_py, verify_cpp, run_cpp)
    return [
        Shape("S5: a signature region holding 256 values per x more (verifies; x16 passes MAX_BUNDLE_VALUES, 4096: "
              "E1302)", lambda k: bytes(with_bundle(base, hostile.bundle_with_values(bundle_of(base), _n(256, k)))),
              ".nfat", signed),
        Shape("S5: a signature region of 1 MiB of zeros per x, added without a key (E1302 at the 4,097th value)",
              lambda k: bytes(with_bundle(base, hostile.bundle_with_values(bundle_of(base), _n(1 << 19, k)))),
              ".nfat", signed),
        Shape("S6: 1 signed entry and 4,095 per x added after signing (E1307)",
              lambda k: hostile.signed_with_added_entries(_n(4095, k)), ".nfat", signed),
        Shape("S2: a signed file whose manifest names a 4 KiB key from 16,384 offsets per x (E0420)",
              lambda k: hostile.attach(hostile.shared_key(_n(16_384, k), 4096), bundle_of(base)), ".nfat", signed),
        Shape("a trusted-key file with 4 KiB of text per x before the key (E0702; x16 passes the 64 KiB limit)",
              lambda k: hostile.key_file_after_text(_n(4096, k)), ".pem",
              (_tool("Python `fatpte verify --key FILE`", [FATPTE, "verify", SIGNED, "-q", "--key", "{}"], (2,)),
               _tool("C++ `fatpte-verify --trusted-key FILE`",
                     [str(LOADER / "fatpte-verify"), SIGNED, "--trusted-key", "{}"], (2,)))),
    ]


def run_shapes(work: Path) -> list[Shape]:
    """Issue 33: calls.json (I1) through `fatpte-run --inputs` on the mlp model, and fat delegates
    nested and shared (F1) through `fatpte validate` and ExecuTorch's own Module runner with the
    fat delegate's library."""
    import fatpte
    from tests.support import hostile

    model = work / "hostile-mlp.nfat"
    fatpte.pack([fatpte.Specialization("portable", ET_FIXTURES / "mlp_portable.pte", name="portable")], model)
    fat = (ET_FIXTURES / "mlp_fat.pte").read_bytes()
    inputs = _tool("C++ `fatpte-run --inputs FILE`", [str(LOADER / "fatpte-run"), str(model), "--inputs", "{}"], (2,))
    # Refused at full scale; a BENCH_SCALE run may build a tree that fits (exit 0).
    nested = (_tool("Python `fatpte validate -q`", [FATPTE, "validate", "-q", "{}"], (0, 1)),
              _tool("C++ fat delegate in `et_module_runner`",
                    [str(LOADER / "et_module_runner"), "--lib", str(ET_LIB / "libexecutorch_kernels_optimized.so"),
                     "--lib", str(LOADER / "libexecutorch_backend_fatpte.so"), "{}"], (0, 1)))
    return [
        Shape("I1: calls.json of 65,536 float values per x, shape [1, n], for a method taking [1, 4] (E0702)",
              lambda k: hostile.calls_with_values(_n(65_536, k), [1, _n(65_536, k)]), ".json", (inputs,)),
        Shape("I1: calls.json of shape [2147483647] * 3 (its product overflows) with 65,536 values per x (E0702)",
              lambda k: hostile.calls_with_values(_n(65_536, k), [2_147_483_647] * 3), ".json", (inputs,)),
        Shape("F1: fat delegates nested 64 levels per x (E1010 at depth 5)",
              lambda k: hostile.nested_fat_delegates(fat, _n(64, k)), ".pte", nested),
        Shape("F1: five levels of 64 entries per x sharing the level below (E1010 at depth 5)",
              lambda k: hostile.fat_tree(fat, [(1, [hostile.FAT] * _n(64, k))] * 5), ".pte", nested),
    ]


def golden_shapes() -> list[Shape]:
    """Issue 42 C1: `fatpte check` of two entries with ever more golden calls (each run by
    fatpte-run, each output paired with the other entry's)."""
    from tests.support import hostile

    check = _tool("Python `fatpte check`", [FATPTE, "--runtime", str(LOADER / "fatpte-run"), "check", "{}"], (0,))
    return [
        Shape("C1: 2 entries of 1,250 golden calls per x each (valid; x16: 20,000 calls, once minutes to check)",
              lambda k: hostile.golden_calls_container(_n(1250, k), ET_FIXTURES / "mlp_portable.pte"), ".nfat",
              (check,)),
    ]


# The device-side path (fatpte_reader, specs/remote.md): open through a read_at callback over the
# file's bytes, fetch entry 0 with its named data, exit 0 when both succeeded.
READER_FETCH = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
data = open(sys.argv[2], "rb").read()
base = ctypes.create_string_buffer(data, len(data))
READ_AT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t)
@READ_AT
def read_at(user, offset, buffer, count):
    ctypes.memmove(buffer, ctypes.addressof(base) + offset, count)
    return 0
reader = ctypes.c_void_p()
ok = lib.fatpte_reader_open(read_at, None, ctypes.c_uint64(len(data)), ctypes.byref(reader), None) == 0
ok = ok and lib.fatpte_reader_fetch_entry(reader, 0, None) == 0
sys.exit(0 if ok else 1)
"""


def reader_shapes() -> list[Shape]:
    """Issue 42 R5: the C reader fetching an entry of many named-data keys, which it did in
    quadratic work (each range compared with every range fetched before)."""
    from tests.support import hostile

    fetch = _tool("C reader `fatpte_reader_fetch_entry` (ctypes)",
                  [PYTHON, "-c", READER_FETCH, str(LOADER / "libfatpte.so"), "{}"], (0,))
    return [
        Shape("R5: one entry listing 10,000 named-data keys per x, each in a segment of its own (valid)",
              lambda k: hostile.many_keys(_n(10_000, k)), ".nfat", (fetch, _cpp("fatpte-validate", ["{}"], (0,)))),
    ]


def shapes() -> list[Shape]:
    from tests.support import hostile

    validate_py = _python(["validate", "-q", "{}"], (0, 1))
    validate_cpp = _cpp("fatpte-validate", ["{}"], (0, 1))
    select_py = _python(["select", "{}", "--device", "x86-64-v3", "--explain"], (0, 3))
    select_cpp = _cpp("fatpte-run", ["{}", "--select-only", "--device", PROFILE, "--explain"], (0, 3))
    return [
        # 4 bytes of offset and 52 of string per reference: 14x the file, inside the 16x budget.
        Shape("one 48-byte key named from 65,536 offsets per x (valid)",
              lambda k: hostile.shared_key(_n(65_536, k), 48), ".nfat", (validate_py, validate_cpp)),
        Shape("the same key undefined: an E0413 per reference (100 kept)",
              lambda k: hostile.shared_key(_n(65_536, k), 48, missing=True), ".nfat", (validate_py, validate_cpp)),
        Shape("32 entries requiring one 48-byte feature from 2,048 offsets per x each (no fit)",
              lambda k: hostile.shared_requirement(_n(2_048, k), 48, entries=32, one_table=False), ".nfat",
              (select_py, select_cpp)),
        Shape("4,096 entries per x sharing one payload",
              lambda k: hostile.shared_payload(_n(4_096, k)), ".nfat",
              (select_py, _python(["info", "{}"], (0,)), select_cpp)),
        Shape("one 4 KiB key from 16,384 offsets per x (over budget: E0420)",
              lambda k: hostile.shared_key(_n(16_384, k), 4096), ".nfat", (validate_py, validate_cpp)),
        Shape("a program whose 16,384 operators per x are one 48-byte-named operator",
              lambda k: hostile.pte_shared_operator(_n(16_384, k), 48), ".pte", (_python(["info", "{}"], (0,)),)),
        Shape("a device profile of 3,072 backends per x (x16 stays under the 1 MiB profile limit)",
              lambda k: hostile.profile_with_backends(_n(3_072, k)), ".json",
              (_python(["device", "show", "{}"], (0,)), _cpp("fatpte-run", ["--check-profile", "{}"], (0,)))),
    ]


def measure_rows(ctx: Context, shape: Shape, sizes: tuple[int, ...]) -> list[str]:
    """One table row per reader of `shape`: time and peak RSS at each size, interleaved by round."""
    paths = {}
    for k in sizes:
        path = ctx.work / f"hostile-{abs(hash(shape.name))}-{k}{shape.suffix}"
        path.write_bytes(shape.build(k))
        paths[k] = path
    rows = []
    for reader in shape.readers:
        argv = reader.argv("x")
        if not Path(argv[0]).exists() or any(a.startswith(str(LOADER)) and not Path(a).exists() for a in argv):
            rows.append(f"| {shape.name} | {reader.label} | not measured: the loader is not built |" + " |" * 9)
            continue
        times: dict[int, list[float]] = {k: [] for k in sizes}
        rss: dict[int, int] = dict.fromkeys(sizes, 0)
        for _ in range(runs()):
            for k in sizes:
                sample = run_cmd(reader.argv(str(paths[k])), accept=reader.accept)
                times[k].append(sample.seconds)
                rss[k] = max(rss[k], sample.max_rss)
        t = [statistics.median(times[k]) for k in sizes]
        m = [rss[k] for k in sizes]
        size_growth = sizes[-1] / sizes[-2]
        t_growth, m_growth = t[-1] / t[-2], m[-1] / m[-2]
        ok = t_growth <= size_growth * SLACK and m_growth <= size_growth * SLACK
        rows.append(f"| {shape.name} | {reader.label} | {_kib(paths[sizes[0]].stat().st_size)} | "
                    + " | ".join(fmt_seconds(x) for x in t) + f" | {t_growth:.1f}x | "
                    + " | ".join(fmt_bytes(x) for x in m) + f" | {m_growth:.1f}x | "
                    + verdict(ok, f"superlinear: time {t_growth:.1f}x, memory {m_growth:.1f}x") + " |")
    return rows


def _kib(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n < 1 << 20 else fmt_bytes(n)


HEADER = ("| worst case | reader | x1 file | time x1 | time x4 | time x16 | time x16/x4 | peak RSS x1 | peak RSS x4 "
          "| peak RSS x16 | RSS x16/x4 | verdict |")


def measure(ctx: Context) -> Section:
    section = Section("hostile input", (
        "The shapes of issue 15's attack on the readers, and issue 33's on signed loading (S2, S5, S6), "
        "trusted-key files, run inputs (I1) and nested fat delegates (F1), issue 42's `check` of many golden "
        "calls (C1), each at three sizes (x1, x4, "
        "x16 the x1 file's parameters), read as whole processes (start-up included: it flattens the small sizes) by the "
        "Python command and the C++ loader's tools; the median of the rounds, the sizes interleaved in "
        "every round, and the peak RSS of any round. Linear means the time and the peak memory grow no "
        f"faster than the file from x4 to x16 (x{SLACK} for noise). The budgets behind the bound: "
        "specs/nfat.md section 9, specs/nfat-manifest.md 2.3, specs/nfat-signature.md section 7 "
        "(MAX_BUNDLE_VALUES, 64 KiB key files), specs/executorch.md section 8 (MAX_FAT_DELEGATE_DEPTH, "
        "shared levels read once per depth)."))
    section.lines += [HEADER, "|---" * 12 + "|"]
    with warnings.catch_warnings():  # pack's notes on the entries' ranking ties, building S6's files
        warnings.simplefilter("ignore")
        for shape in [*shapes(), *signed_shapes(ctx.work), *run_shapes(ctx.work), *golden_shapes(), *reader_shapes()]:
            section.lines += measure_rows(ctx, shape, SIZES)
    return section


ENTRY_COUNTS = (1024, 16_384, 65_536)


def entries_table(ctx: Context) -> list[str]:
    """The scale section's table: 1k, 16k and 64k entries sharing one payload, Python and C++."""
    from tests.support import hostile

    counts = tuple(max(16, int(n * scale())) for n in ENTRY_COUNTS)
    shape = Shape(
        "entries sharing one payload", lambda n: hostile.shared_payload(n), ".nfat",
        (_python(["select", "{}", "--device", "x86-64-v3"], (0,)), _python(["info", "{}"], (0,)),
         _python(["validate", "-q", "{}"], (0,)),
         _cpp("fatpte-run", ["{}", "--select-only", "--device", PROFILE], (0,)), _cpp("fatpte-validate", ["{}"], (0,))))
    rows = measure_rows(ctx, shape, counts)
    head = (f"| shape | reader | {counts[0]} entries: file | time {counts[0]} | time {counts[1]} | "
            f"time {counts[2]} | time growth last/previous | peak RSS {counts[0]} | peak RSS {counts[1]} | "
            f"peak RSS {counts[2]} | RSS growth | verdict |")
    intro = (f"Entries sharing one payload, each with a manifest entry, as whole processes (linear: "
             f"growth no faster than the count, {counts[2] // counts[1]}x, with x{SLACK}):")
    return [intro, "", head, "|---" * 12 + "|", *rows]
