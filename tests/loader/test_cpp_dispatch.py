"""`fatpte-run` selects, loads and runs the example network through backend libraries.

The network (loader/examples/dense_example.py) is packed for `dense_ref` and `dense_avx2` with
shared weights. Checked here: on an AVX2 machine `dense_avx2` runs and its output equals a forced
`dense_ref` run and the Python reference within 1e-5; without the `dense_avx2` library the loader
falls back to `dense_ref` and says the library was not found; libraries with a wrong ABI version
or a mismatched backend id are refused with a clear message and never called (their functions
abort); a library whose ABI version lies outside the entry's manifest `backend_abi` range is
refused the same way and the loader falls back to the next eligible entry. Skipped with the reason when the loader is not built; `make test` builds it first.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripts import load_script

pytestmark = pytest.mark.loader_build("fatpte-run", "backends")  # `build`: tests/loader/conftest.py
REFUSED = pytest.mark.loader_build("fatpte-run", "backends", "refused-backends")


def _example() -> ModuleType:
    return load_script("loader/examples/dense_example.py")


def pack_dense(tmp_path: Path) -> tuple[Path, Path, list[float]]:
    """The example network packed for dense_ref and dense_avx2, an input file, the reference output."""
    ex = _example()
    container = ex.pack_example(tmp_path / "dense.nfat")
    values = ex.example_input()
    inp = tmp_path / "input.txt"
    inp.write_text(" ".join(f"{v:.9g}" for v in values))
    return container, inp, ex.reference(values)


@pytest.fixture
def packed(tmp_path: Path) -> tuple[Path, Path, list[float]]:
    return pack_dense(tmp_path)


def run(build: Path, container: Path, inp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(build / "fatpte-run"), str(container), "--input", str(inp), *args], check=False,
                          capture_output=True, text=True, timeout=120)


def outputs(stdout: str) -> tuple[str, list[float]]:
    lines = stdout.splitlines()
    ran = next(line for line in lines if line.startswith("ran: "))
    values = next(line for line in lines if line.startswith("output:")).split()[1:]
    return ran, [float(v) for v in values]


def close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= 1e-5 * max(1.0, abs(y)) for x, y in zip(a, b))


def _has_avx2() -> bool:
    from fatpte.device.profile import DeviceProfile

    host = DeviceProfile.host()
    return host.arch == "x86_64" and {"avx2", "fma"} <= host.cpu_features


def test_best_backend_runs_and_matches_dense_ref_and_python(build: Path, packed: tuple[Path, Path, list[float]]) -> None:
    container, inp, want = packed
    best = run(build, container, inp, "--backend-path", str(build / "backends"))
    assert best.returncode == 0, best.stderr
    ran, got = outputs(best.stdout)
    if _has_avx2():
        assert ran == "ran: dense_avx2 [dense_avx2]"
    forced = run(build, container, inp, "--backend-path", str(build / "backends"), "--exclude", "dense_avx2")
    assert forced.returncode == 0, forced.stderr
    ran_p, got_p = outputs(forced.stdout)
    assert ran_p == "ran: dense_ref [dense_ref]"
    assert close(got, want), (got, want)
    assert close(got_p, want), (got_p, want)
    assert close(got, got_p)


def test_missing_library_falls_back_and_explains(build: Path, packed: tuple[Path, Path, list[float]],
                                                 tmp_path: Path) -> None:
    if not _has_avx2():
        pytest.skip("this machine does not select dense_avx2 first (no AVX2/FMA)")
    container, inp, want = packed
    only = tmp_path / "only-dense_ref"
    only.mkdir()
    shutil.copy(build / "backends" / "libfatpte_backend_dense_ref.so", only)
    proc = run(build, container, inp, "--backend-path", str(only), "--explain")
    assert proc.returncode == 0, proc.stderr
    assert outputs(proc.stdout)[0] == "ran: dense_ref [dense_ref]"
    assert "dispatch: dense_avx2 [dense_avx2]: library libfatpte_backend_dense_avx2.so not found in " in proc.stdout
    assert close(outputs(proc.stdout)[1], want)


@pytest.mark.parametrize(("library", "why"), [
    ("libfatpte_backend_wrong_abi.so", "refused: the library speaks backend ABI version 2, this loader speaks 1"),
    ("libfatpte_backend_wrong_id.so", "refused: the library says it is backend 'dense_ref', not 'dense_avx2'"),
])
@REFUSED
def test_wrong_abi_or_id_is_refused_and_never_called(build: Path, packed: tuple[Path, Path, list[float]],
                                                     tmp_path: Path, library: str, why: str) -> None:
    if not _has_avx2():
        pytest.skip("this machine does not select dense_avx2 first (no AVX2/FMA)")
    container, inp, _ = packed
    bad = tmp_path / "bad"
    bad.mkdir()
    # Installed under the name the loader looks for; its functions abort if ever called.
    shutil.copy(build / "refused-backends" / library, bad / "libfatpte_backend_dense_avx2.so")
    proc = run(build, container, inp, "--backend-path", str(bad), "--backend-path", str(build / "backends"),
               "--explain")
    assert proc.returncode == 0, proc.stderr
    assert outputs(proc.stdout)[0] == "ran: dense_ref [dense_ref]"
    assert f"dispatch: dense_avx2 [dense_avx2]: {why}" in proc.stdout


def test_backend_path_environment_and_no_library_at_all(build: Path, packed: tuple[Path, Path, list[float]],
                                                        tmp_path: Path) -> None:
    container, inp, _ = packed
    env_run = subprocess.run([str(build / "fatpte-run"), str(container), "--input", str(inp)], check=False,
                             capture_output=True, text=True, timeout=120,
                             env={"FATPTE_BACKEND_PATH": f"{tmp_path}:{build / 'backends'}"})
    assert env_run.returncode == 0, env_run.stderr
    nothing = subprocess.run([str(build / "fatpte-run"), str(container), "--input", str(inp)], check=False,
                             capture_output=True, text=True, timeout=120, env={})
    assert nothing.returncode == 3
    assert "not found in any directory (no backend path is configured)" in nothing.stderr


def _pack_with_abi(tmp_path: Path, abi: tuple[int, int]) -> tuple[Path, Path]:
    ex = _example()
    container = ex.pack_example(tmp_path / f"dense-abi-{abi[0]}-{abi[1]}.nfat", avx2_abi=abi)
    inp = tmp_path / "input-abi.txt"
    inp.write_text(" ".join(f"{v:.9g}" for v in ex.example_input()))
    return container, inp


@pytest.mark.parametrize(("library", "abi", "why"), [
    # A library of this loader's ABI (1) for an entry that needs 2..3.
    ("libfatpte_backend_abi_range.so", (2, 3),
     "refused: backend library libfatpte_backend_dense_avx2.so reports ABI version 1, the entry needs 2..3"),
    # The entry's range is checked before the loader's own version: the reason names the range.
    ("libfatpte_backend_wrong_abi.so", (1, 1),
     "refused: backend library libfatpte_backend_dense_avx2.so reports ABI version 2, the entry needs 1..1"),
])
@REFUSED
def test_backend_abi_outside_entry_range_falls_back(build: Path, tmp_path: Path, library: str,
                                                    abi: tuple[int, int], why: str) -> None:
    if not _has_avx2():
        pytest.skip("this machine does not select dense_avx2 first (no AVX2/FMA)")
    container, inp = _pack_with_abi(tmp_path, abi)
    bad = tmp_path / "bad"
    bad.mkdir()
    # Its functions abort if ever called: the range check must come before is_available.
    shutil.copy(build / "refused-backends" / library, bad / "libfatpte_backend_dense_avx2.so")
    proc = run(build, container, inp, "--backend-path", str(bad), "--backend-path", str(build / "backends"),
               "--explain")
    assert proc.returncode == 0, proc.stderr
    assert outputs(proc.stdout)[0] == "ran: dense_ref [dense_ref]"
    assert f"dispatch: dense_avx2 [dense_avx2]: {why}" in proc.stdout
    assert "dispatch: dense_ref [dense_ref]: loaded" in proc.stdout
    assert close(outputs(proc.stdout)[1], _example().reference(_example().example_input()))


def test_backend_abi_inside_entry_range_loads(build: Path, tmp_path: Path) -> None:
    if not _has_avx2():
        pytest.skip("this machine does not select dense_avx2 first (no AVX2/FMA)")
    container, inp = _pack_with_abi(tmp_path, (0, 1))
    proc = run(build, container, inp, "--backend-path", str(build / "backends"), "--explain")
    assert proc.returncode == 0, proc.stderr
    assert outputs(proc.stdout)[0] == "ran: dense_avx2 [dense_avx2]"
    assert "dispatch: dense_avx2 [dense_avx2]: loaded" in proc.stdout


def test_backend_abi_outside_range_everywhere_fails_with_every_reason(build: Path, tmp_path: Path) -> None:
    if not _has_avx2():
        pytest.skip("this machine does not select dense_avx2 first (no AVX2/FMA)")
    container, inp = _pack_with_abi(tmp_path, (5, 9))
    only = tmp_path / "only-avx2"
    only.mkdir()
    shutil.copy(build / "backends" / "libfatpte_backend_dense_avx2.so", only)
    proc = run(build, container, inp, "--backend-path", str(only))
    assert proc.returncode == 3, proc.stdout
    assert "reports ABI version 1, the entry needs 5..9" in proc.stderr
    assert "libfatpte_backend_dense_ref.so not found in " in proc.stderr
