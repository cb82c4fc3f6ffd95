"""`fatpte_bench` (loader/tools/fatpte_bench.cpp) runs on a small container and prints lines that
bench/op_loader.py parses; bad input is refused with the loader's error. Never asserts on timings.
Skipped with the reason when the loader is not built (failed under `make test`, which builds it
first: tests/builds.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import fatpte
from bench.op_loader import parse
from fatpte.device.profile import DeviceProfile
from tests.builds import loader_build
from tests.paths import ROOT

EXE = ROOT / "build" / "loader" / "fatpte_bench"
QUICK = ["--min-seconds", "0", "--min-batches", "3", "--batch", "2"]


def _exe() -> Path:
    return loader_build("release", EXE.name) / EXE.name


def _container(tmp_path: Path, name: str, entries: int) -> Path:
    specs = []
    for i in range(entries):
        payload = tmp_path / f"{name}-{i}.bin"
        payload.write_bytes(bytes([i]) * (100 + i))
        specs.append(fatpte.Specialization("xnnpack", str(payload), name=f"e{i:02d}"))
    out = tmp_path / f"{name} with space.nfat"
    fatpte.pack(specs, str(out))
    return out


def test_output_parses_for_each_container(tmp_path: Path) -> None:
    a = _container(tmp_path, "a", 2)
    b = _container(tmp_path, "b", 3)
    proc = subprocess.run([str(_exe()), *QUICK, str(a), str(b)], check=False, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    figs = parse(proc.stdout)
    assert [f.path for f in figs] == [str(a), str(b)]
    assert [f.entries for f in figs] == [2, 3]
    assert [f.size for f in figs] == [a.stat().st_size, b.stat().st_size]
    with fatpte.open(str(a)) as container:  # same host, same rules as the C++ select
        expected = fatpte.select(container, DeviceProfile.host()).chosen.name
    assert figs[0].chosen == expected
    for f in figs:
        assert f.batches >= 3 and f.iterations == 2 * f.batches
        assert 0 < f.min_us <= f.median_us
    assert any(line.startswith("ratio last/first median=") for line in proc.stdout.splitlines())


def test_broken_container_is_refused_with_its_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.nfat"
    bad.write_bytes(b"NFAT" + bytes(8))
    proc = subprocess.run([str(_exe()), *QUICK, str(bad)], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert parse(proc.stdout) == []
    assert str(bad) in proc.stderr and "E0" in proc.stderr


def test_usage_error() -> None:
    proc = subprocess.run([str(_exe()), "--min-seconds"], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "usage: fatpte_bench" in proc.stderr
