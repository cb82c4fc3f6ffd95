"""libfatpte for C and C++ users: `cmake --install` of the release build puts the shared and the
static library, the headers, the tools, the named device profiles and a `fatpte-config.cmake`
package in a prefix; a small consumer project (loader/tests/consumer/) configures against that
prefix with `find_package(fatpte)`, builds one program per library, and both run a real model
(the mlp fixture, packed XNNPACK + portable) with the eager output torch recorded.

Skipped with the reason when the release loader is not built (`make test` builds it first).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tests.builds import missing_build
from tests.paths import ROOT
from tests.scripts import load_script

BUILD = ROOT / "build" / "loader"


def _example() -> ModuleType:
    return load_script("loader/examples/executorch_example.py")


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (BUILD / "libfatpte.so").exists() or shutil.which("cmake") is None:
        missing_build("build/loader is not built: run `make loader` (make test builds it first)")
    out = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(out)], check=True, capture_output=True)
    return out


def test_install_holds_the_libraries_headers_tools_and_package(prefix: Path) -> None:
    for path in ("lib/libfatpte.so", "lib/libfatpte.a", "include/fatpte/fatpte.h", "include/fatpte/dispatch.hpp",
                 "include/fatpte/tensor.hpp", "include/fatpte/format_generated.h", "bin/fatpte-run",
                 "bin/fatpte-validate", "bin/fatpte-verify", "include/fatpte/module.hpp",
                 "lib/libexecutorch.so", "lib/libexecutorch_backend_fatpte.so",
                 "include/executorch/extension/module/module.h", "share/fatpte/devices/x86-64-v3.json", "lib/cmake/fatpte/fatpte-config.cmake",
                 "lib/cmake/fatpte/fatpte-config-version.cmake", "lib/cmake/fatpte/fatpte-targets.cmake"):
        assert (prefix / path).exists(), path
    # The installed headers stand alone: no private header of the source tree is included.
    for header in (prefix / "include" / "fatpte").iterdir():
        for line in header.read_text().splitlines():
            if line.startswith("#include \""):
                assert line.split('"')[1].startswith("fatpte/"), (header.name, line)


def test_a_consumer_finds_the_package_builds_and_runs_a_model(prefix: Path, tmp_path: Path) -> None:
    build = tmp_path / "consumer-build"
    subprocess.run(["cmake", "-S", str(ROOT / "loader" / "tests" / "consumer"), "-B", str(build),
                    f"-DCMAKE_PREFIX_PATH={prefix}"], check=True, capture_output=True, text=True)
    subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, capture_output=True, text=True)
    ex = _example()
    container = ex.pack("mlp", tmp_path / "mlp.nfat")
    call = ex.fixture("mlp_portable.pte")["calls"][0]
    (tensor,) = call["inputs"]
    want = call["outputs"][0]["values"]
    for program in ("consumer_shared", "consumer_static"):
        proc = subprocess.run([str(build / program), str(container), *map(str, tensor["shape"]),
                               *(repr(v) for v in tensor["values"])], check=False, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == "entry xnnpack"
        got = [float(v) for v in lines[1:]]
        assert ex.mismatches([[{"dtype": "float32", "shape": [1, 3], "values": got}]],
                             [[{"dtype": "float32", "shape": [1, 3], "values": want}]]) == []


def _run_paths(binary: Path) -> list[str]:
    """The RUNPATH/RPATH entries of an ELF file, as readelf prints them."""
    dyn = subprocess.run(["readelf", "-d", str(binary)], check=True, capture_output=True, text=True).stdout
    out: list[str] = []
    for line in dyn.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            out.extend(line.split("[", 1)[1].rsplit("]", 1)[0].split(":"))
    return out


@pytest.mark.parametrize("name", ["libfatpte.so", "fatpte-run", "fatpte-validate", "fatpte-verify", "fatpte_bench",
                                  "libexecutorch_backend_fatpte.so"])
def test_no_run_path_names_the_current_directory(name: str) -> None:
    """An empty run-path entry (CMake's build-tree padding, `<sdk>/lib:`) is the current directory
    to the dynamic loader: every library would first be looked for where the run started."""
    binary = BUILD / name
    if not binary.exists():
        missing_build(f"{binary.relative_to(ROOT)} is not built: run `make loader` (make test builds it first)")
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    paths = _run_paths(binary)
    assert "" not in paths and "." not in paths, paths
    assert all(Path(p).is_absolute() or p.startswith("$ORIGIN") for p in paths), paths


@pytest.mark.parametrize("name", ["libfatpte.so", "fatpte-run", "fatpte-validate", "fatpte-verify", "fatpte_bench",
                                  "libexecutorch_backend_fatpte.so"])
def test_the_build_tree_searches_only_folders_it_has(name: str) -> None:
    """A run-path entry that names no folder costs a failed lookup per library (the install tree's
    `$ORIGIN/../lib` in the build tree: 24 failed system calls a run of fatpte-run)."""
    binary = BUILD / name
    if not binary.exists():
        missing_build(f"{binary.relative_to(ROOT)} is not built: run `make loader` (make test builds it first)")
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    paths = [p.replace("$ORIGIN", str(BUILD)) for p in _run_paths(binary)]
    assert paths and all(Path(p).is_dir() for p in paths), paths


def test_the_installed_tree_searches_itself_alone(prefix: Path) -> None:
    """`cmake --install` gives the installed tools and libraries run paths inside the prefix, so a
    moved prefix finds its own libraries and no other copy of them (cmake/install_rpath.cmake)."""
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    want = {"bin/fatpte-run": ["$ORIGIN/../lib"], "bin/fatpte-validate": ["$ORIGIN/../lib"],
            "bin/fatpte-verify": ["$ORIGIN/../lib"], "lib/libfatpte.so": ["$ORIGIN"],
            "lib/libexecutorch_backend_fatpte.so": ["$ORIGIN"]}
    assert {path: _run_paths(prefix / path) for path in want} == want
    # Installing again over an up-to-date prefix keeps them (the rewrite is not done twice).
    subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)], check=True, capture_output=True)
    assert {path: _run_paths(prefix / path) for path in want} == want
