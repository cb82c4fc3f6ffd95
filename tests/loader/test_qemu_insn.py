"""The qemu instruction counter of the bench (bench/qemu_insn.c, driven by bench/qemu_count.py)
counts what a program executes: a static aarch64 program of a known loop gives 2N + 4, at two
sizes; and the bench's SHA-256 block program (bench/sha256_blocks.cpp, the loader's sha256.cpp
cross-built) gives Python's digest on the portable path and on ARMv8's SHA2 instructions under
every qemu 7.2 CPU model with SHA2, the one figure bench/op_verdicts.py reports per block.
Needs qemu-user and the aarch64 cross compiler (tests/loader/aarch64_builds.py says when a
missing one fails)."""

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


@pytest.mark.parametrize("n", [1_000, 3_000_000])
def test_a_known_loop_counts_2n_plus_4(tmp_path: Path, n: int) -> None:
    _require()
    counted = qemu_count.count(["qemu-aarch64", "-cpu", "cortex-a53"], [str(_loop(tmp_path, n))])
    assert abs(counted - (2 * n + 4)) <= 300, counted


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
