"""Planned memory is reserved, not committed, and bounded by the device's memory (issue 42, M1).

A valid container of under 2 KB whose program declares a 16 GiB memory-planned buffer made
`fatpte-run` commit it (aligned_alloc, then a memset of every byte): 16.8 GB of RSS, and a device
with 4 GB killed by the OOM killer before anything ran. Now the planned buffers are one anonymous
mapping whose pages cost nothing until the program writes them, and a method asking for more than
the limit (half the device's memory, at most 64 GiB) is refused with the reason before anything
is reserved. Built here from the committed add program (tests/support/hostile.planned_buffer_resized),
through both doors: fatpte-run over a container, and ExecuTorch's own Module over a fat .pte whose
fat delegate holds the program as its nested entry.

Peak RSS is the child's own `ru_maxrss`, taken by a small Python process that forks it and waits
for it alone (a child of pytest itself would inherit pytest's high-water mark at exec). The 16 GiB
program runs or is refused depending on the machine's memory; either way the process stays under
100 MB. A 1 GiB buffer, under the limit of any machine with 2 GiB, must run with the right
outputs under 100 MB: only a reservation does that.

Release build only: AddressSanitizer's shadow memory is RSS of its own.
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import fatpte
from fatpte.executorch.rewrite import replace_segment
from fatpte.ops import edit
from tests.builds import missing_build
from tests.paths import ROOT
from tests.support.hostile import first_delegate, planned_buffer_resized

BUILD = ROOT / "build" / "loader"
SDK_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"
KERNELS = SDK_LIB / "libexecutorch_kernels_optimized.so"
FATPTE = [sys.executable, "-m", "fatpte"]
M1 = 16 << 30
UNDER_ANY_LIMIT = 1 << 30
RSS_CEILING_KB = 100 * 1024
CALL = [{"inputs": [{"dtype": "float32", "shape": [2, 3], "values": [1, 2, 3, 4, 5, 6]},
                    {"dtype": "float32", "shape": [2, 3], "values": [10, 20, 30, 40, 50, 60]}]}]
SUM = [11.0, 22.0, 33.0, 44.0, 55.0, 66.0]

# Forks argv[2:], waits for that child alone and writes its peak RSS (KiB) to argv[1].
_MEASURE = """
import os, resource, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, _ = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _need(*paths: Path) -> None:
    for p in paths:
        if not p.exists():
            missing_build(f"{p.relative_to(ROOT)} is not built: run `make loader` (make test builds it first)")


def measured(cmd: list[str], tmp: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run `cmd`; its result and its peak RSS in KiB."""
    report = tmp / "maxrss"
    done = subprocess.run([sys.executable, "-I", "-c", _MEASURE, str(report), *cmd], capture_output=True, text=True,
                          timeout=300, check=False)
    return done, int(report.read_text())


def default_limit() -> int:
    """What the loader's default is stated to be: half of MemTotal, at most 64 GiB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return min(int(line.split()[1]) * 1024 // 2, 64 << 30)
    return 64 << 30


def program(size: int, tmp: Path) -> Path:
    out = tmp / f"add-{size}.pte"
    out.write_bytes(planned_buffer_resized((FIXTURES / "add_portable.pte").read_bytes(), size))
    return out


def container(size: int, tmp: Path) -> Path:
    out = tmp / f"add-{size}.nfat"
    done = subprocess.run([*FATPTE, "pack", "-q", "-f", "-o", str(out), f"portable:portable={program(size, tmp)}"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size < 3000
    return out


def fat_program(size: int, tmp: Path) -> Path:
    """add_fat.pte with its fat delegate's nested portable program declaring `size` bytes planned."""
    outer = (FIXTURES / "add_fat.pte").read_bytes()
    delegate = first_delegate(outer)
    inner = tmp / "inner.nfat"
    inner.write_bytes(outer[delegate.offset : delegate.offset + delegate.size])
    nested = tmp / "nested.pte"
    with fatpte.open(inner) as c:
        nested.write_bytes(planned_buffer_resized(bytes(c.payload("portable", verify=True)), size))
    edit.replace(inner, tmp / "inner-m1.nfat", "portable", nested)
    out = tmp / f"add_fat-{size}.pte"
    out.write_bytes(replace_segment(outer, delegate.data_index, (tmp / "inner-m1.nfat").read_bytes()))
    return out


def fatpte_run(nfat: Path, tmp: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    _need(BUILD / "fatpte-run", SDK_LIB)
    calls = tmp / "calls.json"
    calls.write_text(json.dumps(CALL))
    return measured([str(BUILD / "fatpte-run"), str(nfat), "--inputs", str(calls), "--json", "--explain"], tmp)


def module_run(pte: Path, tmp: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """ExecuTorch's Module (et_module_runner) with the fat delegate and the CPU kernels, no XNNPACK:
    the nested portable program is the entry that can run."""
    _need(BUILD / "et_module_runner", BUILD / "libexecutorch_backend_fatpte.so", KERNELS)
    files = []
    for k, t in enumerate(CALL[0]["inputs"]):
        f = tmp / f"in{k}.bin"
        f.write_bytes(struct.pack(f"<{len(t['values'])}f", *t["values"]))
        files.append(str(f))
    cmd = [str(BUILD / "et_module_runner"), "--lib", str(KERNELS), "--lib", str(BUILD / "libexecutorch_backend_fatpte.so"),
           str(pte), ",".join(files)]
    return measured(cmd, tmp)


def _refused_or_ran(done: subprocess.CompletedProcess[str], size: int) -> None:
    if size > default_limit():
        assert "asks for more planned memory than the limit of" in done.stdout + done.stderr, done.stderr
        assert "half of this device's" in done.stdout + done.stderr
    else:
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("size", [M1, UNDER_ANY_LIMIT])
def test_fatpte_run_reserves_planned_memory(tmp_path: Path, size: int) -> None:
    done, rss = fatpte_run(container(size, tmp_path), tmp_path)
    assert rss < RSS_CEILING_KB, f"peak RSS {rss} KiB: {done.stderr[-2000:]}"
    _refused_or_ran(done, size)
    if done.returncode == 0:
        doc = json.loads(done.stdout)
        assert doc["chosen"] == "portable" and doc["calls"][0]["outputs"][0]["values"] == SUM
        assert any("planned in 1 buffer (reserved)" in line for line in doc["dispatch"])
    else:
        assert done.returncode == 3
        doc = json.loads(done.stdout)
        assert doc["chosen"] is None
        assert any(f"buffer 0 is {size / (1 << 30):.1f} GiB" in line for line in doc["dispatch"])


@pytest.mark.parametrize("size", [M1, UNDER_ANY_LIMIT])
def test_the_fat_delegate_reserves_planned_memory(tmp_path: Path, size: int) -> None:
    done, rss = module_run(fat_program(size, tmp_path), tmp_path)
    assert rss < RSS_CEILING_KB, f"peak RSS {rss} KiB: {done.stderr[-2000:]}"
    _refused_or_ran(done, size)
    if done.returncode == 0:
        assert "call 0 output 0: float32 [2, 3] 11 22 33 44 55 66" in done.stdout, done.stdout
