"""An install tree is self-contained (issue 37, docs/cpp.md "Install trees and the search order"):
`cmake --install` of the release build into one prefix, the prefix moved to another folder while
the build tree stays where it is, and the moved `fatpte-run` loads the ExecuTorch libraries and
reads the named device profiles of its own prefix, never the build tree's or the source tree's:

- `--explain` names where it looked (its own folders only, in order) and every library it loaded
  (each inside the moved prefix);
- a backend library removed from the prefix is missing for the installed runner (it falls back to
  portable, saying where it looked) although the build tree's SDK still has it: the build tree is
  not a fallback;
- a profile that only the prefix holds is found by name, and `--explain` names its file.

Skipped with the reason when the release loader is not built (`make test` builds it first).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.builds import SDK_LIB, missing_build
from tests.paths import ROOT
from tests.scripts import load_script

BUILD = ROOT / "build" / "loader"
INSTALLED = ("libfatpte.so", "libfatpte.a", "fatpte-run", "fatpte-validate", "fatpte-verify",
             "libexecutorch_backend_fatpte.so")


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The release build installed into one prefix, then moved to another."""
    missing = [name for name in INSTALLED if not (BUILD / name).exists()]
    if missing or not SDK_LIB.is_dir() or shutil.which("cmake") is None:
        missing_build(f"build/loader lacks {', '.join(missing) or 'the ExecuTorch SDK'}: run `make loader` "
                      "(make test builds it first)")
    root = tmp_path_factory.mktemp("prefixes")
    first = root / "first"
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(first)], check=True, capture_output=True)
    second = root / "moved" / "elsewhere"
    second.parent.mkdir()
    first.rename(second)
    return second.resolve()  # as the loader names it: symbolic links resolved


def _run(moved: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    ex = _example()
    container = ex.pack("mlp", tmp_path / "mlp.nfat")
    calls = ex.write_calls("mlp", tmp_path / "calls.json")
    return ex.run(moved / "bin" / "fatpte-run", container, calls, "--explain", *args)


def _search_line(stdout: str) -> str:
    (line,) = [ln for ln in stdout.splitlines() if "executorch libraries:" in ln]
    return line


def test_the_moved_prefix_loads_its_own_libraries(moved: Path, tmp_path: Path) -> None:
    proc = _run(moved, tmp_path)
    assert proc.returncode == 0, proc.stderr
    line = _search_line(proc.stdout)
    assert f"runs from {moved}/bin/fatpte-run, an installed copy, with ExecuTorch's runtime {moved}/lib/libexecutorch.so" \
        in line, line
    # Its own bin/ and lib/ (where its libexecutorch.so is too), nothing else: not the SDK of the
    # build tree, not the build folder.
    order = line.split("searched in order: ", 1)[1]
    assert order == f"1. {moved}/bin, 2. {moved}/lib", order
    assert str(BUILD) not in proc.stdout and str(SDK_LIB) not in proc.stdout
    loaded = [ln for ln in proc.stdout.splitlines() if "loaded /" in ln or "registered by /" in ln]
    assert any("XnnpackBackend: registered by" in ln for ln in loaded), proc.stdout
    for ln in loaded:
        path = ln.rsplit(" by ", 1)[-1] if "registered by" in ln else ln.split("loaded ", 1)[1]
        assert Path(path.split()[0]).resolve().is_relative_to(moved), ln
    assert "ran: xnnpack" in proc.stdout


def test_a_library_missing_from_the_prefix_is_not_taken_from_the_build_tree(moved: Path, tmp_path: Path) -> None:
    xnnpack = moved / "lib" / "libexecutorch_backend_xnnpack.so"
    assert (SDK_LIB / xnnpack.name).is_file()  # the build tree still has it
    kept = xnnpack.with_name("kept-aside.so")
    xnnpack.rename(kept)
    try:
        proc = _run(moved, tmp_path)
    finally:
        kept.rename(xnnpack)
    assert proc.returncode == 0, proc.stderr
    assert "ran: portable" in proc.stdout, proc.stdout
    assert (f"libexecutorch_backend_xnnpack.so not found in {moved}/bin, {moved}/lib"
            in proc.stdout), proc.stdout


def test_the_moved_prefix_reads_its_own_device_profiles(moved: Path, tmp_path: Path) -> None:
    devices = moved / "share" / "fatpte" / "devices"
    assert not (ROOT / "specs" / "devices" / "only-in-this-prefix.json").exists()
    shutil.copyfile(devices / "x86-64-v3.json", devices / "only-in-this-prefix.json")
    proc = _run(moved, tmp_path, "--device", "only-in-this-prefix")
    assert proc.returncode == 0, proc.stderr
    assert f"device profile: {devices}/only-in-this-prefix.json" in proc.stdout.splitlines(), proc.stdout


def test_the_docs_install_recipe_works_as_written(tmp_path: Path) -> None:
    """docs/cpp.md's recipe, its first line as written with the prefix put in a scratch folder: it
    builds what `cmake --install` copies before installing (after `make demo` alone, `cmake
    --install` cannot find libfatpte.so), and the prefix it makes runs."""
    if not (BUILD / "CMakeCache.txt").exists() or shutil.which("cmake") is None:
        missing_build("build/loader is not configured: run `make loader` (make test builds it first)")
    text = (ROOT / "docs" / "cpp.md").read_text(encoding="utf-8")
    section = text.split("## Install trees and the search order", 1)[1]
    recipe = section.split("```sh\n", 1)[1].split("\n", 1)[0].split("#", 1)[0].strip()
    assert recipe == "cmake --build build/loader -j1 && cmake --install build/loader --prefix /opt/fatpte"
    prefix = tmp_path / "opt-fatpte"
    proc = subprocess.run(["bash", "-c", recipe.replace("/opt/fatpte", str(prefix))], cwd=ROOT, check=False,
                          capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ran = subprocess.run([str(prefix / "bin" / "fatpte-run"), "--help"], check=False, capture_output=True, text=True)
    assert ran.returncode == 0 and "--explain" in ran.stdout
