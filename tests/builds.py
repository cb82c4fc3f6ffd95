"""Tests that need a build: the C++ loader (build/loader), its ASan + UBSan twin
(build/loader-asan) and what `make loader` builds with them (the ExecuTorch SDK, its runners).

`make test` (which CI runs) builds them first and sets FATPTE_REQUIRE_BUILDS=1 for pytest: there a
missing build is a failure, so a suite that silently skipped the C++ half can never pass as green.
A bare `pytest` (or `pytest tests/ops`, ...) is the fast subset for working on the Python side: it
skips those tests, saying which build to make (README.md, "Running a subset of the tests")."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_ENV = "FATPTE_REQUIRE_BUILDS"


def required() -> bool:
    return os.environ.get(REQUIRE_ENV) == "1"


def missing_build(reason: str) -> NoReturn:
    """Skip the test for a build that is not there, or fail it where builds are required."""
    if required():
        pytest.fail(f"{reason} [{REQUIRE_ENV}=1: under `make test` every build is made first, so a missing "
                    "one is a failure, not a skip]")
    pytest.skip(reason)
