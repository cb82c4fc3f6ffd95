"""`fatpte extract` of a 1 GiB payload against `cp` of a 1 GiB file (target: at most 1.1x)."""

from __future__ import annotations

import time

import fatpte
from bench import fixtures
from bench.commands import Commands
from bench.harness import (
    PYTHON,
    Context,
    Pair,
    Sample,
    Section,
    alternate,
    fmt_bytes,
    fmt_seconds,
    gib,
    median_seconds,
    run_cmd,
    runs,
    sync,
    verdict,
)
from bench.mapped_copy import copy_with_mapped_hash

LIMIT = 1.1


def container_with(ctx: Context, size: int) -> tuple[str, object]:
    """A container holding one `size`-byte payload named `big` (and a small `cpu` entry)."""
    key = f"extract-{size}"
    if key not in ctx.cache:
        src = fixtures.payload(ctx.work / f"extract-payload-{size}.bin", size, seed=7)
        small = fixtures.payload(ctx.work / "small.bin", 1 << 16, seed=8)
        out = ctx.work / f"extract-{size}.nfat"
        run_cmd([PYTHON, "-c", ("import fatpte,sys; fatpte.pack([fatpte.Specialization('cpu', sys.argv[1]), "
                 "fatpte.Specialization('big', sys.argv[2])], sys.argv[3])"), str(small), str(src), str(out)])
        ctx.cache[key] = out
        ctx.cache[key + "-src"] = src
    return key, ctx.cache[key]


def measure(ctx: Context) -> Section:
    cmds = ctx.commands
    assert isinstance(cmds, Commands)
    size = gib(1)
    key, container = container_with(ctx, size)
    src = ctx.cache[key + "-src"]
    dest = ctx.work / "extract-out.bin"
    fixtures.warm(src)
    fixtures.warm(container)  # type: ignore[arg-type]

    def clean() -> None:
        dest.unlink(missing_ok=True)
        sync()

    extract = cmds.extract(container, "big", dest)  # type: ignore[arg-type]
    rounds = 2 * runs()  # a copy's time swings with the machine's writeback: more rounds, steadier median
    clean()
    pair = Pair(f"extract {fmt_bytes(size)} payload", f"cp of a {fmt_bytes(size)} file", f"<= {LIMIT}x")
    alternate(pair, lambda: run_cmd(["cp", str(src), str(dest)]), lambda: run_cmd(extract), rounds=rounds, between=clean)
    pair.verdict = verdict(pair.ratio <= LIMIT, "see the finding below")
    inproc = Pair(f"extract {fmt_bytes(size)} payload (in process: fatpte.extract)", f"cp of a {fmt_bytes(size)} file",
                  f"<= {LIMIT}x")

    def library() -> Sample:
        start = time.perf_counter()
        fatpte.extract(container, "big", dest)
        return Sample(time.perf_counter() - start, 0)

    alternate(inproc, lambda: run_cmd(["cp", str(src), str(dest)]), library, rounds=rounds, between=clean)
    inproc.verdict = verdict(inproc.ratio <= LIMIT, f"{inproc.ratio:.2f}x")
    inproc.note = "the library call alone (RSS is not measured per call inside one process)"
    entry = fatpte.open(container).find("big")  # type: ignore[arg-type]
    mapped = Pair(f"copy {fmt_bytes(size)} with its CRC32C (in process: the earlier design)",
                  f"cp of a {fmt_bytes(size)} file", "")

    def earlier_design() -> Sample:
        start = time.perf_counter()
        value = copy_with_mapped_hash(container, entry.offset, entry.size, dest)  # type: ignore[arg-type]
        elapsed = time.perf_counter() - start
        assert value == entry.checksum
        return Sample(elapsed, 0)

    alternate(mapped, lambda: run_cmd(["cp", str(src), str(dest)]), earlier_design, rounds=rounds, between=clean)
    mapped.note = ("bench/mapped_copy.py: copy_file_range with the CRC32C computed from a mapping on a second "
                   "thread, which reads the source twice; the comparison behind streams.copy_range_crc's design")
    section = Section(
        "extract",
        "Input warm in the page cache; output to the same file system; each output is deleted and dirty "
        "pages flushed (untimed) before the next round. `fatpte extract` opens the container and passes "
        "the payload once through four 1 MiB buffers into a temporary file (`streams.copy_range_crc`: "
        "the calling thread reads a buffer and hashes it while it is in the CPU cache, a second thread "
        "writes the buffers behind it), then renames the file onto the destination when the CRC32C "
        "matches.",
        [pair, inproc, mapped],
    )
    if pair.ratio > LIMIT:
        # The command's fixed cost, measured: the same command extracting the container's 64 KiB
        # entry is almost nothing but starting Python and fatpte.
        small_dest = ctx.work / "extract-small.bin"
        fixed = []
        for _ in range(rounds):
            fixed.append(run_cmd(cmds.extract(container, "cpu", small_dest)))  # type: ignore[arg-type]
            small_dest.unlink()
        cp = median_seconds(pair.base)
        section.lines.append(MISSED_REASON.format(fixed=fmt_seconds(median_seconds(fixed)), cp=fmt_seconds(cp),
                                                  share=median_seconds(fixed) / cp, lib=inproc.ratio,
                                                  size=fmt_bytes(size)))
    return section


MISSED_REASON = (
    "Finding: `fatpte extract` reads the payload once and checks its CRC32C before the output is renamed "
    "into place; `cp` checks nothing. The library call alone is {lib:.2f}x `cp` (the in-process row); "
    "the command adds its fixed cost: extracting the container's 64 KiB entry with the same command "
    "takes {fixed} (median), {share:.0%} of the {cp} that `cp` of {size} takes. That cost is starting "
    "Python and fatpte (see the info section). With both cores free, hashing in the "
    "cache and writing on a second thread hides the hash; when another process holds a core, the read, "
    "hash and write share one core and the ratio rises."
)
