"""Both platform wheels as built (`make wheel`, `make wheel-aarch64`): tagged for the oldest glibc
auditwheel finds they need, holding the package and the whole loader (tools, libraries, headers,
CMake package, ExecuTorch's runtime libraries), stripped, each binary finding its libraries beside
it through an $ORIGIN run path and nowhere in a build tree."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from tests.wheel.wheels import (
    ARCHES,
    LOADER,
    TOOLS,
    WHEEL_NAME,
    auditwheel_tag,
    readelf,
    run_paths,
    tags_in,
    wheel_of,
)

MACHINE = {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}
LIBRARIES = ("libfatpte.so.0", "libfatpte.so.0.1.0", "libfatpte.a", "libexecutorch_backend_fatpte.so",
             "libexecutorch.so", "libexecutorch_backend_xnnpack.so", "libexecutorch_kernels_optimized.so")


@pytest.fixture(params=ARCHES)
def wheel(request: pytest.FixtureRequest) -> Path:
    return wheel_of(request.param)


@pytest.fixture
def unpacked(wheel: Path, tmp_path: Path) -> Path:
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
    return tmp_path


def test_the_tag_is_the_one_auditwheel_reports(wheel: Path) -> None:
    match = WHEEL_NAME.fullmatch(wheel.name)
    assert match is not None
    platform = match.group(1)
    assert tags_in(wheel) == [f"py3-none-{platform}"]
    assert auditwheel_tag(wheel) == platform
    assert (int(match.group(2)), int(match.group(3))) >= (2, 17)  # a manylinux tag, not a bare linux one


def test_the_wheel_holds_the_package_and_the_loader(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    loader = {n[len(LOADER):] for n in names if n.startswith(LOADER)}
    for tool in TOOLS:
        assert f"bin/{tool}" in loader
        assert f"fatpte-0.1.0.data/scripts/{tool}" in names  # the launcher pip puts on PATH
    for library in LIBRARIES:
        assert f"lib/{library}" in loader
    assert "lib/libfatpte.so" not in loader  # the development link would be a third copy
    for header in ("fatpte.h", "fatpte.hpp", "dispatch.hpp", "module.hpp", "format_generated.h"):
        assert f"include/fatpte/{header}" in loader
    assert "include/executorch/runtime/executor/program.h" in loader
    assert {"lib/cmake/fatpte/fatpte-config.cmake", "lib/cmake/fatpte/fatpte-targets.cmake"} <= loader
    assert {"fatpte/__init__.py", "fatpte/cli/launch.py", "fatpte/device/profiles/raspberry-pi-5.json"} <= names
    assert not [n for n in names if "__pycache__" in n]


def test_the_binaries_are_stripped_and_find_their_libraries_beside_them(wheel: Path, unpacked: Path) -> None:
    arch = WHEEL_NAME.fullmatch(wheel.name).group(4)  # type: ignore[union-attr]
    root = unpacked / LOADER
    ours = [root / "bin" / t for t in TOOLS] + [root / "lib" / "libfatpte.so.0.1.0",
                                                 root / "lib" / "libexecutorch_backend_fatpte.so"]
    for binary in ours:
        assert MACHINE[arch] in readelf("-h", str(binary)), binary
        assert ".symtab" not in readelf("-S", "-W", str(binary)), f"{binary.name} is not stripped"
        want = ["$ORIGIN/../lib"] if binary.parent.name == "bin" else ["$ORIGIN"]
        assert run_paths(binary) == want, binary.name
    launcher = (unpacked / "fatpte-0.1.0.data" / "scripts" / "fatpte-run").read_text()
    assert launcher.startswith("#!python\n") and '"_loader", "bin", "fatpte-run"' in launcher
