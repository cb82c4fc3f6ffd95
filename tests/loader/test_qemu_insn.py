"""The qemu instruction counter of the bench (bench/qemu_insn.c, driven by bench/qemu_count.py)
counts what a program executes: a static aarch64 program of a known loop gives 2N + 4, at two
sizes, counting every thread or the main one; a worker thread's known loop counts with every
thread and not with the main one; and the bench's SHA-256 block program (bench/sha256_blocks.cpp,
the loader's sha256.cpp cross-built) gives Python's digest on the portable path and on ARMv8's SHA2
instructions under every qemu 7.2 CPU model with SHA2, the one figure bench/op_verdicts.py reports
per block; and the library the bench preloads to hide HWCAP_SHA2 (bench/hide_sha2.c) hides that bit
alone. Needs qemu-user and the aarch64 cross compiler (tests/loader/aarch64_builds.py says when
a missing one fails)."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from bench import qemu_count
from tests.loader.aarch64_builds import missing

# N iterations of two instructions, then three to exit: 2N + 4 with the load of N.
LOOP = """
        .global _start
_start: ldr x0, ={n}
1:      subs x0, x0, #1
        b.ne 1b
        mov x0, #0
        mov x8, #93
        svc #0
"""


def _require() -> None:
    why = qemu_count.unavailable()
    if why is not None:
        missing(why)


def _loop(tmp_path: Path, n: int) -> Path:
    source, program = tmp_path / f"loop{n}.S", tmp_path / f"loop{n}"
    source.write_text(LOOP.format(n=n))
    subprocess.run(["aarch64-linux-gnu-gcc", "-nostdlib", "-static", "-o", str(program), str(source)], check=True,
                   timeout=120)
    return program


@pytest.mark.parametrize("main_thread", [False, True])
@pytest.mark.parametrize("n", [1_000, 3_000_000])
def test_a_known_loop_counts_2n_plus_4(tmp_path: Path, n: int, main_thread: bool) -> None:
    _require()
    counted = qemu_count.count(["qemu-aarch64", "-cpu", "cortex-a53"], [str(_loop(tmp_path, n))],
                               main_thread=main_thread)
    assert abs(counted - (2 * n + 4)) <= 300, counted


# A worker thread runs SPIN(n) (2n instructions) for n given as the program's argument, then the
# main thread SPIN(1,000,000).
THREADED = """
#include <pthread.h>
#include <stdlib.h>
#define SPIN(n) do { long k = (n); __asm__ volatile("1: subs %0, %0, #1\\n b.ne 1b" : "+r"(k) : : "cc"); } while (0)
static void* worker(void* arg) { SPIN((long)arg); return 0; }
int main(int argc, char** argv) {
  pthread_t t;
  if (argc != 2 || pthread_create(&t, 0, worker, (void*)atol(argv[1])) != 0) return 2;
  pthread_join(t, 0);
  SPIN(1000000);
  return 0;
}
"""


def test_the_main_thread_alone_leaves_a_workers_loop_out(tmp_path: Path) -> None:
    _require()
    source, program = tmp_path / "threaded.c", tmp_path / "threaded"
    source.write_text(THREADED)
    subprocess.run(["aarch64-linux-gnu-gcc", "-O2", "-static", "-pthread", "-o", str(program), str(source)],
                   check=True, timeout=120)
    qemu = ["qemu-aarch64", "-cpu", "cortex-a53"]
    few, many = ([qemu_count.count(qemu, [str(program), n], main_thread=m) for m in (False, True)]
                 for n in ("1", "4000000"))
    assert abs((many[0] - few[0]) - 2 * 3_999_999) <= 300, (few, many)  # every thread: the worker's loop
    assert abs(many[1] - few[1]) <= 300, (few, many)  # the main thread: the same either way
    assert 2_000_000 <= few[1] <= few[0], few  # the main thread's own loop is in both


def _expected(blocks: int) -> str:
    # sha256_blocks hashes its buffer of 64 blocks again and again (bench/sha256_blocks.cpp).
    data = bytes((i * 31 + (i >> 8)) & 0xFF for i in range(64 * 64))
    return hashlib.sha256((data * (blocks // 64 + 1))[: 64 * blocks]).hexdigest()


@pytest.mark.parametrize("cpu", ["cortex-a53", "cortex-a72", "a64fx", "max"])
@pytest.mark.parametrize("path", ["portable", "armv8-sha2"])
def test_the_block_program_gives_pythons_digest_on_each_path(cpu: str, path: str) -> None:
    _require()
    program = str(qemu_count.blocks_program())
    for blocks in (0, 1, 63, 64, 131):
        done = subprocess.run(["qemu-aarch64", "-cpu", cpu, program, path, str(blocks)], capture_output=True,
                              text=True, timeout=120, check=True)
        assert done.stdout.strip() == _expected(blocks), (cpu, path, blocks)


def test_an_unknown_path_is_refused() -> None:
    _require()
    done = subprocess.run(["qemu-aarch64", str(qemu_count.blocks_program()), "sha-ni", "1"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2 and "no path 'sha-ni'" in done.stderr


HWCAP_PROGRAM = """
#include <stdio.h>
#include <sys/auxv.h>
int main(void) { printf("%lx\\n", getauxval(AT_HWCAP)); return 0; }
"""


def test_the_sha2_hiding_library_hides_hwcap_sha2_alone(tmp_path: Path) -> None:
    """bench/hide_sha2.c, preloaded into a dynamic aarch64 program under qemu-aarch64 -cpu
    cortex-a72 (which has SHA2), makes getauxval(AT_HWCAP) lack HWCAP_SHA2 (bit 6) and nothing
    else: the bench's start on a core without the crypto extension."""
    _require()
    source, program = tmp_path / "hwcap.c", tmp_path / "hwcap"
    source.write_text(HWCAP_PROGRAM)
    subprocess.run([qemu_count.CROSS_CC, "-O2", "-o", str(program), str(source)], check=True)
    qemu = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-cpu", "cortex-a72"]
    words = [int(subprocess.run([*qemu, *more, str(program)], capture_output=True, text=True, timeout=120,
                                check=True).stdout, 16)
             for more in ([], ["-E", f"LD_PRELOAD={qemu_count.sha2_hidden()}"])]
    assert words[0] & (1 << 6) and words[1] == words[0] & ~(1 << 6), [hex(w) for w in words]
