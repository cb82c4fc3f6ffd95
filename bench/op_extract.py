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
    gib,
    run_cmd,
    sync,
    verdict,
)

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
    clean()
    pair = Pair(f"extract {fmt_bytes(size)} payload", f"cp of a {fmt_bytes(size)} file", f"<= {LIMIT}x")
    alternate(pair, lambda: run_cmd(["cp", str(src), str(dest)]), lambda: run_cmd(extract), between=clean)
    pair.verdict = verdict(pair.ratio <= LIMIT, "see the finding below")
    inproc = Pair(f"extract {fmt_bytes(size)} payload (in process: fatpte.extract)", f"cp of a {fmt_bytes(size)} file",
                  f"<= {LIMIT}x")

    def library() -> Sample:
        start = time.perf_counter()
        fatpte.extract(container, "big", dest)
        return Sample(time.perf_counter() - start, 0)

    alternate(inproc, lambda: run_cmd(["cp", str(src), str(dest)]), library, between=clean)
    inproc.verdict = verdict(inproc.ratio <= LIMIT, f"{inproc.ratio:.2f}x")
    inproc.note = "the library call alone (RSS is not measured per call inside one process)"
    section = Section(
        "extract",
        "Input warm in the page cache; output to the same file system; each output is deleted and dirty "
        "pages flushed (untimed) before the next round. `fatpte extract` opens the container, copies the "
        "payload with copy_file_range into a temporary file while a second thread computes its CRC32C, "
        "and renames the file onto the destination when the CRC32C matches.",
        [pair, inproc],
    )
    if pair.ratio > LIMIT:
        section.lines.append(MISSED_REASON)
    return section


MISSED_REASON = (
    "Finding: `fatpte extract` copies the payload once (copy_file_range, with the CRC32C computed from "
    "the mapping on a second thread and checked before the output is renamed into place). The "
    "in-process row times the same library call without the command's start-up: what the command "
    "adds beyond it is the fixed cost of starting Python, click and fatpte (see the startup and info "
    "sections), which is a large share of a 1 GiB copy on this machine and a smaller one for larger "
    "payloads. Meeting the bound for the command itself needs a start-up that Python and click do "
    "not give (a C++ extractor on the loader would)."
)
