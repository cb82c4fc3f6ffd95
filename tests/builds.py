"""Tests that need a build: the C++ loader (build/loader), its ASan + UBSan twin
(build/loader-asan) and what `make loader` builds with them (the ExecuTorch SDK, its runners).

`make test` (which CI runs) builds them first and sets FATPTE_REQUIRE_BUILDS=1 for pytest: there a
missing build is a failure, so a suite that silently skipped the C++ half can never pass as green.
A bare `pytest` (or `pytest tests/ops`, ...) is the fast subset for working on the Python side: it
skips those tests, saying which build to make (README.md, "Running a subset of the tests").

The loader tests get their build folder from one fixture, `build` (tests/loader/conftest.py: the
release and the ASan build in turn, or only one where a test asks): each test names the targets it
runs with a `loader_build` mark (`pytest.mark.loader_build("fatpte-run", "backends", sdk=True)`),
and a target that is not there is a missing build, never a missing file: `make demo` builds only
fatpte-run, the fat delegate and the example backends into build/loader, so after it a test that
needs fatpte-validate or et_module_runner skips (fails under `make test`) instead of erroring."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from tests.paths import ROOT

REQUIRE_ENV = "FATPTE_REQUIRE_BUILDS"
# The loader's build folders (the Makefile's LOADER_OUT and LOADER_ASAN), with the target that makes each.
# FATPTE_LOADER_BUILD=FOLDER puts another build in the release build's place, e.g. the size build
# (`make loader-size`, docs/cpp.md "The size build"): its tests then run that build's binaries.
LOADER_BUILDS = {"release": Path(os.environ.get("FATPTE_LOADER_BUILD") or ROOT / "build" / "loader").absolute(),
                 "asan": ROOT / "build" / "loader-asan"}
MAKE_TARGET = {"release": "loader", "asan": "loader-asan"}
SDK_LIB = ROOT / "build" / "executorch-sdk" / "executorch" / "lib"  # `make loader` unpacks it first


def required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def missing_build(reason: str) -> NoReturn:
    """Skip the test for a build that is not there, or fail it where builds are required."""
    if required():
        pytest.fail(f"{reason} [{REQUIRE_ENV}=1: under `make test` every build is made first, so a missing "
                    "one is a failure, not a skip]")
    pytest.skip(reason)


def loader_build(name: str, *targets: str, sdk: bool = False) -> Path:
    """The loader's build folder `name` ("release" or "asan") with each of `targets` (files or
    folders inside it: "fatpte-run", "libfatpte.so", "backends", ...) built, and the ExecuTorch SDK
    where `sdk`; anything missing is a missing build, named with the make target that builds it."""
    folder = LOADER_BUILDS[name]
    missing = [f"{folder.relative_to(ROOT)}/{t}" for t in targets if not (folder / t).exists()]
    if sdk and not SDK_LIB.is_dir():
        missing.append("the ExecuTorch SDK")
    if missing:
        missing_build(f"{', '.join(missing)} not built: run `make {MAKE_TARGET[name]}` "
                      "(make test builds it first)")
    return folder
