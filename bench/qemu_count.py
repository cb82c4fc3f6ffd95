"""Instructions an aarch64 program executes under qemu-aarch64, counted by our TCG plugin
(bench/qemu_insn.c, built here with cc as bench/stepcount.c is), and the instructions a 64-byte
block takes on each of libfatpte's SHA-256 paths there (bench/sha256_blocks.cpp, cross-built with
the loader's own sha256.cpp). A figure the shared machine's load does not move; the emulated CPU
model decides which paths run (qemu enforces its features), not this machine's CPU.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.harness import ROOT, compiled

PLUGIN_SOURCE = ROOT / "bench" / "qemu_insn.c"
PLUGIN = ROOT / "build" / "bench" / "qemu_insn.so"
BLOCKS_SOURCE = ROOT / "bench" / "sha256_blocks.cpp"
BLOCKS = ROOT / "build" / "bench" / "sha256_blocks-aarch64"
LOADER_SRC = ROOT / "loader" / "src"
CROSS_CXX = "aarch64-linux-gnu-g++"  # Debian's g++-aarch64-linux-gnu, as the Makefile's aarch64 build
CROSS_CC = "aarch64-linux-gnu-gcc"  # its C compiler (a dependency of g++-aarch64-linux-gnu)
SHA2_HIDDEN_SOURCE = ROOT / "bench" / "hide_sha2.c"
SHA2_HIDDEN = ROOT / "build" / "bench" / "hide_sha2-aarch64.so"
QEMU = "qemu-aarch64"


def unavailable() -> str | None:
    """Why nothing can be counted here (qemu-user or the cross compiler missing), or None."""
    for tool, package in ((QEMU, "qemu-user"), (CROSS_CXX, "g++-aarch64-linux-gnu")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian's {package}; `make aarch64-toolchain`)"
    return None


def plugin() -> Path:
    """build/bench/qemu_insn.so, compiled the first time and whenever its source is newer."""
    return compiled(PLUGIN_SOURCE, PLUGIN, "-shared", "-fPIC", "-fvisibility=hidden")


def count(qemu: Sequence[str], argv: Sequence[str], *, main_thread: bool = False, timeout: float = 600) -> int:
    """Guest instructions of `argv` run by `qemu` (qemu-aarch64 and its options: -L, -E, -cpu),
    with the plugin loaded: every thread's, or with `main_thread` the main thread's alone; the
    command must exit 0."""
    with tempfile.TemporaryDirectory(prefix="bench-qemu-insn.") as work:
        out = Path(work) / "count"
        options = f"{plugin()},out={out}" + (",thread=main" if main_thread else "")
        subprocess.run([qemu[0], "-plugin", options, *qemu[1:], *argv], check=True, capture_output=True,
                       timeout=timeout)
        return int(out.read_text())


def blocks_program() -> Path:
    """bench/sha256_blocks.cpp with loader/src/common/sha256.cpp, cross-built for aarch64 (static:
    it runs under qemu-aarch64 without -L)."""
    common, include = LOADER_SRC / "common", ROOT / "loader" / "include"
    return compiled(BLOCKS_SOURCE, BLOCKS, "-std=c++17", "-static", f"-I{LOADER_SRC}", f"-I{include}", cc=CROSS_CXX,
                    more=[common / "sha256.cpp", common / "cpu_words.cpp"])


def sha2_hidden() -> Path:
    """bench/hide_sha2.c cross-built for aarch64: preloaded (qemu-aarch64 -E LD_PRELOAD=...), the
    program's getauxval(AT_HWCAP) lacks HWCAP_SHA2, so libfatpte hashes on its portable path as on
    a core without the crypto extension."""
    return compiled(SHA2_HIDDEN_SOURCE, SHA2_HIDDEN, "-shared", "-fPIC", cc=CROSS_CC)


def per_block(cpu: str, path: str, blocks: tuple[int, int] = (1000, 10000)) -> float:
    """Instructions a block of SHA-256 `path` (portable, armv8-sha2) takes under `-cpu cpu`: the
    difference of two counts of sha256_blocks over the difference of their block counts."""
    program = str(blocks_program())
    few, many = (count([QEMU, "-cpu", cpu], [program, path, str(n)]) for n in blocks)
    return (many - few) / (blocks[1] - blocks[0])
