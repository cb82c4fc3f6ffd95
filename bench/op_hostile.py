"""Worst cases (issue 15): the shapes of the attack on the readers (tools/hostile.py), each built at
three sizes (x1, x4, x16) and read by Python (the `fatpte` command) and by the C++ loader (its
tools), timed as whole processes (start-up included) with their peak RSS. Work is bounded by the
file (specs/nfat.md section 9): time and memory must grow no faster than the file, i.e. at most 4x
(with SLACK for noise and start-up) from x4 to x16.

The shapes are the largest amplification the budgets allow, not the refused ones alone: a manifest
naming one key from every offset it can hold while staying within its work budget, the same key
undefined (a finding per reference, capped), requirement words shared by every entry, thousands
of entries sharing one payload, a manifest over its budget (refused after bounded work), a
program whose operators are one operator, a profile of many keys. The entry counts of the scale
section's table (1k, 16k, 64k entries sharing a payload) come from `entries_table` here too.
"""

from __future__ import annotations

import statistics
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


def shapes() -> list[Shape]:
    from tools import hostile

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
        Shape("a device profile of 4,096 backends per x",
              lambda k: hostile.profile_with_backends(_n(4_096, k)), ".json",
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
        if not Path(reader.argv("x")[0]).exists():
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
        "The shapes of issue 15's attack on the readers, each at three sizes (x1, x4, x16 the x1 file's "
        "parameters), read as whole processes (start-up included: it flattens the small sizes) by the "
        "Python command and the C++ loader's tools; the median of the rounds, the sizes interleaved in "
        "every round, and the peak RSS of any round. Linear means the time and the peak memory grow no "
        f"faster than the file from x4 to x16 (x{SLACK} for noise). The budgets behind the bound: "
        "specs/nfat.md section 9, specs/nfat-manifest.md 2.3."))
    section.lines += [HEADER, "|---" * 12 + "|"]
    for shape in shapes():
        section.lines += measure_rows(ctx, shape, SIZES)
    return section


ENTRY_COUNTS = (1024, 16_384, 65_536)


def entries_table(ctx: Context) -> list[str]:
    """The scale section's table: 1k, 16k and 64k entries sharing one payload, Python and C++."""
    from tools import hostile

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
